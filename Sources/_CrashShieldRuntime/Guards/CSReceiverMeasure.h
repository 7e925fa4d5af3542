/*
 * CSReceiverMeasure.h — the bound a container or string hook checks an index against: the
 * receiver's own -count / -length, without a message lookup on the hot path.
 *
 * Included by one guard file each (after its CS_GUARD_CODE_SECTION, so the code lands in that
 * guard's section); every guard file gets its own cache.
 *
 * Contract:
 * - cs_measure() answers exactly what `[self count]` (or `-length`) would answer: the IMP the
 *   runtime dispatches to for the receiver's class is looked up once per class and cached, then
 *   called directly. Only classes whose structure lives in a system image are cached (they are
 *   never disposed, so a cached Class pointer never names another class later); other receivers
 *   get a plain message.
 * - Classes marked "unbounded" (cs_measure_mark_unbounded) answer NO: their originals do not
 *   check against their own -count (key-value coding proxies check against the collection they
 *   forward to, which is guarded itself), so the hook must call the original without a bounds
 *   check. Subclasses of a marked class are unbounded too.
 * - Entries are written once and never changed: a bucket is claimed with a CAS, its IMP written,
 *   then its class published with a release store; a reader that sees the class sees its IMP.
 *   A class goes to its hash bucket or the next one; when both are taken by other classes it
 *   stays on the (uncached) slow path.
 * - Field form (x86_64): when the cached IMP is a plain field getter (`[endbr64] mov disp(%rdi),
 *   %eax|%rax; ret`, recognised from its machine code at caching time: no ivar or class name is
 *   used), the entry also records the field's offset and width (as a mask over an 8-byte read that
 *   must lie inside the instance), and cs_measure_field() reads the field itself: the same value
 *   the IMP returns (x86_64 is little-endian, and a 32-bit load zero-extends), with no call. Hooks use it in their fast
 *   predicate (CS_DEFINE_FAST_HOOK_1); any other receiver takes the full path.
 * - Known limit: a later swizzle of -count / -length itself on a cached class is not seen; the
 *   check keeps using the implementation found first.
 */
#ifndef CS_RECEIVER_MEASURE_H
#define CS_RECEIVER_MEASURE_H

#import "../Engine/CSEngine.h"
#import "../Backend/CSBackend.h"
#include "cs_incidents.h"
#include <string.h>

#define CS_MEASURE_BUCKETS 128u
#define CS_MEASURE_UNBOUNDED_MAX 16u

typedef struct {
    uintptr_t cls;  /* the Class, as an integer for CS_ATOMIC_*; 0 until published */
    IMP measure;             /* NULL: unbounded class (no bounds check) */
    /* Field form: the count is `*(uint64_t *)(self + field_offset) & field_mask`; the mask is 0
     * when `measure` must be called, 0xffffffff for a 4-byte field (its 8-byte read stays inside
     * the instance: checked against the class's instance size when cached). */
    uint64_t field_mask;
    int64_t field_offset;
} cs_measure_entry; /* 32 bytes: the bucket index scales by a shift */

typedef struct {
    cs_measure_entry entries[CS_MEASURE_BUCKETS];
    int claimed[CS_MEASURE_BUCKETS];
    /* Unbounded classes; `ready` is set once the list is complete (before that nothing is
     * cached, so no class can be cached as bounded before it is known to be a proxy). */
    CS_UNRETAINED Class unbounded[CS_MEASURE_UNBOUNDED_MAX];
    unsigned unbounded_count;
    int ready;
} cs_measure_cache;

static inline unsigned cs_measure_bucket(Class cls) {
    uintptr_t p = (uintptr_t)cls;
    return (unsigned)((p >> 4) ^ (p >> 11)) & (CS_MEASURE_BUCKETS - 1);
}

static inline BOOL cs_measure_is_unbounded(const cs_measure_cache *cache, Class cls) {
    unsigned n = CS_ATOMIC_LOAD(&cache->unbounded_count);
    for (Class c = cls; c != Nil; c = class_getSuperclass(c))
        for (unsigned i = 0; i < n; i++)
            if (cache->unbounded[i] == c) return YES;
    return NO;
}

