/*
 * cs_incidents.c — recording, dedupe, rate limit and delivery of guard incidents.
 *
 * Invariants:
 * - cs_incident_record() never takes a lock for a repeated fingerprint: it walks the stack,
 *   hashes, and increments an atomic counter. Only deliveries (first occurrences and rate-limited
 *   count updates) take the queue mutex, and never while calling the callback.
 * - `recorded` and the per-fingerprint counts are exact under any concurrency; deliveries may be
 *   dropped when the queue is full, counts never are.
 * - Nothing here touches the Objective-C or Swift runtime.
 * - The end (exit, stop): once g_queue.ended is set no callback starts and nothing is queued; what
 *   was queued is dropped and counted in g_dropped. The delivery thread only calls the callback
 *   after it saw ended == false under the lock, so cs_incidents_end_delivery() needs to wait for
 *   at most the one call that was already running (g_queue.delivering).
 * - Forks: the queue belongs to the process whose delivery thread serves it. The atfork handlers
 *   hold g_queue.lock across fork(), so the child never inherits it held; the child empties the
 *   inherited queue (dropped, counted) and starts its own delivery thread on its first enqueue.
 */
#include "cs_incidents.h"
#include "cs_images.h"

#include <execinfo.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#pragma mark - Globals

#define CS_FINGERPRINT_TABLE_SIZE 4096u /* power of two */
#define CS_QUEUE_CAPACITY 256u
#define CS_GUARD_COUNTER_SLOTS 32u

typedef struct {
    _Atomic uint64_t fingerprint; /* 0 = empty */
    _Atomic uint64_t count;
    _Atomic uint64_t last_delivery_ns;
} cs_fingerprint_slot;

typedef struct {
    _Atomic(const char *) guard_name;
    _Atomic uint64_t count;
} cs_guard_counter;

static cs_fingerprint_slot g_fingerprints[CS_FINGERPRINT_TABLE_SIZE];
static cs_guard_counter g_guard_counters[CS_GUARD_COUNTER_SLOTS];
static _Atomic uint64_t g_recorded;
static _Atomic uint64_t g_fingerprint_count;
static _Atomic uint64_t g_delivered;
static _Atomic uint64_t g_dropped;
static _Atomic uint64_t g_untracked;
static _Atomic uint64_t g_rate_limit_ns = 1000000000ull;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t has_work;
    pthread_cond_t drained;
    cs_incident items[CS_QUEUE_CAPACITY];
    uint32_t head, count;
    bool delivering; /* the delivery thread is inside the callback */
    bool thread_started;
    bool ended;      /* cs_incidents_end_delivery() ran and no resume followed: nothing is delivered */
    pthread_t thread; /* valid while thread_started */
    cs_incident_callback callback;
    void *context;
} g_queue = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .has_work = PTHREAD_COND_INITIALIZER,
    .drained = PTHREAD_COND_INITIALIZER,
};

static struct {
    cs_breadcrumb slots[CS_BREADCRUMB_CAPACITY];
    _Atomic uint64_t seq_lock[CS_BREADCRUMB_CAPACITY]; /* odd while a writer is inside the slot */
    _Atomic uint64_t next_sequence;
} g_breadcrumbs;

static _Thread_local int t_canary_depth;
static _Thread_local uint64_t t_canary_hits;

static pthread_once_t g_warm_once = PTHREAD_ONCE_INIT;
static pthread_once_t g_process_hooks_once = PTHREAD_ONCE_INIT;
static _Atomic bool g_exit_ended; /* the exit handler ran in this process */

#pragma mark - Private

static uint64_t cs_now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void cs_warm_up(void) {
    /* glibc's backtrace() loads libgcc_s on first use; do it once, early, not inside a hook. */
    void *frames[2];
    (void)backtrace(frames, 2);
}

static uint64_t cs_fnv1a(uint64_t hash, const void *data, size_t length) {
    const unsigned char *bytes = data;
    for (size_t i = 0; i < length; i++) {
        hash ^= bytes[i];
        hash *= 0x100000001b3ull;
    }
    return hash;
}

static uint64_t cs_fnv1a_string(uint64_t hash, const char *text) {
    return text ? cs_fnv1a(hash, text, strlen(text)) : hash;
}

