/*
 * Bench_Core.m — the hot calls and the misuse-versus-exception case for `shield bench`.
 *
 * Every loop feeds its results into a volatile sink so the compiler cannot drop the calls, and
 * uses values hidden with cs_opaque_index so the index is not a compile-time constant. The hot
 * calls run on this thread only and are timed with its CPU clock (cs_bench_thread_cpu_now), so
 * other processes on a shared machine do not skew their ratios; the misuse case is timed on the
 * monotonic clock, as its incidents are delivered on another thread.
 */
#import "CSScenarioSupport.h"
#include "cs_runtime.h"

static volatile uintptr_t g_sink;

static uint64_t bench_array_objectAtIndex(uint64_t iterations, bool guarded) {
    (void)guarded;
    uint64_t elapsed;
    @autoreleasepool {
        NSArray *array = [NSArray arrayWithObjects:@"a", @"b", @"c", @"d", nil];
        NSUInteger mask = cs_opaque_index(3);
        uintptr_t acc = 0;
        uint64_t start = cs_bench_thread_cpu_now();
        for (uint64_t i = 0; i < iterations; i++) acc += (uintptr_t)[array objectAtIndex:(NSUInteger)i & mask];
        elapsed = cs_bench_thread_cpu_now() - start;
        g_sink = acc;
    }
    return elapsed;
}

/* The same loop with the container guard's policy off: what remains is the hook's fixed cost
 * (the slot function and one policy load), without the bounds check and its -count message. */
static uint64_t bench_array_objectAtIndex_policy_off(uint64_t iterations, bool guarded) {
    if (guarded) cs_guard_set_policy("container", CS_POLICY_OFF);
    uint64_t elapsed = bench_array_objectAtIndex(iterations, guarded);
    if (guarded) cs_guard_set_policy("container", CS_POLICY_NEUTRALIZE);
    return elapsed;
}

static uint64_t bench_dictionary_objectForKey(uint64_t iterations, bool guarded) {
    (void)guarded;
    uint64_t elapsed;
    @autoreleasepool {
        NSDictionary *dictionary = [NSDictionary dictionaryWithObjectsAndKeys:@"1", @"a", @"2", @"b", nil];
        id key = cs_opaque(@"b");
        uintptr_t acc = 0;
        uint64_t start = cs_bench_thread_cpu_now();
        for (uint64_t i = 0; i < iterations; i++) acc += (uintptr_t)[dictionary objectForKey:key];
        elapsed = cs_bench_thread_cpu_now() - start;
        g_sink = acc;
    }
    return elapsed;
}

static uint64_t bench_mdictionary_setObjectForKey(uint64_t iterations, bool guarded) {
    (void)guarded;
    uint64_t elapsed;
    @autoreleasepool {
        NSMutableDictionary *dictionary = [NSMutableDictionary dictionary];
        NSArray *keys = [NSArray arrayWithObjects:@"a", @"b", @"c", @"d", nil];
        CS_UNRETAINED id k[4]; /* borrowed from `keys` */
        for (int i = 0; i < 4; i++) k[i] = [keys objectAtIndex:i];
        id value = cs_opaque(@"v");
        uint64_t start = cs_bench_thread_cpu_now();
        for (uint64_t i = 0; i < iterations; i++) [dictionary setObject:value forKey:k[i & 3]];
        elapsed = cs_bench_thread_cpu_now() - start;
        g_sink = [dictionary count];
    }
    return elapsed;
}

static uint64_t bench_marray_addObject(uint64_t iterations, bool guarded) {
    (void)guarded;
    uint64_t elapsed = 0;
    @autoreleasepool {
        NSMutableArray *array = [NSMutableArray arrayWithCapacity:4096];
        id value = cs_opaque(@"v");
        uint64_t done = 0;
        while (done < iterations) {
            uint64_t batch = iterations - done < 4096 ? iterations - done : 4096;
            uint64_t start = cs_bench_thread_cpu_now();
            for (uint64_t i = 0; i < batch; i++) [array addObject:value];
            elapsed += cs_bench_thread_cpu_now() - start;
            [array removeAllObjects];
            done += batch;
        }
        g_sink = [array count];
    }
    return elapsed;
}

static uint64_t bench_string_characterAtIndex(uint64_t iterations, bool guarded) {
    (void)guarded;
    uint64_t elapsed;
    @autoreleasepool {
        NSString *text = [NSString stringWithFormat:@"%s", "abcdefgh"];
        NSUInteger mask = cs_opaque_index(7);
        uintptr_t acc = 0;
        uint64_t start = cs_bench_thread_cpu_now();
        for (uint64_t i = 0; i < iterations; i++) acc += [text characterAtIndex:(NSUInteger)i & mask];
        elapsed = cs_bench_thread_cpu_now() - start;
        g_sink = acc;
    }
    return elapsed;
}

static uint64_t bench_string_substringWithRange(uint64_t iterations, bool guarded) {
    (void)guarded;
    uint64_t elapsed = 0;
    NSString *text = [[NSString alloc] initWithFormat:@"%s", "abcdefghijklmnop"];
    NSUInteger mask = cs_opaque_index(7);
    uint64_t done = 0;
    while (done < iterations) {
        uint64_t batch = iterations - done < 1024 ? iterations - done : 1024;
        @autoreleasepool {
            uintptr_t acc = 0;
            uint64_t start = cs_bench_thread_cpu_now();
            for (uint64_t i = 0; i < batch; i++) acc += (uintptr_t)[text substringWithRange:NSMakeRange((NSUInteger)i & mask, 4)];
            elapsed += cs_bench_thread_cpu_now() - start;
            g_sink = acc;
        }
        done += batch;
    }
    CS_RELEASE(text);
    return elapsed;
}

/* Baseline: the exception GNUstep throws, caught. Guarded: the neutralised misuse, incident
 * recorded and deduplicated by fingerprint after the first. */
static uint64_t bench_misuse_vs_exception(uint64_t iterations, bool guarded) {
    uint64_t elapsed;
    @autoreleasepool {
        NSArray *array = [NSArray arrayWithObjects:@"a", @"b", nil];
        NSUInteger index = cs_opaque_index(5);
        uintptr_t acc = 0;
        uint64_t start = cs_bench_now();
        for (uint64_t i = 0; i < iterations; i++) {
            if (guarded) {
                acc += (uintptr_t)[array objectAtIndex:index];
            } else {
                @autoreleasepool {
                    @try {
                        acc += (uintptr_t)[array objectAtIndex:index];
                    } @catch (NSException *exception) {
                        acc += 1;
                    }
                }
            }
        }
        elapsed = cs_bench_now() - start;
        g_sink = acc;
    }
    return elapsed;
}

static const cs_bench_case kBenches[] = {
    {"objectAtIndex:", bench_array_objectAtIndex},
    {"objectAtIndex: (policy off: the hook's fixed cost)", bench_array_objectAtIndex_policy_off},
    {"objectForKey:", bench_dictionary_objectForKey},
    {"setObject:forKey:", bench_mdictionary_setObjectForKey},
    {"addObject:", bench_marray_addObject},
    {"characterAtIndex:", bench_string_characterAtIndex},
    {"substringWithRange:", bench_string_substringWithRange},
    {"misuse.objectAtIndex.beyond vs exception", bench_misuse_vs_exception},
};
const cs_bench_table cs_core_benches = CS_TABLE(kBenches);
