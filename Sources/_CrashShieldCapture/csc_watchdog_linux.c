/*
 * csc_watchdog_linux.c — the handler's watchdog on Linux: a POSIX timer of the crashing thread's
 * own, created in the handler with raw timer_create (SIGEV_THREAD_ID), that sends the crash's own
 * signal (ours, and unblocked in that thread while it is handled) tagged SI_TIMER with a cookie.
 * Raw system calls: no allocation, no lock; the app's SIGALRM, alarm() and itimers are not
 * touched. Without a timer (RLIMIT_SIGPENDING reached) the report is written without a watchdog;
 * waiting threads still end a stuck owner (csc_claim).
 */
#if defined(__linux__)
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "csc_platform.h"

#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define CSC_WATCHDOG_COOKIE 0x43534357

static int g_watchdog_timer = -1; /* kernel timer id while a report is written, else -1 */

void csc_watchdog_prepare(void) {}

void csc_watchdog_arm(csc_thread_id self, int sig, uint32_t seconds) {
    struct sigevent event;
    memset(&event, 0, sizeof event);
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = sig;
    event.sigev_value.sival_int = CSC_WATCHDOG_COOKIE;
    event.sigev_notify_thread_id = (pid_t)self;
    int timer = -1;
    if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &event, &timer) != 0) {
        g_watchdog_timer = -1;
        return;
    }
    struct itimerspec expiry;
    memset(&expiry, 0, sizeof expiry);
    expiry.it_value.tv_sec = (time_t)seconds;
    syscall(SYS_timer_settime, timer, 0, &expiry, NULL);
    g_watchdog_timer = timer;
}

void csc_watchdog_disarm(void) {
    if (g_watchdog_timer >= 0) syscall(SYS_timer_delete, g_watchdog_timer);
    g_watchdog_timer = -1;
}

bool csc_watchdog_claims_signal(const siginfo_t *info) {
    if (info == NULL || info->si_code != SI_TIMER || info->si_value.sival_int != CSC_WATCHDOG_COOKIE) return false;
    /* The report took longer than the watchdog period: the process ends with SIGALRM (the
     * report's prefix stays on disk). SIGALRM is set to its default action and unblocked only now. */
    if (g_watchdog_timer >= 0 && info->si_timerid == g_watchdog_timer) csc_die_with(SIGALRM);
    /* A watchdog that expired as it was deleted: its signal stays queued (the kernel does not
     * take back a queued timer signal). Not a crash. */
    return true;
}

void csc_watchdog_after_fork(void) { g_watchdog_timer = -1; /* timers are not inherited */ }
#endif /* __linux__ */