/** Adds `cls` to the unbounded list (at install, under the engine lock). */
static inline void cs_measure_mark_unbounded(cs_measure_cache *cache, Class cls) {
    unsigned n = cache->unbounded_count;
    for (unsigned i = 0; i < n; i++)
        if (cache->unbounded[i] == cls) return;
    if (n >= CS_MEASURE_UNBOUNDED_MAX) return;
    cache->unbounded[n] = cls;
    CS_ATOMIC_STORE(&cache->unbounded_count, n + 1);
}

/** The field `measure` returns, when it is a plain getter (see the contract): YES with its
 *  offset and width. Reads the code one instruction at a time and stops at the first byte that
 *  does not fit, so it never reads past the end of a shorter function. */
static inline BOOL cs_measure_getter_field(IMP measure, int32_t *offset, uint8_t *width) {
#if defined(__x86_64__)
    const unsigned char *code = (const unsigned char *)measure;
    if (code == NULL) return NO;
    if (code[0] == 0xf3) { /* endbr64 */
        if (code[1] != 0x0f || code[2] != 0x1e || code[3] != 0xfa) return NO;
        code += 4;
    }
    uint8_t bytes = 4;
    if (code[0] == 0x48) { /* REX.W: 64-bit load */
        bytes = 8;
        code++;
    }
    if (code[0] != 0x8b) return NO; /* mov r/m -> reg */
    int32_t displacement;
    if (code[1] == 0x47) { /* eax/rax <- disp8(%rdi) */
        displacement = (int8_t)code[2];
        code += 3;
    } else if (code[1] == 0x87) { /* eax/rax <- disp32(%rdi) */
        memcpy(&displacement, code + 2, sizeof displacement);
        code += 6;
    } else {
        return NO;
    }
    if (code[0] != 0xc3 || displacement < (int32_t)sizeof(void *)) return NO; /* ret; never the isa */
    *offset = displacement;
    *width = bytes;
    return YES;
#else
    (void)measure;
    (void)offset;
    (void)width;
    return NO;
#endif
}

__attribute__((noinline, unused)) static BOOL cs_measure_slow(cs_measure_cache *cache, SEL selector,
                                                              CS_UNRETAINED id self, Class cls, NSUInteger *out) {
    BOOL ready = CS_ATOMIC_LOAD(&cache->ready) != 0;
    BOOL unbounded = cs_measure_is_unbounded(cache, cls);
    IMP measure = NULL;
    if (!unbounded) {
        Method method = class_getInstanceMethod(cls, selector);
        measure = method ? method_getImplementation(method) : NULL;
    }
    if (ready && cs_address_is_in_system_image((uintptr_t)cls) && (unbounded || measure != NULL)) {
        unsigned b = cs_measure_bucket(cls);
        BOOL claimed = NO;
        for (unsigned probe = 0; probe < 2 && !claimed; probe++) { /* its bucket, then the next */
            int expected = 0;
            claimed = __atomic_compare_exchange_n(&cache->claimed[b], &expected, 1, NO, __ATOMIC_ACQ_REL,
                                                  __ATOMIC_RELAXED);
            if (!claimed) b = (b + 1) & (CS_MEASURE_BUCKETS - 1);
        }
        if (claimed) {
            cache->entries[b].measure = measure;
            int32_t offset;
            uint8_t width;
            if (cs_measure_getter_field(measure, &offset, &width) &&
                (size_t)offset + sizeof(uint64_t) <= class_getInstanceSize(cls)) {
                cache->entries[b].field_offset = offset;
                cache->entries[b].field_mask = width == 8 ? UINT64_MAX : UINT32_MAX;
            }
            CS_ATOMIC_STORE(&cache->entries[b].cls, (uintptr_t)cls);
        }
    }
    if (unbounded) return NO;
    *out = measure ? ((NSUInteger(*)(id, SEL))measure)(self, selector)
                   : ((NSUInteger(*)(id, SEL))class_getMethodImplementation(cls, selector))(self, selector);
    return YES;
}

