/*
 * csc_capture.c — install, the signal handler, the report, chaining and re-raising. Shared by
 * every platform: what differs per operating system (registers, signal codes, threads, the
 * unwinder, the watchdog's timer, fault-free reads) is behind csc_platform.h, one small file per
 * concern. Everything reachable from csc_handler() follows the rules at the top of csc_capture.h.
 *
 * Concurrency and re-entry (one report per crash, never a hang):
 * - A handler installed before us runs first, before the crash is claimed or anything is
 *   written (csc_run_previous_first): one that never returns (siglongjmp out of a probe) leaves
 *   nothing behind, one that returns decides whether the signal is a crash.
 * - The first crashing thread claims the crash (csc_claim.h). A second thread that crashes
 *   meanwhile waits for the owner: while the report is written (bounded: the watchdog ends a
 *   stuck owner) and while the owner ends the process (state CHAINING). It never re-raises its
 *   own signal, so the process ends with the signal the report names. If the owner releases the
 *   claim (an opt-in recovery), the waiting thread claims the handler for its own crash. Waiting
 *   threads are counted and the report says how many there were when its tail was written
 *   ("other_crashing_threads").
 * - The owner changes the disposition of its own signal only: the other captured signals stay
 *   ours until the process is gone, so a thread that faults later still waits instead of dying
 *   by its own signal's default action.
 * - The handler runs with SA_NODEFER, so a fault inside the handler re-enters it on the same
 *   thread (owner == self, state WRITING): depth 1 rewrites the report file as a minimal report
 *   and ends the process with the original signal; depth 2 calls _exit(128 + signal).
 * - Watchdog (csc_watchdog_*.c): if the report takes longer than watchdog_seconds the process
 *   ends with SIGALRM. It uses no signal state the app may own or block (the app's SIGALRM,
 *   alarm() and itimers are left alone).
 * - Process identity follows fork: the pid, the report file name and the main-thread test are
 *   taken in the handler; a pthread_atfork child handler resets the crash state.
 * - A signal a previous handler handles is not a crash (see csc_run_previous_first()): no report
 *   is written and the handler is re-armed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "csc_platform.h"
#include "csc_hang.h"
#include "csc_published.h"

#include <cs_incidents.h>

#if defined(__linux__) || defined(__APPLE__)

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* Larger than every captured signal's number on Linux (NSIG 65) and Darwin (NSIG 32). */
#define CSC_SIGNAL_COUNT 65

static const int kCaptured[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS, SIGPIPE};
#define CSC_CAPTURED_COUNT (sizeof kCaptured / sizeof kCaptured[0])

/* ---- state frozen at install ------------------------------------------------------------- */
static bool g_installed;
static int g_dir_fd = -1;
static struct sigaction g_previous[CSC_SIGNAL_COUNT];
static bool g_have_previous[CSC_SIGNAL_COUNT];
static char g_install_ns_text[24];     /* install time in ns, the file name's second part */
static char g_executable[CSC_PATH_MAX];
static char g_directory[CSC_PATH_MAX];
static char g_app_name[CSC_TEXT_MAX];
static char g_app_version[CSC_TEXT_MAX];
static char g_launch_id[CSC_TEXT_MAX];
/* The active remote configuration document's version, copied at install (fixed for the run). */
static bool g_has_remote_config_version;
static uint64_t g_remote_config_version;
static struct utsname g_uname;
static uint64_t g_process_start_boot_ns;
static bool g_recover;
static bool g_atfork_registered;
static uint32_t g_alt_stack_size = 64 * 1024;
static uint32_t g_watchdog_seconds = 5;
static pthread_key_t g_alt_stack_key;
static pthread_once_t g_alt_stack_once = PTHREAD_ONCE_INIT;
/* Descriptors opened at install for when the handler cannot open anything:
 * g_spare_fd (/dev/null) is closed to free a slot when the descriptor table is full (EMFILE), so
 * the report can still be opened; g_marker_fd is "<directory>/crash-without-report", where the
 * handler records a crash whose report could not be written (the next start's lastRun reads it;
 * it is opened at install because the directory may be unwritable by then, and its bytes are
 * reserved then because the disk may be full). */
static int g_spare_fd = -1;
static int g_marker_fd = -1;

/* ---- state that changes while running ------------------------------------------------------ */
static _Atomic int g_phase = CSC_PHASE_UNKNOWN;
static _Atomic int g_report_count;
static _Atomic bool g_written;
#if defined(CSC_TEST_SEAMS)
static _Atomic int g_test_fault;
static _Atomic int g_test_wait_other; /* csc_test_wait_for_other_crashes: how many */
#endif
/* Texts published for the handler (csc_published.h): the guard states (csc_set_guard_states_json),
 * republished on every policy change, and the app's scope (csc_set_scope_json), republished on
 * every change of user, tags, contexts or breadcrumbs. */
CSC_PUBLISHED_DEFINE(g_guard_json, 4096);
CSC_PUBLISHED_DEFINE(g_scope_json, CSC_SCOPE_JSON_MAX);

/* ---- scratch space for the handler (one crash at a time: only the owner uses it) ----------- */
/* The guards' code (csc_set_guard_code_ranges): written once, outside the handler, then published
 * by the release store of g_guard_range_count (-1: no table). The handler reads the count with
 * acquire and then only the entries below it, which never change again. */
static struct {
    char name[CSC_GUARD_NAME_MAX];
    uintptr_t start, end;
} g_guard_ranges[CSC_GUARD_RANGES_MAX];
static _Atomic int g_guard_range_count = -1;
static atomic_flag g_guard_ranges_claimed = ATOMIC_FLAG_INIT;
/* The SDK's other code (csc_add_sdk_code_range): entries below g_sdk_range_count (published with
 * release) never change; additions are serialised by g_sdk_ranges_lock (never taken by the handler). */
static struct {
    uintptr_t start, end;
} g_sdk_ranges[CSC_SDK_RANGES_MAX];
static _Atomic int g_sdk_range_count;
static pthread_mutex_t g_sdk_ranges_lock = PTHREAD_MUTEX_INITIALIZER;
static csc_out g_out;
static char g_report_name[160];
static char g_report_path[CSC_PATH_MAX + 160];
static uintptr_t g_frames[CSC_MAX_FRAMES];
static _Atomic int g_frame_count;
static cs_breadcrumb g_crumbs[CS_BREADCRUMB_CAPACITY];
/* The Swift runtime's message of the fatal error being reported (csc_runtime_message_copy). */
static char g_runtime_message[1024];
/* The uncaught C++ exception noted by the terminate handler (csc_note_cxx_exception): the thread
 * that noted it (0: none) claims the note with a CAS, writes the text, then publishes it with the
 * release store of g_cxx_ready; the handler reads the text only after an acquire load of it. */
static _Atomic csc_thread_id g_cxx_thread;
static _Atomic bool g_cxx_ready;
static char g_cxx_name[CSC_TEXT_MAX];
static char g_cxx_reason[1024];
static int g_first_signal;
static uint64_t g_handler_start_ns;
/* The image table this report reads, pinned when the handler claimed the crash. */
static const csc_image_table *g_report_images;
/* How long a thread that lost the race waits while the owner ends the process with its signal
 * (state CHAINING; the previous handler already ran before the owner claimed the crash). */
#define CSC_CHAIN_WAIT_LIMIT_MS 60000u

static uint64_t csc_clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void csc_copy(char *out, size_t capacity, const char *in) {
    size_t i = 0;
    for (; in && in[i] && i + 1 < capacity; i++) out[i] = in[i];
    out[i] = 0;
}

static size_t csc_append(char *out, size_t at, size_t capacity, const char *text) {
    for (size_t i = 0; text[i] && at + 1 < capacity; i++) out[at++] = text[i];
    out[at] = 0;
    return at;
}

/* ---- names -------------------------------------------------------------------------------- */

static const char *csc_signal_name(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGPIPE: return "SIGPIPE";
    default: return "SIGUNKNOWN";
    }
}

static const char *csc_phase_name(int phase) {
    switch (phase) {
    case CSC_PHASE_LAUNCHING: return "launching";
    case CSC_PHASE_RUNNING: return "running";
    case CSC_PHASE_TERMINATING: return "terminating";
    default: return "unknown";
    }
}

/* ---- unwinding ---------------------------------------------------------------------------- */

#if defined(__x86_64__)
/** True when the bytes before `address` end with a call instruction (call rel32, or an indirect
 *  call FF /2 of 2 to 7 bytes), so `address` is plausibly a return address. */
static bool csc_follows_call(uintptr_t address) {
    uint8_t bytes[7];
    if (address < sizeof bytes || !csc_safe_read(address - sizeof bytes, bytes, sizeof bytes)) return false;
    if (bytes[2] == 0xe8) return true; /* call rel32: 5 bytes */
    for (int length = 2; length <= 7; length++) {
        const uint8_t *start = bytes + sizeof bytes - length;
        if (start[0] == 0xff && ((start[1] >> 3) & 7) == 2) return true;
    }
    return false;
}
#endif

