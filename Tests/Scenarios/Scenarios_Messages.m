/*
 * Scenarios_Messages.m — unrecognized selectors, NSNull and KVC:
 * misuse scenarios, legal-input oracles, bench cases, and the test classes they use.
 *
 * The test classes are the app's own classes (this target links into the app or test binary),
 * written without property auto-synthesis (explicit ivars and @synthesize).
 */
#import "CSScenarioSupport.h"
#include <objc/runtime.h>
#include <objc/message.h>
#include <pthread.h>
#include <string.h>

#pragma mark - Test classes

typedef struct CSMsgBig {
    double a, b, c, d; /* 32 bytes: returned in memory (sret) on x86_64 */
} CSMsgBig;

/** A plain app model: two KVC-compliant properties, one of them a scalar. */
@interface CSMsgAppModel : NSObject {
    __strong NSString *_name;
    int _count;
}
@property(nonatomic, copy) NSString *name;
@property(nonatomic) int count;
- (int)knownValue;
@end

@implementation CSMsgAppModel
@synthesize name = _name;
@synthesize count = _count;
- (int)knownValue {
    return 42;
}
- (void)dealloc {
    CS_RELEASE(_name);
    CS_SUPER_DEALLOC();
}
@end

/** Methods declared but implemented by nobody: typed call sites for the unrecognized messages. */
@interface CSMsgAppModel (NeverImplemented)
- (id)cs_missingObject;
- (int)cs_missingInt;
- (double)cs_missingDouble;
- (NSRange)cs_missingRange;
- (CSMsgBig)cs_missingBig;
- (long double)cs_missingLongDouble;
+ (id)cs_missingClassObject;
@end

/** Does its own forwarding: messages its target understands go there; others reach NSObject's
 *  forwardInvocation: (its own decision: an exception). */
@interface CSMsgForwarder : NSObject {
    __strong NSString *_target;
}
@end

@implementation CSMsgForwarder
- (instancetype)init {
    if ((self = [super init])) _target = [[NSString alloc] initWithUTF8String:"forwarded!"];
    return self;
}
- (void)dealloc {
    CS_RELEASE(_target);
    CS_SUPER_DEALLOC();
}
- (NSMethodSignature *)methodSignatureForSelector:(SEL)sel {
    NSMethodSignature *signature = [super methodSignatureForSelector:sel];
    return signature ? signature : [_target methodSignatureForSelector:sel];
}
- (void)forwardInvocation:(NSInvocation *)invocation {
    if ([_target respondsToSelector:[invocation selector]])
        [invocation invokeWithTarget:_target];
    else
        [super forwardInvocation:invocation];
}
@end

/** An NSProxy subclass forwarding everything to a string. */
@interface CSMsgProxy : NSProxy {
    __strong NSString *_target;
}
- (instancetype)initWithTarget:(NSString *)target;
@end

@implementation CSMsgProxy
- (instancetype)initWithTarget:(NSString *)target {
    _target = [target copy];
    return self;
}
- (void)dealloc {
    CS_RELEASE(_target);
    CS_SUPER_DEALLOC();
}
- (NSMethodSignature *)methodSignatureForSelector:(SEL)sel {
    return [_target methodSignatureForSelector:sel];
}
- (void)forwardInvocation:(NSInvocation *)invocation {
    [invocation invokeWithTarget:_target];
}
@end

/** Overrides every KVC hook the guard replaces on NSObject: its behaviour must not change. */
@interface CSMsgKVCOverrider : NSObject {
    __strong NSMutableDictionary *_extra;
    int _count;
}
@property(nonatomic) int count;
@end

@implementation CSMsgKVCOverrider
@synthesize count = _count;
- (instancetype)init {
    if ((self = [super init])) _extra = [[NSMutableDictionary alloc] init];
    return self;
}
- (void)dealloc {
    CS_RELEASE(_extra);
    CS_SUPER_DEALLOC();
}
- (id)valueForUndefinedKey:(NSString *)key {
    id value = [_extra objectForKey:key];
    return value ? value : [NSString stringWithFormat:@"fallback:%@", key];
}
- (void)setValue:(id)value forUndefinedKey:(NSString *)key {
    [_extra setObject:value forKey:key];
}
- (void)setNilValueForKey:(NSString *)key {
    if ([key isEqualToString:@"count"])
        _count = -1;
    else
        [super setNilValueForKey:key];
}
@end

/** Implements GNUstep's deprecated undefined-key handlers only: NSObject's
 *  setValue:forUndefinedKey: / valueForUndefinedKey: hand off to them (legal, no exception). */
@interface CSMsgDeprecatedUnbound : NSObject {
    __strong NSString *_stored;
}
@end

@implementation CSMsgDeprecatedUnbound
- (void)dealloc {
    CS_RELEASE(_stored);
    CS_SUPER_DEALLOC();
}
- (void)handleTakeValue:(id)value forUnboundKey:(NSString *)key {
    CS_RELEASE(_stored);
    _stored = [[NSString alloc] initWithFormat:@"%@=%@", key, value];
}
- (id)handleQueryWithUnboundKey:(NSString *)key {
    return _stored ? _stored : (id)[NSString stringWithFormat:@"unbound:%@", key];
}
@end

/** Implements the deprecated unableToSetNilForKey: only: NSObject's setNilValueForKey: hands
 *  off to it. */
@interface CSMsgDeprecatedNil : NSObject {
    int _count;
}
@end

@implementation CSMsgDeprecatedNil
- (void)unableToSetNilForKey:(NSString *)key {
    _count = [key isEqualToString:@"count"] ? -7 : -8;
}
@end

/** Overrides the deprecated takeValue:forKey: / takeValue:forKeyPath:, which GNUstep's
 *  setValue:forKey: / setValue:forKeyPath: call instead of their own work (nil keys included). */
@interface CSMsgTakeValueOverrider : NSObject {
    int _calls;
}
- (int)calls;
@end

@implementation CSMsgTakeValueOverrider
- (int)calls {
    return _calls;
}
- (void)takeValue:(id)value forKey:(NSString *)key {
    (void)value;
    _calls += key == nil ? 100 : 1;
}
- (void)takeValue:(id)value forKeyPath:(NSString *)path {
    (void)value;
    _calls += path == nil ? 10000 : 10;
}
@end

/** Answers undefined keys with constants (what GNUstep passes for a nil key is not defined). */
@interface CSMsgUndefinedConstant : NSObject {
    int _writes;
}
- (int)writes;
@end

@implementation CSMsgUndefinedConstant
- (int)writes {
    return _writes;
}
- (id)valueForUndefinedKey:(NSString *)key {
    (void)key;
    return @"constant";
}
- (void)setValue:(id)value forUndefinedKey:(NSString *)key {
    (void)value;
    (void)key;
    _writes++;
}
+ (id)valueForUndefinedKey:(NSString *)key {
    (void)key;
    return @"class constant";
}
@end

