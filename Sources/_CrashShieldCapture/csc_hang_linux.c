/*
 * csc_hang_linux.c — sampling the watched thread and reading memory on Linux.
 *
 * Sampling: a thread's stack can only be walked from that thread, so the watchdog sends the
 * thread a real-time signal of its own (the highest of SIGRTMAX-1 ... SIGRTMIN+2 whose
 * disposition is still the default when the thread becomes the watched one; none free: hangs
 * are reported without a stack) with tgkill, and waits for the handler to walk the stack into a
 * static buffer: the watched thread first (at most `wait_ms` to answer), then every other thread
 * of /proc/self/task (listed with getdents64 into a static buffer, names from
 * /proc/self/task/<tid>/comm), one at a time, each given `answer_ms` to answer; a thread whose
 * SigBlk (/proc/self/task/<tid>/status) blocks the signal is not sent it, and neither it nor one
 * that does not answer in time has a stack (a late answer is ignored: the handler answers only the
 * thread currently asked, in state REQUESTED). The watchdog thread itself is never asked. The
 * signal is unblocked on the watched thread (a parent's blocked set survives exec); threads it
 * starts inherit that. The handler follows csc_capture.h's rules: no allocation, no lock;
 * it walks with libgcc's DWARF unwinder where the crash handler may (glibc's _dl_find_object)
 * under a recovery point (a fault inside the walk reaches the crash handler, which calls
 * csc_hang_fault_recover and so resumes here), else, or when that walk finds nothing, by frame
 * pointers through csc_safe_read. A blocking call a thread is in when it is sampled (once per
 * hang) may return early with EINTR, as under any sampling profiler: the handler is installed
 * SA_RESTART, so read, write, wait and the like restart, but nanosleep, select, poll, epoll_wait
 * and sem_wait are never restarted by the kernel and return EINTR (a nanosleep loop that
 * continues with the remaining time, as a correct one does, sleeps its full time).
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
/* The sampling state and the thread it is for, in one word (tid << 8 | state), so a handler can
 * only take a request made for its own thread: a late answer of a thread that was given up
 * finds another tid (or IDLE) and leaves. */
#define CSC_SAMPLE_WORD(tid, state) (((uint64_t)(uint32_t)(tid) << 8) | (uint64_t)(state))
#define CSC_SAMPLE_STATE(word) ((int)((word) & 0xff))
#define CSC_SAMPLE_TID(word) ((pid_t)(uint32_t)((word) >> 8))

static pid_t g_watched_tid;
static int g_sample_signal;
static _Atomic uint64_t g_sample_state; /* CSC_SAMPLE_WORD */
static uintptr_t g_sample_frames[CSC_HANG_MAX_FRAMES];
static _Atomic int g_sample_count;
static sigjmp_buf g_sample_recovery;
static _Atomic bool g_sample_walking;


void csc_hang_platform_name_thread(void) { prctl(PR_SET_NAME, "CrashShieldHang", 0, 0, 0); }

void csc_hang_platform_thread_name(char *name, size_t capacity) {
    char comm[17] = {0}; /* PR_GET_NAME writes up to 16 bytes */
    if (capacity == 0) return;
    if (prctl(PR_GET_NAME, comm, 0, 0, 0) != 0) comm[0] = 0;
    size_t i = 0;
    for (; comm[i] && i + 1 < capacity; i++) name[i] = comm[i];
    name[i] = 0;
}

void csc_hang_platform_set_thread_name(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }

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
    pid_t self = (pid_t)syscall(SYS_gettid);
    uint64_t expected = CSC_SAMPLE_WORD(self, CSC_SAMPLE_REQUESTED);
    if (info == NULL || info->si_code != SI_TKILL || info->si_pid != getpid() ||
        !atomic_compare_exchange_strong(&g_sample_state, &expected, CSC_SAMPLE_WORD(self, CSC_SAMPLE_WRITING))) {
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
    atomic_store(&g_sample_state, CSC_SAMPLE_WORD(self, CSC_SAMPLE_DONE));
    errno = saved_errno;
}

