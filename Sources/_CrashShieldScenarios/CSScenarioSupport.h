/* CSScenarioSupport.h — shared by the scenario and oracle files of this target. */
#import <Foundation/Foundation.h>
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

/** Hides a value from the compiler so a literal misuse is not diagnosed or folded away. */
static inline id cs_opaque(id value) {
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