/** Hands messages it does not implement to a mutable dictionary (stage-2 forwarding). */
@interface CSMsgTargetForwarder : NSObject {
    __strong NSMutableDictionary *_target;
}
@end

@implementation CSMsgTargetForwarder
- (instancetype)init {
    if ((self = [super init])) _target = [[NSMutableDictionary alloc] initWithObjectsAndKeys:@"v", @"k", nil];
    return self;
}
- (void)dealloc {
    CS_RELEASE(_target);
    CS_SUPER_DEALLOC();
}
- (id)forwardingTargetForSelector:(SEL)sel {
    return [_target respondsToSelector:sel] ? _target : nil;
}
@end

/** What an NSProtocolChecker lets through. */
@protocol CSMsgCounting
- (NSUInteger)count;
@end

/** Methods nobody implements, with results in every register class and a variadic one. */
typedef struct CSMsgPair {
    float x, y; /* 8 bytes: returned in xmm0 */
} CSMsgPair;
typedef struct CSMsgMixed {
    long n;
    double d; /* 16 bytes: rax and xmm0 */
} CSMsgMixed;

@interface CSMsgAppModel (NeverImplementedShapes)
- (float)cs_missingFloat;
- (CSMsgPair)cs_missingPair;
- (CSMsgMixed)cs_missingMixed;
- (id)cs_missingFormat:(NSString *)format, ...;
@end

#pragma mark - Scenarios: unrecognized selectors

static CSMsgAppModel *cs_model(void) {
    return cs_opaque(CS_AUTORELEASE([[CSMsgAppModel alloc] init]));
}

static bool selector_missingObject_instance(void) {
    return [cs_model() cs_missingObject] == nil;
}
static bool selector_missingInt_instance(void) {
    return [cs_model() cs_missingInt] == 0;
}
static bool selector_missingDouble_instance(void) {
    return [cs_model() cs_missingDouble] == 0.0;
}
static bool selector_missingRange_struct16(void) {
    NSRange range = [cs_model() cs_missingRange];
    return range.location == 0 && range.length == 0;
}
static bool selector_missingBig_sret(void) {
    CSMsgBig big;
    memset(&big, 0xa5, sizeof big); /* the stub must overwrite every byte */
    big = [cs_model() cs_missingBig];
    return big.a == 0.0 && big.b == 0.0 && big.c == 0.0 && big.d == 0.0;
}
static bool selector_missingLongDouble_x87(void) {
    long double value = [cs_model() cs_missingLongDouble];
    return value == 0.0L;
}
static bool selector_missingClassObject_class(void) {
    return [(Class)cs_opaque([CSMsgAppModel class]) cs_missingClassObject] == nil;
}
static bool selector_performSelector_untyped(void) {
    return [cs_model() performSelector:NSSelectorFromString(@"cs_neverDeclared")] == nil;
}

static bool selector_missingFloat_instance(void) {
    return [cs_model() cs_missingFloat] == 0.0f;
}
static bool selector_missingPair_struct8(void) {
    CSMsgPair pair = [cs_model() cs_missingPair];
    return pair.x == 0.0f && pair.y == 0.0f;
}
static bool selector_missingMixed_struct16(void) {
    CSMsgMixed mixed = [cs_model() cs_missingMixed];
    return mixed.n == 0 && mixed.d == 0.0;
}
static bool selector_missingFormat_variadic(void) {
    return [cs_model() cs_missingFormat:@"%d %f %@", 1, 2.5, @"x"] == nil;
}
static bool selector_performSelectorWithObject_untyped(void) {
    return [cs_model() performSelector:NSSelectorFromString(@"cs_neverDeclared:") withObject:@"x"] == nil;
}
static bool selector_performSelector_classUntyped(void) {
    return [(Class)cs_opaque([CSMsgAppModel class]) performSelector:NSSelectorFromString(@"cs_neverDeclared")] == nil;
}

/* Type confusion from decoded JSON (the guard's default scope): values of the JSON classes used as
 * the type the code expected. */
static bool selector_length_number(void) {
    return [(NSString *)cs_opaque([NSNumber numberWithInt:5]) length] == 0;
}
static bool selector_objectForKey_array(void) {
    return [(NSDictionary *)cs_opaque([NSArray arrayWithObject:@"a"]) objectForKey:@"k"] == nil;
}
static bool selector_integerValue_array(void) {
    return [(NSNumber *)cs_opaque([NSArray arrayWithObject:@"7"]) integerValue] == 0;
}
static bool selector_objectAtIndex_dictionary(void) {
    return [(NSArray *)cs_opaque([NSMutableDictionary dictionaryWithObject:@"v" forKey:@"k"]) objectAtIndex:0] == nil;
}
static bool selector_count_string(void) {
    return [(NSArray *)cs_opaque([NSMutableString stringWithString:@"abc"]) count] == 0;
}

#pragma mark - Scenarios: NSNull

static id cs_null(void) {
    return cs_opaque([NSNull null]);
}

static bool nsnull_length_string(void) {
    return [(NSString *)cs_null() length] == 0;
}
static bool nsnull_isEqualToString_string(void) {
    return [(NSString *)cs_null() isEqualToString:@"x"] == NO;
}
static bool nsnull_intValue_number(void) {
    return [(NSNumber *)cs_null() intValue] == 0;
}
static bool nsnull_count_array(void) {
    return [(NSArray *)cs_null() count] == 0;
}
static bool nsnull_objectForKey_dictionary(void) {
    return [(NSDictionary *)cs_null() objectForKey:@"k"] == nil;
}
static bool nsnull_missingRange_zero(void) {
    NSRange range = [(CSMsgAppModel *)cs_null() cs_missingRange];
    return range.location == 0 && range.length == 0;
}

#pragma mark - Scenarios: KVC

static bool kvc_setValue_undefinedKey(void) {
    CSMsgAppModel *model = cs_model();
    [model setValue:@"v" forKey:@"noSuchKey"];
    return [model name] == nil && [model count] == 0;
}
static bool kvc_valueForKey_undefinedKey(void) {
    return [cs_model() valueForKey:@"noSuchKey"] == nil;
}
static bool kvc_setValue_nilKey(void) {
    CSMsgAppModel *model = cs_model();
    [model setValue:@"v" forKey:cs_opaque(nil)];
    return [model name] == nil;
}
static bool kvc_valueForKey_nilKey(void) {
    return [cs_model() valueForKey:cs_opaque(nil)] == nil;
}
static bool kvc_setValue_nilScalar(void) {
    CSMsgAppModel *model = cs_model();
    [model setCount:5];
    [model setValue:nil forKey:@"count"];
    return [model count] == 5;
}
static bool kvc_valueForKeyPath_badPath(void) {
    CSMsgAppModel *model = cs_model();
    [model setName:@"warm"];
    return [model valueForKeyPath:@"name.noSuchKey.x"] == nil;
}
static bool kvc_setValueForKeyPath_badPath(void) {
    CSMsgAppModel *model = cs_model();
    [model setValue:@"v" forKeyPath:@"noSuchKey.x"];
    return [model name] == nil;
}
static bool kvc_valueForKeyPath_nilPath(void) {
    return [cs_model() valueForKeyPath:cs_opaque(nil)] == nil;
}

