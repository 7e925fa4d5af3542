/*
 * TestSupport_Runtime.m — Objective-C fixtures for the runtime backend tests (the Swift tests cannot
 * define Objective-C classes on Linux). White-box: includes the backend's private header.
 */
#import "CSScenarioSupport.h"
#import "../../Sources/_CrashShieldRuntime/Backend/CSBackend.h"
#import "../../Sources/_CrashShieldRuntime/Engine/CSEngine.h"

extern CSGuard CSGuardNSNull;
#include "cs_runtime.h"
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>
#if !defined(__APPLE__)
#include <dlfcn.h>
#endif

#pragma mark - Exception helpers and interned strings (the runtime target's `.m` files have neither @try nor @"")

static void cs_probe_throw_range(void *context) {
    (void)context;
    [[NSArray array] objectAtIndex:3];
}

static void cs_probe_no_throw(void *context) {
    *(int *)context += 1;
}

static void cs_probe_cleanup(void *context) {
    *(bool *)context = true;
}

cs_objc_try_probe cs_test_objc_try(void) {
    cs_objc_try_probe probe = {0};
    @autoreleasepool {
        id caught = cs_objc_try(cs_probe_throw_range, NULL);
        probe.try_caught_range_exception =
            [caught isKindOfClass:[NSException class]] && [[caught name] isEqualToString:NSRangeException];
        int calls = 0;
        probe.try_returned_nil_without_exception = cs_objc_try(cs_probe_no_throw, &calls) == nil && calls == 1;
        bool cleaned = false;
        @try {
            cs_objc_try_finally(cs_probe_throw_range, cs_probe_cleanup, &cleaned);
        } @catch (NSException *exception) {
            probe.finally_exception_reached_caller = [[exception name] isEqualToString:NSRangeException];
        }
        probe.finally_cleanup_ran = cleaned;
    }
    return probe;
}

static NSString *cs_probe_interned(void) {
    return CS_STR("interned");
}

bool cs_test_interned_string(void) {
    NSString *first = cs_probe_interned();
    return [first isKindOfClass:[NSString class]] && [first isEqualToString:@"interned"] && cs_probe_interned() == first;
}

static NSUInteger cs_category_length(CS_UNRETAINED id self, SEL _cmd) {
    (void)self;
    (void)_cmd;
    return 0;
}

void cs_test_add_nsobject_length(void) {
    class_addMethod([NSObject class], @selector(length), (IMP)cs_category_length, "Q@:");
}

bool cs_test_nsoperation_remove_cancelled_dependency(void) {
    bool empty;
    @autoreleasepool {
        NSOperation *first = [[NSOperation alloc] init];
        NSOperation *second = [[NSOperation alloc] init];
        [second addDependency:first];
        [first cancel];
        [second removeDependency:first];
        empty = [[second dependencies] count] == 0;
        CS_RELEASE(second);
        CS_RELEASE(first);
    }
    return empty;
}

#pragma mark - Dispatch-table refresh

/* Sub defines 40 methods, so its copy-on-write dispatch-table bucket is its own copy: exactly the
 * condition where replacing Base's IMP without a refresh leaves Sub calling the old one
 * (GCC libobjc's copy-on-write dispatch tables). */
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

static int cs_replacement_value(CS_UNRETAINED id self, SEL _cmd) {
    (void)self;
    (void)_cmd;
    return 2;
}

static int cs_value_one(CS_UNRETAINED id self, SEL _cmd) {
    (void)self;
    (void)_cmd;
    return 1;
}

/* Which dispatch-table bucket a compiled selector lands in depends on every selector registered
 * before it (any new selector elsewhere in the process can move it), so the control uses a
 * selector registered here, between 40 fresh ones on each side that only Sub defines: Sub then
 * owns its copy of the control's bucket (buckets hold 32) wherever the numbering starts. */
static SEL g_control_selector;

static void cs_make_control_selector(void) {
    char name[64];
    for (int i = 0; i < 81; i++) {
        snprintf(name, sizeof name, i == 40 ? "csDispatchControl" : "csDispatchNeighbour%d", i);
        SEL sel = sel_registerName(name);
        if (i == 40)
            g_control_selector = sel;
        else
            class_addMethod([CSDispatchSub class], sel, (IMP)cs_value_one, "i@:");
    }
    class_addMethod([CSDispatchBase class], g_control_selector, (IMP)cs_value_one, "i@:");
}

