/*
 * csc_published.c — texts published for the crash handler (csc_published.h). The reading side
 * (csc_published_pin/unpin) runs in the handler and follows the rules at the top of csc_capture.h:
 * atomics only, no lock, no allocation.
 */
#include "csc_published.h"

#include <string.h>

bool csc_published_set(csc_published *publication, const char *text) {
    size_t length = text ? strlen(text) : 0;
    if (length >= publication->capacity) return false;
    pthread_mutex_lock(&publication->lock);
    if (length == 0) {
        atomic_store(&publication->index, -1);
    } else {
        int published = atomic_load(&publication->index);
        int pinned = atomic_load(&publication->pinned);
        int next = 0;
        while (next == published || next == pinned) next++;
        memcpy(publication->storage + (size_t)next * publication->capacity, text, length + 1);
        atomic_store(&publication->index, next);
    }
    pthread_mutex_unlock(&publication->lock);
    return true;
}

const char *csc_published_pin(csc_published *publication) {
    for (int attempt = 0; attempt < 64; attempt++) {
        int published = atomic_load(&publication->index);
        if (published < 0) break;
        atomic_store(&publication->pinned, published);
        if (atomic_load(&publication->index) == published)
            return publication->storage + (size_t)published * publication->capacity;
    }
    atomic_store(&publication->pinned, -1);
    return NULL;
}

void csc_published_unpin(csc_published *publication) { atomic_store(&publication->pinned, -1); }
