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
    NSString *made = [[NSString alloc] initWithUTF8String:utf8];
    void *kept = CS_RETAINED_POINTER(made); /* +1 owned by the cache, for good */
    CS_RELEASE(made);
    void *expected = NULL;
    if (__atomic_compare_exchange_n(cache, &expected, kept, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return kept;
    CS_RELEASE_POINTER(kept); /* lost the race: the winner's string is the one kept */
    return expected;
}

extern "C" void *cs_class_named_once(void *volatile *cache, const char *name) {
    void *found = CS_POINTER(objc_lookUpClass(name));
    if (found != NULL) CS_ATOMIC_STORE(cache, found);
    return found;
}
#endif