static void cs_copy_name(char *dst, size_t capacity, const char *src) {
    if (!src) {
        dst[0] = 0;
        return;
    }
    size_t n = strnlen(src, capacity - 1);
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* Frames above the hook: the stack starts at the caller's frame when it can be found. */
static uint8_t cs_capture_frames(const void *caller, uintptr_t *out) {
    void *raw[CS_INCIDENT_MAX_FRAMES + 8];
    int n = backtrace(raw, (int)(sizeof raw / sizeof raw[0]));
    int start = n > 1 ? 1 : 0; /* skip cs_capture_frames' caller frame by default */
    if (caller) {
        for (int i = 0; i < n; i++) {
            if (raw[i] == caller) {
                start = i;
                break;
            }
        }
    }
    uint8_t count = 0;
    for (int i = start; i < n && count < CS_INCIDENT_MAX_FRAMES; i++) out[count++] = (uintptr_t)raw[i];
    return count;
}

/* Guard + class + selector + first frame outside system images, as image name + offset so the
 * value is stable across launches of the same build. */
static uint64_t cs_fingerprint_with_frame(const cs_incident_site *site, const char *image_name, uint64_t offset) {
    uint64_t hash = 0xcbf29ce484222325ull;
    hash = cs_fnv1a_string(hash, site->guard_name);
    hash = cs_fnv1a(hash, "|", 1);
    hash = cs_fnv1a_string(hash, site->class_name);
    hash = cs_fnv1a(hash, site->is_class_method ? "+" : "-", 1);
    hash = cs_fnv1a_string(hash, site->selector_name);
    if (image_name) {
        hash = cs_fnv1a_string(hash, image_name);
        hash = cs_fnv1a(hash, &offset, sizeof offset);
    }
    return hash ? hash : 1; /* 0 marks an empty slot */
}

static uint64_t cs_fingerprint(const cs_incident_site *site, const uintptr_t *frames, uint8_t count) {
    for (uint8_t i = 0; i < count; i++) {
        cs_image_info image;
        if (!cs_images_lookup(frames[i], &image) || image.is_system) continue;
        return cs_fingerprint_with_frame(site, image.name, frames[i] - image.base);
    }
    return cs_fingerprint_with_frame(site, NULL, 0);
}

/* Fast path: when the call site itself is app code it is the first app frame, so the fingerprint
 * needs no stack walk (the walk is the most expensive part of recording). Must agree with
 * cs_fingerprint() over a full stack that starts at the same caller. */
static bool cs_fingerprint_from_caller(const cs_incident_site *site, uint64_t *fingerprint) {
    if (site->site_file) {
        *fingerprint = cs_fingerprint_with_frame(site, site->site_file, site->site_line);
        return true;
    }
    cs_image_info image;
    if (site->caller == NULL || !cs_images_lookup((uintptr_t)site->caller, &image) || image.is_system) return false;
    *fingerprint = cs_fingerprint_with_frame(site, image.name, (uintptr_t)site->caller - image.base);
    return true;
}

/* Returns the slot for `fingerprint`, inserting it when absent; NULL when the table is full. */
static cs_fingerprint_slot *cs_fingerprint_slot_for(uint64_t fingerprint) {
    uint32_t mask = CS_FINGERPRINT_TABLE_SIZE - 1;
    for (uint32_t probe = 0; probe < CS_FINGERPRINT_TABLE_SIZE; probe++) {
        cs_fingerprint_slot *slot = &g_fingerprints[(fingerprint + probe) & mask];
        uint64_t seen = atomic_load_explicit(&slot->fingerprint, memory_order_acquire);
        if (seen == fingerprint) return slot;
        if (seen == 0) {
            uint64_t expected = 0;
            if (atomic_compare_exchange_strong(&slot->fingerprint, &expected, fingerprint)) {
                atomic_fetch_add(&g_fingerprint_count, 1);
                return slot;
            }
            if (expected == fingerprint) return slot;
        }
    }
    return NULL;
}

static void cs_count_for_guard(const char *guard_name) {
    for (uint32_t i = 0; i < CS_GUARD_COUNTER_SLOTS; i++) {
        cs_guard_counter *counter = &g_guard_counters[i];
        const char *name = atomic_load_explicit(&counter->guard_name, memory_order_acquire);
        if (name == NULL) {
            const char *expected = NULL;
            if (atomic_compare_exchange_strong(&counter->guard_name, &expected, guard_name)) name = guard_name;
            else name = expected;
        }
        if (name == guard_name || (name && guard_name && strcmp(name, guard_name) == 0)) {
            atomic_fetch_add_explicit(&counter->count, 1, memory_order_relaxed);
            return;
        }
    }
}

static void cs_breadcrumb_write(const cs_incident_site *site, uint64_t count, uint64_t monotonic_ns, uint64_t fingerprint) {
    uint64_t sequence = atomic_fetch_add(&g_breadcrumbs.next_sequence, 1) + 1;
    uint32_t index = (uint32_t)((sequence - 1) % CS_BREADCRUMB_CAPACITY);
    _Atomic uint64_t *lock = &g_breadcrumbs.seq_lock[index];
    uint64_t version = atomic_load(lock);
    /* Claim the slot: even -> odd. A concurrent writer on the same slot (64 incidents apart)
     * simply waits for its turn; readers skip odd slots. */
    for (;;) {
        if ((version & 1) == 0 && atomic_compare_exchange_weak(lock, &version, version + 1)) break;
        version = atomic_load(lock);
    }
    cs_breadcrumb *slot = &g_breadcrumbs.slots[index];
    slot->sequence = sequence;
    slot->guard_name = site->guard_name;
    slot->reason = site->reason;
    slot->args[0] = site->args[0];
    slot->args[1] = site->args[1];
    slot->arg_count = site->arg_count;
    slot->policy = site->policy;
    slot->thread_id = cs_current_thread_id();
    slot->fingerprint = fingerprint;
    cs_copy_name(slot->class_name, sizeof slot->class_name, site->class_name);
    cs_copy_name(slot->selector_name, sizeof slot->selector_name, site->selector_name);
    slot->is_class_method = site->is_class_method;
    slot->count = count;
    slot->monotonic_ns = monotonic_ns;
    atomic_store(lock, version + 2);
}

static void *cs_delivery_main(void *unused);

/* Starts the delivery thread when a callback is set and none runs in this process (the first
 * callback, or the first enqueue in a forked child). Called with g_queue.lock held. */
static void cs_start_delivery_thread_locked(void) {
    if (g_queue.thread_started || g_queue.callback == NULL) return;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&g_queue.thread, &attributes, cs_delivery_main, NULL) == 0) g_queue.thread_started = true;
    pthread_attr_destroy(&attributes);
}

