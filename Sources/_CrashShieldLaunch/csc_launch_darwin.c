/*
 * csc_launch_darwin.c — csc_launch_platform.h for Apple platforms: arc4random_buf (<stdlib.h>,
 * never fails), renamex_np with RENAME_SWAP (<stdio.h>, macOS 10.12 / iOS 10), struct stat's
 * st_mtimespec (<sys/stat.h>). Compiled only there; not compiled or run on the Linux build
 * machines.
 */
#if defined(__APPLE__)
#include "csc_launch_platform.h"

#include <stdio.h>
#include <stdlib.h>

size_t csc_platform_random(unsigned char *bytes, size_t length) {
    arc4random_buf(bytes, length);
    return length;
}

int csc_platform_swap_paths(const char *from, const char *to) {
    return renamex_np(from, to, RENAME_SWAP);
}

int64_t csc_platform_modified_ns(const struct stat *info) {
    return (int64_t)info->st_mtimespec.tv_sec * 1000000000 + info->st_mtimespec.tv_nsec;
}
#endif
