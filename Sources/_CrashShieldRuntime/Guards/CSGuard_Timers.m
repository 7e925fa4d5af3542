/*
 * CSGuard_Timers.m — SPEC §2.8: a repeating NSTimer whose target's class the app names holds
 * that target weakly.
 *
 * Scope: only targets that are instances of a configured class (or a subclass) are held weakly
 * (cs_timer_configure_weak_targets; default on Apple UIViewController, UIView, NSViewController,
 * NSView, elsewhere none): objects whose lifetime a timer must not extend. Every other timer keeps
 * NSTimer's documented strong reference, so a timer that is its target's only owner (a poller
 * that invalidates itself after N ticks) works exactly as unguarded. Names are public class names
 * resolved with objc_lookUpClass at install (and at once when configured later); missing classes
 * are skipped.
 *
 * For a weak target the creation hooks hand the timer a CSTimerTarget (retained by the timer, as
 * any target) that holds the real target unretained. GCC libobjc has no weak references, so the
 * pointer is zeroed from the dealloc hook: a CSTimerTargetToken stored in the side table under
 * (target, proxy) is released when the target deallocates, and its -dealloc clears the proxy's
 * pointer. The next fire then invalidates the timer and records an incident.
 *
 * Contracts:
 * - The target's selector is sent with the real timer (so -userInfo works) through normal
 *   dispatch, forwarding included: never decided with respondsToSelector:.
 * - A target outside NSObject's hierarchy (an NSProxy, typically a weak proxy) is passed through
 *   untouched: its -dealloc never reaches the hook, and a weak proxy is the legal fix already.
 * - Every constructor with a target: the two class methods and -initWithFireDate:interval:target:
 *   selector:userInfo:repeats: (GNUstep's class methods call it; a target that already is a
 *   proxy passes through). Invocation timers are untouched (their target is the invocation).
 * - One-shot timers, nil targets and targets of classes not named are untouched.
 * - Report-only keeps the original behaviour, a strong target, and records one incident per
 *   weak-target timer the first time it fires while it is the only owner of its target (retain
 *   count 1: the pattern that keeps a dead screen alive). The policy a timer was created under
 *   stays with it.
 * - The canary's own target class is always held weakly (the canary checks the mechanism, not
 *   the app's list).
 * - Limitation: weakness is exact when the timer fires on the thread that releases the target
 *   (the usual run-loop case). A target released on another thread while its timer is firing
 *   races exactly as a plain unretained pointer would.
 */
#import "../Engine/CSEngine.h"
#import "../Backend/CSBackend.h"
#include <pthread.h>
#include <string.h>

CS_GUARD_CODE_SECTION(timer) /* every function below: see CS_GUARD_METHOD */

extern CSGuard CSGuardTimers;
#define G (&CSGuardTimers)

@interface CSTimerTarget : NSObject {
  @public
    void *target; /* an unretained id; CS_ATOMIC_* access; nil once the target deallocated */
    SEL selector;
    BOOL retains_target; /* strong, as unguarded: report-only timers, and all of them after uninstall */
    BOOL report_only;    /* created under report-only: watch for the timer being the last owner */
    int reported;        /* report-only: the incident was recorded (once per timer); CS_ATOMIC */
}
- (void)cs_fire:(NSTimer *)timer;
@end

@interface CSTimerTargetToken : NSObject {
  @public
    CSTimerTarget *proxy; /* unretained: the proxy removes the token before it goes away */
    CSTimerTargetToken *prev, *next; /* g_tokens, under g_tokens_lock */
}
@end

static pthread_mutex_t g_tokens_lock = PTHREAD_MUTEX_INITIALIZER;
static CSTimerTargetToken *g_tokens;

@implementation CSTimerTargetToken
- (void)dealloc CS_GUARD_METHOD(timer) {
    pthread_mutex_lock(&g_tokens_lock);
    if (prev) prev->next = next;
    else if (g_tokens == self) g_tokens = next;
    if (next) next->prev = prev;
    pthread_mutex_unlock(&g_tokens_lock);
    if (proxy) CS_ATOMIC_STORE(&proxy->target, (void *)NULL);
    CS_SUPER_DEALLOC();
}
@end

@implementation CSTimerTarget
- (void)cs_fire:(NSTimer *)timer CS_GUARD_METHOD(timer) {
    id current = (id)CS_ATOMIC_LOAD(&target);
    if (CS_LIKELY(current != nil)) {
        if (report_only && [current retainCount] == 1 && !__atomic_exchange_n(&reported, 1, __ATOMIC_RELAXED))
            cs_guard_misuse(G, timer, selector, NULL,
                            "repeating timer is the last owner of its target: kept alive (report-only)", 0, 0, 0);
        cs_backend_send1(current, selector, timer);
        return;
    }
    cs_guard_misuse(G, timer, selector, NULL, "repeating timer fired after its target was deallocated: invalidated",
                    0, 0, 0);
    /* Nothing else can happen: the target is gone (report-only records the same). */
    [timer invalidate];
}

