/*
 * TestSupport_Wrappers.m — app subclasses whose legal calls pass through the system's wrappers
 * (see cs_wrapper_support.h). Unguarded none of these calls throws: GNUstep's NSArray
 * -objectAtIndexedSubscript: and -objectsAtIndexes: call -objectAtIndex:, NSMutableString's
 * -deleteCharactersInRange: and -insertString:atIndex: call -replaceCharactersInRange:withString:,
 * none of them checking bounds first.
 */
#import "CSScenarioSupport.h"
#include "cs_wrapper_support.h"
#include <string.h>

/* An array whose -objectAtIndex: wraps around: any index is legal. */
@interface CSScopeRingArray : NSArray {
    __strong NSArray *_items;
}
- (id)initWithItems:(NSArray *)items;
@end

@implementation CSScopeRingArray
- (id)initWithItems:(NSArray *)items {
    self = [super init];
    if (self) _items = [items copy];
    return self;
}
- (void)dealloc {
    CS_RELEASE(_items);
    CS_SUPER_DEALLOC();
}
- (NSUInteger)count {
    return [_items count];
}
- (id)objectAtIndex:(NSUInteger)index {
    NSUInteger count = [_items count];
    return count ? [_items objectAtIndex:index % count] : nil;
}
@end

/* The ring with a shorter -count of its own; -objectAtIndex: is the ring's. */
@interface CSScopeShortRingArray : CSScopeRingArray
@end

@implementation CSScopeShortRingArray
- (NSUInteger)count {
    return 2;
}
@end

/* A mutable string whose -replaceCharactersInRange:withString: clamps the range to its length. */
@interface CSScopeClampingString : NSMutableString {
    __strong NSMutableString *_base;
}
- (id)initWithBase:(NSString *)base;
@end

@implementation CSScopeClampingString
- (id)initWithBase:(NSString *)base {
    self = [super init];
    if (self) _base = [base mutableCopy];
    return self;
}
- (void)dealloc {
    CS_RELEASE(_base);
    CS_SUPER_DEALLOC();
}
- (NSUInteger)length {
    return [_base length];
}
- (unichar)characterAtIndex:(NSUInteger)index {
    return [_base characterAtIndex:index];
}
- (void)replaceCharactersInRange:(NSRange)range withString:(NSString *)string {
    NSUInteger length = [_base length];
    if (range.location > length) range.location = length;
    if (range.length > length - range.location) range.length = length - range.location;
    [_base replaceCharactersInRange:range withString:string ? string : @""];
}
- (NSString *)description {
    return [NSString stringWithString:_base];
}
@end

/* Appends "label = description of expr" (or "exception:Name" when it threw) to `out`. */
#define CS_WRAPPER_DESCRIBE(out, label, expr)                                                      \
    do {                                                                                           \
        NSString *text_;                                                                           \
        @try {                                                                                     \
            text_ = [(expr) description];                                                          \
        } @catch (NSException *exception_) {                                                       \
            text_ = [NSString stringWithFormat:@"exception:%@", [exception_ name]];                \
        }                                                                                          \
        [out appendFormat:@"%@ = %@\n", label, text_];                                             \
    } while (0)

char *cs_wrapper_app_subclass_calls(void) {
    @autoreleasepool {
        NSMutableString *out = [NSMutableString string];
        NSArray *items = [NSArray arrayWithObjects:@"a", @"b", @"c", nil];
        CSScopeRingArray *ring = [[CSScopeRingArray alloc] initWithItems:items];
        CSScopeShortRingArray *shortRing = [[CSScopeShortRingArray alloc] initWithItems:items];
        NSUInteger four = cs_opaque_index(4), two = cs_opaque_index(2);
        CS_WRAPPER_DESCRIBE(out, @"ring[4]", [ring objectAtIndexedSubscript:four]);
        CS_WRAPPER_DESCRIBE(out, @"ring objectsAtIndexes {4}", [ring objectsAtIndexes:[NSIndexSet indexSetWithIndex:four]]);
        CS_WRAPPER_DESCRIBE(out, @"shortRing[2]", [shortRing objectAtIndexedSubscript:two]);
        CS_WRAPPER_DESCRIBE(out, @"shortRing objectsAtIndexes {2}",
                            [shortRing objectsAtIndexes:[NSIndexSet indexSetWithIndex:two]]);
        CSScopeClampingString *deleted = [[CSScopeClampingString alloc] initWithBase:@"abc"];
        CS_WRAPPER_DESCRIBE(out, @"clamping deleteCharactersInRange {1, 10}",
                            ([deleted deleteCharactersInRange:NSMakeRange(1, cs_opaque_index(10))], deleted));
        CSScopeClampingString *inserted = [[CSScopeClampingString alloc] initWithBase:@"abc"];
        CS_WRAPPER_DESCRIBE(out, @"clamping insertString x atIndex 10",
                            ([inserted insertString:@"x" atIndex:cs_opaque_index(10)], inserted));
        CS_RELEASE(ring);
        CS_RELEASE(shortRing);
        CS_RELEASE(deleted);
        CS_RELEASE(inserted);
        return strdup([out UTF8String]);
    }
}
