/*
 * CSGuard_Containers.m — SPEC §2.1: NSArray, NSMutableArray, NSDictionary, NSMutableDictionary,
 * NSSet/NSMutableSet, NSOrderedSet/NSMutableOrderedSet, NSCache, NSUserDefaults, NSData and
 * NSMutableData, on every concrete class that defines the hooked selectors (found at run time).
 *
 * Neutralised results: a read beyond bounds returns nil (a range read returns the valid part,
 * a range copy copies only the valid part); a mutation that would throw is a no-op; a nil element
 * (or a pair with a nil key or value) in a bulk initialiser is skipped.
 *
 * Invariants:
 * - A hook checks its arguments against the receiver's current count before calling the
 *   original, and calls the original with exactly the caller's arguments when they are legal.
 * - Ranges are checked without computing location + length (it may wrap).
 * - The misuse path formats nothing; only the initialisers that skip nil elements need a copy of
 *   the caller's list (on the stack when small).
 */
#import "../Engine/CSEngine.h"
#include <stdlib.h>
#include <string.h>

#pragma clang section text = "cs_guard_container" /* every function below: see CS_GUARD_METHOD */

extern CSGuard CSGuardContainers;
#define G (&CSGuardContainers)

#define CS_ALWAYS_INLINE static inline __attribute__((always_inline))

/** True when `range` lies within [0, count]; never computes location + length. */
CS_ALWAYS_INLINE BOOL cs_range_within(NSRange range, NSUInteger count) {
    return range.location <= count && range.length <= count - range.location;
}

/** The part of `range` that lies within [0, count]: empty at `count` when it starts beyond. */
CS_ALWAYS_INLINE NSRange cs_range_clamp(NSRange range, NSUInteger count) {
    if (range.location >= count) return NSMakeRange(count, 0);
    NSUInteger available = count - range.location;
    return NSMakeRange(range.location, range.length < available ? range.length : available);
}

CS_ALWAYS_INLINE NSUInteger cs_count(id self) {
    return [(NSArray *)self count];
}

#pragma mark - Shared bodies

/** Index reads (-objectAtIndex: and subscripts): nil beyond count. */
CS_ALWAYS_INLINE id cs_index_read(IMP original, id self, SEL _cmd, const void *caller, NSUInteger index) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger count = cs_count(self);
        if (CS_UNLIKELY(index >= count) &&
            cs_guard_misuse(G, self, _cmd, caller, "index {} beyond count {}", 2, index, count))
            return nil;
    }
    return ((id(*)(id, SEL, NSUInteger))original)(self, _cmd, index);
}

/** Adds of one object: nil is a no-op. */
CS_ALWAYS_INLINE void cs_nil_object_add(IMP original, id self, SEL _cmd, const void *caller, id object) {
    if (CS_LIKELY(cs_guard_is_on(G)) && CS_UNLIKELY(object == nil) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil object", 0, 0, 0))
        return;
    ((void (*)(id, SEL, id))original)(self, _cmd, object);
}

/** Inserts at an index: nil object or index > count is a no-op. */
CS_ALWAYS_INLINE void cs_insert_at(IMP original, id self, SEL _cmd, const void *caller, id object, NSUInteger index) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        if (CS_UNLIKELY(object == nil)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "nil object", 0, 0, 0)) return;
        } else {
            NSUInteger count = cs_count(self);
            if (CS_UNLIKELY(index > count) &&
                cs_guard_misuse(G, self, _cmd, caller, "index {} beyond count {}", 2, index, count))
                return;
        }
    }
    ((void (*)(id, SEL, id, NSUInteger))original)(self, _cmd, object, index);
}

/** Removes at an index: index >= count is a no-op. */
CS_ALWAYS_INLINE void cs_remove_at(IMP original, id self, SEL _cmd, const void *caller, NSUInteger index) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger count = cs_count(self);
        if (CS_UNLIKELY(index >= count) &&
            cs_guard_misuse(G, self, _cmd, caller, "index {} beyond count {}", 2, index, count))
            return;
    }
    ((void (*)(id, SEL, NSUInteger))original)(self, _cmd, index);
}

/** Replaces at an index: index >= count or a nil object is a no-op. */
CS_ALWAYS_INLINE void cs_replace_at(IMP original, id self, SEL _cmd, const void *caller, NSUInteger index, id object) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger count = cs_count(self);
        if (CS_UNLIKELY(index >= count)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "index {} beyond count {}", 2, index, count)) return;
        } else if (CS_UNLIKELY(object == nil)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "nil object", 0, 0, 0)) return;
        }
    }
    ((void (*)(id, SEL, NSUInteger, id))original)(self, _cmd, index, object);
}

