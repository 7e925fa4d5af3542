/*
 * Scenarios_Lifecycle.m — lifecycle misuse scenarios, legal-input oracles, bench cases
 * and the fixture classes the lifecycle tests use.
 *
 * Lifetime misuse is not an exception: unguarded, the outcome is whatever GNUstep really does
 * (a leak reported as an unexpected result, a message to freed memory that GNUstep swallows, a
 * segmentation fault). Scenarios that need a run loop spin it themselves for a bounded time.
 */
#import "CSScenarioSupport.h"
#include <cs_runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif
#include <unistd.h>

typedef void (*cs_set_specific_fn)(void *queue, const void *key, void *context, void (*destructor)(void *));
typedef void *(*cs_get_specific_fn)(const void *key);
static char kScenarioMainQueueKey;
static cs_get_specific_fn g_get_specific;
static pthread_once_t g_tag_once = PTHREAD_ONCE_INIT;

static void cs_scenarios_tag_main_queue(void) {
    cs_set_specific_fn set_specific = (cs_set_specific_fn)dlsym(RTLD_DEFAULT, "dispatch_queue_set_specific");
    void *main_queue = dlsym(RTLD_DEFAULT, "_dispatch_main_q");
    g_get_specific = (cs_get_specific_fn)dlsym(RTLD_DEFAULT, "dispatch_get_specific");
    if (set_specific && main_queue && g_get_specific) set_specific(main_queue, &kScenarioMainQueueKey, &kScenarioMainQueueKey, NULL);
    else g_get_specific = NULL;
}

/* The main thread, or work the main queue runs (after dispatch_main() the main thread is gone
 * and workers drain the main queue). */
bool cs_scenarios_is_main_thread(void) {
#if defined(__linux__)
    if ((pid_t)syscall(SYS_gettid) == getpid()) return true; /* Linux: the main thread's id is the pid */
#else
    if (pthread_main_np()) return true; /* Apple (no SYS_gettid there) */
#endif
    pthread_once(&g_tag_once, cs_scenarios_tag_main_queue);
    return g_get_specific != NULL && g_get_specific(&kScenarioMainQueueKey) == &kScenarioMainQueueKey;
}

#pragma mark - Fixtures

static volatile long g_pings;

/** Notification observer; counts pings. */
@interface CSLObserver : NSObject
- (void)cs_ping:(NSNotification *)note;
@end
@implementation CSLObserver
- (void)cs_ping:(NSNotification *)note {
    (void)note;
    __atomic_fetch_add(&g_pings, 1, __ATOMIC_RELAXED);
}
@end


/** Observed model: `name`, `count`, a nested `child`, and `fullName` depending on `name`. */
@interface CSLModel : NSObject {
    __strong NSString *name;
    long count;
    __strong CSLModel *child;
}
- (NSString *)name;
- (void)setName:(NSString *)value;
- (long)count;
- (void)setCount:(long)value;
- (CSLModel *)child;
- (void)setChild:(CSLModel *)value;
- (NSString *)fullName;
@end
@implementation CSLModel
+ (NSSet *)keyPathsForValuesAffectingValueForKey:(NSString *)key {
    if ([key isEqualToString:@"fullName"]) return [NSSet setWithObject:@"name"];
    return [super keyPathsForValuesAffectingValueForKey:key];
}
- (NSString *)name {
    return name;
}
- (void)setName:(NSString *)value {
    id old = name;
    name = CS_RETAIN(value);
    CS_RELEASE(old);
}
- (long)count {
    return count;
}
- (void)setCount:(long)value {
    count = value;
}
- (CSLModel *)child {
    return child;
}
- (void)setChild:(CSLModel *)value {
    id old = child;
    child = CS_RETAIN(value);
    CS_RELEASE(old);
}
- (NSString *)fullName {
    return [NSString stringWithFormat:@"Full %@", name];
}
- (void)dealloc {
    CS_RELEASE(name);
    CS_RELEASE(child);
    CS_SUPER_DEALLOC();
}
@end

/** KVO observer: counts notifications and logs them (key path, context, change). */
@interface CSLKVOObserver : NSObject {
  @public
    int hits;
    __strong NSMutableString *log;
}
@end
@implementation CSLKVOObserver
- (void)observeValueForKeyPath:(NSString *)keyPath ofObject:(id)object change:(NSDictionary *)change context:(void *)context {
    (void)object;
    hits++;
    if (log == nil) return;
    NSArray *keys = [[change allKeys] sortedArrayUsingSelector:@selector(compare:)];
    [log appendFormat:@"[%@ ctx=%ld", keyPath, (long)(intptr_t)context];
    for (NSString *key in keys) {
        id value = [change objectForKey:key];
        [log appendFormat:@" %@=%@", key, value == [NSNull null] ? @"null" : [value description]];
    }
    [log appendString:@"] "];
}
- (void)dealloc {
    CS_RELEASE(log);
    CS_SUPER_DEALLOC();
}
@end

/** An observer without -observeValueForKeyPath:ofObject:change:context:. */
@interface CSLLazyObserver : NSObject
@end
@implementation CSLLazyObserver
@end

/** Zombie fixture: opted in by the zombie scenarios, tests and bench (by exact class name). */
@interface CSLZombieVictim : NSObject {
  @public
    __strong NSString *name;
    long count;
}
- (NSString *)name;
- (long)count;
- (double)ratio;
- (NSRange)range;
@end
@implementation CSLZombieVictim
- (NSString *)name {
    return name;
}
- (long)count {
    return count;
}
- (double)ratio {
    return 0.5;
}
- (NSRange)range {
    return NSMakeRange(3, 4);
}
- (void)dealloc {
    CS_RELEASE(name);
    CS_SUPER_DEALLOC();
}
@end

/** Fills freed memory of an observer's size, so a message to a dead observer reaches it. */
@interface CSLFiller : NSObject
@end
@implementation CSLFiller
@end

/** Timer target: records ticks, the timer argument and its userInfo; flags its dealloc. */
@interface CSLTicker : NSObject {
  @public
    int ticks;
    int stop_after; /* invalidates the timer at this tick (0: never) */
    BOOL *dealloced;
    int *ticks_out; /* mirrors `ticks`, readable after the ticker is gone */
    __strong NSMutableString *log;
}
- (void)cs_tick:(NSTimer *)timer;
@end
@implementation CSLTicker
- (void)cs_tick:(NSTimer *)timer {
    ticks++;
    if (ticks_out) *ticks_out = ticks;
    if (log) [log appendFormat:@"tick %d arg=%@ userInfo=%@; ", ticks, [timer isKindOfClass:[NSTimer class]] ? @"timer" : @"other", [timer userInfo]];
    if (stop_after && ticks >= stop_after) [timer invalidate];
}
- (void)dealloc {
    if (dealloced) *dealloced = YES;
    CS_RELEASE(log);
    CS_SUPER_DEALLOC();
}
@end

/** A screen-like app class whose lifetime a timer must not extend: the misuse scenarios name it
 *  as a weak timer target (on Apple the defaults are UIView, UIViewController, ...). */
@interface CSLScreen : CSLTicker
@end
@implementation CSLScreen
@end

/* Names CSLScreen as the only weak timer target class / restores the platform default (none here). */
static void cs_name_screen_as_weak_timer_target(void) {
    const char *names[] = {"CSLScreen"};
    cs_timer_configure_weak_targets(names, 1);
}
static void cs_restore_weak_timer_targets(void) {
    cs_timer_configure_weak_targets(NULL, 0);
}

/** An NSObject that answers the timer selector only by forwarding to another object. */
@interface CSLForwarder : NSObject {
  @public
    __strong id inner;
}
@end
@implementation CSLForwarder
- (id)forwardingTargetForSelector:(SEL)sel {
    (void)sel;
    return inner;
}
- (void)dealloc {
    CS_RELEASE(inner);
    CS_SUPER_DEALLOC();
}
@end

/** A weak-proxy style NSProxy: forwards every message to its target (kept retained here). */
@interface CSLProxy : NSProxy {
  @public
    __strong id target;
}
@end
@implementation CSLProxy
- (NSMethodSignature *)methodSignatureForSelector:(SEL)sel {
    return [target methodSignatureForSelector:sel];
}
- (void)forwardInvocation:(NSInvocation *)invocation {
    [invocation invokeWithTarget:target];
}
- (void)dealloc {
    CS_RELEASE(target);
    CS_SUPER_DEALLOC();
}
@end

