/*
 * csc_process_darwin.c — Darwin's signal codes and process facts (iOS, macOS). NOT COMPILED OR
 * RUN HERE: no Apple SDK exists on the build machines; written against Apple's sources:
 *   - bsd/sys/signal.h: SI_USER 0x10001, SI_QUEUE, SI_TIMER, SI_ASYNCIO, SI_MESGQ 0x10005, and
 *     the SEGV_/BUS_/ILL_/FPE_/TRAP_ codes;
 *   - bsd/dev/arm/unix_signal.c (sendsig) and its i386 counterpart: the kernel derives si_code
 *     from the SIGNAL NUMBER, not from where the signal came from: every SIGSEGV gets SEGV_ACCERR
 *     (arm64) and si_addr = the exception state's fault address, SIGBUS BUS_ADRALN, SIGILL
 *     ILL_ILLTRP, SIGFPE an FPE_ code; every other signal (SIGTRAP from BRK, SIGABRT, SIGPIPE...)
 *     gets the si_code/si_pid recorded for the process by its sender (0/0 when the kernel itself
 *     raised it, as for a BRK's EXC_BREAKPOINT);
 *   - mach-o/dyld.h: _NSGetExecutablePath; sys/sysctl.h: KERN_PROC_PID's kinfo_proc
 *     (kp_proc.p_starttime, a wall-clock timeval); time.h: clock_gettime with CLOCK_MONOTONIC
 *     (macOS 10.12, iOS 10).
 * Consequence (a documented limit): a SIGSEGV/SIGBUS/SIGILL/SIGFPE sent with kill() cannot be
 * told from a fault on Darwin; it is reported as one.
 */
#if defined(__APPLE__)
#include "csc_platform.h"

#include <mach-o/dyld.h>
#include <signal.h>
#include <sys/sysctl.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

const char *csc_code_name(int sig, int code) {
    switch (code) {
    case SI_USER: return "SI_USER";
    case SI_QUEUE: return "SI_QUEUE";
    case SI_TIMER: return "SI_TIMER";
    case SI_ASYNCIO: return "SI_ASYNCIO";
    case SI_MESGQ: return "SI_MESGQ";
    default: break;
    }
    /* No code: the kernel raised it without one (a BRK's SIGTRAP), or abort()'s pthread_kill. */
    if (code == 0 && sig != SIGFPE) return "SI_NOINFO";
    return csc_fault_code_name(sig, code);
}

bool csc_signal_was_sent(const siginfo_t *info) {
    switch (info->si_signo) {
    case SIGSEGV:
    case SIGBUS:
    case SIGILL:
    case SIGFPE:
        return false; /* sendsig gives these an instruction's codes whatever their origin */
    case SIGTRAP:
    case SIGSYS:
        /* A BRK/int3 (EXC_BREAKPOINT) or a bad system call: raised by the kernel, with no sender. */
        return info->si_pid != 0 || (info->si_code >= SI_USER && info->si_code <= SI_MESGQ);
    default:
        return true; /* SIGABRT, SIGPIPE: abort(), raise(), kill(), a write to a closed pipe */
    }
}

bool csc_signal_is_abort(int sig, const siginfo_t *info) {
    /* Darwin's abort() raises SIGABRT with pthread_kill on the calling thread (no sender pid),
     * and re-raises it with the default action when a handler returns. */
    return sig == SIGABRT && (info == NULL || info->si_pid == 0 || info->si_pid == getpid());
}

void csc_process_executable(char *path, size_t capacity) {
    if (capacity == 0) return;
    uint32_t size = (uint32_t)capacity;
    if (_NSGetExecutablePath(path, &size) != 0) path[0] = 0; /* the buffer was too small */
}

static uint64_t csc_clock_now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t csc_uptime_clock_ns(void) {
    /* Darwin's CLOCK_MONOTONIC keeps counting while the device sleeps (like Linux's
     * CLOCK_BOOTTIME) and does not follow changes of the wall clock. */
    return csc_clock_now_ns(CLOCK_MONOTONIC);
}

uint64_t csc_process_start_ns(void) {
    /* The kernel records the start as a wall-clock time: carried over to the monotonic clock
     * once, here, so a later change of the wall clock does not move the report's uptime. */
    int name[4] = {CTL_KERN, KERN_PROC, KERN_PROC_PID, (int)getpid()};
    struct kinfo_proc info;
    size_t size = sizeof info;
    if (sysctl(name, 4, &info, &size, NULL, 0) != 0 || size == 0) return 0;
    const struct timeval *start = &info.kp_proc.p_starttime;
    uint64_t start_wall = (uint64_t)start->tv_sec * 1000000000ull + (uint64_t)start->tv_usec * 1000ull;
    uint64_t now_wall = csc_clock_now_ns(CLOCK_REALTIME), now_monotonic = csc_clock_now_ns(CLOCK_MONOTONIC);
    uint64_t running = now_wall > start_wall ? now_wall - start_wall : 0;
    return now_monotonic > running ? now_monotonic - running : 0;
}
#endif /* __APPLE__ */
