/*
 * CSGuard_Strings.m — NSString (every concrete class, constant strings included),
 * NSMutableString, NSAttributedString and NSMutableAttributedString.
 *
 * Every hook below is installed on each class at or below its public root that defines the
 * selector itself (placeholders, constant strings, inline/buffer/sub-strings, the attributed
 * string's mutable-string tracker ...), discovered at run time.
 *
 * Neutralised results (the contract the scenarios and tests check):
 * - characterAtIndex: beyond the length returns 0.
 * - Range reads (substringWithRange:, attributedSubstringFromRange:) return the valid part of the
 *   range; substringFromIndex: beyond returns the empty string, substringToIndex: beyond the whole
 *   string; rangeOfString:options:range:[locale:] searches only the valid part of the range.
 * - rangeOfString: with a nil search string returns {NSNotFound, 0}; hasPrefix:/hasSuffix: nil NO.
 * - stringByReplacingCharactersInRange:withString: out of range or nil, and
 *   stringByAppendingString: nil, return an unchanged copy (made by the original implementation).
 * - initWithString: nil (NSString, NSMutableString, NSAttributedString and its mutable
 *   subclass), initWithString:attributes: nil and +stringWithString: nil initialise from the
 *   empty string: the original initialiser runs with @"", so placeholder receivers, MRC ownership
 *   and the mutable/immutable class of the result stay what the runtime makes them.
 * - Mutations (appendString:, insertString:atIndex:, deleteCharactersInRange:,
 *   replaceCharactersInRange:withString:, addAttribute:value:range:, setAttributes:range:) that
 *   are out of range or have a nil argument are no-ops.
 * - attribute:atIndex:effectiveRange: beyond returns nil, attributesAtIndex:effectiveRange: an
 *   empty dictionary; both set *effectiveRange (when given) to {NSNotFound, 0}. "Beyond" is
 *   index > length on GNUstep, index >= length on Apple.
 *
 * Where GNUstep and Apple differ, each keeps its own legal results: GNUstep
 * answers attributesAtIndex:effectiveRange: and attribute:atIndex:effectiveRange: at
 * index == length, Apple throws there. One form is legal inside GNUstep but throws on Apple's
 * Foundation, so the app must not rely on it: replaceCharactersInRange:withString: with a nil
 * string (GNUstep's own deleteCharactersInRange: implementations send it as their "delete"). It
 * is a misuse only when the app sent it (cs_sent_by_system: the caller's return address); only
 * that form pays for the lookup, every other check is arithmetic.
 *
 * Ranges are checked with overflow-safe arithmetic: location + length may wrap.
 */
#import "../Engine/CSEngine.h"
#include <pthread.h>

#define CS_ALWAYS_INLINE_STRING static inline __attribute__((always_inline))

CS_GUARD_CODE_SECTION(string) /* every function below: see CS_GUARD_METHOD */

#import "CSReceiverMeasure.h"

/* -length of the receiver: see CSReceiverMeasure.h (no string class is unbounded). */
static cs_measure_cache g_length_cache = {.ready = 1};

CS_ALWAYS_INLINE_STRING NSUInteger cs_length(CS_UNRETAINED id self) {
    NSUInteger length = 0;
    cs_measure(&g_length_cache, @selector(length), self, &length);
    return length;
}

/* Hidden: the hooks read its policy PC-relative instead of through the GOT (hot path). */
extern CSGuard CSGuardStrings __attribute__((visibility("hidden")));
#define G (&CSGuardStrings)

/** True when `range` lies within [0, length]; never computes location + length. */
static inline BOOL cs_range_fits(NSRange range, NSUInteger length) {
    return range.location <= length && range.length <= length - range.location;
}

/** The part of `range` that lies within [0, length] (empty at the end when none does). */
static inline NSRange cs_range_clamp(NSRange range, NSUInteger length) {
    NSUInteger location = range.location < length ? range.location : length;
    NSUInteger rest = length - location;
    return NSMakeRange(location, range.length < rest ? range.length : rest);
}

/**
 * True when the message was sent by the system's own code rather than by the app: the return
 * address lies in a system image, or in CrashShield's hook code. The second case is a tail call:
 * an original implementation that a hook invoked (GNUstep's deleteCharactersInRange: is
 * `[self replaceCharactersInRange:r withString:nil]`, compiled as a jump) leaves the hook's own
 * call as the return address. App code never returns into hook code.
 */
static inline BOOL cs_sent_by_system(const void *caller) {
    return cs_guard_name_for_address((uintptr_t)caller) != NULL || cs_address_is_in_system_image((uintptr_t)caller);
}