/** A class whose -cs_touch: must run on the main thread (configured by the tests). */
@interface CSLMainThreadOnly : NSObject {
  @public
    int calls;
    int main_calls;
    long last_argument;
}
- (void)cs_touch:(id)argument;
- (void)cs_touchValue:(long)value;
@end
@implementation CSLMainThreadOnly
- (void)cs_touch:(id)argument {
    calls++;
    if (cs_scenarios_is_main_thread()) main_calls++;
    last_argument = (long)[argument integerValue];
}
- (void)cs_touchValue:(long)value {
    calls++;
    if (cs_scenarios_is_main_thread()) main_calls++;
    last_argument = value;
}
@end

#pragma mark - Helpers

/** Runs the current thread's run loop in small slices until `done` or `seconds` elapsed. */
static void cs_spin_until(BOOL (*done)(void *), void *context, double seconds) {
    NSDate *limit = [NSDate dateWithTimeIntervalSinceNow:seconds];
    while (!done(context) && [limit timeIntervalSinceNow] > 0) {
        @autoreleasepool {
            [[NSRunLoop currentRunLoop] runMode:NSDefaultRunLoopMode
                                     beforeDate:[NSDate dateWithTimeIntervalSinceNow:0.01]];
        }
    }
}

typedef void (*cs_main_queue_drain_fn)(void *);

bool cs_lifecycle_drain_main_queue(double seconds, bool (*done)(void *), void *context) {
    static cs_main_queue_drain_fn drain;
    if (drain == NULL) drain = (cs_main_queue_drain_fn)dlsym(RTLD_DEFAULT, "_dispatch_main_queue_callback_4CF");
    NSDate *limit = [NSDate dateWithTimeIntervalSinceNow:seconds];
    for (;;) {
        if (drain) drain(NULL);
        @autoreleasepool {
            [[NSRunLoop currentRunLoop] runMode:NSDefaultRunLoopMode
                                     beforeDate:[NSDate dateWithTimeIntervalSinceNow:0.005]];
        }
        if (done && done(context)) return true;
        if ([limit timeIntervalSinceNow] <= 0) return done == NULL;
    }
}

#pragma mark - KVO

static NSString *cs_nil_string(void) {
    return (NSString *)cs_opaque(nil);
}

/* After a misuse the object's observing still works: a real registration gets exactly one
 * notification per change and is removed cleanly. */
static bool cs_kvo_still_works(CSLModel *model) {
    CSLKVOObserver *probe = CS_AUTORELEASE([[CSLKVOObserver alloc] init]);
    [model addObserver:probe forKeyPath:@"name" options:NSKeyValueObservingOptionNew context:NULL];
    [model setName:@"probe"];
    [model removeObserver:probe forKeyPath:@"name"];
    [model setName:@"after probe"];
    return probe->hits == 1;
}

static bool kvo_add_nil_observer(void) {
    CSLModel *model = CS_AUTORELEASE([[CSLModel alloc] init]);
    [model addObserver:cs_opaque(nil) forKeyPath:@"name" options:0 context:NULL];
    [model setName:@"x"];
    return cs_kvo_still_works(model);
}

static bool kvo_add_nil_keypath(void) {
    CSLModel *model = CS_AUTORELEASE([[CSLModel alloc] init]);
    CSLKVOObserver *observer = CS_AUTORELEASE([[CSLKVOObserver alloc] init]);
    [model addObserver:observer forKeyPath:cs_nil_string() options:0 context:NULL];
    [model setName:@"x"];
    return observer->hits == 0;
}

static bool kvo_add_empty_keypath(void) {
    CSLModel *model = CS_AUTORELEASE([[CSLModel alloc] init]);
    CSLKVOObserver *observer = CS_AUTORELEASE([[CSLKVOObserver alloc] init]);
    [model addObserver:observer forKeyPath:@"" options:0 context:NULL];
    [model setName:@"x"];
    return observer->hits == 0;
}

/* The identical registration twice: one change is delivered once, and one removal ends it. */
static bool kvo_add_duplicate(void) {
    CSLModel *model = CS_AUTORELEASE([[CSLModel alloc] init]);
    CSLKVOObserver *observer = CS_AUTORELEASE([[CSLKVOObserver alloc] init]);
    [model addObserver:observer forKeyPath:@"name" options:NSKeyValueObservingOptionNew context:(void *)1];
    [model addObserver:observer forKeyPath:@"name" options:NSKeyValueObservingOptionNew context:(void *)1];
    [model setName:@"a"];
    int once = observer->hits;
    [model removeObserver:observer forKeyPath:@"name"];
    [model setName:@"b"];
    return once == 1 && observer->hits == 1;
}

/* GNUstep's KVO cannot observe a class object: it throws after swapping the class object's isa
 * for an instance class, and the class then answers none of its class methods. */
static bool cs_class_still_works(void) {
    return class_isMetaClass(object_getClass((id)[CSLModel class])) && [CSLModel keyPathsForValuesAffectingValueForKey:@"fullName"] != nil;
}

static bool kvo_class_add(void) {
    CSLKVOObserver *observer = CS_AUTORELEASE([[CSLKVOObserver alloc] init]);
    [(id)[CSLModel class] addObserver:observer forKeyPath:@"name" options:NSKeyValueObservingOptionNew context:NULL];
    return cs_class_still_works() && observer->hits == 0;
}

static bool kvo_class_add_nil_keypath(void) {
    CSLKVOObserver *observer = CS_AUTORELEASE([[CSLKVOObserver alloc] init]);
    [(id)[CSLModel class] addObserver:observer forKeyPath:cs_nil_string() options:0 context:NULL];
    return cs_class_still_works();
}

static bool kvo_class_remove_never_added(void) {
    CSLKVOObserver *observer = CS_AUTORELEASE([[CSLKVOObserver alloc] init]);
    [(id)[CSLModel class] removeObserver:observer forKeyPath:@"name"];
    return cs_class_still_works();
}

void cs_test_kvo_class_remove_context(void) {
    @autoreleasepool {
        CSLKVOObserver *observer = CS_AUTORELEASE([[CSLKVOObserver alloc] init]);
        [(id)[CSLModel class] removeObserver:observer forKeyPath:@"name" context:NULL];
    }
}

static bool kvo_remove_never_added(void) {
    CSLModel *model = CS_AUTORELEASE([[CSLModel alloc] init]);
    CSLKVOObserver *observer = CS_AUTORELEASE([[CSLKVOObserver alloc] init]);
    [model removeObserver:observer forKeyPath:@"name"];
    return cs_kvo_still_works(model) && observer->hits == 0;
}

static bool kvo_remove_twice(void) {
    CSLModel *model = CS_AUTORELEASE([[CSLModel alloc] init]);
    CSLKVOObserver *observer = CS_AUTORELEASE([[CSLKVOObserver alloc] init]);
    [model addObserver:observer forKeyPath:@"name" options:0 context:NULL];
    [model removeObserver:observer forKeyPath:@"name"];
    [model removeObserver:observer forKeyPath:@"name"];
    [model setName:@"a"];
    return observer->hits == 0;
}

/* Removal with a context matches on the context: the wrong one is ignored, the right one works. */
static bool kvo_remove_context_wrong(void) {
    CSLModel *model = CS_AUTORELEASE([[CSLModel alloc] init]);
    CSLKVOObserver *observer = CS_AUTORELEASE([[CSLKVOObserver alloc] init]);
    [model addObserver:observer forKeyPath:@"name" options:0 context:(void *)1];
    [model removeObserver:observer forKeyPath:@"name" context:(void *)2];
    [model setName:@"a"];
    int still = observer->hits;
    [model removeObserver:observer forKeyPath:@"name" context:(void *)1];
    [model setName:@"b"];
    return still == 1 && observer->hits == 1;
}

static bool kvo_remove_context_never_added(void) {
    CSLModel *model = CS_AUTORELEASE([[CSLModel alloc] init]);
    CSLKVOObserver *observer = CS_AUTORELEASE([[CSLKVOObserver alloc] init]);
    [model removeObserver:observer forKeyPath:@"name" context:(void *)1];
    return cs_kvo_still_works(model) && observer->hits == 0;
}

