/*
 * Scenarios_Lifecycle.m — SPEC §2.6 to §2.10 misuse scenarios, legal-input oracles, bench cases
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
#include <sys/syscall.h>
#include <unistd.h>

bool cs_scenarios_is_main_thread(void) {
    return (pid_t)syscall(SYS_gettid) == getpid();
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
    NSMutableString *log;
}
- (void)cs_tick:(NSTimer *)timer;
@end
@implementation CSLTicker
- (void)cs_tick:(NSTimer *)timer {
    ticks++;
    if (log) [log appendFormat:@"tick %d arg=%@ userInfo=%@; ", ticks, [timer isKindOfClass:[NSTimer class]] ? @"timer" : @"other", [timer userInfo]];
    if (stop_after && ticks >= stop_after) [timer invalidate];
}
- (void)dealloc {
    if (dealloced) *dealloced = YES;
    [log release];
    [super dealloc];
}
@end

/** An NSObject that answers the timer selector only by forwarding to another object. */
@interface CSLForwarder : NSObject {
  @public
    id inner;
}
@end
@implementation CSLForwarder
- (id)forwardingTargetForSelector:(SEL)sel {
    (void)sel;
    return inner;
}
- (void)dealloc {
    [inner release];
    [super dealloc];
}
@end

/** A weak-proxy style NSProxy: forwards every message to its target (kept retained here). */
@interface CSLProxy : NSProxy {
  @public
    id target;
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
    [target release];
    [super dealloc];
}
@end

/** A class whose -cs_touch: must run on the main thread (SPEC §2.10, configured by the tests). */
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

#pragma mark - Notifications (SPEC §2.7)

/* The observer deallocates while registered; the center then posts to its freed memory (GNUstep
 * 1.28 swallows the exception that reaches a filler object there; valgrind shows the read). */
static bool notification_observer_dealloc(void) {
    NSNotificationCenter *center = [NSNotificationCenter defaultCenter];
    NSString *name = @"CSLifecycleEvent";
    CSLObserver *observer = [[CSLObserver alloc] init];
    [center addObserver:observer selector:@selector(cs_ping:) name:name object:nil];
    g_pings = 0;
    [observer release];
    NSMutableArray *fillers = [NSMutableArray array];
    for (int i = 0; i < 64; i++) [fillers addObject:[[[CSLFiller alloc] init] autorelease]];
    [center postNotificationName:name object:nil];
    [center postNotificationName:name object:nil];
    return g_pings == 0;
}

#pragma mark - Timers (SPEC §2.8)

static BOOL cs_flag_set(void *flag) {
    return *(BOOL *)flag;
}

/* The owner releases a repeating timer's target without invalidating the timer. Unguarded, the
 * timer keeps the target alive and keeps firing (a leak). Guarded, the target deallocates and
 * the next fire invalidates the timer. */
static bool timer_repeating_target_released(void) {
    BOOL dealloced = NO;
    CSLTicker *target = [[CSLTicker alloc] init];
    target->dealloced = &dealloced;
    NSTimer *timer = [[NSTimer scheduledTimerWithTimeInterval:0.01 target:target selector:@selector(cs_tick:)
                                                     userInfo:nil repeats:YES] retain];
    [target release];
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
    [timer release];
    return ok;
}

#pragma mark - Main-thread-only calls (SPEC §2.10)

static void *cs_background_touch(void *object) {
    @autoreleasepool {
        [(CSLMainThreadOnly *)object cs_touch:[NSNumber numberWithInt:7]];
    }
    return NULL;
}

static bool cs_main_touched(void *object) {
    return ((CSLMainThreadOnly *)object)->calls > 0;
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
    pthread_create(&thread, NULL, cs_background_touch, object);
    pthread_join(thread, NULL);
    cs_lifecycle_drain_main_queue(2.0, cs_main_touched, object);
    bool ok = object->calls == 1 && object->main_calls == 1 && object->last_argument == 7;
    [object release];
    return ok;
}

#pragma mark - Tables

