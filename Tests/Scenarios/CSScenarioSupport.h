/*
 * CSScenarioSupport.h — shared by the scenario and oracle files of this target.
 *
 * Ownership follows the runtime's dual MRC/ARC rules (CSObjC.h, imported here for its macros;
 * docs/ARCHITECTURE.md, "Ownership: MRC and ARC"). A misuse scenario often needs what ARC cannot
 * write directly: an object whose last reference ends at a chosen point while a pointer to it
 * stays (a dead observer, a zombie), or one -release too many; and it hands objects across C
 * boundaries (oracle results, fixtures held by Swift). The macros and helpers below express these
 * in both modes with the same meaning.
 */
#import <Foundation/Foundation.h>
#import "../../Sources/_CrashShieldRuntime/Backend/CSObjC.h"
#include "cs_scenarios.h"
#include <time.h>

/** One table per guard file; Scenarios.m lists the tables in order. */
typedef struct {
    const cs_scenario *items;
    size_t count;
} cs_scenario_table;

typedef struct {
    const cs_oracle *items;
    size_t count;
} cs_oracle_table;

typedef struct {
    const cs_bench_case *items;
    size_t count;
} cs_bench_table;

#define CS_TABLE(array) {array, sizeof(array) / sizeof((array)[0])}

/*
 * CS_SCENARIO_OWNED(expr) / CS_SCENARIO_DISOWN(x): a +1 object held by hand in a CS_UNRETAINED
 * variable (or C memory), released exactly where the scenario says, the variable still pointing at
 * it afterwards (an over-release beyond that goes through cs_send_release). Under MRC these are the plain
 * value and -release; under ARC a bridged retain keeps the +1 the strong temporary would drop,
 * and a bridged transfer gives it up, so the object dies at the same point in both modes.
 */
#if __has_feature(objc_arc)
#define CS_SCENARIO_OWNED(expr) ((__bridge id)(__bridge_retained void *)(expr))
#define CS_SCENARIO_DISOWN(x) ((void)(__bridge_transfer id)(__bridge void *)(x))
#else
#define CS_SCENARIO_OWNED(expr) (expr)
#define CS_SCENARIO_DISOWN(x) [(x) release]
#endif

/** Sends -release as a message to `object`, live or not: the over-release misuse, reaching
 *  whatever the receiver's class answers (a zombie's class included). ARC forbids the message
 *  syntax and objc_release may bypass the class's -release, so under ARC the runtime's lookup
 *  sends the same message. */
static inline void cs_send_release(void *object) {
#if __has_feature(objc_arc)
    SEL selector = sel_registerName("release");
    IMP release = class_getMethodImplementation(object_getClass(CS_OBJECT(object)), selector);
    ((void (*)(void *, SEL))release)(object, selector);
#else
    [(id)object release];
#endif
}

/** An object handed across a C boundary (`void *`) at +0, in the current autorelease pool: the
 *  oracles' contract. Under MRC the callers pass objects that are autoreleased already; under ARC
 *  the __autoreleasing variable puts the object in the pool, which a strong local would not. */
static inline void *cs_autoreleased_pointer(id object) {
    __autoreleasing id pooled = object;
    return CS_POINTER(pooled);
}

/** An autoreleased object for a CS_UNRETAINED slot (a C struct field, a borrowed variable): the
 *  current pool owns it in both modes. Assigning a call's result to an unretained slot directly
 *  is not enough under ARC, which may take the result back from the pool and free it at once. */
#define CS_POOLED(expr) CS_OBJECT(cs_autoreleased_pointer(expr))

/** Hides a value from the compiler so a literal misuse is not diagnosed or folded away. Live
 *  objects or nil only: under ARC the result is retained; a dangling pointer goes through
 *  cs_opaque_pointer. */
static inline id cs_opaque(id value) {
    __asm__ volatile("" : "+r"(value));
    return value;
}
static inline void *cs_opaque_pointer(void *value) {
    __asm__ volatile("" : "+r"(value));
    return value;
}
static inline NSUInteger cs_opaque_index(NSUInteger value) {
    __asm__ volatile("" : "+r"(value));
    return value;
}

#if !defined(__APPLE__)
/* Declared by Apple; GNUstep 1.28 neither declares nor implements it (the KVO guard adds it). */
@interface NSObject (CSRemoveObserverWithContext)
- (void)removeObserver:(id)observer forKeyPath:(NSString *)keyPath context:(void *)context;
@end
#endif

/** Formats any object (or nil) for an oracle line. */
static inline NSString *cs_describe(id value) {
    if (value == nil) return @"nil";
    return [NSString stringWithFormat:@"%@<%@>", [value description], NSStringFromClass([value class])];
}

/** Monotonic nanoseconds, for bench cases. */
static inline uint64_t cs_bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/** CPU nanoseconds of the calling thread, for bench cases whose work all runs on that thread (the
 *  hot calls): time the thread spends preempted by other processes is not counted, so a loaded
 *  machine does not inflate one side of a baseline/guarded ratio. Work done for the case on other
 *  threads (incident delivery) is not counted either: such cases use cs_bench_now. */
static inline uint64_t cs_bench_thread_cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/** The storage primitives of an NSMutableArray subclass that keeps its elements in its own
 *  `__strong NSMutableArray *_items` ivar: -init, -initWithCapacity: (the capacity is ignored),
 *  -dealloc, -count, -objectAtIndex: and -removeObjectAtIndex:, each forwarding to `_items`.
 *  Expanded inside an @implementation, so every method is the class's own (class filters and the
 *  guards' owner checks see the same classes as with the methods written out). The class writes
 *  -insertObject:atIndex: and -replaceObjectAtIndex:withObject: itself: what it stores is its
 *  own contract. */
#define CS_ITEMS_ARRAY_PRIMITIVES                                                                 \
    -(id)init {                                                                                   \
        self = [super init];                                                                      \
        if (self) _items = [[NSMutableArray alloc] init];                                         \
        return self;                                                                              \
    }                                                                                             \
    -(id)initWithCapacity : (NSUInteger)capacity {                                                \
        (void)capacity;                                                                           \
        return [self init];                                                                       \
    }                                                                                             \
    -(void)dealloc {                                                                              \
        CS_RELEASE(_items);                                                                       \
        CS_SUPER_DEALLOC();                                                                       \
    }                                                                                             \
    -(NSUInteger)count {                                                                          \
        return [_items count];                                                                    \
    }                                                                                             \
    -(id)objectAtIndex : (NSUInteger)index {                                                      \
        return [_items objectAtIndex:index];                                                      \
    }                                                                                             \
    -(void)removeObjectAtIndex : (NSUInteger)index {                                              \
        [_items removeObjectAtIndex:index];                                                       \
    }
