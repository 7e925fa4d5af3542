/*
 * csc_hang.c — the run record and the app-hang watchdog (csc_hang.h), shared by every platform;
 * sampling a thread and reading memory figures are per platform (csc_hang_platform.h).
 *
 * Threads: the watched thread only ever calls csc_hang_heartbeat (one atomic store). Everything
 * else runs on the caller of the start/stop functions or on the watchdog thread. The record is
 * written by the watchdog thread (sign of life, memory, hang), by csc_run_record_set_scope
 * (under g_scope_lock) and by the mark functions (single atomic stores).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "csc_hang_platform.h"
#include "csc_capture.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif
#include <time.h>
#include <unistd.h>

#define CSC_RUN_RECORD_MAGIC "CSRUNREC"
#define CSC_RUN_RECORD_VERSION 2u
/* What the record keeps of a hang: csc_hang_sample up to `threads`, and CSC_HANG_RECORD_THREADS of them. */
#define CSC_RECORD_HANG_BYTES (offsetof(csc_hang_sample, threads) + CSC_HANG_RECORD_THREADS * sizeof(csc_hang_thread))

/* The file's layout (native byte order and alignment: the record is read back on the same
 * device by the same SDK; a record of another version or size is ignored). */
typedef struct {
    char magic[8];
    uint32_t version;
    uint32_t size;
    int64_t pid;
    char launch_id[64];
    char app_version[128];
    char os_version[128];
    uint64_t started_wall_ns;
    _Atomic uint64_t alive_wall_ns;
    _Atomic uint32_t stopped;
    _Atomic uint32_t hang_detection;
    _Atomic uint32_t hang_timeout_ms;
    _Atomic uint32_t hanging; /* 1 once `hang` is complete; 0 while it is written or after it ended */
    _Atomic uint64_t hang_duration_ns;
    uint64_t hang[(CSC_RECORD_HANG_BYTES + 7) / 8]; /* a csc_hang_sample cut after CSC_HANG_RECORD_THREADS threads */
    _Atomic uint64_t memory_sampled_wall_ns;
    _Atomic uint64_t memory_resident_bytes;
    _Atomic uint64_t memory_peak_resident_bytes;
    _Atomic uint64_t memory_footprint_bytes;
    _Atomic uint32_t memory_warnings;
    _Atomic uint64_t memory_last_warning_wall_ns;
    _Atomic uint64_t scope_sequence[2]; /* odd while the slot is written; the larger even one is current */
    uint32_t scope_length[2];
    char scope[2][CSC_SCOPE_JSON_MAX];
} csc_run_record_file;

static csc_run_record_file *_Atomic g_record;
static _Atomic bool g_watching;        /* the watchdog checks heartbeats and writes the record */
static _Atomic bool g_thread_started;  /* the watchdog thread exists in this process */

static uint64_t csc_wall_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

static uint64_t csc_monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

static void csc_copy_field(char *to, size_t capacity, const char *from) {
    size_t i = 0;
    for (; from && from[i] && i + 1 < capacity; i++) to[i] = from[i];
    to[i] = 0;
}

/* ---- scope mirror ------------------------------------------------------------------------ */

static pthread_mutex_t g_scope_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_scope_copy[CSC_SCOPE_JSON_MAX]; /* the last scope, for a record opened later */
static size_t g_scope_copy_length;
static uint64_t g_scope_counter;

static void csc_record_write_scope(csc_run_record_file *record, const char *text, size_t length) {
    uint64_t first = atomic_load(&record->scope_sequence[0]), second = atomic_load(&record->scope_sequence[1]);
    int slot = first <= second ? 0 : 1; /* the older slot */
    uint64_t sequence = ++g_scope_counter * 2;
    atomic_store(&record->scope_sequence[slot], sequence - 1);
    memcpy(record->scope[slot], text, length);
    record->scope[slot][length] = 0;
    record->scope_length[slot] = (uint32_t)length;
    atomic_store(&record->scope_sequence[slot], sequence);
}