/* Bulk creation chains through several hooked initialisers on the same thread (+arrayWithObjects:
 * count: -> placeholder -initWithObjects:count: -> concrete -initWithObjects:count:). When the
 * outermost one reports a nil element and lets the original run (report-only), the inner ones see
 * the same nil list: this depth tells them it is already recorded. Read only on the misuse path. */
static __thread unsigned t_bulk_reported_depth;

/** One call of a bulk initialiser's original, as a context for cs_objc_try_finally. */
typedef struct {
    IMP original;
    id self;
    SEL cmd;
    const id *objects;
    const id *keys; /* dictionaries only */
    NSUInteger count;
    BOOL with_keys;
    id result;
} cs_bulk_call;

static void cs_bulk_call_original(void *context) {
    cs_bulk_call *call = context;
    if (call->with_keys)
        call->result = ((id(*)(id, SEL, const id *, const id *, NSUInteger))call->original)(
            call->self, call->cmd, call->objects, call->keys, call->count);
    else
        call->result = ((id(*)(id, SEL, const id *, NSUInteger))call->original)(call->self, call->cmd, call->objects,
                                                                                 call->count);
}

static void cs_bulk_call_done(void *context) {
    (void)context;
    t_bulk_reported_depth--;
}

/** Report-only path of the bulk initialisers: the original runs (and usually throws) with the
 *  nested initialisers told not to record the same misuse again; the depth is restored when it
 *  throws too. Not a hot path. */
static id cs_bulk_pass_through(cs_bulk_call call) {
    t_bulk_reported_depth++;
    cs_objc_try_finally(cs_bulk_call_original, cs_bulk_call_done, &call);
    return call.result;
}
#define CS_BULK_PASS_THROUGH(...) return cs_bulk_pass_through((cs_bulk_call){__VA_ARGS__})

/**
 * Bulk initialisers with a C array of objects (-initWithObjects:count:, +arrayWithObjects:count:,
 * collection literals): nil elements are skipped, the rest keep their order. A NULL list with a
 * non-zero count is treated as empty.
 */
static id cs_objects_count_init(IMP original, id self, SEL _cmd, const void *caller, const id *objects,
                                NSUInteger count) {
    typedef id (*init_fn)(id, SEL, const id *, NSUInteger);
    if (CS_LIKELY(cs_guard_is_on(G))) {
        if (CS_UNLIKELY(objects == NULL && count > 0)) {
            if (t_bulk_reported_depth > 0) return ((init_fn)original)(self, _cmd, objects, count);
            if (cs_guard_misuse(G, self, _cmd, caller, "NULL object list with count {}", 1, count, 0))
                return ((init_fn)original)(self, _cmd, NULL, 0);
            CS_BULK_PASS_THROUGH(original, self, _cmd, objects, NULL, count, NO);
        }
        NSUInteger first = 0;
        while (first < count && objects[first] != nil) first++;
        if (CS_UNLIKELY(first < count)) {
            if (t_bulk_reported_depth > 0) return ((init_fn)original)(self, _cmd, objects, count);
            if (!cs_guard_misuse(G, self, _cmd, caller, "nil object at index {} of {}", 2, first, count))
                CS_BULK_PASS_THROUGH(original, self, _cmd, objects, NULL, count, NO);
            id stack[32];
            id *kept = count <= 32 ? stack : (id *)malloc(count * sizeof(id));
            if (kept == NULL) return ((init_fn)original)(self, _cmd, objects, first);
            NSUInteger n = 0;
            for (NSUInteger i = 0; i < count; i++)
                if (objects[i] != nil) kept[n++] = objects[i];
            id result = ((init_fn)original)(self, _cmd, kept, n);
            if (kept != stack) free(kept);
            return result;
        }
    }
    return ((init_fn)original)(self, _cmd, objects, count);
}

