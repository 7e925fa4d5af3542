/*
 * CSGuard_Containers.m — NSArray, NSMutableArray, NSDictionary, NSMutableDictionary,
 * NSSet/NSMutableSet, NSOrderedSet/NSMutableOrderedSet, NSCache, NSUserDefaults, NSData and
 * NSMutableData, on every concrete class that defines the hooked selectors (found at run time).
 *
 * Neutralised results: a read beyond bounds returns nil (a range read returns the valid part);
 * a copy into the caller's buffer (-getObjects:range:, -getBytes:range:) whose range is out of
 * bounds writes nothing, as the original that throws writes nothing; a mutation that would throw
 * is a no-op; a nil element (or a pair with a nil key or value) in a bulk initialiser is skipped.
 *
 * Invariants:
 * - A hook checks its arguments against the receiver's current count before calling the
 *   original, and calls the original with exactly the caller's arguments when they are legal.
 * - Ranges are checked without computing location + length (it may wrap).
 * - A hook never writes caller memory that the original would not have written: its size is
 *   the caller's to know, and a caller whose range is wrong may have sized it wrong too.
 * - The misuse path formats nothing; only the initialisers that skip nil elements need a copy of
 *   the caller's list (on the stack when small).
 */
#import "../Engine/CSEngine.h"
#include <stdlib.h>
#include <string.h>

CS_GUARD_CODE_SECTION(container) /* every function below: see CS_GUARD_METHOD */

#import "CSReceiverMeasure.h"

/* Hidden: the hooks read its policy PC-relative instead of through the GOT (hot path). */
extern CSGuard CSGuardContainers __attribute__((visibility("hidden")));
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

/* -count of arrays and ordered sets: see CSReceiverMeasure.h. Key-value coding collection proxies
 * are marked unbounded at install (cs_containers_install). */
static cs_measure_cache g_count_cache;

/** YES with the receiver's -count in *count; NO when the receiver's originals do not check
 *  against their own -count (the hook then calls the original without a bounds check). */
CS_ALWAYS_INLINE BOOL cs_count_of(CS_UNRETAINED id self, NSUInteger *count) {
    return cs_measure(&g_count_cache, @selector(count), self, count);
}

#pragma mark - Shared bodies

/** Index reads (-objectAtIndex: and subscripts): nil beyond count. `wrapped`: for a wrapper's
 *  hook, the hook of the -objectAtIndex: it forwards to (cs_wrapper_bound_applies), else NULL. */
CS_ALWAYS_INLINE id cs_index_read(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller, NSUInteger index,
                                  const CSHookSlots *wrapped) {
    NSUInteger count;
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_count_of(self, &count)) {
        if (CS_UNLIKELY(index >= count) &&
            (wrapped == NULL || cs_wrapper_bound_applies(self, @selector(count), @selector(objectAtIndex:), wrapped)) &&
            cs_guard_misuse(G, self, _cmd, caller, "index {} beyond count {}", 2, index, count))
            return nil;
    }
    return ((id(*)(id, SEL, NSUInteger))original)(self, _cmd, index);
}

/** Fast predicate of the index reads: the guard is off, or the receiver's count is a field
 *  (CSReceiverMeasure.h) and the index lies below it. NO is not a verdict: the full body decides. */
CS_ALWAYS_INLINE BOOL cs_index_read_fast(CS_UNRETAINED id self, NSUInteger index) {
    CS_FAST_PREDICATE_POLICY_GATE(G);
    NSUInteger count;
    return cs_measure_field(&g_count_cache, self, &count) && index < count;
}

/** Adds of one object: nil is a no-op. */
CS_ALWAYS_INLINE void cs_nil_object_add(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                        CS_UNRETAINED id object) {
    if (CS_LIKELY(cs_guard_is_on(G)) && CS_UNLIKELY(object == nil) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil object", 0, 0, 0))
        return;
    ((void (*)(id, SEL, id))original)(self, _cmd, object);
}

/** Inserts at an index: nil object or index > count is a no-op. */
CS_ALWAYS_INLINE void cs_insert_at(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                   CS_UNRETAINED id object, NSUInteger index) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        if (CS_UNLIKELY(object == nil)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "nil object", 0, 0, 0)) return;
        } else {
            NSUInteger count;
            if (cs_count_of(self, &count) && CS_UNLIKELY(index > count) &&
                cs_guard_misuse(G, self, _cmd, caller, "index {} beyond count {}", 2, index, count))
                return;
        }
    }
    ((void (*)(id, SEL, id, NSUInteger))original)(self, _cmd, object, index);
}

/** Removes at an index: index >= count is a no-op. */
CS_ALWAYS_INLINE void cs_remove_at(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                   NSUInteger index) {
    NSUInteger count;
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_count_of(self, &count)) {
        if (CS_UNLIKELY(index >= count) &&
            cs_guard_misuse(G, self, _cmd, caller, "index {} beyond count {}", 2, index, count))
            return;
    }
    ((void (*)(id, SEL, NSUInteger))original)(self, _cmd, index);
}

/** Replaces at an index: index >= count or a nil object is a no-op. */
CS_ALWAYS_INLINE void cs_replace_at(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller, NSUInteger index,
                                    CS_UNRETAINED id object) {
    NSUInteger count;
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_count_of(self, &count)) {
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
    CS_UNRETAINED id self; /* the caller's reference, consumed by the original (init family) */
    SEL cmd;
    const id *objects;
    const id *keys; /* dictionaries only */
    NSUInteger count;
    BOOL with_keys;
    cs_opaque_object result; /* with the original's ownership (CSHookSlots.h) */
} cs_bulk_call;