static int cs_send_control(id receiver) {
    IMP imp = class_getMethodImplementation(object_getClass(receiver), g_control_selector); /* what a send dispatches to */
    return ((int (*)(id, SEL))imp)(receiver, g_control_selector);
}

cs_dispatch_probe cs_test_dispatch_refresh(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, cs_make_control_selector);
    cs_dispatch_probe probe = {0};
    @autoreleasepool {
        CSDispatchBase *base = CS_AUTORELEASE([CSDispatchBase new]);
        CSDispatchSub *sub = CS_AUTORELEASE([CSDispatchSub new]);
        /* Warm both classes' dispatch tables first. */
        probe.before = cs_send_control(sub) * 10 + [sub backendValue];
        /* Control: the plain runtime call, no refresh. */
        IMP control_original = method_setImplementation(
            class_getInstanceMethod([CSDispatchBase class], g_control_selector), (IMP)cs_replacement_value);
        probe.control_base = cs_send_control(base);
        probe.control_sub = cs_send_control(sub);
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
        cs_backend_replace_implementation([CSDispatchBase class], g_control_selector, control_original);
        probe.restored_sub = [sub backendValue];
    }
    return probe;
}

static IMP g_concurrent_original; /* CS_ATOMIC_*: the replaced method's IMP before the probe */
static int g_concurrent_stop;      /* CS_ATOMIC_* */
static int g_concurrent_ready;     /* CS_ATOMIC_*: messaging threads past their first round */

static id cs_concurrent_passthrough(CS_UNRETAINED id self, SEL _cmd, NSUInteger index) {
    return ((id (*)(id, SEL, NSUInteger))CS_ATOMIC_LOAD(&g_concurrent_original))(self, _cmd, index);
}

static id cs_concurrent_self_passthrough(CS_UNRETAINED id self, SEL _cmd) {
    return ((id (*)(id, SEL))CS_ATOMIC_LOAD(&g_concurrent_original))(self, _cmd);
}

static void *cs_concurrent_messenger(void *array) {
    NSArray *values = CS_OBJECT(array);
    unsigned long calls = 0;
    BOOL announced = NO;
    while (!CS_ATOMIC_LOAD(&g_concurrent_stop)) {
        @autoreleasepool {
            if ([values objectAtIndex:0] != nil) calls++;
            calls += [values count] > 0 ? 1 : 0;
            calls += [[values description] length] > 0 ? 1 : 0;
            calls += [values self] == values ? 1 : 0;
        }
        if (!announced) {
            CS_ATOMIC_FETCH_ADD(&g_concurrent_ready, 1);
            announced = YES;
        }
    }
    return (void *)(uintptr_t)calls;
}

/* Starts up to two threads messaging `values` and returns once every started thread is
 * messaging it; returns how many started. */
static int cs_concurrent_start_messengers(CS_UNRETAINED NSArray *values, pthread_t threads[2]) {
    CS_ATOMIC_STORE(&g_concurrent_stop, 0);
    CS_ATOMIC_STORE(&g_concurrent_ready, 0);
    int started = 0;
    for (; started < 2; started++)
        if (pthread_create(&threads[started], NULL, cs_concurrent_messenger, CS_POINTER(values)) != 0) break;
    while (CS_ATOMIC_LOAD(&g_concurrent_ready) < started) sched_yield();
    return started;
}

/* Stops and joins the `started` messaging threads; returns the calls they made. */
static unsigned long cs_concurrent_stop_messengers(pthread_t threads[2], int started) {
    CS_ATOMIC_STORE(&g_concurrent_stop, 1);
    unsigned long calls = 0;
    for (int t = 0; t < started; t++) {
        void *made = NULL;
        pthread_join(threads[t], &made);
        calls += (unsigned long)(uintptr_t)made;
    }
    return calls;
}