/** For a PC whose instruction could not be fetched (a call through NULL or a corrupt function
 *  pointer, a jump into a data buffer): the return address of the call that got there, or 0.
 *  x86_64: the word the call pushed at the stack pointer (kept only when it follows a call
 *  instruction: after a `ret` through a smashed return address the word there is not one).
 *  aarch64: the link register. Either way only an address in an image's code. */
static uintptr_t csc_caller_of_unfetched_pc(const void *context, const csc_image_table *table) {
    uintptr_t candidate = 0;
#if defined(__x86_64__)
    if (!csc_safe_read(csc_context_sp(context), &candidate, sizeof candidate)) return 0;
    if (!csc_follows_call(candidate)) return 0;
#elif defined(__aarch64__) || defined(__arm64__)
    candidate = csc_code_address(csc_context_lr(context));
    if (candidate == csc_context_pc(context)) return 0; /* a `ret` to a bad LR */
#else
    (void)context;
#endif
    return csc_address_is_code(table, candidate) ? candidate : 0;
}

/** How the crashed thread's frames were found (the report's crashed_thread section). */
typedef struct {
    const char *unwinder;  /**< "dwarf" or "frame_pointer" */
    bool dwarf_faulted;    /**< the DWARF walk faulted and was abandoned */
    bool pc_is_code;       /**< the PC lies in the code of an image known to the table */
    const char *caller_from; /**< "stack_pointer" / "link_register" when frame 1 came from there */
} csc_unwind_result;

/** Frames of the interrupted thread, innermost first; frame 0 is the faulting PC. Uses the
 *  DWARF unwinder where the platform allows it in the handler (csc_unwind_dwarf_available():
 *  Linux with glibc's _dl_find_object), and otherwise, or when that walk fails, the frame-pointer
 *  chain through csc_safe_read (the default on Darwin, whose arm64 and x86_64 ABIs make frame
 *  pointers mandatory). Never faults.
 *
 *  A PC that could not even be fetched (0, unmapped, or the fault is the instruction fetch
 *  itself: si_addr == PC, as for a jump into a non-executable buffer) was reached by a call or
 *  jump that executed nothing there: DWARF is not tried (libgcc would read the bytes at the PC),
 *  and the caller is taken from the stack pointer / link register. Any other PC — including one
 *  in a plug-in loaded after the image list was last refreshed — gets the DWARF walk. */
static csc_unwind_result csc_collect_frames(const void *context, const siginfo_t *info, csc_thread_id self) {
    csc_unwind_result result = {"frame_pointer", false, false, NULL};
    atomic_store(&g_frame_count, 0);
    const csc_image_table *table = g_report_images;
    uintptr_t pc = csc_context_pc(context);
    result.pc_is_code = pc != 0 && csc_address_is_code(table, pc);
    uint8_t byte;
    bool fetch_faulted = pc == 0 || !csc_safe_read(pc, &byte, 1) ||
                         (info && !csc_signal_was_sent(info) && (info->si_signo == SIGSEGV || info->si_signo == SIGBUS) &&
                          (uintptr_t)info->si_addr == pc);
    if (!fetch_faulted && csc_unwind_dwarf_available()) {
        bool faulted = false;
        bool found = csc_unwind_dwarf(pc, self, g_frames, &g_frame_count, &faulted);
        result.dwarf_faulted = faulted;
        /* After a fault the frames gathered before it are still right (the walk faulted on the
         * way to the next one), e.g. everything up to a function whose return address a stack
         * smash overwrote. */
        if (found && atomic_load(&g_frame_count) > 1) {
            result.unwinder = "dwarf";
            return result;
        }
    }

    atomic_store(&g_frame_count, 0);
    int count = 0;
    g_frames[count++] = pc;
    if (fetch_faulted) {
        uintptr_t caller = csc_caller_of_unfetched_pc(context, table);
        if (caller) {
            g_frames[count++] = caller;
#if defined(__aarch64__) || defined(__arm64__)
            result.caller_from = "link_register";
#else
            result.caller_from = "stack_pointer";
#endif
        }
    }
    atomic_store(&g_frame_count, count);
    /* A frame record is {saved frame pointer, return address} on x86_64 and arm64 alike; the
     * chain must climb (the stack grows down), so a loop or a corrupt record ends the walk. */
    uintptr_t fp = csc_context_fp(context);
    while (count < CSC_MAX_FRAMES && fp != 0 && (fp & (sizeof(uintptr_t) - 1)) == 0) {
        uintptr_t pair[2];
        if (!csc_safe_read(fp, pair, sizeof pair)) break;
        uintptr_t return_address = csc_code_address(pair[1]);
        if (return_address == 0) break;
        g_frames[count++] = return_address;
        atomic_store(&g_frame_count, count);
        if (pair[0] <= fp) break;
        fp = pair[0];
    }
    atomic_store(&g_frame_count, count);
    return result;
}

/* ---- report ------------------------------------------------------------------------------- */

/* True when `address` is in the guards' code or the SDK's other code. */
static bool csc_address_in_sdk(uintptr_t address) {
    int guards = atomic_load_explicit(&g_guard_range_count, memory_order_acquire);
    for (int r = 0; r < guards; r++) {
        if (address >= g_guard_ranges[r].start && address < g_guard_ranges[r].end) return true;
    }
    int others = atomic_load_explicit(&g_sdk_range_count, memory_order_acquire);
    for (int r = 0; r < others; r++) {
        if (address >= g_sdk_ranges[r].start && address < g_sdk_ranges[r].end) return true;
    }
    return false;
}

static void csc_write_frames(csc_out *out, const uintptr_t *frames, int count) {
    const csc_image_table *table = g_report_images;
    csc_out_raw(out, "[");
    for (int i = 0; i < count; i++) {
        if (i) csc_out_raw(out, ",");
        csc_out_raw(out, "{\"address\":");
        csc_out_hex(out, frames[i]);
        int image = csc_image_index(table, frames[i]);
        if (image >= 0) {
            csc_out_key(out, "image", false);
            csc_out_string(out, csc_image_path(table, &table->images[image]), CSC_PATH_MAX);
            csc_out_key(out, "offset", false);
            csc_out_hex(out, frames[i] - table->images[image].bias);
        }
        if (csc_address_in_sdk(frames[i])) csc_out_raw(out, ",\"sdk\":true");
        csc_out_raw(out, "}");
    }
    csc_out_raw(out, "]");
}

/** "guard_frames": the names of the registered guards whose code contains one of `frames` (the
 *  same addresses "frames" lists), in registration order, each once, except `excluded` (a guard
 *  whose report-only policy let the crash through: its frame called the original, which is not
 *  the guard's fault). Nothing without a table: the key's absence tells the reader to map the
 *  frames itself. */
static void csc_write_guard_frames(csc_out *out, const uintptr_t *frames, int count, const char *excluded) {
    int ranges = atomic_load_explicit(&g_guard_range_count, memory_order_acquire);
    if (ranges < 0) return;
    uint32_t found = 0;
    for (int i = 0; i < count; i++) {
        for (int r = 0; r < ranges; r++) {
            if (frames[i] >= g_guard_ranges[r].start && frames[i] < g_guard_ranges[r].end) found |= UINT32_C(1) << r;
        }
    }
    csc_out_key(out, "guard_frames", false);
    csc_out_raw(out, "[");
    bool first = true;
    for (int r = 0; r < ranges; r++) {
        if (!(found & (UINT32_C(1) << r))) continue;
        if (excluded && strcmp(g_guard_ranges[r].name, excluded) == 0) continue;
        if (!first) csc_out_raw(out, ",");
        first = false;
        csc_out_string(out, g_guard_ranges[r].name, CSC_GUARD_NAME_MAX);
    }
    csc_out_raw(out, "]");
}

static void csc_write_images(csc_out *out) {
    static const char hex[] = "0123456789abcdef";
    const csc_image_table *table = g_report_images;
    csc_out_raw(out, "[");
    for (int i = 0; table && i < table->count; i++) {
        const csc_image *image = &table->images[i];
        if (i) csc_out_raw(out, ",");
        csc_out_raw(out, "{\"path\":");
        csc_out_string(out, csc_image_path(table, image), CSC_PATH_MAX);
        csc_out_key(out, "base", false);
        csc_out_hex(out, image->bias);
        csc_out_key(out, "start", false);
        csc_out_hex(out, image->low);
        csc_out_key(out, "size", false);
        csc_out_hex(out, image->high - image->low);
        if (image->build_id_length) {
            char text[CSC_BUILD_ID_MAX * 2 + 1];
            for (int b = 0; b < image->build_id_length; b++) {
                text[2 * b] = hex[image->build_id[b] >> 4];
                text[2 * b + 1] = hex[image->build_id[b] & 15];
            }
            text[image->build_id_length * 2] = 0;
            csc_out_key(out, "build_id", false);
            csc_out_string(out, text, sizeof text);
        }
        csc_out_raw(out, "}");
    }
    csc_out_raw(out, "]");
}