static const cs_scenario kScenarios[] = {
    {"notification.observer.deallocRegistered", "notification", "dealloc", false, notification_observer_dealloc},
    {"timer.repeating.targetReleased", "timer", "cs_tick:", false, timer_repeating_target_released},
    {"mainthread.call.background", "mainthread", "cs_touch:", false, mainthread_call_background},
};
const cs_scenario_table cs_lifecycle_scenarios = CS_TABLE(kScenarios);

#pragma mark - Oracles

static void *oracle_notifications(void) {
    NSMutableString *out = [NSMutableString string];
    NSNotificationCenter *center = [[NSNotificationCenter alloc] init];
    CSLObserver *a = [[CSLObserver alloc] init];
    CSLObserver *b = [[CSLObserver alloc] init];
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
    [a release];
    [b release];
    [center postNotificationName:@"three" object:nil];
    [out appendFormat:@"after dealloc %ld", (long)g_pings];
    [sender release];
    [center release];
    return out;
}

static BOOL cs_ticker_done(void *ticker) {
    CSLTicker *t = ticker;
    return t->ticks >= t->stop_after;
}

static void *oracle_timers(void) {
    NSMutableString *out = [NSMutableString string];
    /* Repeating timer: the selector gets the real timer and its userInfo; the target stops it. */
    CSLTicker *ticker = [[CSLTicker alloc] init];
    ticker->log = [[NSMutableString alloc] init];
    ticker->stop_after = 3;
    NSTimer *timer = [NSTimer scheduledTimerWithTimeInterval:0.005 target:ticker selector:@selector(cs_tick:)
                                                    userInfo:@"info" repeats:YES];
    [out appendFormat:@"repeating valid=%d interval=%.3f userInfo=%@; ", [timer isValid], [timer timeInterval],
                      [timer userInfo]];
    cs_spin_until(cs_ticker_done, ticker, 5.0);
    [out appendFormat:@"%@ valid=%d | ", ticker->log, [timer isValid]];
    [ticker release];
    /* One-shot timer: retains its target until it fired. */
    ticker = [[CSLTicker alloc] init];
    ticker->log = [[NSMutableString alloc] init];
    ticker->stop_after = 1;
    timer = [NSTimer timerWithTimeInterval:0.005 target:ticker selector:@selector(cs_tick:) userInfo:@"once"
                                   repeats:NO];
    [[NSRunLoop currentRunLoop] addTimer:timer forMode:NSDefaultRunLoopMode];
    unsigned long before = (unsigned long)[ticker retainCount];
    cs_spin_until(cs_ticker_done, ticker, 5.0);
    [out appendFormat:@"one-shot retained=%d %@ | ", before > 1, ticker->log];
    [ticker release];
    /* A forwarding NSObject and an NSProxy as targets keep firing. */
    CSLForwarder *forwarder = [[CSLForwarder alloc] init];
    ticker = [[CSLTicker alloc] init];
    ticker->stop_after = 2;
    forwarder->inner = ticker;
    timer = [NSTimer scheduledTimerWithTimeInterval:0.005 target:forwarder selector:@selector(cs_tick:)
                                           userInfo:nil repeats:YES];
    cs_spin_until(cs_ticker_done, ticker, 5.0);
    [out appendFormat:@"forwarder ticks=%d valid=%d | ", ticker->ticks, [timer isValid]];
    [forwarder release];
    CSLProxy *proxy = [CSLProxy alloc];
    ticker = [[CSLTicker alloc] init];
    ticker->stop_after = 2;
    proxy->target = ticker;
    timer = [NSTimer scheduledTimerWithTimeInterval:0.005 target:proxy selector:@selector(cs_tick:) userInfo:nil
                                            repeats:YES];
    cs_spin_until(cs_ticker_done, ticker, 5.0);
    [out appendFormat:@"proxy ticks=%d valid=%d", ticker->ticks, [timer isValid]];
    [proxy release];
    return out;
}

static const cs_oracle kOracles[] = {
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
        [object release];
    }
    return cs_bench_now() - start;
}

static const cs_bench_case kBenches[] = {
    {"dealloc of a plain object (dealloc hook)", bench_dealloc_plain},
};
const cs_bench_table cs_lifecycle_benches = CS_TABLE(kBenches);