cs_concurrent_replacement_probe cs_test_concurrent_replacement(unsigned replacements, bool root) {
    cs_concurrent_replacement_probe probe = {0};
    SEL sel = @selector(objectAtIndex:);
    @autoreleasepool {
        NSArray *values = [NSArray arrayWithObjects:@"a", @"b", nil];
        Class receiver_class = object_getClass(values);
        Class owner = receiver_class;
        while (owner != Nil && !cs_backend_class_defines(owner, sel)) owner = class_getSuperclass(owner);
        probe.found_owner = owner != Nil;
        if (owner == Nil) return probe;
        if (root) { /* NSObject's -self: every class's table below the root is affected */
            sel = @selector(self);
            owner = objc_getClass("NSObject");
        }
        CS_ATOMIC_STORE(&g_concurrent_original, cs_backend_own_implementation(owner, sel));
        pthread_t threads[2];
        int started = cs_concurrent_start_messengers(values, threads);
        for (unsigned i = 0; i < replacements; i++) {
            IMP hook = root ? (IMP)cs_concurrent_self_passthrough : (IMP)cs_concurrent_passthrough;
            IMP to = i % 2 == 0 && i + 1 < replacements ? hook : CS_ATOMIC_LOAD(&g_concurrent_original);
            cs_backend_replace_implementation(owner, sel, to);
            if (class_getMethodImplementation(receiver_class, sel) != to) probe.stale++;
        }
        probe.calls = cs_concurrent_stop_messengers(threads, started);
    }
    return probe;
}

static int cs_concurrent_added_imp(CS_UNRETAINED id self, SEL _cmd) {
    (void)self;
    (void)_cmd;
    return 42;
}

cs_concurrent_replacement_probe cs_test_concurrent_add(unsigned adds) {
    cs_concurrent_replacement_probe probe = {0};
    @autoreleasepool {
        NSArray *values = [NSArray arrayWithObjects:@"a", @"b", nil];
        Class receiver_class = object_getClass(values);
        Class root = objc_getClass("NSObject");
        probe.found_owner = root != Nil;
        if (root == Nil) return probe;
        /* The selectors are registered, and the tables rebuilt to hold them, while this is the
         * only thread: GCC libobjc sizes a table for the selectors registered when it is built,
         * and an add cannot go in place past that size. */
        SEL *selectors = (SEL *)calloc(adds ? adds : 1, sizeof(SEL));
        if (selectors == NULL) return probe;
        for (unsigned i = 0; i < adds; i++) {
            char name[64];
            snprintf(name, sizeof name, "cs_test_concurrent_add_%u_%u", (unsigned)getpid(), i);
            selectors[i] = sel_registerName(name);
        }
#if !defined(__APPLE__)
        void (*rebuild)(Class) = (void (*)(Class))dlsym(RTLD_DEFAULT, "__objc_update_dispatch_table_for_class");
        if (rebuild) rebuild(root);
#endif
        pthread_t threads[2];
        int started = cs_concurrent_start_messengers(values, threads);
        for (unsigned i = 0; i < adds; i++) {
            SEL sel = selectors[i];
            if (!cs_backend_add_method(root, sel, (IMP)cs_concurrent_added_imp, "i@:") ||
                class_getMethodImplementation(receiver_class, sel) != (IMP)cs_concurrent_added_imp ||
                ((int (*)(id, SEL))class_getMethodImplementation(receiver_class, sel))(values, sel) != 42 ||
                ![values respondsToSelector:sel])
                probe.stale++;
        }
        probe.calls = cs_concurrent_stop_messengers(threads, started);
        free(selectors);
    }
    return probe;
}

#if !defined(__APPLE__)
/* Registers a fresh selector (unique in this process) and returns it. */
static SEL cs_fresh_selector(const char *prefix) {
    static unsigned counter;
    char name[96];
    snprintf(name, sizeof name, "%s_%u_%u", prefix, (unsigned)getpid(), CS_ATOMIC_FETCH_ADD(&counter, 1u));
    return sel_registerName(name);
}