static void csc_write_incidents(csc_out *out) {
    size_t count = cs_breadcrumbs_copy(g_crumbs, CS_BREADCRUMB_CAPACITY);
    csc_out_raw(out, "[");
    for (size_t i = 0; i < count; i++) {
        const cs_breadcrumb *crumb = &g_crumbs[i];
        if (i) csc_out_raw(out, ",");
        csc_out_raw(out, "{\"sequence\":");
        csc_out_u64(out, crumb->sequence);
        csc_out_key(out, "guard", false);
        csc_out_string(out, crumb->guard_name, 64);
        csc_out_key(out, "class", false);
        csc_out_string(out, crumb->class_name, CS_BREADCRUMB_NAME_MAX);
        csc_out_key(out, "selector", false);
        csc_out_string(out, crumb->selector_name, CS_BREADCRUMB_NAME_MAX);
        csc_out_key(out, "class_method", false);
        csc_out_raw(out, crumb->is_class_method ? "true" : "false");
        csc_out_key(out, "reason", false);
        char reason[224];
        csc_format_reason(reason, sizeof reason, crumb->reason, crumb->args, crumb->arg_count < 2 ? crumb->arg_count : 2);
        csc_out_string(out, reason, sizeof reason);
        csc_out_key(out, "count", false);
        csc_out_u64(out, crumb->count);
        csc_out_key(out, "monotonic_ns", false);
        csc_out_u64(out, crumb->monotonic_ns);
        csc_out_key(out, "fingerprint", false);
        csc_out_hex(out, crumb->fingerprint);
        csc_out_key(out, "policy", false);
        csc_out_raw(out, crumb->policy == CS_POLICY_REPORT_ONLY ? "\"reportOnly\""
                         : crumb->policy == CS_POLICY_OFF ? "\"off\"" : "\"neutralize\"");
        csc_out_raw(out, "}");
    }
    csc_out_raw(out, "]");
}

/** Opens a new report file: report-<pid>-<install ns>-<n>.json, with the pid of the process
 *  that crashes (a forked child has its own). O_EXCL never overwrites a report; a name that is
 *  taken (a pid reused by a later process of the same install time, or a file left by someone
 *  else) moves on to the next <n>, so a collision never loses a report. */
static void csc_compose_report_name(char *name, size_t capacity, int n) {
    char number[24];
    csc_format_u64(number, (uint64_t)getpid());
    size_t at = csc_append(name, 0, capacity, "report-");
    at = csc_append(name, at, capacity, number);
    at = csc_append(name, at, capacity, "-");
    at = csc_append(name, at, capacity, g_install_ns_text);
    at = csc_append(name, at, capacity, "-");
    csc_format_u64(number, (uint64_t)n);
    at = csc_append(name, at, capacity, number);
    csc_append(name, at, capacity, ".json");
}

/** Opens the report file (O_EXCL, next name when one is taken). With the descriptor table full it
 *  gives up the spare descriptor kept since install and tries again. */
static int csc_open_report(void) {
    for (int attempt = 0; attempt < 64; attempt++) {
        csc_compose_report_name(g_report_name, sizeof g_report_name, atomic_fetch_add(&g_report_count, 1));
        int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
        int fd = openat(g_dir_fd, g_report_name, flags, 0644);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE) && g_spare_fd >= 0) {
            close(g_spare_fd);
            g_spare_fd = -1;
            fd = openat(g_dir_fd, g_report_name, flags, 0644);
        }
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1;
}

/* Writes of the report must fail quietly instead of raising a signal of their own: past
 * RLIMIT_FSIZE write(2) raises SIGXFSZ (default: the process dies of it instead of the crash's
 * signal), and the stderr line of a lost report meets a closed pipe with SIGPIPE. Both are ignored
 * while the handler writes (the kernel drops an ignored signal that this thread does not block)
 * and restored afterwards; the failing write returns EFBIG/EPIPE and the writer stops. */
static struct sigaction g_quiet_previous[2];
static const int kQuietSignals[2] = {SIGXFSZ, SIGPIPE};

static void csc_quiet_write_signals_begin(void) {
    struct sigaction ignore;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    for (int i = 0; i < 2; i++) sigaction(kQuietSignals[i], &ignore, &g_quiet_previous[i]);
}

static void csc_quiet_write_signals_end(void) {
    for (int i = 0; i < 2; i++) sigaction(kQuietSignals[i], &g_quiet_previous[i], NULL);
}

static char g_notice[CSC_PATH_MAX + 256];

/** No report could be written (the directory was deleted or made unwritable, the disk is full,
 *  the file-size limit is 0): first the marker for the next start's lastRun
 *  ("launch_id=…\nphase=…\nsignal=…\nerrno=…\n", rewritten in place over the bytes reserved at
 *  install, so a full disk cannot refuse it), then one line on stderr, written without
 *  blocking: a stderr that nobody reads (a full pipe) loses the line, never the crash's signal. */
static void csc_report_unwritable(int sig, int error) {
    char number[24];
    size_t at;
    if (g_marker_fd >= 0) {
        at = csc_append(g_notice, 0, sizeof g_notice, "launch_id=");
        at = csc_append(g_notice, at, sizeof g_notice, g_launch_id);
        at = csc_append(g_notice, at, sizeof g_notice, "\nphase=");
        at = csc_append(g_notice, at, sizeof g_notice, csc_phase_name(atomic_load(&g_phase)));
        at = csc_append(g_notice, at, sizeof g_notice, "\nsignal=");
        csc_format_u64(number, (uint64_t)sig);
        at = csc_append(g_notice, at, sizeof g_notice, number);
        at = csc_append(g_notice, at, sizeof g_notice, "\nerrno=");
        csc_format_u64(number, (uint64_t)error);
        at = csc_append(g_notice, at, sizeof g_notice, number);
        at = csc_append(g_notice, at, sizeof g_notice, "\n");
        /* A file-size limit below the record (0: no byte may be written, which is also why the
         * report is lost) refuses it with EFBIG, reserved bytes or not: the soft limit is lifted
         * to the hard one for this write and put back. */
        struct rlimit limit, lifted;
        bool lift = getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < limit.rlim_max;
        if (lift) {
            lifted = limit;
            lifted.rlim_cur = limit.rlim_max;
            lift = setrlimit(RLIMIT_FSIZE, &lifted) == 0;
        }
        if (pwrite(g_marker_fd, g_notice, at, 0) == (ssize_t)at) (void)!ftruncate(g_marker_fd, (off_t)at);
        if (lift) (void)setrlimit(RLIMIT_FSIZE, &limit);
    }
    at = csc_append(g_notice, 0, sizeof g_notice, "CrashShield: no crash report could be written in ");
    at = csc_append(g_notice, at, sizeof g_notice, g_directory);
    at = csc_append(g_notice, at, sizeof g_notice, " (errno ");
    csc_format_u64(number, (uint64_t)error);
    at = csc_append(g_notice, at, sizeof g_notice, number);
    at = csc_append(g_notice, at, sizeof g_notice, "); passing ");
    at = csc_append(g_notice, at, sizeof g_notice, csc_signal_name(sig));
    at = csc_append(g_notice, at, sizeof g_notice, " on\n");
    /* O_NONBLOCK on the open file description for the one write (stderr may be shared with other
     * processes: the flags are put back at once). */
    int flags = fcntl(STDERR_FILENO, F_GETFL);
    if (flags < 0) return;
    if (!(flags & O_NONBLOCK) && fcntl(STDERR_FILENO, F_SETFL, flags | O_NONBLOCK) != 0) return;
    (void)!write(STDERR_FILENO, g_notice, at);
    if (!(flags & O_NONBLOCK)) (void)fcntl(STDERR_FILENO, F_SETFL, flags);
}

static void csc_remember_path(void) {
    size_t at = csc_append(g_report_path, 0, sizeof g_report_path, g_directory);
    at = csc_append(g_report_path, at, sizeof g_report_path, "/");
    csc_append(g_report_path, at, sizeof g_report_path, g_report_name);
    atomic_store(&g_written, true);
}

