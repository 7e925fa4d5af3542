/*
 * CSUncaughtExceptions.m — see cs_capture_exceptions.h. Runs on the throwing thread after the
 * runtime found no handler; this is not a signal handler, but the process is about to end, so
 * the work is kept small: copy the return addresses, hand everything to the C writer, chain.
 */
#import "../Backend/CSObjC.h"
#import "../Backend/CSBackend.h"
#include "cs_capture_exceptions.h"
#include "csc_capture.h"

#include <pthread.h>

static NSUncaughtExceptionHandler *g_previous_handler;
static pthread_once_t g_install_once = PTHREAD_ONCE_INIT;

static int g_entered;

static void cs_uncaught_exception(NSException *exception) {
    bool reported = false;
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
            reported = csc_report_exception([[exception name] UTF8String], [[exception reason] UTF8String], addresses, count);
        }
    }
    if (g_previous_handler) g_previous_handler(exception);
    /* The process ends with SIGABRT on every platform once reported (the signal handler writes
     * no second report). Not reported (capture not installed): the runtime's own ending. */
    if (reported) {
        @autoreleasepool {
            cs_backend_end_uncaught_exception([[exception name] UTF8String], [[exception reason] UTF8String]);
        }
    }
}

static void cs_install_exception_handler(void) {
    g_previous_handler = NSGetUncaughtExceptionHandler();
    NSSetUncaughtExceptionHandler(cs_uncaught_exception);
}

bool cs_capture_exceptions_start(void) {
    pthread_once(&g_install_once, cs_install_exception_handler);
    return true;
}
