/*
 * TestSupport_Runtime.m — Objective-C fixtures for the runtime backend tests (the Swift tests cannot
 * define Objective-C classes on Linux). White-box: includes the backend's private header.
 */
#import "CSScenarioSupport.h"
#import "../_CrashShieldRuntime/Backend/CSBackend.h"
#include "cs_runtime.h"
#include <pthread.h>

#pragma mark - Dispatch-table refresh

/* Sub defines 40 methods, so its copy-on-write dispatch-table bucket is its own copy: exactly the
 * condition where replacing Base's IMP without a refresh leaves Sub calling the old one
 * (gnustep-probe.md §0a). */
@interface CSDispatchBase : NSObject
- (int)controlValue;
- (int)backendValue;
@end
@implementation CSDispatchBase
- (int)controlValue {
    return 1;
}
- (int)backendValue {
    return 1;
}
@end

@interface CSDispatchSub : CSDispatchBase
@end
@implementation CSDispatchSub
#define CS_FILLER(n) \
    -(int)filler##n { return n; }
CS_FILLER(0) CS_FILLER(1) CS_FILLER(2) CS_FILLER(3) CS_FILLER(4) CS_FILLER(5) CS_FILLER(6) CS_FILLER(7)
CS_FILLER(8) CS_FILLER(9) CS_FILLER(10) CS_FILLER(11) CS_FILLER(12) CS_FILLER(13) CS_FILLER(14) CS_FILLER(15)
CS_FILLER(16) CS_FILLER(17) CS_FILLER(18) CS_FILLER(19) CS_FILLER(20) CS_FILLER(21) CS_FILLER(22) CS_FILLER(23)
CS_FILLER(24) CS_FILLER(25) CS_FILLER(26) CS_FILLER(27) CS_FILLER(28) CS_FILLER(29) CS_FILLER(30) CS_FILLER(31)
CS_FILLER(32) CS_FILLER(33) CS_FILLER(34) CS_FILLER(35) CS_FILLER(36) CS_FILLER(37) CS_FILLER(38) CS_FILLER(39)
@end

static int cs_replacement_value(id self, SEL _cmd) {
    (void)self;
    (void)_cmd;
    return 2;
}

cs_dispatch_probe cs_test_dispatch_refresh(void) {
    cs_dispatch_probe probe = {0};
    @autoreleasepool {
        CSDispatchBase *base = [[CSDispatchBase new] autorelease];
        CSDispatchSub *sub = [[CSDispatchSub new] autorelease];
        /* Warm both classes' dispatch tables first. */
        probe.before = [sub controlValue] * 10 + [sub backendValue];
        /* Control: the plain runtime call, no refresh. */
        IMP control_original = method_setImplementation(
            class_getInstanceMethod([CSDispatchBase class], @selector(controlValue)), (IMP)cs_replacement_value);
        probe.control_base = [base controlValue];
        probe.control_sub = [sub controlValue];
        /* The backend primitive. */
        IMP previous = cs_backend_replace_implementation([CSDispatchBase class], @selector(backendValue),
                                                         (IMP)cs_replacement_value);
        probe.backend_base = [base backendValue];
        probe.backend_sub = [sub backendValue];
        probe.previous_is_original = previous != NULL && ((int (*)(id, SEL))previous)(base, @selector(backendValue)) == 1;
        /* Not an owner: nothing changes, NULL comes back. */
        probe.non_owner_refused =
            cs_backend_replace_implementation([CSDispatchSub class], @selector(backendValue), (IMP)cs_replacement_value) == NULL;
        /* Restore, so the test can run again in the same process. */
        cs_backend_replace_implementation([CSDispatchBase class], @selector(backendValue), previous);
        cs_backend_replace_implementation([CSDispatchBase class], @selector(controlValue), control_original);
        probe.restored_sub = [sub backendValue];
    }
    return probe;
}

size_t cs_test_owner_count(const char *root, const char *selector, bool class_side) {
    Class cls = objc_lookUpClass(root);
    if (cls == Nil) return 0;
    Class owners[64];
    return cs_backend_find_owners(cls, sel_registerName(selector), class_side, owners, 64);
}

#pragma mark - Side table

typedef struct {
    unsigned thread_index;
    unsigned iterations;
    NSArray *shared_objects;
    unsigned failures;
} cs_side_worker;

static const char kKeyA = 'a';
static const char kKeyB = 'b';

static void *cs_side_worker_main(void *argument) {
    cs_side_worker *worker = argument;
    @autoreleasepool {
        for (unsigned i = 0; i < worker->iterations; i++) {
            @autoreleasepool {
                /* Private object: exact results expected. */
                NSObject *own = [[NSObject alloc] init];
                NSNumber *value = [NSNumber numberWithUnsignedInt:i];
                cs_sidetable_set(own, &kKeyA, value);
                cs_sidetable_set(own, &kKeyB, value);
                if (cs_sidetable_get(own, &kKeyA) != value) worker->failures++;
                cs_sidetable_set(own, &kKeyA, NULL);
                if (cs_sidetable_get(own, &kKeyA) != NULL) worker->failures++;
                if (cs_sidetable_remove_all(own) != 1) worker->failures++;
                [own release];
                /* Shared objects: racing writers, only consistency matters. */
                id shared = [worker->shared_objects objectAtIndex:(i + worker->thread_index) % [worker->shared_objects count]];
                cs_sidetable_set(shared, &kKeyA, value);
                id seen = cs_sidetable_get(shared, &kKeyA);
                if (seen != nil && ![seen isKindOfClass:[NSNumber class]]) worker->failures++;
            }
        }
    }
    return NULL;
}

unsigned cs_test_sidetable_stress(unsigned threads, unsigned iterations) {
    unsigned failures = 0;
    @autoreleasepool {
        NSMutableArray *shared = [NSMutableArray array];
        for (unsigned i = 0; i < 16; i++) [shared addObject:[[[NSObject alloc] init] autorelease]];
        size_t before = cs_sidetable_count();
        pthread_t ids[64];
        cs_side_worker workers[64];
        if (threads > 64) threads = 64;
        for (unsigned t = 0; t < threads; t++) {
            workers[t] = (cs_side_worker){t, iterations, shared, 0};
            pthread_create(&ids[t], NULL, cs_side_worker_main, &workers[t]);
        }
        for (unsigned t = 0; t < threads; t++) {
            pthread_join(ids[t], NULL);
            failures += workers[t].failures;
        }
        size_t removed = 0;
        for (id object in shared) removed += cs_sidetable_remove_all(object);
        if (removed != 16) failures++;
        if (cs_sidetable_count() != before) failures++;
    }
    return failures;
}
