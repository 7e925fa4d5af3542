/*
 * TestSupport_HotPath.m — fixtures for the fast hooks (CS_DEFINE_FAST_HOOK_1) and the receiver-
 * measure cache's field form. White-box: includes the guards' private header.
 */
#import "CSScenarioSupport.h"
#import "../../Sources/_CrashShieldRuntime/Guards/CSReceiverMeasure.h"
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
        /* Legal first: the receiver's class is cached, so the misuse fails the fast predicate's
         * field check itself and reaches the full body from the slot. */
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

/* performSelector: after the selector guard's per-thread memo of the last answered pair. */
@interface CSHotPerformer : NSObject
- (id)cs_hotKnown;
+ (id)cs_hotClassKnown;
@end

static id cs_hot_resolved(CS_UNRETAINED id self, SEL _cmd) {
    (void)self;
    (void)_cmd;
    return @"resolved";
}

@implementation CSHotPerformer
- (id)cs_hotKnown {
    return @"known";
}
+ (id)cs_hotClassKnown {
    return @"classKnown";
}
@end

/* Has its own resolver, so the selector guard leaves its unknown selectors alone; used for legal
 * calls only. */
@interface CSHotResolver : NSObject
@end

@implementation CSHotResolver
/* Answers `cs_hotResolved` only when first asked: its first performSelector: finds no method in the
 * dispatch table. */
+ (BOOL)resolveInstanceMethod:(SEL)sel {
    if (strcmp(sel_getName(sel), "cs_hotResolved") == 0) {
        class_addMethod(self, sel, (IMP)cs_hot_resolved, "@@:");
        return YES;
    }
    return [super resolveInstanceMethod:sel];
}
@end

unsigned cs_test_perform_after_memo(void) {
    unsigned ok = 0;
    @autoreleasepool {
        CSHotPerformer *object = CS_AUTORELEASE([[CSHotPerformer alloc] init]);
        SEL known = @selector(cs_hotKnown);
        SEL missing = NSSelectorFromString(@"cs_hotNeverDeclared");
        /* The same receiver class, legal then unknown then legal: only the legal pair is remembered. */
        if ([[object performSelector:known] isEqual:@"known"]) ok |= 1u << 0;
        if ([object performSelector:missing] == nil) ok |= 1u << 1;
        if ([[object performSelector:known] isEqual:@"known"]) ok |= 1u << 2;
        if ([object performSelector:missing withObject:@"x"] == nil) ok |= 1u << 3;
        Class cls = [CSHotPerformer class];
        if ([[cls performSelector:@selector(cs_hotClassKnown)] isEqual:@"classKnown"]) ok |= 1u << 4;
        if ([cls performSelector:missing] == nil) ok |= 1u << 5;
        /* A method added by the resolver during the call's own lookup: the legal result. */
        id resolver = CS_AUTORELEASE([[CSHotResolver alloc] init]);
        if ([[resolver performSelector:NSSelectorFromString(@"cs_hotResolved")] isEqual:@"resolved"]) ok |= 1u << 6;
    }
    return ok;
}

unsigned cs_test_perform_legal_only(void) {
    unsigned ok = 0;
    @autoreleasepool {
        CSHotPerformer *object = CS_AUTORELEASE([[CSHotPerformer alloc] init]);
        if ([[object performSelector:@selector(cs_hotKnown)] isEqual:@"known"]) ok |= 1u << 0;
        id resolver = CS_AUTORELEASE([[CSHotResolver alloc] init]);
        if ([[resolver performSelector:NSSelectorFromString(@"cs_hotResolved")] isEqual:@"resolved"]) ok |= 1u << 6;
        if ([[[CSHotPerformer class] performSelector:@selector(cs_hotClassKnown)] isEqual:@"classKnown"]) ok |= 1u << 4;
    }
    return ok;
}

unsigned cs_test_measure_cache_entry(void) {
    static cs_measure_cache cache = {.ready = 1};
    unsigned ok = 0;
    @autoreleasepool {
        NSArray *array = [NSArray arrayWithObjects:@"a", @"b", @"c", nil];
        Class cls = object_getClass(array);
        NSUInteger measured = 0, field = 0;
        if (cs_measure(&cache, @selector(count), array, &measured) && measured == 3) ok |= 1u << 0;
        const cs_measure_entry *home = &cache.entries[cs_measure_bucket(cls)];
        if (home->cls == (uintptr_t)cls) ok |= 1u << 1;
        if (home->field_mask != 0) ok |= 1u << 2;
        if (cs_measure_field(&cache, array, &field) && field == 3) ok |= 1u << 3;
        if (cs_measure_find(&cache, cls) == home) ok |= 1u << 4;
    }
    return ok;
}
