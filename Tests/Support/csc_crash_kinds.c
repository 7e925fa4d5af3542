/*
 * csc_crash_kinds.c — deliberate crashes for `shield crash <kind>` and the tests. Each function
 * is kept out of line so a report's crashed-thread stack names it. Only the public capture API is
 * used here: this file is in no product (csc_test_support.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "csc_capture.h"
#include "csc_test_support.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif
#include <unistd.h>

#define CSC_NOINLINE __attribute__((noinline, used))

CSC_NOINLINE void csc_crash_segv(void) {
    volatile int *null_pointer = (volatile int *)(uintptr_t)0;
    *null_pointer = 42;
    __asm__ volatile("" ::: "memory"); /* keep a frame after the faulting store */
}

CSC_NOINLINE void csc_crash_bus(void) {
    /* A mapping of a file that is shorter than the mapping: touching past its end is SIGBUS. */
    char path[1024] = "/tmp";
#if defined(__APPLE__)
    /* An iOS app may not write /tmp: its own temporary directory (confstr, no allocation). */
    size_t needed = confstr(_CS_DARWIN_USER_TEMP_DIR, path, sizeof path - 32);
    if (needed == 0 || needed > sizeof path - 32) strcpy(path, "/tmp");
#endif
    strcat(path, "/crashshield-busXXXXXX");
    int fd = mkstemp(path);
    if (fd >= 0) {
        unlink(path);
        volatile char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (page != MAP_FAILED) page[0] = 1;
    }
    __asm__ volatile("" ::: "memory");
    abort(); /* unreachable unless the mapping failed */
}

/** An undefined instruction: SIGILL on every platform. x86_64: __builtin_trap() is ud2 (the
 *  Swift runtime's trap there). arm64: __builtin_trap() is BRK, which raises SIGTRAP (Darwin's
 *  EXC_BREAKPOINT, Linux's brk handler), so the permanently undefined UDF #0 is used instead. */
CSC_NOINLINE void csc_crash_ill(void) {
#if defined(__aarch64__) || defined(__arm64__)
    __asm__ volatile("udf #0");
#endif
    __builtin_trap();
}

/** x86_64: the division traps (#DE, SIGFPE). arm64 has no integer-division trap (the quotient
 *  is 0) and Apple's cores do not trap floating-point exceptions, so there the kind raises SIGFPE
 *  itself after the division. */
CSC_NOINLINE void csc_crash_fpe(void) {
    volatile int numerator = 1, denominator = 0;
    volatile int result = numerator / denominator;
    (void)result;
#if defined(__aarch64__) || defined(__arm64__)
    raise(SIGFPE);
#endif
    __asm__ volatile("" ::: "memory");
}

CSC_NOINLINE void csc_crash_abort(void) {
    abort();
}

CSC_NOINLINE void csc_crash_trap(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("int3");
#elif defined(__aarch64__)
    __asm__ volatile("brk #0xf000");
#else
    raise(SIGTRAP);
#endif
    __asm__ volatile("" ::: "memory");
}

/* ---- corrupt code pointers and stacks: the unwinder must survive them ---------------------- */

typedef void (*csc_function)(void);

/** Calls through a NULL function pointer: the PC becomes 0 and the caller is known only from the
 *  return address the call pushed (x86_64) or the link register (aarch64). */
CSC_NOINLINE void csc_crash_null_call(void) {
    csc_function volatile function = NULL;
    function();
    __asm__ volatile("" ::: "memory"); /* the call is not a tail call */
}

/** Calls through a corrupt function pointer: an address that was mapped and is not any more. */
CSC_NOINLINE void csc_crash_bad_function_pointer(void) {
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
    if (page == MAP_FAILED) abort();
    munmap(page, 4096);
    csc_function volatile function = (csc_function)page;
    function();
    __asm__ volatile("" ::: "memory");
}

/** Calls into a buffer on the (non-executable) stack holding a `ret`: the fetch faults. */
CSC_NOINLINE void csc_crash_jump_to_stack(void) {
    volatile uint8_t code[16] = {0xc3, 0xc3, 0xc3, 0xc3};
    csc_function volatile function = (csc_function)(uintptr_t)code;
    function();
    __asm__ volatile("" ::: "memory");
}