static void csc_write_header(csc_out *out, const char *kind, uint64_t now_wall, uint64_t now_boot) {
    csc_out_raw(out, "{\"schema\":\"crashshield.crash-report\",\"version\":");
    csc_out_u64(out, CSC_REPORT_VERSION);
    csc_out_key(out, "id", false);
    csc_out_bytes(out, "\"", 1);
    csc_out_bytes(out, g_report_name, strlen(g_report_name) - 5); /* without ".json" */
    csc_out_bytes(out, "\"", 1);
    csc_out_key(out, "kind", false);
    csc_out_string(out, kind, 32);
    csc_out_key(out, "timestamp_ns", false);
    csc_out_u64(out, now_wall);
    csc_out_key(out, "uptime_ns", false);
    csc_out_u64(out, now_boot > g_process_start_boot_ns ? now_boot - g_process_start_boot_ns : 0);
    csc_out_key(out, "launch_id", false);
    csc_out_string(out, g_launch_id[0] ? g_launch_id : NULL, CSC_TEXT_MAX);
    csc_out_key(out, "launch_phase", false);
    csc_out_string(out, csc_phase_name(atomic_load(&g_phase)), 32);
    csc_out_key(out, "remote_config_version", false);
    if (g_has_remote_config_version) csc_out_u64(out, g_remote_config_version);
    else csc_out_raw(out, "null");
}

static void csc_write_thread(csc_out *out, csc_thread_id tid) {
    char name[CSC_THREAD_NAME_BYTES];
    csc_thread_name(name, sizeof name);
    csc_out_key(out, "thread_id", false);
    csc_out_u64(out, tid);
    csc_out_key(out, "thread_name", false);
    csc_out_string(out, name, csc_thread_name_max());
    csc_out_key(out, "main_thread", false);
    /* In a forked child the main thread is the thread that forked. */
    csc_out_raw(out, csc_thread_is_main() ? "true" : "false");
}

static void csc_write_process(csc_out *out) {
    csc_out_key(out, "process", false);
    csc_out_raw(out, "{\"pid\":");
    csc_out_u64(out, (uint64_t)getpid());
    int threads = csc_thread_count();
    if (threads >= 0) {
        csc_out_key(out, "thread_count", false);
        csc_out_u64(out, (uint64_t)threads);
    }
    csc_out_key(out, "executable", false);
    csc_out_string(out, g_executable, CSC_PATH_MAX);
    csc_out_key(out, "name", false);
    csc_out_string(out, g_app_name, CSC_TEXT_MAX);
    csc_out_key(out, "app_version", false);
    csc_out_string(out, g_app_version[0] ? g_app_version : NULL, CSC_TEXT_MAX);
    uint64_t sampled_ns, resident, peak, footprint;
    uint32_t warnings;
    if (csc_run_record_memory(&sampled_ns, &resident, &peak, &footprint, &warnings)) {
        /* The watchdog's last sample (at most CSC_MEMORY_SAMPLE_MS old): docs/CAPTURE.md. */
        csc_out_key(out, "memory", false);
        csc_out_raw(out, "{\"sampled_ns\":");
        csc_out_u64(out, sampled_ns);
        csc_out_key(out, "resident_bytes", false);
        csc_out_u64(out, resident);
        csc_out_key(out, "peak_resident_bytes", false);
        csc_out_u64(out, peak);
        if (footprint) {
            csc_out_key(out, "footprint_bytes", false);
            csc_out_u64(out, footprint);
        }
        csc_out_key(out, "memory_warnings", false);
        csc_out_u64(out, warnings);
        csc_out_raw(out, "}");
    }
    csc_out_raw(out, "}");
    csc_out_key(out, "os", false);
    csc_out_raw(out, "{\"sysname\":");
    csc_out_string(out, g_uname.sysname, sizeof g_uname.sysname);
    csc_out_key(out, "release", false);
    csc_out_string(out, g_uname.release, sizeof g_uname.release);
    csc_out_key(out, "version", false);
    csc_out_string(out, g_uname.version, sizeof g_uname.version);
    csc_out_key(out, "machine", false);
    csc_out_string(out, g_uname.machine, sizeof g_uname.machine);
    csc_out_raw(out, "}");
}

/** Writes `,"key":<text>` with the text published last, or nothing when none is published. */
static void csc_write_published(csc_out *out, const char *key, csc_published *publication) {
    const char *text = csc_published_pin(publication);
    if (text) {
        csc_out_key(out, key, false);
        csc_out_raw(out, text);
    }
    csc_published_unpin(publication);
}

/** The common tail: incidents, scope, guards, process, images, timing, completion marker. */
static void csc_write_tail(csc_out *out) {
    csc_out_key(out, "incidents", false);
    csc_write_incidents(out);
    csc_write_published(out, "scope", &g_scope_json);
    csc_out_flush(out);
    csc_write_published(out, "guards", &g_guard_json);
    csc_write_process(out);
    csc_out_flush(out);
    csc_out_key(out, "images", false);
    csc_write_images(out);
    csc_out_flush(out);
#if defined(CSC_TEST_SEAMS)
    int wait_for = atomic_exchange(&g_test_wait_other, 0);
    if (wait_for > 0) {
        struct timespec pause = {0, 1000000};
        for (int i = 0; i < 500 && csc_claim_other_crashers() < wait_for; i++) nanosleep(&pause, NULL);
    }
#endif
    csc_out_key(out, "other_crashing_threads", false);
    csc_out_u64(out, (uint64_t)csc_claim_other_crashers());
    csc_out_key(out, "handler_ns", false);
    csc_out_u64(out, csc_clock_ns(CLOCK_MONOTONIC) - g_handler_start_ns);
    csc_out_key(out, "complete", false);
    csc_out_raw(out, "true}\n");
    csc_out_flush(out);
}

bool csc_safe_copy_string(uintptr_t address, char *text, size_t capacity) {
    if (capacity == 0) return false;
    size_t at = 0;
    while (at + 1 < capacity) {
        size_t chunk = 4096 - ((address + at) & 4095); /* up to the next 4 KiB boundary */
        if (chunk > 64) chunk = 64;
        if (chunk > capacity - 1 - at) chunk = capacity - 1 - at;
        if (!csc_safe_read(address + at, text + at, chunk)) break;
        for (size_t i = 0; i < chunk; i++) {
            if (text[at + i] == 0) return true;
        }
        at += chunk;
    }
    text[at] = 0;
    return at > 0;
}

