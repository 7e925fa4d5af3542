/*
 * CSGuard_Timers.m — a repeating NSTimer whose target's class the app names holds
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
 * pointer. The next fire then invalidates the timer and records an incident. Token and proxy
 * point at each other unretained; whichever goes first clears the other's pointer under
 * g_tokens_lock, so neither ever touches the other after it was freed.
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
 *   weak-target timer that was its target's last owner: the proxy's release (when the timer is
 *   invalidated or freed) is what deallocates the target. The signal is the target's token: the
 *   dealloc hook releases it while the target deallocates, and when that happens on the proxy's
 *   thread during the proxy's own release of the target, that release was the last. No reference
 *   count is read (ARC has none to read), so the incident comes when the timer lets the target
 *   go, not at the first fire after its other owners did: a timer that is never invalidated (the
 *   leak itself) is not reported. The proxy is not autoreleased, so it goes with the timer's
 *   reference. The policy a timer was created under stays with it.
 * - The canary's own target class is always held weakly, and while the canary runs on its
 *   thread no other class is (the canary checks the mechanism, not the app's list).
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

@class CSTimerTargetToken;

@interface CSTimerTarget : NSObject {
  @public
    /* The real target, CS_ATOMIC_* access. Weak: unretained (CS_POINTER), NULL once it
     * deallocated. With retains_target: +1 (CS_RETAINED_POINTER), as unguarded. */
    void *target;
    SEL selector;
    BOOL retains_target; /* strong, as unguarded: report-only timers, and all of them after uninstall */
    BOOL report_only;    /* created under report-only: watch for the timer being the last owner */
    CS_UNRETAINED Class timer_class; /* report-only: the incident's class (the timer may be going) */
    /* Under g_tokens_lock: */
    CS_UNRETAINED CSTimerTargetToken *token; /* the target's token while both live */
    BOOL releasing;              /* report-only: -dealloc is releasing the target ... */
    pthread_t releasing_thread;  /* ... on this thread */
    BOOL target_died_in_release; /* report-only: that release deallocated the target */
}
- (void)cs_fire:(NSTimer *)timer;
@end

@interface CSTimerTargetToken : NSObject {
  @public
    CS_UNRETAINED CSTimerTarget *proxy; /* under g_tokens_lock; cleared by whichever goes first */
    /* g_tokens, under g_tokens_lock: a registry, not owners (the side table owns each token) */
    CS_UNRETAINED CSTimerTargetToken *prev, *next;
}
@end

static pthread_mutex_t g_tokens_lock = PTHREAD_MUTEX_INITIALIZER;
static CS_UNRETAINED CSTimerTargetToken *g_tokens;

@implementation CSTimerTargetToken
/* Released by the side table while the target deallocates (or taken back by the proxy or by
 * uninstall, which clear `proxy` first). */
- (void)dealloc CS_GUARD_METHOD(timer) {
    pthread_mutex_lock(&g_tokens_lock);
    if (prev) prev->next = next;
    else if (g_tokens == self) g_tokens = next;
    if (next) next->prev = prev;
    CS_UNRETAINED CSTimerTarget *watching = proxy;
    proxy = nil;
    if (watching) {
        watching->token = nil;
        if (!watching->retains_target)
            CS_ATOMIC_STORE(&watching->target, (void *)NULL);
        else if (watching->releasing && pthread_equal(watching->releasing_thread, pthread_self()))
            watching->target_died_in_release = YES;
    }
    pthread_mutex_unlock(&g_tokens_lock);
    CS_SUPER_DEALLOC();
}
@end

/* Report-only: gives up the proxy's reference to its target and reports when that was the
 * target's last reference. The target deallocated during this release exactly when its token
 * was released on this thread meanwhile (another owner's release on another thread afterwards
 * does not count). */