static void cs_bulk_call_original(void *context) {
    cs_bulk_call *call = context;
    if (call->with_keys)
        call->result = ((cs_opaque_object(*)(CS_UNRETAINED id, SEL, const id *, const id *, NSUInteger))call->original)(
            call->self, call->cmd, call->objects, call->keys, call->count);
    else
        call->result = ((cs_opaque_object(*)(CS_UNRETAINED id, SEL, const id *, NSUInteger))call->original)(
            call->self, call->cmd, call->objects, call->count);
}

static void cs_bulk_call_done(void *context) {
    (void)context;
    t_bulk_reported_depth--;
}

/** Report-only path of the bulk initialisers: the original runs (and usually throws) with the
 *  nested initialisers told not to record the same misuse again; the depth is restored when it
 *  throws too. Not a hot path. */
static cs_opaque_object cs_bulk_pass_through(cs_bulk_call call) {
    t_bulk_reported_depth++;
    cs_objc_try_finally(cs_bulk_call_original, cs_bulk_call_done, &call);
    return call.result;
}
#define CS_BULK_PASS_THROUGH(...) return cs_bulk_pass_through((cs_bulk_call){__VA_ARGS__})

/**
 * Bulk initialisers with a C array of objects (-initWithObjects:count:, +arrayWithObjects:count:,
 * collection literals): nil elements are skipped, the rest keep their order. A NULL list with a
 * non-zero count is treated as empty. Every path ends in the original, whose result (+1 from an
 * initialiser, +0 from a factory) is returned as it came (cs_opaque_object).
 */
static cs_opaque_object cs_objects_count_init(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                              const id *objects, NSUInteger count) {
    typedef cs_opaque_object (*init_fn)(CS_UNRETAINED id, SEL, const id *, NSUInteger);
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
            /* The caller's objects, borrowed for the call: never retained. */
            CS_UNRETAINED id stack[32];
            CS_UNRETAINED id *kept = count <= 32 ? stack : (CS_UNRETAINED id *)malloc(count * sizeof(id));
            if (kept == NULL) return ((init_fn)original)(self, _cmd, objects, first);
            NSUInteger n = 0;
            for (NSUInteger i = 0; i < count; i++)
                if (objects[i] != nil) kept[n++] = objects[i];
            cs_opaque_object result = ((init_fn)original)(self, _cmd, kept, n);
            if (kept != stack) free(kept);
            return result;
        }
    }
    return ((init_fn)original)(self, _cmd, objects, count);
}

/** Dictionary bulk initialisers (and literals): pairs with a nil key or a nil value are skipped. */
static cs_opaque_object cs_dictionary_count_init(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                                 const id *objects, const id *keys, NSUInteger count) {
    typedef cs_opaque_object (*init_fn)(CS_UNRETAINED id, SEL, const id *, const id *, NSUInteger);
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
            CS_UNRETAINED id stack[64]; /* borrowed, as above */
            CS_UNRETAINED id *kept = count <= 32 ? stack : (CS_UNRETAINED id *)malloc(2 * count * sizeof(id));
            if (kept == NULL) return ((init_fn)original)(self, _cmd, objects, keys, first);
            CS_UNRETAINED id *keptKeys = kept + count;
            NSUInteger n = 0;
            for (NSUInteger i = 0; i < count; i++) {
                if (objects[i] == nil || keys[i] == nil) continue;
                kept[n] = objects[i];
                keptKeys[n] = keys[i];
                n++;
            }
            cs_opaque_object result = ((init_fn)original)(self, _cmd, kept, keptKeys, n);
            if (kept != stack) free(kept);
            return result;
        }
    }
    return ((init_fn)original)(self, _cmd, objects, keys, count);
}