static void csc_trap_instruction(uintptr_t pc, int sig, const char **name, char *bytes_hex) {
    static const char hex[] = "0123456789abcdef";
    uint8_t bytes[4] = {0};
    *name = NULL;
    bytes_hex[0] = 0;
    if (!csc_safe_read(pc, bytes, sizeof bytes)) return;
    for (int i = 0; i < 4; i++) {
        bytes_hex[2 * i] = hex[bytes[i] >> 4];
        bytes_hex[2 * i + 1] = hex[bytes[i] & 15];
    }
    bytes_hex[8] = 0;
#if defined(__x86_64__)
    if (sig == SIGILL && bytes[0] == 0x0f && bytes[1] == 0x0b) *name = "ud2";
    if (sig == SIGTRAP) {
        uint8_t previous = 0;
        if (csc_safe_read(pc - 1, &previous, 1) && previous == 0xcc) *name = "int3";
    }
#elif defined(__aarch64__) || defined(__arm64__)
    /* BRK #imm16 (the Swift runtime's and __builtin_trap's trap on arm64: SIGTRAP on Darwin and
     * on Linux; the PC stays on the instruction). */
    (void)sig;
    uint32_t word = (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 | (uint32_t)bytes[3] << 24;
    if ((word & 0xffe0001fu) == 0xd4200000u) *name = "brk";
#else
    (void)sig;
#endif
}

/** Closes the report. A file that received no byte at all (disk full, a file-size limit of 0)
 *  is no report: it is removed and the crash is recorded as unreported. Takes back the spare
 *  descriptor if the report used it (an opt-in recovery goes on running). */
static void csc_finish_report(csc_out *out, int sig) {
    int error = out->error;
    close(out->fd);
    out->fd = -1;
    if (out->written == 0) {
        unlinkat(g_dir_fd, g_report_name, 0);
        csc_report_unwritable(sig, error);
    } else {
        csc_remember_path();
    }
    if (g_spare_fd < 0) g_spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* The POSIX fault codes (si_code > 0 for an instruction's signal), the same names on every
 * platform; each platform's csc_code_name answers its own sender codes and defers to this. */
const char *csc_fault_code_name(int sig, int code) {
    switch (sig) {
    case SIGSEGV: return code == SEGV_MAPERR ? "SEGV_MAPERR" : code == SEGV_ACCERR ? "SEGV_ACCERR" : "SEGV_OTHER";
    case SIGBUS: return code == BUS_ADRALN ? "BUS_ADRALN" : code == BUS_ADRERR ? "BUS_ADRERR" : code == BUS_OBJERR ? "BUS_OBJERR" : "BUS_OTHER";
    case SIGILL:
        switch (code) {
        case ILL_ILLOPC: return "ILL_ILLOPC";
        case ILL_ILLOPN: return "ILL_ILLOPN";
        case ILL_ILLADR: return "ILL_ILLADR";
        case ILL_ILLTRP: return "ILL_ILLTRP";
        case ILL_PRVOPC: return "ILL_PRVOPC";
        case ILL_PRVREG: return "ILL_PRVREG";
        case ILL_COPROC: return "ILL_COPROC";
        case ILL_BADSTK: return "ILL_BADSTK";
        default: return "ILL_OTHER";
        }
    case SIGFPE:
        switch (code) {
        case FPE_INTDIV: return "FPE_INTDIV";
        case FPE_INTOVF: return "FPE_INTOVF";
        case FPE_FLTDIV: return "FPE_FLTDIV";
        case FPE_FLTOVF: return "FPE_FLTOVF";
        case FPE_FLTUND: return "FPE_FLTUND";
        case FPE_FLTRES: return "FPE_FLTRES";
        case FPE_FLTINV: return "FPE_FLTINV";
        default: return "FPE_OTHER";
        }
    case SIGTRAP: return code == TRAP_BRKPT ? "TRAP_BRKPT" : code == TRAP_TRACE ? "TRAP_TRACE" : "TRAP_OTHER";
    default: return "OTHER";
    }
}

static void csc_write_signal_report(int sig, siginfo_t *info, void *uc, csc_thread_id tid, bool recovered) {
    uint64_t wall = csc_clock_ns(CLOCK_REALTIME), boot = csc_uptime_clock_ns();
    csc_quiet_write_signals_begin();
    int fd = csc_open_report();
    if (fd < 0) {
        csc_report_unwritable(sig, errno);
        csc_quiet_write_signals_end();
        return;
    }
    csc_out *out = &g_out;
    out->fd = fd;
    out->length = 0;
    out->failed = false;
    out->written = 0;
    out->error = 0;
    csc_write_header(out, "signal", wall, boot);
    uintptr_t pc = uc ? csc_context_pc(uc) : 0;
    csc_out_key(out, "crash", false);
    csc_out_raw(out, "{\"signal\":");
    csc_out_u64(out, (uint64_t)sig);
    csc_out_key(out, "signal_name", false);
    csc_out_string(out, csc_signal_name(sig), 16);
    csc_out_key(out, "code", false);
    csc_out_i64(out, info ? info->si_code : 0);
    csc_out_key(out, "code_name", false);
    csc_out_string(out, csc_code_name(sig, info ? info->si_code : 0), 24);
    if (info && !csc_signal_was_sent(info)) {
        /* For a signal a process sent (kill, sigqueue, tgkill) si_addr is not a fault address
         * (on Linux it overlays the sender's pid and uid). */
        csc_out_key(out, "fault_address", false);
        csc_out_hex(out, (uint64_t)(uintptr_t)info->si_addr);
    }
    csc_out_key(out, "pc", false);
    csc_out_hex(out, pc);
    const char *trap = NULL;
    char bytes[12];
    csc_trap_instruction(pc, sig, &trap, bytes);
    csc_out_key(out, "instruction_bytes", false);
    csc_out_string(out, bytes, sizeof bytes);
    csc_out_key(out, "trap_instruction", false);
    csc_out_string(out, trap, 8);
    if (info && csc_signal_was_sent(info)) {
        csc_out_key(out, "sender_pid", false);
        csc_out_u64(out, (uint64_t)info->si_pid);
    }
    if (csc_runtime_message_copy(g_runtime_message, sizeof g_runtime_message)) {
        csc_out_key(out, "runtime_message", false);
        csc_out_string(out, g_runtime_message, sizeof g_runtime_message);
    }
    csc_write_thread(out, tid);
    csc_out_key(out, "recovered", false);
    csc_out_raw(out, recovered ? "true" : "false");
    csc_out_raw(out, "}");
    if (atomic_load_explicit(&g_cxx_ready, memory_order_acquire) && atomic_load(&g_cxx_thread) == tid) {
        csc_out_key(out, "exception", false);
        csc_out_raw(out, "{\"runtime\":\"c++\",\"name\":");
        csc_out_string(out, g_cxx_name, sizeof g_cxx_name);
        csc_out_key(out, "reason", false);
        csc_out_string(out, g_cxx_reason, sizeof g_cxx_reason);
        csc_out_raw(out, "}");
    }
    csc_out_flush(out);

#if defined(CSC_TEST_SEAMS)
    int test_mode = atomic_exchange(&g_test_fault, 0);
    if (test_mode == 1) *(volatile int *)(uintptr_t)8 = 1; /* crash-in-handler test: fault after the first section */
    if (test_mode == 2) for (;;) {}                       /* hang-in-handler test: the watchdog must end it */
#endif

    csc_unwind_result unwind = {"none", false, false, NULL};
    if (uc) unwind = csc_collect_frames(uc, info, tid);
    csc_out_key(out, "crashed_thread", false);
    csc_out_raw(out, "{\"unwinder\":");
    csc_out_string(out, unwind.unwinder, 16);
    if (unwind.dwarf_faulted) {
        csc_out_key(out, "dwarf_fault", false);
        csc_out_raw(out, "true");
    }
    if (uc && !unwind.pc_is_code) {
        csc_out_key(out, "pc_is_code", false);
        csc_out_raw(out, "false");
    }
    if (unwind.caller_from) {
        csc_out_key(out, "caller_from", false);
        csc_out_string(out, unwind.caller_from, 16);
    }
    csc_out_key(out, "first_frame_is_pc", false);
    csc_out_raw(out, "true");
    /* Before "frames": a report cut inside the frames still names the guards. */
    csc_write_guard_frames(out, g_frames, atomic_load(&g_frame_count), NULL);
    csc_out_key(out, "frames", false);
    csc_write_frames(out, g_frames, atomic_load(&g_frame_count));
    csc_out_raw(out, "}");
    csc_out_flush(out);
    if (uc) {
        csc_out_key(out, "registers", false);
        csc_write_registers(out, uc);
    }
    csc_write_tail(out);
    csc_finish_report(out, sig);
    csc_quiet_write_signals_end();
}

/** After a fault inside the handler: the same file, rewritten as a minimal report. */
static void csc_write_minimal_report(int first_signal, int second_signal) {
    csc_out *out = &g_out;
    if (out->fd < 0) return;
    if (ftruncate(out->fd, 0) != 0) return;
    lseek(out->fd, 0, SEEK_SET);
    out->length = 0;
    out->failed = false;
    csc_write_header(out, "signal", csc_clock_ns(CLOCK_REALTIME), csc_uptime_clock_ns());
    csc_out_key(out, "minimal", false);
    csc_out_raw(out, "true");
    csc_out_key(out, "crash", false);
    csc_out_raw(out, "{\"signal\":");
    csc_out_u64(out, (uint64_t)first_signal);
    csc_out_key(out, "signal_name", false);
    csc_out_string(out, csc_signal_name(first_signal), 16);
    csc_write_thread(out, csc_thread_self());
    csc_out_raw(out, "}");
    csc_out_key(out, "handler_crash", false);
    csc_out_raw(out, "{\"signal\":");
    csc_out_u64(out, (uint64_t)second_signal);
    csc_out_key(out, "signal_name", false);
    csc_out_string(out, csc_signal_name(second_signal), 16);
    csc_out_raw(out, "}");
    int frames = atomic_load(&g_frame_count);
    if (frames > 0) {
        csc_out_key(out, "crashed_thread", false);
        csc_out_raw(out, "{\"unwinder\":\"partial\",\"first_frame_is_pc\":true");
        csc_write_guard_frames(out, g_frames, frames, NULL);
        csc_out_key(out, "frames", false);
        csc_write_frames(out, g_frames, frames);
        csc_out_raw(out, "}");
    }
    csc_out_key(out, "complete", false);
    csc_out_raw(out, "true}\n");
    csc_out_flush(out);
    close(out->fd);
    out->fd = -1;
    csc_remember_path();
}

/* ---- passing the signal on ---------------------------------------------------------------- */

static void csc_handler(int sig, siginfo_t *info, void *context);

static void csc_handler_action(struct sigaction *action) {
    memset(action, 0, sizeof *action);
    action->sa_sigaction = csc_handler;
    action->sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&action->sa_mask);
}

static void csc_restore_previous(void) {
    for (size_t i = 0; i < CSC_CAPTURED_COUNT; i++) {
        int sig = kCaptured[i];
        if (g_have_previous[sig]) sigaction(sig, &g_previous[sig], NULL);
    }
}

/** A handler function (not SIG_DFL, not SIG_IGN), whatever SA_SIGINFO says: both share a union. */
static bool csc_is_custom(const struct sigaction *action) {
    return action && action->sa_handler != SIG_DFL && action->sa_handler != SIG_IGN;
}

/** Ends the process with `sig` and its default action. Only `sig`'s disposition changes: the
 *  other captured signals stay ours, so a thread faulting meanwhile waits in the handler instead
 *  of ending the process with another signal than the report's. */
_Noreturn void csc_die_with(int sig) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    sigaction(sig, &action, NULL);
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, sig);
    pthread_sigmask(SIG_UNBLOCK, &unblock, NULL);
    csc_thread_raise(sig);
    /* Still alive: the signal is blocked elsewhere or we are PID 1 (which ignores default-fatal
     * signals it sends itself). Never continue past a crash. */
    _exit(128 + sig);
}