/* Keeps a call to the original out of tail position. The deleteCharactersInRange: originals
 * forward to replaceCharactersInRange:withString: nil by a tail call; with this barrier in the
 * delete hooks that forwarded message returns into hook code (or GNUstep), never into the app's
 * call site, so cs_sent_by_system() recognises it in optimised builds too. */
#define CS_NO_TAIL_CALL() __asm__ volatile("" ::: "memory")

static const char *const kRangeBeyond = "range at {} with length {} beyond the end";
static const char *const kIndexBeyond = "index {} beyond length {}";
static const char *const kNilString = "nil string";

/* A nil string in an edit: Apple raises NSInvalidArgumentException. GNUstep Base (1.28) raises
 * nothing: stringByAppendingString: and stringByReplacingCharactersInRange:withString: treat it as
 * empty, appendString: and insertString:atIndex: do nothing, replaceCharactersInRange:withString:
 * deletes the range. A guard keeps each platform's legal results, so on GNUstep it is no misuse
 * there (the range and index checks still apply). Every other nil-string hook raises on both. */
#if defined(__APPLE__)
#define CS_NIL_EDIT_STRING_IS_MISUSE 1
#else
#define CS_NIL_EDIT_STRING_IS_MISUSE 0
#endif

#define CS_RANGE_MISUSE(range) cs_guard_misuse(G, self, _cmd, caller, kRangeBeyond, 2, (range).location, (range).length)

#pragma mark - NSString reads

/* Fast predicates (CS_DEFINE_FAST_HOOK_1): the guard is off, or the receiver's length is a field
 * (CSReceiverMeasure.h) and the argument lies within it. NO is not a verdict: the full body
 * decides. */
CS_ALWAYS_INLINE_STRING BOOL cs_character_index_fast(CS_UNRETAINED id self, NSUInteger index) {
    CS_FAST_PREDICATE_POLICY_GATE(G);
    NSUInteger length;
    return cs_measure_field(&g_length_cache, self, &length) && index < length;
}

CS_ALWAYS_INLINE_STRING BOOL cs_range_read_fast(CS_UNRETAINED id self, NSRange range) {
    CS_FAST_PREDICATE_POLICY_GATE(G);
    NSUInteger length;
    return cs_measure_field(&g_length_cache, self, &length) && cs_range_fits(range, length);
}

static inline unichar cs_string_characterAtIndex(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                                 NSUInteger index) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger length = cs_length(self);
        if (CS_UNLIKELY(index >= length) && cs_guard_misuse(G, self, _cmd, caller, kIndexBeyond, 2, index, length))
            return 0;
    }
    return ((unichar(*)(id, SEL, NSUInteger))original)(self, _cmd, index);
}
CS_DEFINE_FAST_HOOK_1(cs_string_characterAtIndex, unichar, NSUInteger, cs_character_index_fast)

static inline id cs_string_substringFromIndex(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                              NSUInteger index) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger length = cs_length(self);
        if (CS_UNLIKELY(index > length) && cs_guard_misuse(G, self, _cmd, caller, kIndexBeyond, 2, index, length))
            index = length; /* -> the empty string */
    }
    return ((id(*)(id, SEL, NSUInteger))original)(self, _cmd, index);
}
CS_DEFINE_HOOK_1(cs_string_substringFromIndex, id, NSUInteger)

static inline id cs_string_substringToIndex(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                            NSUInteger index) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger length = cs_length(self);
        if (CS_UNLIKELY(index > length) && cs_guard_misuse(G, self, _cmd, caller, kIndexBeyond, 2, index, length))
            index = length; /* -> the whole string */
    }
    return ((id(*)(id, SEL, NSUInteger))original)(self, _cmd, index);
}
CS_DEFINE_HOOK_1(cs_string_substringToIndex, id, NSUInteger)

static inline id cs_string_substringWithRange(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                              NSRange range) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger length = cs_length(self);
        if (CS_UNLIKELY(!cs_range_fits(range, length)) && CS_RANGE_MISUSE(range))
            range = cs_range_clamp(range, length);
    }
    return ((id(*)(id, SEL, NSRange))original)(self, _cmd, range);
}
CS_DEFINE_FAST_HOOK_1(cs_string_substringWithRange, id, NSRange, cs_range_read_fast)

#pragma mark - NSString searches

static inline NSRange cs_string_rangeOfString(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                              CS_UNRETAINED id string) {
    if (CS_UNLIKELY(string == nil) && cs_guard_is_on(G) && cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0))
        return NSMakeRange(NSNotFound, 0);
    return ((NSRange(*)(id, SEL, id))original)(self, _cmd, string);
}
CS_DEFINE_HOOK_1(cs_string_rangeOfString, NSRange, CS_UNRETAINED id)