/** Keyed stores (-setObject:forKey:): a nil key or a nil value is a no-op. */
CS_ALWAYS_INLINE void cs_keyed_store(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                     CS_UNRETAINED id object, CS_UNRETAINED id key) {
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
CS_ALWAYS_INLINE void cs_keyed_remove(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                      CS_UNRETAINED id key) {
    if (CS_LIKELY(cs_guard_is_on(G)) && CS_UNLIKELY(key == nil) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil key", 0, 0, 0))
        return;
    ((void (*)(id, SEL, id))original)(self, _cmd, key);
}

/* One hook per (root, selector) needs its own slot table, so the shared bodies are stamped out
 * under each hook's name. */
#define CS_INDEX_READ_HOOK(name)                                                                   \
    static inline id name(IMP o, CS_UNRETAINED id s, SEL c, const void *w, NSUInteger i) { return cs_index_read(o, s, c, w, i, NULL); } \
    CS_DEFINE_FAST_HOOK_1(name, id, NSUInteger, cs_index_read_fast)
/* A subscript read, which the system implements as a wrapper of `primitive`'s -objectAtIndex:. */
#define CS_INDEX_WRAPPER_HOOK(name, primitive)                                                     \
    static inline id name(IMP o, CS_UNRETAINED id s, SEL c, const void *w, NSUInteger i) {          \
        return cs_index_read(o, s, c, w, i, &primitive##_slots);                                   \
    }                                                                                              \
    CS_DEFINE_FAST_HOOK_1(name, id, NSUInteger, cs_index_read_fast)
#define CS_NIL_ADD_HOOK(name)                                                                      \
    static inline void name(IMP o, CS_UNRETAINED id s, SEL c, const void *w, CS_UNRETAINED id x) { cs_nil_object_add(o, s, c, w, x); } \
    CS_DEFINE_HOOK_1(name, void, CS_UNRETAINED id)
#define CS_INSERT_AT_HOOK(name)                                                                    \
    static inline void name(IMP o, CS_UNRETAINED id s, SEL c, const void *w, CS_UNRETAINED id x, NSUInteger i) { cs_insert_at(o, s, c, w, x, i); } \
    CS_DEFINE_HOOK_2(name, void, CS_UNRETAINED id, NSUInteger)
#define CS_REMOVE_AT_HOOK(name)                                                                    \
    static inline void name(IMP o, CS_UNRETAINED id s, SEL c, const void *w, NSUInteger i) { cs_remove_at(o, s, c, w, i); } \
    CS_DEFINE_HOOK_1(name, void, NSUInteger)
#define CS_REPLACE_AT_HOOK(name)                                                                   \
    static inline void name(IMP o, CS_UNRETAINED id s, SEL c, const void *w, NSUInteger i, CS_UNRETAINED id x) { cs_replace_at(o, s, c, w, i, x); } \
    CS_DEFINE_HOOK_2(name, void, NSUInteger, CS_UNRETAINED id)
#define CS_OBJECTS_COUNT_HOOK(name)                                                                \
    static inline cs_opaque_object name(IMP o, CS_UNRETAINED id s, SEL c, const void *w, const id *x, NSUInteger n) { \
        return cs_objects_count_init(o, s, c, w, x, n);                                            \
    }                                                                                              \
    CS_DEFINE_HOOK_2(name, cs_opaque_object, const id *, NSUInteger)
#define CS_DICTIONARY_COUNT_HOOK(name)                                                             \
    static inline cs_opaque_object name(IMP o, CS_UNRETAINED id s, SEL c, const void *w, const id *x, const id *k, \
                                        NSUInteger n) {                                            \
        return cs_dictionary_count_init(o, s, c, w, x, k, n);                                      \
    }                                                                                              \
    CS_DEFINE_HOOK_3(name, cs_opaque_object, const id *, const id *, NSUInteger)
#define CS_KEYED_STORE_HOOK(name)                                                                  \
    static inline void name(IMP o, CS_UNRETAINED id s, SEL c, const void *w, CS_UNRETAINED id x, CS_UNRETAINED id k) { cs_keyed_store(o, s, c, w, x, k); } \
    CS_DEFINE_HOOK_2(name, void, CS_UNRETAINED id, CS_UNRETAINED id)
#define CS_KEYED_REMOVE_HOOK(name)                                                                 \
    static inline void name(IMP o, CS_UNRETAINED id s, SEL c, const void *w, CS_UNRETAINED id k) { cs_keyed_remove(o, s, c, w, k); } \
    CS_DEFINE_HOOK_1(name, void, CS_UNRETAINED id)

#pragma mark - NSArray

CS_INDEX_READ_HOOK(cs_array_objectAtIndex)
CS_INDEX_WRAPPER_HOOK(cs_array_objectAtIndexedSubscript, cs_array_objectAtIndex)
CS_OBJECTS_COUNT_HOOK(cs_array_initWithObjects_count)
CS_OBJECTS_COUNT_HOOK(cs_array_arrayWithObjects_count)

static inline id cs_array_subarrayWithRange(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                            NSRange range) {
    NSUInteger count;
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_count_of(self, &count)) {
        if (CS_UNLIKELY(!cs_range_within(range, count)) &&
            cs_guard_misuse(G, self, _cmd, caller, "range location {} length {} beyond count", 2, range.location,
                            range.length))
            range = cs_range_clamp(range, count);
    }
    return ((id(*)(id, SEL, NSRange))original)(self, _cmd, range);
}
CS_DEFINE_HOOK_1(cs_array_subarrayWithRange, id, NSRange)

static inline id cs_array_objectsAtIndexes(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                           CS_UNRETAINED NSIndexSet *indexes) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        if (CS_UNLIKELY(indexes == nil)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "nil index set", 0, 0, 0)) return [CS_CLASS(NSArray) array];
        } else {
            NSUInteger last = [indexes lastIndex]; /* NSNotFound when empty: nothing to check */
            NSUInteger count;
            if (CS_UNLIKELY(last != NSNotFound) && cs_count_of(self, &count) && CS_UNLIKELY(last >= count) &&
                cs_wrapper_bound_applies(self, @selector(count), @selector(objectAtIndex:), &cs_array_objectAtIndex_slots) &&
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
CS_DEFINE_HOOK_1(cs_array_objectsAtIndexes, id, CS_UNRETAINED NSIndexSet *)

/* `buffer` is the caller's C array: the original stores borrowed (unretained) pointers into it.
 * A neutralised call writes nothing (see cs_data_getBytes_range: the caller's buffer was sized
 * for a request that is wrong, so even the valid part may not fit). */
static inline void cs_array_getObjects_range(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                             CS_UNRETAINED id *buffer, NSRange range) {
    NSUInteger count;
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_count_of(self, &count)) {
        if (CS_UNLIKELY(!cs_range_within(range, count)) &&
            cs_guard_misuse(G, self, _cmd, caller, "range location {} length {} beyond count", 2, range.location,
                            range.length))
            return;
    }
    ((void (*)(id, SEL, CS_UNRETAINED id *, NSRange))original)(self, _cmd, buffer, range);
}
CS_DEFINE_HOOK_2(cs_array_getObjects_range, void, CS_UNRETAINED id *, NSRange)

#pragma mark - NSMutableArray

CS_NIL_ADD_HOOK(cs_marray_addObject)
CS_INSERT_AT_HOOK(cs_marray_insertObject_atIndex)
CS_REMOVE_AT_HOOK(cs_marray_removeObjectAtIndex)
CS_REPLACE_AT_HOOK(cs_marray_replaceObjectAtIndex_withObject)

/** -removeLastObject: on an empty array it is a no-op. */
CS_ALWAYS_INLINE void cs_remove_last(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller) {
    NSUInteger count;
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_count_of(self, &count) && CS_UNLIKELY(count == 0) &&
        cs_guard_misuse(G, self, _cmd, caller, "no object to remove", 0, 0, 0))
        return;
    ((void (*)(id, SEL))original)(self, _cmd);
}
#define CS_REMOVE_LAST_HOOK(name)                                                                  \
    static inline void name(IMP o, CS_UNRETAINED id s, SEL c, const void *w) { cs_remove_last(o, s, c, w); }     \
    CS_DEFINE_HOOK_0(name, void)