/* The observed object deallocates while observed; a new object may reuse its memory. */
static bool kvo_observed_dealloc(void) {
    CSLKVOObserver *observer = CS_AUTORELEASE([[CSLKVOObserver alloc] init]);
    CS_UNRETAINED CSLModel *model = CS_SCENARIO_OWNED([[CSLModel alloc] init]);
    [model addObserver:observer forKeyPath:@"name" options:NSKeyValueObservingOptionNew context:NULL];
    [model setName:@"a"];
    CS_SCENARIO_DISOWN(model);
    for (int i = 0; i < 16; i++) {
        CSLModel *other = [[CSLModel alloc] init];
        [other setName:@"b"];
        CS_RELEASE(other);
    }
    return observer->hits == 1;
}

/* The observer deallocates while registered; a later change must not message its memory. */
static bool kvo_observer_dealloc(void) {
    CSLModel *model = CS_AUTORELEASE([[CSLModel alloc] init]);
    CS_UNRETAINED CSLKVOObserver *observer = CS_SCENARIO_OWNED([[CSLKVOObserver alloc] init]);
    [model addObserver:observer forKeyPath:@"name" options:NSKeyValueObservingOptionNew context:NULL];
    CS_SCENARIO_DISOWN(observer);
    NSMutableArray *fillers = [NSMutableArray array];
    for (int i = 0; i < 64; i++) [fillers addObject:CS_AUTORELEASE([[CSLFiller alloc] init])];
    [model setName:@"boom"];
    [model setName:@"again"];
    return [[model name] isEqualToString:@"again"] && cs_kvo_still_works(model);
}

static bool kvo_observer_without_callback(void) {
    CSLModel *model = CS_AUTORELEASE([[CSLModel alloc] init]);
    CSLLazyObserver *observer = CS_AUTORELEASE([[CSLLazyObserver alloc] init]);
    [model addObserver:observer forKeyPath:@"name" options:0 context:NULL];
    [model setName:@"x"];
    [model removeObserver:observer forKeyPath:@"name"];
    return [[model name] isEqualToString:@"x"] && cs_kvo_still_works(model);
}

#pragma mark - Zombies

void cs_lifecycle_configure_zombies(size_t max_bytes, size_t max_count) {
    const char *names[] = {"CSLZombieVictim"};
    cs_zombie_config config = {names, 1, NULL, 0, NULL, 0, max_bytes, max_count};
    cs_zombie_configure(&config);
}

void cs_lifecycle_unconfigure_zombies(void) {
    cs_zombie_configure(NULL);
    cs_zombie_flush();
}

/* A pointer to a freed object, hidden from the compiler, typed for messaging. Never through
 * cs_opaque or a strong variable: under ARC either would retain the freed object. */
#define CS_STALE_VICTIM(victim) ((CSLZombieVictim *)CS_OBJECT(cs_opaque_pointer(CS_POINTER(victim))))

/* A victim released, its memory reused by other objects, then messaged through the stale
 * pointer. Unguarded that is a use after free: whatever GNUstep does with the bytes there. The
 * stale pointer crosses as a plain pointer and lands in CS_UNRETAINED variables. */
static void *cs_dead_victim(void) {
    cs_lifecycle_configure_zombies(0, 0);
    CS_UNRETAINED CSLZombieVictim *victim = CS_SCENARIO_OWNED([[CSLZombieVictim alloc] init]);
    victim->name = [[NSString alloc] initWithUTF8String:"victim"];
    victim->count = 7;
    CS_SCENARIO_DISOWN(victim);
    NSMutableArray *fillers = [NSMutableArray array];
    for (int i = 0; i < 64; i++) [fillers addObject:CS_AUTORELEASE([[CSLFiller alloc] init])];
    return cs_opaque_pointer(CS_POINTER(victim));
}

static bool zombie_message_object(void) {
    CS_UNRETAINED CSLZombieVictim *victim = CS_OBJECT(cs_dead_victim());
    bool ok = [victim name] == nil;
    cs_lifecycle_unconfigure_zombies();
    return ok;
}

static bool zombie_message_integer(void) {
    CS_UNRETAINED CSLZombieVictim *victim = CS_OBJECT(cs_dead_victim());
    bool ok = [victim count] == 0;
    cs_lifecycle_unconfigure_zombies();
    return ok;
}

static bool zombie_message_double(void) {
    CS_UNRETAINED CSLZombieVictim *victim = CS_OBJECT(cs_dead_victim());
    bool ok = [victim ratio] == 0.0;
    cs_lifecycle_unconfigure_zombies();
    return ok;
}

static bool zombie_message_struct(void) {
    CS_UNRETAINED CSLZombieVictim *victim = CS_OBJECT(cs_dead_victim());
    NSRange range = [victim range];
    cs_lifecycle_unconfigure_zombies();
    return range.location == 0 && range.length == 0;
}

/* The extra release reaches the zombie, which stays kept (not freed a second time). */
static bool zombie_release_over(void) {
    void *victim = cs_dead_victim();
    cs_send_release(victim);
    bool kept = cs_zombie_count() == 1;
    cs_lifecycle_unconfigure_zombies();
    return kept;
}

#pragma mark - Notifications

/* The observer deallocates while registered; the center then posts to its freed memory (GNUstep
 * 1.28 swallows the exception that reaches a filler object there; valgrind shows the read). */
static bool notification_observer_dealloc(void) {
    NSNotificationCenter *center = [NSNotificationCenter defaultCenter];
    NSString *name = @"CSLifecycleEvent";
    CS_UNRETAINED CSLObserver *observer = CS_SCENARIO_OWNED([[CSLObserver alloc] init]);
    [center addObserver:observer selector:@selector(cs_ping:) name:name object:nil];
    g_pings = 0;
    CS_SCENARIO_DISOWN(observer);
    NSMutableArray *fillers = [NSMutableArray array];
    for (int i = 0; i < 64; i++) [fillers addObject:CS_AUTORELEASE([[CSLFiller alloc] init])];
    [center postNotificationName:name object:nil];
    [center postNotificationName:name object:nil];
    return g_pings == 0;
}

/* The observer is registered for two names, removes itself from one with removeObserver:name:
 * object:, and deallocates while still registered for the other: a post of that name then
 * reaches its freed memory unguarded, exactly as when it never removed anything. */
static bool notification_observer_dealloc_after_partial_removal(void) {
    NSNotificationCenter *center = [NSNotificationCenter defaultCenter];
    CS_UNRETAINED CSLObserver *observer = CS_SCENARIO_OWNED([[CSLObserver alloc] init]);
    [center addObserver:observer selector:@selector(cs_ping:) name:@"CSLPartialA" object:nil];
    [center addObserver:observer selector:@selector(cs_ping:) name:@"CSLPartialB" object:nil];
    [center removeObserver:observer name:@"CSLPartialA" object:nil];
    g_pings = 0;
    CS_SCENARIO_DISOWN(observer);
    NSMutableArray *fillers = [NSMutableArray array];
    for (int i = 0; i < 64; i++) [fillers addObject:CS_AUTORELEASE([[CSLFiller alloc] init])];
    [center postNotificationName:@"CSLPartialB" object:nil];
    [center postNotificationName:@"CSLPartialA" object:nil];
    return g_pings == 0;
}

#pragma mark - Timers

static BOOL cs_flag_set(void *flag) {
    return *(BOOL *)flag;
}

/* The owner releases a repeating timer's target, of a class the app named as a weak timer
 * target, without invalidating the timer. Unguarded, the timer keeps the target alive and keeps
 * firing (a leak). Guarded, the target deallocates and the next fire invalidates the timer. */
static bool timer_repeating_target_released(void) {
    cs_name_screen_as_weak_timer_target();
    BOOL dealloced = NO;
    CS_UNRETAINED CSLTicker *target = CS_SCENARIO_OWNED([[CSLScreen alloc] init]);
    target->dealloced = &dealloced;
    NSTimer *timer = CS_RETAIN([NSTimer scheduledTimerWithTimeInterval:0.01 target:target selector:@selector(cs_tick:)
                                                     userInfo:nil repeats:YES]);
    CS_SCENARIO_DISOWN(target);
    cs_spin_until(cs_flag_set, &dealloced, 0.5);
    NSDate *limit = [NSDate dateWithTimeIntervalSinceNow:0.5];
    while ([timer isValid] && [limit timeIntervalSinceNow] > 0) {
        @autoreleasepool {
            [[NSRunLoop currentRunLoop] runMode:NSDefaultRunLoopMode
                                     beforeDate:[NSDate dateWithTimeIntervalSinceNow:0.01]];
        }
    }
    bool ok = dealloced && ![timer isValid];
    if (!dealloced) {
        target->dealloced = NULL; /* still alive (leaked by the timer): do not point at the stack */
        [timer invalidate];
    }
    CS_RELEASE(timer);
    cs_restore_weak_timer_targets();
    return ok;
}

