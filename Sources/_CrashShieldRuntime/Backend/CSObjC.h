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

#define CS_LIKELY(x) __builtin_expect(!!(x), 1)
#define CS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#endif
