/*
 * csc_launch.h — the launch-protection work that runs on every start, in C so that `start`
 * stays within its budget (<= 1 ms). The first use of Swift generics, Foundation's
 * Data/UUID and libdispatch costs tens to hundreds of microseconds each in a fresh process;
 * these functions use libc only. None of them runs in a signal handler; none is
 * async-signal-safe.
 *
 * State file format (unchanged since version 1, read by older and newer SDKs alike):
 *
 *     crashshield-launch-state 1
 *     launch_id=<id>                 (optional)
 *     phase=launching|running|exited (optional)
 *     app_version=<text>             (optional)
 *     consecutive_launch_crashes=<0..999999>
 *     attempted_steps=<id>,<id>,...
 *     safe_mode=0|1
 *     checksum=<FNV-1a 64 of every byte above, lowercase hex>
 *
 * Empty lines are skipped, unknown keys are ignored (a newer writer's), anything else that does
 * not match makes the whole file corrupt.
 */
#ifndef CSC_LAUNCH_H
#define CSC_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *launch_id;       /**< NULL when absent */
    const char *phase;           /**< NULL when absent; else "launching", "running" or "exited" */
    const char *app_version;     /**< NULL when absent */
    const char *attempted_steps; /**< comma-separated step ids as stored; NULL when absent */
    int32_t consecutive_launch_crashes;
    bool safe_mode;
    char *storage;               /**< owns the text the fields of a decoded state point into */
} csc_launch_state;

typedef enum {
    CSC_LAUNCH_STATE_ABSENT = 0,  /**< no file (or it cannot be opened): a first launch */
    CSC_LAUNCH_STATE_OK = 1,
    CSC_LAUNCH_STATE_CORRUPT = 2, /**< unreadable, damaged, or out of range: reset the state */
} csc_launch_state_status;

/** Decodes a state file's bytes into `state` (which then owns a copy; free it with
 *  csc_launch_state_free). On anything but OK, `state` is all absent/zero. */
csc_launch_state_status csc_launch_state_decode(const void *bytes, size_t length, csc_launch_state *state);

/** Reads and decodes the state file at `path` (at most 1 MiB; a larger file is corrupt). Never
 *  blocks: the path is opened non-blocking and without following a symlink, and only a regular
 *  file is read. ABSENT when nothing is there; CORRUPT when something else is (a FIFO, a
 *  directory, a symlink, a device) or it cannot be read. */
csc_launch_state_status csc_launch_state_read(const char *path, csc_launch_state *state);

void csc_launch_state_free(csc_launch_state *state);

/** Encodes `state` (storage ignored). Line breaks in every value, and commas in launch_id and
 *  app_version, become '_' so a value can never forge a line or a step. Returns a malloc'd
 *  buffer (free() it) and its length in *length; NULL when out of memory. */
char *csc_launch_state_encode(const csc_launch_state *state, size_t *length);

/** Encodes `state` and replaces the file at `path` atomically (see csc_write_file_atomically). */
bool csc_launch_state_write(const char *path, const csc_launch_state *state);

/** Replaces `path` with `bytes` so that a reader sees either the old or the new content, never
 *  a mix or a partial file, even when this process dies at any point: the bytes go to a new
 *  "<path>.tmp-<pid>-<n>" (O_EXCL | O_NOFOLLOW: no existing entry is ever opened), which is then
 *  swapped with `path` (Linux: renameat2 RENAME_EXCHANGE; Apple: renamex_np RENAME_SWAP; plain
 *  rename(2) when `path` does not exist yet or the file system cannot swap) and the swapped-out
 *  old entry is unlinked. A directory at
 *  `path` is never swapped out: an empty one is removed first, a non-empty one makes the write
 *  fail (false) and nothing is left behind. No fsync: this is atomic against a crash of the
 *  process, not durable against power loss (after which the checksum may reject the file and the
 *  state resets). Swapping instead of renaming over the old file matters on ext4: a rename that
 *  replaces a file makes the kernel allocate and start writing the new file's blocks inside
 *  rename(2) (auto_da_alloc), which costs 0.2-1.5 ms; the swap does not. */
bool csc_write_file_atomically(const char *path, const void *bytes, size_t length);

/** The whole file at `path` in a malloc'd buffer (free() it; one spare byte, set to 0, after
 *  the content) with its length in *length. NULL when it cannot be opened or read, is not a
 *  regular file (a FIFO, directory, device, or a symlink: opened with O_NONBLOCK | O_NOFOLLOW,
 *  so this never blocks) or is larger than `limit` bytes (refused by its size, unread). Cheaper
 *  than FileManager/Data on the start path. */
char *csc_read_file(const char *path, size_t limit, size_t *length);

/** A random (version 4) UUID in lowercase, 36 characters plus NUL, from the kernel's entropy
 *  (Linux: getrandom(2); Apple: arc4random_buf). */