static void cs_enqueue(const cs_incident *incident) {
    pthread_mutex_lock(&g_queue.lock);
    if (g_queue.callback == NULL || g_queue.ended || g_queue.count == CS_QUEUE_CAPACITY) {
        atomic_fetch_add(&g_dropped, 1);
        pthread_mutex_unlock(&g_queue.lock);
        return;
    }
    cs_start_delivery_thread_locked();
    if (!g_queue.thread_started) {
        atomic_fetch_add(&g_dropped, 1);
        pthread_mutex_unlock(&g_queue.lock);
        return;
    }
    uint32_t tail = (g_queue.head + g_queue.count) % CS_QUEUE_CAPACITY;
    g_queue.items[tail] = *incident;
    g_queue.count++;
    pthread_cond_signal(&g_queue.has_work);
    pthread_mutex_unlock(&g_queue.lock);
}

static void *cs_delivery_main(void *unused) {
    (void)unused;
    /* The image table, off the start's thread: an incident recorded before this is done finds
     * the table empty and fills it itself (cs_images_lookup refreshes on a miss). */
    cs_images_refresh();
    cs_incident incident;
    pthread_mutex_lock(&g_queue.lock);
    for (;;) {
        /* After the end, nothing is queued; the check stays so no call starts once ended is set. */
        while (g_queue.count == 0 || g_queue.ended) pthread_cond_wait(&g_queue.has_work, &g_queue.lock);
        incident = g_queue.items[g_queue.head];
        g_queue.head = (g_queue.head + 1) % CS_QUEUE_CAPACITY;
        g_queue.count--;
        cs_incident_callback callback = g_queue.callback;
        void *context = g_queue.context;
        g_queue.delivering = true;
        pthread_mutex_unlock(&g_queue.lock);
        if (callback) {
            callback(&incident, context);
            atomic_fetch_add(&g_delivered, 1);
        }
        pthread_mutex_lock(&g_queue.lock);
        g_queue.delivering = false;
        /* Every call's end: cs_incidents_flush waits for an empty queue, cs_incidents_end_delivery
         * only for this call (a resume and a new enqueue may have refilled the queue meanwhile). */
        pthread_cond_broadcast(&g_queue.drained);
    }
    return NULL;
}

#pragma mark - API