void csc_run_record_set_scope(const char *json) {
    size_t length = json ? strlen(json) : 0;
    if (length >= CSC_SCOPE_JSON_MAX) return;
    pthread_mutex_lock(&g_scope_lock);
    if (length) memcpy(g_scope_copy, json, length);
    g_scope_copy[length] = 0;
    g_scope_copy_length = length;
    csc_run_record_file *record = atomic_load(&g_record);
    if (record) csc_record_write_scope(record, g_scope_copy, length);
    pthread_mutex_unlock(&g_scope_lock);
}

/* ---- the record ---------------------------------------------------------------------------- */

/* In a forked child the record (a shared mapping) and the watch are the parent's: the child
 * writes nothing into them (the watchdog thread does not exist there either). */
static void csc_run_record_after_fork_in_child(void) {
    atomic_store(&g_record, NULL);
    atomic_store(&g_watching, false);
    atomic_store(&g_thread_started, false);
}

static pthread_once_t g_fork_handler_once = PTHREAD_ONCE_INIT;
static void csc_run_record_register_fork_handler(void) { pthread_atfork(NULL, NULL, csc_run_record_after_fork_in_child); }

void csc_os_version(char *out, size_t capacity) {
    if (capacity == 0) return;
    out[0] = 0;
#if defined(__APPLE__)
    size_t length = capacity;
    if (sysctlbyname("kern.osproductversion", out, &length, NULL, 0) == 0 && length > 0) {
        out[capacity - 1] = 0;
        return;
    }
#endif
    struct utsname system;
    if (uname(&system) == 0) csc_copy_field(out, capacity, system.release);
}

