/*
 * TestSupport_Crashes.m — deliberate Objective-C crashes for `shield crash` (objc-exception,
 * inside-guard) and the tests that run it. Public Objective-C API only; in no product.
 */
#import "CSScenarioSupport.h"
#include <objc/runtime.h>

__attribute__((noinline)) void cs_capture_raise_uncaught_exception(void) {
    /* A pool for the exception's autoreleased objects; never popped: the exception leaves the
     * block and the process ends with it. */
    @autoreleasepool {
        [NSException raise:CS_STR("CrashShieldTestException") format:CS_STR("raised on purpose by %s"), "shield crash objc-exception"];
    }
    __asm__ volatile("" ::: "memory"); /* not a tail call: keep this frame in the stack */
}

/* An app's out-of-bounds read, left uncaught: `-objectAtIndex:5` on a two-element array made at
 * run time. Unguarded (or with the container guard report-only) the original throws
 * NSRangeException and the process ends with it; neutralised it returns nil and this returns. */
__attribute__((noinline)) void cs_capture_array_beyond_for_testing(void) {
    @autoreleasepool { /* never popped when the exception leaves the block */
        NSArray *array = [NSArray arrayWithObjects:CS_STR("a"), CS_STR("b"), nil];
        (void)[array objectAtIndex:5];
    }
    __asm__ volatile("" ::: "memory"); /* not a tail call: keep this frame in the stack */
}

/* Fail-safe test: records one neutralised misuse, then calls the (hooked, once guards run) objectAtIndex: implementation of a real
 * array's concrete class with a receiver that is not an object, so the process faults while the
 * guard's hook code is on the stack. The class is found at run time, never by name. */
__attribute__((noinline)) void cs_capture_crash_inside_guard_for_testing(void) {
    @autoreleasepool { /* never popped: the process faults inside it */
        NSArray *array = [NSArray arrayWithObjects:CS_STR("a"), CS_STR("b"), nil];
        (void)[array objectAtIndex:7]; /* a neutralised misuse first: the report's recent incidents show it */
        IMP implementation = class_getMethodImplementation([array class], @selector(objectAtIndex:));
        /* The receiver is a bare address, never an object: passed unretained, as a plain pointer. */
        void *(*call)(void *, SEL, NSUInteger) = (void *(*)(void *, SEL, NSUInteger))implementation;
        call((void *)(uintptr_t)0x10, @selector(objectAtIndex:), 5);
    }
    __asm__ volatile("" ::: "memory");
}
