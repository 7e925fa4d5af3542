/*
 * cs_thread_linux.c — the thread helpers of cs_incidents.h for Linux (kernel thread ids,
 * prctl names). Compiled only there.
 */
#if defined(__linux__)
#include "cs_incidents.h"

#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

uint64_t cs_current_thread_id(void) {
    return (uint64_t)syscall(SYS_gettid);
}

bool cs_is_main_thread(void) {
    return (pid_t)syscall(SYS_gettid) == getpid(); /* the main thread's id is the process id */
}

bool cs_thread_set_name(const char *name) {
    char cut[16]; /* PR_SET_NAME: at most 16 bytes with the NUL */
    size_t length = strnlen(name, sizeof cut - 1);
    memcpy(cut, name, length);
    cut[length] = 0;
    return prctl(PR_SET_NAME, cut, 0, 0, 0) == 0;
}

void cs_thread_copy_name(char *name, size_t capacity) {
    if (capacity == 0) return;
    char full[17] = {0}; /* PR_GET_NAME writes up to 16 bytes */
    if (prctl(PR_GET_NAME, full, 0, 0, 0) != 0) full[0] = 0;
    size_t i = 0;
    for (; full[i] && i + 1 < capacity; i++) name[i] = full[i];
    name[i] = 0;
}
#endif