bool csc_run_record_open(const char *directory, const char *launch_id, const char *app_version) {
    if (directory == NULL) return false;
    char os_version[128];
    csc_os_version(os_version, sizeof os_version);
    pthread_once(&g_fork_handler_once, csc_run_record_register_fork_handler);
    char path[4096], temporary[4096];
    if (snprintf(path, sizeof path, "%s/%s", directory, CSC_RUN_RECORD_FILE) >= (int)sizeof path) return false;
    if (snprintf(temporary, sizeof temporary, "%s.tmp-%ld", path, (long)getpid()) >= (int)sizeof temporary) return false;
    unlink(temporary);
    int fd = open(temporary, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    /* Every block is written now: a store into a page of a shared mapping whose block the file
     * system cannot allocate (a full disk) would raise SIGBUS in the watchdog thread. A disk too
     * full for the record leaves this run without one. */
    static const char zeros[8192];
    size_t written = 0;
    while (written < sizeof(csc_run_record_file)) {
        size_t chunk = sizeof(csc_run_record_file) - written < sizeof zeros ? sizeof(csc_run_record_file) - written : sizeof zeros;
        ssize_t done = write(fd, zeros, chunk);
        if (done < 0 && errno == EINTR) continue;
        if (done <= 0) {
            close(fd);
            unlink(temporary);
            return false;
        }
        written += (size_t)done;
    }
    void *mapping = mmap(NULL, sizeof(csc_run_record_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (mapping == MAP_FAILED) {
        unlink(temporary);
        return false;
    }
    csc_run_record_file *record = mapping;
    record->version = CSC_RUN_RECORD_VERSION;
    record->size = (uint32_t)sizeof(csc_run_record_file);
    record->pid = (int64_t)getpid();
    csc_copy_field(record->launch_id, sizeof record->launch_id, launch_id);
    csc_copy_field(record->app_version, sizeof record->app_version, app_version);
    csc_copy_field(record->os_version, sizeof record->os_version, os_version);
    record->started_wall_ns = csc_wall_ns();
    atomic_store(&record->alive_wall_ns, record->started_wall_ns);
    memcpy(record->magic, CSC_RUN_RECORD_MAGIC, 8); /* last: a record cut short has no magic */
    if (rename(temporary, path) != 0) {
        munmap(mapping, sizeof(csc_run_record_file));
        unlink(temporary);
        return false;
    }
    pthread_mutex_lock(&g_scope_lock);
    if (g_scope_copy_length) csc_record_write_scope(record, g_scope_copy, g_scope_copy_length);
    csc_run_record_file *old = atomic_exchange(&g_record, record);
    pthread_mutex_unlock(&g_scope_lock);
    /* An earlier mapping stays mapped: the watchdog thread may still hold its pointer. */
    (void)old;
    return true;
}

void csc_run_record_mark_stopped(void) {
    csc_run_record_file *record = atomic_load(&g_record);
    if (record) atomic_store(&record->stopped, 1);
}

void csc_run_record_note_memory_warning(void) {
    csc_run_record_file *record = atomic_load(&g_record);
    if (record == NULL) return;
    atomic_fetch_add(&record->memory_warnings, 1);
    atomic_store(&record->memory_last_warning_wall_ns, csc_wall_ns());
}

bool csc_run_record_memory(uint64_t *sampled_wall_ns, uint64_t *resident, uint64_t *peak, uint64_t *footprint, uint32_t *warnings) {
    csc_run_record_file *record = atomic_load(&g_record);
    if (record == NULL) return false;
    *sampled_wall_ns = atomic_load(&record->memory_sampled_wall_ns);
    if (*sampled_wall_ns == 0) return false;
    *resident = atomic_load(&record->memory_resident_bytes);
    *peak = atomic_load(&record->memory_peak_resident_bytes);
    *footprint = atomic_load(&record->memory_footprint_bytes);
    *warnings = atomic_load(&record->memory_warnings);
    return true;
}

/* The record's hang as a whole csc_hang_sample (threads beyond the record's room: none), every
 * count and index bounded, every string terminated; NULL when out of memory. */
static csc_hang_sample *csc_record_hang_read(csc_run_record_file *file) {
    csc_hang_sample *hang = calloc(1, sizeof *hang);
    if (hang == NULL) return NULL;
    memcpy(hang, file->hang, CSC_RECORD_HANG_BYTES);
    if (hang->frame_count > CSC_HANG_MAX_FRAMES) hang->frame_count = CSC_HANG_MAX_FRAMES;
    if (hang->image_count > CSC_HANG_MAX_IMAGES) hang->image_count = CSC_HANG_MAX_IMAGES;
    if (hang->thread_count > CSC_HANG_RECORD_THREADS) hang->thread_count = CSC_HANG_RECORD_THREADS;
    uint32_t unanswered = 0, blocking = 0;
    hang->thread_name[CSC_HANG_THREAD_NAME_BYTES - 1] = 0;
    for (uint32_t i = 0; i < CSC_HANG_MAX_IMAGES; i++) hang->images[i][CSC_HANG_IMAGE_PATH_BYTES - 1] = 0;
    for (uint32_t i = 0; i < hang->frame_count; i++)
        if (hang->frames[i].image >= (int32_t)hang->image_count) hang->frames[i].image = -1;
    for (uint32_t t = 0; t < hang->thread_count; t++) {
        csc_hang_thread *thread = &hang->threads[t];
        thread->name[CSC_HANG_THREAD_NAME_BYTES - 1] = 0;
        if (thread->frame_count > CSC_HANG_MAX_FRAMES) thread->frame_count = CSC_HANG_MAX_FRAMES;
        if (thread->outcome > CSC_HANG_THREAD_SIGNAL_BLOCKED) thread->outcome = CSC_HANG_THREAD_NO_ANSWER;
        if (thread->outcome != CSC_HANG_THREAD_SAMPLED) thread->frame_count = 0;
        unanswered += thread->outcome == CSC_HANG_THREAD_NO_ANSWER;
        blocking += thread->outcome == CSC_HANG_THREAD_SIGNAL_BLOCKED;
        for (uint32_t i = 0; i < thread->frame_count; i++)
            if (thread->frames[i].image >= (int32_t)hang->image_count) thread->frames[i].image = -1;
    }
    hang->threads_unanswered = unanswered; /* of the threads kept */
    hang->threads_blocking = blocking;
    hang->duration_ns = atomic_load(&file->hang_duration_ns);
    return hang;
}

/* Stores `sample` as the record's hang: every field before the threads, and the first
 * CSC_HANG_RECORD_THREADS threads; thread_count and threads_left_out say what was kept. */
static void csc_record_hang_write(csc_run_record_file *record, const csc_hang_sample *sample) {
    uint32_t kept = sample->thread_count < CSC_HANG_RECORD_THREADS ? sample->thread_count : CSC_HANG_RECORD_THREADS;
    uint32_t left_out = sample->thread_count - kept;
    unsigned char *to = (unsigned char *)record->hang;
    memcpy(to, sample, offsetof(csc_hang_sample, threads) + kept * sizeof(csc_hang_thread));
    memcpy(to + offsetof(csc_hang_sample, thread_count), &kept, sizeof kept);
    memcpy(to + offsetof(csc_hang_sample, threads_left_out), &left_out, sizeof left_out);
}

/* `length` bytes at `offset` of `fd` into `to`; false on an error or a short file. */
static bool csc_read_at(int fd, void *to, size_t offset, size_t length) {
    size_t done = 0;
    while (done < length) {
        ssize_t got = pread(fd, (char *)to + done, length - done, (off_t)(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        done += (size_t)got;
    }
    return true;
}

bool csc_run_record_read(const char *path, csc_run_record_info *info) {
    memset(info, 0, sizeof *info);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat status;
    if (fstat(fd, &status) != 0 || !S_ISREG(status.st_mode) || status.st_size != (off_t)sizeof(csc_run_record_file)) {
        close(fd);
        return false;
    }
    /* Only the parts used are read (a start reads this file: the hang block only when the run was
     * hanging, the current scope slot up to its length), into a buffer of the file's layout
     * whose other pages are never touched. */
    csc_run_record_file *file = malloc(sizeof *file);
    if (file == NULL) {
        close(fd);
        return false;
    }
    const size_t fixed_end = offsetof(csc_run_record_file, hang);
    const size_t tail_begin = offsetof(csc_run_record_file, memory_sampled_wall_ns);
    const size_t tail_end = offsetof(csc_run_record_file, scope);
    bool ok = csc_read_at(fd, file, 0, fixed_end) && memcmp(file->magic, CSC_RUN_RECORD_MAGIC, 8) == 0 &&
              file->version == CSC_RUN_RECORD_VERSION && file->size == (uint32_t)sizeof *file &&
              csc_read_at(fd, (char *)file + tail_begin, tail_begin, tail_end - tail_begin);
    if (ok && atomic_load(&file->hanging) == 1)
        ok = csc_read_at(fd, (char *)file + fixed_end, fixed_end, tail_begin - fixed_end);
    int best = -1;
    uint64_t best_sequence = 0;
    for (int slot = 0; ok && slot < 2; slot++) {
        uint64_t sequence = atomic_load(&file->scope_sequence[slot]);
        if (sequence == 0 || (sequence & 1) || file->scope_length[slot] >= CSC_SCOPE_JSON_MAX) continue;
        if (sequence > best_sequence) {
            best = slot;
            best_sequence = sequence;
        }
    }
    if (ok && best >= 0 && file->scope_length[best] > 0)
        ok = csc_read_at(fd, file->scope[best], offsetof(csc_run_record_file, scope) + (size_t)best * CSC_SCOPE_JSON_MAX,
                         file->scope_length[best]);
    close(fd);
    if (!ok) {
        free(file);
        return false;
    }
    file->launch_id[sizeof file->launch_id - 1] = 0;
    file->app_version[sizeof file->app_version - 1] = 0;
    file->os_version[sizeof file->os_version - 1] = 0;
    info->storage = (char *)file;
    info->launch_id = file->launch_id;
    info->app_version = file->app_version;
    info->os_version = file->os_version;
    info->pid = file->pid;
    info->started_wall_ns = file->started_wall_ns;
    info->alive_wall_ns = atomic_load(&file->alive_wall_ns);
    info->stopped = atomic_load(&file->stopped) != 0;
    info->hang_detection = atomic_load(&file->hang_detection) != 0;
    info->hang_timeout_ms = atomic_load(&file->hang_timeout_ms);
    info->hanging = atomic_load(&file->hanging) == 1;
    if (info->hanging) info->hang = csc_record_hang_read(file);
    if (info->hanging && info->hang == NULL) info->hanging = false;
    info->memory_sampled_wall_ns = atomic_load(&file->memory_sampled_wall_ns);
    info->memory_resident_bytes = atomic_load(&file->memory_resident_bytes);
    info->memory_peak_resident_bytes = atomic_load(&file->memory_peak_resident_bytes);
    info->memory_footprint_bytes = atomic_load(&file->memory_footprint_bytes);
    info->memory_warnings = atomic_load(&file->memory_warnings);
    info->memory_last_warning_wall_ns = atomic_load(&file->memory_last_warning_wall_ns);
    if (best >= 0 && file->scope_length[best] > 0) {
        file->scope[best][file->scope_length[best]] = 0;
        info->scope_json = file->scope[best];
    }
    return true;
}

void csc_run_record_info_free(csc_run_record_info *info) {
    free(info->hang);
    free(info->storage);
    memset(info, 0, sizeof *info);
}

/* ---- the watchdog ---------------------------------------------------------------------------- */

static _Atomic uint64_t g_last_beat_ns;     /* monotonic time of the last heartbeat; 0: none yet */
static _Atomic uint32_t g_timeout_ms;
static _Atomic uint32_t g_detected;
static _Atomic uint32_t g_generation;       /* changed by every start and stop: a hang in progress is forgotten */
static _Atomic(csc_hang_callback) g_callback;
static uint64_t g_watched_thread_id;
static bool g_can_sample;
static pthread_mutex_t g_start_lock = PTHREAD_MUTEX_INITIALIZER;
/* Only the watchdog thread touches these. */
static csc_hang_sample g_sample;
static bool g_hanging;
static uint64_t g_hang_beat_ns;
static uint32_t g_hang_generation;

void csc_hang_heartbeat(void) { atomic_store_explicit(&g_last_beat_ns, csc_monotonic_ns(), memory_order_relaxed); }

uint32_t csc_hang_heartbeat_interval_ms(uint32_t timeout_ms) { return timeout_ms / 8 < 10 ? 10 : timeout_ms / 8; }

uint32_t csc_hang_detected_count(void) { return atomic_load(&g_detected); }

void csc_hang_watch_this_thread(void) { g_watched_thread_id = csc_hang_platform_watch_this_thread(); }

void csc_hang_fault_recover(int sig) { csc_hang_platform_fault_recover(sig); }

bool csc_memory_sample(uint64_t *resident, uint64_t *peak, uint64_t *footprint) {
    *resident = *peak = *footprint = 0;
    return csc_hang_platform_memory(resident, peak, footprint);
}

/* Resolves the images of `frames` (dladdr, canonical paths) into g_sample's image table. The
 * first frame of a stack is where the thread was (`first_is_pc`); the others are return addresses. */
static void csc_hang_resolve(csc_hang_frame *frames, uint32_t count) {
    for (uint32_t i = 0; i < count; i++) {
        csc_hang_frame *frame = &frames[i];
        frame->image = -1;
        Dl_info found;
        /* A return address points after its call: look up the call (address - 1). */
        uintptr_t lookup = (uintptr_t)frame->address - (i > 0 ? 1 : 0);
        if (frame->address == 0 || dladdr((void *)lookup, &found) == 0 || found.dli_fname == NULL || found.dli_fbase == NULL) continue;
        uint32_t image = 0;
        for (; image < g_sample.image_count; image++)
            if (strcmp(g_sample.images[image], found.dli_fname) == 0) break;
        if (image == g_sample.image_count) {
            if (image >= CSC_HANG_MAX_IMAGES) continue;
            /* The canonical path (the loader may name the executable by the path it was started
             * with, through symbolic links): the form in-app rules and symbolication compare. */
            static char canonical[PATH_MAX];
            const char *path = realpath(found.dli_fname, canonical) ? canonical : found.dli_fname;
            csc_copy_field(g_sample.images[image], CSC_HANG_IMAGE_PATH_BYTES, path);
            g_sample.image_count++;
        }
        frame->image = (int32_t)image;
        frame->offset = frame->address - (uint64_t)(uintptr_t)found.dli_fbase;
    }
}

static _Atomic uint64_t g_last_sample_cost_ns;
static _Atomic uint32_t g_last_sample_threads;

bool csc_hang_last_sample_cost(uint64_t *ns, uint32_t *threads) {
    *ns = atomic_load(&g_last_sample_cost_ns);
    *threads = atomic_load(&g_last_sample_threads);
    return *ns != 0;
}

/* Fills g_sample: the watched thread's stack, then the other threads' (one at a time), then
 * every frame's image (dladdr here, on the watchdog thread, once no thread is stopped). */
static void csc_hang_take_sample(uint64_t now_wall, uint64_t age_ns) {
    uint64_t began = csc_monotonic_ns();
    memset(&g_sample, 0, sizeof g_sample);
    g_sample.thread_id = g_watched_thread_id;
    g_sample.started_wall_ns = now_wall - age_ns;
    uint64_t frames[CSC_HANG_MAX_FRAMES];
    uint32_t count = g_can_sample ? csc_hang_platform_sample(frames, CSC_HANG_MAX_FRAMES, 200) : 0;
    g_sample.sampled = count > 0;
    for (uint32_t i = 0; i < count; i++) g_sample.frames[i].address = frames[i];
    g_sample.frame_count = count;
    csc_hang_platform_watched_name(g_sample.thread_name, sizeof g_sample.thread_name);
    if (g_can_sample) csc_hang_platform_sample_others(&g_sample, CSC_HANG_THREAD_ANSWER_MS);
    if (g_sample.thread_count > CSC_HANG_MAX_THREADS) g_sample.thread_count = CSC_HANG_MAX_THREADS;
    /* The watched thread's images first: they are the ones kept when the table is full. */
    csc_hang_resolve(g_sample.frames, g_sample.frame_count);
    for (uint32_t t = 0; t < g_sample.thread_count; t++) csc_hang_resolve(g_sample.threads[t].frames, g_sample.threads[t].frame_count);
    atomic_store(&g_last_sample_threads, g_sample.thread_count - g_sample.threads_unanswered - g_sample.threads_blocking);
    atomic_store(&g_last_sample_cost_ns, csc_monotonic_ns() - began);
}

static void csc_hang_tick(csc_run_record_file *record, uint64_t *last_memory_ns) {
    uint64_t now = csc_monotonic_ns(), now_wall = csc_wall_ns();
    if (record) atomic_store(&record->alive_wall_ns, now_wall);
    if (*last_memory_ns == 0 || now - *last_memory_ns >= (uint64_t)CSC_MEMORY_SAMPLE_MS * 1000000ull) {
        *last_memory_ns = now;
        uint64_t resident = 0, peak = 0, footprint = 0;
        if (record && csc_hang_platform_memory(&resident, &peak, &footprint)) {
            atomic_store(&record->memory_resident_bytes, resident);
            atomic_store(&record->memory_peak_resident_bytes, peak);
            atomic_store(&record->memory_footprint_bytes, footprint);
            atomic_store(&record->memory_sampled_wall_ns, now_wall);
        }
    }
    uint32_t timeout_ms = atomic_load(&g_timeout_ms);
    uint64_t beat = atomic_load_explicit(&g_last_beat_ns, memory_order_relaxed);
    uint32_t generation = atomic_load(&g_generation);
    if (g_hanging && generation != g_hang_generation) {
        g_hanging = false;
        if (record) atomic_store(&record->hanging, 0);
    }
    if (!atomic_load(&g_watching) || timeout_ms == 0 || beat == 0) return;
    if (g_hanging) {
        if (beat != g_hang_beat_ns) {
            /* Answered again: the hang lasted from the last heartbeat before it to this one. */
            g_hanging = false;
            if (record) atomic_store(&record->hanging, 0);
            g_sample.duration_ns = beat - g_hang_beat_ns;
            csc_hang_callback callback = atomic_load(&g_callback);
            if (callback) callback(&g_sample);
        } else if (record) {
            atomic_store(&record->hang_duration_ns, now - g_hang_beat_ns);
        }
        return;
    }
    if (now <= beat || now - beat < (uint64_t)timeout_ms * 1000000ull) return;
    g_hanging = true;
    g_hang_beat_ns = beat;
    g_hang_generation = generation;
    atomic_fetch_add(&g_detected, 1);
    csc_hang_take_sample(now_wall, now - beat);
    if (record) {
        atomic_store(&record->hanging, 0);
        csc_record_hang_write(record, &g_sample);
        atomic_store(&record->hang_duration_ns, csc_monotonic_ns() - beat);
        atomic_store(&record->hanging, 1);
    }
}

/* csc_run_record_open_later's arguments, taken by the watchdog thread under g_start_lock. */
static bool g_open_pending;
static void (*g_setup)(void); /* csc_hang_start's setup, not yet called */
/* The start's thread as csc_hang_start found it: the setup runs on a thread of its own with this
 * signal mask and name, so the threads the setup creates get what they would have got from the
 * start's thread, not the watchdog's (every signal blocked: a crash signal on such a thread would
 * bypass the handler). Under g_start_lock. */
static sigset_t g_start_mask;
static char g_start_name[64];

typedef struct {
    void (*setup)(void);
    sigset_t mask;
    char name[64];
} csc_setup_call;

static void *csc_setup_main(void *argument) {
    csc_setup_call call = *(csc_setup_call *)argument;
    free(argument);
    pthread_sigmask(SIG_SETMASK, &call.mask, NULL);
    if (call.name[0]) csc_hang_platform_set_thread_name(call.name);
    call.setup();
    return NULL;
}

/* Runs `setup` on a detached thread of the start thread's mask and name; on this thread (the
 * watchdog) only if no thread can be started. */
static void csc_run_setup(void (*setup)(void), const sigset_t *mask, const char *name) {
    csc_setup_call *call = malloc(sizeof *call);
    if (call != NULL) {
        call->setup = setup;
        call->mask = *mask;
        csc_copy_field(call->name, sizeof call->name, name);
        pthread_attr_t attributes;
        pthread_attr_init(&attributes);
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        pthread_t thread;
        int failed = pthread_create(&thread, &attributes, csc_setup_main, call);
        pthread_attr_destroy(&attributes);
        if (failed == 0) return;
        free(call);
    }
    setup();
}
static char g_open_directory[4096], g_open_launch_id[64], g_open_app_version[128];

bool csc_run_record_open_later(const char *directory, const char *launch_id, const char *app_version) {
    if (directory == NULL || strlen(directory) >= sizeof g_open_directory) return false;
    pthread_mutex_lock(&g_start_lock);
    csc_copy_field(g_open_directory, sizeof g_open_directory, directory);
    csc_copy_field(g_open_launch_id, sizeof g_open_launch_id, launch_id);
    csc_copy_field(g_open_app_version, sizeof g_open_app_version, app_version);
    g_open_pending = true;
    pthread_mutex_unlock(&g_start_lock);
    return true;
}

static void csc_hang_open_pending_record(void) {
    pthread_mutex_lock(&g_start_lock);
    void (*setup)(void) = g_setup;
    g_setup = NULL;
    sigset_t start_mask = g_start_mask;
    char start_name[sizeof g_start_name];
    memcpy(start_name, g_start_name, sizeof start_name);
    if (g_open_pending) {
        g_open_pending = false;
        (void)csc_run_record_open(g_open_directory, g_open_launch_id, g_open_app_version);
        csc_run_record_file *record = atomic_load(&g_record);
        uint32_t timeout_ms = atomic_load(&g_timeout_ms);
        if (record) {
            atomic_store(&record->hang_detection, timeout_ms ? 1u : 0u);
            atomic_store(&record->hang_timeout_ms, timeout_ms);
        }
    }
    pthread_mutex_unlock(&g_start_lock);
    if (setup) csc_run_setup(setup, &start_mask, start_name);
}

static void *csc_hang_main(void *unused) {
    (void)unused;
    csc_hang_platform_name_thread();
    uint64_t last_memory_ns = 0;
    for (bool first = true;; first = false) {
        uint32_t timeout_ms = atomic_load(&g_timeout_ms);
        uint32_t tick_ms = timeout_ms == 0 ? 1000 : timeout_ms / 10;
        if (tick_ms > 250) tick_ms = 250;
        if (tick_ms < 5) tick_ms = 5;
        /* The first tick (the record's file, the first memory sample) CSC_HANG_FIRST_TICK_MS after
         * the start: after the start has returned, so its file work never competes with it. */
        if (first) tick_ms = CSC_HANG_FIRST_TICK_MS;
        struct timespec pause = {(time_t)(tick_ms / 1000), (long)(tick_ms % 1000) * 1000000L};
        while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {}
        if (!atomic_load(&g_watching)) continue;
        csc_hang_open_pending_record();
        csc_hang_tick(atomic_load(&g_record), &last_memory_ns);
    }
    return NULL;
}

bool csc_hang_start(uint32_t timeout_ms, csc_hang_callback callback, void (*setup)(void)) {
    pthread_mutex_lock(&g_start_lock);
    atomic_store(&g_callback, callback);
    g_setup = setup;
    pthread_sigmask(SIG_BLOCK, NULL, &g_start_mask);
    csc_hang_platform_thread_name(g_start_name, sizeof g_start_name);
    atomic_store(&g_timeout_ms, timeout_ms);
    atomic_store(&g_last_beat_ns, 0); /* armed again by the next heartbeat */
    atomic_fetch_add(&g_generation, 1);
    csc_run_record_file *record = atomic_load(&g_record);
    if (record) {
        atomic_store(&record->hang_detection, timeout_ms ? 1u : 0u);
        atomic_store(&record->hang_timeout_ms, timeout_ms);
    }
    bool ok = true;
    atomic_store(&g_watching, true); /* before the thread starts: its first tick sees it */
    if (!atomic_load(&g_thread_started)) {
        g_can_sample = csc_hang_platform_prepare();
        pthread_attr_t attributes;
        pthread_attr_init(&attributes);
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        sigset_t all, saved;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved); /* the thread never takes one of the app's signals */
        pthread_t thread;
        ok = pthread_create(&thread, &attributes, csc_hang_main, NULL) == 0;
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        pthread_attr_destroy(&attributes);
        if (ok) atomic_store(&g_thread_started, true);
    }
    if (!ok) atomic_store(&g_watching, false);
    pthread_mutex_unlock(&g_start_lock);
    return ok;
}

void csc_hang_stop(void) {
    pthread_mutex_lock(&g_start_lock);
    atomic_store(&g_watching, false);
    atomic_store(&g_timeout_ms, 0);
    atomic_fetch_add(&g_generation, 1);
    pthread_mutex_unlock(&g_start_lock);
}