static bool kvc_valueForKey_classUndefinedKey(void) {
    return [(id)cs_opaque([CSMsgAppModel class]) valueForKey:@"noSuchKey"] == nil;
}
static bool kvc_setValue_classUndefinedKey(void) {
    [(id)cs_opaque([CSMsgAppModel class]) setValue:@"v" forKey:@"noSuchKey"];
    return true;
}

static const cs_scenario kScenarios[] = {
    {"selector.missingObject.instance", "selector", "cs_missingObject", false, selector_missingObject_instance},
    {"selector.missingInt.instance", "selector", "cs_missingInt", false, selector_missingInt_instance},
    {"selector.missingDouble.instance", "selector", "cs_missingDouble", false, selector_missingDouble_instance},
    {"selector.missingRange.struct16", "selector", "cs_missingRange", false, selector_missingRange_struct16},
    {"selector.missingBig.sret", "selector", "cs_missingBig", false, selector_missingBig_sret},
    {"selector.missingLongDouble.x87", "selector", "cs_missingLongDouble", false, selector_missingLongDouble_x87},
    {"selector.missingClassObject.class", "selector", "cs_missingClassObject", true, selector_missingClassObject_class},
    {"selector.performSelector.untyped", "selector", "cs_neverDeclared", false, selector_performSelector_untyped},
    {"selector.missingFloat.instance", "selector", "cs_missingFloat", false, selector_missingFloat_instance},
    {"selector.missingPair.struct8", "selector", "cs_missingPair", false, selector_missingPair_struct8},
    {"selector.missingMixed.struct16", "selector", "cs_missingMixed", false, selector_missingMixed_struct16},
    {"selector.missingFormat.variadic", "selector", "cs_missingFormat:", false, selector_missingFormat_variadic},
    {"selector.performSelectorWithObject.untyped", "selector", "cs_neverDeclared:", false,
     selector_performSelectorWithObject_untyped},
    {"selector.performSelector.classUntyped", "selector", "cs_neverDeclared", true,
     selector_performSelector_classUntyped},
    {"selector.length.number", "selector", "length", false, selector_length_number},
    {"selector.objectForKey.array", "selector", "objectForKey:", false, selector_objectForKey_array},
    {"selector.integerValue.array", "selector", "integerValue", false, selector_integerValue_array},
    {"selector.objectAtIndex.dictionary", "selector", "objectAtIndex:", false, selector_objectAtIndex_dictionary},
    {"selector.count.string", "selector", "count", false, selector_count_string},
    {"nsnull.length.null", "nsnull", "length", false, nsnull_length_string},
    {"nsnull.isEqualToString.null", "nsnull", "isEqualToString:", false, nsnull_isEqualToString_string},
    {"nsnull.intValue.null", "nsnull", "intValue", false, nsnull_intValue_number},
    {"nsnull.count.null", "nsnull", "count", false, nsnull_count_array},
    {"nsnull.objectForKey.null", "nsnull", "objectForKey:", false, nsnull_objectForKey_dictionary},
    {"nsnull.missingRange.null", "nsnull", "cs_missingRange", false, nsnull_missingRange_zero},
    {"kvc.setValue.undefinedKey", "kvc", "setValue:forUndefinedKey:", false, kvc_setValue_undefinedKey},
    {"kvc.valueForKey.undefinedKey", "kvc", "valueForUndefinedKey:", false, kvc_valueForKey_undefinedKey},
    {"kvc.setValue.nilKey", "kvc", "setValue:forKey:", false, kvc_setValue_nilKey},
    {"kvc.valueForKey.nilKey", "kvc", "valueForKey:", false, kvc_valueForKey_nilKey},
    {"kvc.setValue.nilScalar", "kvc", "setNilValueForKey:", false, kvc_setValue_nilScalar},
    {"kvc.valueForKeyPath.badPath", "kvc", "valueForUndefinedKey:", false, kvc_valueForKeyPath_badPath},
    {"kvc.setValueForKeyPath.badPath", "kvc", "valueForUndefinedKey:", false, kvc_setValueForKeyPath_badPath},
    {"kvc.valueForKeyPath.nilPath", "kvc", "valueForKeyPath:", false, kvc_valueForKeyPath_nilPath},
    {"kvc.valueForKey.classUndefinedKey", "kvc", "valueForUndefinedKey:", true, kvc_valueForKey_classUndefinedKey},
    {"kvc.setValue.classUndefinedKey", "kvc", "setValue:forUndefinedKey:", true, kvc_setValue_classUndefinedKey},
};
const cs_scenario_table cs_message_scenarios = CS_TABLE(kScenarios);

#pragma mark - Oracles

/** Runs one legal call's description, or the name of what it threw (its own decision). */
#define CS_LINE(out, label, expr)                                                                  \
    do {                                                                                           \
        NSString *cs_text_;                                                                        \
        @try {                                                                                     \
            cs_text_ = (expr);                                                                     \
        } @catch (NSException * cs_e_) {                                                           \
            cs_text_ = [NSString stringWithFormat:@"exception:%@", [cs_e_ name]];                  \
        }                                                                                          \
        [out appendFormat:@"%s=%@\n", label, cs_text_];                                            \
    } while (0)

static void *oracle_forwarding_class(void) {
    NSMutableString *out = [NSMutableString string];
    CSMsgForwarder *forwarder = CS_AUTORELEASE([[CSMsgForwarder alloc] init]);
    CS_LINE(out, "length", ([NSString stringWithFormat:@"%lu", (unsigned long)[(NSString *)forwarder length]]));
    CS_LINE(out, "uppercaseString", [(NSString *)forwarder uppercaseString]);
    CS_LINE(out, "unknownToTarget", cs_describe([(CSMsgAppModel *)forwarder cs_missingObject]));
    CS_LINE(out, "respondsToLength", ([forwarder respondsToSelector:@selector(length)] ? @"YES" : @"NO"));
    return cs_autoreleased_pointer(out);
}

static void *oracle_proxy(void) {
    NSMutableString *out = [NSMutableString string];
    CSMsgProxy *proxy = CS_AUTORELEASE([[CSMsgProxy alloc] initWithTarget:@"proxied"]);
    CS_LINE(out, "length", ([NSString stringWithFormat:@"%lu", (unsigned long)[(NSString *)proxy length]]));
    CS_LINE(out, "uppercaseString", [(NSString *)proxy uppercaseString]);
    CS_LINE(out, "isProxy", ([proxy isProxy] ? @"YES" : @"NO"));
    return cs_autoreleased_pointer(out);
}