__attribute__((noinline)) void cs_incident_record_above_caller(cs_incident_site *site, uint8_t skip) {
    void *raw[24];
    int n = backtrace(raw, (int)(sizeof raw / sizeof raw[0]));
    void *mine = __builtin_return_address(0); /* in the function that called this one */
    for (int i = 0; i < n; i++) {
        if (raw[i] != mine) continue;
        if (i + 1 + skip < n) site->caller = raw[i + 1 + skip];
        break;
    }
    cs_incident_record(site);
}

__attribute__((noinline)) size_t cs_caller_frames(uintptr_t *out, size_t capacity, uint8_t skip) {
    void *raw[CS_INCIDENT_MAX_FRAMES + 16];
    int n = backtrace(raw, (int)(sizeof raw / sizeof raw[0]));
    void *mine = __builtin_return_address(0);
    int start = n;
    for (int i = 0; i < n; i++) {
        if (raw[i] == mine) {
            start = i + 1 + skip;
            break;
        }
    }
    size_t count = 0;
    for (int i = start; i < n && count < capacity; i++) out[count++] = (uintptr_t)raw[i];
    return count;
}

void cs_incident_record(const cs_incident_site *site) {
    if (t_canary_depth > 0) {
        t_canary_hits++;
        return;
    }
    pthread_once(&g_warm_once, cs_warm_up);

    cs_incident incident;
    bool have_frames = false;
    uint64_t fingerprint;
    if (!cs_fingerprint_from_caller(site, &fingerprint)) {
        incident.frame_count = cs_capture_frames(site->caller, incident.frames);
        have_frames = true;
        fingerprint = cs_fingerprint(site, incident.frames, incident.frame_count);
    }
    uint64_t monotonic = cs_now_ns(CLOCK_MONOTONIC);

    atomic_fetch_add_explicit(&g_recorded, 1, memory_order_relaxed);
    cs_count_for_guard(site->guard_name);

    cs_fingerprint_slot *slot = cs_fingerprint_slot_for(fingerprint);
    if (slot == NULL) {
        atomic_fetch_add(&g_untracked, 1);
        cs_breadcrumb_write(site, 0, monotonic, fingerprint);
        return;
    }
    uint64_t count = atomic_fetch_add_explicit(&slot->count, 1, memory_order_relaxed) + 1;
    cs_breadcrumb_write(site, count, monotonic, fingerprint);
    cs_incident_kind kind;
    if (count == 1) {
        kind = CS_INCIDENT_FIRST;
        atomic_store_explicit(&slot->last_delivery_ns, monotonic, memory_order_relaxed);
    } else {
        /* Rate limit: at most one count update per fingerprint per window. */
        uint64_t last = atomic_load_explicit(&slot->last_delivery_ns, memory_order_relaxed);
        uint64_t window = atomic_load_explicit(&g_rate_limit_ns, memory_order_relaxed);
        if (monotonic - last < window) return;
        if (!atomic_compare_exchange_strong(&slot->last_delivery_ns, &last, monotonic)) return;
        kind = CS_INCIDENT_UPDATE;
    }

    if (site->frame_count > 0) {
        uint8_t n = site->frame_count < CS_INCIDENT_MAX_FRAMES ? site->frame_count : CS_INCIDENT_MAX_FRAMES;
        for (uint8_t i = 0; i < n; i++) incident.frames[i] = site->frames[i];
        incident.frame_count = n;
    } else if (!have_frames) {
        incident.frame_count = cs_capture_frames(site->caller, incident.frames);
    }
    incident.kind = kind;
    incident.guard_name = site->guard_name;
    incident.policy = site->policy;
    cs_copy_name(incident.class_name, sizeof incident.class_name, site->class_name);
    cs_copy_name(incident.selector_name, sizeof incident.selector_name, site->selector_name);
    incident.is_class_method = site->is_class_method;
    incident.reason = site->reason;
    incident.args[0] = site->args[0];
    incident.args[1] = site->args[1];
    incident.arg_count = site->arg_count > 2 ? 2 : site->arg_count;
    incident.thread_id = cs_current_thread_id();
    incident.is_main_thread = cs_is_main_thread();
    incident.wall_time_ns = (int64_t)cs_now_ns(CLOCK_REALTIME);
    incident.monotonic_ns = monotonic;
    incident.fingerprint = fingerprint;
    incident.count = count;
    cs_enqueue(&incident);
}

/* Drops what is queued, counted as dropped deliveries. Called with g_queue.lock held. */
static void cs_drop_queued_locked(void) {
    if (g_queue.count > 0) atomic_fetch_add(&g_dropped, g_queue.count);
    g_queue.head = 0;
    g_queue.count = 0;
}

