/*
 * cs_incidents.h — the incident pipeline shared by every guard (C, no Objective-C).
 *
 * A guard that intercepts a misuse calls cs_incident_record() on the thread that made the call.
 * That call does no string formatting and describes no object: it copies C strings the runtime
 * already owns (class and selector names), a static reason template and up to two numbers, and
 * raw return addresses. Formatting happens later, on the delivery thread, in Swift.
 *
 * Contracts:
 * - Dedupe by fingerprint (guard + class + selector + first frame outside system images). The
 *   first occurrence is delivered in full; later ones only increment an atomic count, and at most
 *   one count update per fingerprint is delivered per rate-limit window.
 * - Counting never takes a lock. Delivery goes through a bounded queue to one delivery thread
 *   that calls the registered callback; a full queue drops the delivery, never the count.
 * - The end: at exit (and CrashShieldSDK.stop()) no callback starts any more, what is queued is
 *   dropped, and a callback already running is waited for, bounded (cs_incidents_end_delivery).
 * - The last CS_BREADCRUMB_CAPACITY incidents are mirrored into a fixed-size ring that a crash
 *   handler may copy with cs_breadcrumbs_copy() (async-signal-safe).
 */
#ifndef CS_INCIDENTS_H
#define CS_INCIDENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CS_INCIDENT_MAX_FRAMES 32
#define CS_INCIDENT_NAME_MAX 96
#define CS_BREADCRUMB_CAPACITY 64
#define CS_BREADCRUMB_NAME_MAX 64

/** What a guard does with a misuse. The numeric values are part of the C API. */
typedef enum {
    CS_POLICY_NEUTRALIZE = 0,  /**< record, then make the call harmless (the default) */
    CS_POLICY_REPORT_ONLY = 1, /**< record, then let the original behaviour happen */
    CS_POLICY_OFF = 2,         /**< do nothing: the original behaviour, no incident */
} cs_policy;

/** What the hook knows at the moment of the misuse. Every pointer must stay valid for the
 *  duration of the cs_incident_record() call only; `guard_name` and `reason` must be static. */
typedef struct {
    const char *guard_name;    /**< static: the registry's guard name, e.g. "container" */
    cs_policy policy;          /**< the policy the guard is applying */
    const char *class_name;    /**< receiver's class name (copied, truncated) */
    const char *selector_name; /**< selector name (copied, truncated) */
    bool is_class_method;      /**< `+` when true, `-` otherwise */
    const char *reason;        /**< static template; each "{}" is replaced by args[i] in order */
    uint64_t args[2];
    uint8_t arg_count;
    const void *caller;        /**< return address of the hooked call (the call site), or NULL */
    /** Source location of the call site when the caller knows it (Swift's #fileID/#line): when
     *  set, it stands in for the first app frame in the fingerprint, so no stack walk is needed
     *  to deduplicate. Static string. */
    const char *site_file;
    uint32_t site_line;
    /** When frame_count > 0, the incident's stack is these frames instead of the recording
     *  thread's (a zombie incident carries the stack where the object was deallocated). The
     *  fingerprint still comes from `caller` when it is set. */
    const uintptr_t *frames;
    uint8_t frame_count;
} cs_incident_site;

/** One delivered incident. `kind` tells a first occurrence from a later count update. */
typedef enum { CS_INCIDENT_FIRST = 0, CS_INCIDENT_UPDATE = 1 } cs_incident_kind;

typedef struct {
    cs_incident_kind kind;
    const char *guard_name;
    cs_policy policy;
    char class_name[CS_INCIDENT_NAME_MAX];
    char selector_name[CS_INCIDENT_NAME_MAX];
    bool is_class_method;
    const char *reason;
    uint64_t args[2];
    uint8_t arg_count;
    uintptr_t frames[CS_INCIDENT_MAX_FRAMES];
    uint8_t frame_count;
    uint64_t thread_id;
    bool is_main_thread;
    int64_t wall_time_ns;      /**< CLOCK_REALTIME */
    uint64_t monotonic_ns;     /**< CLOCK_MONOTONIC */
    uint64_t fingerprint;
    uint64_t count;            /**< occurrences of this fingerprint so far, this one included */
} cs_incident;