bool cs_lifecycle_timer_keeps_released_target(bool screen, bool init_with_fire_date) {
    BOOL dealloced = NO;
    NSTimer *timer;
    CS_UNRETAINED CSLTicker *target;
    @autoreleasepool {
        target = screen ? CS_SCENARIO_OWNED([[CSLScreen alloc] init]) : CS_SCENARIO_OWNED([[CSLTicker alloc] init]);
        target->dealloced = &dealloced;
        if (init_with_fire_date)
            timer = [[NSTimer alloc] initWithFireDate:[NSDate dateWithTimeIntervalSinceNow:1000] interval:1000
                                               target:target selector:@selector(cs_tick:) userInfo:nil repeats:YES];
        else
            timer = CS_RETAIN([NSTimer timerWithTimeInterval:1000 target:target selector:@selector(cs_tick:) userInfo:nil
                                            repeats:YES]);
        CS_SCENARIO_DISOWN(target);
    }
    bool alive = !dealloced;
    if (alive) target->dealloced = NULL; /* the timer releases it later: not into this frame */
    @autoreleasepool {
        [timer fire];
        [timer invalidate];
        CS_RELEASE(timer);
    }
    return alive;
}

#pragma mark - Callbacks that end their own registration (an original still on the stack)

/** Removes itself from the center in its callback and gives up the last reference to itself
 *  there: it deallocates while the center's post is still running. */
@interface CSLSelfEndingObserver : NSObject {
  @public
    int pings;
    BOOL *dealloced;
}
- (void)cs_ping:(NSNotification *)note;
@end
@implementation CSLSelfEndingObserver
- (void)cs_ping:(NSNotification *)note {
    (void)note;
    pings++;
    [[NSNotificationCenter defaultCenter] removeObserver:self];
    CS_UNRETAINED CSLSelfEndingObserver *me = self;
    CS_SCENARIO_DISOWN(me); /* the scenario's +1: the last reference */
}
- (void)dealloc {
    if (dealloced) *dealloced = YES;
    CS_SUPER_DEALLOC();
}
@end

int cs_lifecycle_observer_ends_itself_in_post(void) {
    BOOL dealloced = NO;
    @autoreleasepool {
        CS_UNRETAINED CSLSelfEndingObserver *observer = CS_SCENARIO_OWNED([[CSLSelfEndingObserver alloc] init]);
        observer->dealloced = &dealloced;
        NSNotificationCenter *center = [NSNotificationCenter defaultCenter];
        [center addObserver:observer selector:@selector(cs_ping:) name:@"CSLSelfEnding" object:nil];
        [center addObserver:observer selector:@selector(cs_ping:) name:@"CSLSelfEndingOther" object:nil];
        [center postNotificationName:@"CSLSelfEnding" object:nil];
        [center postNotificationName:@"CSLSelfEnding" object:nil];
        [center postNotificationName:@"CSLSelfEndingOther" object:nil];
    }
    return dealloced ? 1 : 0;
}

/** Owns its repeating timer; on the second tick it invalidates it and gives up the last reference
 *  to itself, so it deallocates inside the timer's own fire. */
@interface CSLSelfEndingTickerOwner : NSObject {
  @public
    NSTimer *timer; /* retained in MRC; strong under ARC */
    int ticks;
    BOOL *dealloced;
}
- (void)cs_tick:(NSTimer *)fired;
@end
@implementation CSLSelfEndingTickerOwner
- (void)cs_tick:(NSTimer *)fired {
    (void)fired;
    if (++ticks < 2) return;
    [timer invalidate];
    CS_RELEASE(timer);
    timer = nil;
    CS_UNRETAINED CSLSelfEndingTickerOwner *me = self;
    CS_SCENARIO_DISOWN(me);
}
- (void)dealloc {
    if (dealloced) *dealloced = YES;
    CS_SUPER_DEALLOC();
}
@end

int cs_lifecycle_timer_owner_ends_itself_in_fire(void) {
    BOOL dealloced = NO;
    @autoreleasepool {
        CS_UNRETAINED CSLSelfEndingTickerOwner *owner = CS_SCENARIO_OWNED([[CSLSelfEndingTickerOwner alloc] init]);
        owner->dealloced = &dealloced;
        owner->timer = CS_RETAIN([NSTimer scheduledTimerWithTimeInterval:0.01 target:owner selector:@selector(cs_tick:)
                                                               userInfo:nil repeats:YES]);
    }
    NSDate *limit = [NSDate dateWithTimeIntervalSinceNow:1.0];
    while (!dealloced && [limit timeIntervalSinceNow] > 0) {
        @autoreleasepool {
            [[NSRunLoop currentRunLoop] runMode:NSDefaultRunLoopMode beforeDate:[NSDate dateWithTimeIntervalSinceNow:0.01]];
        }
    }
    return dealloced ? 1 : 0;
}

#pragma mark - Across a stop (cs_guards_uninstall between registration and removal)

int cs_lifecycle_notification_across_stop(void) {
    int delivered, after;
    @autoreleasepool {
        NSNotificationCenter *center = [NSNotificationCenter defaultCenter];
        CS_UNRETAINED CSLObserver *observer = CS_SCENARIO_OWNED([[CSLObserver alloc] init]);
        [center addObserver:observer selector:@selector(cs_ping:) name:@"CSLAcrossStop" object:nil];
        cs_guards_uninstall();
        g_pings = 0;
        [center postNotificationName:@"CSLAcrossStop" object:nil];
        delivered = (int)g_pings;
        [center removeObserver:observer];
        [center postNotificationName:@"CSLAcrossStop" object:nil];
        after = (int)g_pings - delivered;
        CS_SCENARIO_DISOWN(observer);
        [center postNotificationName:@"CSLAcrossStop" object:nil];
    }
    return delivered == 1 ? after : -1;
}

static void cs_run_loop_for(double seconds) {
    NSDate *limit = [NSDate dateWithTimeIntervalSinceNow:seconds];
    while ([limit timeIntervalSinceNow] > 0) {
        @autoreleasepool {
            [[NSRunLoop currentRunLoop] runMode:NSDefaultRunLoopMode beforeDate:[NSDate dateWithTimeIntervalSinceNow:0.01]];
        }
    }
}

int cs_lifecycle_timer_across_stop(void) {
    int fired, after;
    CS_UNRETAINED CSLTicker *target = CS_SCENARIO_OWNED([[CSLTicker alloc] init]);
    NSTimer *timer = CS_RETAIN([NSTimer scheduledTimerWithTimeInterval:0.01 target:target selector:@selector(cs_tick:)
                                                              userInfo:nil repeats:YES]);
    cs_guards_uninstall();
    cs_run_loop_for(0.15);
    fired = target->ticks;
    [timer invalidate];
    cs_run_loop_for(0.1);
    after = target->ticks - fired;
    CS_RELEASE(timer);
    CS_SCENARIO_DISOWN(target);
    return fired > 0 ? after : -1;
}

bool cs_lifecycle_zombie_across_stop(void) {
    CS_UNRETAINED CSLZombieVictim *victim = CS_OBJECT(cs_dead_victim());
    cs_guards_uninstall();
    bool kept = cs_zombie_count() == 1;
    bool answered = kept && [CS_STALE_VICTIM(victim) name] == nil && [CS_STALE_VICTIM(victim) count] == 0;
    cs_lifecycle_unconfigure_zombies();
    return answered;
}

#pragma mark - Main-thread-only calls

static void *cs_background_touch(void *object) {
    @autoreleasepool {
        [(CSLMainThreadOnly *)CS_OBJECT(object) cs_touch:[NSNumber numberWithInt:7]];
    }
    return NULL;
}

static bool cs_main_touched(void *object) {
    return ((CSLMainThreadOnly *)CS_OBJECT(object))->calls > 0;
}