static inline NSRange cs_string_rangeOfStringOptions(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                                     CS_UNRETAINED id string, NSUInteger options) {
    if (CS_UNLIKELY(string == nil) && cs_guard_is_on(G) && cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0))
        return NSMakeRange(NSNotFound, 0);
    return ((NSRange(*)(id, SEL, id, NSUInteger))original)(self, _cmd, string, options);
}
CS_DEFINE_HOOK_2(cs_string_rangeOfStringOptions, NSRange, CS_UNRETAINED id, NSUInteger)

/** Shared check of the two ranged searches. Returns NO when the search must not run (nil search
 *  string, neutralised); may narrow `*range` to its valid part. */
static inline BOOL cs_string_search_allowed(CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                            CS_UNRETAINED id string, NSRange *range) {
    if (!cs_guard_is_on(G)) return YES;
    if (CS_UNLIKELY(string == nil)) return !cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0);
    NSUInteger length = cs_length(self);
    if (CS_UNLIKELY(!cs_range_fits(*range, length)) && CS_RANGE_MISUSE(*range)) *range = cs_range_clamp(*range, length);
    return YES;
}

static inline NSRange cs_string_rangeOfStringOptionsRange(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                          const void *caller, CS_UNRETAINED id string,
                                                          NSUInteger options, NSRange range) {
    if (!cs_string_search_allowed(self, _cmd, caller, string, &range)) return NSMakeRange(NSNotFound, 0);
    return ((NSRange(*)(id, SEL, id, NSUInteger, NSRange))original)(self, _cmd, string, options, range);
}
CS_DEFINE_HOOK_3(cs_string_rangeOfStringOptionsRange, NSRange, CS_UNRETAINED id, NSUInteger, NSRange)

static inline NSRange cs_string_rangeOfStringOptionsRangeLocale(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                                const void *caller, CS_UNRETAINED id string,
                                                                NSUInteger options, NSRange range,
                                                                CS_UNRETAINED id locale) {
    if (!cs_string_search_allowed(self, _cmd, caller, string, &range)) return NSMakeRange(NSNotFound, 0);
    return ((NSRange(*)(id, SEL, id, NSUInteger, NSRange, id))original)(self, _cmd, string, options, range, locale);
}
CS_DEFINE_HOOK_4(cs_string_rangeOfStringOptionsRangeLocale, NSRange,
                 CS_UNRETAINED id, NSUInteger, NSRange, CS_UNRETAINED id)

static inline BOOL cs_string_hasPrefix(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                       CS_UNRETAINED id string) {
    if (CS_UNLIKELY(string == nil) && cs_guard_is_on(G) && cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0))
        return NO;
    return ((BOOL(*)(id, SEL, id))original)(self, _cmd, string);
}
CS_DEFINE_HOOK_1(cs_string_hasPrefix, BOOL, CS_UNRETAINED id)

static inline BOOL cs_string_hasSuffix(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                       CS_UNRETAINED id string) {
    if (CS_UNLIKELY(string == nil) && cs_guard_is_on(G) && cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0))
        return NO;
    return ((BOOL(*)(id, SEL, id))original)(self, _cmd, string);
}
CS_DEFINE_HOOK_1(cs_string_hasSuffix, BOOL, CS_UNRETAINED id)

#pragma mark - NSString derived strings and initialisers

static inline id cs_string_stringByReplacingCharactersInRange(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                              const void *caller, NSRange range,
                                                              CS_UNRETAINED id string) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        if (CS_UNLIKELY(string == nil) && CS_NIL_EDIT_STRING_IS_MISUSE) {
            if (cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0)) {
                range = NSMakeRange(0, 0); /* replacing nothing with nothing: an unchanged copy */
                string = CS_STR("");
            }
        } else {
            NSUInteger length = cs_length(self);
            if (CS_UNLIKELY(!cs_range_fits(range, length)) && CS_RANGE_MISUSE(range)) {
                range = NSMakeRange(0, 0);
                string = CS_STR("");
            }
        }
    }
    return ((id(*)(id, SEL, NSRange, id))original)(self, _cmd, range, string);
}
CS_DEFINE_HOOK_2(cs_string_stringByReplacingCharactersInRange, id, NSRange, CS_UNRETAINED id)

static inline id cs_string_stringByAppendingString(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                                   CS_UNRETAINED id string) {
    if (CS_UNLIKELY(string == nil) && CS_NIL_EDIT_STRING_IS_MISUSE && cs_guard_is_on(G) && cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0))
        string = CS_STR("");
    return ((id(*)(id, SEL, id))original)(self, _cmd, string);
}
CS_DEFINE_HOOK_1(cs_string_stringByAppendingString, id, CS_UNRETAINED id)

/* The receiver is whatever +alloc returned: on GNUstep a shared placeholder for NSString, a real
 * instance for NSMutableString. Initialising it from @"" keeps the runtime's own ownership rules
 * (the placeholder is never released by us; a real instance is initialised, not leaked). The
 * initialisers pass the original's +1 result through as cs_opaque_object (CSHookSlots.h). */