/** A stack overflow of text ("AAAA…") over this frame's saved frame pointer and return address:
 *  the return faults (x86_64: a non-canonical target), and the unwind tables then lead the DWARF
 *  unwinder to the overwritten words. __builtin_frame_address(0) points at the frame record
 *  {saved frame pointer, return address} on both x86_64 and aarch64. */
CSC_NOINLINE void csc_crash_return_overwritten(void) {
    uintptr_t *volatile record = __builtin_frame_address(0);
    record[0] = (uintptr_t)0x4141414141414141ull;
    record[1] = (uintptr_t)0x4141414141414141ull;
    __asm__ volatile("" ::: "memory");
}

/** Overwrites only the saved frame pointer of its caller's frame record (a low, never mapped
 *  address), then returns normally. */
static CSC_NOINLINE void csc_clobber_saved_frame_pointer(void) {
    uintptr_t *volatile record = __builtin_frame_address(0);
    record[0] = (uintptr_t)0x1000;
    __asm__ volatile("" ::: "memory");
}

/** Its frame pointer is clobbered by the callee; its next use of the frame faults, and the unwind
 *  tables (which locate the frame through the frame pointer) point the unwinder at page zero. */
CSC_NOINLINE void csc_crash_frame_pointer_clobbered(void) {
    csc_clobber_saved_frame_pointer();
    volatile uintptr_t through_frame = *(volatile uintptr_t *)__builtin_frame_address(0);
    (void)through_frame;
    __asm__ volatile("" ::: "memory");
}

static CSC_NOINLINE int csc_recurse(int depth) {
    volatile char frame[512];
    frame[0] = (char)depth;
    frame[511] = (char)depth;
    return csc_recurse(depth + 1) + frame[0] + frame[511];
}

CSC_NOINLINE void csc_crash_stack_overflow(void) {
    (void)csc_recurse(0);
}

static void csc_block_forever(void) {
    for (;;) pause();
}

static void *csc_thread_segv_main(void *unused) {
    (void)unused;
    csc_thread_prepare();
    csc_crash_segv();
    return NULL;
}

static void *csc_thread_overflow_main(void *unused) {
    (void)unused;
    csc_thread_prepare();
    csc_crash_stack_overflow();
    return NULL;
}

void csc_crash_thread_segv(void) {
    pthread_t thread;
    pthread_create(&thread, NULL, csc_thread_segv_main, NULL);
    csc_block_forever();
}

static void *csc_thread_abort_main(void *unused) {
    (void)unused;
    csc_thread_prepare();
    csc_crash_abort();
    return NULL;
}

void csc_crash_thread_abort(void) {
    pthread_t thread;
    pthread_create(&thread, NULL, csc_thread_abort_main, NULL);
    csc_block_forever();
}

void csc_crash_thread_stack_overflow(void) {
    pthread_t thread;
    pthread_create(&thread, NULL, csc_thread_overflow_main, NULL);
    csc_block_forever();
}

static _Atomic int g_ready;

static void *csc_racer_main(void *unused) {
    (void)unused;
    csc_thread_prepare();
    atomic_fetch_add(&g_ready, 1);
    while (atomic_load(&g_ready) < 2) {} /* both threads fault within nanoseconds of each other */
    csc_crash_segv();
    return NULL;
}

void csc_crash_two_threads(void) {
#if defined(CSC_TEST_SEAMS) /* without the hook (release) the report may count fewer crashers */
    csc_test_wait_for_second_crash();
#endif
    pthread_t first, second;
    pthread_create(&first, NULL, csc_racer_main, NULL);
    pthread_create(&second, NULL, csc_racer_main, NULL);
    csc_block_forever();
}

/* ---- helpers for the chaining and SIGPIPE tests -------------------------------------------- */

static void csc_previous_segv_handler(int sig, siginfo_t *info, void *context) {
    (void)info;
    (void)context;
    static const char marker[] = "PREVIOUS-HANDLER-RAN\n";
    (void)!write(1, marker, sizeof marker - 1);
    signal(sig, SIG_DFL); /* the fault re-executes on return and ends the process */
}

void csc_test_install_previous_handler(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = csc_previous_segv_handler;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, NULL);
}