- (void)dealloc CS_GUARD_METHOD(timer) {
    /* The timer released us: take the token back so it does not outlive the proxy. */
    id current = (id)__atomic_exchange_n(&target, (void *)NULL, __ATOMIC_ACQ_REL);
    if (current && retains_target) CS_RELEASE(current);
    else if (current) cs_sidetable_set(current, (const void *)self, NULL);
    CS_SUPER_DEALLOC();
}
@end

static Class g_proxy_class;
static Class g_root_class;

/* The weak-target configuration: names as configured (NULL: the platform default) and the
 * classes they resolved to at install or at the last configure while installed. Timer creation is
 * not a hot path: one mutex guards both. */
static pthread_mutex_t g_weak_lock = PTHREAD_MUTEX_INITIALIZER;
static char **g_weak_names;       /* strdup'd; NULL with g_weak_configured == NO: default */
static size_t g_weak_name_count;
static BOOL g_weak_configured;
static Class *g_weak_classes;     /* resolved; CS_UNRETAINED (classes are never freed) */
static size_t g_weak_class_count;
static BOOL g_weak_resolved;      /* g_weak_classes is current: the guard is installed */

#if defined(__APPLE__)
static const char *const kDefaultWeakTargetClasses[] = {"UIViewController", "UIView", "NSViewController", "NSView"};
static const size_t kDefaultWeakTargetCount = 4;
#else
static const char *const *const kDefaultWeakTargetClasses = NULL;
static const size_t kDefaultWeakTargetCount = 0;
#endif

@class CSTimerCanaryTarget;

/* Resolves the configured (or default) names, plus the canary's own class. Caller holds g_weak_lock. */
static void cs_timer_resolve_weak_locked(void) {
    const char *const *names = g_weak_configured ? (const char *const *)g_weak_names : kDefaultWeakTargetClasses;
    size_t count = g_weak_configured ? g_weak_name_count : kDefaultWeakTargetCount;
    Class *classes = calloc(count + 1, sizeof(Class));
    size_t found = 0;
    classes[found++] = objc_lookUpClass("CSTimerCanaryTarget");
    for (size_t i = 0; i < count; i++) {
        Class cls = names[i] ? objc_lookUpClass(names[i]) : Nil;
        if (cls != Nil) classes[found++] = cls;
    }
    free(g_weak_classes);
    g_weak_classes = classes;
    g_weak_class_count = found;
    g_weak_resolved = YES;
}

void cs_timer_configure_weak_targets(const char *const *class_names, size_t count) {
    char **names = NULL;
    if (class_names) {
        names = calloc(count ? count : 1, sizeof(char *));
        for (size_t i = 0; i < count; i++) names[i] = strdup(class_names[i] ? class_names[i] : "");
    }
    pthread_mutex_lock(&g_weak_lock);
    char **old = g_weak_names;
    size_t old_count = g_weak_name_count;
    g_weak_names = names;
    g_weak_name_count = class_names ? count : 0;
    g_weak_configured = class_names != NULL;
    if (g_weak_resolved) cs_timer_resolve_weak_locked();
    pthread_mutex_unlock(&g_weak_lock);
    for (size_t i = 0; i < old_count; i++) free(old[i]);
    free(old);
}

/* YES when `object` is an instance of a weak-target class (or a subclass) below NSObject. */
static BOOL cs_timer_target_is_weak(id object) {
    BOOL below_root = NO, named = NO;
    pthread_mutex_lock(&g_weak_lock);
    for (Class c = object_getClass(object); c != Nil && !(below_root && named); c = class_getSuperclass(c)) {
        if (c == g_root_class) below_root = YES;
        for (size_t i = 0; i < g_weak_class_count && !named; i++)
            if (c == g_weak_classes[i]) named = YES;
    }
    pthread_mutex_unlock(&g_weak_lock);
    return below_root && named;
}

/* Returns the target to hand the original: `target` itself, or a new proxy (autoreleased by the
 * caller's pool: timer creation already autoreleases its result). */