static inline cs_opaque_object cs_string_initWithString(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                        const void *caller, CS_UNRETAINED id string) {
    if (CS_UNLIKELY(string == nil) && cs_guard_is_on(G) && cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0))
        string = CS_STR("");
    return ((cs_opaque_object(*)(CS_UNRETAINED id, SEL, id))original)(self, _cmd, string);
}
CS_DEFINE_HOOK_1(cs_string_initWithString, cs_opaque_object, CS_UNRETAINED id)

/* +stringWithString: checks nil itself on GNUstep (it does not reach -initWithString:). */
static inline id cs_string_stringWithString(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                            CS_UNRETAINED id string) {
    if (CS_UNLIKELY(string == nil) && cs_guard_is_on(G) && cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0))
        string = CS_STR("");
    return ((id(*)(id, SEL, id))original)(self, _cmd, string);
}
CS_DEFINE_HOOK_1(cs_string_stringWithString, id, CS_UNRETAINED id)

/* Replacing occurrences with a nil target or replacement throws; the neutral result is an unchanged
 * copy of the receiver (immutable, as the original's result is). */
static inline id cs_string_stringByReplacingOccurrences(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                        const void *caller, CS_UNRETAINED id target,
                                                        CS_UNRETAINED id replacement) {
    if (CS_UNLIKELY(target == nil || replacement == nil) && cs_guard_is_on(G) &&
        cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0))
        return CS_AUTORELEASE([(NSString *)self copy]);
    return ((id(*)(id, SEL, id, id))original)(self, _cmd, target, replacement);
}
CS_DEFINE_HOOK_2(cs_string_stringByReplacingOccurrences, id, CS_UNRETAINED id, CS_UNRETAINED id)

static inline id cs_string_stringByReplacingOccurrencesOptionsRange(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                                    const void *caller, CS_UNRETAINED id target,
                                                                    CS_UNRETAINED id replacement, NSUInteger options,
                                                                    NSRange range) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        if (CS_UNLIKELY(target == nil || replacement == nil)) {
            if (cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0))
                return CS_AUTORELEASE([(NSString *)self copy]);
        } else {
            NSUInteger length = cs_length(self);
            if (CS_UNLIKELY(!cs_range_fits(range, length)) && CS_RANGE_MISUSE(range))
                return CS_AUTORELEASE([(NSString *)self copy]);
        }
    }
    return ((id(*)(id, SEL, id, id, NSUInteger, NSRange))original)(self, _cmd, target, replacement, options, range);
}
CS_DEFINE_HOOK_4(cs_string_stringByReplacingOccurrencesOptionsRange, id,
                 CS_UNRETAINED id, CS_UNRETAINED id, NSUInteger, NSRange)

/* -compare: nil throws on GNUstep; Apple answers NSOrderedDescending (nil sorts first), which is
 * the neutral result here. */
static inline NSComparisonResult cs_string_compare(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                                   CS_UNRETAINED id string) {
    if (CS_UNLIKELY(string == nil) && cs_guard_is_on(G) && cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0))
        return NSOrderedDescending;
    return ((NSComparisonResult(*)(id, SEL, id))original)(self, _cmd, string);
}
CS_DEFINE_HOOK_1(cs_string_compare, NSComparisonResult, CS_UNRETAINED id)

static inline BOOL cs_string_containsString(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                            CS_UNRETAINED id string) {
    if (CS_UNLIKELY(string == nil) && cs_guard_is_on(G) && cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0))
        return NO;
    return ((BOOL(*)(id, SEL, id))original)(self, _cmd, string);
}
CS_DEFINE_HOOK_1(cs_string_containsString, BOOL, CS_UNRETAINED id)

/** A nil separator: no separator is found, so the one component is (a copy of) the receiver. */
static inline id cs_string_componentsSeparatedByString(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                       const void *caller, CS_UNRETAINED id separator) {
    if (CS_UNLIKELY(separator == nil) && cs_guard_is_on(G) &&
        cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0)) {
        NSString *copy = [(NSString *)self copy];
        NSArray *components = [CS_CLASS(NSArray) arrayWithObject:copy];
        CS_RELEASE(copy);
        return components;
    }
    return ((id(*)(id, SEL, id))original)(self, _cmd, separator);
}
CS_DEFINE_HOOK_1(cs_string_componentsSeparatedByString, id, CS_UNRETAINED id)

#pragma mark - NSMutableString