cs_past_tables_probe cs_test_concurrent_add_past_tables(unsigned adds) {
    cs_past_tables_probe probe = {{0}, 0, false};
    @autoreleasepool {
        NSArray *values = [NSArray arrayWithObjects:@"a", @"b", nil];
        Class receiver_class = object_getClass(values);
        Class root = objc_getClass("NSObject");
        probe.run.found_owner = root != Nil;
        if (root == Nil || adds == 0) return probe;
        (void)[values count]; /* the array's and NSObject's tables installed */
        probe.grows_tables = cs_backend_dispatch_write_status().grows_tables;
        for (unsigned i = 0; i < 1u << 20 && cs_backend_dispatch_table_holds(root, cs_fresh_selector("csPastFiller")); i++) {
        }
        pthread_t threads[2];
        int started = cs_concurrent_start_messengers(values, threads);
        for (unsigned i = 0; i < adds; i++) {
            /* Registered now, one per add: with class_addMethod, each rebuild sizes the tables
             * for the selectors registered so far, and every 32nd add has to rebuild again. */
            SEL sel = cs_fresh_selector("csPastAdd");
            if (!cs_backend_dispatch_table_holds(root, sel)) probe.past_capacity++;
            if (!cs_backend_add_method(root, sel, (IMP)cs_concurrent_added_imp, "i@:") ||
                class_getMethodImplementation(receiver_class, sel) != (IMP)cs_concurrent_added_imp ||
                ((int (*)(id, SEL))class_getMethodImplementation(receiver_class, sel))(values, sel) != 42 ||
                ![values respondsToSelector:sel])
                probe.run.stale++;
        }
        probe.run.calls = cs_concurrent_stop_messengers(threads, started);
    }
    return probe;
}

@interface CSPastTableBase : NSObject
- (int)pastTableInherited;
@end
@implementation CSPastTableBase
- (int)pastTableInherited {
    return 1;
}
@end

@interface CSPastTableSub : CSPastTableBase
@end
@implementation CSPastTableSub
@end

/* GCC libobjc's struct objc_method_list of one method (objc-private/module-abi-8.h). */
typedef struct cs_one_method_list {
    struct cs_one_method_list *next;
    int count;
    struct {
        SEL name;
        const char *types;
        IMP imp;
    } method;
} cs_one_method_list;

cs_past_table_probe cs_test_replace_past_table(void) {
    cs_past_table_probe probe = {false, false, 0, 0};
    @autoreleasepool {
        CSPastTableBase *base = CS_AUTORELEASE([CSPastTableBase new]);
        CSPastTableSub *sub = CS_AUTORELEASE([CSPastTableSub new]);
        (void)[base pastTableInherited];
        (void)[sub pastTableInherited]; /* both tables installed; Sub's is a lazy copy of Base's */
        Class owner = [CSPastTableBase class];
        SEL sel = cs_fresh_selector("csPastTable");
        for (unsigned i = 0; i < 1u << 20 && cs_backend_dispatch_table_holds(owner, sel); i++)
            sel = cs_fresh_selector("csPastTable");
        probe.fixture_holds = !cs_backend_dispatch_table_holds(owner, sel);
        /* The method list, published without a table update. Never freed (the class keeps it). */
        cs_one_method_list *list = (cs_one_method_list *)calloc(1, sizeof *list);
        SEL (*register_typed)(const char *, const char *) =
            (SEL(*)(const char *, const char *))dlsym(RTLD_DEFAULT, "sel_registerTypedName");
        if (list == NULL || register_typed == NULL) return probe;
        list->count = 1;
        list->method.name = register_typed(sel_getName(sel), "i@:");
        list->method.types = "i@:";
        list->method.imp = (IMP)cs_value_one;
        void **methods = (void **)((char *)CS_POINTER(owner) + 7 * sizeof(void *)); /* struct objc_class.methods */
        list->next = (cs_one_method_list *)*methods;
        *methods = list;
        IMP previous = cs_backend_replace_implementation(owner, sel, (IMP)cs_replacement_value);
        probe.previous_is_original = previous == (IMP)cs_value_one;
        probe.owner_answer = ((int (*)(id, SEL))class_getMethodImplementation(owner, sel))(base, sel);
        /* The subclass's table was grown with the owner's and must still dispatch what it did. */
        probe.sub_answer = [sub pastTableInherited];
    }
    return probe;
}

