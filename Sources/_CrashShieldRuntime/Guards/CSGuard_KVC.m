/*
 * CSGuard_KVC.m — key-value coding misuse on any object or class object.
 *
 * Only NSObject's own implementations are replaced (root-only hooks): a class that overrides one
 * of these methods keeps its behaviour and reaches the guard only by calling super. GCC libobjc
 * gives the root metaclass its own copies of NSObject's instance methods (so that class objects
 * answer them), so each method is hooked twice: on NSObject and on its metaclass, and
 * `[SomeClass valueForKey:@"missing"]` is covered like an instance. Unknown keys inside key paths
 * and unknown @operators end in valueForUndefinedKey:, so bad key paths are covered by that hook.
 *
 * The guard intervenes only where the original would raise. Before raising, GNUstep's NSObject
 * hands the call on (Source/NSKeyValueCoding.m, 1.28), and so does the guard:
 * - setValue:forUndefinedKey: -> handleTakeValue:forUnboundKey:, valueForUndefinedKey: ->
 *   handleQueryWithUnboundKey:, setNilValueForKey: -> unableToSetNilForKey:, each when the
 *   receiver's implementation of the deprecated method is not NSObject's;
 * - setValue:forKey: -> takeValue:forKey:, setValue:forKeyPath: -> takeValue:forKeyPath: when
 *   overridden (GNUstep also lets its KVO subclass's versions through; the guard judges by the
 *   class the object reports, so an observed object of a class that overrides them is left to
 *   the original);
 * - a nil key or key path goes on to valueForKey: / setValue:forKey: (which a class such as
 *   NSDictionary overrides: [dictionary valueForKeyPath:nil] is legal) and then to the
 *   undefined-key methods above, with an empty key.
 * So a nil key is neutralised at the entry point (with an incident naming it) exactly when that
 * chain ends in NSObject's raise; otherwise the original runs.
 *
 * Neutralised results: undefined key read → nil; undefined key write → ignored; nil for a scalar
 * → ignored; nil key or key path → nil / ignored.
 */
#import "../Engine/CSEngine.h"
#import "../Backend/CSBackend.h"
#include <pthread.h>

CS_GUARD_CODE_SECTION(kvc) /* every function below: see CS_GUARD_METHOD */

extern CSGuard CSGuardKVC;
#define G (&CSGuardKVC)

/* Set once, before the first hand-off check (only misuse paths read them). */
static pthread_once_t g_prepared = PTHREAD_ONCE_INIT;
static CS_UNRETAINED Class g_root;      /* NSObject */
static CS_UNRETAINED Class g_root_meta; /* its metaclass */
static SEL g_handle_query, g_handle_take, g_unable_nil, g_take_value, g_take_path, g_value_for_undefined,
    g_set_for_undefined, g_value_for_key, g_set_for_key;

static void cs_kvc_prepare(void) {
    g_root = CS_CLASS(NSObject);
    g_root_meta = object_getClass((id)g_root);
    g_handle_query = cs_backend_selector("handleQueryWithUnboundKey:");
    g_handle_take = cs_backend_selector("handleTakeValue:forUnboundKey:");
    g_unable_nil = cs_backend_selector("unableToSetNilForKey:");
    g_take_value = cs_backend_selector("takeValue:forKey:");
    g_take_path = cs_backend_selector("takeValue:forKeyPath:");
    g_value_for_undefined = cs_backend_selector("valueForUndefinedKey:");
    g_set_for_undefined = cs_backend_selector("setValue:forUndefinedKey:");
    g_value_for_key = cs_backend_selector("valueForKey:");
    g_set_for_key = cs_backend_selector("setValue:forKey:");
}

#pragma mark - Hand-offs of the original

/* True when `self` answers `sel` with another implementation than NSObject's, judged as
 * GNUstep's own checks judge it ([self methodForSelector:] against NSObject's): the object's
 * class, or the metaclass for a class object. For a hooked method, NSObject's is the hook. */
