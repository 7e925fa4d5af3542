/*
 * csc_hang.h — what the next start needs to know about a run that ended without a crash report,
 * and the app-hang watchdog that feeds it.
 *
 * The run record: "<directory>/run-record", a fixed-size file of this run mapped shared into
 * memory (mmap MAP_SHARED), so every store into it reaches the file through the page cache
 * without a system call and survives the process however it ends (SIGKILL, the out-of-memory
 * killer, a watchdog kill); only a power loss or a kernel crash can lose the last changes. It
 * holds: the run's launch id, app and OS version and start time; the last sign of life (written
 * by the watchdog thread every tick); whether stop() ended the SDK's watch; the app hang in
 * progress (the watched thread's stack, when it began, how long so far); the last memory
 * figures sampled; and the app's scope (mirrored from csc_set_scope_json: two slots, each with a
 * sequence number that is odd while it is written, so a write cut short by a kill leaves the
 * other slot readable).
 *
 * The watchdog: one thread (every signal blocked) that runs its first tick CSC_HANG_FIRST_TICK_MS
 * after the start and then every tick
 * (a tenth of the hang timeout, at most 250 ms; 1 s without hang detection), writes the sign of
 * life, samples memory every CSC_MEMORY_SAMPLE_MS, and checks the watched thread's heartbeat.
 * The watched thread is the one that called csc_hang_watch_this_thread() (the start's caller: the
 * main thread of an app). It answers by calling csc_hang_heartbeat(), one atomic store of a
 * monotonic time (no allocation, no lock, no system call where the clock is in the vDSO /
 * commpage): the Swift start schedules a main-run-loop timer that calls it every eighth of the
 * timeout; an app whose main thread runs another loop calls it from that loop. Detection is
 * armed by the first heartbeat, so a program that never answers is never called hung.
 *
 * When the last heartbeat is older than the timeout, the watchdog samples the watched thread's
 * stack (per platform: a signal to that thread on Linux, thread_suspend and its registers on
 * Darwin), then the process's other threads one at a time the same way (at most
 * CSC_HANG_MAX_THREADS, never the watchdog itself; a thread that does not answer within
 * CSC_HANG_THREAD_ANSWER_MS is listed without a stack), resolves each frame's image (dladdr, on
 * the watchdog thread, after every thread has been let go), stores all of it in the record (the
 * watched thread and the first CSC_HANG_RECORD_THREADS other threads: the record says how many it
 * left out), and marks the hang. Every buffer is static (allocated with the process); the signal
 * handler on Linux writes only into a static frame buffer. When a heartbeat comes again the hang has
 * ended: the record's hang is cleared and the callback is called on the watchdog thread with
 * what was sampled and the duration (between the last heartbeat before and the first after).
 * A hang the process does not survive stays in the record for the next start (a fatal hang).
 *
 * Nothing here runs in the crash handler except csc_hang_fault_recover and csc_run_record_memory
 * (async-signal-safe): a crash report carries the last memory sample as process.memory.
 * None of these functions is async-signal-safe unless it says so.
 */
#ifndef CSC_HANG_H
#define CSC_HANG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CSC_RUN_RECORD_FILE "run-record"
#define CSC_HANG_MAX_FRAMES 64
#define CSC_HANG_MAX_IMAGES 32
#define CSC_HANG_IMAGE_PATH_BYTES 1024
/** Other threads sampled per hang (besides the watched one); more are counted, not sampled. */
#define CSC_HANG_MAX_THREADS 32
/** Other threads the run record keeps for a fatal hang (the first ones sampled); the rest of a
 *  sample is counted in threads_left_out. The record is rewritten whole at every start, so its
 *  size is paid by every launch: ~1.6 KiB per thread. */
#define CSC_HANG_RECORD_THREADS 16
#define CSC_HANG_THREAD_NAME_BYTES 64
/** How long the watchdog waits for another thread to start answering its sample (ms): a thread
 *  the scheduler does not run within it (a machine under heavy load) is listed without a stack.
 *  Only a thread that neither answers nor blocks the signal costs the whole wait (at most 32 of
 *  them: 3.2 s of the watchdog thread, once per hang). */
#define CSC_HANG_THREAD_ANSWER_MS 100u
/** How long after csc_hang_start the watchdog's first tick (the run record's file, the first
 *  memory sample) comes (ms): after the start has returned. */
