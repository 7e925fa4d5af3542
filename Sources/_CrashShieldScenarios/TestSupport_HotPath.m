/*
 * TestSupport_HotPath.m — fixtures for the fast hooks (CS_DEFINE_FAST_HOOK_1) and the receiver-
 * measure cache's field form. White-box: includes the guards' private header.
 */
#import "CSScenarioSupport.h"
#import "../_CrashShieldRuntime/Guards/CSReceiverMeasure.h"
#include "cs_scenarios.h"

int cs_test_getter_field(const unsigned char *code, int32_t *offset) {
    uint8_t width = 0;
    if (!cs_measure_getter_field((IMP)(uintptr_t)code, offset, &width)) return 0;
    return width;
}

__attribute__((noinline)) uintptr_t cs_test_fast_hook_misuses(unsigned *neutralised) {
    unsigned n = 0;
    @autoreleasepool {
        NSArray *array = [NSArray arrayWithObjects:@"a", @"b", nil];
        NSString *text = [NSString stringWithFormat:@"%s", "abc"];
        NSUInteger beyond = cs_opaque_index(5);
        /* Legal first: the receiver's class is cached, so the misuse passes the fast predicate's
         * field read and reaches the full slot through its tail call. */
        if ([[array objectAtIndex:1] isEqual:@"b"] && [array objectAtIndex:beyond] == nil) n++;
        if ([[array objectAtIndexedSubscript:0] isEqual:@"a"] && [array objectAtIndexedSubscript:beyond] == nil) n++;
        if ([text characterAtIndex:2] == 'c' && [text characterAtIndex:beyond] == 0) n++;
        if ([[text substringWithRange:NSMakeRange(1, 2)] isEqual:@"bc"] &&
            [[text substringWithRange:NSMakeRange(1, beyond)] isEqual:@"bc"])
            n++;
    }
    *neutralised = n;
    return (uintptr_t)cs_test_fast_hook_misuses;
}