CS_REMOVE_LAST_HOOK(cs_marray_removeLastObject)

/** -replaceObjectsInRange:withObjectsFromArray:: a range not within [0, count] is a no-op (a nil
 *  array is legal: it removes the range). */
static inline void cs_marray_replaceObjectsInRange(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                                   NSRange range, CS_UNRETAINED NSArray *objects) {
    NSUInteger count;
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_count_of(self, &count) && CS_UNLIKELY(!cs_range_within(range, count)) &&
        cs_guard_misuse(G, self, _cmd, caller, "range location {} length {} beyond count", 2, range.location,
                        range.length))
        return;
    ((void (*)(id, SEL, NSRange, NSArray *))original)(self, _cmd, range, objects);
}
CS_DEFINE_HOOK_2(cs_marray_replaceObjectsInRange, void, NSRange, CS_UNRETAINED NSArray *)

/** -replaceObjectsInRange:withObjectsFromArray:range:: either range out of its array is a no-op. */
static inline void cs_marray_replaceObjectsInRange_range(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                         const void *caller, NSRange range,
                                                         CS_UNRETAINED NSArray *objects, NSRange source) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger count;
        if (cs_count_of(self, &count) && CS_UNLIKELY(!cs_range_within(range, count))) {
            if (cs_guard_misuse(G, self, _cmd, caller, "range location {} length {} beyond count", 2, range.location,
                                range.length))
                return;
        } else if (CS_UNLIKELY(!cs_range_within(source, [objects count]))) {
            if (cs_guard_misuse(G, self, _cmd, caller, "source range location {} length {} beyond count", 2,
                                source.location, source.length))
                return;
        }
    }
    ((void (*)(id, SEL, NSRange, NSArray *, NSRange))original)(self, _cmd, range, objects, source);
}
CS_DEFINE_HOOK_3(cs_marray_replaceObjectsInRange_range, void, NSRange, CS_UNRETAINED NSArray *, NSRange)

/** -arrayByAddingObject: nil answers an unchanged (immutable) copy of the receiver. */
static inline id cs_array_arrayByAddingObject(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                              CS_UNRETAINED id object) {
    if (CS_LIKELY(cs_guard_is_on(G)) && CS_UNLIKELY(object == nil) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil object", 0, 0, 0))
        return CS_AUTORELEASE([(NSArray *)self copy]);
    return ((id(*)(id, SEL, id))original)(self, _cmd, object);
}
CS_DEFINE_HOOK_1(cs_array_arrayByAddingObject, id, CS_UNRETAINED id)

/** Exchanges: either index >= count is a no-op. */
CS_ALWAYS_INLINE void cs_exchange(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller, NSUInteger a,
                                  NSUInteger b) {
    NSUInteger count;
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_count_of(self, &count)) {
        if (CS_UNLIKELY(a >= count || b >= count) &&
            cs_guard_misuse(G, self, _cmd, caller, "index {} beyond count {}", 2, a >= count ? a : b, count))
            return;
    }
    ((void (*)(id, SEL, NSUInteger, NSUInteger))original)(self, _cmd, a, b);
}

/** Range removal: a range not within [0, count] is a no-op. */
CS_ALWAYS_INLINE void cs_remove_range(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                      NSRange range) {
    NSUInteger count;
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_count_of(self, &count)) {
        if (CS_UNLIKELY(!cs_range_within(range, count)) &&
            cs_guard_misuse(G, self, _cmd, caller, "range location {} length {} beyond count", 2, range.location,
                            range.length))
            return;
    }
    ((void (*)(id, SEL, NSRange))original)(self, _cmd, range);
}

/** -insertObjects:atIndexes:: nil array or index set, a count mismatch, or an index beyond the
 *  result is a no-op. Indexes are positions in the result, so with n objects each must be < count + n. */
CS_ALWAYS_INLINE void cs_insert_objects_at_indexes(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                                   CS_UNRETAINED NSArray *objects, CS_UNRETAINED NSIndexSet *indexes) {
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
            NSUInteger last = [indexes lastIndex], count;
            if (CS_UNLIKELY(last >= n) && cs_count_of(self, &count) && CS_UNLIKELY(last - n >= count) &&
                cs_guard_misuse(G, self, _cmd, caller, "index {} beyond count {}", 2, last, count))
                return;
        }
    }
    ((void (*)(id, SEL, NSArray *, NSIndexSet *))original)(self, _cmd, objects, indexes);
}

#define CS_EXCHANGE_HOOK(name)                                                                     \
    static inline void name(IMP o, CS_UNRETAINED id s, SEL c, const void *w, NSUInteger a, NSUInteger b) { cs_exchange(o, s, c, w, a, b); } \
    CS_DEFINE_HOOK_2(name, void, NSUInteger, NSUInteger)
#define CS_REMOVE_RANGE_HOOK(name)                                                                 \
    static inline void name(IMP o, CS_UNRETAINED id s, SEL c, const void *w, NSRange r) { cs_remove_range(o, s, c, w, r); } \
    CS_DEFINE_HOOK_1(name, void, NSRange)
#define CS_INSERT_OBJECTS_HOOK(name)                                                               \
    static inline void name(IMP o, CS_UNRETAINED id s, SEL c, const void *w, CS_UNRETAINED NSArray *x, CS_UNRETAINED NSIndexSet *i) {        \
        cs_insert_objects_at_indexes(o, s, c, w, x, i);                                            \
    }                                                                                              \
    CS_DEFINE_HOOK_2(name, void, CS_UNRETAINED NSArray *, CS_UNRETAINED NSIndexSet *)

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