void csc_test_set_thread_name(const char *name) {
#if defined(__APPLE__)
    pthread_setname_np(name); /* Darwin: names the calling thread only */
#else
    prctl(PR_SET_NAME, name, 0, 0, 0);
#endif
}

bool csc_test_sigpipe_is_ignored(void) {
    struct sigaction current;
    sigaction(SIGPIPE, NULL, &current);
    return !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN;
}

int csc_crash_sigpipe(void) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    close(fds[0]);
    char byte = 1;
    ssize_t n = write(fds[1], &byte, 1); /* SIGPIPE unless ignored; then EPIPE */
    int error = n < 0 ? errno : 0;
    close(fds[1]);
    return error;
}

/* ---- several signals at once, fork, a pending SIGALRM ------------------------------------- */

static _Atomic int g_three_ready;

static void *csc_three_signals_main(void *which) {
    csc_thread_prepare();
    atomic_fetch_add(&g_three_ready, 1);
    while (atomic_load(&g_three_ready) < 3) {} /* the three fault within nanoseconds of each other */
    switch ((intptr_t)which) {
    case 0: csc_crash_segv(); break;
    case 1: csc_crash_abort(); break;
    default: csc_crash_fpe(); break;
    }
    return NULL;
}

void csc_crash_three_signals(void) {
#if defined(CSC_TEST_SEAMS) /* without the hook (release) the report may count fewer crashers */
    csc_test_wait_for_other_crashes(2);
#endif
    pthread_t threads[3];
    for (intptr_t i = 0; i < 3; i++) pthread_create(&threads[i], NULL, csc_three_signals_main, (void *)i);
    csc_block_forever();
}

typedef struct {
    int timeout_seconds;
    int status;
    pid_t child;
} csc_fork_run;

static void *csc_fork_and_wait(void *argument) {
    csc_fork_run *run = argument;
    run->status = -1;
    pid_t child = fork();
    if (child == 0) {
        csc_crash_segv();
        _exit(0);
    }
    run->child = child;
    if (child < 0) return NULL;
    struct timespec pause = {0, 5000000};
    for (int waited = 0; waited < run->timeout_seconds * 200; waited++) {
        int status = 0;
        if (waitpid(child, &status, WNOHANG) == child) {
            run->status = status;
            return NULL;
        }
        nanosleep(&pause, NULL);
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return NULL;
}

int csc_crash_forked_child(bool from_background_thread, int timeout_seconds, int *child_pid) {
    csc_fork_run run = {timeout_seconds, -1, -1};
    if (from_background_thread) {
        pthread_t thread;
        if (pthread_create(&thread, NULL, csc_fork_and_wait, &run) != 0) return -1;
        pthread_join(thread, NULL);
    } else {
        csc_fork_and_wait(&run);
    }
    if (child_pid) *child_pid = run.child;
    return run.status;
}

void csc_crash_segv_with_pending_alarm(void) {
    sigset_t alarm_only, pending;
    sigemptyset(&alarm_only);
    sigaddset(&alarm_only, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alarm_only, NULL);
    pthread_kill(pthread_self(), SIGALRM);
    sigpending(&pending);
    if (!sigismember(&pending, SIGALRM)) {
        static const char marker[] = "NO-PENDING-ALARM\n";
        (void)!write(1, marker, sizeof marker - 1);
        _exit(3);
    }
    csc_crash_segv();
}

/* ---- previous handlers with flags, slow ones, one that resolves its faults ---------------- */

static void csc_resethand_handler(int sig, siginfo_t *info, void *context) {
    (void)info;
    (void)context;
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    bool masked = sigismember(&now, SIGUSR2) == 1 && sigismember(&now, sig) == 1;
    static const char with_mask[] = "RESETHAND-HANDLER-RAN mask=1\n";
    static const char without_mask[] = "RESETHAND-HANDLER-RAN mask=0\n";
    if (masked)
        (void)!write(1, with_mask, sizeof with_mask - 1);
    else
        (void)!write(1, without_mask, sizeof without_mask - 1);
    /* No reset here: SA_RESETHAND made the disposition SIG_DFL, so the re-executed fault ends the process. */
}

void csc_test_install_resethand_handler(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = csc_resethand_handler;
    action.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    sigaddset(&action.sa_mask, SIGUSR2);
    sigaction(SIGSEGV, &action, NULL);
}

static _Atomic int g_slow_entered;

static void csc_slow_previous_handler(int sig) {
    struct timespec work = {0, atomic_fetch_add(&g_slow_entered, 1) == 0 ? 100000000 : 1000000};
    nanosleep(&work, NULL);
    signal(sig, SIG_DFL); /* a fault re-executes into the default action; abort() re-raises */
}

void csc_test_install_slow_previous_handlers(void) {
    static const int signals[] = {SIGSEGV, SIGABRT, SIGFPE};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = csc_slow_previous_handler;
        sigemptyset(&action.sa_mask);
        sigaction(signals[i], &action, NULL);
    }
}