/** The published entry of `cls` (its bucket or the next one), or NULL. */
static inline __attribute__((always_inline)) const cs_measure_entry *cs_measure_find(const cs_measure_cache *cache,
                                                                                    Class cls) {
    unsigned b = cs_measure_bucket(cls);
    const cs_measure_entry *entry = &cache->entries[b];
    if (CS_LIKELY(CS_ATOMIC_LOAD(&entry->cls) == (uintptr_t)cls)) return entry;
    entry = &cache->entries[(b + 1) & (CS_MEASURE_BUCKETS - 1)];
    return CS_ATOMIC_LOAD(&entry->cls) == (uintptr_t)cls ? entry : NULL;
}

/** Writes the receiver's -count (or the cache's selector) to *out and returns YES; returns NO
 *  for an unbounded receiver (the hook then calls the original unchecked). */
static inline __attribute__((always_inline)) BOOL cs_measure(cs_measure_cache *cache, SEL selector,
                                                             CS_UNRETAINED id self, NSUInteger *out) {
    Class cls = object_getClass(self);
    const cs_measure_entry *entry = cs_measure_find(cache, cls);
    if (CS_LIKELY(entry != NULL)) {
        IMP measure = entry->measure;
        if (CS_UNLIKELY(measure == NULL)) return NO;
        *out = ((NSUInteger(*)(id, SEL))measure)(self, selector);
        return YES;
    }
    return cs_measure_slow(cache, selector, self, cls, out);
}

/** The receiver's -count / -length when its class is cached in field form (see the contract):
 *  YES with the value in *out. Call-free; NO sends the hook to its full path. */
static inline __attribute__((always_inline)) BOOL cs_measure_field(const cs_measure_cache *cache, CS_UNRETAINED id self,
                                                                   NSUInteger *out) {
    const cs_measure_entry *entry = cs_measure_find(cache, object_getClass(self));
    if (CS_UNLIKELY(entry == NULL)) return NO; /* nil: Nil meets no field form (its entry has no mask) */
    uint64_t mask = entry->field_mask;
    if (CS_UNLIKELY(mask == 0)) return NO;
    uint64_t word;
    memcpy(&word, (const char *)CS_POINTER(self) + entry->field_offset, sizeof word);
    *out = (NSUInteger)(word & mask);
    return YES;
}

/** YES when `cls` answers `sel` with a system implementation, directly or through a slot of
 *  `hook` (a guard's hook of that selector, NULL for none) that stands for one. */
static inline BOOL cs_answers_with_system(Class cls, SEL sel, const CSHookSlots *hook) {
    Method method = class_getInstanceMethod(cls, sel);
    IMP imp = method ? method_getImplementation(method) : NULL;
    if (imp == NULL) return NO;
    if (hook != NULL) {
        unsigned used = hook->used;
        for (unsigned s = 0; s < used; s++)
            if (hook->replacement[s] == imp) return cs_backend_implementation_is_system(hook->original[s]);
    }
    return cs_backend_implementation_is_system(imp);
}

/**
 * Wrappers: system implementations that check no bounds themselves and forward to a primitive of
 * the receiver (GNUstep: NSArray's own -objectAtIndexedSubscript: and -objectsAtIndexes: and
 * NSOrderedSet's -objectAtIndexedSubscript: call -objectAtIndex:; NSMutableString's
 * -deleteCharactersInRange: and -insertString:atIndex: call -replaceCharactersInRange:withString:).
 * Such an original throws beyond the receiver's measure only when the receiver's primitive does,
 * which holds when the receiver's `measure` (-count / -length) and `primitive` are both the
 * system's (`primitive_hook`: the guard's hook of the primitive, whose slots stand for system
 * implementations). YES when the hook may judge `self` by its measure; an app subclass with its
 * own measure or primitive (a ring whose -objectAtIndex: wraps) keeps its contract.
 * For the misuse path only (two method lookups): legal calls never pay for it.
 */
__attribute__((noinline, unused)) static BOOL cs_wrapper_bound_applies(CS_UNRETAINED id self, SEL measure, SEL primitive,
                                                                       const CSHookSlots *primitive_hook) {
    Class cls = object_getClass(self);
    return cs_answers_with_system(cls, measure, NULL) && cs_answers_with_system(cls, primitive, primitive_hook);
}

#endif
