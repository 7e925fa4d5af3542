/*
 * csc_threads_linux.c — threads on Linux: the kernel thread id (gettid), the main thread is the
 * one whose tid is the pid (in a forked child: the thread that forked), names through
 * prctl(PR_GET_NAME) (15 bytes), a signal to the calling thread with tgkill. Async-signal-safe:
 * raw system calls only.
 */
#if defined(__linux__)
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "csc_platform.h"

#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

csc_thread_id csc_thread_self(void) { return (csc_thread_id)syscall(SYS_gettid); }

bool csc_thread_is_main(void) { return (pid_t)syscall(SYS_gettid) == getpid(); }

void csc_thread_name(char *name, size_t capacity) {
    char kernel_name[17] = {0};
    prctl(PR_GET_NAME, kernel_name, 0, 0, 0);
    size_t i = 0;
    for (; capacity > 0 && kernel_name[i] && i + 1 < capacity; i++) name[i] = kernel_name[i];
    if (capacity > 0) name[i] = 0;
}

size_t csc_thread_name_max(void) { return 16; }

void csc_thread_raise(int sig) {
    syscall(SYS_tgkill, (long)getpid(), (long)syscall(SYS_gettid), (long)sig);
}

int csc_thread_count(void) { return -1; }
#endif /* __linux__ */