void cs_lifecycle_configure_main_thread_fixture(void) {
    const char *classes[] = {"CSLMainThreadOnly", "CSLMainThreadOnly"};
    const char *selectors[] = {"cs_touch:", "cs_touchValue:"};
    cs_mainthread_configure(classes, selectors, 2);
}

/* A main-thread-only method called from a background thread. Unguarded it runs there (an
 * unexpected result); guarded it runs later on the main thread, once. Run on the main thread. */
static bool mainthread_call_background(void) {
    cs_lifecycle_configure_main_thread_fixture();
    CSLMainThreadOnly *object = [[CSLMainThreadOnly alloc] init];
    pthread_t thread;
    pthread_create(&thread, NULL, cs_background_touch, CS_POINTER(object));
    pthread_join(thread, NULL);
    cs_lifecycle_drain_main_queue(2.0, cs_main_touched, CS_POINTER(object));
    bool ok = object->calls == 1 && object->main_calls == 1 && object->last_argument == 7;
    CS_RELEASE(object);
    return ok;
}

#pragma mark - Test helpers (cs_scenarios.h, lifecycle block)

/* The fixture crosses to Swift at +1 as a plain pointer; _free gives that reference up. */
void *cs_lifecycle_mainthread_fixture_new(void) {
    return CS_POINTER(CS_SCENARIO_OWNED([[CSLMainThreadOnly alloc] init]));
}

void cs_lifecycle_mainthread_fixture_free(void *object) {
    CS_SCENARIO_DISOWN(CS_OBJECT(object));
}

static void *cs_background_touch_value(void *object) {
    @autoreleasepool {
        [(CSLMainThreadOnly *)CS_OBJECT(object) cs_touchValue:42];
    }
    return NULL;
}

void cs_lifecycle_mainthread_call_from_background(void *object, bool with_object) {
    pthread_t thread;
    pthread_create(&thread, NULL, with_object ? cs_background_touch : cs_background_touch_value, object);
    pthread_join(thread, NULL);
}

void cs_lifecycle_mainthread_call_here(void *object) {
    [(CSLMainThreadOnly *)CS_OBJECT(object) cs_touchValue:5];
}

cs_mainthread_fixture_state cs_lifecycle_mainthread_state(void *object) {
    CS_UNRETAINED CSLMainThreadOnly *o = CS_OBJECT(object);
    cs_mainthread_fixture_state state = {o->calls, o->main_calls, o->last_argument};
    return state;
}

/* One worker of cs_lifecycle_stress: every lifecycle path at once. The guards' shared state (side
 * tables, the dealloc hook, token lists, incident counters) is what the threads contend on; the
 * objects are per thread, notification center included: GNUstep 1.28's shared center is not safe
 * under concurrent add, post and remove even with no guard installed. */
typedef struct {
    unsigned iterations;
    unsigned anomalies;
    CS_UNRETAINED CSLMainThreadOnly *main_only; /* shared by all workers, owned by the caller; nil: no main-thread calls */
} cs_stress_arg;

static void *cs_stress_worker(void *raw) {
    cs_stress_arg *arg = raw;
    NSNotificationCenter *center = [[NSNotificationCenter alloc] init];
    for (unsigned i = 0; i < arg->iterations; i++) {
        @autoreleasepool {
            { /* KVO: the order of the two deaths is the point, so both are released by hand */
            CS_UNRETAINED CSLModel *model = CS_SCENARIO_OWNED([[CSLModel alloc] init]);
            CS_UNRETAINED CSLKVOObserver *observer = CS_SCENARIO_OWNED([[CSLKVOObserver alloc] init]);
            [model addObserver:observer forKeyPath:@"name" options:NSKeyValueObservingOptionNew context:NULL];
            [model setName:@"x"];
            if (observer->hits != 1) arg->anomalies++;
            /* KVO objects are per thread: GNUstep 1.28's own KVO crashes (SIGSEGV in an
             * autorelease-pool drain, 4 runs in 6, no guard installed) when several threads add and
             * remove observers of one object at once, or change one object at once. */
            switch (i % 3) {
            case 0: /* clean removal */
                [model removeObserver:observer forKeyPath:@"name"];
                CS_SCENARIO_DISOWN(observer);
                CS_SCENARIO_DISOWN(model);
                break;
            case 1: /* observer dies first, while registered */
                CS_SCENARIO_DISOWN(observer);
                [model setName:@"y"];
                CS_SCENARIO_DISOWN(model);
                break;
            default: /* observed dies first, while observed */
                CS_SCENARIO_DISOWN(model);
                CS_SCENARIO_DISOWN(observer);
                break;
            }
            }
            { /* notifications */
            CS_UNRETAINED CSLObserver *listener = CS_SCENARIO_OWNED([[CSLObserver alloc] init]);
            [center addObserver:listener selector:@selector(cs_ping:) name:@"CSLStress" object:nil];
            [center postNotificationName:@"CSLStress" object:nil];
            if (i % 2) [center removeObserver:listener];
            CS_SCENARIO_DISOWN(listener);
            [center postNotificationName:@"CSLStress" object:nil];
            }
            { /* timers */
            CS_UNRETAINED CSLTicker *target = CS_SCENARIO_OWNED([[CSLScreen alloc] init]);
            NSTimer *timer = [NSTimer timerWithTimeInterval:1000 target:target selector:@selector(cs_tick:)
                                                   userInfo:nil repeats:YES];
            [timer fire];
            CS_SCENARIO_DISOWN(target);
            [timer fire];
            [timer invalidate];
            }
            { /* zombies: kept (cs_lifecycle_stress sets a budget no run reaches), then messaged */
            CS_UNRETAINED CSLZombieVictim *victim = CS_SCENARIO_OWNED([[CSLZombieVictim alloc] init]);
            victim->count = 3;
            CS_SCENARIO_DISOWN(victim);
            if ([CS_STALE_VICTIM(victim) count] != 0) arg->anomalies++;
            }
            /* main-thread-only call from this background thread: re-dispatched to the main queue */
            if (arg->main_only) [arg->main_only cs_touchValue:(long)i];
        }
    }
    CS_RELEASE(center);
    return NULL;
}

unsigned cs_lifecycle_stress(unsigned threads, unsigned iterations, void *mainthread_fixture) {
    pthread_t ids[32];
    cs_stress_arg args[32];
    if (threads > 32) threads = 32;
    cs_lifecycle_configure_zombies((size_t)256 << 20, 1u << 22);
    cs_name_screen_as_weak_timer_target();
    for (unsigned t = 0; t < threads; t++) {
        args[t].iterations = iterations;
        args[t].anomalies = 0;
        args[t].main_only = CS_OBJECT(mainthread_fixture);
        pthread_create(&ids[t], NULL, cs_stress_worker, &args[t]);
    }
    unsigned anomalies = 0;
    for (unsigned t = 0; t < threads; t++) {
        pthread_join(ids[t], NULL);
        anomalies += args[t].anomalies;
    }
    cs_restore_weak_timer_targets();
    cs_lifecycle_unconfigure_zombies();
    return anomalies;
}

/* Creates and frees `objects` zombie-class objects (zombies opted in with the given budget) and
 * returns the highest zombie byte total seen; *count_peak gets the count at the end. */
size_t cs_lifecycle_zombie_churn(size_t objects, size_t max_bytes, size_t max_count, size_t *count_after) {
    cs_lifecycle_configure_zombies(max_bytes, max_count);
    cs_zombie_reset_peak();
    size_t worst = 0;
    for (size_t i = 0; i < objects; i++) {
        CS_UNRETAINED CSLZombieVictim *victim = CS_SCENARIO_OWNED([[CSLZombieVictim alloc] init]);
        if (i % 7 == 0) victim->name = [[NSString alloc] initWithFormat:@"%zu", i];
        CS_SCENARIO_DISOWN(victim); /* before the byte count below, in both modes */
        size_t bytes = cs_zombie_bytes();
        if (bytes > worst) worst = bytes;
    }
    if (count_after) *count_after = cs_zombie_count();
    size_t peak = cs_zombie_peak_bytes();
    return peak > worst ? peak : worst;
}

size_t cs_lifecycle_free_victims(size_t objects) {
    for (size_t i = 0; i < objects; i++) {
        CS_UNRETAINED CSLZombieVictim *victim = CS_SCENARIO_OWNED([[CSLZombieVictim alloc] init]);
        CS_SCENARIO_DISOWN(victim);
    }
    return cs_zombie_count();
}