static inline id cs_timer_target_for(id target, SEL selector, BOOL repeats) {
    cs_policy policy = CS_ATOMIC_LOAD_RELAXED(&G->policy);
    if (!repeats || target == nil || policy == CS_POLICY_OFF || object_getClass(target) == g_proxy_class ||
        !cs_timer_target_is_weak(target))
        return target;
    CSTimerTarget *proxy = [[CSTimerTarget alloc] init];
    proxy->selector = selector;
    if (policy == CS_POLICY_REPORT_ONLY) {
        proxy->report_only = YES;
        proxy->retains_target = YES;
        CS_ATOMIC_STORE(&proxy->target, (void *)CS_RETAIN(target));
        return CS_AUTORELEASE(proxy);
    }
    CS_ATOMIC_STORE(&proxy->target, (void *)target);
    CSTimerTargetToken *token = [[CSTimerTargetToken alloc] init];
    token->proxy = proxy;
    pthread_mutex_lock(&g_tokens_lock);
    token->next = g_tokens;
    if (g_tokens) g_tokens->prev = token;
    g_tokens = token;
    pthread_mutex_unlock(&g_tokens_lock);
    cs_sidetable_set(target, (const void *)proxy, token);
    CS_RELEASE(token);
    return CS_AUTORELEASE(proxy);
}

static inline NSTimer *cs_timer_scheduled(IMP original, id self, SEL _cmd, const void *caller, NSTimeInterval ti,
                                          id target, SEL selector, id userInfo, BOOL repeats) {
    (void)caller;
    id actual = cs_timer_target_for(target, selector, repeats);
    SEL fire = actual == target ? selector : @selector(cs_fire:);
    return ((NSTimer * (*)(id, SEL, NSTimeInterval, id, SEL, id, BOOL)) original)(self, _cmd, ti, actual, fire,
                                                                                   userInfo, repeats);
}
CS_DEFINE_HOOK_5(cs_timer_scheduled, NSTimer *, NSTimeInterval, id, SEL, id, BOOL)

static inline NSTimer *cs_timer_make(IMP original, id self, SEL _cmd, const void *caller, NSTimeInterval ti,
                                     id target, SEL selector, id userInfo, BOOL repeats) {
    (void)caller;
    id actual = cs_timer_target_for(target, selector, repeats);
    SEL fire = actual == target ? selector : @selector(cs_fire:);
    return ((NSTimer * (*)(id, SEL, NSTimeInterval, id, SEL, id, BOOL)) original)(self, _cmd, ti, actual, fire,
                                                                                   userInfo, repeats);
}
CS_DEFINE_HOOK_5(cs_timer_make, NSTimer *, NSTimeInterval, id, SEL, id, BOOL)

/* -initWithFireDate:interval:target:selector:userInfo:repeats:, replaced by hand at install (six
 * arguments: beyond the hook slots' arity). */
typedef NSTimer *(*cs_timer_init_fn)(id, SEL, NSDate *, NSTimeInterval, id, SEL, id, BOOL);
static IMP g_original_init;

static NSTimer *cs_timer_init(id self, SEL _cmd, NSDate *date, NSTimeInterval ti, id target, SEL selector,
                              id userInfo, BOOL repeats) {
    id actual = cs_timer_target_for(target, selector, repeats);
    SEL fire = actual == target ? selector : @selector(cs_fire:);
    return ((cs_timer_init_fn)g_original_init)(self, _cmd, date, ti, actual, fire, userInfo, repeats);
}

static const CSHookSpec kTimerHooks[] = {
    CS_CLASS_HOOK("NSTimer", "scheduledTimerWithTimeInterval:target:selector:userInfo:repeats:", cs_timer_scheduled),
    CS_CLASS_HOOK("NSTimer", "timerWithTimeInterval:target:selector:userInfo:repeats:", cs_timer_make),
};

/* Not a weak-target class: a repeating timer must keep it alive (the poller pattern). */
@interface CSTimerCanaryPoller : NSObject {
  @public
    int *deallocs;
}
- (void)cs_tick:(NSTimer *)timer;
@end
@implementation CSTimerCanaryPoller
- (void)cs_tick:(NSTimer *)timer CS_GUARD_METHOD(timer) {
    (void)timer;
}
- (void)dealloc CS_GUARD_METHOD(timer) {
    (*deallocs)++;
    CS_SUPER_DEALLOC();
}
@end

/* The canary's weak-target class (named in the guard's class list): the poller's behaviour, but
 * held weakly. A subclass, so naming it does not name the poller (naming covers subclasses only). */
@interface CSTimerCanaryTarget : CSTimerCanaryPoller
@end
@implementation CSTimerCanaryTarget
@end

/* Misuse: a repeating timer's target released by its owner; with the guard it deallocates at
 * once and the (never scheduled) timer's next fire invalidates it with an incident. Legal: a
 * one-shot timer, and a repeating timer whose target's class is not named, keep (retain) it. */