static void *oracle_kvc_overrider(void) {
    NSMutableString *out = [NSMutableString string];
    CSMsgKVCOverrider *object = CS_AUTORELEASE([[CSMsgKVCOverrider alloc] init]);
    CS_LINE(out, "valueForUndefinedKey", cs_describe([object valueForKey:@"missing"]));
    [object setValue:@"stored" forKey:@"missing"];
    CS_LINE(out, "afterSetUndefined", cs_describe([object valueForKey:@"missing"]));
    [object setValue:[NSNumber numberWithInt:3] forKey:@"count"];
    CS_LINE(out, "count", cs_describe([object valueForKey:@"count"]));
    [object setValue:nil forKey:@"count"];
    CS_LINE(out, "countAfterNil", ([NSString stringWithFormat:@"%d", [object count]]));
    CS_LINE(out, "keyPathThroughOverride", cs_describe([object valueForKeyPath:@"other.length"]));
    return cs_autoreleased_pointer(out);
}

static void *oracle_kvc_ordinary(void) {
    NSMutableString *out = [NSMutableString string];
    CSMsgAppModel *model = CS_AUTORELEASE([[CSMsgAppModel alloc] init]);
    [model setValue:@"Ada" forKey:@"name"];
    [model setValue:[NSNumber numberWithInt:7] forKey:@"count"];
    CS_LINE(out, "name", cs_describe([model valueForKey:@"name"]));
    CS_LINE(out, "count", cs_describe([model valueForKey:@"count"]));
    CS_LINE(out, "nameLength", cs_describe([model valueForKeyPath:@"name.length"]));
    [model setValue:@"Grace" forKeyPath:@"name"];
    CS_LINE(out, "nameAfterKeyPath", [model name]);
    [model setValue:nil forKey:@"name"];
    CS_LINE(out, "nilForObject", cs_describe([model name]));
    NSMutableDictionary *dictionary = [NSMutableDictionary dictionaryWithObject:@"1" forKey:@"a"];
    [dictionary setValue:@"2" forKey:@"b"];
    [dictionary setValue:nil forKey:@"a"]; /* legal: removes the key */
    CS_LINE(out, "dictionary", ([NSString stringWithFormat:@"%lu %@ %@", (unsigned long)[dictionary count],
                                                           cs_describe([dictionary valueForKey:@"a"]),
                                                           cs_describe([dictionary valueForKey:@"b"])]));
    CS_LINE(out, "dictionaryMissing", cs_describe([dictionary valueForKey:@"zzz"]));
    NSArray *models = [NSArray arrayWithObjects:model, model, nil];
    CS_LINE(out, "arrayValueForKey", cs_describe([models valueForKey:@"name"]));
    CS_LINE(out, "arrayCount", cs_describe([models valueForKeyPath:@"@count"]));
    CS_LINE(out, "arraySum", cs_describe([models valueForKeyPath:@"@sum.count"]));
    CS_LINE(out, "description", ([[model valueForKey:@"description"] length] > 0 ? @"non-empty" : @"empty"));
    return cs_autoreleased_pointer(out);
}

static void *oracle_nsnull_own_methods(void) {
    NSMutableString *out = [NSMutableString string];
    id null = [NSNull null];
    CS_LINE(out, "description", [null description]);
    CS_LINE(out, "isEqual", ([null isEqual:[NSNull null]] ? @"YES" : @"NO"));
    CS_LINE(out, "isEqualOther", ([null isEqual:@""] ? @"YES" : @"NO"));
    CS_LINE(out, "hashStable", ([null hash] == [[NSNull null] hash] ? @"YES" : @"NO"));
    CS_LINE(out, "copySame", ([CS_AUTORELEASE([null copy]) isEqual:null] ? @"YES" : @"NO"));
    CS_LINE(out, "class", NSStringFromClass([null class]));
    CS_LINE(out, "respondsToLength", ([null respondsToSelector:@selector(length)] ? @"YES" : @"NO"));
    CS_LINE(out, "respondsToDescription", ([null respondsToSelector:@selector(description)] ? @"YES" : @"NO"));
    CS_LINE(out, "signatureOfDescription", ([null methodSignatureForSelector:@selector(description)] ? @"YES" : @"NO"));
    return cs_autoreleased_pointer(out);
}

static void *oracle_implemented_messages(void) {
    NSMutableString *out = [NSMutableString string];
    CSMsgAppModel *model = CS_AUTORELEASE([[CSMsgAppModel alloc] init]);
    CS_LINE(out, "knownValue", ([NSString stringWithFormat:@"%d", [model knownValue]]));
    CS_LINE(out, "performKnown", ([NSString stringWithFormat:@"%d", (int)(intptr_t)[model performSelector:@selector(knownValue)]]));
    CS_LINE(out, "respondsToMissing", ([model respondsToSelector:@selector(cs_missingObject)] ? @"YES" : @"NO"));
    CS_LINE(out, "classRespondsToMissing",
            ([CSMsgAppModel respondsToSelector:@selector(cs_missingClassObject)] ? @"YES" : @"NO"));
    CS_LINE(out, "instancesRespond",
            ([CSMsgAppModel instancesRespondToSelector:@selector(cs_missingInt)] ? @"YES" : @"NO"));
    CS_LINE(out, "systemClassUnrecognized", cs_describe([(CSMsgAppModel *)[NSDate date] cs_missingObject]));
    return cs_autoreleased_pointer(out);
}

static NSString *cs_yes_no(BOOL value) {
    return value ? @"YES" : @"NO";
}

static NSString *cs_signature_text(NSMethodSignature *signature) {
    if (signature == nil) return @"nil";
    return [NSString stringWithFormat:@"%s/%lu", [signature methodReturnType],
                                      (unsigned long)[signature numberOfArguments]];
}

/* Every introspection answer a guard could change by adding or overriding a method, for the
 * receivers the guards cover (NSNull, app instances and classes, JSON values, out-of-scope system
 * objects) and selectors nobody implements (typed at some call site, or never typed at all). */
