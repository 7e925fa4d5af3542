/*
 * csc_capture.h — CrashShield's fatal crash capture (C, async-signal-safe zone).
 *
 * RULES FOR EVERY LINE THAT CAN RUN INSIDE THE SIGNAL HANDLER (csc_handler() in csc_capture.c,
 * csc_writer.c and whatever they call). Breaking one of them turns a crash report into a hang or
 * a second crash.
 *   1. No malloc/free/realloc, no strdup, nothing that may allocate (that includes stdio,
 *      snprintf, strerror, getenv-after-setenv, dlopen, dlsym, dladdr, pthread_getattr_np).
 *   2. No locks: no pthread_mutex, no rwlock, no condition variables, no dispatch, no loader lock.
 *      Shared state is read through atomics or was frozen at install time. (The DWARF unwinder
 *      is used only where glibc has _dl_find_object, checked at install: elsewhere libgcc finds
 *      unwind tables under the loader lock, so the handler walks frame pointers instead. On
 *      Darwin the handler always walks frame pointers: libunwind finds unwind info through dyld.)
 *   3. No Objective-C or Swift runtime calls (no message sends, no retain/release, no
 *      swift_* entry points) and no C++ exceptions.
 *   4. Output goes through write(2) on descriptors opened with openat(2) relative to the report
 *      directory descriptor opened at install. Everything else the report needs (paths, process
 *      and OS info, the image list with build ids) is gathered and serialised at install. A
 *      descriptor is kept in reserve from install (given up when the table is full, EMFILE), and
 *      so is the unreported-crash marker (CSC_UNREPORTED_MARKER). Writing must not raise a
 *      signal of its own: SIGXFSZ (RLIMIT_FSIZE) and SIGPIPE (the stderr line) are ignored while
 *      the handler writes, so a write past a limit just fails.
 *   5. Buffers are static and pre-sized (paths: PATH_MAX, never cut); every copy is bounded;
 *      text from the crashed process (thread names, exception reasons) is truncated and never
 *      trusted: well-formed UTF-8 is copied as it is, every other byte is escaped.
 *   6. Memory that may be invalid (frame pointers, instruction bytes, the word at the stack
 *      pointer) is read only through csc_safe_read(), which asks the kernel (Linux:
 *      process_vm_readv, or a pipe write; Darwin: vm_read_overwrite) and never faults. The one exception is libgcc's DWARF unwinder, which reads
 *      memory itself: it runs only from a PC inside an image's code, and under a recovery point
 *      (sigsetjmp) that turns a fault inside it into "this unwinder failed" — the frame-pointer
 *      walk takes over and the rest of the report is written as usual.
 *   7. The handler never blocks without a bound: a watchdog timer of its own kills a stuck
 *      handler, threads that lose the race to report wait for the owner (bounded while it
 *      writes; while it passes its signal on they wait for the process to end, so it ends with
 *      the report's signal), and a crash inside the handler leaves a minimal report and ends the
 *      process with the original signal.
 *   8. The handler depends on no signal state of the app: it uses no SIGALRM, alarm() or itimer,
 *      and changes the disposition of its own signal only (and, while it writes, ignores SIGXFSZ
 *      and SIGPIPE: rule 4). Process identity (pid, report name, main thread) is read with
 *      getpid() in the handler, never cached: a forked child is a process of its own.
 * Functions outside the handler path (install, image refresh, thread preparation) may allocate
 * and are documented as "not async-signal-safe". The launch-protection helpers of the start path
 * (state file, launch id, launch window) are in csc_launch.h and never run in the handler.
 *
 * Contract of a crash: exactly one report file per process crash (when none can be written —
 * the directory deleted or unwritable, the disk full — one line on stderr says so and the marker
 * CSC_UNREPORTED_MARKER records it for the next start's lastRun), written into the directory
 * given at install, named "report-<pid>-<install time>-<n>.json" (the pid of the process that
 * crashed; a taken name moves on to the next <n>), following
 * Schema/crash-report.schema.json (version CSC_REPORT_VERSION). Sections are flushed one by one
 * so a report cut short by a second failure is a valid JSON prefix; the last key written is
 * "complete": true. After writing, the signal is passed on: the handler installed before us is
 * called as the kernel would call it (SA_RESETHAND, sa_mask, SA_NODEFER, SA_SIGINFO honoured),
 * otherwise the default action is restored and the signal re-raised, so the process dies with the
 * original signal. A signal is a crash only if the process dies of it: when the previous handler
 * returns and the process goes on (a fault it resolved, a signal it handled), the report is
 * removed and the handler re-armed (docs/CAPTURE.md, "Signals that are not crashes").
 */