static inline void cs_mstring_appendString(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                           CS_UNRETAINED id string) {
    if (CS_UNLIKELY(string == nil) && CS_NIL_EDIT_STRING_IS_MISUSE && cs_guard_is_on(G) && cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0))
        return;
    ((void (*)(id, SEL, id))original)(self, _cmd, string);
}
CS_DEFINE_HOOK_1(cs_mstring_appendString, void, CS_UNRETAINED id)

/* -insertString:atIndex: and -deleteCharactersInRange: wrap -replaceCharactersInRange:withString:
 * (cs_wrapper_bound_applies); the hooks of that primitive are defined below. */
static CSHookSlots cs_mstring_replaceCharactersInRange_slots;
#define CS_REPLACE_IS_SYSTEMS(hook)                                                                \
    cs_wrapper_bound_applies(self, @selector(length), @selector(replaceCharactersInRange:withString:), &hook##_slots)

static inline void cs_mstring_insertString(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                           CS_UNRETAINED id string, NSUInteger index) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        if (CS_UNLIKELY(string == nil) && CS_NIL_EDIT_STRING_IS_MISUSE) {
            if (cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0)) return;
        } else {
            NSUInteger length = cs_length(self);
            if (CS_UNLIKELY(index > length) && CS_REPLACE_IS_SYSTEMS(cs_mstring_replaceCharactersInRange) &&
                cs_guard_misuse(G, self, _cmd, caller, kIndexBeyond, 2, index, length))
                return;
        }
    }
    ((void (*)(id, SEL, id, NSUInteger))original)(self, _cmd, string, index);
}
CS_DEFINE_HOOK_2(cs_mstring_insertString, void, CS_UNRETAINED id, NSUInteger)

static inline void cs_mstring_deleteCharactersInRange(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                                      NSRange range) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger length = cs_length(self);
        if (CS_UNLIKELY(!cs_range_fits(range, length)) && CS_REPLACE_IS_SYSTEMS(cs_mstring_replaceCharactersInRange) &&
            CS_RANGE_MISUSE(range))
            return;
    }
    ((void (*)(id, SEL, NSRange))original)(self, _cmd, range);
    CS_NO_TAIL_CALL();
}
CS_DEFINE_HOOK_1(cs_mstring_deleteCharactersInRange, void, NSRange)

/** Shared check of replaceCharactersInRange:withString: (mutable and attributed strings, whose
 *  -length both count characters). YES: the call may proceed. */
static inline BOOL cs_replace_allowed(CS_UNRETAINED id self, SEL _cmd, const void *caller, NSRange range,
                                      CS_UNRETAINED id string) {
    if (!cs_guard_is_on(G)) return YES;
    NSUInteger length = cs_length(self);
    if (CS_UNLIKELY(!cs_range_fits(range, length))) return !CS_RANGE_MISUSE(range);
    /* A nil string from the system libraries is their own "delete" (see the file comment). */
    if (CS_UNLIKELY(string == nil) && CS_NIL_EDIT_STRING_IS_MISUSE && !cs_sent_by_system(caller))
        return !cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0);
    return YES;
}

static inline void cs_mstring_replaceCharactersInRange(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                       const void *caller, NSRange range, CS_UNRETAINED id string) {
    if (!cs_replace_allowed(self, _cmd, caller, range, string)) return;
    ((void (*)(id, SEL, NSRange, id))original)(self, _cmd, range, string);
}
CS_DEFINE_HOOK_2(cs_mstring_replaceCharactersInRange, void, NSRange, CS_UNRETAINED id)

#pragma mark - NSAttributedString

static inline cs_opaque_object cs_astring_initWithString(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                         const void *caller, CS_UNRETAINED id string) {
    if (CS_UNLIKELY(string == nil) && cs_guard_is_on(G) && cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0))
        string = CS_STR("");
    return ((cs_opaque_object(*)(CS_UNRETAINED id, SEL, id))original)(self, _cmd, string);
}
CS_DEFINE_HOOK_1(cs_astring_initWithString, cs_opaque_object, CS_UNRETAINED id)

static inline cs_opaque_object cs_astring_initWithStringAttributes(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                                   const void *caller, CS_UNRETAINED id string,
                                                                   CS_UNRETAINED id attributes) {
    if (CS_UNLIKELY(string == nil) && cs_guard_is_on(G) && cs_guard_misuse(G, self, _cmd, caller, kNilString, 0, 0, 0))
        string = CS_STR("");
    return ((cs_opaque_object(*)(CS_UNRETAINED id, SEL, id, id))original)(self, _cmd, string, attributes);
}
CS_DEFINE_HOOK_2(cs_astring_initWithStringAttributes, cs_opaque_object, CS_UNRETAINED id, CS_UNRETAINED id)