static const char *cs_timers_canary(void) {
    int deallocs = 0;
    NSTimer *timer = nil;
    @autoreleasepool {
        CSTimerCanaryTarget *target = [[CSTimerCanaryTarget alloc] init];
        target->deallocs = &deallocs;
        timer = CS_RETAIN([NSTimer timerWithTimeInterval:1000 target:target selector:@selector(cs_tick:)
                                                userInfo:nil repeats:YES]);
        CS_RELEASE(target);
    }
    CS_CANARY_MISUSE((deallocs == 1 && ([timer fire], ![timer isValid])),
                     "a repeating timer kept its target alive or fired into a dead target");
    CS_RELEASE(timer);
    deallocs = 0;
    @autoreleasepool {
        CSTimerCanaryTarget *target = [[CSTimerCanaryTarget alloc] init];
        target->deallocs = &deallocs;
        timer = CS_RETAIN([NSTimer timerWithTimeInterval:1000 target:target selector:@selector(cs_tick:)
                                                userInfo:nil repeats:NO]);
        CS_RELEASE(target);
    }
    CS_CANARY_LEGAL(deallocs == 0, "a one-shot timer no longer retains its target");
    [timer invalidate];
    CS_RELEASE(timer);
    deallocs = 0;
    @autoreleasepool {
        CSTimerCanaryPoller *poller = [[CSTimerCanaryPoller alloc] init];
        poller->deallocs = &deallocs;
        timer = CS_RETAIN([NSTimer timerWithTimeInterval:1000 target:poller selector:@selector(cs_tick:)
                                                userInfo:nil repeats:YES]);
        CS_RELEASE(poller);
    }
    CS_CANARY_LEGAL(deallocs == 0, "a repeating timer no longer retains a target of a class not named");
    [timer invalidate];
    CS_RELEASE(timer);
    return NULL;
}

static BOOL g_hook_acquired;

static const char *cs_timers_install(uint32_t *hooked) {
    g_proxy_class = [CSTimerTarget class];
    g_root_class = objc_lookUpClass("NSObject");
    pthread_mutex_lock(&g_weak_lock);
    cs_timer_resolve_weak_locked();
    pthread_mutex_unlock(&g_weak_lock);
    Class timer_class = objc_lookUpClass("NSTimer");
    SEL init = @selector(initWithFireDate:interval:target:selector:userInfo:repeats:);
    if (timer_class && cs_backend_class_defines(timer_class, init)) {
        g_original_init = cs_backend_own_implementation(timer_class, init);
        IMP previous = cs_backend_replace_implementation(timer_class, init, (IMP)cs_timer_init);
        if (previous == NULL) return "-[NSTimer initWithFireDate:...] could not be replaced";
        g_original_init = previous;
        (*hooked)++;
    }
    if (!cs_dealloc_hook_acquire()) return "-[NSObject dealloc] could not be hooked";
    g_hook_acquired = YES;
    return NULL;
}

/* Proxies already handed to timers go back to the unguarded behaviour: they retain their live
 * targets, and the tokens (which only the dealloc hook would release) are taken back. */
static void cs_timers_uninstall(void) {
    for (;;) {
        pthread_mutex_lock(&g_tokens_lock);
        CSTimerTargetToken *token = g_tokens;
        CSTimerTarget *proxy = nil;
        id target = nil;
        if (token) {
            proxy = token->proxy;
            token->proxy = nil;
            g_tokens = token->next;
            if (g_tokens) g_tokens->prev = nil;
            token->next = nil;
            target = proxy ? (id)CS_ATOMIC_LOAD(&proxy->target) : nil;
            if (target) {
                CS_RETAIN(target);
                proxy->retains_target = YES;
            }
        }
        pthread_mutex_unlock(&g_tokens_lock);
        if (token == nil) break;
        if (target) cs_sidetable_set(target, (const void *)proxy, NULL);
    }
    if (g_original_init)
        cs_backend_replace_implementation(objc_lookUpClass("NSTimer"),
                                          @selector(initWithFireDate:interval:target:selector:userInfo:repeats:),
                                          g_original_init);
    g_original_init = NULL;
    pthread_mutex_lock(&g_weak_lock);
    g_weak_resolved = NO;
    pthread_mutex_unlock(&g_weak_lock);
    if (g_hook_acquired) cs_dealloc_hook_release();
    g_hook_acquired = NO;
}

CS_GUARD_DEFINE_HOOKED(CSGuardTimers, timer, kTimerHooks, cs_timers_install, cs_timers_uninstall, cs_timers_canary);