static void cs_fork_prepare(void) { pthread_mutex_lock(&g_queue.lock); }
static void cs_fork_parent(void) { pthread_mutex_unlock(&g_queue.lock); }

/* The child has none of the parent's threads: the delivery thread and the call it may have been
 * running do not exist here. What the parent had queued is the parent's to deliver. */
static void cs_fork_child(void) {
    pthread_mutex_init(&g_queue.lock, NULL);
    pthread_cond_init(&g_queue.has_work, NULL);
    pthread_cond_init(&g_queue.drained, NULL);
    cs_drop_queued_locked();
    g_queue.delivering = false;
    g_queue.thread_started = false;
    g_queue.ended = false;
    atomic_store(&g_exit_ended, false);
}

static void cs_exit_handler(void) {
    cs_incidents_end_delivery_for_exit();
}

static void cs_install_process_hooks(void) {
    pthread_atfork(cs_fork_prepare, cs_fork_parent, cs_fork_child);
    atexit(cs_exit_handler);
}

static void cs_set_callback(cs_incident_callback callback, void *context, bool start_thread) {
    pthread_once(&g_warm_once, cs_warm_up);
    if (callback) pthread_once(&g_process_hooks_once, cs_install_process_hooks);
    pthread_mutex_lock(&g_queue.lock);
    g_queue.callback = callback;
    g_queue.context = context;
    if (start_thread) cs_start_delivery_thread_locked();
    pthread_mutex_unlock(&g_queue.lock);
}

void cs_incidents_set_callback(cs_incident_callback callback, void *context) {
    cs_set_callback(callback, context, true);
}

void cs_incidents_set_callback_without_thread(cs_incident_callback callback, void *context) {
    cs_set_callback(callback, context, false);
}

void cs_incidents_start_delivery_thread(void) {
    pthread_mutex_lock(&g_queue.lock);
    cs_start_delivery_thread_locked();
    pthread_mutex_unlock(&g_queue.lock);
}

/* CLOCK_REALTIME `ms` milliseconds from now: the deadline pthread_cond_timedwait takes. */
static struct timespec cs_realtime_deadline_after_ms(uint32_t ms) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += ms / 1000;
    deadline.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    return deadline;
}

bool cs_incidents_end_delivery(uint32_t wait_ms) {
    struct timespec deadline = cs_realtime_deadline_after_ms(wait_ms);
    pthread_mutex_lock(&g_queue.lock);
    g_queue.ended = true;
    cs_drop_queued_locked();
    /* A callback that ends the process (or calls stop) runs on the delivery thread: waiting for
     * it there would wait for ourselves. */
    bool on_delivery_thread = g_queue.thread_started && pthread_equal(pthread_self(), g_queue.thread);
    if (!on_delivery_thread) {
        while (g_queue.delivering) {
            if (pthread_cond_timedwait(&g_queue.drained, &g_queue.lock, &deadline) != 0) break;
        }
    }
    bool finished = !g_queue.delivering || on_delivery_thread;
    pthread_mutex_unlock(&g_queue.lock);
    return finished;
}

bool cs_incidents_end_delivery_for_exit(void) {
    if (atomic_exchange(&g_exit_ended, true)) return true;
    return cs_incidents_end_delivery(CS_INCIDENTS_END_GRACE_MS);
}

void cs_incidents_resume_delivery(void) {
    pthread_mutex_lock(&g_queue.lock);
    if (!atomic_load(&g_exit_ended)) g_queue.ended = false;
    pthread_mutex_unlock(&g_queue.lock);
}

void cs_incidents_set_rate_limit_ns(uint64_t window_ns) {
    atomic_store(&g_rate_limit_ns, window_ns);
}

bool cs_incidents_flush(uint32_t timeout_ms) {
    struct timespec deadline = cs_realtime_deadline_after_ms(timeout_ms);
    pthread_mutex_lock(&g_queue.lock);
    bool drained = true;
    while (g_queue.thread_started && (g_queue.count > 0 || g_queue.delivering)) {
        if (pthread_cond_timedwait(&g_queue.drained, &g_queue.lock, &deadline) != 0) {
            drained = g_queue.count == 0 && !g_queue.delivering;
            break;
        }
    }
    pthread_mutex_unlock(&g_queue.lock);
    return drained;
}