static void cs_timer_release_watched(CS_UNRETAINED CSTimerTarget *proxy, void *retained_target) {
    pthread_mutex_lock(&g_tokens_lock);
    proxy->releasing = YES;
    proxy->releasing_thread = pthread_self();
    pthread_mutex_unlock(&g_tokens_lock);
    CS_RELEASE_POINTER(retained_target); /* may run the target's -dealloc, and the token's, here */
    pthread_mutex_lock(&g_tokens_lock);
    proxy->releasing = NO;
    BOOL last_owner = proxy->target_died_in_release;
    CS_UNRETAINED CSTimerTargetToken *token = proxy->token;
    proxy->token = nil;
    if (token) token->proxy = nil;
    pthread_mutex_unlock(&g_tokens_lock);
    /* The target lives on (or is going on another thread): take the token back. The address is a
     * key only, never messaged, and no other entry can be keyed by this live proxy. */
    if (token) cs_sidetable_set(retained_target, CS_POINTER(proxy), NULL);
    if (last_owner) {
        struct {
            CS_UNRETAINED Class isa;
        } timer_stand_in = {proxy->timer_class}; /* the incident names the timer's class */
        cs_guard_misuse(G, CS_OBJECT(&timer_stand_in), proxy->selector, NULL,
                        "repeating timer was the last owner of its target: kept it alive until the timer ended "
                        "(report-only)",
                        0, 0, 0);
    }
}

@implementation CSTimerTarget
- (void)cs_fire:(NSTimer *)timer CS_GUARD_METHOD(timer) {
    /* Unretained, as the weak target is (see the limitation above); a retained one is alive. */
    CS_UNRETAINED id current = CS_OBJECT(CS_ATOMIC_LOAD(&target));
    if (CS_LIKELY(current != nil)) {
        cs_backend_send1(current, selector, timer);
        return;
    }
    cs_guard_misuse(G, timer, selector, NULL, "repeating timer fired after its target was deallocated: invalidated",
                    0, 0, 0);
    /* Nothing else can happen: the target is gone. */
    [timer invalidate];
}

