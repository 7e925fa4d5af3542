/*
 * TestSupport_ClassFilters.m — app classes with the prefix "MY" whose misuses go through
 * system implementations the guards hook (see cs_filter_support.h).
 */
#import "CSScenarioSupport.h"
#include "cs_filter_support.h"
#include <pthread.h>
#include <sched.h>
#include <string.h>

/* An NSMutableArray subclass with its own storage and primitives; -addObject: is NSMutableArray's. */
@interface MYFilterArray : NSMutableArray {
    __strong NSMutableArray *_items;
}
@end

@implementation MYFilterArray
CS_ITEMS_ARRAY_PRIMITIVES
- (void)insertObject:(id)object atIndex:(NSUInteger)index {
    [_items insertObject:object atIndex:index];
}
- (void)replaceObjectAtIndex:(NSUInteger)index withObject:(id)object {
    [_items replaceObjectAtIndex:index withObject:object];
}
@end

/* A plain model: -valueForKey: of a key it lacks reaches NSObject's key-value coding. */
@interface MYFilterModel : NSObject
@end
@implementation MYFilterModel
@end

static char *cs_filter_copy(NSString *text) {
    return strdup([text UTF8String]);
}

char *cs_filter_app_array_add_nil(void) {
    char *result = NULL;
    @autoreleasepool {
        MYFilterArray *array = CS_AUTORELEASE([[MYFilterArray alloc] init]);
        @try {
            [array addObject:cs_opaque(nil)];
            result = cs_filter_copy([NSString stringWithFormat:@"count=%lu", (unsigned long)[array count]]);
        } @catch (NSException *exception) {
            result = cs_filter_copy([NSString stringWithFormat:@"exception:%@", [exception name]]);
        }
    }
    return result;
}

char *cs_filter_app_model_undefined_key(void) {
    char *result = NULL;
    @autoreleasepool {
        MYFilterModel *model = CS_AUTORELEASE([[MYFilterModel alloc] init]);
        @try {
            id value = [model valueForKey:@"cs_filterNoSuchKey"];
            result = cs_filter_copy(value ? [NSString stringWithFormat:@"value=%@", value] : @"value=nil");
        } @catch (NSException *exception) {
            result = cs_filter_copy([NSString stringWithFormat:@"exception:%@", [exception name]]);
        }
    }
    return result;
}

/* The concurrent misuse: plain pthreads (see cs_stress_thread in Scenarios_Containers.m). */
static struct {
    pthread_t thread;
    BOOL running;
    int stop;            /* __atomic */
    int first_call_done; /* __atomic */
    long returned, threw, other;
} g_concurrent;

static void *cs_filter_concurrent_main(void *unused) {
    (void)unused;
#if defined(GNUSTEP)
    GSRegisterCurrentThread();
#endif
    @autoreleasepool {
        NSArray *array = [NSArray arrayWithObjects:@"a", @"b", @"c", nil];
        do {
            @autoreleasepool {
                @try {
                    (void)[array objectAtIndex:cs_opaque_index(7)];
                    g_concurrent.returned++;
                } @catch (NSException *exception) {
                    if ([[exception name] isEqualToString:NSRangeException]) g_concurrent.threw++;
                    else g_concurrent.other++;
                }
            }
            __atomic_store_n(&g_concurrent.first_call_done, 1, __ATOMIC_RELEASE);
        } while (!__atomic_load_n(&g_concurrent.stop, __ATOMIC_ACQUIRE));
    }
#if defined(GNUSTEP)
    GSUnregisterCurrentThread();
#endif
    return NULL;
}

bool cs_filter_concurrent_misuse_start(void) {
    if (g_concurrent.running) return false;
    g_concurrent.returned = g_concurrent.threw = g_concurrent.other = 0;
    __atomic_store_n(&g_concurrent.stop, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_concurrent.first_call_done, 0, __ATOMIC_RELEASE);
    if (pthread_create(&g_concurrent.thread, NULL, cs_filter_concurrent_main, NULL) != 0) return false;
    g_concurrent.running = YES;
    /* Returns once the thread is misusing: the caller's starts overlap its calls. */
    while (!__atomic_load_n(&g_concurrent.first_call_done, __ATOMIC_ACQUIRE)) sched_yield();
    return true;
}

void cs_filter_concurrent_misuse_stop(long *returned, long *threw, long *other) {
    if (g_concurrent.running) {
        __atomic_store_n(&g_concurrent.stop, 1, __ATOMIC_RELEASE);
        pthread_join(g_concurrent.thread, NULL);
        g_concurrent.running = NO;
    }
    *returned = g_concurrent.returned;
    *threw = g_concurrent.threw;
    *other = g_concurrent.other;
}
