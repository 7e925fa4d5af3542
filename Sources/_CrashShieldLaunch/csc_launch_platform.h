/*
 * csc_launch_platform.h — the few system calls of csc_launch.c that differ between kernels, one
 * file per platform: csc_launch_linux.c and csc_launch_darwin.c. Internal to this target; none
 * of it runs in a signal handler.
 */
#ifndef CSC_LAUNCH_PLATFORM_H
#define CSC_LAUNCH_PLATFORM_H
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/** Fills `bytes` from the kernel's entropy; returns how many it filled (fewer only when the
 *  system has no source, which the caller then makes up for). */
size_t csc_platform_random(unsigned char *bytes, size_t length);

/** Atomically exchanges the directory entries `from` and `to` (either may be a file or a
 *  directory). 0, or -1 with errno: ENOENT when `to` does not exist, another value when the file
 *  system or kernel cannot swap (callers then fall back to rename(2)). */
int csc_platform_swap_paths(const char *from, const char *to);

/** The modification time `info` holds, in nanoseconds since the epoch. */
int64_t csc_platform_modified_ns(const struct stat *info);
#endif
