/*
 * csc_launch_linux.c — csc_launch_platform.h for Linux: getrandom(2), renameat2(2) with
 * RENAME_EXCHANGE, struct stat's st_mtim. Compiled only there.
 */
#if defined(__linux__)
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "csc_launch_platform.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>

size_t csc_platform_random(unsigned char *bytes, size_t length) {
    size_t filled = 0;
    while (filled < length) {
        ssize_t count = getrandom(bytes + filled, length - filled, 0);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) break;
        filled += (size_t)count;
    }
    return filled;
}

int csc_platform_swap_paths(const char *from, const char *to) {
#if defined(RENAME_EXCHANGE)
    return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_EXCHANGE);
#else /* a C library without the wrapper */
    (void)from;
    (void)to;
    errno = ENOSYS;
    return -1;
#endif
}

int64_t csc_platform_modified_ns(const struct stat *info) {
    return (int64_t)info->st_mtim.tv_sec * 1000000000 + info->st_mtim.tv_nsec;
}
#endif