static void cs_describe_introspection(NSMutableString *out, const char *label, id receiver) {
    SEL selectors[] = {@selector(length), @selector(objectForKey:), @selector(cs_missingObject),
                       @selector(cs_missingBig), NSSelectorFromString(@"cs_neverDeclaredIntrospection")};
    const char *names[] = {"length", "objectForKey", "missingObject", "missingBig", "neverDeclared"};
    BOOL is_class = class_isMetaClass(object_getClass(receiver));
    Class cls = is_class ? (Class)receiver : object_getClass(receiver);
    for (size_t i = 0; i < sizeof selectors / sizeof selectors[0]; i++) {
        SEL sel = selectors[i];
        char line[160];
        snprintf(line, sizeof line, "%s.%s.respondsToSelector", label, names[i]);
        CS_LINE(out, line, cs_yes_no([receiver respondsToSelector:sel]));
        snprintf(line, sizeof line, "%s.%s.methodSignatureForSelector", label, names[i]);
        CS_LINE(out, line, cs_signature_text([receiver methodSignatureForSelector:sel]));
        snprintf(line, sizeof line, "%s.%s.forwardingTargetForSelector", label, names[i]);
        CS_LINE(out, line, cs_describe([receiver forwardingTargetForSelector:sel]));
        snprintf(line, sizeof line, "%s.%s.instancesRespondToSelector", label, names[i]);
        CS_LINE(out, line, cs_yes_no([cls instancesRespondToSelector:sel]));
        snprintf(line, sizeof line, "%s.%s.instanceMethodSignatureForSelector", label, names[i]);
        CS_LINE(out, line, cs_signature_text([cls instanceMethodSignatureForSelector:sel]));
        snprintf(line, sizeof line, "%s.%s.class_respondsToSelector", label, names[i]);
        CS_LINE(out, line, cs_yes_no(class_respondsToSelector(object_getClass(receiver), sel)));
        snprintf(line, sizeof line, "%s.%s.resolveInstanceMethod", label, names[i]);
        CS_LINE(out, line, cs_yes_no([cls resolveInstanceMethod:sel]));
        snprintf(line, sizeof line, "%s.%s.resolveClassMethod", label, names[i]);
        CS_LINE(out, line, cs_yes_no([cls resolveClassMethod:sel]));
    }
    unsigned int count = 0;
    Method *methods = class_copyMethodList(object_getClass(receiver), &count);
    free(methods);
    char line[160];
    snprintf(line, sizeof line, "%s.ownMethodCount", label);
    CS_LINE(out, line, ([NSString stringWithFormat:@"%u", count]));
}

static void *oracle_introspection(void) {
    NSMutableString *out = [NSMutableString string];
    cs_describe_introspection(out, "null", [NSNull null]);
    cs_describe_introspection(out, "model", CS_AUTORELEASE([[CSMsgAppModel alloc] init]));
    cs_describe_introspection(out, "modelClass", [CSMsgAppModel class]);
    cs_describe_introspection(out, "number", [NSNumber numberWithInt:5]);
    cs_describe_introspection(out, "string", [NSMutableString stringWithString:@"abc"]);
    cs_describe_introspection(out, "array", [NSArray arrayWithObject:@"a"]);
    cs_describe_introspection(out, "dictionary", [NSMutableDictionary dictionaryWithObject:@"v" forKey:@"k"]);
    cs_describe_introspection(out, "date", [NSDate dateWithTimeIntervalSince1970:0]);
    cs_describe_introspection(out, "nsobjectClass", [NSObject class]);
    return cs_autoreleased_pointer(out);
}

/* GNUstep's NSObject hands undefined keys and nil for scalars to the deprecated handlers a class
 * implements, and setValue:forKey: / setValue:forKeyPath: to takeValue:forKey: /
 * takeValue:forKeyPath: overrides; nil keys reach the undefined-key methods and overriding
 * valueForKey: (dictionaries). Class objects answer KVC too. */
static void *oracle_kvc_handoffs(void) {
    NSMutableString *out = [NSMutableString string];
    CSMsgDeprecatedUnbound *unbound = CS_AUTORELEASE([[CSMsgDeprecatedUnbound alloc] init]);
    CS_LINE(out, "unboundQuery", cs_describe([unbound valueForKey:@"Lxcke"]));
    CS_LINE(out, "setUnbound", ([unbound setValue:@"GNUstep" forKey:@"Lxcke"], @"done"));
    CS_LINE(out, "unboundAfterTake", cs_describe([unbound valueForKey:@"Lxcke"]));
    CS_LINE(out, "unboundKeyPath", cs_describe([unbound valueForKeyPath:@"other"]));
    CSMsgDeprecatedNil *deprecated_nil = CS_AUTORELEASE([[CSMsgDeprecatedNil alloc] init]);
    CS_LINE(out, "setNilDeprecated", ([deprecated_nil setValue:nil forKey:@"count"], @"done"));
    CS_LINE(out, "unableToSetNil", cs_describe([deprecated_nil valueForKey:@"count"]));
    CSMsgTakeValueOverrider *taker = CS_AUTORELEASE([[CSMsgTakeValueOverrider alloc] init]);
    CS_LINE(out, "takeKey", ([taker setValue:@"x" forKey:@"anything"], @"done"));
    CS_LINE(out, "takeNilKey", ([taker setValue:@"x" forKey:cs_opaque(nil)], @"done"));
    CS_LINE(out, "takePath", ([taker setValue:@"x" forKeyPath:@"a.b"], @"done"));
    CS_LINE(out, "takeNilPath", ([taker setValue:@"x" forKeyPath:cs_opaque(nil)], @"done"));
    CS_LINE(out, "takeValueCalls", ([NSString stringWithFormat:@"%d", [taker calls]]));
    CSMsgUndefinedConstant *constant = CS_AUTORELEASE([[CSMsgUndefinedConstant alloc] init]);
    CS_LINE(out, "nilKeyToOverride", cs_describe([constant valueForKey:cs_opaque(nil)]));
    CS_LINE(out, "constantNilKeyWrite", ([constant setValue:@"x" forKey:cs_opaque(nil)], @"done"));
    CS_LINE(out, "nilKeyWritesToOverride", ([NSString stringWithFormat:@"%d", [constant writes]]));
    CS_LINE(out, "classOverride", cs_describe([CSMsgUndefinedConstant valueForKey:@"missing"]));
    NSMutableDictionary *dictionary = [NSMutableDictionary dictionaryWithObject:@"v" forKey:@"k"];
    CS_LINE(out, "dictionaryNilPath", cs_describe([dictionary valueForKeyPath:cs_opaque(nil)]));
    CS_LINE(out, "dictionaryNilKey", cs_describe([dictionary valueForKey:cs_opaque(nil)]));
    CS_LINE(out, "dictionaryNilPathWrite", ([dictionary setValue:@"x" forKeyPath:cs_opaque(nil)], @"done"));
    CS_LINE(out, "dictionaryAfterNilPathWrite", cs_describe(dictionary));
    CS_LINE(out, "classDescription", [(id)[CSMsgAppModel class] valueForKey:@"description"]);
    CS_LINE(out, "classKeyPath", cs_describe([[CSMsgAppModel class] valueForKeyPath:@"description.length"]));
    return cs_autoreleased_pointer(out);
}

/* Forwarding that is legal: system proxies (NSDistantObject, NSProtocolChecker), an app NSProxy
 * and app classes forwarding to JSON values, which the selector guard now covers. */
