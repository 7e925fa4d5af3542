/*
 * CSDeallocHook.m — one hook on -[NSObject dealloc] shared by the lifecycle guards, and the few
 * runtime-specific helpers they need (main thread, main queue, plain message send).
 *
 * Invariants:
 * - The hook is installed on NSObject alone (root only): it runs at the end of every -dealloc
 *   chain that reaches NSObject, after the subclass bodies.
 * - It allocates nothing and autoreleases nothing. Callbacks follow the same rule; the side table
 *   releases its values after dropping its lock (a release can re-enter the hook).
 * - Nested deallocs that a callback causes (releasing a token, a proxy) run the callbacks too,
 *   up to kMaxDepth on one thread; deeper ones go straight to the original -dealloc, so a
 *   misbehaving callback cannot recurse without bound.
 * - Observers and the keeper are read with atomic loads: a dealloc racing with registration sees
 *   either the old or the new list, never a torn entry.
 */
#import "CSBackend.h"
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>
#if !defined(__APPLE__)
#include <sys/syscall.h>
#endif

void *cs_sidetable_get(void *object, const void *key);
size_t cs_sidetable_remove_all(void *object);

#define CS_DEALLOC_OBSERVERS 8
enum { kMaxDepth = 8 };

static cs_dealloc_observer g_observers[CS_DEALLOC_OBSERVERS]; /* CS_ATOMIC_* access */
static unsigned g_observer_count;                             /* CS_ATOMIC_*; entries in use */
static cs_dealloc_keeper g_keeper;                            /* CS_ATOMIC_* access */
static IMP g_original;                                        /* CS_ATOMIC_* access */
static int g_acquired;                                        /* under g_lock */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread unsigned t_depth;

/* `self` is mid-dealloc: never retained (CS_UNRETAINED), in either mode. */
static void cs_dealloc_hook(CS_UNRETAINED id self, SEL _cmd) {
    IMP original = CS_ATOMIC_LOAD(&g_original);
    if (CS_LIKELY(t_depth < kMaxDepth)) {
        t_depth++;
        if (CS_ATOMIC_LOAD_RELAXED(&g_observer_count) != 0) {
            for (unsigned i = 0; i < CS_DEALLOC_OBSERVERS; i++) {
                cs_dealloc_observer observer = CS_ATOMIC_LOAD(&g_observers[i]);
                if (observer) observer(self);
            }
        }
        cs_sidetable_remove_all(CS_POINTER(self));
        cs_dealloc_keeper keeper = CS_ATOMIC_LOAD(&g_keeper);
        BOOL kept = keeper ? keeper(self) : NO;
        t_depth--;
        if (kept) return;
    }
    ((void (*)(CS_UNRETAINED id, SEL))original)(self, _cmd);
}

BOOL cs_dealloc_add_observer(cs_dealloc_observer observer) {
    BOOL ok = NO;
    pthread_mutex_lock(&g_lock);
    for (unsigned i = 0; i < CS_DEALLOC_OBSERVERS && !ok; i++)
        if (CS_ATOMIC_LOAD(&g_observers[i]) == observer) ok = YES;
    for (unsigned i = 0; i < CS_DEALLOC_OBSERVERS && !ok; i++)
        if (CS_ATOMIC_LOAD(&g_observers[i]) == NULL) {
            CS_ATOMIC_STORE(&g_observers[i], observer);
            CS_ATOMIC_FETCH_ADD(&g_observer_count, 1u);
            ok = YES;
        }
    pthread_mutex_unlock(&g_lock);
    return ok;
}

void cs_dealloc_remove_observer(cs_dealloc_observer observer) {
    pthread_mutex_lock(&g_lock);
    for (unsigned i = 0; i < CS_DEALLOC_OBSERVERS; i++)
        if (CS_ATOMIC_LOAD(&g_observers[i]) == observer) {
            CS_ATOMIC_STORE(&g_observers[i], (cs_dealloc_observer)NULL);
            CS_ATOMIC_FETCH_SUB(&g_observer_count, 1u);
        }
    pthread_mutex_unlock(&g_lock);
}

void cs_dealloc_set_keeper(cs_dealloc_keeper keeper) {
    CS_ATOMIC_STORE(&g_keeper, keeper);
}

BOOL cs_dealloc_hook_acquire(void) {
    BOOL ok = YES;
    pthread_mutex_lock(&g_lock);
    if (g_acquired == 0) {
        Class root = CS_CLASS(NSObject);
        SEL sel = cs_backend_selector("dealloc");
        IMP current = root ? class_getMethodImplementation(root, sel) : NULL;
        /* The original must be readable before any object can reach the hook. */
        CS_ATOMIC_STORE(&g_original, current);
        IMP previous = root ? cs_backend_replace_implementation(root, sel, (IMP)cs_dealloc_hook) : NULL;
        if (previous == NULL) ok = NO;
        else if (previous != current) CS_ATOMIC_STORE(&g_original, previous);
    }
    if (ok) g_acquired++;
    pthread_mutex_unlock(&g_lock);
    return ok;
}

void cs_dealloc_hook_release(void) {
    pthread_mutex_lock(&g_lock);
    if (g_acquired > 0 && --g_acquired == 0) {
        Class root = CS_CLASS(NSObject);
        cs_backend_replace_implementation(root, cs_backend_selector("dealloc"), CS_ATOMIC_LOAD(&g_original));
    }
    pthread_mutex_unlock(&g_lock);
}