const char *cs_test_dispatch_write_fallback(void) {
    @autoreleasepool {
        /* Installs NSObject's table and NSArray's, a lazy copy of it, as any program using
         * Foundation has before it starts the guards (the self-check needs both). */
        (void)[[NSArray arrayWithObjects:@"a", nil] count];
    }
    return cs_backend_dispatch_write_status().fallback;
}

bool cs_test_add_method_reaches_subclass(void) {
    bool reaches = false;
    @autoreleasepool {
        CSPastTableSub *sub = CS_AUTORELEASE([CSPastTableSub new]);
        (void)[sub pastTableInherited]; /* tables installed */
        SEL sel = cs_fresh_selector("csAddReaches");
        reaches = cs_backend_add_method([CSPastTableBase class], sel, (IMP)cs_replacement_value, "i@:") &&
                  ((int (*)(id, SEL))class_getMethodImplementation([CSPastTableSub class], sel))(sub, sel) == 2;
    }
    return reaches;
}
#endif

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
    CS_UNRETAINED NSArray *shared_objects; /* owned by cs_test_sidetable_stress's pool */
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
                cs_sidetable_set(CS_POINTER(own), &kKeyA, CS_POINTER(value));
                cs_sidetable_set(CS_POINTER(own), &kKeyB, CS_POINTER(value));
                if (cs_sidetable_get(CS_POINTER(own), &kKeyA) != CS_POINTER(value)) worker->failures++;
                cs_sidetable_set(CS_POINTER(own), &kKeyA, NULL);
                if (cs_sidetable_get(CS_POINTER(own), &kKeyA) != NULL) worker->failures++;
                if (cs_sidetable_remove_all(CS_POINTER(own)) != 1) worker->failures++;
                CS_RELEASE(own);
                /* Shared objects: racing writers, only consistency matters. */
                id shared = [worker->shared_objects objectAtIndex:(i + worker->thread_index) % [worker->shared_objects count]];
                cs_sidetable_set(CS_POINTER(shared), &kKeyA, CS_POINTER(value));
                id seen = CS_OBJECT(cs_sidetable_get(CS_POINTER(shared), &kKeyA));
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
        for (unsigned i = 0; i < 16; i++) [shared addObject:CS_AUTORELEASE([[NSObject alloc] init])];
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
        for (id object in shared) removed += cs_sidetable_remove_all(CS_POINTER(object));
        if (removed != 16) failures++;
        if (cs_sidetable_count() != before) failures++;
    }
    return failures;
}

#pragma mark - Install / uninstall cycles

#import "../../Sources/_CrashShieldRuntime/Engine/CSEngine.h"

#define CS_MAX_RECORDED_OWNERS 4096

typedef struct {
    Class owner;
    SEL sel;
    IMP imp;
} cs_owner_imp;

/* Every (owner, selector) the registry's hook tables would touch, with the owner's own IMP now. */
static size_t cs_snapshot_owner_imps(cs_owner_imp *out, size_t capacity) {
    size_t n = 0;
    for (size_t g = 0; g < CSGuardRegistryCount; g++) {
        CSGuard *guard = CSGuardRegistry[g];
        for (size_t h = 0; h < guard->hook_count; h++) {
            const CSHookSpec *spec = &guard->hooks[h];
            Class root = objc_lookUpClass(spec->root_class);
            if (root == Nil) continue;
            SEL sel = sel_registerName(spec->selector);
            Class owners[CS_SLOT_COUNT];
            size_t found = cs_backend_find_owners(root, sel, spec->class_side, owners, CS_SLOT_COUNT);
            for (size_t i = 0; i < found && i < CS_SLOT_COUNT && n < capacity; i++)
                out[n++] = (cs_owner_imp){owners[i], sel, cs_backend_own_implementation(owners[i], sel)};
        }
    }
    return n;
}

static bool cs_is_slot_function(IMP imp) {
    for (size_t g = 0; g < CSGuardRegistryCount; g++)
        for (size_t h = 0; h < CSGuardRegistry[g]->hook_count; h++)
            for (unsigned s = 0; s < CS_SLOT_COUNT; s++)
                if (CSGuardRegistry[g]->hooks[h].slots->replacement[s] == imp) return true;
    return false;
}