/** A nil value with a real key removes the key: legal, so only a nil key is caught. */
static inline void cs_mdictionary_setObject_forKeyedSubscript(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                              const void *caller, CS_UNRETAINED id object,
                                                              CS_UNRETAINED id key) {
    if (CS_LIKELY(cs_guard_is_on(G)) && CS_UNLIKELY(key == nil) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil key", 0, 0, 0))
        return;
    ((void (*)(id, SEL, id, id))original)(self, _cmd, object, key);
}
CS_DEFINE_HOOK_2(cs_mdictionary_setObject_forKeyedSubscript, void, CS_UNRETAINED id, CS_UNRETAINED id)

#pragma mark - NSSet, NSMutableSet, NSOrderedSet, NSMutableOrderedSet

CS_OBJECTS_COUNT_HOOK(cs_set_initWithObjects_count)
CS_NIL_ADD_HOOK(cs_mset_addObject)
CS_NIL_ADD_HOOK(cs_mset_removeObject)
CS_INDEX_READ_HOOK(cs_oset_objectAtIndex)
CS_INDEX_WRAPPER_HOOK(cs_oset_objectAtIndexedSubscript, cs_oset_objectAtIndex)
CS_OBJECTS_COUNT_HOOK(cs_oset_initWithObjects_count)
CS_NIL_ADD_HOOK(cs_moset_addObject)
CS_NIL_ADD_HOOK(cs_moset_removeObject)
/* Inserting beyond the count of a mutable ordered set: Apple throws; GNUstep Base 1.28 appends
 * (GSOrderedSet's -insertObject:atIndex: stores at the end, and the generic
 * -insertObjects:atIndexes: inserts one by one), so there only nil is a misuse. Removing a range
 * that extends past the end: Apple throws; GNUstep removes the part within the set. Each platform
 * keeps its own legal results (checked by the boundary oracle). */
#if defined(__APPLE__)
CS_INSERT_AT_HOOK(cs_moset_insertObject_atIndex)
#else
static inline void cs_moset_insertObject_atIndex(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                                 CS_UNRETAINED id object, NSUInteger index) {
    if (CS_LIKELY(cs_guard_is_on(G)) && CS_UNLIKELY(object == nil) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil object", 0, 0, 0))
        return;
    ((void (*)(id, SEL, id, NSUInteger))original)(self, _cmd, object, index);
}
CS_DEFINE_HOOK_2(cs_moset_insertObject_atIndex, void, CS_UNRETAINED id, NSUInteger)
#endif
CS_REMOVE_AT_HOOK(cs_moset_removeObjectAtIndex)
CS_REPLACE_AT_HOOK(cs_moset_replaceObjectAtIndex_withObject)
CS_INSERT_AT_HOOK(cs_moset_setObject_atIndex)
CS_INSERT_AT_HOOK(cs_moset_setObject_atIndexedSubscript)
CS_EXCHANGE_HOOK(cs_moset_exchange)
#if defined(__APPLE__)
CS_REMOVE_RANGE_HOOK(cs_moset_removeObjectsInRange)
CS_INSERT_OBJECTS_HOOK(cs_moset_insertObjects_atIndexes)
#else
/* GNUstep: neither is hooked. Its generic -insertObjects:atIndexes: walks both lists until one
 * ends (a count mismatch, a nil array or a nil index set never throws) and its
 * -removeObjectsInRange: clamps the range. */
#endif

#pragma mark - NSCache and NSUserDefaults

CS_KEYED_STORE_HOOK(cs_cache_setObject_forKey)

static inline void cs_cache_setObject_forKey_cost(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                                  CS_UNRETAINED id object, CS_UNRETAINED id key, NSUInteger cost) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        if (CS_UNLIKELY(key == nil)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "nil key", 0, 0, 0)) return;
        } else if (CS_UNLIKELY(object == nil)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "nil value", 0, 0, 0)) return;
        }
    }
    ((void (*)(id, SEL, id, id, NSUInteger))original)(self, _cmd, object, key, cost);
}
CS_DEFINE_HOOK_3(cs_cache_setObject_forKey_cost, void, CS_UNRETAINED id, CS_UNRETAINED id, NSUInteger)

/** A nil value with a real key removes the key (legal); only a nil key is caught. */
static inline void cs_defaults_setObject_forKey(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                                CS_UNRETAINED id object, CS_UNRETAINED id key) {
    if (CS_LIKELY(cs_guard_is_on(G)) && CS_UNLIKELY(key == nil) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil key", 0, 0, 0))
        return;
    ((void (*)(id, SEL, id, id))original)(self, _cmd, object, key);
}
CS_DEFINE_HOOK_2(cs_defaults_setObject_forKey, void, CS_UNRETAINED id, CS_UNRETAINED id)

static inline id cs_defaults_objectForKey(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                          CS_UNRETAINED id key) {
    if (CS_LIKELY(cs_guard_is_on(G)) && CS_UNLIKELY(key == nil) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil key", 0, 0, 0))
        return nil;
    return ((id(*)(id, SEL, id))original)(self, _cmd, key);
}
CS_DEFINE_HOOK_1(cs_defaults_objectForKey, id, CS_UNRETAINED id)

CS_KEYED_REMOVE_HOOK(cs_defaults_removeObjectForKey)

#pragma mark - NSData and NSMutableData

static cs_measure_cache g_length_cache; /* -length of data objects */

CS_ALWAYS_INLINE BOOL cs_length_of(CS_UNRETAINED id self, NSUInteger *length) {
    return cs_measure(&g_length_cache, @selector(length), self, length);
}

static inline id cs_data_subdataWithRange(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                          NSRange range) {
    NSUInteger length;
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_length_of(self, &length)) {
        if (CS_UNLIKELY(!cs_range_within(range, length)) &&
            cs_guard_misuse(G, self, _cmd, caller, "range location {} length {} beyond length", 2, range.location,
                            range.length))
            range = cs_range_clamp(range, length);
    }
    return ((id(*)(id, SEL, NSRange))original)(self, _cmd, range);
}
CS_DEFINE_HOOK_1(cs_data_subdataWithRange, id, NSRange)

/** A neutralised call writes nothing into `buffer`, as the original, which checks the range before
 *  it copies, writes nothing when it throws. The valid part of the range is not copied: the
 *  guard cannot know the buffer's size, and a caller whose range is wrong may have sized the
 *  buffer smaller than even that part (GNUstep Base's NSData/general.m asks for 312 bytes into a
 *  100-byte buffer, expecting the throw; copying 311 of them overwrote the heap after it). */
static inline void cs_data_getBytes_range(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                          void *buffer, NSRange range) {
    NSUInteger length;
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_length_of(self, &length)) {
        if (CS_UNLIKELY(!cs_range_within(range, length)) &&
            cs_guard_misuse(G, self, _cmd, caller, "range location {} length {} beyond length", 2, range.location,
                            range.length))
            return;
    }
    ((void (*)(id, SEL, void *, NSRange))original)(self, _cmd, buffer, range);
}
CS_DEFINE_HOOK_2(cs_data_getBytes_range, void, void *, NSRange)

