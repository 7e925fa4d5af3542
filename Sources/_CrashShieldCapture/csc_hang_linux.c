/*
 * csc_hang_linux.c — sampling the watched thread and reading memory on Linux.
 *
 * Sampling: a thread's stack can only be walked from that thread, so the watchdog sends the
 * watched thread a real-time signal of its own (the highest of SIGRTMAX-1 ... SIGRTMIN+2 whose
 * disposition is still the default when the thread becomes the watched one; none free: hangs
 * are reported without a stack) with tgkill, and waits at most `wait_ms` for the handler to walk
 * the stack into a static buffer. The signal is unblocked on the watched thread (a parent's
 * blocked set survives exec). The handler follows csc_capture.h's rules: no allocation, no lock;
 * it walks with libgcc's DWARF unwinder where the crash handler may (glibc's _dl_find_object)
 * under a recovery point (a fault inside the walk reaches the crash handler, which calls
 * csc_hang_fault_recover and so resumes here), else, or when that walk finds nothing, by frame
 * pointers through csc_safe_read. A blocking call the thread is in when it is sampled (once per
 * hang) may return early with EINTR, as under any sampling profiler (nanosleep and select are
 * never restarted; most others are, SA_RESTART).
 *
 * Memory: resident bytes from /proc/self/statm, the peak from getrusage (ru_maxrss, KiB).
 */
#if defined(__linux__)
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "csc_hang_platform.h"
#include "csc_platform.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

enum { CSC_SAMPLE_IDLE = 0, CSC_SAMPLE_REQUESTED = 1, CSC_SAMPLE_WRITING = 2, CSC_SAMPLE_DONE = 3, CSC_SAMPLE_BROKEN = 4 };

static pid_t g_watched_tid;
static int g_sample_signal;
static _Atomic int g_sample_state;
static uintptr_t g_sample_frames[CSC_HANG_MAX_FRAMES];
static _Atomic int g_sample_count;
static sigjmp_buf g_sample_recovery;
static _Atomic bool g_sample_walking;


void csc_hang_platform_name_thread(void) { prctl(PR_SET_NAME, "CrashShieldHang", 0, 0, 0); }

typedef struct {
    uintptr_t pc;
    bool found;
    int skipped;
} csc_sample_walk;

static _Unwind_Reason_Code csc_sample_step(struct _Unwind_Context *context, void *argument) {
    csc_sample_walk *walk = argument;
    int before = 0;
    uintptr_t ip = (uintptr_t)_Unwind_GetIPInfo(context, &before);
    if (!walk->found) {
        /* Skip this handler's frames and the signal trampoline until the interrupted PC. */
        if (ip != walk->pc) return ++walk->skipped > 32 ? _URC_END_OF_STACK : _URC_NO_REASON;
        walk->found = true;
    }
    int count = atomic_load_explicit(&g_sample_count, memory_order_relaxed);
    if (count >= CSC_HANG_MAX_FRAMES || ip == 0) return _URC_END_OF_STACK;
    g_sample_frames[count] = ip;
    atomic_store_explicit(&g_sample_count, count + 1, memory_order_relaxed);
    return _URC_NO_REASON;
}

static void csc_sample_frame_pointers(const void *context) {
    int count = 0;
    g_sample_frames[count++] = csc_context_pc(context);
    uintptr_t fp = csc_context_fp(context);
    while (count < CSC_HANG_MAX_FRAMES && fp != 0 && (fp & (sizeof(uintptr_t) - 1)) == 0) {
        uintptr_t pair[2];
        if (!csc_safe_read(fp, pair, sizeof pair) || pair[1] == 0) break;
        g_sample_frames[count++] = pair[1];
        if (pair[0] <= fp) break;
        fp = pair[0];
    }
    atomic_store(&g_sample_count, count);
}

static void csc_sample_handler(int sig, siginfo_t *info, void *context) {
    (void)sig;
    int saved_errno = errno;
    int expected = CSC_SAMPLE_REQUESTED;
    if (info == NULL || info->si_code != SI_TKILL || info->si_pid != getpid() ||
        (pid_t)syscall(SYS_gettid) != g_watched_tid ||
        !atomic_compare_exchange_strong(&g_sample_state, &expected, CSC_SAMPLE_WRITING)) {
        errno = saved_errno;
        return;
    }
    atomic_store(&g_sample_count, 0);
    uintptr_t pc = csc_context_pc(context);
    uint8_t byte;
    if (pc != 0 && csc_safe_read(pc, &byte, 1) && csc_unwind_dwarf_available()) {
        /* Static: must survive a siglongjmp back here. */
        static csc_sample_walk walk;
        walk = (csc_sample_walk){pc, false, 0};
        if (sigsetjmp(g_sample_recovery, 1) == 0) {
            atomic_store(&g_sample_walking, true);
            _Unwind_Backtrace(csc_sample_step, &walk);
        }
        atomic_store(&g_sample_walking, false);
        if (!walk.found) atomic_store(&g_sample_count, 0);
    }
    if (atomic_load(&g_sample_count) <= 1) csc_sample_frame_pointers(context);
    atomic_store(&g_sample_state, CSC_SAMPLE_DONE);
    errno = saved_errno;
}

