/*
 * CSObjC.h — the one import for Objective-C sources in this target. Memory management is manual
 * (GCC libobjc has no ARC); the CS_* macros let the same sources compile under ARC on Apple.
 */
#ifndef CS_OBJC_H
#define CS_OBJC_H

#import <Foundation/Foundation.h>
#include <objc/runtime.h>
#include <objc/message.h>

#if __has_feature(objc_arc)
#define CS_RETAIN(x) (x)
#define CS_RELEASE(x) ((void)0)
#define CS_AUTORELEASE(x) (x)
/* An object kept in C storage: +1 as a plain pointer, and back. */
#define CS_RETAINED_POINTER(x) ((void *)CFBridgingRetain(x))
#define CS_RELEASE_POINTER(p) CFRelease((CFTypeRef)(p))
#define CS_OBJECT(p) ((__bridge id)(p))
#define CS_POINTER(x) ((__bridge void *)(x))
#define CS_UNRETAINED __unsafe_unretained
#else
#define CS_RETAIN(x) [(x) retain]
#define CS_RELEASE(x) [(x) release]
#define CS_AUTORELEASE(x) [(x) autorelease]
#define CS_RETAINED_POINTER(x) ((void *)[(x) retain])
#define CS_RELEASE_POINTER(p) [(id)(p) release]
#define CS_OBJECT(p) ((id)(p))
#define CS_POINTER(x) ((void *)(x))
#define CS_UNRETAINED
#endif

/* GCC's <stdatomic.h> shadows clang's when GCC's include directory is on the path (it is, for
 * libobjc's headers), so Objective-C sources use the __atomic builtins on plain types. */
#define CS_ATOMIC_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define CS_ATOMIC_LOAD_RELAXED(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define CS_ATOMIC_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define CS_ATOMIC_FETCH_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define CS_ATOMIC_FETCH_SUB(p, v) __atomic_fetch_sub((p), (v), __ATOMIC_RELAXED)

/*
 * String literals. On Apple `@"..."` is a constant CFString. On GNUstep a literal's class is set by
 * -fconstant-string-class=NSConstantString, an unsafe flag SwiftPM refuses from a dependency; without
 * it literals become GCC libobjc's own NXConstantString, which is no NSString. So this target writes
 * CS_STR("text"): on GNUstep an immortal NSString made once per call site (a lost race leaks
 * nothing: the loser releases its copy), on Apple the literal itself.
 */
#if defined(__APPLE__)
#define CS_STR(literal) @literal
#else
#define CS_STR(literal)                                                                            \
    ({                                                                                             \
        static void *volatile cs_str_cache_;                                                       \
        void *cs_str_ = CS_ATOMIC_LOAD(&cs_str_cache_);                                            \
        (NSString *)(cs_str_ ? cs_str_ : cs_interned_string(&cs_str_cache_, "" literal));          \
    })
#endif

/*
 * Exceptions. Clang emits Objective-C landing pads for the GCC runtime only with -fexceptions, which
 * SwiftPM passes to C++ but accepts for Objective-C only as an unsafe flag. So this target's `.m` files
 * contain no @try/@catch/@finally: the few places that must catch go through these two functions,
 * implemented in Objective-C++ (Backend/CSObjCTry.mm) where exceptions are on by default. Frames of
 * the `.m` files between the throw and the catch need no landing pads (they own no cleanups: MRC).
 */
#ifdef __cplusplus
extern "C" {
#endif
#if !defined(__APPLE__)
/** The string for `utf8`, made once and kept in *cache for good; returns it (an NSString). */
void *cs_interned_string(void *volatile *cache, const char *utf8);
#endif
/** Calls body(context); returns the Objective-C exception it threw (caught), or nil. */
id cs_objc_try(void (*body)(void *context), void *context);
/** Calls body(context), then cleanup(context) whether or not body threw; the exception, if any,
 *  continues to the caller's caller unchanged. */
void cs_objc_try_finally(void (*body)(void *context), void (*cleanup)(void *context), void *context);
#ifdef __cplusplus
}
#endif

#define CS_LIKELY(x) __builtin_expect(!!(x), 1)
#define CS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#endif