/** The range may extend past the end (the data grows), but it must start within the data and
 *  location + length must not wrap. */
static inline void cs_mdata_replaceBytesInRange_withBytes(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                          const void *caller, NSRange range, const void *bytes) {
    NSUInteger length;
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_length_of(self, &length)) {
        if (CS_UNLIKELY(range.location > length || range.length > NSUIntegerMax - range.location) &&
            cs_guard_misuse(G, self, _cmd, caller, "range location {} length {} beyond length", 2, range.location,
                            range.length))
            return;
    }
    ((void (*)(id, SEL, NSRange, const void *))original)(self, _cmd, range, bytes);
}
CS_DEFINE_HOOK_2(cs_mdata_replaceBytesInRange_withBytes, void, NSRange, const void *)

/* Apple documents that -resetBytesInRange: grows the data when the range starts inside it and
 * ends past it; GNUstep Base 1.28 throws for that case (verified without the guard). Each runtime's
 * legal calls stay untouched, so the check follows the platform. */
CS_ALWAYS_INLINE BOOL cs_reset_range_is_misuse(NSRange range, NSUInteger length) {
#if defined(__APPLE__)
    return range.location > length || range.length > NSUIntegerMax - range.location;
#else
    return !cs_range_within(range, length);
#endif
}

static inline void cs_mdata_resetBytesInRange(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                              NSRange range) {
    NSUInteger length;
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_length_of(self, &length)) {
        if (CS_UNLIKELY(cs_reset_range_is_misuse(range, length)) &&
            cs_guard_misuse(G, self, _cmd, caller, "range location {} length {} beyond length", 2, range.location,
                            range.length))
            return;
    }
    ((void (*)(id, SEL, NSRange))original)(self, _cmd, range);
}
CS_DEFINE_HOOK_1(cs_mdata_resetBytesInRange, void, NSRange)

/* -replaceBytesInRange:withBytes:length:: the range is the part replaced, so (unlike the
 * two-argument form) it must lie within the data on GNUstep, which otherwise corrupts its heap or
 * raises NSMallocException; Apple documents the range's location only. */
CS_ALWAYS_INLINE BOOL cs_replace_bytes_length_is_misuse(NSRange range, NSUInteger length) {
#if defined(__APPLE__)
    return range.location > length || range.length > NSUIntegerMax - range.location;
#else
    return !cs_range_within(range, length);
#endif
}

static inline void cs_mdata_replaceBytesInRange_withBytes_length(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                                 const void *caller, NSRange range, const void *bytes,
                                                                 NSUInteger count) {
    NSUInteger length;
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_length_of(self, &length) &&
        CS_UNLIKELY(cs_replace_bytes_length_is_misuse(range, length)) &&
        cs_guard_misuse(G, self, _cmd, caller, "range location {} length {} beyond length", 2, range.location,
                        range.length))
        return;
    ((void (*)(id, SEL, NSRange, const void *, NSUInteger))original)(self, _cmd, range, bytes, count);
}
CS_DEFINE_HOOK_3(cs_mdata_replaceBytesInRange_withBytes_length, void, NSRange, const void *, NSUInteger)

#pragma mark - Key-value coding collection proxies

/*
 * -mutableArrayValueForKey: / -mutableSetValueForKey: (and their key-path forms) answer proxies
 * whose mutators forward to the model: through its indexed accessors, through a copy passed to
 * its setter, or straight to its instance variable. Their -count reads a cached collection that
 * those mutators may replace and free, so a bounds check against the proxy's -count drops legal
 * calls and can message freed memory. Their originals check nothing themselves: the collection
 * they forward to does (and is guarded itself). So the proxy classes are marked unbounded.
 * They are found at install by asking a scratch model for each kind of proxy — no private class
 * name is written here.
 */
@interface CSKVCProxyProbe : NSObject {
    __strong NSMutableArray *slowItems; /* getter + setter only: the "slow" proxy */
    __strong NSMutableArray *fastItems; /* indexed accessors: the "fast" proxy */
    __strong NSMutableArray *ivarItems; /* no accessors: the instance-variable proxy */
    __strong NSMutableSet *slowMembers;
    __strong NSMutableSet *fastMembers;
    __strong NSMutableSet *ivarMembers;
}
@end