cs_install_cycle_result cs_test_install_cycles(unsigned cycles) {
    cs_install_cycle_result result = {0};
    static cs_owner_imp before[CS_MAX_RECORDED_OWNERS], after[CS_MAX_RECORDED_OWNERS];
    cs_guards_uninstall();
    size_t n = cs_snapshot_owner_imps(before, CS_MAX_RECORDED_OWNERS);
    result.owners = n;
    for (unsigned c = 0; c < cycles; c++) {
        cs_guards_start(NULL);
        /* Create objects of every kind so that classes GNUstep initialises lazily (and which copy
         * methods from hooked classes at +initialize) come into being while hooked. */
        @autoreleasepool {
            NSMutableArray *array = [NSMutableArray arrayWithObjects:@"a", @"b", nil];
            NSMutableDictionary *dictionary = [NSMutableDictionary dictionaryWithObject:@"v" forKey:@"k"];
            NSMutableString *string = [NSMutableString stringWithString:@"abc"];
            (void)[array objectAtIndex:0];
            (void)[dictionary objectForKey:@"k"];
            (void)[string characterAtIndex:0];
        }
        /* While installed: a slot's original is never another slot (that would chain a class to
         * another class's original). */
        for (size_t g = 0; g < CSGuardRegistryCount; g++)
            for (size_t h = 0; h < CSGuardRegistry[g]->hook_count; h++) {
                const CSHookSlots *slots = CSGuardRegistry[g]->hooks[h].slots;
                for (unsigned s = 0; s < slots->used; s++)
                    if (cs_is_slot_function(slots->original[s])) result.slot_chained_to_slot++;
            }
        cs_guards_uninstall();
        /* Compare as sets: the runtime's class list may be reordered by classes created meanwhile.
         * A class that gained the method while hooked must hold an original IMP, never a slot. */
        size_t m = cs_snapshot_owner_imps(after, CS_MAX_RECORDED_OWNERS);
        for (size_t i = 0; i < m; i++) {
            bool known = false, same = false;
            for (size_t j = 0; j < n && !known; j++) {
                if (before[j].owner != after[i].owner || before[j].sel != after[i].sel) continue;
                known = true;
                same = before[j].imp == after[i].imp;
            }
            if (known ? !same : cs_is_slot_function(after[i].imp)) result.changed_after_uninstall++;
        }
    }
    return result;
}

#pragma mark - Guard code ranges (fail-safe)

static uintptr_t cs_method_address(const char *class_name, const char *selector_name) {
    Class cls = objc_lookUpClass(class_name);
    SEL sel = sel_registerName(selector_name);
    /* The class or the nearest superclass that defines the method: asking for a method nobody
     * defines would give a forwarding IMP. */
    while (cls != Nil && !cs_backend_class_defines(cls, sel)) cls = class_getSuperclass(cls);
    return cls == Nil ? 0 : (uintptr_t)class_getMethodImplementation(cls, sel);
}

