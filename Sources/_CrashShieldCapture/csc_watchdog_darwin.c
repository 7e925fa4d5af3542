/*
 * csc_watchdog_darwin.c — the handler's watchdog on Darwin (iOS, macOS). Darwin has no
 * timer_create (Linux's per-thread timer, csc_watchdog_linux.c), and SIGALRM, alarm() and
 * itimers belong to the app. So a small thread made at install (16 KiB stack, every signal
 * blocked, so it never takes one of the app's) waits on a Mach semaphore; the handler signals it
 * when it starts a report (semaphore_signal is a Mach trap: async-signal-safe, no lock, no
 * allocation), and the thread then waits on a second semaphore for at most watchdog_seconds. If
 * the handler does not signal that one in time, the watchdog thread ends the process with SIGALRM
 * (csc_die_with: SIGALRM's default action, raised on the watchdog thread); the report's prefix
 * stays on disk. A forked child has no watchdog thread (threads and Mach semaphores are not
 * inherited): its reports are written without a watchdog, and threads waiting for a stuck owner
 * still end the process (csc_claim).
 * NOT COMPILED OR RUN HERE: no Apple SDK exists on the build machines; written against
 * mach/semaphore.h (semaphore_signal, semaphore_wait, semaphore_timedwait with a
 * mach_timespec_t, KERN_OPERATION_TIMED_OUT, KERN_ABORTED), mach/task.h (semaphore_create with
 * SYNC_POLICY_FIFO) and pthread.h (pthread_setname_np names the calling thread on Darwin).
 */
#if defined(__APPLE__)
#include "csc_platform.h"

#include <mach/mach.h>
#include <mach/semaphore.h>
#include <mach/sync_policy.h>
#include <mach/task.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

static semaphore_t g_report_started;
static semaphore_t g_report_finished;
static _Atomic bool g_watchdog_ready;   /* the thread and both semaphores exist (not in a forked child) */
static _Atomic uint32_t g_watchdog_seconds;
static bool g_watchdog_armed;           /* only the report owner touches it */

static void *csc_watchdog_main(void *unused) {
    (void)unused;
    pthread_setname_np("CrashShield watchdog");
    for (;;) {
        if (semaphore_wait(g_report_started) != KERN_SUCCESS) continue; /* KERN_ABORTED: wait again */
        mach_timespec_t limit = {atomic_load(&g_watchdog_seconds), 0};
        kern_return_t result;
        do {
            result = semaphore_timedwait(g_report_finished, limit);
        } while (result == KERN_ABORTED);
        if (result == KERN_OPERATION_TIMED_OUT) csc_die_with(SIGALRM);
    }
    return NULL;
}

void csc_watchdog_prepare(void) {
    if (atomic_load(&g_watchdog_ready)) return;
    if (semaphore_create(mach_task_self(), &g_report_started, SYNC_POLICY_FIFO, 0) != KERN_SUCCESS) return;
    if (semaphore_create(mach_task_self(), &g_report_finished, SYNC_POLICY_FIFO, 0) != KERN_SUCCESS) {
        semaphore_destroy(mach_task_self(), g_report_started);
        return;
    }
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 16 * 1024);
    /* The thread inherits a mask with every signal blocked. */
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    pthread_t thread;
    bool started = pthread_create(&thread, &attributes, csc_watchdog_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    pthread_attr_destroy(&attributes);
    if (!started) {
        semaphore_destroy(mach_task_self(), g_report_started);
        semaphore_destroy(mach_task_self(), g_report_finished);
        return;
    }
    atomic_store(&g_watchdog_ready, true);
}

void csc_watchdog_arm(csc_thread_id self, int sig, uint32_t seconds) {
    (void)self;
    (void)sig;
    g_watchdog_armed = false;
    if (!atomic_load(&g_watchdog_ready)) return;
    atomic_store(&g_watchdog_seconds, seconds);
    g_watchdog_armed = semaphore_signal(g_report_started) == KERN_SUCCESS;
}

void csc_watchdog_disarm(void) {
    if (g_watchdog_armed) semaphore_signal(g_report_finished);
    g_watchdog_armed = false;
}

bool csc_watchdog_claims_signal(const siginfo_t *info) {
    (void)info;
    return false; /* the watchdog ends the process from its own thread: no signal of its own */
}

void csc_watchdog_after_fork(void) {
    atomic_store(&g_watchdog_ready, false);
    g_watchdog_armed = false;
}
#endif /* __APPLE__ */