#ifndef CSC_CAPTURE_H
#define CSC_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CSC_REPORT_VERSION 1
#define CSC_MAX_FRAMES 128
#define CSC_TEXT_MAX 256
/** File in the report directory, opened at install, where the handler records a crash whose
 *  report could not be written: "launch_id=<id>\nphase=<phase>\nsignal=<n>\nerrno=<n>\n". */
#define CSC_UNREPORTED_MARKER "crash-without-report"
/** Bytes of the marker reserved at install (newlines while no crash is recorded; a reader skips
 *  empty lines), so the handler rewrites it in place and a full disk cannot refuse the record.
 *  Whoever empties the marker writes the reservation back. */
#define CSC_UNREPORTED_MARKER_BYTES 512

/** Launch phase recorded in a report. Launch protection moves it forward. */
typedef enum {
    CSC_PHASE_UNKNOWN = 0,
    CSC_PHASE_LAUNCHING = 1, /**< after start, before launchCompleted() or the launch window */
    CSC_PHASE_RUNNING = 2,
    CSC_PHASE_TERMINATING = 3,
} csc_launch_phase;

typedef struct {
    const char *directory;     /**< report directory; created if missing (one level) */
    const char *app_name;      /**< may be NULL: the executable's name */
    const char *app_version;   /**< may be NULL */
    const char *launch_id;     /**< id of this launch (launch protection matches reports with it); may be NULL */
    bool capture_sigpipe;      /**< also capture SIGPIPE unless the app ignores it (SIG_IGN). Default false */
    bool recover_background_threads; /**< park a background thread that hit a fatal signal (opt-in); never
                                      *   the main thread (in a forked child: the thread that forked) */
    uint32_t alt_stack_size;   /**< per-thread alternate stack; 0 = 64 KiB */
    uint32_t watchdog_seconds; /**< a handler that runs longer is killed by SIGALRM; 0 = 5 */
    bool has_remote_config_version;  /**< a remote configuration document is active in this run */
    int64_t remote_config_version;   /**< its version, written into every report as
                                      *   "remote_config_version" (null when none is active); fixed for the run */
} csc_config;

typedef enum {
    CSC_INSTALL_OK = 0,
    CSC_INSTALL_ALREADY = 1,
    CSC_INSTALL_NO_DIRECTORY = 2, /**< the directory could not be created or opened */
    CSC_INSTALL_SIGACTION_FAILED = 3,
    CSC_INSTALL_UNSUPPORTED = 4,  /**< neither Linux nor Darwin (iOS, macOS): no handler for this platform */
} csc_install_result;

/** Installs the signal handlers. Not async-signal-safe. Idempotent (second call: CSC_INSTALL_ALREADY). */
csc_install_result csc_install(const csc_config *config);

/** Restores the handlers that were installed before csc_install. For tests. */
void csc_uninstall(void);

bool csc_is_installed(void);

/** Gives the calling thread an alternate signal stack (unless it has a large enough one), so a
 *  stack overflow on it is captured. Freed when the thread exits. Not async-signal-safe. */
bool csc_thread_prepare(void);

/** Re-reads the loaded images (path, load bias, size, GNU build id). Call after dlopen. */
void csc_refresh_images(void);

/** Finds a loaded image by path (refreshing the list first). Writes its load bias and its GNU
 *  build id as lowercase hex ("" when it has none). Not async-signal-safe. */
bool csc_loaded_image(const char *path, uintptr_t *bias, char *build_id_hex, size_t capacity);

/** dladdr(): the exported symbol at or before `address` (copied into `name`). Not async-signal-safe. */
bool csc_symbol_name(uintptr_t address, char *name, size_t capacity);

/** Sets the launch phase written into a report (atomic, cheap). */
void csc_set_launch_phase(csc_launch_phase phase);
csc_launch_phase csc_launch_phase_get(void);

/** Replaces the guard-state JSON fragment copied into reports (must be a JSON array or object,
 *  shorter than 4 KiB; longer text is dropped, NULL is ignored, "" withdraws it). Call it after every change of a guard's state or
 *  policy: a report carries the fragment published last before the crash. Not async-signal-safe;
 *  safe against a concurrent crash, also when called again and again while the handler reads (the
 *  handler reads a whole fragment, never a torn one). */