#define CSC_HANG_FIRST_TICK_MS 20u
/** How often memory is sampled (ms). */
#define CSC_MEMORY_SAMPLE_MS 1000u

typedef struct {
    uint64_t address;
    uint64_t offset; /**< address minus the image's load address; valid when image >= 0 */
    int32_t image;   /**< index into the hang's image paths; -1: unknown */
} csc_hang_frame;

/** What sampling another thread gave (csc_hang_thread.outcome). */
enum {
    CSC_HANG_THREAD_NO_ANSWER = 0,      /**< did not answer in time (Linux), could not be suspended (Darwin) */
    CSC_HANG_THREAD_SAMPLED = 1,
    CSC_HANG_THREAD_SIGNAL_BLOCKED = 2, /**< Linux: blocks the sampling signal (so it was not sent) */
};

/** Another thread of the process as sampled during a hang. */
typedef struct {
    uint64_t thread_id;        /**< Linux: the tid; Darwin: the 64-bit thread id (pthread_threadid_np's) */
    uint32_t frame_count;
    uint32_t outcome;          /**< CSC_HANG_THREAD_*: only SAMPLED has frames */
    char name[CSC_HANG_THREAD_NAME_BYTES]; /**< "" when it has none */
    csc_hang_frame frames[CSC_HANG_MAX_FRAMES];
} csc_hang_thread;

/** A hang as sampled: the watched thread's frames (innermost first), the other threads', their
 *  images (one table for all), and times. `threads` is last: the run record keeps the fields
 *  before it and the first CSC_HANG_RECORD_THREADS entries. */
typedef struct {
    uint64_t thread_id;
    uint64_t started_wall_ns;  /**< wall clock of the last heartbeat before the hang */
    uint64_t duration_ns;      /**< so far (in the record), or until the hang ended (callback) */
    uint32_t frame_count;
    uint32_t image_count;
    bool sampled;              /**< false: the stack could not be taken (frame_count 0) */
    bool threads_listed;       /**< false: the other threads could not be listed (none sampled) */
    char thread_name[CSC_HANG_THREAD_NAME_BYTES]; /**< the watched thread's name, "" when unknown */
    csc_hang_frame frames[CSC_HANG_MAX_FRAMES];
    char images[CSC_HANG_MAX_IMAGES][CSC_HANG_IMAGE_PATH_BYTES];
    uint32_t threads_found;        /**< other threads the process had (the watchdog not counted) */
    uint32_t thread_count;         /**< entries in `threads` */
    uint32_t threads_unanswered;   /**< entries with outcome CSC_HANG_THREAD_NO_ANSWER */
    uint32_t threads_beyond_limit; /**< found beyond CSC_HANG_MAX_THREADS: not sampled, not listed */
    uint32_t threads_left_out;     /**< read from a record: sampled but not kept (no room in the record) */
    uint32_t threads_blocking;     /**< entries with outcome CSC_HANG_THREAD_SIGNAL_BLOCKED */
    csc_hang_thread threads[CSC_HANG_MAX_THREADS];
} csc_hang_sample;

/** What a run record says about its run (csc_run_record_read). Strings point into `storage`. */
typedef struct {
    const char *launch_id;
    const char *app_version;
    const char *os_version;
    int64_t pid;
    uint64_t started_wall_ns;
    uint64_t alive_wall_ns;       /**< last sign of life (watchdog tick); 0 when the watchdog never ran */
    bool stopped;                 /**< stop() ended the SDK's watch of that run */
    bool hanging;                 /**< a hang was in progress at the last sign of life */
    bool hang_detection;          /**< the run watched for hangs */
    uint32_t hang_timeout_ms;
    uint64_t memory_sampled_wall_ns; /**< 0: never sampled */
    uint64_t memory_resident_bytes;
    uint64_t memory_peak_resident_bytes;
    uint64_t memory_footprint_bytes; /**< Apple's phys_footprint; 0 where there is none */
    uint32_t memory_warnings;
    uint64_t memory_last_warning_wall_ns;
    const char *scope_json;       /**< NULL when the run published none */
    csc_hang_sample *hang;        /**< valid when `hanging` (its own allocation) */
    char *storage;
} csc_run_record_info;