void csc_make_launch_id(char out[37]);

/** True when `directory` holds at least one "report-*.json" file (a pending crash report). */
bool csc_directory_has_reports(const char *directory);

/** What the start path needs of a pending crash report to decide how the last run ended, read
 *  by a scan of the report's bytes in C instead of a full decode: the first JSONDecoder use in a
 *  process costs ~2 ms (Codable's runtime conformance lookups), the scan microseconds.
 *
 *  The scan follows TolerantJSON's rules (a report cut short counts up to its last complete
 *  value), so each field here is what `CrashReport.decode` would give, with one exception: a
 *  wrong type in a field the scan does not look at makes the full decode fail while the scan
 *  still reads the launch fields. Whatever the scan cannot judge the same way as the decoder
 *  (a wanted field of another type, with an escape, too long, or given twice) sets
 *  `needs_full_decode`: decode that report to know. */
typedef enum {
    CSC_GUARD_FRAMES_ABSENT = 0,     /**< no "guard_frames" key in the first crashed_thread object */
    CSC_GUARD_FRAMES_READ = 1,       /**< a complete array of plain names (at most 32, each 1..31 bytes of [a-z0-9_-]) */
    CSC_GUARD_FRAMES_UNREADABLE = 2, /**< anything else (cut short, another type, escapes, a key given twice, a
                                      *   second crashed_thread): decode the report to know */
} csc_guard_frames_status;

typedef struct {
    bool is_report;          /**< a JSON object with a complete top-level string "id" (the decoder requires one) */
    bool needs_full_decode;
    bool has_launch_id;
    bool has_launch_phase;
    bool recovered;          /**< crash.recovered is true (the thread was parked, the process lived on) */
    char launch_id[128];     /**< "" unless has_launch_id */
    char launch_phase[32];   /**< "" unless has_launch_phase */
    /** crashed_thread.guard_frames, the guards the handler found in the crashed thread's frames
     *  (the guard fail-safe reads it instead of decoding the report). It never sets
     *  `needs_full_decode`; its own status says whether the scan could read it: */
    csc_guard_frames_status guard_frames_status;
    /** crashed_thread has a "frames" key (its value possibly cut short): with guard_frames
     *  absent, a report of an older writer whose frames the reader must map itself. */
    bool has_crashed_frames;
    /** CSC_GUARD_FRAMES_READ: the names, comma-separated, in the report's order ("" for none). */
    char guard_frames[256];
} csc_report_launch_fields;

/** Scans a report file's bytes (any bytes: never reads outside them, never fails). */
void csc_report_scan_launch_fields(const void *bytes, size_t length, csc_report_launch_fields *fields);

/** One "report-*.json" entry of a report directory. */
typedef struct {
    char *path;                       /**< malloc'd */
    int64_t modified_ns;              /**< modification time (stat, following a symlink); 0 when unknown */
    char *bytes;                      /**< the content (csc_read_file rules), NULL when not read or unreadable; malloc'd */
    size_t length;
    csc_report_launch_fields fields;  /**< scanned when bytes != NULL */
} csc_pending_report;

/** The "report-*.json" entries of `directory`, oldest first (modification time, then path), in a
 *  malloc'd array of *count entries (NULL and 0 when there are none or the directory cannot be
 *  read). With `read`, each one's content is read (at most `limit` bytes, regular files only,
 *  never blocking) and scanned. Free with csc_pending_reports_free (a caller that keeps a
 *  `bytes` buffer sets the entry's pointer to NULL first). */
csc_pending_report *csc_pending_reports_list(const char *directory, bool read, size_t limit, size_t *count);
/** Ages out and caps a csc_pending_reports_list result (oldest first): the oldest entries beyond
 *  the newest `keep`, then (when `oldest_ns` > 0) every older entry modified before `oldest_ns`
 *  except the newest one, are unlinked from the directory and removed from the array (*count is
 *  updated; the kept entries stay in order). Returns how many files were removed (an entry
 *  already gone counts; one that cannot be unlinked leaves the array all the same). */
size_t csc_pending_reports_prune(csc_pending_report *reports, size_t *count, size_t keep, int64_t oldest_ns);
/** Reads and scans each entry not read yet (the `read` of csc_pending_reports_list). */
void csc_pending_reports_read(csc_pending_report *reports, size_t count, size_t limit);
void csc_pending_reports_free(csc_pending_report *reports, size_t count);

/** Calls `callback(context)` once, on a new detached thread, `nanoseconds` from now (monotonic
 *  clock). Returns false when no thread could be started (the callback then never runs). */
bool csc_run_after(uint64_t nanoseconds, void (*callback)(void *context), void *context);

#ifdef __cplusplus
}
#endif
#endif