@implementation CSKVCProxyProbe
- (id)init CS_GUARD_METHOD(container) {
    if ((self = [super init]) != nil) {
        slowItems = [[CS_CLASS(NSMutableArray) alloc] init];
        fastItems = [[CS_CLASS(NSMutableArray) alloc] init];
        ivarItems = [[CS_CLASS(NSMutableArray) alloc] init];
        slowMembers = [[CS_CLASS(NSMutableSet) alloc] init];
        fastMembers = [[CS_CLASS(NSMutableSet) alloc] init];
        ivarMembers = [[CS_CLASS(NSMutableSet) alloc] init];
    }
    return self;
}
- (void)dealloc CS_GUARD_METHOD(container) {
    CS_RELEASE(slowItems);
    CS_RELEASE(fastItems);
    CS_RELEASE(ivarItems);
    CS_RELEASE(slowMembers);
    CS_RELEASE(fastMembers);
    CS_RELEASE(ivarMembers);
    CS_SUPER_DEALLOC();
}
- (NSArray *)slowItems CS_GUARD_METHOD(container) { return slowItems; }
- (void)setSlowItems:(NSArray *)items CS_GUARD_METHOD(container) {
    NSMutableArray *copy = [items mutableCopy];
    CS_RELEASE(slowItems);
    slowItems = copy;
}
- (NSUInteger)countOfFastItems CS_GUARD_METHOD(container) { return [fastItems count]; }
- (id)objectInFastItemsAtIndex:(NSUInteger)index CS_GUARD_METHOD(container) { return [fastItems objectAtIndex:index]; }
- (void)insertObject:(id)object inFastItemsAtIndex:(NSUInteger)index CS_GUARD_METHOD(container) {
    [fastItems insertObject:object atIndex:index];
}
- (void)removeObjectFromFastItemsAtIndex:(NSUInteger)index CS_GUARD_METHOD(container) {
    [fastItems removeObjectAtIndex:index];
}
- (NSSet *)slowMembers CS_GUARD_METHOD(container) { return slowMembers; }
- (void)setSlowMembers:(NSSet *)members CS_GUARD_METHOD(container) {
    NSMutableSet *copy = [members mutableCopy];
    CS_RELEASE(slowMembers);
    slowMembers = copy;
}
- (NSEnumerator *)enumeratorOfFastMembers CS_GUARD_METHOD(container) { return [fastMembers objectEnumerator]; }
- (NSUInteger)countOfFastMembers CS_GUARD_METHOD(container) { return [fastMembers count]; }
- (id)memberOfFastMembers:(id)object CS_GUARD_METHOD(container) { return [fastMembers member:object]; }
- (void)addFastMembersObject:(id)object CS_GUARD_METHOD(container) { [fastMembers addObject:object]; }
- (void)removeFastMembersObject:(id)object CS_GUARD_METHOD(container) { [fastMembers removeObject:object]; }
@end

/** Marks the class of `proxy` and its superclasses below `public_root` unbounded. */
static void cs_mark_proxy_class(id proxy, Class public_root) {
    if (proxy == nil) return;
    for (Class c = object_getClass(proxy); c != Nil && c != public_root; c = class_getSuperclass(c))
        cs_measure_mark_unbounded(&g_count_cache, c);
}

/* The key-value coding proxies' classes are the same for the whole process, so they are probed at
 * the first install only: the marks and `ready` stay set through an uninstall. */
static const char *cs_containers_install(uint32_t *hooked) {
    (void)hooked;
    if (CS_ATOMIC_LOAD(&g_count_cache.ready) && CS_ATOMIC_LOAD(&g_length_cache.ready)) return NULL;
    @autoreleasepool {
        CSKVCProxyProbe *probe = [[CS_CLASS(CSKVCProxyProbe) alloc] init];
        Class mutableArray = CS_CLASS(NSMutableArray), mutableSet = CS_CLASS(NSMutableSet);
        NSString *const arrayKeys[] = {CS_STR("slowItems"), CS_STR("fastItems"), CS_STR("ivarItems")};
        NSString *const setKeys[] = {CS_STR("slowMembers"), CS_STR("fastMembers"), CS_STR("ivarMembers")};
        for (size_t i = 0; i < 3; i++) {
            cs_mark_proxy_class([probe mutableArrayValueForKey:arrayKeys[i]], mutableArray);
            cs_mark_proxy_class([probe mutableSetValueForKey:setKeys[i]], mutableSet);
        }
        CS_RELEASE(probe);
    }
    CS_ATOMIC_STORE(&g_count_cache.ready, 1);
    CS_ATOMIC_STORE(&g_length_cache.ready, 1);
    return NULL;
}

/* The caches map a class to the implementation of its own -count / -length, which does not depend
 * on whether the hooks are installed: nothing to undo. */
static void cs_containers_uninstall(void) {}

#pragma mark - Registration