static BOOL cs_kvc_overridden(CS_UNRETAINED id self, SEL sel) {
    BOOL is_class = cs_backend_is_class_object(self);
    IMP root = class_getMethodImplementation(is_class ? g_root_meta : g_root, sel);
    return class_getMethodImplementation(object_getClass(self), sel) != root;
}

/* The same, judged by the class the object reports (an observed object's KVO subclass is not
 * the app's override). */
static BOOL cs_kvc_overridden_by_app(CS_UNRETAINED id self, SEL sel) {
    if (cs_backend_is_class_object(self)) return cs_kvc_overridden(self, sel);
    return class_getMethodImplementation([self class], sel) != class_getMethodImplementation(g_root, sel);
}

/* Each predicate below answers whether NSObject's original, called now on `self`, would end in
 * its raise rather than in a method of the receiver's own (see the header). */

static BOOL cs_kvc_undefined_read_raises(CS_UNRETAINED id self) {
    pthread_once(&g_prepared, cs_kvc_prepare);
    return !cs_kvc_overridden(self, g_handle_query);
}

static BOOL cs_kvc_undefined_write_raises(CS_UNRETAINED id self) {
    pthread_once(&g_prepared, cs_kvc_prepare);
    return !cs_kvc_overridden(self, g_handle_take);
}

static BOOL cs_kvc_nil_for_scalar_raises(CS_UNRETAINED id self) {
    pthread_once(&g_prepared, cs_kvc_prepare);
    return !cs_kvc_overridden(self, g_unable_nil);
}

static BOOL cs_kvc_nil_key_read_raises(CS_UNRETAINED id self) {
    pthread_once(&g_prepared, cs_kvc_prepare);
    return !cs_kvc_overridden(self, g_value_for_undefined) && !cs_kvc_overridden(self, g_handle_query);
}

static BOOL cs_kvc_nil_key_write_raises(CS_UNRETAINED id self) {
    pthread_once(&g_prepared, cs_kvc_prepare);
    return !cs_kvc_overridden_by_app(self, g_take_value) && !cs_kvc_overridden(self, g_set_for_undefined) &&
           !cs_kvc_overridden(self, g_handle_take);
}

/* Either way GNUstep splits a nil path (see below), [self valueForKey:nil] comes first. */
static BOOL cs_kvc_nil_path_read_raises(CS_UNRETAINED id self) {
    pthread_once(&g_prepared, cs_kvc_prepare);
    return !cs_kvc_overridden(self, g_value_for_key) && cs_kvc_nil_key_read_raises(self);
}

/* GNUstep splits a nil path with [nil rangeOfString:], whose NSRange is undefined on GCC libobjc
 * (rdx is not cleared): it goes on to [self setValue:v forKey:nil] or to
 * [[self valueForKey:nil] setValue:v forKeyPath:nil]. Neutralised only when both would raise. */
static BOOL cs_kvc_nil_path_write_raises(CS_UNRETAINED id self) {
    pthread_once(&g_prepared, cs_kvc_prepare);
    return !cs_kvc_overridden_by_app(self, g_take_path) && !cs_kvc_overridden(self, g_set_for_key) &&
           cs_kvc_nil_key_write_raises(self) && !cs_kvc_overridden(self, g_value_for_key) &&
           cs_kvc_nil_key_read_raises(self);
}

#pragma mark - Hook bodies

static inline void cs_kvc_setValueForUndefinedKey(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                                  CS_UNRETAINED id value, CS_UNRETAINED id key) {
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_kvc_undefined_write_raises(self) &&
        cs_guard_misuse(G, self, _cmd, caller, "undefined key: value ignored", 0, 0, 0))
        return;
    ((void (*)(id, SEL, id, id))original)(self, _cmd, value, key);
}
CS_DEFINE_HOOK_2(cs_kvc_setValueForUndefinedKey, void, CS_UNRETAINED id, CS_UNRETAINED id)

static inline id cs_kvc_valueForUndefinedKey(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                             CS_UNRETAINED id key) {
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_kvc_undefined_read_raises(self) &&
        cs_guard_misuse(G, self, _cmd, caller, "undefined key: nil returned", 0, 0, 0))
        return nil;
    return ((id(*)(id, SEL, id))original)(self, _cmd, key);
}
CS_DEFINE_HOOK_1(cs_kvc_valueForUndefinedKey, id, CS_UNRETAINED id)