/** A hardware fault: returning from the handler re-executes the faulting instruction, which
 *  faults again unless someone resolved it. Signals that were sent (kill, raise, a timer),
 *  x86_64 breakpoints (the PC is past int3), SIGPIPE and SIGSYS do not come back by themselves.
 *  An arm64 BRK does: the PC stays on the instruction. */
static bool csc_signal_refires(int sig, const siginfo_t *info) {
    if (info == NULL || csc_signal_was_sent(info)) return false;
#if defined(__aarch64__) || defined(__arm64__)
    if (sig == SIGTRAP) return true;
#endif
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
}

static bool csc_is_abort(int sig, const siginfo_t *info) { return csc_signal_is_abort(sig, info); }

static bool csc_is_ours(const struct sigaction *action) {
    return (action->sa_flags & SA_SIGINFO) && action->sa_sigaction == csc_handler;
}

/** Calls a previous handler the way the kernel would have delivered the signal to it, with our
 *  handler left installed: a handler that never returns (it jumps out with siglongjmp) leaves
 *  capture armed. SA_RESETHAND makes SIG_DFL the handler we pass `sig` on to from now on (the
 *  kernel's one-shot reset, so the handler does not run a second time when the fault
 *  re-executes); its sa_mask, and the signal itself unless SA_NODEFER, are blocked during the
 *  call, and stay blocked on return: the caller restores `*saved` (a signal the handler raised
 *  meanwhile is delivered then, as the kernel would deliver it when the handler returns).
 *  SA_SIGINFO selects the calling convention. SA_ONSTACK needs nothing: the handler already runs
 *  on the alternate stack when there is one. A handler that looks at its own disposition during
 *  the call sees ours; one that replaces it (signal(sig, SIG_DFL)) replaces ours, and the caller
 *  takes what it installed as the next previous handler (csc_rearm). */
static void csc_call_previous(int sig, const struct sigaction *previous, siginfo_t *info, void *context, sigset_t *saved) {
    if (previous->sa_flags & SA_RESETHAND) {
        memset(&g_previous[sig], 0, sizeof g_previous[sig]);
        g_previous[sig].sa_handler = SIG_DFL;
        sigemptyset(&g_previous[sig].sa_mask);
    }
    sigset_t block = previous->sa_mask;
    if (!(previous->sa_flags & SA_NODEFER)) sigaddset(&block, sig);
    pthread_sigmask(SIG_BLOCK, &block, saved);
    if (previous->sa_flags & SA_SIGINFO)
        previous->sa_sigaction(sig, info, context);
    else
        previous->sa_handler(sig);
}

/** Puts our handler back on `sig`. Whatever is installed now (what the previous handler left, or
 *  the previous handler itself) becomes the handler the next crash passes on to. */