bool cs_lifecycle_message_latest_zombie(void) {
    CS_UNRETAINED CSLZombieVictim *victim = CS_SCENARIO_OWNED([[CSLZombieVictim alloc] init]);
    CS_SCENARIO_DISOWN(victim);
    return [CS_STALE_VICTIM(victim) count] == 0;
}

/* Every dealloc-hook path runs on a thread with no autorelease pool in place: a KVO observer and
 * a notification observer dying registered, a timer target released, a zombie-class object kept
 * and evicted. Set-up and clean-up have pools; the releases do not. */
static void *cs_dealloc_paths_worker(void *unused) {
    (void)unused;
    /* Owned by hand: each release below must happen exactly there, outside any pool. */
    CS_UNRETAINED CSLModel *model;
    CS_UNRETAINED CSLKVOObserver *observer;
    CS_UNRETAINED CSLObserver *listener;
    CS_UNRETAINED CSLTicker *target;
    CS_UNRETAINED NSTimer *timer;
    CS_UNRETAINED CSLZombieVictim *victims[3];
    @autoreleasepool {
        model = CS_SCENARIO_OWNED([[CSLModel alloc] init]);
        observer = CS_SCENARIO_OWNED([[CSLKVOObserver alloc] init]);
        [model addObserver:observer forKeyPath:@"name" options:NSKeyValueObservingOptionNew context:NULL];
        listener = CS_SCENARIO_OWNED([[CSLObserver alloc] init]);
        [[NSNotificationCenter defaultCenter] addObserver:listener selector:@selector(cs_ping:) name:@"CSLNoPool"
                                                   object:nil];
        cs_name_screen_as_weak_timer_target();
        target = CS_SCENARIO_OWNED([[CSLScreen alloc] init]);
        timer = CS_SCENARIO_OWNED(CS_RETAIN([NSTimer timerWithTimeInterval:1000 target:target
                                                                  selector:@selector(cs_tick:) userInfo:nil
                                                                   repeats:YES]));
        cs_lifecycle_configure_zombies(0, 2);
        for (int i = 0; i < 3; i++) victims[i] = CS_SCENARIO_OWNED([[CSLZombieVictim alloc] init]);
    }
    CS_SCENARIO_DISOWN(observer);
    CS_SCENARIO_DISOWN(listener);
    CS_SCENARIO_DISOWN(target);
    for (int i = 0; i < 3; i++) CS_SCENARIO_DISOWN(victims[i]); /* the third evicts the first */
    @autoreleasepool {
        [model setName:@"after"];
        [[NSNotificationCenter defaultCenter] postNotificationName:@"CSLNoPool" object:nil];
        [timer fire];
        CS_SCENARIO_DISOWN(timer);
        CS_SCENARIO_DISOWN(model);
        cs_lifecycle_unconfigure_zombies();
        cs_restore_weak_timer_targets();
    }
    return NULL;
}

void cs_lifecycle_dealloc_paths_without_pool(void) {
    pthread_t thread;
    pthread_create(&thread, NULL, cs_dealloc_paths_worker, NULL);
    pthread_join(thread, NULL);
}

#pragma mark - Tables

static const cs_scenario kScenarios[] = {
    {"kvo.addObserver.nilObserver", "kvo", "addObserver:forKeyPath:options:context:", false, kvo_add_nil_observer},
    {"kvo.addObserver.nilKeyPath", "kvo", "addObserver:forKeyPath:options:context:", false, kvo_add_nil_keypath},
    {"kvo.addObserver.emptyKeyPath", "kvo", "addObserver:forKeyPath:options:context:", false, kvo_add_empty_keypath},
    {"kvo.addObserver.duplicate", "kvo", "addObserver:forKeyPath:options:context:", false, kvo_add_duplicate},
    {"kvo.removeObserver.neverAdded", "kvo", "removeObserver:forKeyPath:", false, kvo_remove_never_added},
    {"kvo.class.addObserver", "kvo", "addObserver:forKeyPath:options:context:", true, kvo_class_add},
    {"kvo.class.addObserver.nilKeyPath", "kvo", "addObserver:forKeyPath:options:context:", true,
     kvo_class_add_nil_keypath},
    {"kvo.class.removeObserver.neverAdded", "kvo", "removeObserver:forKeyPath:", true, kvo_class_remove_never_added},
    {"kvo.removeObserver.twice", "kvo", "removeObserver:forKeyPath:", false, kvo_remove_twice},
    {"kvo.removeObserverContext.wrongContext", "kvo", "removeObserver:forKeyPath:context:", false,
     kvo_remove_context_wrong},
    {"kvo.removeObserverContext.neverAdded", "kvo", "removeObserver:forKeyPath:context:", false,
     kvo_remove_context_never_added},
    {"kvo.observed.deallocObserved", "kvo", "dealloc", false, kvo_observed_dealloc},
    {"kvo.observer.deallocRegistered", "kvo", "dealloc", false, kvo_observer_dealloc},
    {"kvo.observer.noCallback", "kvo", "observeValueForKeyPath:ofObject:change:context:", false,
     kvo_observer_without_callback},
    {"notification.observer.deallocRegistered", "notification", "dealloc", false, notification_observer_dealloc},
    {"notification.observer.deallocAfterPartialRemoval", "notification", "dealloc", false,
     notification_observer_dealloc_after_partial_removal},
    {"timer.repeating.targetReleased", "timer", "cs_tick:", false, timer_repeating_target_released},
    {"zombie.message.object", "zombie", "name", false, zombie_message_object},
    {"zombie.message.integer", "zombie", "count", false, zombie_message_integer},
    {"zombie.message.double", "zombie", "ratio", false, zombie_message_double},
    {"zombie.message.struct", "zombie", "range", false, zombie_message_struct},
    {"zombie.release.overRelease", "zombie", "release", false, zombie_release_over},
    {"mainthread.call.background", "mainthread", "cs_touch:", false, mainthread_call_background},
};
const cs_scenario_table cs_lifecycle_scenarios = CS_TABLE(kScenarios);

#pragma mark - Oracles

static void *oracle_notifications(void) {
    NSMutableString *out = [NSMutableString string];
    NSNotificationCenter *center = [[NSNotificationCenter alloc] init];
    /* Observers die at chosen points below (while registered or not): released by hand. */
    CS_UNRETAINED CSLObserver *a = CS_SCENARIO_OWNED([[CSLObserver alloc] init]);
    CS_UNRETAINED CSLObserver *b = CS_SCENARIO_OWNED([[CSLObserver alloc] init]);
    id sender = [[NSObject alloc] init];
    g_pings = 0;
    [center addObserver:a selector:@selector(cs_ping:) name:@"one" object:nil];
    [center addObserver:b selector:@selector(cs_ping:) name:@"one" object:sender];
    [center addObserver:b selector:@selector(cs_ping:) name:nil object:sender];
    [center postNotificationName:@"one" object:nil];
    [out appendFormat:@"one/nil %ld; ", (long)g_pings];
    [center postNotificationName:@"one" object:sender];
    [out appendFormat:@"one/sender %ld; ", (long)g_pings];
    [center postNotificationName:@"two" object:sender];
    [out appendFormat:@"two/sender %ld; ", (long)g_pings];
    [center removeObserver:b name:@"one" object:sender];
    [center postNotificationName:@"one" object:sender];
    [out appendFormat:@"after partial remove %ld; ", (long)g_pings];
    [center removeObserver:b];
    [center postNotificationName:@"one" object:sender];
    [out appendFormat:@"after remove b %ld; ", (long)g_pings];
    [center removeObserver:a];
    [center postNotificationName:@"one" object:nil];
    [out appendFormat:@"after remove a %ld; ", (long)g_pings];
    /* An observer that removes itself before dying is left alone. */
    [center addObserver:a selector:@selector(cs_ping:) name:@"three" object:nil];
    [center removeObserver:a];
    /* Partial removals follow the center's matching: a registration for any name survives a
     * removal by name, one for any sender a removal by sender; an observer whose partial
     * removals ended every registration dies without an incident. */
    CS_UNRETAINED CSLObserver *c = CS_SCENARIO_OWNED([[CSLObserver alloc] init]);
    [center addObserver:c selector:@selector(cs_ping:) name:nil object:sender];
    [center addObserver:c selector:@selector(cs_ping:) name:@"four" object:nil];
    [center addObserver:c selector:@selector(cs_ping:) name:@"five" object:sender];
    [center removeObserver:c name:@"four" object:sender];
    [center postNotificationName:@"four" object:sender];
    [out appendFormat:@"after removing four/sender %ld; ", (long)g_pings];
    [center removeObserver:c name:@"four" object:nil];
    [center postNotificationName:@"four" object:nil];
    [out appendFormat:@"after removing four/nil %ld; ", (long)g_pings];
    [center removeObserver:c name:nil object:sender];
    [center postNotificationName:@"five" object:sender];
    [out appendFormat:@"after removing nil/sender %ld; ", (long)g_pings];
    CS_SCENARIO_DISOWN(c);
    [center postNotificationName:@"five" object:sender];
    CS_SCENARIO_DISOWN(a);
    CS_SCENARIO_DISOWN(b);
    [center postNotificationName:@"three" object:nil];
    [out appendFormat:@"after dealloc %ld", (long)g_pings];
    CS_RELEASE(sender);
    CS_RELEASE(center);
    return cs_autoreleased_pointer(out);
}

