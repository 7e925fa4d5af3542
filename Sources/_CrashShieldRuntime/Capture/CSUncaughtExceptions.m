/*
 * CSUncaughtExceptions.m — see cs_capture_exceptions.h. Runs on the throwing thread after the
 * runtime found no handler; this is not a signal handler, but the process is about to end, so
 * the work is kept small: copy the return addresses, hand everything to the C writer, chain.
 */
#import "../Backend/CSObjC.h"
#include "cs_capture_exceptions.h"
#include "csc_capture.h"

#include <pthread.h>

static NSUncaughtExceptionHandler *g_previous_handler;
static pthread_once_t g_install_once = PTHREAD_ONCE_INIT;

static int g_entered;

static void cs_uncaught_exception(NSException *exception) {
    /* An exception raised while reporting comes back here: report once, then only chain. */
    if (__atomic_fetch_add(&g_entered, 1, __ATOMIC_ACQ_REL) == 0) {
        @autoreleasepool {
            uintptr_t addresses[CSC_MAX_FRAMES];
            size_t count = 0;
            NSArray *returns = [exception callStackReturnAddresses];
            for (NSUInteger i = 0; i < [returns count] && count < CSC_MAX_FRAMES; i++) {
                /* GNUstep stores NSValue pointers, Apple NSNumbers: both answer pointerValue. */
                id value = [returns objectAtIndex:i];
                if ([value respondsToSelector:@selector(pointerValue)])
                    addresses[count++] = (uintptr_t)[value pointerValue];
                else if ([value respondsToSelector:@selector(unsignedLongLongValue)])
                    addresses[count++] = (uintptr_t)[value unsignedLongLongValue];
            }
            csc_report_exception([[exception name] UTF8String], [[exception reason] UTF8String], addresses, count);
        }
    }
    if (g_previous_handler) g_previous_handler(exception);
}

static void cs_install_exception_handler(void) {
    g_previous_handler = NSGetUncaughtExceptionHandler();
    NSSetUncaughtExceptionHandler(cs_uncaught_exception);
}

bool cs_capture_exceptions_start(void) {
    pthread_once(&g_install_once, cs_install_exception_handler);
    return true;
}

__attribute__((noinline)) void cs_capture_raise_uncaught_exception(void) {
    /* A pool for the exception's autoreleased objects; never popped: the exception leaves the
     * block (this file has no landing pads) and the process ends with it. */
    @autoreleasepool {
        [NSException raise:CS_STR("CrashShieldTestException") format:CS_STR("raised on purpose by %s"), "shield crash objc-exception"];
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
