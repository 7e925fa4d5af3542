/*
 * CSGuard_Strings.m — SPEC §2.2: NSString (every concrete class, constant strings included),
 * NSMutableString, NSAttributedString and NSMutableAttributedString.
 *
 * Ranges are checked with overflow-safe arithmetic: location + length may wrap.
 */
#import "../Engine/CSEngine.h"

extern CSGuard CSGuardStrings;
#define G (&CSGuardStrings)

/** True when `range` lies within [0, length]; never computes location + length. */
static inline BOOL cs_range_fits(NSRange range, NSUInteger length) {
    return range.location <= length && range.length <= length - range.location;
}

#pragma mark - NSString

static inline unichar cs_string_characterAtIndex(IMP original, id self, SEL _cmd, const void *caller,
                                                 NSUInteger index) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger length = [(NSString *)self length];
        if (CS_UNLIKELY(index >= length) &&
            cs_guard_misuse(G, self, _cmd, caller, "index {} beyond length {}", 2, index, length))
            return 0;
    }
    return ((unichar(*)(id, SEL, NSUInteger))original)(self, _cmd, index);
}
CS_DEFINE_HOOK_1(cs_string_characterAtIndex, unichar, NSUInteger)

#pragma mark - Registration

static const CSHookSpec kStringHooks[] = {
    CS_HOOK("NSString", "characterAtIndex:", cs_string_characterAtIndex),
};

static const char *cs_strings_canary(void) {
    NSString *text = [NSString stringWithUTF8String:"abc"];
    CS_CANARY_MISUSE([text characterAtIndex:9] == 0, "-[NSString characterAtIndex:] beyond length not intercepted");
    CS_CANARY_LEGAL([text characterAtIndex:2] == 'c', "-[NSString characterAtIndex:] legal call changed");
    return NULL;
}

CS_GUARD_DEFINE(CSGuardStrings, "string", kStringHooks, cs_strings_canary);
