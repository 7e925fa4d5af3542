/*
 * csc_sys.h — the few operating-system primitives that the platform-neutral pure-C parts of
 * capture (csc_writer.c, csc_claim.c) use. Freestanding: this header and those files include only
 * the compiler's freestanding headers (stdint, stddef, stdbool, stdatomic), so they compile for
 * any target without an SDK (scripts/check-apple-targets.sh compiles them freestanding for iOS,
 * the iOS simulator and macOS). Implemented once for POSIX (Linux and Darwin) in csc_sys_posix.c. Every function here is async-signal-safe.
 */
#ifndef CSC_SYS_H
#define CSC_SYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** write(2), retried on EINTR: the number of bytes written (> 0), or 0 with *error set to the
 *  errno of the failed write (ENOSPC when the system wrote nothing without an error). */
size_t csc_sys_write(int fd, const void *bytes, size_t length, int *error);

/** Sleeps for about a millisecond (nanosleep). */
void csc_sys_sleep_one_millisecond(void);

#endif