/** Dictionary bulk initialisers (and literals): pairs with a nil key or a nil value are skipped. */
static id cs_dictionary_count_init(IMP original, id self, SEL _cmd, const void *caller, const id *objects,
                                   const id *keys, NSUInteger count) {
    typedef id (*init_fn)(id, SEL, const id *, const id *, NSUInteger);
    if (CS_LIKELY(cs_guard_is_on(G))) {
        if (CS_UNLIKELY((objects == NULL || keys == NULL) && count > 0)) {
            if (t_bulk_reported_depth > 0) return ((init_fn)original)(self, _cmd, objects, keys, count);
            if (cs_guard_misuse(G, self, _cmd, caller, "NULL object or key list with count {}", 1, count, 0))
                return ((init_fn)original)(self, _cmd, NULL, NULL, 0);
            CS_BULK_PASS_THROUGH(original, self, _cmd, objects, keys, count, YES);
        }
        NSUInteger first = 0;
        while (first < count && objects[first] != nil && keys[first] != nil) first++;
        if (CS_UNLIKELY(first < count)) {
            if (t_bulk_reported_depth > 0) return ((init_fn)original)(self, _cmd, objects, keys, count);
            if (!cs_guard_misuse(G, self, _cmd, caller,
                                 keys[first] == nil ? "nil key at index {} of {}" : "nil value at index {} of {}", 2,
                                 first, count))
                CS_BULK_PASS_THROUGH(original, self, _cmd, objects, keys, count, YES);
            id stack[64];
            id *kept = count <= 32 ? stack : (id *)malloc(2 * count * sizeof(id));
            if (kept == NULL) return ((init_fn)original)(self, _cmd, objects, keys, first);
            id *keptKeys = kept + count;
            NSUInteger n = 0;
            for (NSUInteger i = 0; i < count; i++) {
                if (objects[i] == nil || keys[i] == nil) continue;
                kept[n] = objects[i];
                keptKeys[n] = keys[i];
                n++;
            }
            id result = ((init_fn)original)(self, _cmd, kept, keptKeys, n);
            if (kept != stack) free(kept);
            return result;
        }
    }
    return ((init_fn)original)(self, _cmd, objects, keys, count);
}

/** Keyed stores (-setObject:forKey:): a nil key or a nil value is a no-op. */
CS_ALWAYS_INLINE void cs_keyed_store(IMP original, id self, SEL _cmd, const void *caller, id object, id key) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        if (CS_UNLIKELY(key == nil)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "nil key", 0, 0, 0)) return;
        } else if (CS_UNLIKELY(object == nil)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "nil value", 0, 0, 0)) return;
        }
    }
    ((void (*)(id, SEL, id, id))original)(self, _cmd, object, key);
}

/** Keyed removal: a nil key is a no-op. */
CS_ALWAYS_INLINE void cs_keyed_remove(IMP original, id self, SEL _cmd, const void *caller, id key) {
    if (CS_LIKELY(cs_guard_is_on(G)) && CS_UNLIKELY(key == nil) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil key", 0, 0, 0))
        return;
    ((void (*)(id, SEL, id))original)(self, _cmd, key);
}

/* One hook per (root, selector) needs its own slot table, so the shared bodies are stamped out
 * under each hook's name. */
#define CS_INDEX_READ_HOOK(name)                                                                   \
    static inline id name(IMP o, id s, SEL c, const void *w, NSUInteger i) { return cs_index_read(o, s, c, w, i); } \
    CS_DEFINE_HOOK_1(name, id, NSUInteger)
#define CS_NIL_ADD_HOOK(name)                                                                      \
    static inline void name(IMP o, id s, SEL c, const void *w, id x) { cs_nil_object_add(o, s, c, w, x); } \
    CS_DEFINE_HOOK_1(name, void, id)
#define CS_INSERT_AT_HOOK(name)                                                                    \
    static inline void name(IMP o, id s, SEL c, const void *w, id x, NSUInteger i) { cs_insert_at(o, s, c, w, x, i); } \
    CS_DEFINE_HOOK_2(name, void, id, NSUInteger)
#define CS_REMOVE_AT_HOOK(name)                                                                    \
    static inline void name(IMP o, id s, SEL c, const void *w, NSUInteger i) { cs_remove_at(o, s, c, w, i); } \
    CS_DEFINE_HOOK_1(name, void, NSUInteger)
#define CS_REPLACE_AT_HOOK(name)                                                                   \
    static inline void name(IMP o, id s, SEL c, const void *w, NSUInteger i, id x) { cs_replace_at(o, s, c, w, i, x); } \
    CS_DEFINE_HOOK_2(name, void, NSUInteger, id)
#define CS_OBJECTS_COUNT_HOOK(name)                                                                \
    static inline id name(IMP o, id s, SEL c, const void *w, const id *x, NSUInteger n) {          \
        return cs_objects_count_init(o, s, c, w, x, n);                                            \
    }                                                                                              \
    CS_DEFINE_HOOK_2(name, id, const id *, NSUInteger)
#define CS_DICTIONARY_COUNT_HOOK(name)                                                             \
    static inline id name(IMP o, id s, SEL c, const void *w, const id *x, const id *k, NSUInteger n) { \
        return cs_dictionary_count_init(o, s, c, w, x, k, n);                                      \
    }                                                                                              \
    CS_DEFINE_HOOK_3(name, id, const id *, const id *, NSUInteger)
#define CS_KEYED_STORE_HOOK(name)                                                                  \
    static inline void name(IMP o, id s, SEL c, const void *w, id x, id k) { cs_keyed_store(o, s, c, w, x, k); } \
    CS_DEFINE_HOOK_2(name, void, id, id)
#define CS_KEYED_REMOVE_HOOK(name)                                                                 \
    static inline void name(IMP o, id s, SEL c, const void *w, id k) { cs_keyed_remove(o, s, c, w, k); } \
    CS_DEFINE_HOOK_1(name, void, id)

#pragma mark - NSArray

CS_INDEX_READ_HOOK(cs_array_objectAtIndex)
CS_INDEX_READ_HOOK(cs_array_objectAtIndexedSubscript)
CS_OBJECTS_COUNT_HOOK(cs_array_initWithObjects_count)
CS_OBJECTS_COUNT_HOOK(cs_array_arrayWithObjects_count)

static inline id cs_array_subarrayWithRange(IMP original, id self, SEL _cmd, const void *caller, NSRange range) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger count = cs_count(self);
        if (CS_UNLIKELY(!cs_range_within(range, count)) &&
            cs_guard_misuse(G, self, _cmd, caller, "range location {} length {} beyond count", 2, range.location,
                            range.length))
            range = cs_range_clamp(range, count);
    }
    return ((id(*)(id, SEL, NSRange))original)(self, _cmd, range);
}
CS_DEFINE_HOOK_1(cs_array_subarrayWithRange, id, NSRange)

