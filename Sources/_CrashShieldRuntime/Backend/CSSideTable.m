/*
 * CSSideTable.m — (object, key) -> retained value, the stand-in for associated objects.
 *
 * Striped: 64 independent locks chosen by the object's address, so unrelated objects never
 * contend. Values are released after the stripe lock is dropped, because releasing can run a
 * -dealloc that re-enters the table.
 */
#import "CSBackend.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#define CS_STRIPES 64u
#define CS_BUCKETS_PER_STRIPE 64u

typedef struct cs_side_entry {
    void *object;
    const void *key;
    void *value; /* +1, see CS_RETAINED_POINTER */
    struct cs_side_entry *next;
} cs_side_entry;

typedef struct {
    pthread_mutex_t lock;
    cs_side_entry *buckets[CS_BUCKETS_PER_STRIPE];
} cs_side_stripe;

static cs_side_stripe g_stripes[CS_STRIPES];
static pthread_once_t g_side_once = PTHREAD_ONCE_INIT;
static size_t g_side_count; /* CS_ATOMIC_* access */

static void cs_side_init(void) {
    for (unsigned i = 0; i < CS_STRIPES; i++) pthread_mutex_init(&g_stripes[i].lock, NULL);
}

static inline uintptr_t cs_side_hash(const void *object) {
    uintptr_t h = (uintptr_t)object;
    h ^= h >> 4;
    h *= 0x9E3779B97F4A7C15ull;
    return h >> 16;
}

void cs_sidetable_set(void *object, const void *key, void *value) {
    if (object == NULL) return;
    pthread_once(&g_side_once, cs_side_init);
    uintptr_t h = cs_side_hash(object);
    cs_side_stripe *stripe = &g_stripes[h % CS_STRIPES];
    void *newValue = value ? CS_RETAINED_POINTER(CS_OBJECT(value)) : NULL;
    void *oldValue = NULL;
    cs_side_entry *freed = NULL;
    pthread_mutex_lock(&stripe->lock);
    cs_side_entry **link = &stripe->buckets[(h / CS_STRIPES) % CS_BUCKETS_PER_STRIPE];
    while (*link && !((*link)->object == object && (*link)->key == key)) link = &(*link)->next;
    if (*link) {
        oldValue = (*link)->value;
        if (newValue) {
            (*link)->value = newValue;
        } else {
            freed = *link;
            CS_ATOMIC_STORE(link, freed->next);
            CS_ATOMIC_FETCH_SUB(&g_side_count, (size_t)1);
        }
    } else if (newValue) {
        cs_side_entry *entry = malloc(sizeof *entry);
        entry->object = object;
        entry->key = key;
        entry->value = newValue;
        entry->next = NULL;
        CS_ATOMIC_STORE(link, entry);
        CS_ATOMIC_FETCH_ADD(&g_side_count, (size_t)1);
    }
    pthread_mutex_unlock(&stripe->lock);
    free(freed);
    if (oldValue) CS_RELEASE_POINTER(oldValue);
}

void *cs_sidetable_get(void *object, const void *key) {
    if (object == NULL) return NULL;
    pthread_once(&g_side_once, cs_side_init);
    uintptr_t h = cs_side_hash(object);
    cs_side_stripe *stripe = &g_stripes[h % CS_STRIPES];
    void *found = NULL;
    pthread_mutex_lock(&stripe->lock);
    for (cs_side_entry *e = stripe->buckets[(h / CS_STRIPES) % CS_BUCKETS_PER_STRIPE]; e; e = e->next)
        if (e->object == object && e->key == key) {
            found = CS_RETAINED_POINTER(CS_OBJECT(e->value));
            break;
        }
    pthread_mutex_unlock(&stripe->lock);
    if (found == NULL) return NULL;
    /* Hand the caller an autoreleased reference: the +1 taken under the lock balances here. Under
     * ARC a strong local would be released before the caller sees the value; storing into an
     * __autoreleasing variable is ARC's retain + autorelease. */
#if __has_feature(objc_arc)
    __autoreleasing id result = CS_OBJECT(found);
#else
    id result = CS_AUTORELEASE(CS_RETAIN(CS_OBJECT(found)));
#endif
    CS_RELEASE_POINTER(found);
    return CS_POINTER(result);
}

void *cs_sidetable_peek(void *object, const void *key) {
    if (object == NULL || CS_ATOMIC_LOAD_RELAXED(&g_side_count) == 0) return NULL;
    uintptr_t h = cs_side_hash(object);
    cs_side_stripe *stripe = &g_stripes[h % CS_STRIPES];
    void *found = NULL;
    pthread_mutex_lock(&stripe->lock);
    for (cs_side_entry *e = stripe->buckets[(h / CS_STRIPES) % CS_BUCKETS_PER_STRIPE]; e; e = e->next)
        if (e->object == object && e->key == key) {
            found = (void *)e->value;
            break;
        }
    pthread_mutex_unlock(&stripe->lock);
    return found;
}

bool cs_sidetable_contains(void *object, const void *key) {
    if (object == NULL || CS_ATOMIC_LOAD_RELAXED(&g_side_count) == 0) return false;
    uintptr_t h = cs_side_hash(object);
    cs_side_stripe *stripe = &g_stripes[h % CS_STRIPES];
    bool found = false;
    pthread_mutex_lock(&stripe->lock);
    for (cs_side_entry *e = stripe->buckets[(h / CS_STRIPES) % CS_BUCKETS_PER_STRIPE]; e && !found; e = e->next)
        found = e->object == object && e->key == key;
    pthread_mutex_unlock(&stripe->lock);
    return found;
}

size_t cs_sidetable_remove_all(void *object) {
    if (object == NULL) return 0;
    /* Fast negative answer without a lock (this runs on every -dealloc once the dealloc hook is
     * installed): an object's own entries were stored before it started deallocating, so an
     * empty table or an empty bucket means none are left. */
    if (CS_ATOMIC_LOAD_RELAXED(&g_side_count) == 0) return 0;
    uintptr_t h = cs_side_hash(object);
    cs_side_stripe *stripe = &g_stripes[h % CS_STRIPES];
    cs_side_entry **link = &stripe->buckets[(h / CS_STRIPES) % CS_BUCKETS_PER_STRIPE];
    if (CS_ATOMIC_LOAD(link) == NULL) return 0;
    pthread_once(&g_side_once, cs_side_init);
    cs_side_entry *removed = NULL;
    size_t count = 0;
    pthread_mutex_lock(&stripe->lock);
    while (*link) {
        if ((*link)->object == object) {
            cs_side_entry *entry = *link;
            CS_ATOMIC_STORE(link, entry->next);
            entry->next = removed;
            removed = entry;
            count++;
        } else {
            link = &(*link)->next;
        }
    }
    pthread_mutex_unlock(&stripe->lock);
    CS_ATOMIC_FETCH_SUB(&g_side_count, count);
    while (removed) {
        cs_side_entry *next = removed->next;
        CS_RELEASE_POINTER(removed->value);
        free(removed);
        removed = next;
    }
    return count;
}

size_t cs_sidetable_count(void) {
    return CS_ATOMIC_LOAD(&g_side_count);
}