size_t cs_test_guard_code_probes(cs_guard_code_probe *out, size_t capacity) {
    size_t n = 0;
#define CS_PROBE(guard_name, label, address_expr)                                                  \
    if (n < capacity) out[n++] = (cs_guard_code_probe){guard_name, label, (address_expr)}
    @autoreleasepool {
        NSArray *array = [NSArray arrayWithObjects:@"a", @"b", nil];
        NSString *string = [NSString stringWithFormat:@"%d", 12345];
        CS_PROBE("container", "-objectAtIndex: of an array's class",
                 cs_method_address(class_getName(object_getClass(array)), "objectAtIndex:"));
        CS_PROBE("string", "-characterAtIndex: of a string's class",
                 cs_method_address(class_getName(object_getClass(string)), "characterAtIndex:"));
        CS_PROBE("selector", "-[CSUnrecognizedSelectorCanary cs_knownValue]",
                 cs_method_address("CSUnrecognizedSelectorCanary", "cs_knownValue"));
        /* The nsnull guard changes no NSNull method (it answers through the forward hook): its
         * canary function stands for its code. */
        CS_PROBE("nsnull", "the nsnull guard's canary", (uintptr_t)CSGuardNSNull.canary);
        CS_PROBE("kvc", "-[NSObject valueForUndefinedKey:]",
                 cs_method_address("NSObject", "valueForUndefinedKey:"));
        CS_PROBE("kvo", "-[CSKVOEntry observeValueForKeyPath:ofObject:change:context:]",
                 cs_method_address("CSKVOEntry", "observeValueForKeyPath:ofObject:change:context:"));
        CS_PROBE("kvo", "-[NSObject addObserver:forKeyPath:options:context:]",
                 cs_method_address("NSObject", "addObserver:forKeyPath:options:context:"));
        CS_PROBE("notification", "-[CSNotificationToken dealloc]",
                 cs_method_address("CSNotificationToken", "dealloc"));
        CS_PROBE("timer", "-[CSTimerTarget cs_fire:]", cs_method_address("CSTimerTarget", "cs_fire:"));
        CS_PROBE("zombie", "-[CSZombieCanaryVictim cs_value]",
                 cs_method_address("CSZombieCanaryVictim", "cs_value"));
        cs_lifecycle_configure_main_thread_fixture();
        CS_PROBE("mainthread", "-[CSLMainThreadOnly cs_touch:] once configured",
                 cs_method_address("CSLMainThreadOnly", "cs_touch:"));
        CS_PROBE(NULL, "cs_test_guard_code_probes (a scenario target function)",
                 (uintptr_t)&cs_test_guard_code_probes);
        CS_PROBE(NULL, "cs_guards_start (the engine)", (uintptr_t)&cs_guards_start);
    }
#undef CS_PROBE
    return n;
}

#pragma mark - KVO registrations the guard did not make

/* One observed object and one observer counting notifications per context (contexts are small
 * integers 1...3). Used by KVOGuardTests to switch the policy between calls. */
@interface CSTestKVOModel : NSObject {
    long level;
}
- (long)level;
- (void)setLevel:(long)value;
@end
@implementation CSTestKVOModel
- (long)level {
    return level;
}
- (void)setLevel:(long)value {
    level = value;
}
@end

@interface CSTestKVOObserver : NSObject {
  @public
    int hits[4];
}
@end
@implementation CSTestKVOObserver
- (void)observeValueForKeyPath:(NSString *)keyPath
                      ofObject:(id)object
                        change:(NSDictionary *)change
                       context:(void *)context {
    (void)keyPath;
    (void)object;
    (void)change;
    uintptr_t slot = (uintptr_t)context;
    hits[slot < 4 ? slot : 0]++;
}
@end

/* In C memory: each field holds a +1 taken by hand, given up by cs_test_kvo_pair_free. */
struct cs_test_kvo_pair {
    CS_UNRETAINED CSTestKVOModel *model;
    CS_UNRETAINED CSTestKVOObserver *observer;
};

cs_test_kvo_pair *cs_test_kvo_pair_new(void) {
    cs_test_kvo_pair *pair = calloc(1, sizeof *pair);
    pair->model = CS_SCENARIO_OWNED([[CSTestKVOModel alloc] init]);
    pair->observer = CS_SCENARIO_OWNED([[CSTestKVOObserver alloc] init]);
    return pair;
}

void cs_test_kvo_pair_add(cs_test_kvo_pair *pair, unsigned context) {
    @autoreleasepool {
        [pair->model addObserver:pair->observer forKeyPath:@"level" options:NSKeyValueObservingOptionNew
                         context:(void *)(uintptr_t)context];
    }
}

void cs_test_kvo_pair_remove(cs_test_kvo_pair *pair) {
    @autoreleasepool {
        [pair->model removeObserver:pair->observer forKeyPath:@"level"];
    }
}

void cs_test_kvo_pair_remove_context(cs_test_kvo_pair *pair, unsigned context) {
    @autoreleasepool {
        [pair->model removeObserver:pair->observer forKeyPath:@"level" context:(void *)(uintptr_t)context];
    }
}

/* Changes the observed value once; returns the notifications per context as 100*c1 + 10*c2 + c3
 * that this change produced. */
unsigned cs_test_kvo_pair_change(cs_test_kvo_pair *pair) {
    int before[4];
    memcpy(before, pair->observer->hits, sizeof before);
    @autoreleasepool {
        [pair->model setLevel:[pair->model level] + 1];
    }
    int *after = pair->observer->hits;
    return (unsigned)(100 * (after[1] - before[1]) + 10 * (after[2] - before[2]) + (after[3] - before[3]));
}