static void *oracle_forwarding_to_json_values(void) {
    NSMutableString *out = [NSMutableString string];
    NSMutableArray *array = [NSMutableArray arrayWithObjects:@"a", @"b", nil];
#if !defined(__APPLE__)
    id distant = [NSDistantObject proxyWithLocal:array connection:[NSConnection defaultConnection]];
    CS_LINE(out, "distantCount", ([NSString stringWithFormat:@"%lu", (unsigned long)[(NSArray *)distant count]]));
    /* No object crosses the connection: GNUstep 1.28 sometimes fails to decode one on the shared
     * default connection (ProxyDecodedBadTarget), with no guard installed. */
#endif
    id checker = [NSProtocolChecker protocolCheckerWithTarget:array protocol:@protocol(CSMsgCounting)];
    CS_LINE(out, "checkerCount", ([NSString stringWithFormat:@"%lu", (unsigned long)[(NSArray *)checker count]]));
    CS_LINE(out, "checkerOutsideProtocol", cs_describe([(NSArray *)checker lastObject]));
    CSMsgProxy *proxy = CS_AUTORELEASE([[CSMsgProxy alloc] initWithTarget:@"json"]);
    CS_LINE(out, "proxyLength", ([NSString stringWithFormat:@"%lu", (unsigned long)[(NSString *)proxy length]]));
    CS_LINE(out, "proxyHasPrefix", cs_yes_no([(NSString *)proxy hasPrefix:@"js"]));
    CSMsgTargetForwarder *forwarder = CS_AUTORELEASE([[CSMsgTargetForwarder alloc] init]);
    CS_LINE(out, "targetForwarderObjectForKey", cs_describe([(NSDictionary *)forwarder objectForKey:@"k"]));
    CS_LINE(out, "targetForwarderCount",
            ([NSString stringWithFormat:@"%lu", (unsigned long)[(NSDictionary *)forwarder count]]));
    CSMsgForwarder *invocation_forwarder = CS_AUTORELEASE([[CSMsgForwarder alloc] init]);
    CS_LINE(out, "invocationForwarderCapitalized", [(NSString *)invocation_forwarder capitalizedString]);
    return cs_autoreleased_pointer(out);
}

/* JSON values in legal use through Foundation's own code paths (serialisation, archiving,
 * property lists, KVC collection operators, sorting), which would show any reliance on an
 * unrecognized-selector exception inside Foundation. */
static void *oracle_json_values_in_foundation(void) {
    NSMutableString *out = [NSMutableString string];
    NSData *json = [@"{\"name\":\"Ada\",\"tags\":[\"a\",\"b\"],\"n\":3.5,\"none\":null,\"nested\":{\"k\":[1,2,3]}}"
        dataUsingEncoding:NSUTF8StringEncoding];
    id object = [NSJSONSerialization JSONObjectWithData:json options:NSJSONReadingMutableContainers error:NULL];
    CS_LINE(out, "parsedKeys", cs_describe([[object allKeys] sortedArrayUsingSelector:@selector(compare:)]));
    NSData *written = [NSJSONSerialization dataWithJSONObject:object options:0 error:NULL];
    id reparsed = [NSJSONSerialization JSONObjectWithData:written options:0 error:NULL];
    CS_LINE(out, "roundTripEqual", cs_yes_no([reparsed isEqual:object]));
    CS_LINE(out, "sumOfNested", cs_describe([object valueForKeyPath:@"nested.k.@sum.intValue"]));
    NSData *archive = [NSKeyedArchiver archivedDataWithRootObject:object];
    CS_LINE(out, "archiveRoundTrip", cs_yes_no([[NSKeyedUnarchiver unarchiveObjectWithData:archive] isEqual:object]));
    NSString *plist = [object description];
    CS_LINE(out, "propertyListRoundTrip", cs_yes_no([(NSDictionary *)[plist propertyList] count] == [(NSDictionary *)object count]));
    NSArray *mixed = [NSArray arrayWithObjects:@"b", @"a", @"c", nil];
    CS_LINE(out, "sorted", cs_describe([mixed sortedArrayUsingSelector:@selector(compare:)]));
    CS_LINE(out, "componentsJoined", [mixed componentsJoinedByString:@","]);
    CS_LINE(out, "numberFormatting", ([NSString stringWithFormat:@"%@ %@", [object objectForKey:@"n"],
                                                                  [[object objectForKey:@"n"] stringValue]]));
    return cs_autoreleased_pointer(out);
}

static const cs_oracle kOracles[] = {
    {"messages: class with its own forwarding", oracle_forwarding_class},
    {"messages: NSProxy subclass", oracle_proxy},
    {"messages: class overriding the KVC hooks", oracle_kvc_overrider},
    {"messages: ordinary KVC on properties and dictionaries", oracle_kvc_ordinary},
    {"messages: NSNull's own methods", oracle_nsnull_own_methods},
    {"messages: implemented methods and respondsToSelector:", oracle_implemented_messages},
    {"messages: introspection of selectors nobody implements", oracle_introspection},
    {"messages: KVC hand-offs to deprecated and overriding methods", oracle_kvc_handoffs},
    {"messages: legal forwarding to JSON values", oracle_forwarding_to_json_values},
    {"messages: JSON values in Foundation's own code", oracle_json_values_in_foundation},
};
const cs_oracle_table cs_message_oracles = CS_TABLE(kOracles);

#pragma mark - Bench

static volatile uintptr_t g_sink;

/* Baseline: an implemented method on the same object (the unguarded misuse throws). Guarded:
 * the unrecognized message after its first call (incident deduplicated by fingerprint). */
static uint64_t bench_selector_unrecognized(uint64_t iterations, bool guarded) {
    uint64_t elapsed;
    @autoreleasepool {
        CSMsgAppModel *model = cs_model();
        uintptr_t acc = 0;
        if (guarded) (void)[model cs_missingInt];
        uint64_t start = cs_bench_now();
        if (guarded)
            for (uint64_t i = 0; i < iterations; i++) acc += (uintptr_t)[model cs_missingInt];
        else
            for (uint64_t i = 0; i < iterations; i++) acc += (uintptr_t)[model knownValue];
        elapsed = cs_bench_now() - start;
        g_sink = acc;
    }
    return elapsed;
}

/* Baseline: -length on an empty string (what the guard answers with). Guarded: -length on NSNull. */
static uint64_t bench_nsnull_length(uint64_t iterations, bool guarded) {
    uint64_t elapsed = 0;
    id receiver = guarded ? cs_null() : cs_opaque([NSString string]);
    uint64_t done = 0;
    while (done < iterations) {
        uint64_t batch = iterations - done < 1024 ? iterations - done : 1024;
        @autoreleasepool {
            uintptr_t acc = 0;
            uint64_t start = cs_bench_now();
            for (uint64_t i = 0; i < batch; i++) acc += [(NSString *)receiver length];
            elapsed += cs_bench_now() - start;
            g_sink = acc;
        }
        done += batch;
    }
    return elapsed;
}

/* A legal performSelector: (the guard marks the call for the forward hook): same code both times. */
static uint64_t bench_selector_performSelector_legal(uint64_t iterations, bool guarded) {
    (void)guarded;
    uint64_t elapsed;
    @autoreleasepool {
        CSMsgAppModel *model = cs_model();
        SEL known = @selector(knownValue);
        uintptr_t acc = 0;
        uint64_t start = cs_bench_now();
        for (uint64_t i = 0; i < iterations; i++) acc += (uintptr_t)[model performSelector:known];
        elapsed = cs_bench_now() - start;
        g_sink = acc;
    }
    return elapsed;
}