/** Called on the delivery thread, one incident at a time, never concurrently with itself. */
typedef void (*cs_incident_callback)(const cs_incident *incident, void *context);

/** Records one misuse. Thread-safe, lock-free for repeats. */
void cs_incident_record(const cs_incident_site *site);
/** cs_incident_record for an API boundary that has no return address of its own to give (Swift):
 *  sets `site->caller` to the return address `skip` + 1 callers above the function that calls
 *  this one, so the incident's stack starts in the code that called the API (skip 1: the caller
 *  of the API function that called the function calling this). Unchanged when the stack is too
 *  short. */
void cs_incident_record_above_caller(cs_incident_site *site, uint8_t skip);
/** The calling thread's return addresses, starting at the return address into the caller of the
 *  function that calls this one, `skip` more callers up: up to `capacity` into `out`. Returns how
 *  many. Normal context (backtrace(3)). */
size_t cs_caller_frames(uintptr_t *out, size_t capacity, uint8_t skip);

/** Sets (or clears with NULL) the delivery callback. Starts the delivery thread on first use,
 *  and then registers, once per process, the exit handler (cs_incidents_end_delivery_for_exit)
 *  and the fork handlers: a forked child drops what the parent had queued (counted in
 *  dropped_deliveries) and starts its own delivery thread when it records its first incident. */
void cs_incidents_set_callback(cs_incident_callback callback, void *context);
/** cs_incidents_set_callback without starting the delivery thread: it starts with
 *  cs_incidents_start_delivery_thread() or when the first incident is queued, whichever comes
 *  first (a start leaves the thread's creation to after it returns). */
void cs_incidents_set_callback_without_thread(cs_incident_callback callback, void *context);
/** Starts the delivery thread when a callback is set and none runs yet; otherwise a no-op. */
void cs_incidents_start_delivery_thread(void);

/**
 * The end of delivery (process exit, CrashShieldSDK.stop()).
 *
 * Ends delivery: from the call on, no callback starts and nothing is queued (a delivery recorded
 * meanwhile is dropped); the incidents still queued are dropped. Both are counted in
 * `dropped_deliveries` (incidents are not durable: nothing else keeps them). A callback already
 * running is waited for, at most `wait_ms`. Called on the delivery thread itself (a callback
 * that exits or stops), it does not wait for that call. Counting and breadcrumbs go on.
 * Returns true when no callback is running on return (the one on the calling thread aside).
 */
bool cs_incidents_end_delivery(uint32_t wait_ms);

/** How long the exit and CrashShieldSDK.stop() wait for a running callback: 500 ms, the grace
 *  reporting's end gives its own work. The callback is the app's code, which nothing can cancel,
 *  and an exit must not hang on it; a call that outlasts the grace goes on during the exit. */
#define CS_INCIDENTS_END_GRACE_MS 500u

/**
 * cs_incidents_end_delivery(CS_INCIDENTS_END_GRACE_MS), once per process: the exit handler
 * (registered with atexit when the first callback is set; the Swift SDK's start registers it
 * again so it runs before reporting's). Later calls return at once (true). After it, delivery
 * never resumes in this process; a forked child starts afresh.
 */
bool cs_incidents_end_delivery_for_exit(void);

/** Delivery starts again after cs_incidents_end_delivery() (not after the exit's end). */
void cs_incidents_resume_delivery(void);

/** Minimum time between two delivered count updates of one fingerprint. Default 1 s. */
void cs_incidents_set_rate_limit_ns(uint64_t window_ns);

/** Blocks until every queued incident was handed to the callback, or the timeout passed.
 *  Returns true when the queue drained. */
bool cs_incidents_flush(uint32_t timeout_ms);

/** Counters since start or the last reset. */
typedef struct {
    uint64_t recorded;          /**< every misuse recorded (sum of all fingerprint counts) */
    uint64_t fingerprints;      /**< distinct fingerprints tracked */
    uint64_t delivered;         /**< incidents handed to the callback */
    uint64_t dropped_deliveries;/**< deliveries dropped: the queue was full, no callback was set,
                                     delivery had ended (exit, stop), or inherited across fork() */
    uint64_t untracked;         /**< misuses past the fingerprint table's capacity (still counted in recorded) */
} cs_incident_stats;

