/*
 * CSObjCTry.mm — the only place in this target that catches Objective-C exceptions (see CSObjC.h,
 * "Exceptions"). Objective-C++ because C++ compilation has exceptions on by default, so SwiftPM
 * needs no unsafe flag; with GCC's runtime clang uses the Objective-C personality here too.
 */
#import "CSObjC.h"

extern "C" id cs_objc_try(void (*body)(void *context), void *context) {
    @try {
        body(context);
    } @catch (id exception) {
        return exception;
    }
    return nil;
}

extern "C" void cs_objc_try_finally(void (*body)(void *context), void (*cleanup)(void *context), void *context) {
    @try {
        body(context);
    } @finally {
        cleanup(context);
    }
}

#if !defined(__APPLE__)
extern "C" void *cs_interned_string(void *volatile *cache, const char *utf8) {
    NSString *made = [[NSString alloc] initWithUTF8String:utf8]; /* +1, kept for good */
    void *expected = NULL;
    if (__atomic_compare_exchange_n(cache, &expected, (void *)made, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return (void *)made;
    [made release];
    return expected;
}
#endif