static inline id cs_array_objectsAtIndexes(IMP original, id self, SEL _cmd, const void *caller, NSIndexSet *indexes) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        if (CS_UNLIKELY(indexes == nil)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "nil index set", 0, 0, 0)) return [NSArray array];
        } else {
            NSUInteger last = [indexes lastIndex]; /* NSNotFound when empty: nothing to check */
            NSUInteger count = cs_count(self);
            if (CS_UNLIKELY(last != NSNotFound && last >= count) &&
                cs_guard_misuse(G, self, _cmd, caller, "index {} beyond count {}", 2, last, count)) {
                NSMutableIndexSet *valid = [indexes mutableCopy];
                [valid removeIndexesInRange:NSMakeRange(count, NSNotFound - count)];
                id result = ((id(*)(id, SEL, NSIndexSet *))original)(self, _cmd, valid);
                CS_RELEASE(valid);
                return result;
            }
        }
    }
    return ((id(*)(id, SEL, NSIndexSet *))original)(self, _cmd, indexes);
}
CS_DEFINE_HOOK_1(cs_array_objectsAtIndexes, id, NSIndexSet *)

static inline void cs_array_getObjects_range(IMP original, id self, SEL _cmd, const void *caller, id *buffer,
                                             NSRange range) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger count = cs_count(self);
        if (CS_UNLIKELY(!cs_range_within(range, count)) &&
            cs_guard_misuse(G, self, _cmd, caller, "range location {} length {} beyond count", 2, range.location,
                            range.length)) {
            range = cs_range_clamp(range, count);
            if (range.length == 0) return;
        }
    }
    ((void (*)(id, SEL, id *, NSRange))original)(self, _cmd, buffer, range);
}
CS_DEFINE_HOOK_2(cs_array_getObjects_range, void, id *, NSRange)

#pragma mark - NSMutableArray

CS_NIL_ADD_HOOK(cs_marray_addObject)
CS_INSERT_AT_HOOK(cs_marray_insertObject_atIndex)
CS_REMOVE_AT_HOOK(cs_marray_removeObjectAtIndex)
CS_REPLACE_AT_HOOK(cs_marray_replaceObjectAtIndex_withObject)

/** Exchanges: either index >= count is a no-op. */
CS_ALWAYS_INLINE void cs_exchange(IMP original, id self, SEL _cmd, const void *caller, NSUInteger a, NSUInteger b) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger count = cs_count(self);
        if (CS_UNLIKELY(a >= count || b >= count) &&
            cs_guard_misuse(G, self, _cmd, caller, "index {} beyond count {}", 2, a >= count ? a : b, count))
            return;
    }
    ((void (*)(id, SEL, NSUInteger, NSUInteger))original)(self, _cmd, a, b);
}