/* JSON type confusion: baseline an implemented method of the NSNumber; guarded -length sent to
 * it (after its first call; incident deduplicated by fingerprint). */
static uint64_t bench_selector_json_confusion(uint64_t iterations, bool guarded) {
    uint64_t elapsed;
    @autoreleasepool {
        NSNumber *number = cs_opaque([NSNumber numberWithInt:5]);
        uintptr_t acc = 0;
        if (guarded) (void)[(NSString *)number length];
        uint64_t start = cs_bench_now();
        if (guarded)
            for (uint64_t i = 0; i < iterations; i++) acc += [(NSString *)number length];
        else
            for (uint64_t i = 0; i < iterations; i++) acc += [number unsignedIntegerValue];
        elapsed = cs_bench_now() - start;
        g_sink = acc;
    }
    return elapsed;
}

static const cs_bench_case kBenches[] = {
    {"selector.performSelector legal (same call both times)", bench_selector_performSelector_legal},
    {"selector.json -length to NSNumber (after first call; baseline: implemented method)",
     bench_selector_json_confusion},
    {"selector.unrecognized (after first call; baseline: implemented method)", bench_selector_unrecognized},
    {"nsnull.length (baseline: empty NSString length)", bench_nsnull_length},
};
const cs_bench_table cs_message_benches = CS_TABLE(kBenches);

#pragma mark - Helpers for the tests (cs_scenarios.h, "messages")

int cs_msg_system_class_unrecognized(void) {
    @autoreleasepool {
        @try {
            NSNumber *number = cs_opaque([NSNumber numberWithInt:5]);
            return [(NSString *)number length] == 0 ? 1 : 0;
        } @catch (NSException *exception) {
            (void)exception;
            return -1;
        }
    }
}

int cs_msg_forwarder_unknown(void) {
    @autoreleasepool {
        @try {
            CSMsgForwarder *forwarder = CS_AUTORELEASE([[CSMsgForwarder alloc] init]);
            return [(CSMsgAppModel *)forwarder cs_missingObject] == nil ? 1 : 0;
        } @catch (NSException *exception) {
            (void)exception;
            return -1;
        }
    }
}

int cs_msg_nsnull_answers_like_empty_values(void) {
    int wrong = 0;
    @autoreleasepool {
        id null = cs_null();
        /* Arguments in registers and on the variadic path (al = vector count). */
        if (![[(NSString *)null stringByAppendingFormat:@"%d-%@-%.1f", 5, @"x", 2.5] isEqualToString:@"5-x-2.5"])
            wrong |= 1;
        if (![[(NSString *)null stringByPaddingToLength:3 withString:@"ab" startingAtIndex:1] isEqualToString:@"bab"])
            wrong |= 2;
        /* A result returned in memory (NSDecimal is larger than 16 bytes). The empty string is
         * the first stand-in and answers decimalValue on GNUstep. */
        NSDecimal expected = [[NSString string] decimalValue];
        NSDecimal answered;
        memset(&answered, 0x5a, sizeof answered);
        answered = [(NSNumber *)null decimalValue];
        if (![NSDecimalString(&answered, nil) isEqualToString:NSDecimalString(&expected, nil)]) wrong |= 4;
        /* NSNotFound, as an empty string answers: not a zeroed "found at 0". */
        if ([(NSString *)null rangeOfString:@"a"].location != NSNotFound) wrong |= 8;
        if ([(NSArray *)null lastObject] != nil) wrong |= 16;
        if ([(NSDictionary *)null allKeys] == nil || [[(NSDictionary *)null allKeys] count] != 0) wrong |= 32;
        if ([(NSNumber *)null doubleValue] != 0.0) wrong |= 64;
    }
    return wrong;
}

typedef struct {
    uint32_t iterations;
    uint32_t failures;
} cs_msg_worker;

static void *cs_msg_work(void *argument) {
    cs_msg_worker *worker = argument;
    for (uint32_t i = 0; i < worker->iterations; i++) {
        @autoreleasepool {
            bool ok = selector_missingObject_instance() && selector_missingBig_sret() &&
                      selector_missingClassObject_class() && nsnull_length_string() && nsnull_count_array() &&
                      kvc_valueForKey_undefinedKey() && kvc_setValue_nilScalar();
            if (!ok) worker->failures++;
        }
    }
    return NULL;
}

uint32_t cs_msg_run_concurrently(uint32_t threads, uint32_t iterations) {
    if (threads > 16) threads = 16;
    pthread_t ids[16];
    cs_msg_worker workers[16];
    /* GNUstep must know the process is multi-threaded before the first foreign thread uses it. */
    [NSThread currentThread];
    for (uint32_t t = 0; t < threads; t++) {
        workers[t].iterations = iterations;
        workers[t].failures = 0;
        pthread_create(&ids[t], NULL, cs_msg_work, &workers[t]);
    }
    uint32_t failures = 0;
    for (uint32_t t = 0; t < threads; t++) {
        pthread_join(ids[t], NULL);
        failures += workers[t].failures;
    }
    return failures;
}

#pragma mark - Unknown return conventions (item: untyped selectors)