static const CSHookSpec kContainerHooks[] = {
    CS_HOOK("NSArray", "objectAtIndex:", cs_array_objectAtIndex),
    CS_HOOK("NSArray", "objectAtIndexedSubscript:", cs_array_objectAtIndexedSubscript),
    CS_HOOK("NSArray", "subarrayWithRange:", cs_array_subarrayWithRange),
    CS_HOOK("NSArray", "objectsAtIndexes:", cs_array_objectsAtIndexes),
    CS_HOOK("NSArray", "getObjects:range:", cs_array_getObjects_range),
    CS_HOOK("NSArray", "initWithObjects:count:", cs_array_initWithObjects_count),
    CS_HOOK("NSArray", "arrayByAddingObject:", cs_array_arrayByAddingObject),
    CS_CLASS_HOOK("NSArray", "arrayWithObjects:count:", cs_array_arrayWithObjects_count),

    CS_HOOK("NSMutableArray", "addObject:", cs_marray_addObject),
    CS_HOOK("NSMutableArray", "insertObject:atIndex:", cs_marray_insertObject_atIndex),
    CS_HOOK("NSMutableArray", "removeObjectAtIndex:", cs_marray_removeObjectAtIndex),
    CS_HOOK("NSMutableArray", "replaceObjectAtIndex:withObject:", cs_marray_replaceObjectAtIndex_withObject),
    CS_HOOK("NSMutableArray", "exchangeObjectAtIndex:withObjectAtIndex:", cs_marray_exchange),
    CS_HOOK("NSMutableArray", "setObject:atIndexedSubscript:", cs_marray_setObject_atIndexedSubscript),
    CS_HOOK("NSMutableArray", "removeObjectsInRange:", cs_marray_removeObjectsInRange),
    CS_HOOK("NSMutableArray", "insertObjects:atIndexes:", cs_marray_insertObjects_atIndexes),
    CS_HOOK("NSMutableArray", "removeLastObject", cs_marray_removeLastObject),
    CS_HOOK("NSMutableArray", "replaceObjectsInRange:withObjectsFromArray:", cs_marray_replaceObjectsInRange),
    CS_HOOK("NSMutableArray", "replaceObjectsInRange:withObjectsFromArray:range:", cs_marray_replaceObjectsInRange_range),

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
#if defined(__APPLE__)
    CS_HOOK("NSMutableOrderedSet", "removeObjectsInRange:", cs_moset_removeObjectsInRange),
    CS_HOOK("NSMutableOrderedSet", "insertObjects:atIndexes:", cs_moset_insertObjects_atIndexes),
#endif

    CS_HOOK("NSCache", "setObject:forKey:", cs_cache_setObject_forKey),
    CS_HOOK("NSCache", "setObject:forKey:cost:", cs_cache_setObject_forKey_cost),
    CS_HOOK("NSUserDefaults", "setObject:forKey:", cs_defaults_setObject_forKey),
    CS_HOOK("NSUserDefaults", "objectForKey:", cs_defaults_objectForKey),
    CS_HOOK("NSUserDefaults", "removeObjectForKey:", cs_defaults_removeObjectForKey),

    CS_HOOK("NSData", "subdataWithRange:", cs_data_subdataWithRange),
    CS_HOOK("NSData", "getBytes:range:", cs_data_getBytes_range),
    CS_HOOK("NSMutableData", "replaceBytesInRange:withBytes:", cs_mdata_replaceBytesInRange_withBytes),
    CS_HOOK("NSMutableData", "resetBytesInRange:", cs_mdata_resetBytesInRange),
    CS_HOOK("NSMutableData", "replaceBytesInRange:withBytes:length:", cs_mdata_replaceBytesInRange_withBytes_length),
};

static inline id cs_canary_opaque(id value) {
    __asm__ volatile("" : "+r"(value));
    return value;
}

/** YES when `receiver` answers `selector_name` through the hook `body` (cs_canary_reaches_hook). */
#define CS_REACHES(receiver, selector_name, body)                                                  \
    cs_canary_reaches_hook(object_getClass(receiver), @selector(selector_name), &body##_slots)

/* Each step misuses a scratch receiver that reaches the hook it tests; an owner the guard left
 * alone (an app's swizzle in place before start) skips its step instead of switching the whole
 * guard off. At least one step must run. */
static const char *cs_containers_canary(void) {
    unsigned steps = 0;
    NSArray *array = [CS_CLASS(NSArray) arrayWithObjects:CS_STR("a"), CS_STR("b"), nil];
    NSArray *indexed = CS_REACHES(array, objectAtIndex:, cs_array_objectAtIndex) ? array : nil;
    if (indexed == nil) {
        NSMutableArray *other = [CS_CLASS(NSMutableArray) arrayWithObjects:CS_STR("a"), CS_STR("b"), nil];
        if (CS_REACHES(other, objectAtIndex:, cs_array_objectAtIndex)) indexed = other;
    }
    if (indexed != nil) {
        steps++;
        CS_CANARY_MISUSE([indexed objectAtIndex:5] == nil, "-[NSArray objectAtIndex:] beyond count not intercepted");
        CS_CANARY_LEGAL([[indexed objectAtIndex:1] isEqual:CS_STR("b")], "-[NSArray objectAtIndex:] legal call changed");
    }

    NSMutableArray *mutable = [CS_CLASS(NSMutableArray) arrayWithCapacity:2];
    if (CS_REACHES(mutable, addObject:, cs_marray_addObject)) {
        steps++;
        CS_CANARY_MISUSE(([mutable addObject:cs_canary_opaque(nil)], [mutable count] == 0),
                         "-[NSMutableArray addObject:] nil not intercepted");
        CS_CANARY_LEGAL(([mutable addObject:CS_STR("x")], [mutable count] == 1),
                        "-[NSMutableArray addObject:] legal call changed");
    }

    NSMutableDictionary *dictionary = [CS_CLASS(NSMutableDictionary) dictionaryWithCapacity:2];
    if (CS_REACHES(dictionary, setObject:forKey:, cs_mdictionary_setObject_forKey)) {
        steps++;
        CS_CANARY_MISUSE(([dictionary setObject:CS_STR("v") forKey:cs_canary_opaque(nil)], [dictionary count] == 0),
                         "-[NSMutableDictionary setObject:forKey:] nil key not intercepted");
        CS_CANARY_LEGAL(([dictionary setObject:CS_STR("v") forKey:CS_STR("k")],
                         [[dictionary objectForKey:CS_STR("k")] isEqual:CS_STR("v")]),
                        "-[NSMutableDictionary setObject:forKey:] legal call changed");
    }

    if (CS_REACHES(CS_CLASS(NSArray), arrayWithObjects:count:, cs_array_arrayWithObjects_count)) {
        steps++;
        id missing = cs_canary_opaque(nil);
        CS_CANARY_MISUSE(([@[ CS_STR("a"), missing, CS_STR("c") ]
                             isEqual:[CS_CLASS(NSArray) arrayWithObjects:CS_STR("a"), CS_STR("c"), nil]]),
                         "array literal with nil not intercepted");
        CS_CANARY_LEGAL(([@[ CS_STR("a"), CS_STR("c") ] count] == 2), "array literal legal call changed");
    }
    return steps > 0 ? NULL : "no scratch container reaches the guard's hooks";
}

CS_GUARD_DEFINE_HOOKED(CSGuardContainers, container, kContainerHooks, cs_containers_install, cs_containers_uninstall,
                       cs_containers_canary);