static char *g_guarded_page;
static _Atomic int g_resolved_faults;

static void csc_resolving_handler(int sig, siginfo_t *info, void *context) {
    (void)context;
    uintptr_t address = (uintptr_t)info->si_addr, page = (uintptr_t)g_guarded_page;
    size_t size = (size_t)getpagesize();
    if (page != 0 && address >= page && address < page + size) {
        mprotect(g_guarded_page, size, PROT_READ | PROT_WRITE); /* resolved: the store re-executes */
        atomic_fetch_add(&g_resolved_faults, 1);
        return;
    }
    signal(sig, SIG_DFL); /* not ours: the fault re-executes into the default action */
}

void csc_test_install_resolving_handler(void) {
    void *page = mmap(NULL, (size_t)getpagesize(), PROT_NONE, MAP_PRIVATE | MAP_ANON, -1, 0);
    g_guarded_page = page == MAP_FAILED ? NULL : page;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = csc_resolving_handler;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, NULL);
}

int csc_test_touch_guarded_page(void) {
    if (g_guarded_page == NULL) return -1;
    *(volatile char *)g_guarded_page = 1;
    return atomic_load(&g_resolved_faults);
}

static void csc_previous_trap_handler(int sig) {
    (void)sig;
    static const char marker[] = "TRAP-HANDLER-RAN\n";
    (void)!write(1, marker, sizeof marker - 1);
}

void csc_test_install_previous_trap_handler(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = csc_previous_trap_handler;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTRAP, &action, NULL);
}

/* ---- a previous handler that jumps out of the signal (probes, harnesses catching abort) ---- */

static sigjmp_buf g_jump_back;
static volatile sig_atomic_t g_jump_armed;

static void csc_jumping_handler(int sig, siginfo_t *info, void *context) {
    (void)info;
    (void)context;
    if (g_jump_armed) {
        g_jump_armed = 0;
        siglongjmp(g_jump_back, 1);
    }
    signal(sig, SIG_DFL); /* not expected: a fault re-executes into the default action, abort() re-raises */
}

void csc_test_install_jumping_handler(int sig) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = csc_jumping_handler;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(sig, &action, NULL);
}

bool csc_test_probe_read(uintptr_t address) {
    if (sigsetjmp(g_jump_back, 1)) return false;
    g_jump_armed = 1;
    (void)*(volatile const char *)address;
    g_jump_armed = 0;
    return true;
}

bool csc_test_abort_caught(void) {
    if (sigsetjmp(g_jump_back, 1)) return true;
    g_jump_armed = 1;
    abort();
}

/* ---- probe counters (csc_test_support.h) ---------------------------------------------------- */
static _Atomic long g_probe_counters[CSC_TEST_PROBE_COUNTERS];

long csc_test_probe_counter_add(int index, long delta) {
    if (index < 0 || index >= CSC_TEST_PROBE_COUNTERS) return 0;
    return atomic_fetch_add(&g_probe_counters[index], delta) + delta;
}

long csc_test_probe_counter_load(int index) {
    if (index < 0 || index >= CSC_TEST_PROBE_COUNTERS) return 0;
    return atomic_load(&g_probe_counters[index]);
}

void csc_test_probe_counter_store(int index, long value) {
    if (index < 0 || index >= CSC_TEST_PROBE_COUNTERS) return;
    atomic_store(&g_probe_counters[index], value);
}