- (void)dealloc CS_GUARD_METHOD(timer) {
    /* The timer released us. */
    void *current = __atomic_exchange_n(&target, (void *)NULL, __ATOMIC_ACQ_REL);
    if (current && retains_target) {
        if (report_only) cs_timer_release_watched(self, current);
        else CS_RELEASE_POINTER(current);
    } else {
        /* Weak: take the token back so it does not outlive the proxy (none left when the target
         * deallocated first). */
        pthread_mutex_lock(&g_tokens_lock);
        CS_UNRETAINED CSTimerTargetToken *left = token;
        token = nil;
        if (left) left->proxy = nil;
        pthread_mutex_unlock(&g_tokens_lock);
        if (current && left) cs_sidetable_set(current, CS_POINTER(self), NULL);
    }
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
static CS_UNRETAINED Class *g_weak_classes; /* resolved (classes are never freed) */
static size_t g_weak_class_count;
static BOOL g_weak_resolved;      /* g_weak_classes is current: the guard is installed */

#if defined(__APPLE__)
static const char *const kDefaultWeakTargetClasses[] = {"UIViewController", "UIView", "NSViewController", "NSView"};
static const size_t kDefaultWeakTargetCount = 4;
#else
static const char *const *const kDefaultWeakTargetClasses = NULL;
static const size_t kDefaultWeakTargetCount = 0;
#endif

/* The canary's weak-target class (CSTimerCanaryTarget, below). */
static Class cs_timer_canary_target_class(void);

/* Resolves the configured (or default) names, plus the canary's own class. Caller holds g_weak_lock. */
static void cs_timer_resolve_weak_locked(void) {
    const char *const *names = g_weak_configured ? (const char *const *)g_weak_names : kDefaultWeakTargetClasses;
    size_t count = g_weak_configured ? g_weak_name_count : kDefaultWeakTargetCount;
    CS_UNRETAINED Class *classes = (CS_UNRETAINED Class *)calloc(count + 1, sizeof(Class));
    size_t found = 0;
    classes[found++] = cs_timer_canary_target_class();
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

/* YES when `object` is an instance of a weak-target class (or a subclass) below NSObject. On the
 * thread running the canary only the canary's own class counts (g_weak_classes[0]): the app's list
 * may name a superclass of the canary's strong-target poller (NSObject, say), and what the app
 * names must not decide whether the guard passes its canary. */
static BOOL cs_timer_target_is_weak(id object) {
    BOOL below_root = NO, named = NO;
    pthread_mutex_lock(&g_weak_lock);
    size_t count = cs_canary_running() && g_weak_class_count > 0 ? 1 : g_weak_class_count;
    for (Class c = object_getClass(object); c != Nil && !(below_root && named); c = class_getSuperclass(c)) {
        if (c == g_root_class) below_root = YES;
        for (size_t i = 0; i < count && !named; i++)
            if (c == g_weak_classes[i]) named = YES;
    }
    pthread_mutex_unlock(&g_weak_lock);
    return below_root && named;
}

/* Returns the target to hand the original, +1 (the caller gives it up with
 * cs_timer_target_done once the original returned): `target` itself, or a new proxy. Not
 * autoreleased: the timer must be the proxy's only owner, or a pool would keep the proxy, and so
 * a strong target, alive after the timer let it go. `creator` is the receiver of the creation
 * message: the timer class, or the timer being initialised. */
static inline id cs_timer_target_for(id creator, id target, SEL selector, BOOL repeats) __attribute__((ns_returns_retained));
static inline id cs_timer_target_for(id creator, id target, SEL selector, BOOL repeats) {
    cs_policy policy = cs_guard_policy(G);
    if (!repeats || target == nil || policy == CS_POLICY_OFF || object_getClass(target) == g_proxy_class ||
        !cs_timer_target_is_weak(target))
        return CS_RETAIN(target);
    CSTimerTarget *proxy = [[CS_CLASS(CSTimerTarget) alloc] init];
    proxy->selector = selector;
    proxy->timer_class = cs_backend_is_class_object(creator) ? (Class)creator : object_getClass(creator);
    if (policy == CS_POLICY_REPORT_ONLY) {
        proxy->report_only = YES;
        proxy->retains_target = YES;
        CS_ATOMIC_STORE(&proxy->target, CS_RETAINED_POINTER(target));
    } else {
        CS_ATOMIC_STORE(&proxy->target, CS_POINTER(target));
    }
    CSTimerTargetToken *token = [[CS_CLASS(CSTimerTargetToken) alloc] init];
    token->proxy = proxy;
    pthread_mutex_lock(&g_tokens_lock);
    proxy->token = token;
    token->next = g_tokens;
    if (g_tokens) g_tokens->prev = token;
    g_tokens = token;
    pthread_mutex_unlock(&g_tokens_lock);
    cs_sidetable_set(CS_POINTER(target), CS_POINTER(proxy), CS_POINTER(token)); /* the side table owns it */
    CS_RELEASE(token);
    return proxy;
}

/* Gives up cs_timer_target_for's reference (ARC: the caller's strong variable does). */
#define cs_timer_target_done(actual) CS_RELEASE(actual)

static inline NSTimer *cs_timer_scheduled(IMP original, id self, SEL _cmd, const void *caller, NSTimeInterval ti,
                                          id target, SEL selector, id userInfo, BOOL repeats) {
    (void)caller;
    id actual = cs_timer_target_for(self, target, selector, repeats);
    SEL fire = actual == target ? selector : @selector(cs_fire:);
    NSTimer *timer = ((NSTimer * (*)(id, SEL, NSTimeInterval, id, SEL, id, BOOL)) original)(self, _cmd, ti, actual, fire,
                                                                                          userInfo, repeats);
    cs_timer_target_done(actual);
    return timer;
}
CS_DEFINE_HOOK_5(cs_timer_scheduled, NSTimer *, NSTimeInterval, id, SEL, id, BOOL)

static inline NSTimer *cs_timer_make(IMP original, id self, SEL _cmd, const void *caller, NSTimeInterval ti,
                                     id target, SEL selector, id userInfo, BOOL repeats) {
    (void)caller;
    id actual = cs_timer_target_for(self, target, selector, repeats);
    SEL fire = actual == target ? selector : @selector(cs_fire:);
    NSTimer *timer = ((NSTimer * (*)(id, SEL, NSTimeInterval, id, SEL, id, BOOL)) original)(self, _cmd, ti, actual, fire,
                                                                                          userInfo, repeats);
    cs_timer_target_done(actual);
    return timer;
}
CS_DEFINE_HOOK_5(cs_timer_make, NSTimer *, NSTimeInterval, id, SEL, id, BOOL)

/* -initWithFireDate:interval:target:selector:userInfo:repeats:, replaced by hand at install (six
 * arguments: beyond the hook slots' arity). An init method: it consumes `self` and returns +1, said
 * to ARC with the attributes (MRC ignores them). */
typedef NSTimer *(*cs_timer_init_fn)(__attribute__((ns_consumed)) id, SEL, NSDate *, NSTimeInterval, id, SEL, id,
                                     BOOL) __attribute__((ns_returns_retained));
static IMP g_original_init;

static NSTimer *cs_timer_init(__attribute__((ns_consumed)) id self, SEL _cmd, NSDate *date, NSTimeInterval ti,
                              id target, SEL selector, id userInfo, BOOL repeats) __attribute__((ns_returns_retained));
static NSTimer *cs_timer_init(__attribute__((ns_consumed)) id self, SEL _cmd, NSDate *date, NSTimeInterval ti,
                              id target, SEL selector, id userInfo, BOOL repeats) {
    id actual = cs_timer_target_for(self, target, selector, repeats);
    SEL fire = actual == target ? selector : @selector(cs_fire:);
    NSTimer *timer = ((cs_timer_init_fn)g_original_init)(self, _cmd, date, ti, actual, fire, userInfo, repeats);
    cs_timer_target_done(actual);
    return timer;
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

static Class cs_timer_canary_target_class(void) {
    return CS_CLASS(CSTimerCanaryTarget);
}

/* Misuse: a repeating timer's target released by its owner; with the guard it deallocates at
 * once and the (never scheduled) timer's next fire invalidates it with an incident. Legal: a
 * one-shot timer, and a repeating timer whose target's class is not named, keep (retain) it. */
static const char *cs_timers_canary(void) {
    int deallocs = 0;
    NSTimer *timer = nil;
    @autoreleasepool {
        CSTimerCanaryTarget *target = [[CS_CLASS(CSTimerCanaryTarget) alloc] init];
        target->deallocs = &deallocs;
        timer = CS_RETAIN([CS_CLASS(NSTimer) timerWithTimeInterval:1000 target:target selector:@selector(cs_tick:)
                                                userInfo:nil repeats:YES]);
        CS_RELEASE(target);
    }
    CS_CANARY_MISUSE((deallocs == 1 && ([timer fire], ![timer isValid])),
                     "a repeating timer kept its target alive or fired into a dead target");
    CS_RELEASE(timer);
    deallocs = 0;
    @autoreleasepool {
        CSTimerCanaryTarget *target = [[CS_CLASS(CSTimerCanaryTarget) alloc] init];
        target->deallocs = &deallocs;
        timer = CS_RETAIN([CS_CLASS(NSTimer) timerWithTimeInterval:1000 target:target selector:@selector(cs_tick:)
                                                userInfo:nil repeats:NO]);
        CS_RELEASE(target);
    }
    CS_CANARY_LEGAL(deallocs == 0, "a one-shot timer no longer retains its target");
    [timer invalidate];
    CS_RELEASE(timer);
    deallocs = 0;
    @autoreleasepool {
        CSTimerCanaryPoller *poller = [[CS_CLASS(CSTimerCanaryPoller) alloc] init];
        poller->deallocs = &deallocs;
        timer = CS_RETAIN([CS_CLASS(NSTimer) timerWithTimeInterval:1000 target:poller selector:@selector(cs_tick:)
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
    g_proxy_class = CS_CLASS(CSTimerTarget);
    g_root_class = CS_CLASS(NSObject);
    pthread_mutex_lock(&g_weak_lock);
    cs_timer_resolve_weak_locked();
    pthread_mutex_unlock(&g_weak_lock);
    Class timer_class = CS_CLASS(NSTimer);
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
 * targets (report-only ones already do), and the tokens (which only the dealloc hook would
 * release) are taken back. */
static void cs_timers_uninstall(void) {
    for (;;) {
        pthread_mutex_lock(&g_tokens_lock);
        CS_UNRETAINED CSTimerTargetToken *token = g_tokens;
        CS_UNRETAINED CSTimerTarget *proxy = nil;
        void *target = NULL;
        if (token) {
            proxy = token->proxy;
            token->proxy = nil;
            g_tokens = token->next;
            if (g_tokens) g_tokens->prev = nil;
            token->next = nil;
            if (proxy) {
                proxy->token = nil;
                target = CS_ATOMIC_LOAD(&proxy->target);
                if (target && !proxy->retains_target) {
                    CS_ATOMIC_STORE(&proxy->target, CS_RETAINED_POINTER(CS_OBJECT(target))); /* same pointer, +1 */
                    proxy->retains_target = YES;
                }
            }
        }
        pthread_mutex_unlock(&g_tokens_lock);
        if (token == nil) break;
        if (target) cs_sidetable_set(target, CS_POINTER(proxy), NULL);
    }
    if (g_original_init)
        cs_backend_replace_implementation(CS_CLASS(NSTimer),
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