static inline void cs_kvc_setNilValueForKey(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                            CS_UNRETAINED id key) {
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_kvc_nil_for_scalar_raises(self) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil for a scalar property: ignored", 0, 0, 0))
        return;
    ((void (*)(id, SEL, id))original)(self, _cmd, key);
}
CS_DEFINE_HOOK_1(cs_kvc_setNilValueForKey, void, CS_UNRETAINED id)

static inline void cs_kvc_setValueForKey(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                         CS_UNRETAINED id value, CS_UNRETAINED id key) {
    if (CS_UNLIKELY(key == nil) && cs_guard_is_on(G) && cs_kvc_nil_key_write_raises(self) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil key: value ignored", 0, 0, 0))
        return;
    ((void (*)(id, SEL, id, id))original)(self, _cmd, value, key);
}
CS_DEFINE_HOOK_2(cs_kvc_setValueForKey, void, CS_UNRETAINED id, CS_UNRETAINED id)

static inline id cs_kvc_valueForKey(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                    CS_UNRETAINED id key) {
    if (CS_UNLIKELY(key == nil) && cs_guard_is_on(G) && cs_kvc_nil_key_read_raises(self) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil key: nil returned", 0, 0, 0))
        return nil;
    return ((id(*)(id, SEL, id))original)(self, _cmd, key);
}
CS_DEFINE_HOOK_1(cs_kvc_valueForKey, id, CS_UNRETAINED id)

static inline void cs_kvc_setValueForKeyPath(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                             CS_UNRETAINED id value, CS_UNRETAINED id path) {
    if (CS_UNLIKELY(path == nil) && cs_guard_is_on(G) && cs_kvc_nil_path_write_raises(self) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil key path: value ignored", 0, 0, 0))
        return;
    ((void (*)(id, SEL, id, id))original)(self, _cmd, value, path);
}
CS_DEFINE_HOOK_2(cs_kvc_setValueForKeyPath, void, CS_UNRETAINED id, CS_UNRETAINED id)

static inline id cs_kvc_valueForKeyPath(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                        CS_UNRETAINED id path) {
    if (CS_UNLIKELY(path == nil) && cs_guard_is_on(G) && cs_kvc_nil_path_read_raises(self) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil key path: nil returned", 0, 0, 0))
        return nil;
    return ((id(*)(id, SEL, id))original)(self, _cmd, path);
}
CS_DEFINE_HOOK_1(cs_kvc_valueForKeyPath, id, CS_UNRETAINED id)

/* Class side: the same bodies behind their own slots (the root metaclass's copies). */
static inline void cs_kvc_class_setValueForUndefinedKey(IMP original, CS_UNRETAINED id self, SEL _cmd,
                                                        const void *caller, CS_UNRETAINED id value,
                                                        CS_UNRETAINED id key) {
    cs_kvc_setValueForUndefinedKey(original, self, _cmd, caller, value, key);
}
CS_DEFINE_HOOK_2(cs_kvc_class_setValueForUndefinedKey, void, CS_UNRETAINED id, CS_UNRETAINED id)
static inline id cs_kvc_class_valueForUndefinedKey(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                                   CS_UNRETAINED id key) {
    return cs_kvc_valueForUndefinedKey(original, self, _cmd, caller, key);
}
CS_DEFINE_HOOK_1(cs_kvc_class_valueForUndefinedKey, id, CS_UNRETAINED id)
static inline void cs_kvc_class_setNilValueForKey(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                                  CS_UNRETAINED id key) {
    cs_kvc_setNilValueForKey(original, self, _cmd, caller, key);
}
CS_DEFINE_HOOK_1(cs_kvc_class_setNilValueForKey, void, CS_UNRETAINED id)
static inline void cs_kvc_class_setValueForKey(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                               CS_UNRETAINED id value, CS_UNRETAINED id key) {
    cs_kvc_setValueForKey(original, self, _cmd, caller, value, key);
}
CS_DEFINE_HOOK_2(cs_kvc_class_setValueForKey, void, CS_UNRETAINED id, CS_UNRETAINED id)
static inline id cs_kvc_class_valueForKey(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                          CS_UNRETAINED id key) {
    return cs_kvc_valueForKey(original, self, _cmd, caller, key);
}
CS_DEFINE_HOOK_1(cs_kvc_class_valueForKey, id, CS_UNRETAINED id)
static inline void cs_kvc_class_setValueForKeyPath(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                                   CS_UNRETAINED id value, CS_UNRETAINED id path) {
    cs_kvc_setValueForKeyPath(original, self, _cmd, caller, value, path);
}
CS_DEFINE_HOOK_2(cs_kvc_class_setValueForKeyPath, void, CS_UNRETAINED id, CS_UNRETAINED id)
static inline id cs_kvc_class_valueForKeyPath(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                              CS_UNRETAINED id path) {
    return cs_kvc_valueForKeyPath(original, self, _cmd, caller, path);
}
CS_DEFINE_HOOK_1(cs_kvc_class_valueForKeyPath, id, CS_UNRETAINED id)

#pragma mark - Registration


static const CSHookSpec kKVCHooks[] = {
    CS_ROOT_HOOK("NSObject", "setValue:forUndefinedKey:", cs_kvc_setValueForUndefinedKey),
    CS_ROOT_HOOK("NSObject", "valueForUndefinedKey:", cs_kvc_valueForUndefinedKey),
    CS_ROOT_HOOK("NSObject", "setNilValueForKey:", cs_kvc_setNilValueForKey),
    CS_ROOT_HOOK("NSObject", "setValue:forKey:", cs_kvc_setValueForKey),
    CS_ROOT_HOOK("NSObject", "valueForKey:", cs_kvc_valueForKey),
    CS_ROOT_HOOK("NSObject", "setValue:forKeyPath:", cs_kvc_setValueForKeyPath),
    CS_ROOT_HOOK("NSObject", "valueForKeyPath:", cs_kvc_valueForKeyPath),
    CS_CLASS_ROOT_HOOK("NSObject", "setValue:forUndefinedKey:", cs_kvc_class_setValueForUndefinedKey),
    CS_CLASS_ROOT_HOOK("NSObject", "valueForUndefinedKey:", cs_kvc_class_valueForUndefinedKey),
    CS_CLASS_ROOT_HOOK("NSObject", "setNilValueForKey:", cs_kvc_class_setNilValueForKey),
    CS_CLASS_ROOT_HOOK("NSObject", "setValue:forKey:", cs_kvc_class_setValueForKey),
    CS_CLASS_ROOT_HOOK("NSObject", "valueForKey:", cs_kvc_class_valueForKey),
    CS_CLASS_ROOT_HOOK("NSObject", "setValue:forKeyPath:", cs_kvc_class_setValueForKeyPath),
    CS_CLASS_ROOT_HOOK("NSObject", "valueForKeyPath:", cs_kvc_class_valueForKeyPath),
};

static const char *cs_kvc_canary(void) {
    NSObject *object = CS_AUTORELEASE([[CS_CLASS(NSObject) alloc] init]);
    NSString *missing = [CS_CLASS(NSString) stringWithUTF8String:"cs_canaryNoSuchKey"];
    CS_CANARY_MISUSE([object valueForKey:missing] == nil, "-[NSObject valueForUndefinedKey:] not intercepted");
    CS_CANARY_MISUSE([(id)CS_CLASS(NSObject) valueForKey:missing] == nil, "+[NSObject valueForUndefinedKey:] not intercepted");
    CS_CANARY_LEGAL([object valueForKey:[CS_CLASS(NSString) stringWithUTF8String:"description"]] != nil,
                    "-[NSObject valueForKey:] legal call changed");
    return NULL;
}

CS_GUARD_DEFINE(CSGuardKVC, kvc, kKVCHooks, cs_kvc_canary);
