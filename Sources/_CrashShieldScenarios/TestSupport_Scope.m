/*
 * TestSupport_Scope.m — app subclasses of class clusters with their own, legal contracts (see
 * cs_scope_support.h). Unguarded none of these calls throws; a hook on them would change them.
 */
#import "CSScenarioSupport.h"
#include "cs_scope_support.h"
#include <stdio.h>
#include <string.h>

/* An immutable array whose -objectAtIndex: wraps around: any index is legal. */
@interface CSScopeWrappingArray : NSArray {
    NSArray *_items;
}
@end

@implementation CSScopeWrappingArray
- (id)initWithObjects:(const id[])objects count:(NSUInteger)count {
    self = [super init];
    if (self) _items = [[NSArray alloc] initWithObjects:objects count:count];
    return self;
}
- (void)dealloc {
    [_items release];
    [super dealloc];
}
- (NSUInteger)count {
    return [_items count];
}
- (id)objectAtIndex:(NSUInteger)index {
    NSUInteger count = [_items count];
    return count ? [_items objectAtIndex:index % count] : nil;
}
@end

/* A string whose -characterAtIndex: pads with '.' beyond its length. */
@interface CSScopePaddedString : NSString {
    NSString *_base;
}
- (id)initWithBase:(NSString *)base;
@end

@implementation CSScopePaddedString
- (id)initWithBase:(NSString *)base {
    self = [super init];
    if (self) _base = [base copy];
    return self;
}
- (void)dealloc {
    [_base release];
    [super dealloc];
}
- (NSUInteger)length {
    return [_base length];
}
- (unichar)characterAtIndex:(NSUInteger)index {
    return index < [_base length] ? [_base characterAtIndex:index] : (unichar)'.';
}
@end

/* A mutable array that stores NSNull for nil. */
@interface CSScopeNullStoringArray : NSMutableArray {
    NSMutableArray *_items;
}
@end

@implementation CSScopeNullStoringArray
- (id)init {
    self = [super init];
    if (self) _items = [[NSMutableArray alloc] init];
    return self;
}
- (id)initWithCapacity:(NSUInteger)capacity {
    (void)capacity;
    return [self init];
}
- (void)dealloc {
    [_items release];
    [super dealloc];
}
- (NSUInteger)count {
    return [_items count];
}
- (id)objectAtIndex:(NSUInteger)index {
    return [_items objectAtIndex:index];
}
- (void)addObject:(id)object {
    [_items addObject:object ? object : [NSNull null]];
}
- (void)insertObject:(id)object atIndex:(NSUInteger)index {
    [_items insertObject:object ? object : [NSNull null] atIndex:index];
}
- (void)removeObjectAtIndex:(NSUInteger)index {
    [_items removeObjectAtIndex:index];
}
- (void)replaceObjectAtIndex:(NSUInteger)index withObject:(id)object {
    [_items replaceObjectAtIndex:index withObject:object ? object : [NSNull null]];
}
- (void)removeLastObject {
    [_items removeLastObject];
}
@end

/* Seven app NSString subclasses, each with its own -characterAtIndex: (issue 10 item 3). */
#define CS_SCOPE_STRING(N)                                                                        \
    @interface CSScopeString##N : CSScopePaddedString                                             \
    @end                                                                                          \
    @implementation CSScopeString##N                                                              \
    -(unichar)characterAtIndex : (NSUInteger)index {                                              \
        return index < [self length] ? [super characterAtIndex:index] : (unichar)('0' + N);       \
    }                                                                                             \
    @end
CS_SCOPE_STRING(1)
CS_SCOPE_STRING(2)
CS_SCOPE_STRING(3)
CS_SCOPE_STRING(4)
CS_SCOPE_STRING(5)
CS_SCOPE_STRING(6)
CS_SCOPE_STRING(7)

static char *cs_scope_copy(NSString *text) {
    return strdup([text UTF8String]);
}