static BOOL cs_ticker_done(void *ticker) {
    CS_UNRETAINED CSLTicker *t = CS_OBJECT(ticker);
    return t->ticks >= t->stop_after;
}

static void *oracle_kvo(void) {
    NSMutableString *out = [NSMutableString string];
    CSLModel *model = [[CSLModel alloc] init];
    CSLModel *child = [[CSLModel alloc] init];
    [model setChild:child];
    CSLKVOObserver *a = [[CSLKVOObserver alloc] init];
    CSLKVOObserver *b = [[CSLKVOObserver alloc] init];
    a->log = [[NSMutableString alloc] init];
    b->log = [[NSMutableString alloc] init];
    NSKeyValueObservingOptions all = NSKeyValueObservingOptionNew | NSKeyValueObservingOptionOld;
    /* Options: new+old, initial, prior. */
    [model addObserver:a forKeyPath:@"name" options:all context:(void *)1];
    [model addObserver:b forKeyPath:@"count" options:NSKeyValueObservingOptionInitial | NSKeyValueObservingOptionNew
               context:(void *)2];
    [model setName:@"one"];
    [model setCount:5];
    [model addObserver:b forKeyPath:@"name" options:NSKeyValueObservingOptionPrior | all context:(void *)3];
    [model setName:@"two"];
    [out appendFormat:@"options: a{%@} b{%@} | ", a->log, b->log];
    [a->log setString:@""];
    [b->log setString:@""];
    /* Several observers, removal of one. */
    [model removeObserver:b forKeyPath:@"name"];
    [model setName:@"three"];
    [out appendFormat:@"after removing b: a{%@} b{%@} | ", a->log, b->log];
    [a->log setString:@""];
    [b->log setString:@""];
    /* Nested key path, dependent key. */
    [model addObserver:b forKeyPath:@"child.name" options:all context:(void *)4];
    [model addObserver:b forKeyPath:@"fullName" options:NSKeyValueObservingOptionNew context:(void *)5];
    [child setName:@"kid"];
    CSLModel *other = [[CSLModel alloc] init];
    [other setName:@"other kid"];
    [model setChild:other];
    [model setName:@"four"];
    [out appendFormat:@"nested/dependent: b{%@} | ", b->log];
    [b->log setString:@""];
    [model removeObserver:b forKeyPath:@"child.name"];
    [model removeObserver:b forKeyPath:@"fullName"];
    [model removeObserver:b forKeyPath:@"count"];
    [other setName:@"quiet"];
    [model setCount:6];
    /* Several contexts on one key path, removed with -removeObserver:forKeyPath:. */
    [model addObserver:b forKeyPath:@"count" options:NSKeyValueObservingOptionNew context:(void *)6];
    [model setCount:7];
    [model removeObserver:b forKeyPath:@"count"];
    [model setCount:8];
    [out appendFormat:@"one context again: b{%@} | ", b->log];
    [b->log setString:@""];
    /* Same observer, same key path, a second context: GNUstep replaces the registration (new
     * context and options, one removal ends it), Apple keeps both. */
    [model addObserver:b forKeyPath:@"count" options:NSKeyValueObservingOptionNew context:(void *)7];
    [model addObserver:b forKeyPath:@"count" options:NSKeyValueObservingOptionNew | NSKeyValueObservingOptionOld
               context:(void *)8];
    [model setCount:9];
    [model removeObserver:b forKeyPath:@"count"];
    [model setCount:10];
#if defined(__APPLE__)
    [model removeObserver:b forKeyPath:@"count"];
#endif
    [model setCount:11];
    [out appendFormat:@"two contexts: b{%@} | ", b->log];
    [b->log setString:@""];
    [model removeObserver:a forKeyPath:@"name"];
    [model setName:@"five"];
    [out appendFormat:@"end: a{%@} b{%@} hits a=%d b=%d", a->log, b->log, a->hits, b->hits];
    CS_RELEASE(a);
    CS_RELEASE(b);
    CS_RELEASE(model);
    CS_RELEASE(child);
    CS_RELEASE(other);
    return cs_autoreleased_pointer(out);
}

/* A ticker that logs each tick and invalidates its timer at tick `stop_after`. */
static CSLTicker *cs_logging_ticker(int stop_after) NS_RETURNS_RETAINED;
static CSLTicker *cs_logging_ticker(int stop_after) {
    CSLTicker *ticker = [[CSLTicker alloc] init];
    ticker->log = [[NSMutableString alloc] init];
    ticker->stop_after = stop_after;
    return ticker;
}

/* A timer made with timerWithTimeInterval: and added to the current run loop by hand (retained:
 * GNUstep's run loop frees an invalidated timer it owned alone). */
static NSTimer *cs_added_timer(CSLTicker *ticker, id userInfo, BOOL repeats) NS_RETURNS_RETAINED;
static NSTimer *cs_added_timer(CSLTicker *ticker, id userInfo, BOOL repeats) {
    NSTimer *timer = CS_RETAIN([NSTimer timerWithTimeInterval:0.005 target:ticker selector:@selector(cs_tick:)
                                            userInfo:userInfo repeats:repeats]);
    [[NSRunLoop currentRunLoop] addTimer:timer forMode:NSDefaultRunLoopMode];
    return timer;
}

static BOOL cs_ticks_reached_one(void *ticks) {
    return *(int *)ticks >= 1;
}

