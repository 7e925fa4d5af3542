/*
 * csc_published.h — a text published for the crash handler: written outside the handler as often
 * as the app likes, read whole by the handler (async-signal-safe, no lock on the reading side).
 * Crash reports carry two such texts: the guard states (csc_set_guard_states_json) and the scope
 * (csc_set_scope_json).
 *
 * How: writers, serialised by the publication's mutex, fill a buffer that is neither the
 * published one nor the one the handler has pinned, then publish its index with an atomic store.
 * The handler pins the published index and loads the index again: when it is unchanged, no writer
 * can be filling that buffer (a writer only picks a buffer that was neither published nor pinned
 * when it looked, and the handler's pin precedes its second load), so the handler reads a whole
 * text however often the text changes meanwhile. Three buffers suffice: one published, one
 * pinned, one to fill. One reader at a time: only the handler that owns the crash pins.
 */
#ifndef CSC_PUBLISHED_H
#define CSC_PUBLISHED_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define CSC_PUBLISHED_BUFFERS 3

typedef struct {
    char *storage;       /**< CSC_PUBLISHED_BUFFERS buffers of `capacity` bytes, back to back */
    size_t capacity;     /**< bytes per buffer, the terminating NUL included */
    _Atomic int index;   /**< buffer published last; -1: nothing published */
    _Atomic int pinned;  /**< buffer the handler reads; -1: none */
    pthread_mutex_t lock; /**< serialises writers; never taken by the handler */
} csc_published;

/** Defines a publication `name` with static buffers of `bytes` bytes each (untouched pages cost
 *  no memory). */
#define CSC_PUBLISHED_DEFINE(name, bytes)                                                          \
    static char name##_storage[CSC_PUBLISHED_BUFFERS][bytes];                                    \
    static csc_published name = {&name##_storage[0][0], (bytes), -1, -1, PTHREAD_MUTEX_INITIALIZER}

/** Publishes a copy of `text` (NUL-terminated). NULL or "" withdraws the text (the handler then
 *  reads none). Text of `capacity` bytes or more is refused: false, and what was published stays.
 *  Not async-signal-safe (takes the publication's mutex). */
bool csc_published_set(csc_published *publication, const char *text);

/** For the crash handler: pins the published text and returns it, or NULL when none is
 *  published (or it kept changing through 64 attempts). Call csc_published_unpin() after reading.
 *  Async-signal-safe; one reader at a time. */
const char *csc_published_pin(csc_published *publication);
void csc_published_unpin(csc_published *publication);

#endif