cs_incident_stats cs_incidents_stats(void);

/** Count of recorded misuses for one guard name (all fingerprints). */
uint64_t cs_incidents_count_for_guard(const char *guard_name);

/** Forgets fingerprints, counters and breadcrumbs. For tests and the demo child. */
void cs_incidents_reset(void);

/**
 * Canary mode, per thread: while active, cs_incident_record() only counts a hit for the
 * current thread and records nothing. Guards use it to check their hooks at install.
 */
void cs_incidents_canary_begin(void);
/** Ends canary mode and returns the number of hits seen since the matching begin. */
uint64_t cs_incidents_canary_end(void);
/** Hits seen on this thread since the outermost canary_begin, without ending canary mode. */
uint64_t cs_incidents_canary_hits(void);

/* ---- breadcrumbs: read by the crash handler ---------------------------------------------- */

typedef struct {
    uint64_t sequence;         /**< 1-based order of the incident; 0 = empty slot */
    const char *guard_name;    /**< static string */
    const char *reason;        /**< static template: each "{}" stands for args[i] in order */
    uint64_t args[2];
    uint8_t arg_count;
    cs_policy policy;          /**< the policy the guard applied */
    uint64_t thread_id;        /**< cs_current_thread_id() of the thread that recorded it */
    uint64_t fingerprint;      /**< the incident's fingerprint (as its event's) */
    char class_name[CS_BREADCRUMB_NAME_MAX];
    char selector_name[CS_BREADCRUMB_NAME_MAX];
    bool is_class_method;
    uint64_t count;
    uint64_t monotonic_ns;
} cs_breadcrumb;

/**
 * Copies up to `capacity` of the most recent breadcrumbs, oldest first, into `out`, skipping any
 * slot that is being written at that moment. Returns how many were copied.
 * @note Async-signal-safe: no locks, no allocation, bounded time.
 */
size_t cs_breadcrumbs_copy(cs_breadcrumb *out, size_t capacity);

/* ---- process helpers shared with the runtime layer -------------------------------------- */

/* Thread helpers, one file per platform (cs_thread_linux.c, cs_thread_darwin.c). */

/** Thread id as the OS reports it (Linux: gettid; Apple: pthread_threadid_np), and whether the
 *  calling thread is the process's main thread. */
uint64_t cs_current_thread_id(void);
bool cs_is_main_thread(void);

/** Names the calling thread (as debuggers and crash reports show it): Linux keeps the first 15
 *  bytes (PR_SET_NAME), Apple up to its own limit (pthread_setname_np names only the caller). */
bool cs_thread_set_name(const char *name);

/** Copies the calling thread's name into `name` ("" when unknown; cut to `capacity`). On Linux a
 *  single prctl(2) system call, so async-signal-safe; on Apple pthread_getname_np, which reads
 *  the thread's own structure but is not on POSIX's async-signal-safe list. */
void cs_thread_copy_name(char *name, size_t capacity);

/** True when `address` lies in an image the system ships (libc, the ObjC runtime, Foundation,
 *  the Swift runtime), false for the app's own images. */
bool cs_address_is_in_system_image(uintptr_t address);

/** Image containing `address`: writes its path (or "" when unknown) and load address.
 *  Returns false when no loaded image contains the address. Not for signal handlers. */
bool cs_address_image(uintptr_t address, const char **path, uintptr_t *base);

/** Guards implemented in Swift, which have no Objective-C hooks: their policy lives here, one
 *  atomic cell each, so every thread reads it without a lock. Default CS_POLICY_NEUTRALIZE. */
typedef enum {
    CS_SWIFT_GUARD_ACCESS = 0,   /**< "swift": the [shielded:] accessors */
    CS_SWIFT_GUARD_DECODING = 1, /**< "decoding": lenient Decodable wrappers */
    CS_SWIFT_GUARD_COUNT
} cs_swift_guard;

cs_policy cs_swift_guard_policy(cs_swift_guard guard);
void cs_swift_guard_set_policy(cs_swift_guard guard, cs_policy policy);

#ifdef __cplusplus
}
#endif
#endif