IMP cs_dealloc_original(void) {
    IMP original = CS_ATOMIC_LOAD(&g_original);
    if (original == NULL) {
        Class root = CS_CLASS(NSObject);
        original = class_getMethodImplementation(root, cs_backend_selector("dealloc"));
    }
    return original;
}

#pragma mark - Threads and the main queue

#if defined(__APPLE__)
#include <dispatch/dispatch.h>

/* NOT COMPILED HERE. libdispatch is part of libSystem on Apple: its public API, called directly
 * (the _f forms: this target writes no block literals). The main queue is tagged once with a
 * queue-specific key (thread-safe from any thread); work it runs reads the key back on whatever
 * thread drains it. */
static char kMainQueueKey;
static dispatch_once_t g_main_queue_tagged;
static void cs_tag_main_queue(void *unused) {
    (void)unused;
    dispatch_queue_set_specific(dispatch_get_main_queue(), &kMainQueueKey, &kMainQueueKey, NULL);
}

/* True on the main thread, and for work the main queue runs on any thread. */
BOOL cs_backend_is_main_thread(void) {
    if (pthread_main_np()) return YES;
    dispatch_once_f(&g_main_queue_tagged, NULL, cs_tag_main_queue);
    return dispatch_get_specific(&kMainQueueKey) == &kMainQueueKey;
}
#else
typedef void (*cs_set_specific_fn)(void *queue, const void *key, void *context, void (*destructor)(void *));
typedef void *(*cs_get_specific_fn)(const void *key);
static char kMainQueueKey;
static cs_get_specific_fn g_get_specific;
static pthread_once_t g_main_queue_once = PTHREAD_ONCE_INIT;

/* Tags libdispatch's main queue, so work it runs is recognised on any thread: after
 * dispatch_main() (Swift's async main on Linux) the main thread exits and worker threads drain
 * the main queue, one item at a time. libdispatch is optional here (a plain Objective-C program
 * has none), so it is looked up, never linked. */
static void cs_tag_main_queue(void) {
    cs_set_specific_fn set_specific = (cs_set_specific_fn)dlsym(RTLD_DEFAULT, "dispatch_queue_set_specific");
    void *main_queue = dlsym(RTLD_DEFAULT, "_dispatch_main_q");
    cs_get_specific_fn get_specific = (cs_get_specific_fn)dlsym(RTLD_DEFAULT, "dispatch_get_specific");
    if (set_specific && main_queue && get_specific) {
        set_specific(main_queue, &kMainQueueKey, &kMainQueueKey, NULL);
        g_get_specific = get_specific;
    }
}

/* True on the main thread, and for work the main queue runs on any thread. */
BOOL cs_backend_is_main_thread(void) {
    static __thread int cached; /* 0 unknown, 1 main, 2 other */
    if (CS_UNLIKELY(cached == 0)) {
        /* GNUstep's +[NSThread isMainThread] means "the thread that first used NSThread", which in
         * a Swift process may be a worker; the kernel's answer is exact. */
        cached = (pid_t)syscall(SYS_gettid) == getpid() ? 1 : 2;
    }
    if (cached == 1) return YES;
    pthread_once(&g_main_queue_once, cs_tag_main_queue);
    return g_get_specific != NULL && g_get_specific(&kMainQueueKey) == &kMainQueueKey;
}
#endif

/* Runs a C function on the main run loop when libdispatch is not in the process. */
@interface CSMainCall : NSObject {
  @public
    void (*fn)(void *);
    void *context;
}
@end
@implementation CSMainCall
- (void)cs_run {
    fn(context);
}
@end

BOOL cs_backend_main_async(void (*fn)(void *), void *context) {
#if defined(__APPLE__)
    dispatch_async_f(dispatch_get_main_queue(), context, fn); /* NOT COMPILED HERE */
    return YES;
#else
    typedef void (*cs_dispatch_async_f)(void *queue, void *context, void (*work)(void *));
    static cs_dispatch_async_f async_f;
    static void *main_queue;
    static int looked_up;
    if (!CS_ATOMIC_LOAD(&looked_up)) {
        async_f = (cs_dispatch_async_f)dlsym(RTLD_DEFAULT, "dispatch_async_f");
        main_queue = dlsym(RTLD_DEFAULT, "_dispatch_main_q");
        CS_ATOMIC_STORE(&looked_up, 1);
    }
    if (async_f && main_queue) {
        async_f(main_queue, context, fn);
        return YES;
    }
    CSMainCall *call = [[CS_CLASS(CSMainCall) alloc] init];
    call->fn = fn;
    call->context = context;
    @autoreleasepool {
        /* GNUstep performs a "main thread" call at once, not later, when it is made on the main
         * thread before that thread has a run loop (an Objective-C program early in main(), where
         * the README starts the guards). Creating the run loop first makes it queue the call like
         * any other; the loop would be created by the first run anyway. */
        if (cs_backend_is_main_thread() && [CS_CLASS(NSThread) isMainThread]) (void)[CS_CLASS(NSRunLoop) currentRunLoop];
        [call performSelectorOnMainThread:@selector(cs_run) withObject:nil waitUntilDone:NO];
    }
    CS_RELEASE(call);
    return YES;
#endif
}

void cs_backend_send1(id target, SEL sel, id argument) {
#if defined(__APPLE__)
    ((void (*)(id, SEL, id))objc_msgSend)(target, sel, argument);
#else
    IMP imp = objc_msg_lookup(target, sel);
    ((void (*)(id, SEL, id))imp)(target, sel, argument);
#endif
}