/** Reads and validates the run record at `path` (never blocks: O_NONBLOCK | O_NOFOLLOW, regular
 *  files only). False when there is none or it is not a record of this format. Free with
 *  csc_run_record_info_free. */
bool csc_run_record_read(const char *path, csc_run_record_info *info);
void csc_run_record_info_free(csc_run_record_info *info);

/** Creates this run's record in `directory` (a new file, every block written, renamed over the
 *  old one, which must have been read before) and maps it; the OS version is csc_os_version's.
 *  The scope published so far is copied in. False when the file cannot be created or mapped (no
 *  record this run). A second call replaces the first mapping. */
bool csc_run_record_open(const char *directory, const char *launch_id, const char *app_version);
/** csc_run_record_open on the watchdog thread, at its next tick (before the heartbeat check), so
 *  the start does not pay for the file: the arguments are copied. False when one is too long. */
bool csc_run_record_open_later(const char *directory, const char *launch_id, const char *app_version);
/** The OS version the record keeps (Linux: the kernel release; Darwin: kern.osproductversion,
 *  else the kernel release), NUL-terminated, cut to `capacity` - 1 bytes. */
void csc_os_version(char *out, size_t capacity);
/** Marks that stop() ended the SDK's watch (the next start reports no abnormal exit for it). */
void csc_run_record_mark_stopped(void);
/** Mirrors the app's scope into the record (called by csc_set_scope_json, under its lock). */
void csc_run_record_set_scope(const char *json);
/** A memory warning the platform sent (Apple: UIApplicationDidReceiveMemoryWarning, the
 *  dispatch memory-pressure source): counted in the record with its time. */
void csc_run_record_note_memory_warning(void);

typedef void (*csc_hang_callback)(const csc_hang_sample *hang);

/** Starts the watchdog thread (once per process; later calls change the settings). `timeout_ms`
 *  0: no hang detection (the thread still writes the sign of life and samples memory).
 *  `callback` is called on the watchdog thread when a hang ends; `setup` (may be NULL) once,
 *  started by the watchdog's first tick after this call, on a thread of its own that has the
 *  calling thread's signal mask and name (work the start need not wait for: the main run loop's
 *  heartbeat timer, creating threads, which then inherit what they would from the caller; on the
 *  watchdog thread itself only when no thread can be created). False when the watchdog thread
 *  cannot be started. */
bool csc_hang_start(uint32_t timeout_ms, csc_hang_callback callback, void (*setup)(void));
/** Stops watching (the thread stays, idle, for a later start); clears a hang in progress. */
void csc_hang_stop(void);
/** Makes the calling thread the watched one (before csc_hang_start). */
void csc_hang_watch_this_thread(void);
/** The watched thread answers. Async-signal-safe: one clock read and one atomic store. */
void csc_hang_heartbeat(void);
/** The heartbeat interval the start's run-loop timer uses for `timeout_ms` (an eighth of it,
 *  at least 10 ms). */
uint32_t csc_hang_heartbeat_interval_ms(uint32_t timeout_ms);
/** Memory now: resident bytes (Linux /proc/self/statm, Darwin task_info), peak resident, and
 *  the footprint (Darwin phys_footprint; 0 elsewhere). False when unknown. */
bool csc_memory_sample(uint64_t *resident, uint64_t *peak, uint64_t *footprint);

/** For the crash handler: the last memory figures the watchdog sampled into this run's record
 *  (wall time of the sample, resident and peak bytes, Apple's footprint or 0, memory warnings).
 *  False when none was sampled. Async-signal-safe: atomic loads from the mapping. */
bool csc_run_record_memory(uint64_t *sampled_wall_ns, uint64_t *resident, uint64_t *peak, uint64_t *footprint, uint32_t *warnings);

/** For the crash handler: a fault (SIGSEGV/SIGBUS) on the watched thread while it walks its own
 *  stack for a hang sample resumes the sample (does not return); otherwise returns.
 *  Async-signal-safe. */
void csc_hang_fault_recover(int sig);

/** Test seam: the number of hangs detected in this process. */
uint32_t csc_hang_detected_count(void);
/** For the benchmark: how long the last hang's sampling took on the watchdog thread (ns: every
 *  thread's stack and the images), and how many other threads it sampled (answered). False
 *  before any. */
bool csc_hang_last_sample_cost(uint64_t *ns, uint32_t *threads);

#ifdef __cplusplus
}
#endif
#endif