void csc_hang_platform_fault_recover(int sig) {
    if ((sig == SIGSEGV || sig == SIGBUS) && atomic_load(&g_sample_walking) &&
        (pid_t)syscall(SYS_gettid) == CSC_SAMPLE_TID(atomic_load(&g_sample_state))) {
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

static void csc_pause_1ms(void) {
    struct timespec pause = {0, 1000000L};
    nanosleep(&pause, NULL);
}

/* Asks thread `tid` for its stack: at most `answer_ms` for its handler to start, then at most
 * CSC_SAMPLE_FINISH_MS for it to finish (a walk that never ends breaks sampling for good).
 * Returns the frame count (0: no answer). On the watchdog thread only. */
enum { CSC_SAMPLE_FINISH_MS = 500 };
static uint32_t csc_sample_tid(pid_t tid, uint64_t *frames, uint32_t capacity, uint32_t answer_ms) {
    if (g_sample_signal == 0 || tid == 0) return 0;
    const uint64_t requested = CSC_SAMPLE_WORD(tid, CSC_SAMPLE_REQUESTED), writing = CSC_SAMPLE_WORD(tid, CSC_SAMPLE_WRITING);
    uint64_t expected = CSC_SAMPLE_WORD(0, CSC_SAMPLE_IDLE);
    if (!atomic_compare_exchange_strong(&g_sample_state, &expected, requested)) return 0;
    if (syscall(SYS_tgkill, (long)getpid(), (long)tid, (long)g_sample_signal) != 0) {
        atomic_store(&g_sample_state, CSC_SAMPLE_WORD(0, CSC_SAMPLE_IDLE));
        return 0;
    }
    for (uint32_t waited = 0; waited < answer_ms && atomic_load(&g_sample_state) == requested; waited++) csc_pause_1ms();
    expected = requested;
    if (atomic_compare_exchange_strong(&g_sample_state, &expected, CSC_SAMPLE_WORD(0, CSC_SAMPLE_IDLE))) return 0; /* never ran */
    for (uint32_t waited = 0; waited < CSC_SAMPLE_FINISH_MS && atomic_load(&g_sample_state) == writing; waited++) csc_pause_1ms();
    if (atomic_load(&g_sample_state) != CSC_SAMPLE_WORD(tid, CSC_SAMPLE_DONE)) {
        /* a walk that never ended: no more samples */
        atomic_store(&g_sample_state, CSC_SAMPLE_WORD(0, CSC_SAMPLE_BROKEN));
        return 0;
    }
    uint32_t count = (uint32_t)atomic_load(&g_sample_count);
    if (count > capacity) count = capacity;
    for (uint32_t i = 0; i < count; i++) frames[i] = g_sample_frames[i];
    atomic_store(&g_sample_state, CSC_SAMPLE_WORD(0, CSC_SAMPLE_IDLE));
    return count;
}

uint32_t csc_hang_platform_sample(uint64_t *frames, uint32_t capacity, uint32_t wait_ms) {
    return csc_sample_tid(g_watched_tid, frames, capacity, wait_ms);
}

/* Reads at most capacity - 1 bytes of a small /proc file (NUL-terminated); the byte count or -1. */
static ssize_t csc_read_small_file(const char *path, char *text, size_t capacity) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t done = 0;
    while ((size_t)done < capacity - 1) {
        ssize_t got = read(fd, text + done, capacity - 1 - (size_t)done);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        done += got;
    }
    close(fd);
    text[done] = 0;
    return done;
}

/* "/proc/self/task/<tid>/<leaf>" into `path`. */
static void csc_task_path(char *path, size_t capacity, pid_t tid, const char *leaf) {
    char digits[16];
    int n = 0;
    for (unsigned value = (unsigned)tid; n == 0 || value; value /= 10) digits[n++] = (char)('0' + value % 10);
    size_t at = 0;
    for (const char *p = "/proc/self/task/"; *p && at + 1 < capacity; p++) path[at++] = *p;
    while (n > 0 && at + 1 < capacity) path[at++] = digits[--n];
    if (at + 1 < capacity) path[at++] = '/';
    for (const char *p = leaf; *p && at + 1 < capacity; p++) path[at++] = *p;
    path[at] = 0;
}

static void csc_task_name(pid_t tid, char *name, size_t capacity) {
    char path[64];
    csc_task_path(path, sizeof path, tid, "comm");
    name[0] = 0;
    ssize_t got = csc_read_small_file(path, name, capacity);
    if (got <= 0) {
        name[0] = 0;
        return;
    }
    if (name[got - 1] == '\n') name[got - 1] = 0;
}

void csc_hang_platform_watched_name(char *name, size_t capacity) {
    if (capacity == 0) return;
    name[0] = 0;
    if (g_watched_tid) csc_task_name(g_watched_tid, name, capacity);
}

/* The thread blocks the sampling signal (its SigBlk line); false when unknown. */
static bool csc_task_blocks_signal(pid_t tid) {
    static char status[4096];
    char path[64];
    csc_task_path(path, sizeof path, tid, "status");
    if (csc_read_small_file(path, status, sizeof status) <= 0) return false;
    const char *line = strstr(status, "\nSigBlk:");
    if (line == NULL) return false;
    unsigned long long mask = strtoull(line + 8, NULL, 16);
    int bit = g_sample_signal - 1;
    return bit >= 0 && bit < 64 && ((mask >> bit) & 1ull);
}

struct csc_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

void csc_hang_platform_sample_others(csc_hang_sample *sample, uint32_t answer_ms) {
    sample->threads_listed = false;
    sample->threads_found = sample->thread_count = sample->threads_unanswered = sample->threads_blocking = sample->threads_beyond_limit = 0;
    int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return;
    /* The tids first (the directory is read whole before any thread is asked). */
    static pid_t tids[CSC_HANG_MAX_THREADS];
    static char entries[8192];
    pid_t self = (pid_t)syscall(SYS_gettid);
    uint32_t listed = 0, found = 0;
    bool complete = true;
    for (;;) {
        long got = syscall(SYS_getdents64, dir, entries, sizeof entries);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) complete = false;
        if (got <= 0) break;
        for (long at = 0; at < got;) {
            struct csc_dirent64 *entry = (struct csc_dirent64 *)(entries + at);
            at += entry->d_reclen;
            if (entry->d_reclen == 0) break;
            char *end = NULL;
            long tid = strtol(entry->d_name, &end, 10);
            if (end == entry->d_name || *end != 0 || tid <= 0) continue; /* "." and ".." */
            if ((pid_t)tid == self || (pid_t)tid == g_watched_tid) continue;
            found++;
            if (listed < CSC_HANG_MAX_THREADS) tids[listed++] = (pid_t)tid;
        }
    }
    close(dir);
    if (!complete && found == 0) return;
    sample->threads_listed = true;
    sample->threads_found = found;
    sample->threads_beyond_limit = found - listed;
    uint64_t frames[CSC_HANG_MAX_FRAMES];
    for (uint32_t i = 0; i < listed; i++) {
        csc_hang_thread *thread = &sample->threads[sample->thread_count++];
        memset(thread, 0, sizeof *thread);
        thread->thread_id = (uint64_t)tids[i];
        csc_task_name(tids[i], thread->name, sizeof thread->name);
        uint32_t count = 0;
        if (g_sample_signal != 0 && csc_task_blocks_signal(tids[i])) {
            thread->outcome = CSC_HANG_THREAD_SIGNAL_BLOCKED;
            sample->threads_blocking++;
            continue;
        }
        count = csc_sample_tid(tids[i], frames, CSC_HANG_MAX_FRAMES, answer_ms);
        thread->outcome = count > 0 ? CSC_HANG_THREAD_SAMPLED : CSC_HANG_THREAD_NO_ANSWER;
        if (count == 0) sample->threads_unanswered++;
        for (uint32_t f = 0; f < count; f++) {
            thread->frames[f].address = frames[f];
            thread->frames[f].image = -1;
        }
        thread->frame_count = count;
    }
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
