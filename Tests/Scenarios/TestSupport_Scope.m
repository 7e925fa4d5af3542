/*
 * TestSupport_Scope.m — app subclasses of class clusters with their own, legal contracts (see
 * cs_scope_support.h). Unguarded none of these calls throws; a hook on them would change them.
 */
#import "CSScenarioSupport.h"
#include "cs_scope_support.h"
#include <cs_incidents.h>
#import "../../Sources/_CrashShieldRuntime/Engine/CSEngine.h"
#import "../../Sources/_CrashShieldRuntime/Backend/CSBackend.h"
#include <stdio.h>
#include <string.h>

/* An immutable array whose -objectAtIndex: wraps around: any index is legal. */
@interface CSScopeWrappingArray : NSArray {
    __strong NSArray *_items;
}
@end

@implementation CSScopeWrappingArray
- (id)initWithObjects:(const id[])objects count:(NSUInteger)count {
    self = [super init];
    if (self) _items = [[NSArray alloc] initWithObjects:objects count:count];
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

/* A string whose -characterAtIndex: pads with '.' beyond its length. */
@interface CSScopePaddedString : NSString {
    __strong NSString *_base;
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
    CS_RELEASE(_base);
    CS_SUPER_DEALLOC();
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
    __strong NSMutableArray *_items;
}
@end

@implementation CSScopeNullStoringArray
CS_ITEMS_ARRAY_PRIMITIVES
- (void)addObject:(id)object {
    [_items addObject:object ? object : [NSNull null]];
}
- (void)insertObject:(id)object atIndex:(NSUInteger)index {
    [_items insertObject:object ? object : [NSNull null] atIndex:index];
}
- (void)replaceObjectAtIndex:(NSUInteger)index withObject:(id)object {
    [_items replaceObjectAtIndex:index withObject:object ? object : [NSNull null]];
}
- (void)removeLastObject {
    [_items removeLastObject];
}
@end

/* Seven app NSString subclasses, each with its own -characterAtIndex:. */
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
            CS_UNRETAINED id items[3] = {@"a", @"b", @"c"};
            CSScopeWrappingArray *wrapping = CS_AUTORELEASE([[CSScopeWrappingArray alloc] initWithObjects:items count:3]);
            [out appendFormat:@"wrap[5]=%@ wrap[3]=%@;", [wrapping objectAtIndex:cs_opaque_index(5)],
                              [wrapping objectAtIndex:cs_opaque_index(3)]];
            CSScopePaddedString *padded = CS_AUTORELEASE([[CSScopePaddedString alloc] initWithBase:@"abc"]);
            [out appendFormat:@"pad[1]=%d pad[10]=%d;", (int)[padded characterAtIndex:cs_opaque_index(1)],
                              (int)[padded characterAtIndex:cs_opaque_index(10)]];
            CSScopeNullStoringArray *nulls = CS_AUTORELEASE([[CSScopeNullStoringArray alloc] init]);
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
            CS_UNRETAINED Class classes[7] = {[CSScopeString1 class], [CSScopeString2 class], [CSScopeString3 class],
                                [CSScopeString4 class], [CSScopeString5 class], [CSScopeString6 class],
                                [CSScopeString7 class]};
            NSMutableString *out = [NSMutableString string];
            for (int i = 0; i < 7; i++) {
                NSString *string = CS_AUTORELEASE([[classes[i] alloc] initWithBase:@"abc"]);
                [out appendFormat:@"%d,", (int)[string characterAtIndex:cs_opaque_index(10)]];
            }
            result = cs_scope_copy(out);
        } @catch (NSException *exception) {
            result = cs_scope_copy([@"exception:" stringByAppendingString:[exception name]]);
        }
    }
    return result;
}

static unichar cs_scope_extra_character(CS_UNRETAINED id self, SEL _cmd, NSUInteger index) {
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
        NSString *string = CS_AUTORELEASE([[cls alloc] initWithBase:@"abc"]);
        result = (int)[string characterAtIndex:cs_opaque_index(10)];
    }
    return result;
}

/* Makes empty NSObject subclasses <prefix><n> up to `count` of them (`*made` so far); with
 * `messaged`, each is sent one message, which installs its dispatch table. */
