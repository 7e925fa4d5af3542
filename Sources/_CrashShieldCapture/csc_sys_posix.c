/*
 * csc_sys_posix.c — csc_sys.h for POSIX systems (Linux and Darwin alike). Async-signal-safe:
 * write(2) and nanosleep(2) only.
 */
#include "csc_sys.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

size_t csc_sys_write(int fd, const void *bytes, size_t length, int *error) {
    for (;;) {
        ssize_t n = write(fd, bytes, length);
        if (n > 0) return (size_t)n;
        if (n < 0 && errno == EINTR) continue;
        *error = n < 0 ? errno : ENOSPC;
        return 0;
    }
}

void csc_sys_sleep_one_millisecond(void) {
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, NULL);
}