static inline id cs_astring_attributedSubstringFromRange(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                         const void *caller, NSRange range) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger length = cs_length(self);
        if (CS_UNLIKELY(!cs_range_fits(range, length)) && CS_RANGE_MISUSE(range))
            range = cs_range_clamp(range, length);
    }
    return ((id(*)(id, SEL, NSRange))original)(self, _cmd, range);
}
CS_DEFINE_HOOK_1(cs_astring_attributedSubstringFromRange, id, NSRange)

/** YES when reading attributes at `index` is a misuse to record. GNUstep defines both attribute
 *  reads at index == length (the last run's attributes, or none for an empty string) and throws
 *  only beyond it; Apple's Foundation throws at index == length too. Each platform keeps its own
 *  legal results. */
static inline BOOL cs_attribute_index_misuse(CS_UNRETAINED id self, SEL _cmd, const void *caller, NSUInteger index) {
    NSUInteger length = cs_length(self);
#if defined(__APPLE__)
    if (CS_LIKELY(index < length)) return NO;
#else
    if (CS_LIKELY(index <= length)) return NO;
#endif
    return cs_guard_misuse(G, self, _cmd, caller, kIndexBeyond, 2, index, length);
}

/* The neutral result of attributesAtIndex:effectiveRange:, made once and kept for the process. */
static NSDictionary *g_empty_attributes;
static pthread_once_t g_empty_attributes_once = PTHREAD_ONCE_INIT;

static void cs_make_empty_attributes(void) {
    g_empty_attributes = [[CS_CLASS(NSDictionary) alloc] init];
}

static id cs_empty_attributes(void) {
    pthread_once(&g_empty_attributes_once, cs_make_empty_attributes);
    return g_empty_attributes;
}

static inline id cs_astring_attributeAtIndex(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                             CS_UNRETAINED id name, NSUInteger index, NSRange *effective) {
    if (CS_LIKELY(cs_guard_is_on(G)) && CS_UNLIKELY(cs_attribute_index_misuse(self, _cmd, caller, index))) {
        if (effective) *effective = NSMakeRange(NSNotFound, 0);
        return nil;
    }
    return ((id(*)(id, SEL, id, NSUInteger, NSRange *))original)(self, _cmd, name, index, effective);
}
CS_DEFINE_HOOK_3(cs_astring_attributeAtIndex, id, CS_UNRETAINED id, NSUInteger, NSRange *)

static inline id cs_astring_attributesAtIndex(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                              NSUInteger index, NSRange *effective) {
    if (CS_LIKELY(cs_guard_is_on(G)) && CS_UNLIKELY(cs_attribute_index_misuse(self, _cmd, caller, index))) {
        if (effective) *effective = NSMakeRange(NSNotFound, 0);
        return cs_empty_attributes();
    }
    return ((id(*)(id, SEL, NSUInteger, NSRange *))original)(self, _cmd, index, effective);
}
CS_DEFINE_HOOK_2(cs_astring_attributesAtIndex, id, NSUInteger, NSRange *)

#pragma mark - NSMutableAttributedString

static inline void cs_mastring_addAttribute(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                            CS_UNRETAINED id name, CS_UNRETAINED id value, NSRange range) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        if (CS_UNLIKELY(name == nil)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "nil attribute name", 0, 0, 0)) return;
        } else if (CS_UNLIKELY(value == nil)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "nil attribute value", 0, 0, 0)) return;
        } else {
            NSUInteger length = cs_length(self);
            if (CS_UNLIKELY(!cs_range_fits(range, length)) && CS_RANGE_MISUSE(range)) return;
        }
    }
    ((void (*)(id, SEL, id, id, NSRange))original)(self, _cmd, name, value, range);
}
CS_DEFINE_HOOK_3(cs_mastring_addAttribute, void, CS_UNRETAINED id, CS_UNRETAINED id, NSRange)

/* A nil dictionary is legal (it clears the attributes of the range). GNUstep returns before its
 * range check when the range is empty (a logged warning), wherever the range starts: legal there. */
static inline void cs_mastring_setAttributes(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                             CS_UNRETAINED id attributes, NSRange range) {
#if defined(__APPLE__)
    if (CS_LIKELY(cs_guard_is_on(G))) {
#else
    if (CS_LIKELY(cs_guard_is_on(G)) && range.length > 0) {
#endif
        NSUInteger length = cs_length(self);
        if (CS_UNLIKELY(!cs_range_fits(range, length)) && CS_RANGE_MISUSE(range)) return;
    }
    ((void (*)(id, SEL, id, NSRange))original)(self, _cmd, attributes, range);
}
CS_DEFINE_HOOK_2(cs_mastring_setAttributes, void, CS_UNRETAINED id, NSRange)

static inline void cs_mastring_replaceCharactersInRange(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                        const void *caller, NSRange range, CS_UNRETAINED id string) {
    if (!cs_replace_allowed(self, _cmd, caller, range, string)) return;
    ((void (*)(id, SEL, NSRange, id))original)(self, _cmd, range, string);
}
CS_DEFINE_HOOK_2(cs_mastring_replaceCharactersInRange, void, NSRange, CS_UNRETAINED id)

static inline void cs_mastring_deleteCharactersInRange(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                       const void *caller, NSRange range) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger length = cs_length(self);
        if (CS_UNLIKELY(!cs_range_fits(range, length)) && CS_RANGE_MISUSE(range)) return;
    }
    ((void (*)(id, SEL, NSRange))original)(self, _cmd, range);
    CS_NO_TAIL_CALL();
}
CS_DEFINE_HOOK_1(cs_mastring_deleteCharactersInRange, void, NSRange)