static size_t cs_scope_make_empty_classes(const char *prefix, size_t count, size_t *made, BOOL messaged) {
    Class base = [NSObject class];
    for (; *made < count; (*made)++) {
        char name[64];
        snprintf(name, sizeof name, "%s%zu", prefix, *made);
        Class cls = objc_allocateClassPair(base, name, 0);
        if (cls == Nil) break;
        objc_registerClassPair(cls);
        if (messaged) (void)[cls class]; /* +initialize: the class's dispatch table is installed */
    }
    return *made;
}

size_t cs_scope_make_filler_classes(size_t count) {
    static size_t made;
    return cs_scope_make_empty_classes("CSScopeFiller", count, &made, NO);
}

void cs_scope_use_objc_runtime(void) {
    @autoreleasepool {
        (void)[NSObject class];
    }
}

size_t cs_scope_make_used_filler_classes(size_t count) {
    static size_t made;
    return cs_scope_make_empty_classes("CSScopeUsedFiller", count, &made, YES);
}

size_t cs_scope_class_list_copies_during_start(const char *app_prefix) {
    cs_guards_uninstall();
    size_t before = cs_backend_class_list_copies();
    const char *prefixes[1] = {app_prefix};
    cs_guards_config config = {0};
    config.hooked_app_class_prefixes = prefixes;
    config.hooked_app_class_count = app_prefix ? 1 : 0;
    cs_guards_start(app_prefix ? &config : NULL);
    return cs_backend_class_list_copies() - before;
}

typedef struct {
    size_t *query_of_pair;
    CS_UNRETAINED Class *owner_of_pair;
    IMP *implementation_of_pair;
    size_t count;
    size_t capacity;
} cs_scope_pairs;

static void cs_scope_collect_pair(void *context, size_t query, Class owner, IMP implementation) {
    cs_scope_pairs *pairs = context;
    if (pairs->count == pairs->capacity) return;
    pairs->query_of_pair[pairs->count] = query;
    pairs->owner_of_pair[pairs->count] = owner;
    pairs->implementation_of_pair[pairs->count] = implementation;
    pairs->count++;
}

static BOOL cs_scope_pairs_hold(const cs_scope_pairs *pairs, size_t query, Class owner) {
    for (size_t p = 0; p < pairs->count; p++)
        if (pairs->query_of_pair[p] == query && pairs->owner_of_pair[p] == owner) return YES;
    return NO;
}

cs_scope_discovery_comparison cs_scope_compare_discovery(void) {
    enum { kMaxQueries = 512, kMaxPairs = 8192 };
    static cs_owner_query queries[kMaxQueries];
    static size_t found_query[kMaxPairs], every_query[kMaxPairs];
    static CS_UNRETAINED Class found_owner[kMaxPairs], every_owner[kMaxPairs];
    static IMP found_imp[kMaxPairs], every_imp[kMaxPairs];
    size_t query_count = 0;
    for (size_t g = 0; g < CSGuardRegistryCount; g++) {
        for (size_t h = 0; h < CSGuardRegistry[g]->hook_count && query_count < kMaxQueries; h++) {
            const CSHookSpec *spec = &CSGuardRegistry[g]->hooks[h];
            Class root = objc_lookUpClass(spec->root_class);
            if (root != Nil) queries[query_count++] = (cs_owner_query){root, sel_registerName(spec->selector), spec->class_side};
        }
    }
    cs_scope_pairs found = {found_query, found_owner, found_imp, 0, kMaxPairs};
    cs_scope_pairs every = {every_query, every_owner, every_imp, 0, kMaxPairs};
    cs_backend_visit_owners(queries, query_count, NULL, 0, cs_scope_collect_pair, &found);
    cs_backend_visit_method_copies(queries, query_count, cs_scope_collect_pair, &every);
    cs_scope_discovery_comparison result = {found.count, 0, 0};
    size_t expected = 0;
    for (size_t p = 0; p < every.count; p++) {
        if (!cs_backend_implementation_is_system(every.implementation_of_pair[p])) {
            result.app_pairs++;
            continue;
        }
        if (!cs_address_is_in_system_image((uintptr_t)CS_POINTER(every.owner_of_pair[p]))) {
            result.runtime_made_pairs++;
            continue;
        }
        expected++;
        if (!cs_scope_pairs_hold(&found, every.query_of_pair[p], every.owner_of_pair[p])) result.system_pairs = SIZE_MAX;
    }
    if (expected != found.count) result.system_pairs = SIZE_MAX;
    return result;
}