void csc_hang_platform_fault_recover(int sig) {
    if ((sig == SIGSEGV || sig == SIGBUS) && atomic_load(&g_sample_walking) &&
        (pid_t)syscall(SYS_gettid) == g_watched_tid) {
        atomic_store(&g_sample_walking, false);
        siglongjmp(g_sample_recovery, 1);
    }
}

bool csc_hang_platform_prepare(void) {
    if (g_sample_signal) return true;
    for (int candidate = SIGRTMAX - 1; candidate >= SIGRTMIN + 2; candidate--) {
        struct sigaction current;
        if (sigaction(candidate, NULL, &current) != 0) continue;
        if ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL) continue;
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = csc_sample_handler;
        action.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
        sigemptyset(&action.sa_mask);
        if (sigaction(candidate, &action, NULL) != 0) continue;
        g_sample_signal = candidate;
        csc_safe_read_prepare();
        return true;
    }
    return false;
}

uint64_t csc_hang_platform_watch_this_thread(void) {
    g_watched_tid = (pid_t)syscall(SYS_gettid);
    /* The thread may have inherited a mask that blocks the signal (a parent's blocked set
     * survives exec): it is unblocked here, on the watched thread itself. */
    if (csc_hang_platform_prepare()) {
        sigset_t sampling;
        sigemptyset(&sampling);
        sigaddset(&sampling, g_sample_signal);
        pthread_sigmask(SIG_UNBLOCK, &sampling, NULL);
    }
    return (uint64_t)g_watched_tid;
}

uint32_t csc_hang_platform_sample(uint64_t *frames, uint32_t capacity, uint32_t wait_ms) {
    if (g_sample_signal == 0 || g_watched_tid == 0) return 0;
    int expected = CSC_SAMPLE_IDLE;
    if (!atomic_compare_exchange_strong(&g_sample_state, &expected, CSC_SAMPLE_REQUESTED)) return 0;
    if (syscall(SYS_tgkill, (long)getpid(), (long)g_watched_tid, (long)g_sample_signal) != 0) {
        atomic_store(&g_sample_state, CSC_SAMPLE_IDLE);
        return 0;
    }
    for (uint32_t waited = 0; waited < wait_ms && atomic_load(&g_sample_state) != CSC_SAMPLE_DONE; waited++) {
        struct timespec pause = {0, 1000000L};
        nanosleep(&pause, NULL);
    }
    expected = CSC_SAMPLE_REQUESTED;
    if (atomic_compare_exchange_strong(&g_sample_state, &expected, CSC_SAMPLE_IDLE)) return 0; /* never ran */
    for (uint32_t waited = 0; waited < wait_ms && atomic_load(&g_sample_state) == CSC_SAMPLE_WRITING; waited++) {
        struct timespec pause = {0, 1000000L};
        nanosleep(&pause, NULL);
    }
    if (atomic_load(&g_sample_state) != CSC_SAMPLE_DONE) {
        atomic_store(&g_sample_state, CSC_SAMPLE_BROKEN); /* a walk that never ended: no more samples */
        return 0;
    }
    uint32_t count = (uint32_t)atomic_load(&g_sample_count);
    if (count > capacity) count = capacity;
    for (uint32_t i = 0; i < count; i++) frames[i] = g_sample_frames[i];
    atomic_store(&g_sample_state, CSC_SAMPLE_IDLE);
    return count;
}

bool csc_hang_platform_memory(uint64_t *resident, uint64_t *peak, uint64_t *footprint) {
    *footprint = 0;
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) == 0) *peak = (uint64_t)usage.ru_maxrss * 1024u;
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return *peak != 0;
    char text[128];
    ssize_t got = read(fd, text, sizeof text - 1);
    close(fd);
    if (got <= 0) return *peak != 0;
    text[got] = 0;
    char *cursor = text;
    strtoull(cursor, &cursor, 10);           /* size */
    uint64_t pages = strtoull(cursor, NULL, 10); /* resident */
    long page = sysconf(_SC_PAGESIZE);
    *resident = pages * (uint64_t)(page > 0 ? page : 4096);
    return true;
}
#endif /* __linux__ */
