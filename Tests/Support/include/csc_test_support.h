/*
 * csc_test_support.h — test seams of the crash capture and the guards, for the tests and `shield`.
 *
 * Nothing here is part of a product: an app never sees this header. The signal-handler hooks and
 * the guard fault injection are defined in the shipped targets only when they are compiled with
 * CSC_TEST_SEAMS (Package.swift sets it for the debug configuration), so a release build of an app
 * carries neither the hooks nor their branches in the handler; a caller in `shield` that must also
 * build in release tests `#if DEBUG`. The crash kinds and the previous-handler installers are
 * defined in this target (csc_crash_kinds.c) and exist in both configurations, like the
 * Objective-C crash kinds of _CrashShieldScenarios.
 */
#ifndef CSC_TEST_SUPPORT_H
#define CSC_TEST_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- signal-handler hooks (csc_capture.c; only in a build with CSC_TEST_SEAMS, i.e. debug) -- */

/** Makes the handler fault deliberately after writing its first section (crash-in-handler test). */
void csc_test_fault_in_handler(bool enabled);
/** Makes the handler spin forever after its first section (watchdog test). */
void csc_test_hang_in_handler(void);
/** Makes the next report wait (up to 0.5 s, before its tail) until another thread has crashed too,
 *  so a concurrent crash is seen deterministically (csc_crash_two_threads sets it). */
void csc_test_wait_for_second_crash(void);
/** The same for `count` other crashing threads (csc_crash_three_signals sets 2). */
void csc_test_wait_for_other_crashes(int count);
/** Creates an empty file under the name the next report would take (a name collision). */
bool csc_test_occupy_next_report_name(void);

/** The image-table pin (csc_images.c) against refreshes: 0 when a pinned table survives two
 *  refreshes (the one that would refill it is skipped) and refreshes alternate again after the
 *  unpin; otherwise the number of the step that failed. */
int csc_test_image_pin(void);

/* ---- guard seams (_CrashShieldRuntime; only with CSC_TEST_SEAMS). The deliberate Objective-C
 * crashes are in _CrashShieldScenarios (cs_scenarios.h). ----------------------------------------- */

/** Fault injection: the named guard's next canary reports a failure. */
void cs_guard_inject_canary_failure_for_testing(const char *guard_name);
/** Calls `probe` once, on the starting thread, inside the named guard's next canary window (its
 *  policy in the canary state, this thread marked as running the canary, incidents in canary
 *  mode), just before the canary itself. Runs under the engine lock: the probe must not start,
 *  stop or configure the guards. */
void cs_guard_set_canary_probe_for_testing(const char *guard_name, void (*probe)(void));
/** GNUstep backend: reads GCC libobjc's dispatch tables as if their struct had changed (1: a field
 *  inserted before the capacity; 2: the bucket array and the empty bucket swapped; 0: the real
 *  layout again) and has the next table write run the backend's table self-check again, which
 *  must then refuse in-place writes (cs_backend_dispatch_write_status().fallback). Not defined on
 *  Apple. For a child process: the rebuilds it leads to are unsafe beside other threads. */
void cs_backend_assume_table_layout_for_testing(int variant);
/** GNUstep backend: for every class of the class list and its metaclass, and for each selector
 *  of their own methods plus one no class defines, compares the backend's own-method lookup (its
 *  lists read in place) with class_copyMethodList's answer. Returns the number of lookups that
 *  differ; `checked` receives how many were made and `in_place` whether lists are read in place
 *  (false: the backend copies, and nothing can differ). Not defined on Apple. */
size_t cs_backend_own_method_mismatches_for_testing(size_t *checked, bool *in_place);

/* ---- counters for the probes of `shield` (C11 atomics: safe from any thread, a signal handler
 * or a forked child, on every deployment target; Swift's `Atomic` needs macOS 15 / iOS 18) ---- */
#define CSC_TEST_PROBE_COUNTERS 8
/** Adds `delta` to counter `index` (0..CSC_TEST_PROBE_COUNTERS-1) and returns the new value
 *  (sequentially consistent); an index out of range changes nothing and returns 0. */
long csc_test_probe_counter_add(int index, long delta);
long csc_test_probe_counter_load(int index);
void csc_test_probe_counter_store(int index, long value);

/* ---- crash kinds for `shield crash` (each crashes the calling thread) --------------------- */
void csc_crash_segv(void);
/* Uncaught C++ exceptions (csc_crash_kinds_cxx.cpp): std::out_of_range("cart index 7 beyond 3
 * items") thrown in crashshield_test::checkout_total; an app type that is no std::exception
 * (crashshield_test::PaymentDeclined); std::runtime_error("receipt printer offline") out of a
 * noexcept function; the first one on a std::thread; std::terminate() with no exception. */