/** Range removal: a range not within [0, count] is a no-op. */
CS_ALWAYS_INLINE void cs_remove_range(IMP original, id self, SEL _cmd, const void *caller, NSRange range) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger count = cs_count(self);
        if (CS_UNLIKELY(!cs_range_within(range, count)) &&
            cs_guard_misuse(G, self, _cmd, caller, "range location {} length {} beyond count", 2, range.location,
                            range.length))
            return;
    }
    ((void (*)(id, SEL, NSRange))original)(self, _cmd, range);
}

/** -insertObjects:atIndexes:: nil array or index set, a count mismatch, or an index beyond the
 *  result is a no-op. Indexes are positions in the result, so with n objects each must be < count + n. */
CS_ALWAYS_INLINE void cs_insert_objects_at_indexes(IMP original, id self, SEL _cmd, const void *caller,
                                                   NSArray *objects, NSIndexSet *indexes) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        /* One incident per call: the first problem found is the one reported. */
        NSUInteger n = [objects count], slots = [indexes count];
        if (CS_UNLIKELY(objects == nil)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "nil array", 0, 0, 0)) return;
        } else if (CS_UNLIKELY(indexes == nil)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "nil index set", 0, 0, 0)) return;
        } else if (CS_UNLIKELY(n != slots)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "{} objects for {} indexes", 2, n, slots)) return;
        } else if (n > 0) {
            NSUInteger last = [indexes lastIndex], count = cs_count(self);
            if (CS_UNLIKELY(last >= n && last - n >= count) &&
                cs_guard_misuse(G, self, _cmd, caller, "index {} beyond count {}", 2, last, count))
                return;
        }
    }
    ((void (*)(id, SEL, NSArray *, NSIndexSet *))original)(self, _cmd, objects, indexes);
}

#define CS_EXCHANGE_HOOK(name)                                                                     \
    static inline void name(IMP o, id s, SEL c, const void *w, NSUInteger a, NSUInteger b) { cs_exchange(o, s, c, w, a, b); } \
    CS_DEFINE_HOOK_2(name, void, NSUInteger, NSUInteger)
#define CS_REMOVE_RANGE_HOOK(name)                                                                 \
    static inline void name(IMP o, id s, SEL c, const void *w, NSRange r) { cs_remove_range(o, s, c, w, r); } \
    CS_DEFINE_HOOK_1(name, void, NSRange)
#define CS_INSERT_OBJECTS_HOOK(name)                                                               \
    static inline void name(IMP o, id s, SEL c, const void *w, NSArray *x, NSIndexSet *i) {        \
        cs_insert_objects_at_indexes(o, s, c, w, x, i);                                            \
    }                                                                                              \
    CS_DEFINE_HOOK_2(name, void, NSArray *, NSIndexSet *)

/* -setObject:atIndexedSubscript: (and the ordered set's -setObject:atIndex:): index == count
 * appends (legal); index > count or a nil object is a no-op, exactly the insert rule. */
CS_INSERT_AT_HOOK(cs_marray_setObject_atIndexedSubscript)
CS_EXCHANGE_HOOK(cs_marray_exchange)
CS_REMOVE_RANGE_HOOK(cs_marray_removeObjectsInRange)
CS_INSERT_OBJECTS_HOOK(cs_marray_insertObjects_atIndexes)

#pragma mark - NSDictionary and NSMutableDictionary

CS_DICTIONARY_COUNT_HOOK(cs_dictionary_initWithObjects_forKeys_count)
CS_DICTIONARY_COUNT_HOOK(cs_dictionary_dictionaryWithObjects_forKeys_count)
CS_KEYED_STORE_HOOK(cs_mdictionary_setObject_forKey)
CS_KEYED_REMOVE_HOOK(cs_mdictionary_removeObjectForKey)

