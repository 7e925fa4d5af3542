/*
 * CSObjC.h — the one import for Objective-C sources in this target.
 *
 * Ownership: every Objective-C file compiles under MRC (GCC's libobjc, where it runs and is tested;
 * it has no ARC) and under ARC (Apple: SwiftPM turns ARC on and a package used by URL cannot turn
 * it off). `scripts/check-arc.sh` runs clang's ARC front end over every file in CI. The rules
 * (docs/ARCHITECTURE.md, "Ownership: MRC and ARC"):
 *   - retain/release/autorelease only through CS_RETAIN / CS_RELEASE / CS_AUTORELEASE (no-ops
 *     under ARC, where a strong variable does the same), -dealloc ends with CS_SUPER_DEALLOC();
 *     no -retainCount anywhere; pools are @autoreleasepool (both modes), never NSAutoreleasePool;
 *   - an object pointer that does not own (documented "unretained", a back pointer, a dealloc-path
 *     receiver or parameter, an element of a C array of objects) is written CS_UNRETAINED, so that
 *     ARC does not retain what MRC only borrowed;
 *   - an object kept in C memory crosses with a bridge: CS_RETAINED_POINTER (+1, the C side owns
 *     it) and CS_RELEASE_POINTER to give it up; CS_POINTER / CS_OBJECT cross without ownership;
 *     an integer becomes an object only through CS_OBJECT((void *)value).
 */
#ifndef CS_OBJC_H
#define CS_OBJC_H

#import <Foundation/Foundation.h>
#include <objc/runtime.h>
#include <objc/message.h>

/* Clang accepts ownership qualifiers and __bridge casts in MRC too (as no-ops), so these two are
 * the same in both modes; they are macros to name the intent where they are used. */
#define CS_UNRETAINED __unsafe_unretained
#define CS_OBJECT(p) ((__bridge id)(p))
#define CS_POINTER(x) ((__bridge void *)(x))

#if __has_feature(objc_arc)
#define CS_RETAIN(x) (x)
#define CS_RELEASE(x) ((void)0)
#define CS_AUTORELEASE(x) (x)
#define CS_SUPER_DEALLOC() ((void)0)
/* An object kept in C storage: +1 as a plain pointer, and back. */
#define CS_RETAINED_POINTER(x) ((__bridge_retained void *)(x))
#define CS_RELEASE_POINTER(p) ((void)(__bridge_transfer id)(p))
#else
#define CS_RETAIN(x) [(x) retain]
#define CS_RELEASE(x) [(x) release]
#define CS_AUTORELEASE(x) [(x) autorelease]
#define CS_SUPER_DEALLOC() [super dealloc]
#define CS_RETAINED_POINTER(x) ((void *)[(x) retain])
#define CS_RELEASE_POINTER(p) [(id)(p) release]
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
        (__bridge NSString *)(cs_str_ ? cs_str_ : cs_interned_string(&cs_str_cache_, "" literal)); \
    })
#endif

/*
 * Class references. GCC's runtime ABI has none: clang compiles every `[NSArray ...]` to
 * objc_lookup_class("NSArray"), which walks a chain of a fixed 1,024-bucket table, so its cost grows
 * with the process's class count (about 50 entries per chain at +50,000 classes). Code on the start
 * path and in hooks writes CS_CLASS(Name), a Class-typed expression: on GNUstep the class found once
 * per call site and kept (a class compiled into an image is never disposed), on Apple the class
 * itself. `Name` must be a class whose interface this file sees, as a class message needs (checked
 * at compile time on both).
 */
#if defined(__APPLE__)
#define CS_CLASS(Name) ((Class)[Name class])
#else
#define CS_CLASS(Name)                                                                             \
    ((void)sizeof([Name class]), ({                                                                \
        static void *volatile cs_class_cache_;                                                     \
        void *cs_class_ = CS_ATOMIC_LOAD(&cs_class_cache_);                                        \
        (__bridge Class)(cs_class_ ? cs_class_ : cs_class_named_once(&cs_class_cache_, #Name));    \
    }))
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
/** The class named `name` (compiled into a loaded image), kept in *cache once found; returns it
 *  (Nil, not kept, when no such class is loaded). */
void *cs_class_named_once(void *volatile *cache, const char *name);
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