int cs_msg_untyped_call(int kind) {
#if defined(__APPLE__)
    (void)kind;
    return 3; /* objc_msg_lookup is GNU's; Apple selectors carry no types at all */
#else
    @autoreleasepool {
        id model = cs_model();
        @try {
            switch (kind) {
            case CS_MSG_UNTYPED_STRUCT32: {
                /* A 32-byte struct comes back in memory: the caller passes the buffer in rdi and
                 * the receiver in rsi. */
                SEL sel = NSSelectorFromString(@"frameThatNobodyImplements");
                CSMsgBig (*frame)(id, SEL) = (CSMsgBig(*)(id, SEL))objc_msg_lookup(model, sel);
                CSMsgBig big = frame(model, sel);
                return big.a == 0.0 ? 0 : 2;
            }
            case CS_MSG_UNTYPED_DOUBLE: {
                SEL sel = NSSelectorFromString(@"doubleThatNobodyImplements");
                double (*fn)(id, SEL) = (double (*)(id, SEL))objc_msg_lookup(model, sel);
                return fn(model, sel) == 0.0 ? 0 : 2;
            }
            case CS_MSG_UNTYPED_LONG_DOUBLE: {
                SEL sel = NSSelectorFromString(@"longDoubleThatNobodyImplements");
                long double (*fn)(id, SEL) = (long double (*)(id, SEL))objc_msg_lookup(model, sel);
                return fn(model, sel) == 0.0L ? 0 : 2;
            }
            case CS_MSG_UNTYPED_FLOAT: {
                SEL sel = NSSelectorFromString(@"floatThatNobodyImplements");
                float (*fn)(id, SEL) = (float (*)(id, SEL))objc_msg_lookup(model, sel);
                return fn(model, sel) == 0.0f ? 0 : 2;
            }
            case CS_MSG_UNTYPED_SMALL_STRUCT: {
                SEL sel = NSSelectorFromString(@"rangeThatNobodyImplements");
                NSRange (*fn)(id, SEL) = (NSRange(*)(id, SEL))objc_msg_lookup(model, sel);
                NSRange range = fn(model, sel);
                return range.location == 0 && range.length == 0 ? 0 : 2;
            }
            case CS_MSG_UNTYPED_VARIADIC: {
                SEL sel = NSSelectorFromString(@"formatThatNobodyImplements:");
                id (*fn)(id, SEL, NSString *, ...) = (id(*)(id, SEL, NSString *, ...))objc_msg_lookup(model, sel);
                return fn(model, sel, @"%d %f", 1, 2.5) == nil ? 0 : 2;
            }
            case CS_MSG_UNTYPED_NSNULL_STRUCT32: {
                SEL sel = NSSelectorFromString(@"frameThatNobodyImplements");
                id null = cs_null();
                CSMsgBig (*frame)(id, SEL) = (CSMsgBig(*)(id, SEL))objc_msg_lookup(null, sel);
                CSMsgBig big = frame(null, sel);
                return big.a == 0.0 ? 0 : 2;
            }
            default: return 3;
            }
        } @catch (NSException *exception) {
            return [[exception name] isEqualToString:NSInvalidArgumentException] ? 1 : -1;
        }
    }
#endif
}

int cs_msg_proxy_relays_unknown_to_json(void) {
    @autoreleasepool {
        @try {
            CSMsgProxy *proxy = CS_AUTORELEASE([[CSMsgProxy alloc] initWithTarget:@"proxied"]);
            return [(CSMsgAppModel *)proxy cs_missingObject] == nil ? 1 : 0;
        } @catch (NSException *exception) {
            (void)exception;
            return -1;
        }
    }
}

const char *cs_msg_json_class_name(int which) {
    switch (which) {
    case 0: return class_getName(object_getClass([NSNumber numberWithInt:5]));
    case 1: return class_getName(object_getClass([NSArray arrayWithObject:@"a"]));
    case 2: return class_getName(object_getClass([NSMutableDictionary dictionaryWithObject:@"v" forKey:@"k"]));
    case 3: return class_getName(object_getClass([NSMutableString stringWithString:@"abc"]));
    default: return "";
    }
}

int cs_msg_system_date_unrecognized(void) {
    @autoreleasepool {
        @try {
            NSDate *date = cs_opaque([NSDate dateWithTimeIntervalSince1970:0]);
            return [(NSString *)date length] == 0 ? 1 : 0;
        } @catch (NSException *exception) {
            (void)exception;
            return -1;
        }
    }
}

#pragma mark - A JSON-class subclass made at run time that forwards on its own

static NSMethodSignature *cs_msg_own_signature(CS_UNRETAINED id self, SEL _cmd, SEL sel) {
    (void)self;
    (void)_cmd;
    (void)sel;
    return [NSMethodSignature signatureWithObjCTypes:"i@:"];
}

static void cs_msg_own_forward(CS_UNRETAINED id self, SEL _cmd, NSInvocation *invocation) {
    (void)self;
    (void)_cmd;
    int answer = 42;
    [invocation setReturnValue:&answer];
}

int cs_msg_runtime_json_subclass_forwards(void) {
    static Class subclass;
    if (subclass == Nil) {
        /* Made at run time, so the selector guard judges it by its nearest superclass with an
         * image (NSString: a JSON value class); its forwarding is its own and must stay so. */
        subclass = objc_allocateClassPair([NSString class], "CSMsgRuntimeForwardingString", 0);
        class_addMethod(subclass, @selector(methodSignatureForSelector:), (IMP)cs_msg_own_signature, "@@::");
        class_addMethod(subclass, @selector(forwardInvocation:), (IMP)cs_msg_own_forward, "v@:@");
        objc_registerClassPair(subclass);
    }
    @autoreleasepool {
        @try {
            id object = cs_opaque([[subclass alloc] init]);
            int answer = [(CSMsgAppModel *)object cs_missingInt];
            CS_RELEASE(object);
            return answer;
        } @catch (NSException *exception) {
            (void)exception;
            return -1;
        }
    }
}

#pragma mark - An app class that gains its own forwarding after its first unrecognized message

/** Has no forwarding until cs_msg_late_forwarder_add_forwarding() adds it with class_addMethod,
 *  as aspect and hot-patch libraries do. */
@interface CSMsgLateForwarder : NSObject
@end

@implementation CSMsgLateForwarder
@end

/* -cs_missingInt sent to a new instance of `cls`: its answer, or -1 when it threw. */
static int cs_msg_missing_int_of_new(Class cls) {
    @autoreleasepool {
        @try {
            id object = cs_opaque([[cls alloc] init]);
            int answer = [(CSMsgAppModel *)object cs_missingInt];
            CS_RELEASE(object);
            return answer;
        } @catch (NSException *exception) {
            (void)exception;
            return -1;
        }
    }
}

int cs_msg_late_forwarder_missing_int(void) {
    return cs_msg_missing_int_of_new([CSMsgLateForwarder class]);
}

void cs_msg_late_forwarder_add_forwarding(void) {
    Class cls = [CSMsgLateForwarder class];
    class_addMethod(cls, @selector(methodSignatureForSelector:), (IMP)cs_msg_own_signature, "@@::");
    class_addMethod(cls, @selector(forwardInvocation:), (IMP)cs_msg_own_forward, "v@:@");
}

/** Answers -cs_missingInt with 42: the target CSMsgLateRedirector's added
 *  -forwardingTargetForSelector: hands messages to. */
@interface CSMsgAnswerTarget : NSObject
- (int)cs_missingInt;
@end

@implementation CSMsgAnswerTarget
- (int)cs_missingInt {
    return 42;
}
@end

/** Gains -forwardingTargetForSelector: only in cs_msg_late_forwarder_add_target(). */
@interface CSMsgLateRedirector : NSObject
@end

@implementation CSMsgLateRedirector
@end

static id cs_msg_answer_target(CS_UNRETAINED id self, SEL _cmd, SEL sel) {
    (void)self;
    (void)_cmd;
    (void)sel;
    static id target;
    if (target == nil) target = [[CSMsgAnswerTarget alloc] init]; /* kept for the process */
    return target;
}

int cs_msg_late_redirector_missing_int(void) {
    return cs_msg_missing_int_of_new([CSMsgLateRedirector class]);
}

void cs_msg_late_forwarder_add_target(void) {
    class_addMethod([CSMsgLateRedirector class], @selector(forwardingTargetForSelector:), (IMP)cs_msg_answer_target,
                    "@@::");
}