/* -removeAttribute:range: (a nil name is legal on GNUstep) and -addAttributes:range: (a nil
 * dictionary throws): a range beyond the end is a no-op. */
static inline void cs_mastring_removeAttribute(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                               CS_UNRETAINED id name, NSRange range) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger length = cs_length(self);
        if (CS_UNLIKELY(!cs_range_fits(range, length)) && CS_RANGE_MISUSE(range)) return;
    }
    ((void (*)(id, SEL, id, NSRange))original)(self, _cmd, name, range);
}
CS_DEFINE_HOOK_2(cs_mastring_removeAttribute, void, CS_UNRETAINED id, NSRange)

static inline void cs_mastring_addAttributes(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                             CS_UNRETAINED id attributes, NSRange range) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        if (CS_UNLIKELY(attributes == nil)) {
            if (cs_guard_misuse(G, self, _cmd, caller, "nil attributes", 0, 0, 0)) return;
        } else {
            NSUInteger length = cs_length(self);
            if (CS_UNLIKELY(!cs_range_fits(range, length)) && CS_RANGE_MISUSE(range)) return;
        }
    }
    ((void (*)(id, SEL, id, NSRange))original)(self, _cmd, attributes, range);
}
CS_DEFINE_HOOK_2(cs_mastring_addAttributes, void, CS_UNRETAINED id, NSRange)

#pragma mark - Registration

static const CSHookSpec kStringHooks[] = {
    CS_HOOK("NSString", "characterAtIndex:", cs_string_characterAtIndex),
    CS_HOOK("NSString", "substringFromIndex:", cs_string_substringFromIndex),
    CS_HOOK("NSString", "substringToIndex:", cs_string_substringToIndex),
    CS_HOOK("NSString", "substringWithRange:", cs_string_substringWithRange),
    CS_HOOK("NSString", "rangeOfString:", cs_string_rangeOfString),
    CS_HOOK("NSString", "rangeOfString:options:", cs_string_rangeOfStringOptions),
    CS_HOOK("NSString", "rangeOfString:options:range:", cs_string_rangeOfStringOptionsRange),
    CS_HOOK("NSString", "rangeOfString:options:range:locale:", cs_string_rangeOfStringOptionsRangeLocale),
    CS_HOOK("NSString", "hasPrefix:", cs_string_hasPrefix),
    CS_HOOK("NSString", "hasSuffix:", cs_string_hasSuffix),
    CS_HOOK("NSString", "stringByReplacingCharactersInRange:withString:", cs_string_stringByReplacingCharactersInRange),
    CS_HOOK("NSString", "stringByAppendingString:", cs_string_stringByAppendingString),
    CS_HOOK("NSString", "initWithString:", cs_string_initWithString),
    CS_CLASS_HOOK("NSString", "stringWithString:", cs_string_stringWithString),
    CS_HOOK("NSString", "stringByReplacingOccurrencesOfString:withString:", cs_string_stringByReplacingOccurrences),
    CS_HOOK("NSString", "stringByReplacingOccurrencesOfString:withString:options:range:",
            cs_string_stringByReplacingOccurrencesOptionsRange),
    CS_HOOK("NSString", "compare:", cs_string_compare),
    CS_HOOK("NSString", "containsString:", cs_string_containsString),
    CS_HOOK("NSString", "componentsSeparatedByString:", cs_string_componentsSeparatedByString),
    CS_HOOK("NSMutableString", "appendString:", cs_mstring_appendString),
    CS_HOOK("NSMutableString", "insertString:atIndex:", cs_mstring_insertString),
    CS_HOOK("NSMutableString", "deleteCharactersInRange:", cs_mstring_deleteCharactersInRange),
    CS_HOOK("NSMutableString", "replaceCharactersInRange:withString:", cs_mstring_replaceCharactersInRange),
    CS_HOOK("NSAttributedString", "initWithString:", cs_astring_initWithString),
    CS_HOOK("NSAttributedString", "initWithString:attributes:", cs_astring_initWithStringAttributes),
    CS_HOOK("NSAttributedString", "attributedSubstringFromRange:", cs_astring_attributedSubstringFromRange),
    CS_HOOK("NSAttributedString", "attribute:atIndex:effectiveRange:", cs_astring_attributeAtIndex),
    CS_HOOK("NSAttributedString", "attributesAtIndex:effectiveRange:", cs_astring_attributesAtIndex),
    CS_HOOK("NSMutableAttributedString", "addAttribute:value:range:", cs_mastring_addAttribute),
    CS_HOOK("NSMutableAttributedString", "setAttributes:range:", cs_mastring_setAttributes),
    CS_HOOK("NSMutableAttributedString", "replaceCharactersInRange:withString:", cs_mastring_replaceCharactersInRange),
    CS_HOOK("NSMutableAttributedString", "deleteCharactersInRange:", cs_mastring_deleteCharactersInRange),
    CS_HOOK("NSMutableAttributedString", "removeAttribute:range:", cs_mastring_removeAttribute),
    CS_HOOK("NSMutableAttributedString", "addAttributes:range:", cs_mastring_addAttributes),
};

