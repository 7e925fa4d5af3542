/*
 * csc_platform.h — what the shared handler (csc_capture.c) needs from the operating system,
 * one concern per file, each compiled only where it applies (the whole file inside
 * `#if defined(__linux__)` or `#if defined(__APPLE__)`):
 *
 *   concern                          Linux                    Darwin (iOS, macOS)
 *   machine context (registers)      csc_context_linux.c      csc_context_darwin.c
 *   signal facts, process facts      csc_process_linux.c      csc_process_darwin.c
 *   threads                          csc_threads_linux.c      csc_threads_darwin.c
 *   unwinding                        csc_unwind_linux.c       csc_unwind_darwin.c
 *   watchdog                         csc_watchdog_linux.c     csc_watchdog_darwin.c
 *   fault-free memory reads          csc_memory_linux.c       csc_memory_darwin.c
 *   the Swift runtime's message      csc_runtime_message_linux.c  csc_runtime_message_darwin.c
 *
 * Everything else — claiming the crash (csc_claim.c), the JSON writer (csc_writer.c), the
 * report's content and format, passing the signal on, the watchdog's policy — is shared.
 * Every function declared here that the handler calls follows the rules of csc_capture.h.
 * The Darwin files are written against Apple's headers (cited in each file) and are compiled
 * only by an Apple build: nothing on the Linux build machines compiles or runs them.
 */
#ifndef CSC_PLATFORM_H
#define CSC_PLATFORM_H

#include "csc_claim.h"
#include "csc_internal.h"

#include <signal.h>

/* ---- machine context: the `void *` a SA_SIGINFO handler receives (csc_context_*.c) --------- */
uintptr_t csc_context_pc(const void *context);
/** The frame pointer (x86_64 rbp, arm64 x29). */
uintptr_t csc_context_fp(const void *context);
uintptr_t csc_context_sp(const void *context);
/** The link register (arm64 x30); 0 where there is none (x86_64). */
uintptr_t csc_context_lr(const void *context);
/** The report's "registers" object: every general register by its usual name. */
void csc_write_registers(csc_out *out, const void *context);

/* ---- the language runtime's message of a fatal error (csc_runtime_message_*.c) -------------- */
/** Finds where the Swift runtime leaves the text of a fatal error for crash reporters (normal
 *  context, at install; again later is cheap and finds a runtime loaded since). */
void csc_runtime_message_prepare(void);
/** Copies that text into `text` (NUL-terminated, cut to `capacity` - 1 bytes); false when the
 *  runtime left none or it cannot be read. Async-signal-safe. */
bool csc_runtime_message_copy(char *text, size_t capacity);

/* ---- signals and the process (csc_process_*.c) --------------------------------------------- */
/** The symbolic name of si_code for `sig` ("SEGV_MAPERR", "SI_USER", ...). */
const char *csc_code_name(int sig, int code);
/** The signal was sent by a process (kill, sigqueue, raise, a timer), not raised by an
 *  instruction: si_addr is then no fault address, and the signal does not re-fire by itself. */
bool csc_signal_was_sent(const siginfo_t *info);
/** abort() (or raise(SIGABRT)) of this process: when a handler returns, abort() re-raises with
 *  the default action. */
bool csc_signal_is_abort(int sig, const siginfo_t *info);
/** The executable's path ("" when unknown). Not async-signal-safe (install). */
void csc_process_executable(char *path, size_t capacity);
/** Now, on the clock the report's uptime is measured on. Async-signal-safe. */
uint64_t csc_uptime_clock_ns(void);
/** When the process started, on that clock (0 when unknown). Not async-signal-safe (install). */
uint64_t csc_process_start_ns(void);

/* ---- threads (csc_threads_*.c) -------------------------------------------------------------- */
csc_thread_id csc_thread_self(void);
/** The calling thread is the process's main thread (in a forked child: the thread that forked). */
bool csc_thread_is_main(void);
/** The calling thread's name, NUL-terminated, cut to `capacity` - 1 bytes. */
void csc_thread_name(char *name, size_t capacity);
/** Room for any platform's thread name and its NUL (Darwin keeps 63 bytes, Linux 15). */
#define CSC_THREAD_NAME_BYTES 65
/** Longest thread name the platform keeps (bytes, without the NUL). */
size_t csc_thread_name_max(void);
/** Sends `sig` to the calling thread. */
void csc_thread_raise(int sig);
/** How many threads the process has now, or -1 where the platform's handler does not count them. */
int csc_thread_count(void);

/* ---- unwinding (csc_unwind_*.c) -------------------------------------------------------------- */
/** At install: decides whether the DWARF unwinder may run in the handler, and warms it up. */
void csc_unwind_prepare(void);
/** The DWARF unwinder may run in the handler (csc_capture.h, rule 2). */
bool csc_unwind_dwarf_available(void);
/** DWARF walk from the interrupted `pc`, innermost first, into frames[*count...] (*count is
 *  updated after each frame, so a minimal report after a fault still sees them). Runs under a
 *  recovery point: a fault inside it sets *faulted. Returns true when the walk found `pc` (the
 *  frames are then the walk's). Only where csc_unwind_dwarf_available(). */
bool csc_unwind_dwarf(uintptr_t pc, csc_thread_id self, uintptr_t *frames, _Atomic int *count, bool *faulted);
/** Called by the handler for a signal on the thread that owns the report: returns unless that
 *  thread's DWARF walk faulted, in which case it resumes the walk's caller (does not return). */
void csc_unwind_fault_recover(int sig, csc_thread_id self);
/** A code address as read from a frame record or a register: pointer-authentication bits
 *  stripped where the platform signs return addresses (arm64e), unchanged elsewhere. */
uintptr_t csc_code_address(uintptr_t value);

/* ---- watchdog (csc_watchdog_*.c) ------------------------------------------------------------- */
/** At install: whatever the platform's watchdog needs before a crash. Not async-signal-safe. */
void csc_watchdog_prepare(void);
/** Ends the process with SIGALRM unless csc_watchdog_disarm() is called within `seconds`. The
 *  crash is `sig` on thread `self`. Touches none of the app's signal state before it expires. */
void csc_watchdog_arm(csc_thread_id self, int sig, uint32_t seconds);
void csc_watchdog_disarm(void);
/** The signal is the watchdog's own (not a crash): the handler returns at once. A watchdog
 *  that expired on the current report ends the process here (does not return). */
bool csc_watchdog_claims_signal(const siginfo_t *info);
/** In the child of fork(): no watchdog of the parent exists here. */
void csc_watchdog_after_fork(void);

/* ---- shared, in csc_capture.c ------------------------------------------------------------------ */
/** Ends the process with `sig` and its default action (only `sig`'s disposition changes). */
_Noreturn void csc_die_with(int sig);

#endif