static void csc_rearm(int sig) {
    struct sigaction ours, current;
    csc_handler_action(&ours);
    if (sigaction(sig, &ours, &current) != 0) return;
    if (!((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == csc_handler)) g_previous[sig] = current;
    g_have_previous[sig] = true;
}

/** What `sig` meets when the previous handler has returned: what it installed, or, when our
 *  handler is still installed, the handler we pass `sig` on to (SIG_DFL after SA_RESETHAND). */
static bool csc_previous_left_a_handler(int sig) {
    struct sigaction now;
    if (sigaction(sig, NULL, &now) != 0) return false;
    if (csc_is_ours(&now)) return g_have_previous[sig] && csc_is_custom(&g_previous[sig]);
    return csc_is_custom(&now);
}

static bool csc_signal_is_pending(int sig) {
    sigset_t pending;
    return sigpending(&pending) == 0 && sigismember(&pending, sig) == 1;
}

/** Runs the handler installed before us (custom, see csc_is_custom) first, before anything of
 *  ours is written or held: no claim, no report, no watchdog, our handler still installed. So a
 *  handler that never returns — it jumps out with siglongjmp (a "can I read this address?" probe,
 *  a harness catching abort()) or parks the thread — has handled the signal and leaves nothing
 *  behind; the next crash on any thread is reported. Returns true when the signal still ends the
 *  process, which then needs our report: abort() (it re-raises with the default action), a
 *  hardware fault whose handler left no handler of its own (the re-executed fault meets the
 *  default action), or a signal the handler raised again into the default action (pending in
 *  its mask: `sig` then stays blocked until csc_die_with). Returns false when the handler
 *  handled the signal and the process goes on: a signal that does not re-fire (a breakpoint,
 *  SIGSYS, SIGPIPE, a signal that was sent), or a fault it resolved or expects to see again when
 *  the instruction re-executes (it left a handler installed); our handler is re-armed on top of
 *  what it installed, as often as it would have run without us.
 *  A handler that ends the process itself (_exit) leaves no report. */
static bool csc_run_previous_first(int sig, siginfo_t *info, void *context) {
    struct sigaction previous = g_previous[sig];
    sigset_t saved;
    csc_call_previous(sig, &previous, info, context, &saved);
    bool handler_left = csc_previous_left_a_handler(sig);
    bool raised_again = !handler_left && csc_signal_is_pending(sig);
    bool crash = csc_is_abort(sig, info) || raised_again || (!handler_left && csc_signal_refires(sig, info));
    csc_rearm(sig);
    if (raised_again) sigaddset(&saved, sig);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    return crash;
}

/** For a signal on a thread that already reported (an uncaught exception that now aborts, or a
 *  signal raised inside a previous handler the owner calls) or that gets no report (CLAIM_PASS_ON):
 *  no second report; the previous handler, unless it already ran for this signal, or the default
 *  action. Returns when the previous handler returned and the signal is not abort()'s (the
 *  process goes on, or the fault re-executes). */
static void csc_pass_on(int sig, siginfo_t *info, void *context, bool previous_ran) {
    const struct sigaction *saved = g_have_previous[sig] ? &g_previous[sig] : NULL;
    if (previous_ran || !csc_is_custom(saved)) csc_die_with(sig);
    struct sigaction previous = *saved;
    sigset_t mask;
    csc_call_previous(sig, &previous, info, context, &mask);
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    if (csc_is_abort(sig, info)) csc_die_with(sig);
    if (!csc_signal_refires(sig, info)) csc_rearm(sig);
}

static void csc_park_forever(void) {
    sigset_t all;
    sigfillset(&all);
    for (;;) sigsuspend(&all);
}

/* ---- the handler ---------------------------------------------------------------------------- */

static void csc_handler(int sig, siginfo_t *info, void *context) {
    int saved_errno = errno;
    if (csc_watchdog_claims_signal(info)) {
        errno = saved_errno;
        return;
    }
    csc_hang_fault_recover(sig); /* a fault in a hang sample's stack walk: not a crash */
    if (info && csc_signal_was_sent(info) && g_have_previous[sig] && g_previous[sig].sa_handler == SIG_IGN && !csc_is_abort(sig, info)) {
        /* A signal sent (kill, raise, sigqueue) while the app had set SIG_IGN: without us it
         * would have been discarded. (A fault is not: the kernel forces the default action.)
         * abort() is the exception: it re-raises with the default action, a crash either way. */
        errno = saved_errno;
        return;
    }
    csc_thread_id self = csc_thread_self();
    /* A handler installed before us runs first (csc_run_previous_first); not for a signal on a
     * thread that owns the crash (a fault inside our handler, an abort after an uncaught
     * exception was reported, a signal raised by a previous handler the owner calls). */
    bool previous_ran = false;
    if (!csc_claim_is_owner(self) && g_have_previous[sig] && csc_is_custom(&g_previous[sig])) {
        if (!csc_run_previous_first(sig, info, context)) {
            errno = saved_errno;
            return;
        }
        previous_ran = true;
    }
    const uint32_t writing_wait_limit_ms = g_watchdog_seconds * 1000u + 1000u;
    switch (csc_claim(self, writing_wait_limit_ms, CSC_CHAIN_WAIT_LIMIT_MS)) {
    case CSC_CLAIM_OWNER:
        break;
    case CSC_CLAIM_REENTERED: {
        csc_unwind_fault_recover(sig, self); /* a fault in the DWARF walk: not a handler crash */
        int state = csc_claim_state();
        if (state == CSC_STATE_DONE || state == CSC_STATE_CHAINING) {
            /* This thread already reported (an uncaught exception that now aborts), or a
             * previous handler we called raised a signal. */
            csc_pass_on(sig, info, context, previous_ran);
            errno = saved_errno;
            return;
        }
        /* A fault inside our own handler. */
        if (csc_claim_enter_again() == 1) {
            csc_write_minimal_report(g_first_signal, sig);
            csc_die_with(g_first_signal);
        }
        _exit(128 + g_first_signal);
    }
    case CSC_CLAIM_PASS_ON:
        /* An uncaught exception was reported and the process is exiting, or the owner's previous
         * handler neither ended the process nor returned within a minute: no report for this one. */
        csc_pass_on(sig, info, context, previous_ran);
        errno = saved_errno;
        return;
    case CSC_CLAIM_OWNER_STUCK:
        /* The owner is stuck past its watchdog (it could not make one): end the process with the
         * signal its report names. */
        csc_die_with(g_first_signal);
    }
    g_handler_start_ns = csc_clock_ns(CLOCK_MONOTONIC);
    csc_claim_begin_writing();
    g_first_signal = sig;
    g_report_images = csc_images_pin();
    g_out.fd = -1;
    csc_watchdog_arm(self, sig, g_watchdog_seconds);

    /* Never the main thread (in a forked child: the thread that forked). */
    bool recover = g_recover && !csc_thread_is_main() && sig != SIGABRT;
    csc_write_signal_report(sig, info, context, self, recover);
    csc_watchdog_disarm();

    if (recover) {
        /* Opt-in recovery: this background thread never returns; the rest of the process runs on.
         * The next crash (on any thread) is reported again. */
        csc_images_unpin();
        csc_claim_release();
        errno = saved_errno;
        csc_park_forever();
    }
    /* The previous handler already ran (csc_run_previous_first) or there is none: the default
     * action ends the process with the signal the report names. Threads that crash meanwhile
     * keep waiting. */
    csc_claim_set_state(CSC_STATE_CHAINING);
    csc_die_with(sig);
}

/* ---- uncaught exceptions ------------------------------------------------------------------ */

/** The guard whose report-only policy let this thread's exception through, or NULL: the guard of
 *  the most recent incident this thread recorded, when it applied report-only (its hook recorded
 *  the misuse, then called the original, which threw what is now uncaught). */
static const char *csc_report_only_guard(void) {
    uint64_t self = cs_current_thread_id();
    size_t count = cs_breadcrumbs_copy(g_crumbs, CS_BREADCRUMB_CAPACITY);
    const cs_breadcrumb *latest = NULL;
    for (size_t i = 0; i < count; i++) {
        if (g_crumbs[i].thread_id == self && (latest == NULL || g_crumbs[i].sequence > latest->sequence)) latest = &g_crumbs[i];
    }
    return latest && latest->policy == CS_POLICY_REPORT_ONLY ? latest->guard_name : NULL;
}

bool csc_report_exception(const char *name, const char *reason, const uintptr_t *addresses, size_t count) {
    if (!g_installed) return false;
    csc_thread_id self = csc_thread_self();
    if (!csc_claim_try(self)) return false; /* already crashing */
    g_handler_start_ns = csc_clock_ns(CLOCK_MONOTONIC);
    csc_claim_begin_writing();
    g_first_signal = SIGABRT;
    g_report_images = csc_images_pin();
    csc_quiet_write_signals_begin();
    int fd = csc_open_report();
    if (fd < 0) csc_report_unwritable(SIGABRT, errno);
    if (fd >= 0) {
        csc_out *out = &g_out;
        out->fd = fd;
        out->length = 0;
        out->failed = false;
        out->written = 0;
        out->error = 0;
        csc_write_header(out, "objc_exception", csc_clock_ns(CLOCK_REALTIME), csc_uptime_clock_ns());
        csc_out_key(out, "crash", false);
        csc_out_raw(out, "{\"signal\":0");
        csc_write_thread(out, self);
        csc_out_key(out, "recovered", false);
        csc_out_raw(out, "false}");
        const char *report_only_guard = csc_report_only_guard();
        csc_out_key(out, "exception", false);
        csc_out_raw(out, "{\"name\":");
        csc_out_string(out, name ? name : "", CSC_TEXT_MAX);
        csc_out_key(out, "reason", false);
        csc_out_string(out, reason ? reason : "", 1024);
        if (report_only_guard) {
            csc_out_key(out, "report_only_guard", false);
            csc_out_string(out, report_only_guard, CSC_GUARD_NAME_MAX);
        }
        csc_out_raw(out, "}");
        csc_out_flush(out);
        int n = (int)(count < CSC_MAX_FRAMES ? count : CSC_MAX_FRAMES);
        for (int i = 0; i < n; i++) g_frames[i] = addresses[i];
        atomic_store(&g_frame_count, n);
        csc_out_key(out, "crashed_thread", false);
        csc_out_raw(out, "{\"unwinder\":\"exception\",\"first_frame_is_pc\":false");
        csc_write_guard_frames(out, g_frames, n, report_only_guard);
        csc_out_key(out, "frames", false);
        csc_write_frames(out, g_frames, n);
        csc_out_raw(out, "}");
        csc_out_flush(out);
        csc_write_tail(out);
        csc_finish_report(out, SIGABRT);
    }
    csc_quiet_write_signals_end();
    csc_images_unpin(); /* the report is written; a following abort writes nothing */
    csc_claim_set_state(CSC_STATE_DONE); /* owner stays: a following abort writes nothing */
    return true;
}

static void csc_copy_text(char *to, size_t capacity, const char *from) {
    size_t n = 0;
    if (from) while (n + 1 < capacity && from[n]) { to[n] = from[n]; n++; }
    to[n] = 0;
}

bool csc_add_sdk_code_range(uintptr_t start, uintptr_t end) {
    if (start >= end) return false;
    bool added = true;
    pthread_mutex_lock(&g_sdk_ranges_lock);
    int count = atomic_load(&g_sdk_range_count);
    bool known = false;
    for (int r = 0; r < count; r++) known = known || (g_sdk_ranges[r].start == start && g_sdk_ranges[r].end == end);
    if (!known) {
        if (count >= CSC_SDK_RANGES_MAX) {
            added = false;
        } else {
            g_sdk_ranges[count].start = start;
            g_sdk_ranges[count].end = end;
            atomic_store_explicit(&g_sdk_range_count, count + 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&g_sdk_ranges_lock);
    return added;
}

bool csc_note_cxx_exception(const char *type_name, const char *what) {
    csc_thread_id none = 0, self = csc_thread_self();
    if (!atomic_compare_exchange_strong(&g_cxx_thread, &none, self)) return false;
    csc_copy_text(g_cxx_name, sizeof g_cxx_name, type_name);
    csc_copy_text(g_cxx_reason, sizeof g_cxx_reason, what);
    atomic_store_explicit(&g_cxx_ready, true, memory_order_release);
    return true;
}

/* ---- install ------------------------------------------------------------------------------ */

static void csc_free_alt_stack(void *memory) {
    stack_t disable;
    memset(&disable, 0, sizeof disable);
    disable.ss_flags = SS_DISABLE;
    stack_t current;
    if (sigaltstack(NULL, &current) == 0 && current.ss_sp == (char *)memory + getpagesize())
        sigaltstack(&disable, NULL);
    munmap(memory, g_alt_stack_size + (size_t)getpagesize());
}

static void csc_make_alt_stack_key(void) { pthread_key_create(&g_alt_stack_key, csc_free_alt_stack); }

bool csc_thread_prepare(void) {
    stack_t current;
    if (sigaltstack(NULL, &current) != 0) return false;
    if (!(current.ss_flags & SS_DISABLE) && current.ss_size >= MINSIGSTKSZ) return true; /* keep theirs */
    pthread_once(&g_alt_stack_once, csc_make_alt_stack_key);
    size_t page = (size_t)getpagesize();
    void *memory = mmap(NULL, g_alt_stack_size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
    if (memory == MAP_FAILED) return false;
    mprotect(memory, page, PROT_NONE); /* guard page below the stack */
    stack_t stack;
    memset(&stack, 0, sizeof stack);
    stack.ss_sp = (char *)memory + page;
    stack.ss_size = g_alt_stack_size;
    if (sigaltstack(&stack, NULL) != 0) {
        munmap(memory, g_alt_stack_size + page);
        return false;
    }
    pthread_setspecific(g_alt_stack_key, memory);
    return true;
}

/** Runs in the child of fork(). The child is a process of its own: the handler takes its pid,
 *  report name and main thread from getpid(); this resets what the parent's crash state could
 *  hold (a report being written by a thread that does not exist here, "report written" of a
 *  recovered thread), the uptime origin, and the launch id: the child is not the launch, so its
 *  crash never counts as a launch crash. Async-signal-safe (fork may be called from a handler). */
static void csc_after_fork_in_child(void) {
    csc_claim_reset();
    atomic_store(&g_written, false);
    g_report_path[0] = 0;
    csc_watchdog_after_fork();
    g_process_start_boot_ns = csc_uptime_clock_ns();
    g_launch_id[0] = 0;
}

/** Extends the marker to CSC_UNREPORTED_MARKER_BYTES with newlines (a record it holds stays). */
static void csc_reserve_marker(void) {
    struct stat status;
    if (g_marker_fd < 0 || fstat(g_marker_fd, &status) != 0 || status.st_size >= CSC_UNREPORTED_MARKER_BYTES) return;
    char newlines[CSC_UNREPORTED_MARKER_BYTES];
    memset(newlines, '\n', sizeof newlines);
    size_t missing = (size_t)(CSC_UNREPORTED_MARKER_BYTES - status.st_size);
    (void)!pwrite(g_marker_fd, newlines, missing, status.st_size);
}

csc_install_result csc_install(const csc_config *config) {
    if (g_installed) return CSC_INSTALL_ALREADY;
    if (config == NULL || config->directory == NULL) return CSC_INSTALL_NO_DIRECTORY;
    int dir = open(config->directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0 && errno == ENOENT && mkdir(config->directory, 0755) == 0)
        dir = open(config->directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return CSC_INSTALL_NO_DIRECTORY;
    g_dir_fd = dir;
    csc_copy(g_directory, sizeof g_directory, config->directory);
    if (g_spare_fd < 0) g_spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (g_marker_fd >= 0) close(g_marker_fd);
    g_marker_fd = openat(dir, CSC_UNREPORTED_MARKER, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    csc_reserve_marker();
    if (config->alt_stack_size >= 16384) g_alt_stack_size = config->alt_stack_size;
    /* Darwin's minimum (MINSIGSTKSZ 32 KiB) is above the smallest size accepted here. */
    if (g_alt_stack_size < (uint32_t)MINSIGSTKSZ) g_alt_stack_size = (uint32_t)MINSIGSTKSZ;
    if (config->watchdog_seconds) g_watchdog_seconds = config->watchdog_seconds;
    g_recover = config->recover_background_threads;

    csc_process_executable(g_executable, sizeof g_executable);
    const char *base = strrchr(g_executable, '/');
    csc_copy(g_app_name, sizeof g_app_name, config->app_name ? config->app_name : (base ? base + 1 : g_executable));
    csc_copy(g_app_version, sizeof g_app_version, config->app_version);
    csc_copy(g_launch_id, sizeof g_launch_id, config->launch_id);
    g_has_remote_config_version = config->has_remote_config_version && config->remote_config_version >= 0;
    g_remote_config_version = g_has_remote_config_version ? (uint64_t)config->remote_config_version : 0;
    uname(&g_uname);
    g_process_start_boot_ns = csc_process_start_ns();

    csc_format_u64(g_install_ns_text, csc_clock_ns(CLOCK_REALTIME));
    if (!g_atfork_registered) g_atfork_registered = pthread_atfork(NULL, NULL, csc_after_fork_in_child) == 0;

    csc_safe_read_prepare();
    csc_runtime_message_prepare();
    csc_refresh_images();
    csc_unwind_prepare();
    csc_watchdog_prepare();
    (void)cs_breadcrumbs_copy(g_crumbs, 1);
    csc_thread_prepare();

    struct sigaction action;
    csc_handler_action(&action);
    for (size_t i = 0; i < CSC_CAPTURED_COUNT; i++) {
        int sig = kCaptured[i];
        if (sig == SIGPIPE && !config->capture_sigpipe) continue;
        if (sig == SIGPIPE || sig == SIGSYS) {
            /* Honour an ignored SIGPIPE/SIGSYS: the app handles EPIPE itself (common in servers).
             * Looked at before replacing, so an ignored signal is never caught even briefly. */
            struct sigaction previous;
            if (sigaction(sig, NULL, &previous) != 0) continue;
            if (!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler == SIG_IGN) continue;
        }
        if (sigaction(sig, &action, &g_previous[sig]) != 0) {
            csc_restore_previous();
            return CSC_INSTALL_SIGACTION_FAILED;
        }
        g_have_previous[sig] = true;
    }
    g_installed = true;
    return CSC_INSTALL_OK;
}

void csc_uninstall(void) {
    if (!g_installed) return;
    csc_restore_previous();
    memset(g_have_previous, 0, sizeof g_have_previous);
    g_installed = false;
}

bool csc_is_installed(void) { return g_installed; }

void csc_set_launch_phase(csc_launch_phase phase) { atomic_store(&g_phase, (int)phase); }
csc_launch_phase csc_launch_phase_get(void) { return (csc_launch_phase)atomic_load(&g_phase); }

void csc_set_guard_states_json(const char *json) {
    if (json) (void)csc_published_set(&g_guard_json, json);
}

bool csc_set_scope_json(const char *json) {
    if (!csc_published_set(&g_scope_json, json)) return false;
    csc_run_record_set_scope(json); /* for the next start, should this run end without a report */
    return true;
}

bool csc_set_guard_code_ranges(const csc_guard_code_range *ranges, size_t count) {
    if (count > CSC_GUARD_RANGES_MAX || (count > 0 && ranges == NULL)) return false;
    for (size_t r = 0; r < count; r++) {
        const char *name = ranges[r].name;
        size_t length = name ? strlen(name) : 0;
        if (length == 0 || length >= CSC_GUARD_NAME_MAX) return false;
        for (size_t i = 0; i < length; i++) {
            char c = name[i];
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
        }
    }
    if (atomic_flag_test_and_set(&g_guard_ranges_claimed)) return false;
    for (size_t r = 0; r < count; r++) {
        memcpy(g_guard_ranges[r].name, ranges[r].name, strlen(ranges[r].name) + 1);
        g_guard_ranges[r].start = ranges[r].start;
        g_guard_ranges[r].end = ranges[r].end;
    }
    atomic_store_explicit(&g_guard_range_count, (int)count, memory_order_release);
    return true;
}

bool csc_report_written(void) { return atomic_load(&g_written); }
const char *csc_report_path(void) { return g_report_path; }
#if defined(CSC_TEST_SEAMS)
void csc_test_fault_in_handler(bool enabled) { atomic_store(&g_test_fault, enabled ? 1 : 0); }
void csc_test_hang_in_handler(void) { atomic_store(&g_test_fault, 2); }
void csc_test_wait_for_second_crash(void) { atomic_store(&g_test_wait_other, 1); }
bool csc_test_occupy_next_report_name(void) {
    if (!g_installed) return false;
    char name[sizeof g_report_name];
    csc_compose_report_name(name, sizeof name, atomic_load(&g_report_count));
    int fd = openat(g_dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    close(fd);
    return true;
}
void csc_test_wait_for_other_crashes(int count) { atomic_store(&g_test_wait_other, count); }
#endif

#else /* neither Linux nor Darwin: no handler; capture reports itself unsupported. */
csc_install_result csc_install(const csc_config *config) { (void)config; return CSC_INSTALL_UNSUPPORTED; }
void csc_uninstall(void) {}
bool csc_is_installed(void) { return false; }
bool csc_thread_prepare(void) { return false; }
void csc_set_launch_phase(csc_launch_phase phase) { (void)phase; }
csc_launch_phase csc_launch_phase_get(void) { return CSC_PHASE_UNKNOWN; }
void csc_set_guard_states_json(const char *json) { (void)json; }
bool csc_set_scope_json(const char *json) { return json == NULL || json[0] == 0; }
bool csc_set_guard_code_ranges(const csc_guard_code_range *ranges, size_t count) { (void)ranges; (void)count; return false; }
bool csc_report_exception(const char *name, const char *reason, const uintptr_t *addresses, size_t count) {
    (void)name; (void)reason; (void)addresses; (void)count;
    return false;
}
bool csc_report_written(void) { return false; }
bool csc_note_cxx_exception(const char *type_name, const char *what) { (void)type_name; (void)what; return false; }
bool csc_add_sdk_code_range(uintptr_t start, uintptr_t end) { (void)start; (void)end; return false; }
const char *csc_report_path(void) { return ""; }
#if defined(CSC_TEST_SEAMS)
void csc_test_fault_in_handler(bool enabled) { (void)enabled; }
void csc_test_hang_in_handler(void) {}
void csc_test_wait_for_second_crash(void) {}
bool csc_test_occupy_next_report_name(void) { return false; }
void csc_test_wait_for_other_crashes(int count) { (void)count; }
#endif
#endif