#pragma mark - Canary

/* A mutable-string edit that raises on every platform (a nil string does not on GNUstep). */
static BOOL cs_canary_insert_beyond(void) {
    NSMutableString *text = [CS_CLASS(NSMutableString) stringWithString:CS_STR("ab")];
    [text insertString:CS_STR("x") atIndex:9];
    return [text isEqualToString:CS_STR("ab")];
}

static BOOL cs_canary_append_legal(void) {
    NSMutableString *text = [CS_CLASS(NSMutableString) stringWithString:CS_STR("ab")];
    [text appendString:CS_STR("c")];
    return [text isEqualToString:CS_STR("abc")];
}

/** YES when `receiver` answers `selector_name` through the hook `body` (cs_canary_reaches_hook). */
#define CS_REACHES(receiver, selector_name, body)                                                  \
    cs_canary_reaches_hook(object_getClass(receiver), @selector(selector_name), &body##_slots)

/* Each step misuses a scratch receiver that reaches the hook it tests; an owner the guard left
 * alone (an app's swizzle in place before start) skips its step instead of switching the whole
 * guard off. At least one step must run. */
static const char *cs_strings_canary(void) {
    unsigned steps = 0;
    /* A compile-time constant string and one made at run time: different classes own the IMP. */
    NSString *literal = CS_STR("abc");
    NSString *made = [CS_CLASS(NSString) stringWithUTF8String:"abc"];
    NSMutableString *mutable = [CS_CLASS(NSMutableString) stringWithString:CS_STR("abc")];
    if (CS_REACHES(literal, characterAtIndex:, cs_string_characterAtIndex)) {
        steps++;
        CS_CANARY_MISUSE([literal characterAtIndex:9] == 0,
                         "-[NSString characterAtIndex:] beyond length not intercepted (constant string)");
        CS_CANARY_LEGAL([literal characterAtIndex:2] == 'c',
                        "-[NSString characterAtIndex:] legal call changed (constant string)");
    }
    if (CS_REACHES(made, characterAtIndex:, cs_string_characterAtIndex)) {
        steps++;
        CS_CANARY_MISUSE([made characterAtIndex:9] == 0, "-[NSString characterAtIndex:] beyond length not intercepted");
        CS_CANARY_LEGAL([made characterAtIndex:2] == 'c', "-[NSString characterAtIndex:] legal call changed");
    }
    if (CS_REACHES(mutable, substringWithRange:, cs_string_substringWithRange)) {
        steps++;
        CS_CANARY_MISUSE([[mutable substringWithRange:NSMakeRange(1, 9)] isEqualToString:CS_STR("bc")],
                         "-[NSMutableString substringWithRange:] beyond length not intercepted");
        CS_CANARY_LEGAL([[mutable substringWithRange:NSMakeRange(1, 1)] isEqualToString:CS_STR("b")],
                        "-[NSMutableString substringWithRange:] legal call changed");
    }
    /* -insertString:atIndex: is judged through its primitive too (cs_wrapper_bound_applies). */
    if (CS_REACHES(mutable, insertString:atIndex:, cs_mstring_insertString) &&
        CS_REACHES(mutable, replaceCharactersInRange:withString:, cs_mstring_replaceCharactersInRange)) {
        steps++;
        CS_CANARY_MISUSE(cs_canary_insert_beyond(), "-[NSMutableString insertString:atIndex:] beyond length not intercepted");
        CS_CANARY_LEGAL(cs_canary_append_legal(), "-[NSMutableString appendString:] legal call changed");
    }
    return steps > 0 ? NULL : "no scratch string reaches the guard's hooks";
}

CS_GUARD_DEFINE(CSGuardStrings, string, kStringHooks, cs_strings_canary);