cs_incident_stats cs_incidents_stats(void) {
    cs_incident_stats stats = {
        .recorded = atomic_load(&g_recorded),
        .fingerprints = atomic_load(&g_fingerprint_count),
        .delivered = atomic_load(&g_delivered),
        .dropped_deliveries = atomic_load(&g_dropped),
        .untracked = atomic_load(&g_untracked),
    };
    return stats;
}

uint64_t cs_incidents_count_for_guard(const char *guard_name) {
    for (uint32_t i = 0; i < CS_GUARD_COUNTER_SLOTS; i++) {
        const char *name = atomic_load(&g_guard_counters[i].guard_name);
        if (name == NULL) return 0;
        if (name == guard_name || (guard_name && strcmp(name, guard_name) == 0))
            return atomic_load(&g_guard_counters[i].count);
    }
    return 0;
}

void cs_incidents_reset(void) {
    for (uint32_t i = 0; i < CS_FINGERPRINT_TABLE_SIZE; i++) {
        atomic_store(&g_fingerprints[i].count, 0);
        atomic_store(&g_fingerprints[i].last_delivery_ns, 0);
        atomic_store(&g_fingerprints[i].fingerprint, 0);
    }
    for (uint32_t i = 0; i < CS_GUARD_COUNTER_SLOTS; i++) atomic_store(&g_guard_counters[i].count, 0);
    atomic_store(&g_recorded, 0);
    atomic_store(&g_fingerprint_count, 0);
    atomic_store(&g_delivered, 0);
    atomic_store(&g_dropped, 0);
    atomic_store(&g_untracked, 0);
    for (uint32_t i = 0; i < CS_BREADCRUMB_CAPACITY; i++) {
        uint64_t version = atomic_load(&g_breadcrumbs.seq_lock[i]);
        if (version & 1) continue; /* a writer owns it; it will leave valid data */
        g_breadcrumbs.slots[i].sequence = 0;
    }
    atomic_store(&g_breadcrumbs.next_sequence, 0);
}

void cs_incidents_canary_begin(void) {
    if (t_canary_depth++ == 0) t_canary_hits = 0;
}

uint64_t cs_incidents_canary_end(void) {
    if (t_canary_depth > 0) t_canary_depth--;
    return t_canary_hits;
}

uint64_t cs_incidents_canary_hits(void) {
    return t_canary_hits;
}

size_t cs_breadcrumbs_copy(cs_breadcrumb *out, size_t capacity) {
    uint64_t newest = atomic_load(&g_breadcrumbs.next_sequence);
    uint64_t available = newest < CS_BREADCRUMB_CAPACITY ? newest : CS_BREADCRUMB_CAPACITY;
    if (available > capacity) available = capacity;
    size_t copied = 0;
    for (uint64_t sequence = newest - available + 1; sequence <= newest; sequence++) {
        uint32_t index = (uint32_t)((sequence - 1) % CS_BREADCRUMB_CAPACITY);
        uint64_t before = atomic_load(&g_breadcrumbs.seq_lock[index]);
        if (before & 1) continue;
        cs_breadcrumb copy = g_breadcrumbs.slots[index];
        uint64_t after = atomic_load(&g_breadcrumbs.seq_lock[index]);
        if (before != after || copy.sequence != sequence) continue;
        out[copied++] = copy;
    }
    return copied;
}

bool cs_address_is_in_system_image(uintptr_t address) {
    cs_image_info image;
    return cs_images_lookup(address, &image) && image.is_system;
}

bool cs_address_image(uintptr_t address, const char **path, uintptr_t *base) {
    cs_image_info image;
    if (!cs_images_lookup(address, &image)) {
        *path = "";
        *base = 0;
        return false;
    }
    *path = image.name ? image.name : "";
    *base = image.base;
    return true;
}

static _Atomic int g_swift_guard_policies[CS_SWIFT_GUARD_COUNT]; /* 0 == CS_POLICY_NEUTRALIZE */

cs_policy cs_swift_guard_policy(cs_swift_guard guard) {
    if ((unsigned)guard >= CS_SWIFT_GUARD_COUNT) return CS_POLICY_OFF;
    return (cs_policy)atomic_load_explicit(&g_swift_guard_policies[guard], memory_order_relaxed);
}

void cs_swift_guard_set_policy(cs_swift_guard guard, cs_policy policy) {
    if ((unsigned)guard < CS_SWIFT_GUARD_COUNT) atomic_store(&g_swift_guard_policies[guard], (int)policy);
}