unsigned cs_scope_system_implementation_bits(void) {
    unsigned bits = 0;
    @autoreleasepool {
        Class root = [NSObject class];
        if (cs_backend_implementation_is_system(cs_backend_own_implementation(root, @selector(description)))) bits |= 1;
        Class array_class = object_getClass([NSArray arrayWithObjects:@"a", @"b", nil]);
        IMP array_imp = NULL;
        for (Class c = array_class; c != Nil && array_imp == NULL; c = class_getSuperclass(c))
            array_imp = cs_backend_own_implementation(c, @selector(objectAtIndex:));
        if (array_imp && cs_backend_implementation_is_system(array_imp)) bits |= 2;
        if (cs_backend_implementation_is_system((IMP)objc_msg_lookup)) bits |= 4;
        IMP app = cs_backend_own_implementation([CSScopePaddedString class], @selector(characterAtIndex:));
        if (app && cs_backend_implementation_is_system(app)) bits |= 8;
        cs_scope_make_extra_string_classes(1);
        IMP added = cs_backend_own_implementation(objc_lookUpClass("CSScopeExtraString0"), @selector(characterAtIndex:));
        if (added && cs_backend_implementation_is_system(added)) bits |= 16;
    }
    return bits;
}

/* The "safe array" category of third-party libraries (cs_scope_exchange_safe_array). */
static unsigned g_safe_array_calls;

@interface NSArray (CSScopeSafeArray)
- (id)csScopeSafe_objectAtIndex:(NSUInteger)index;
@end

@implementation NSArray (CSScopeSafeArray)
- (id)csScopeSafe_objectAtIndex:(NSUInteger)index {
    g_safe_array_calls++;
    if (index >= [self count]) return nil;
    return [self csScopeSafe_objectAtIndex:index]; /* exchanged: the implementation it replaced */
}
@end

/* The exchange such categories make in +load: `safe` replaces `original` on `cls` alone (added
 * there first when `cls` only inherits it); a second call exchanges back. */
static void cs_scope_exchange(Class cls, SEL original, SEL safe) {
    Method originalMethod = class_getInstanceMethod(cls, original);
    Method safeMethod = class_getInstanceMethod(cls, safe);
    if (class_addMethod(cls, original, method_getImplementation(safeMethod), method_getTypeEncoding(safeMethod)))
        class_replaceMethod(cls, safe, method_getImplementation(originalMethod), method_getTypeEncoding(originalMethod));
    else
        method_exchangeImplementations(originalMethod, safeMethod);
}

void cs_scope_exchange_safe_array(void) {
    cs_scope_exchange(object_getClass([NSArray arrayWithObjects:@"a", @"b", nil]), @selector(objectAtIndex:),
                      @selector(csScopeSafe_objectAtIndex:));
}

unsigned cs_scope_safe_array_calls(void) {
    return g_safe_array_calls;
}

bool cs_scope_safe_array_read_beyond(void) {
    NSArray *array = [NSArray arrayWithObjects:@"a", @"b", nil];
    return [array objectAtIndex:cs_opaque_index(5)] == nil;
}

/* The same pattern for strings (cs_scope_exchange_safe_string). */
static unsigned g_safe_string_calls;

@interface NSString (CSScopeSafeString)
- (unichar)csScopeSafe_characterAtIndex:(NSUInteger)index;
@end

@implementation NSString (CSScopeSafeString)
- (unichar)csScopeSafe_characterAtIndex:(NSUInteger)index {
    g_safe_string_calls++;
    if (index >= [self length]) return 0;
    return [self csScopeSafe_characterAtIndex:index]; /* exchanged: the implementation it replaced */
}
@end

void cs_scope_exchange_safe_string(void) {
    cs_scope_exchange(object_getClass([NSString stringWithUTF8String:"abc"]), @selector(characterAtIndex:),
                      @selector(csScopeSafe_characterAtIndex:));
}

unsigned cs_scope_safe_string_calls(void) {
    return g_safe_string_calls;
}

bool cs_scope_safe_string_read_beyond(void) {
    return [[NSString stringWithUTF8String:"abc"] characterAtIndex:cs_opaque_index(9)] == 0;
}