static void *oracle_timers(void) {
    NSMutableString *out = [NSMutableString string];
    /* Repeating timer: the selector gets the real timer and its userInfo; the target stops it. */
    CSLTicker *ticker = cs_logging_ticker(3);
    NSTimer *timer = CS_RETAIN([NSTimer scheduledTimerWithTimeInterval:0.005 target:ticker selector:@selector(cs_tick:)
                                                     userInfo:@"info" repeats:YES]);
    [out appendFormat:@"repeating valid=%d interval=%.3f userInfo=%@; ", [timer isValid], [timer timeInterval],
                      [timer userInfo]];
    cs_spin_until(cs_ticker_done, CS_POINTER(ticker), 5.0);
    [out appendFormat:@"%@ valid=%d | ", ticker->log, [timer isValid]];
    CS_RELEASE(ticker);
    CS_RELEASE(timer);
    /* Repeating timer made with timerWithTimeInterval: and added to the run loop by hand. */
    ticker = cs_logging_ticker(2);
    timer = cs_added_timer(ticker, @"manual", YES);
    cs_spin_until(cs_ticker_done, CS_POINTER(ticker), 5.0);
    [out appendFormat:@"manual repeating %@ valid=%d | ", ticker->log, [timer isValid]];
    CS_RELEASE(ticker);
    CS_RELEASE(timer);
    /* One-shot timer: retains its target until it fired. Seen without -retainCount: the oracle
     * gives up its own reference first, so the target lives on only if the timer holds it; a
     * timer left with a freed target is invalidated before it could fire. */
    BOOL one_shot_dealloced = NO;
    int one_shot_ticks = 0;
    CS_UNRETAINED CSLTicker *one_shot = CS_SCENARIO_OWNED(cs_logging_ticker(1));
    one_shot->dealloced = &one_shot_dealloced;
    one_shot->ticks_out = &one_shot_ticks;
    NSMutableString *one_shot_log = CS_RETAIN(one_shot->log);
    timer = cs_added_timer(one_shot, @"once", NO);
    CS_SCENARIO_DISOWN(one_shot);
    BOOL retained = !one_shot_dealloced;
    if (!retained) [timer invalidate];
    cs_spin_until(cs_ticks_reached_one, &one_shot_ticks, 5.0);
    [out appendFormat:@"one-shot retained=%d %@ | ", retained, one_shot_log];
    CS_RELEASE(one_shot_log);
    CS_RELEASE(timer);
    timer = nil;
    if (!one_shot_dealloced) { /* still alive (the run loop may hold the timer): forget this frame */
        one_shot->dealloced = NULL;
        one_shot->ticks_out = NULL;
    }
    /* A poller whose only owner is its repeating timer (legal: NSTimer retains its target) fires
     * until it invalidates its timer at tick 3; only then is it freed. Each constructor. */
    for (int form = 0; form < 3; form++) {
        BOOL dealloced = NO;
        int ticks = 0;
        CS_UNRETAINED CSLTicker *poller = CS_SCENARIO_OWNED([[CSLTicker alloc] init]);
        poller->stop_after = 3;
        poller->dealloced = &dealloced;
        poller->ticks_out = &ticks;
        NSTimer *owner;
        if (form == 0) {
            owner = [NSTimer scheduledTimerWithTimeInterval:0.005 target:poller selector:@selector(cs_tick:)
                                                   userInfo:nil repeats:YES];
        } else {
            owner = form == 1 ? [NSTimer timerWithTimeInterval:0.005 target:poller selector:@selector(cs_tick:)
                                                      userInfo:nil repeats:YES]
                              : CS_AUTORELEASE([[NSTimer alloc] initWithFireDate:[NSDate dateWithTimeIntervalSinceNow:0.005]
                                                          interval:0.005 target:poller selector:@selector(cs_tick:)
                                                          userInfo:nil repeats:YES]);
            [[NSRunLoop currentRunLoop] addTimer:owner forMode:NSDefaultRunLoopMode];
        }
        CS_SCENARIO_DISOWN(poller); /* the run loop's timer is now the poller's only owner */
        cs_spin_until(cs_flag_set, &dealloced, 5.0);
        [out appendFormat:@"sole-owner poller (%s) ticks=%d dealloced=%d | ",
                          form == 0 ? "scheduled" : form == 1 ? "timerWith" : "initWithFireDate", ticks, dealloced];
        if (!dealloced) { /* still alive: it must not point at this stack frame any more */
            poller->dealloced = NULL;
            poller->ticks_out = NULL;
        }
    }
    /* A forwarding NSObject and an NSProxy as targets keep firing. */
    CSLForwarder *forwarder = [[CSLForwarder alloc] init];
    ticker = [[CSLTicker alloc] init];
    ticker->stop_after = 2;
    forwarder->inner = ticker;
    timer = CS_RETAIN([NSTimer scheduledTimerWithTimeInterval:0.005 target:forwarder selector:@selector(cs_tick:)
                                            userInfo:nil repeats:YES]);
    cs_spin_until(cs_ticker_done, CS_POINTER(ticker), 5.0);
    [out appendFormat:@"forwarder ticks=%d valid=%d | ", ticker->ticks, [timer isValid]];
    CS_RELEASE(forwarder);
    CS_RELEASE(timer);
    CSLProxy *proxy = [CSLProxy alloc];
    ticker = [[CSLTicker alloc] init];
    ticker->stop_after = 2;
    proxy->target = ticker;
    timer = CS_RETAIN([NSTimer scheduledTimerWithTimeInterval:0.005 target:proxy selector:@selector(cs_tick:) userInfo:nil
                                             repeats:YES]);
    cs_spin_until(cs_ticker_done, CS_POINTER(ticker), 5.0);
    [out appendFormat:@"proxy ticks=%d valid=%d", ticker->ticks, [timer isValid]];
    CS_RELEASE(proxy);
    CS_RELEASE(timer);
    return cs_autoreleased_pointer(out);
}

static const cs_oracle kOracles[] = {
    {"KVO options, nested and dependent key paths, several observers", oracle_kvo},
    {"NSNotificationCenter addObserver:selector:name:object:", oracle_notifications},
    {"NSTimer repeating and one-shot", oracle_timers},
};
const cs_oracle_table cs_lifecycle_oracles = CS_TABLE(kOracles);

#pragma mark - Bench

static volatile uintptr_t g_sink;

/* Allocation and dealloc of a plain (never zombified) class: the dealloc hook's cost. */
static uint64_t bench_dealloc_plain(uint64_t iterations, bool guarded) {
    (void)guarded;
    Class cls = [CSLFiller class];
    uint64_t start = cs_bench_now();
    for (uint64_t i = 0; i < iterations; i++) {
        id object = [[cls alloc] init];
        g_sink = (uintptr_t)object;
        CS_RELEASE(object);
    }
    return cs_bench_now() - start;
}

/* Dealloc of a class that is not zombified while zombies are opted in for another class: the
 * keeper's per-class verdict is on the path. */
static uint64_t bench_dealloc_with_zombies(uint64_t iterations, bool guarded) {
    if (guarded) cs_lifecycle_configure_zombies(0, 0);
    uint64_t elapsed = bench_dealloc_plain(iterations, guarded);
    if (guarded) cs_lifecycle_unconfigure_zombies();
    return elapsed;
}

/* The worst zombie accounting seen over all guarded churn rounds (bench_zombie_churn_note). */
static size_t g_churn_peak_bytes, g_churn_zombies_at_end;
static uint64_t g_churn_objects;

/* Zombie-class churn under the default budget (2 MiB): baseline frees, guarded keeps zombies and
 * evicts the oldest. The peak accounting goes to the case's note (never above the budget). */
static uint64_t bench_zombie_churn(uint64_t iterations, bool guarded) {
    if (guarded) {
        cs_lifecycle_configure_zombies(0, 0);
        cs_zombie_reset_peak();
    }
    uint64_t start = cs_bench_now();
    for (uint64_t i = 0; i < iterations; i++) {
        CSLZombieVictim *victim = [[CSLZombieVictim alloc] init];
        g_sink = (uintptr_t)victim;
        CS_RELEASE(victim);
    }
    uint64_t elapsed = cs_bench_now() - start;
    if (guarded) {
        if (cs_zombie_peak_bytes() >= g_churn_peak_bytes) {
            g_churn_peak_bytes = cs_zombie_peak_bytes();
            g_churn_zombies_at_end = cs_zombie_count();
            g_churn_objects = iterations;
        }
        cs_lifecycle_unconfigure_zombies();
    }
    return elapsed;
}

/* One KVO change delivered to one observer: directly (baseline) or through the guard's entry. */
static uint64_t bench_kvo_notify(uint64_t iterations, bool guarded) {
    (void)guarded;
    uint64_t elapsed;
    @autoreleasepool {
        CSLModel *model = [[CSLModel alloc] init];
        CSLKVOObserver *observer = [[CSLKVOObserver alloc] init];
        [model addObserver:observer forKeyPath:@"count" options:NSKeyValueObservingOptionNew context:NULL];
        uint64_t start = cs_bench_now();
        for (uint64_t i = 0; i < iterations; i++) {
            @autoreleasepool {
                [model setCount:(long)i];
            }
        }
        elapsed = cs_bench_now() - start;
        [model removeObserver:observer forKeyPath:@"count"];
        g_sink = (uintptr_t)observer->hits;
        CS_RELEASE(observer);
        CS_RELEASE(model);
    }
    return elapsed;
}

static void bench_zombie_churn_note(char *buffer, size_t capacity) {
    snprintf(buffer, capacity, "peak %zu bytes kept (budget 2097152) over %llu objects, %zu zombies at the end",
             g_churn_peak_bytes, (unsigned long long)g_churn_objects, g_churn_zombies_at_end);
}

static const cs_bench_case kBenches[] = {
    {"dealloc of a plain object (dealloc hook)", bench_dealloc_plain},
    {"dealloc, non-zombie class, zombies opted in", bench_dealloc_with_zombies},
    {"zombie-class churn (default 2 MiB budget)", bench_zombie_churn, bench_zombie_churn_note},
    {"KVO change to one observer (entry vs direct)", bench_kvo_notify},
};
const cs_bench_table cs_lifecycle_benches = CS_TABLE(kBenches);
