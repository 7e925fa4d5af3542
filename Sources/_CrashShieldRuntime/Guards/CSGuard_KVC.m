/*
 * CSGuard_KVC.m — SPEC §2.5: key-value coding misuse on any object.
 *
 * Only NSObject's own implementations are replaced (CS_ROOT_HOOK): a class that overrides one of
 * these methods keeps its behaviour and reaches the guard only by calling super. Unknown keys
 * inside key paths and unknown @operators end in valueForUndefinedKey:, so bad key paths are
 * covered by that hook (research/gnustep-probe.md §6). A nil key is checked in the entry points
 * because it would otherwise surface as an undefined key with a less precise incident.
 *
 * Neutralised results: undefined key read → nil; undefined key write → ignored; nil for a scalar
 * → ignored; nil key or key path → nil / ignored.
 */
#import "../Engine/CSEngine.h"

#pragma clang section text = "cs_guard_kvc" /* every function below: see CS_GUARD_METHOD */

extern CSGuard CSGuardKVC;
#define G (&CSGuardKVC)

static inline void cs_kvc_setValueForUndefinedKey(IMP original, id self, SEL _cmd, const void *caller, id value,
                                                  id key) {
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_guard_misuse(G, self, _cmd, caller, "undefined key: value ignored", 0, 0, 0))
        return;
    ((void (*)(id, SEL, id, id))original)(self, _cmd, value, key);
}
CS_DEFINE_HOOK_2(cs_kvc_setValueForUndefinedKey, void, id, id)

static inline id cs_kvc_valueForUndefinedKey(IMP original, id self, SEL _cmd, const void *caller, id key) {
    if (CS_LIKELY(cs_guard_is_on(G)) && cs_guard_misuse(G, self, _cmd, caller, "undefined key: nil returned", 0, 0, 0))
        return nil;
    return ((id(*)(id, SEL, id))original)(self, _cmd, key);
}
CS_DEFINE_HOOK_1(cs_kvc_valueForUndefinedKey, id, id)

static inline void cs_kvc_setNilValueForKey(IMP original, id self, SEL _cmd, const void *caller, id key) {
    if (CS_LIKELY(cs_guard_is_on(G)) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil for a scalar property: ignored", 0, 0, 0))
        return;
    ((void (*)(id, SEL, id))original)(self, _cmd, key);
}
CS_DEFINE_HOOK_1(cs_kvc_setNilValueForKey, void, id)

static inline void cs_kvc_setValueForKey(IMP original, id self, SEL _cmd, const void *caller, id value, id key) {
    if (CS_UNLIKELY(key == nil) && cs_guard_is_on(G) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil key: value ignored", 0, 0, 0))
        return;
    ((void (*)(id, SEL, id, id))original)(self, _cmd, value, key);
}
CS_DEFINE_HOOK_2(cs_kvc_setValueForKey, void, id, id)

static inline id cs_kvc_valueForKey(IMP original, id self, SEL _cmd, const void *caller, id key) {
    if (CS_UNLIKELY(key == nil) && cs_guard_is_on(G) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil key: nil returned", 0, 0, 0))
        return nil;
    return ((id(*)(id, SEL, id))original)(self, _cmd, key);
}
CS_DEFINE_HOOK_1(cs_kvc_valueForKey, id, id)

static inline void cs_kvc_setValueForKeyPath(IMP original, id self, SEL _cmd, const void *caller, id value,
                                             id path) {
    if (CS_UNLIKELY(path == nil) && cs_guard_is_on(G) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil key path: value ignored", 0, 0, 0))
        return;
    ((void (*)(id, SEL, id, id))original)(self, _cmd, value, path);
}
CS_DEFINE_HOOK_2(cs_kvc_setValueForKeyPath, void, id, id)

static inline id cs_kvc_valueForKeyPath(IMP original, id self, SEL _cmd, const void *caller, id path) {
    if (CS_UNLIKELY(path == nil) && cs_guard_is_on(G) &&
        cs_guard_misuse(G, self, _cmd, caller, "nil key path: nil returned", 0, 0, 0))
        return nil;
    return ((id(*)(id, SEL, id))original)(self, _cmd, path);
}
CS_DEFINE_HOOK_1(cs_kvc_valueForKeyPath, id, id)

#pragma mark - Registration

static const CSHookSpec kKVCHooks[] = {
    CS_ROOT_HOOK("NSObject", "setValue:forUndefinedKey:", cs_kvc_setValueForUndefinedKey),
    CS_ROOT_HOOK("NSObject", "valueForUndefinedKey:", cs_kvc_valueForUndefinedKey),
    CS_ROOT_HOOK("NSObject", "setNilValueForKey:", cs_kvc_setNilValueForKey),
    CS_ROOT_HOOK("NSObject", "setValue:forKey:", cs_kvc_setValueForKey),
    CS_ROOT_HOOK("NSObject", "valueForKey:", cs_kvc_valueForKey),
    CS_ROOT_HOOK("NSObject", "setValue:forKeyPath:", cs_kvc_setValueForKeyPath),
    CS_ROOT_HOOK("NSObject", "valueForKeyPath:", cs_kvc_valueForKeyPath),
};

static const char *cs_kvc_canary(void) {
    NSObject *object = CS_AUTORELEASE([[NSObject alloc] init]);
    NSString *missing = [NSString stringWithUTF8String:"cs_canaryNoSuchKey"];
    CS_CANARY_MISUSE([object valueForKey:missing] == nil, "-[NSObject valueForUndefinedKey:] not intercepted");
    CS_CANARY_LEGAL([object valueForKey:[NSString stringWithUTF8String:"description"]] != nil,
                    "-[NSObject valueForKey:] legal call changed");
    return NULL;
}

CS_GUARD_DEFINE(CSGuardKVC, kvc, kKVCHooks, cs_kvc_canary);