/** A nil value with a real key removes the key: legal (SPEC §2 rule 1), so only a nil key is caught. */
static inline void cs_mdictionary_setObject_forKeyedSubscript(IMP original, id self, SEL _cmd, const void *caller,
                                                              id object, id key) {
    if (CS_LIKELY(cs_guard_is_on(G)) && CS_UNLIKELY(key == nil) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil key", 0, 0, 0))
        return;
    ((void (*)(id, SEL, id, id))original)(self, _cmd, object, key);
}
CS_DEFINE_HOOK_2(cs_mdictionary_setObject_forKeyedSubscript, void, id, id)

#pragma mark - NSSet, NSMutableSet, NSOrderedSet, NSMutableOrderedSet

CS_OBJECTS_COUNT_HOOK(cs_set_initWithObjects_count)
CS_NIL_ADD_HOOK(cs_mset_addObject)
CS_NIL_ADD_HOOK(cs_mset_removeObject)
CS_INDEX_READ_HOOK(cs_oset_objectAtIndex)
CS_INDEX_READ_HOOK(cs_oset_objectAtIndexedSubscript)
CS_OBJECTS_COUNT_HOOK(cs_oset_initWithObjects_count)
CS_NIL_ADD_HOOK(cs_moset_addObject)
CS_NIL_ADD_HOOK(cs_moset_removeObject)
CS_INSERT_AT_HOOK(cs_moset_insertObject_atIndex)
CS_REMOVE_AT_HOOK(cs_moset_removeObjectAtIndex)
CS_REPLACE_AT_HOOK(cs_moset_replaceObjectAtIndex_withObject)
CS_INSERT_AT_HOOK(cs_moset_setObject_atIndex)
CS_INSERT_AT_HOOK(cs_moset_setObject_atIndexedSubscript)
CS_EXCHANGE_HOOK(cs_moset_exchange)
CS_REMOVE_RANGE_HOOK(cs_moset_removeObjectsInRange)
CS_INSERT_OBJECTS_HOOK(cs_moset_insertObjects_atIndexes)

#pragma mark - NSCache and NSUserDefaults

CS_KEYED_STORE_HOOK(cs_cache_setObject_forKey)

static inline void cs_cache_setObject_forKey_cost(IMP original, id self, SEL _cmd, const void *caller, id object,
                                                  id key, NSUInteger cost) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        if (CS_UNLIKELY(key == nil)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "nil key", 0, 0, 0)) return;
        } else if (CS_UNLIKELY(object == nil)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "nil value", 0, 0, 0)) return;
        }
    }
    ((void (*)(id, SEL, id, id, NSUInteger))original)(self, _cmd, object, key, cost);
}
CS_DEFINE_HOOK_3(cs_cache_setObject_forKey_cost, void, id, id, NSUInteger)

/** A nil value with a real key removes the key (legal); only a nil key is caught. */
static inline void cs_defaults_setObject_forKey(IMP original, id self, SEL _cmd, const void *caller, id object,
                                                id key) {
    if (CS_LIKELY(cs_guard_is_on(G)) && CS_UNLIKELY(key == nil) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil key", 0, 0, 0))
        return;
    ((void (*)(id, SEL, id, id))original)(self, _cmd, object, key);
}
CS_DEFINE_HOOK_2(cs_defaults_setObject_forKey, void, id, id)

static inline id cs_defaults_objectForKey(IMP original, id self, SEL _cmd, const void *caller, id key) {
    if (CS_LIKELY(cs_guard_is_on(G)) && CS_UNLIKELY(key == nil) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil key", 0, 0, 0))
        return nil;
    return ((id(*)(id, SEL, id))original)(self, _cmd, key);
}
CS_DEFINE_HOOK_1(cs_defaults_objectForKey, id, id)

CS_KEYED_REMOVE_HOOK(cs_defaults_removeObjectForKey)

#pragma mark - NSData and NSMutableData

CS_ALWAYS_INLINE NSUInteger cs_length(id self) {
    return [(NSData *)self length];
}

static inline id cs_data_subdataWithRange(IMP original, id self, SEL _cmd, const void *caller, NSRange range) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger length = cs_length(self);
        if (CS_UNLIKELY(!cs_range_within(range, length)) &&
            cs_guard_misuse(G, self, _cmd, caller, "range location {} length {} beyond length", 2, range.location,
                            range.length))
            range = cs_range_clamp(range, length);
    }
    return ((id(*)(id, SEL, NSRange))original)(self, _cmd, range);
}
CS_DEFINE_HOOK_1(cs_data_subdataWithRange, id, NSRange)

static inline void cs_data_getBytes_range(IMP original, id self, SEL _cmd, const void *caller, void *buffer,
                                          NSRange range) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger length = cs_length(self);
        if (CS_UNLIKELY(!cs_range_within(range, length)) &&
            cs_guard_misuse(G, self, _cmd, caller, "range location {} length {} beyond length", 2, range.location,
                            range.length)) {
            range = cs_range_clamp(range, length);
            if (range.length == 0) return;
        }
    }
    ((void (*)(id, SEL, void *, NSRange))original)(self, _cmd, buffer, range);
}
CS_DEFINE_HOOK_2(cs_data_getBytes_range, void, void *, NSRange)

/** The range may extend past the end (the data grows), but it must start within the data and
 *  location + length must not wrap. */