void csc_set_guard_states_json(const char *json);

/** Bytes of the scope JSON a report can carry, the terminating NUL included. */
#define CSC_SCOPE_JSON_MAX 32768

/** Replaces the app's scope (user, tags, contexts, custom breadcrumbs) copied into reports as
 *  their "scope" object. `json` must be one complete JSON object shorter than CSC_SCOPE_JSON_MAX
 *  bytes: longer text is refused (false) and the scope published before stays; the caller (the
 *  Swift CrashScope) shrinks the scope to fit before it publishes. NULL or "" withdraws it
 *  (reports then have no "scope" key). A report carries the text published last before the crash.
 *  Not async-signal-safe; safe against a concurrent crash, also when called again and again while
 *  the handler reads (the handler reads a whole text, never a torn one). */
bool csc_set_scope_json(const char *json);

/** Code of one guard, for the fail-safe (a crash inside it switches the guard off). */
typedef struct {
    const char *name;  /**< the guard's public name: 1..CSC_GUARD_NAME_MAX-1 bytes of [a-z0-9_-] */
    uintptr_t start;   /**< [start, end): addresses of this process */
    uintptr_t end;
} csc_guard_code_range;
#define CSC_GUARD_RANGES_MAX 32
#define CSC_GUARD_NAME_MAX 32

/** Gives the handler the guards' code, so every report says in its crashed thread's
 *  "guard_frames" which guards have code among the crashed thread's frames (the next start
 *  switches those off without decoding the report). Without a call, reports have no
 *  "guard_frames" key (the reader then has to map the frames itself). Once per process: the first
 *  call copies and publishes the table (the ranges are link-time constants, so there is nothing to
 *  replace); later calls, more than CSC_GUARD_RANGES_MAX ranges or a name that is not plain
 *  return false and change nothing. Not async-signal-safe; safe against a concurrent crash (the
 *  handler sees no table or the whole table). */
bool csc_set_guard_code_ranges(const csc_guard_code_range *ranges, size_t count);

/** Code of the SDK outside the guards (the C++ terminate handler; the guards' own code comes
 *  through csc_set_guard_code_ranges): every frame whose address is in such a range or in a
 *  guard's range is written with "sdk": true, so that events mark it not in-app and a crash's
 *  culprit is the app's frame below it. [start, end) of this process. Adding a range already
 *  known changes nothing (true); more than CSC_SDK_RANGES_MAX ranges, or start >= end, return
 *  false. Not async-signal-safe; safe against a concurrent crash (the handler sees each range
 *  whole or not at all). */
#define CSC_SDK_RANGES_MAX 8
bool csc_add_sdk_code_range(uintptr_t start, uintptr_t end);

/** Uncaught Objective-C exception (called by the exception handler, not a signal handler):
 *  writes a report with kind "objc_exception" and the exception's return addresses as the
 *  crashed thread's stack. Later fatal signals of this process write no second report. Returns
 *  true when this call reported (capture installed, no other crash being reported): the caller
 *  then ends the process with SIGABRT. */
bool csc_report_exception(const char *name, const char *reason, const uintptr_t *addresses, size_t count);

/** Uncaught C++ exception (called by the C++ terminate handler of `_CrashShieldCxxTerminate`,
 *  not a signal handler, before it lets the process abort): notes the exception's type name
 *  (demangled, "" when std::terminate ran without an active exception) and its what() text (""
 *  when it is no std::exception). When this thread then dies of a fatal signal, its report has
 *  a top-level "exception": {"runtime":"c++","name":...,"reason":...}. The first thread to note
 *  keeps the note; a later note (another thread terminating at the same time) returns false and
 *  changes nothing. Copies the text into static buffers (name CSC_TEXT_MAX, reason 1024 bytes,
 *  longer text cut at a character boundary by the writer's escaping). Not async-signal-safe. */
bool csc_note_cxx_exception(const char *type_name, const char *what);

/** True once this process wrote a report (e.g. to skip a clean-exit marker in atexit). */
bool csc_report_written(void);

/** Path of the report this process wrote, or "" (valid after csc_report_written()). */
const char *csc_report_path(void);

#ifdef __cplusplus
}
#endif
#endif
