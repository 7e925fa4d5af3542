/*
 * csc_process_linux.c — Linux's signal codes and process facts: si_code <= 0 for a sent signal
 * (SI_USER, SI_TKILL, SI_QUEUE, SI_TIMER...), abort() raising SIGABRT with tgkill (SI_TKILL from
 * this pid), the executable from /proc/self/exe, uptime on CLOCK_BOOTTIME from
 * /proc/self/stat's start time.
 */
#if defined(__linux__)
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "csc_platform.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *csc_code_name(int sig, int code) {
    if (code <= 0) {
        switch (code) {
        case SI_USER: return "SI_USER";
        case SI_TKILL: return "SI_TKILL";
        case SI_QUEUE: return "SI_QUEUE";
        default: return "SI_OTHER";
        }
    }
    if (code == SI_KERNEL) return "SI_KERNEL";
    return csc_fault_code_name(sig, code);
}

bool csc_signal_was_sent(const siginfo_t *info) {
    return info->si_code <= 0;
}

bool csc_signal_is_abort(int sig, const siginfo_t *info) {
    return sig == SIGABRT && (info == NULL || (info->si_code == SI_TKILL && info->si_pid == getpid()));
}

void csc_process_executable(char *path, size_t capacity) {
    if (capacity == 0) return;
    ssize_t n = readlink("/proc/self/exe", path, capacity - 1);
    path[n > 0 ? n : 0] = 0;
}

uint64_t csc_uptime_clock_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t csc_process_start_ns(void) {
    /* Field 22 of /proc/self/stat: start time in clock ticks after boot. */
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char text[1024];
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return 0;
    text[n] = 0;
    char *cursor = strrchr(text, ')'); /* the command name may contain spaces */
    if (!cursor) return 0;
    int field = 2;
    uint64_t ticks = 0;
    for (char *p = cursor + 1; *p; p++) {
        if (*p == ' ') {
            field++;
            if (field == 22) {
                ticks = strtoull(p + 1, NULL, 10);
                break;
            }
        }
    }
    long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? ticks * (1000000000ull / (uint64_t)hz) : 0;
}
#endif /* __linux__ */