static inline void cs_mdata_replaceBytesInRange_withBytes(IMP original, id self, SEL _cmd, const void *caller,
                                                          NSRange range, const void *bytes) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger length = cs_length(self);
        if (CS_UNLIKELY(range.location > length || range.length > NSUIntegerMax - range.location) &&
            cs_guard_misuse(G, self, _cmd, caller, "range location {} length {} beyond length", 2, range.location,
                            range.length))
            return;
    }
    ((void (*)(id, SEL, NSRange, const void *))original)(self, _cmd, range, bytes);
}
CS_DEFINE_HOOK_2(cs_mdata_replaceBytesInRange_withBytes, void, NSRange, const void *)

/* Apple documents that -resetBytesInRange: grows the data when the range starts inside it and
 * ends past it; GNUstep Base 1.28 throws for that case (research: unguarded probe). Each runtime's
 * legal calls stay untouched, so the check follows the platform. */
CS_ALWAYS_INLINE BOOL cs_reset_range_is_misuse(NSRange range, NSUInteger length) {
#if defined(__APPLE__)
    return range.location > length || range.length > NSUIntegerMax - range.location;
#else
    return !cs_range_within(range, length);
#endif
}

static inline void cs_mdata_resetBytesInRange(IMP original, id self, SEL _cmd, const void *caller, NSRange range) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger length = cs_length(self);
        if (CS_UNLIKELY(cs_reset_range_is_misuse(range, length)) &&
            cs_guard_misuse(G, self, _cmd, caller, "range location {} length {} beyond length", 2, range.location,
                            range.length))
            return;
    }
    ((void (*)(id, SEL, NSRange))original)(self, _cmd, range);
}
CS_DEFINE_HOOK_1(cs_mdata_resetBytesInRange, void, NSRange)

#pragma mark - Registration

static const CSHookSpec kContainerHooks[] = {
    CS_HOOK("NSArray", "objectAtIndex:", cs_array_objectAtIndex),
    CS_HOOK("NSArray", "objectAtIndexedSubscript:", cs_array_objectAtIndexedSubscript),
    CS_HOOK("NSArray", "subarrayWithRange:", cs_array_subarrayWithRange),
    CS_HOOK("NSArray", "objectsAtIndexes:", cs_array_objectsAtIndexes),
    CS_HOOK("NSArray", "getObjects:range:", cs_array_getObjects_range),
    CS_HOOK("NSArray", "initWithObjects:count:", cs_array_initWithObjects_count),
    CS_CLASS_HOOK("NSArray", "arrayWithObjects:count:", cs_array_arrayWithObjects_count),

    CS_HOOK("NSMutableArray", "addObject:", cs_marray_addObject),
    CS_HOOK("NSMutableArray", "insertObject:atIndex:", cs_marray_insertObject_atIndex),
    CS_HOOK("NSMutableArray", "removeObjectAtIndex:", cs_marray_removeObjectAtIndex),
    CS_HOOK("NSMutableArray", "replaceObjectAtIndex:withObject:", cs_marray_replaceObjectAtIndex_withObject),
    CS_HOOK("NSMutableArray", "exchangeObjectAtIndex:withObjectAtIndex:", cs_marray_exchange),
    CS_HOOK("NSMutableArray", "setObject:atIndexedSubscript:", cs_marray_setObject_atIndexedSubscript),
    CS_HOOK("NSMutableArray", "removeObjectsInRange:", cs_marray_removeObjectsInRange),
    CS_HOOK("NSMutableArray", "insertObjects:atIndexes:", cs_marray_insertObjects_atIndexes),

    CS_HOOK("NSDictionary", "initWithObjects:forKeys:count:", cs_dictionary_initWithObjects_forKeys_count),
    CS_CLASS_HOOK("NSDictionary", "dictionaryWithObjects:forKeys:count:",
                  cs_dictionary_dictionaryWithObjects_forKeys_count),
    CS_HOOK("NSMutableDictionary", "setObject:forKey:", cs_mdictionary_setObject_forKey),
    CS_HOOK("NSMutableDictionary", "setObject:forKeyedSubscript:", cs_mdictionary_setObject_forKeyedSubscript),
    CS_HOOK("NSMutableDictionary", "removeObjectForKey:", cs_mdictionary_removeObjectForKey),

    CS_HOOK("NSSet", "initWithObjects:count:", cs_set_initWithObjects_count),
    CS_HOOK("NSMutableSet", "addObject:", cs_mset_addObject),
    CS_HOOK("NSMutableSet", "removeObject:", cs_mset_removeObject),
    CS_HOOK("NSOrderedSet", "objectAtIndex:", cs_oset_objectAtIndex),
    CS_HOOK("NSOrderedSet", "objectAtIndexedSubscript:", cs_oset_objectAtIndexedSubscript),
    CS_HOOK("NSOrderedSet", "initWithObjects:count:", cs_oset_initWithObjects_count),
    CS_HOOK("NSMutableOrderedSet", "addObject:", cs_moset_addObject),
    CS_HOOK("NSMutableOrderedSet", "removeObject:", cs_moset_removeObject),
    CS_HOOK("NSMutableOrderedSet", "insertObject:atIndex:", cs_moset_insertObject_atIndex),
    CS_HOOK("NSMutableOrderedSet", "removeObjectAtIndex:", cs_moset_removeObjectAtIndex),
    CS_HOOK("NSMutableOrderedSet", "replaceObjectAtIndex:withObject:", cs_moset_replaceObjectAtIndex_withObject),
    CS_HOOK("NSMutableOrderedSet", "setObject:atIndex:", cs_moset_setObject_atIndex),
    CS_HOOK("NSMutableOrderedSet", "setObject:atIndexedSubscript:", cs_moset_setObject_atIndexedSubscript),
    CS_HOOK("NSMutableOrderedSet", "exchangeObjectAtIndex:withObjectAtIndex:", cs_moset_exchange),
    CS_HOOK("NSMutableOrderedSet", "removeObjectsInRange:", cs_moset_removeObjectsInRange),
    CS_HOOK("NSMutableOrderedSet", "insertObjects:atIndexes:", cs_moset_insertObjects_atIndexes),

    CS_HOOK("NSCache", "setObject:forKey:", cs_cache_setObject_forKey),
    CS_HOOK("NSCache", "setObject:forKey:cost:", cs_cache_setObject_forKey_cost),
    CS_HOOK("NSUserDefaults", "setObject:forKey:", cs_defaults_setObject_forKey),
    CS_HOOK("NSUserDefaults", "objectForKey:", cs_defaults_objectForKey),
    CS_HOOK("NSUserDefaults", "removeObjectForKey:", cs_defaults_removeObjectForKey),

    CS_HOOK("NSData", "subdataWithRange:", cs_data_subdataWithRange),
    CS_HOOK("NSData", "getBytes:range:", cs_data_getBytes_range),
    CS_HOOK("NSMutableData", "replaceBytesInRange:withBytes:", cs_mdata_replaceBytesInRange_withBytes),
    CS_HOOK("NSMutableData", "resetBytesInRange:", cs_mdata_resetBytesInRange),
};