char *cs_scope_app_subclass_calls(void) {
    char *result = NULL;
    @autoreleasepool {
        @try {
            NSMutableString *out = [NSMutableString string];
            id items[3] = {@"a", @"b", @"c"};
            CSScopeWrappingArray *wrapping = [[[CSScopeWrappingArray alloc] initWithObjects:items count:3] autorelease];
            [out appendFormat:@"wrap[5]=%@ wrap[3]=%@;", [wrapping objectAtIndex:cs_opaque_index(5)],
                              [wrapping objectAtIndex:cs_opaque_index(3)]];
            CSScopePaddedString *padded = [[[CSScopePaddedString alloc] initWithBase:@"abc"] autorelease];
            [out appendFormat:@"pad[1]=%d pad[10]=%d;", (int)[padded characterAtIndex:cs_opaque_index(1)],
                              (int)[padded characterAtIndex:cs_opaque_index(10)]];
            CSScopeNullStoringArray *nulls = [[[CSScopeNullStoringArray alloc] init] autorelease];
            [nulls addObject:@"x"];
            [nulls addObject:cs_opaque(nil)];
            [out appendFormat:@"nulls=%lu last-is-null=%d", (unsigned long)[nulls count],
                              [nulls objectAtIndex:[nulls count] - 1] == [NSNull null]];
            result = cs_scope_copy(out);
        } @catch (NSException *exception) {
            result = cs_scope_copy([@"exception:" stringByAppendingString:[exception name]]);
        }
    }
    return result;
}

char *cs_scope_seven_string_calls(void) {
    char *result = NULL;
    @autoreleasepool {
        @try {
            Class classes[7] = {[CSScopeString1 class], [CSScopeString2 class], [CSScopeString3 class],
                                [CSScopeString4 class], [CSScopeString5 class], [CSScopeString6 class],
                                [CSScopeString7 class]};
            NSMutableString *out = [NSMutableString string];
            for (int i = 0; i < 7; i++) {
                NSString *string = [[[classes[i] alloc] initWithBase:@"abc"] autorelease];
                [out appendFormat:@"%d,", (int)[string characterAtIndex:cs_opaque_index(10)]];
            }
            result = cs_scope_copy(out);
        } @catch (NSException *exception) {
            result = cs_scope_copy([@"exception:" stringByAppendingString:[exception name]]);
        }
    }
    return result;
}

static unichar cs_scope_extra_character(id self, SEL _cmd, NSUInteger index) {
    (void)_cmd;
    return index < [self length] ? [(NSString *)cs_opaque(@"abc") characterAtIndex:index] : (unichar)'.';
}

size_t cs_scope_make_extra_string_classes(size_t count) {
    static size_t made;
    Class base = [CSScopePaddedString class];
    SEL sel = @selector(characterAtIndex:);
    const char *types = method_getTypeEncoding(class_getInstanceMethod(base, sel));
    for (; made < count; made++) {
        char name[64];
        snprintf(name, sizeof name, "CSScopeExtraString%zu", made);
        Class cls = objc_allocateClassPair(base, name, 0);
        if (cls == Nil) break;
        class_addMethod(cls, sel, (IMP)cs_scope_extra_character, types);
        objc_registerClassPair(cls);
    }
    return made;
}

int cs_scope_extra_string_character(size_t index) {
    char name[64];
    snprintf(name, sizeof name, "CSScopeExtraString%zu", index);
    Class cls = objc_lookUpClass(name);
    if (cls == Nil) return -1;
    int result;
    @autoreleasepool {
        NSString *string = [[[cls alloc] initWithBase:@"abc"] autorelease];
        result = (int)[string characterAtIndex:cs_opaque_index(10)];
    }
    return result;
}

size_t cs_scope_make_filler_classes(size_t count) {
    static size_t made;
    Class base = [NSObject class];
    for (; made < count; made++) {
        char name[64];
        snprintf(name, sizeof name, "CSScopeFiller%zu", made);
        Class cls = objc_allocateClassPair(base, name, 0);
        if (cls == Nil) break;
        objc_registerClassPair(cls);
    }
    return made;
}