/* A one-shot observer: removes itself from `model` in its first notification (by context 1 when
 * `by_context`). */
@interface CSTestKVOOneShotObserver : NSObject {
  @public
    int hits;
    BOOL by_context;
    CS_UNRETAINED CSTestKVOModel *model;
}
@end
@implementation CSTestKVOOneShotObserver
- (void)observeValueForKeyPath:(NSString *)keyPath
                      ofObject:(id)object
                        change:(NSDictionary *)change
                       context:(void *)context {
    (void)object;
    (void)change;
    if (hits++ > 0) return;
    if (by_context) [model removeObserver:self forKeyPath:keyPath context:context];
    else [model removeObserver:self forKeyPath:keyPath];
}
@end

unsigned cs_test_kvo_one_shot(bool initial, bool by_context) {
    unsigned hits;
    @autoreleasepool {
        CSTestKVOModel *model = CS_AUTORELEASE([[CSTestKVOModel alloc] init]);
        CSTestKVOOneShotObserver *observer = CS_AUTORELEASE([[CSTestKVOOneShotObserver alloc] init]);
        observer->model = model;
        observer->by_context = by_context;
        NSKeyValueObservingOptions options = NSKeyValueObservingOptionNew;
        if (initial) options |= NSKeyValueObservingOptionInitial;
        [model addObserver:observer forKeyPath:@"level" options:options context:(void *)(uintptr_t)1];
        [model setLevel:1];
        [model setLevel:2];
        hits = (unsigned)observer->hits;
    }
    return hits;
}

/* The one-shot observer's registration replaces one of the same pair (context 2, then context 1
 * with the initial option; GNUstep replaces): it removes itself in the initial notification of the
 * replacing add. Returns the notifications it received. */
unsigned cs_test_kvo_one_shot_replacing(void) {
    unsigned hits;
    @autoreleasepool {
        CSTestKVOModel *model = CS_AUTORELEASE([[CSTestKVOModel alloc] init]);
        CSTestKVOOneShotObserver *observer = CS_AUTORELEASE([[CSTestKVOOneShotObserver alloc] init]);
        observer->model = model;
        [model addObserver:observer forKeyPath:@"level" options:NSKeyValueObservingOptionNew context:(void *)(uintptr_t)2];
        [model addObserver:observer
                forKeyPath:@"level"
                   options:NSKeyValueObservingOptionNew | NSKeyValueObservingOptionInitial
                   context:(void *)(uintptr_t)1];
        [model setLevel:1];
        hits = (unsigned)observer->hits;
    }
    return hits;
}

int cs_test_kvo_across_stop(bool by_context) {
    int before, after_removal;
    @autoreleasepool {
        CSTestKVOModel *model = CS_AUTORELEASE([[CSTestKVOModel alloc] init]);
        CS_UNRETAINED CSTestKVOObserver *observer = CS_SCENARIO_OWNED([[CSTestKVOObserver alloc] init]);
        [model addObserver:observer forKeyPath:@"level" options:NSKeyValueObservingOptionNew context:(void *)(uintptr_t)1];
        [model setLevel:1];
        cs_guards_uninstall();
        [model setLevel:2];
        before = observer->hits[1];
        if (by_context)
            [model removeObserver:observer forKeyPath:@"level" context:(void *)(uintptr_t)1];
        else
            [model removeObserver:observer forKeyPath:@"level"];
        [model setLevel:3];
        after_removal = observer->hits[1] - before;
        CS_SCENARIO_DISOWN(observer); /* a registration left would message freed memory below */
        NSMutableArray *fillers = [NSMutableArray array];
        for (int i = 0; i < 64; i++) [fillers addObject:CS_AUTORELEASE([[NSObject alloc] init])];
        [model setLevel:4];
    }
    return before == 2 ? after_removal : -1;
}

/* Releases the observer first, then the model (the registrations must be gone by then). */
void cs_test_kvo_pair_free(cs_test_kvo_pair *pair) {
    CS_SCENARIO_DISOWN(pair->observer);
    CS_SCENARIO_DISOWN(pair->model);
    free(pair);
}