static inline id cs_canary_opaque(id value) {
    __asm__ volatile("" : "+r"(value));
    return value;
}

static const char *cs_containers_canary(void) {
    NSArray *array = [NSArray arrayWithObjects:CS_STR("a"), CS_STR("b"), nil];
    CS_CANARY_MISUSE([array objectAtIndex:5] == nil, "-[NSArray objectAtIndex:] beyond count not intercepted");
    CS_CANARY_LEGAL([[array objectAtIndex:1] isEqual:CS_STR("b")], "-[NSArray objectAtIndex:] legal call changed");

    NSMutableArray *mutable = [NSMutableArray arrayWithCapacity:2];
    CS_CANARY_MISUSE(([mutable addObject:cs_canary_opaque(nil)], [mutable count] == 0),
                     "-[NSMutableArray addObject:] nil not intercepted");
    CS_CANARY_LEGAL(([mutable addObject:CS_STR("x")], [mutable count] == 1), "-[NSMutableArray addObject:] legal call changed");

    NSMutableDictionary *dictionary = [NSMutableDictionary dictionaryWithCapacity:2];
    CS_CANARY_MISUSE(([dictionary setObject:CS_STR("v") forKey:cs_canary_opaque(nil)], [dictionary count] == 0),
                     "-[NSMutableDictionary setObject:forKey:] nil key not intercepted");
    CS_CANARY_LEGAL(([dictionary setObject:CS_STR("v") forKey:CS_STR("k")], [[dictionary objectForKey:CS_STR("k")] isEqual:CS_STR("v")]),
                    "-[NSMutableDictionary setObject:forKey:] legal call changed");

    id missing = cs_canary_opaque(nil);
    CS_CANARY_MISUSE(([@[ CS_STR("a"), missing, CS_STR("c") ] isEqual:[NSArray arrayWithObjects:CS_STR("a"), CS_STR("c"), nil]]),
                     "array literal with nil not intercepted");
    CS_CANARY_LEGAL(([@[ CS_STR("a"), CS_STR("c") ] count] == 2), "array literal legal call changed");
    return NULL;
}

CS_GUARD_DEFINE(CSGuardContainers, container, kContainerHooks, cs_containers_canary);