void csc_crash_cxx_exception(void);
void csc_crash_cxx_custom_type(void);
void csc_crash_cxx_noexcept(void);
void csc_crash_thread_cxx_exception(void);
void csc_crash_cxx_terminate(void);
/** Throws and catches a C++ exception, then abort(): a plain abort. */
void csc_crash_cxx_caught_then_abort(void);
/** Installs a terminate handler of the app's that prints "app terminate handler ran" and aborts. */
void csc_test_install_app_terminate_handler(void);
void csc_crash_bus(void);
void csc_crash_ill(void);
void csc_crash_fpe(void);
void csc_crash_abort(void);
void csc_crash_trap(void);
void csc_crash_stack_overflow(void);
/** Starts a thread (with an alternate stack) that calls csc_crash_segv; blocks forever. */
void csc_crash_thread_segv(void);
/** abort() on a new thread; the calling thread blocks. */
void csc_crash_thread_abort(void);
/** Starts two threads that call csc_crash_segv at the same moment; blocks forever. The report
 *  waits for the second thread (csc_test_wait_for_second_crash), so it counts it. */
void csc_crash_two_threads(void);
/** Starts a thread (with an alternate stack) that overflows its stack; blocks forever. */
void csc_crash_thread_stack_overflow(void);
/** A call through a NULL function pointer (SIGSEGV at PC 0). */
void csc_crash_null_call(void);
/** A call through a function pointer to an unmapped page (SIGSEGV, the PC outside every image). */
void csc_crash_bad_function_pointer(void);
/** A call into a buffer on the non-executable stack (SIGSEGV on the instruction fetch). */
void csc_crash_jump_to_stack(void);
/** Overwrites its own saved frame pointer and return address with "AAAAAAAA" and returns. */
void csc_crash_return_overwritten(void);
/** Has its saved frame pointer clobbered by a callee, then uses its frame (SIGSEGV). */
void csc_crash_frame_pointer_clobbered(void);
/** Starts three threads that crash at the same moment with SIGSEGV, SIGABRT and SIGFPE; blocks
 *  forever. The report waits for the other two (csc_test_wait_for_other_crashes). */
void csc_crash_three_signals(void);
/** Forks; the child calls csc_crash_segv from the forking thread, which is this thread or, with
 *  `from_background_thread`, a new thread of this process. Waits for the child at most
 *  `timeout_seconds` (then kills it with SIGKILL). Returns the child's wait status, or -1 when it
 *  had to be killed; *child_pid receives its pid. */
int csc_crash_forked_child(bool from_background_thread, int timeout_seconds, int *child_pid);
/** Blocks SIGALRM in this thread and makes one pending (an app that takes its ticks with sigwait
 *  or signalfd and has one queued), then calls csc_crash_segv. */
void csc_crash_segv_with_pending_alarm(void);
/** Writes to a pipe without reader: SIGPIPE, or returns EPIPE when SIGPIPE is ignored. */
int csc_crash_sigpipe(void);
/** Installs a SIGSEGV handler (before capture) that prints PREVIOUS-HANDLER-RAN and resets to default. */
void csc_test_install_previous_handler(void);
/** Installs (before capture) a SIGSEGV handler with SA_RESETHAND and sa_mask {SIGUSR2} that
 *  prints "RESETHAND-HANDLER-RAN mask=<1|0>" per call (1: SIGUSR2 and SIGSEGV were blocked during
 *  the call, as the kernel blocks them) and returns. */
void csc_test_install_resethand_handler(void);
/** Installs (before capture) handlers for SIGSEGV, SIGABRT and SIGFPE that take 100 ms when they
 *  are the first to run and 1 ms after that (a backtracer's work), reset the default action and return. */
void csc_test_install_slow_previous_handlers(void);
/** Installs (before capture) a SIGSEGV handler owning a PROT_NONE page: a fault on the page is
 *  resolved (mprotect read-write) and the handler returns, like a guard page or a GC write
 *  barrier; any other fault resets the default action and returns. */
void csc_test_install_resolving_handler(void);
/** Writes to the page of csc_test_install_resolving_handler; returns how many faults the handler
 *  resolved so far (-1 without the page). */
int csc_test_touch_guarded_page(void);
/** Installs (before capture) a SIGTRAP handler that prints "TRAP-HANDLER-RAN" and returns. */
void csc_test_install_previous_trap_handler(void);
/** Installs (before capture) a handler for `sig` that jumps back out of the signal with
 *  siglongjmp while csc_test_probe_read or csc_test_abort_caught expects it (a "can I read this
 *  address?" probe, a test harness catching abort()); any other delivery resets the default
 *  action and returns. */
void csc_test_install_jumping_handler(int sig);
/** Reads one byte at `address` under the jumping SIGSEGV handler: false when the read faulted
 *  and the handler jumped back out. */
bool csc_test_probe_read(uintptr_t address);
/** Calls abort() under the jumping SIGABRT handler; true when the handler jumped back out. */
bool csc_test_abort_caught(void);
bool csc_test_sigpipe_is_ignored(void);
/** Names the calling thread (at most 15 bytes are kept). */
void csc_test_set_thread_name(const char *name);
#ifdef __cplusplus
}
#endif
#endif
