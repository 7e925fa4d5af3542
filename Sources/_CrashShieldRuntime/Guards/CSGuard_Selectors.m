/*
 * CSGuard_Selectors.m — a message that no class in the receiver's chain implements
 * returns nil / 0 / 0.0 / a zeroed struct instead of throwing, and is recorded with `+` or `-`.
 *
 * Mechanism: not a method swizzle. The backend's forward handler (the runtime's forward hook on
 * GNUstep, chained to GNUstep's own) asks cs_selectors_decide() about every unrecognized message
 * whose return convention it knows; the stub it then returns reports through
 * cs_selectors_report() with the real call site. A message whose convention is unknown (an
 * untyped selector called through a looked-up IMP) is never answered: the runtime throws as
 * unguarded. NSObject's performSelector: family (instance and class side: GCC libobjc gives the
 * root metaclass its own copies of NSObject's methods) is hooked only to tell the backend that
 * its call expects an object in a register, so performSelector: with an unknown selector is
 * answered.
 *
 * Scope, decided per receiver class and cached; whether the class has forwarding of its own is
 * asked again on every unrecognized message to a class in scope (methods may be added later):
 * - left alone: receivers whose root class is not NSObject (NSProxy subclasses and other roots),
 *   and classes with their own forwarding: an implementation of forwardInvocation:,
 *   methodSignatureForSelector:, forwardingTargetForSelector: (instance or class side, as the
 *   message is), +resolveInstanceMethod: or +resolveClassMethod: other than NSObject's, found at
 *   run time (inherited ones count);
 * - guarded by default: classes from the app's own images (cs_backend_class_is_system), and
 *   instance messages to the JSON value classes (every class at or below NSString, NSNumber,
 *   NSArray or NSDictionary, mutable forms and private concrete classes included), the type
 *   confusion a decoded JSON document causes (-length sent to an NSNumber);
 * - NSNull: the nsnull guard decides (the backend never asks this guard about it);
 * - class filters (read on every message, never cached): a deny-listed class is left alone; when
 *   allow prefixes are set they replace the default scope (an allow-listed system class such as
 *   NSDate is guarded, an unlisted app or JSON class is not).
 * respondsToSelector:, methodSignatureForSelector:, instancesRespondToSelector: and
 * forwardingTargetForSelector: keep their answers: no method is ever added.
 */
#import "../Engine/CSEngine.h"
#import "../Backend/CSBackend.h"
#include <string.h>

CS_GUARD_CODE_SECTION(selector) /* every function below: see CS_GUARD_METHOD */

extern CSGuard CSGuardSelectors;
#define G (&CSGuardSelectors)

static const char *const kUnrecognizedReason = "unrecognized selector: nil/0 returned";

#pragma mark - Scope cache

enum { CS_SCOPE_NONE = 0, CS_SCOPE_APP = 1, CS_SCOPE_SYSTEM = 2, CS_SCOPE_OWN_FORWARDING = 3, CS_SCOPE_JSON = 4 };

/* The public roots of the JSON value classes, NSString, NSNumber, NSArray and NSDictionary (their
 * subclasses are found by walking a receiver's superclass chain, so no private class name is
 * needed). Set at install. */
#define CS_JSON_ROOT_COUNT 4
static CS_UNRETAINED Class g_json_roots[CS_JSON_ROOT_COUNT];

static BOOL cs_is_json_value_class(Class plain) {
    for (Class c = plain; c != Nil; c = class_getSuperclass(c))
        for (int i = 0; i < CS_JSON_ROOT_COUNT; i++)
            if (c == g_json_roots[i]) return YES;
    return NO;
}

#define CS_SCOPE_CACHE_SIZE 1024u /* power of two */
#define CS_SCOPE_PROBES 16u

/* Open addressing keyed by the receiver's class (the metaclass for `+` messages). A slot's key
 * is claimed once with a CAS and never changes until uninstall; its scope is written after. */
typedef struct {
    uintptr_t key; /* the Class, as an integer for the atomic builtins */
    int scope;
} cs_scope_entry;

static cs_scope_entry g_scope_cache[CS_SCOPE_CACHE_SIZE];
static CS_UNRETAINED Class g_canary_class; /* always in scope, so the canary does not depend on images or filters */

static IMP cs_method_imp(Class cls, SEL sel) {
    Method method = class_getInstanceMethod(cls, sel);
    return method ? method_getImplementation(method) : NULL;
}

/* YES when the class has forwarding of its own (see the file comment): an implementation other
 * than NSObject's of a forwarding method or a resolver. `dispatch_class` is the class (or
 * metaclass) the message was looked up in; `nsobject` is NSObject. */
static BOOL cs_has_own_forwarding(Class plain, Class dispatch_class, BOOL is_class, Class nsobject) {
    static const char *const kForwarding[] = {"forwardInvocation:", "methodSignatureForSelector:",
                                              "forwardingTargetForSelector:"};
    Class reference = is_class ? object_getClass((id)nsobject) : nsobject;
    for (size_t i = 0; i < sizeof kForwarding / sizeof kForwarding[0]; i++) {
        SEL sel = cs_backend_selector(kForwarding[i]);
        if (cs_method_imp(dispatch_class, sel) != cs_method_imp(reference, sel)) return YES;
    }
    static const char *const kResolvers[] = {"resolveInstanceMethod:", "resolveClassMethod:"};
    Class meta = object_getClass((id)plain);
    Class nsobject_meta = object_getClass((id)nsobject);
    for (size_t i = 0; i < sizeof kResolvers / sizeof kResolvers[0]; i++) {
        SEL sel = cs_backend_selector(kResolvers[i]);
        if (cs_method_imp(meta, sel) != cs_method_imp(nsobject_meta, sel)) return YES;
    }
    return NO;
}

/* `dispatch_class` is the class (or metaclass) the message was looked up in. */
static int cs_compute_scope(Class plain, Class dispatch_class, BOOL is_class) {
    Class root = plain;
    while (class_getSuperclass(root) != Nil) root = class_getSuperclass(root);
    Class nsobject = CS_CLASS(NSObject);
    if (root != nsobject) return CS_SCOPE_OWN_FORWARDING; /* NSProxy and other roots */
    if (cs_has_own_forwarding(plain, dispatch_class, is_class, nsobject)) return CS_SCOPE_OWN_FORWARDING;
    if (!cs_backend_class_is_system(plain)) return CS_SCOPE_APP;
    return !is_class && cs_is_json_value_class(plain) ? CS_SCOPE_JSON : CS_SCOPE_SYSTEM;
}

static int cs_scope_for(Class plain, Class dispatch_class, BOOL is_class) {
    uint32_t start = (uint32_t)(((uintptr_t)dispatch_class >> 4) * 2654435761u);
    cs_scope_entry *free_slot = NULL;
    for (uint32_t probe = 0; probe < CS_SCOPE_PROBES; probe++) {
        cs_scope_entry *entry = &g_scope_cache[(start + probe) & (CS_SCOPE_CACHE_SIZE - 1)];
        uintptr_t key = CS_ATOMIC_LOAD(&entry->key);
        if (key == (uintptr_t)dispatch_class) {
            int scope = CS_ATOMIC_LOAD(&entry->scope);
            if (scope == CS_SCOPE_NONE) break; /* being computed by another thread: compute it too */
            /* Forwarding can be added later (class_addMethod: aspect and hot-patch libraries), never
             * taken away: a class in scope is asked again each time, on this path only (messages
             * no class answers). */
            if (scope != CS_SCOPE_OWN_FORWARDING &&
                cs_has_own_forwarding(plain, dispatch_class, is_class, CS_CLASS(NSObject))) {
                scope = CS_SCOPE_OWN_FORWARDING;
                CS_ATOMIC_STORE(&entry->scope, scope);
            }
            return scope;
        }
        if (key == 0) {
            free_slot = entry;
            break;
        }
    }
    int scope = cs_compute_scope(plain, dispatch_class, is_class);
    if (free_slot != NULL) {
        uintptr_t expected = 0;
        if (__atomic_compare_exchange_n(&free_slot->key, &expected, (uintptr_t)dispatch_class, NO, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            CS_ATOMIC_STORE(&free_slot->scope, scope);
    }
    return scope;
}

#pragma mark - Forward handler

static cs_forward_decision cs_selectors_decide(CS_UNRETAINED id receiver, SEL sel) {
    cs_policy policy = cs_guard_policy(G);
    if (policy == CS_POLICY_OFF) return CS_FORWARD_DECLINE;
    BOOL is_class = cs_backend_is_class_object(receiver);
    Class dispatch_class = object_getClass(receiver);
    Class plain = is_class ? (Class)receiver : dispatch_class;
    int scope = cs_scope_for(plain, dispatch_class, is_class);
    if (scope == CS_SCOPE_OWN_FORWARDING) return CS_FORWARD_DECLINE;
    if (plain != g_canary_class) {
        cs_class_listing listing = cs_guard_class_listing(plain);
        if (listing == CS_CLASS_DENY_LISTED || listing == CS_CLASS_NOT_ALLOW_LISTED) return CS_FORWARD_DECLINE;
        if (scope == CS_SCOPE_SYSTEM && listing != CS_CLASS_ALLOW_LISTED) return CS_FORWARD_DECLINE;
    }
    if (policy == CS_POLICY_REPORT_ONLY) {
        /* Recorded here (the call site is not known yet: the stack is captured instead), then
         * the runtime's own forwarding throws as it would have. */
        cs_guard_record(G, receiver, sel, NULL, kUnrecognizedReason, 0, 0, 0);
        return CS_FORWARD_DECLINE;
    }
    return CS_FORWARD_STUB;
}

static void cs_selectors_report(CS_UNRETAINED id receiver, SEL sel, const void *caller) {
    cs_guard_record(G, receiver, sel, caller, kUnrecognizedReason, 0, 0, 0);
}

#pragma mark - performSelector: (a call whose convention is known)

/* GNUstep's performSelector: looks the selector up and calls the IMP as `id (*)(id, SEL, ...)`:
 * the mark tells the backend so, for exactly that lookup. The original is called unchanged.
 * The mark is only needed when the lookup can reach the forward hook, so a receiver whose class
 * already answers `sel` from its dispatch table (class_respondsToSelector: a table read, no
 * resolver, no side effect) goes straight to the original without a mark. A NO is conservative:
 * a method that +resolveInstanceMethod: adds later still finds its call marked, and the mark is
 * consumed only by an unrecognized lookup. On Apple the mark is free (the backend ignores it) and
 * class_respondsToSelector may run a resolver, so there the mark is always set.
 *
 * The last (class, selector) pair found answered is remembered per thread, so a repeated legal
 * call costs two compares and no call or frame before the original (the memo is the fast slots'
 * predicate). A class never loses a method, so the
 * memo never leaves an unknown selector unmarked; the one exception, a class pair disposed and
 * another allocated at its address, can only leave a call unmarked, which the backend then declines
 * (the runtime throws as unguarded): never a changed legal result. */
#if defined(__APPLE__)
static inline BOOL cs_sel_answered_by_table(CS_UNRETAINED id self, SEL sel) {
    (void)self;
    (void)sel;
    return NO;
}
#define cs_sel_answered_by_memo cs_sel_answered_by_table
#else
typedef struct {
    uintptr_t cls;
    SEL sel;
} cs_sel_answered_memo;
static __thread cs_sel_answered_memo t_answered __attribute__((tls_model("initial-exec")));

__attribute__((noinline)) static BOOL cs_sel_answered_slow(uintptr_t cls, SEL sel) {
    if (!class_respondsToSelector((Class)CS_OBJECT((void *)cls), sel)) return NO;
    t_answered.cls = cls;
    t_answered.sel = sel;
    return YES;
}

/** The fast slots' predicate: the memo answers (call-free). */
static inline __attribute__((always_inline)) BOOL cs_sel_answered_by_memo(CS_UNRETAINED id self, SEL sel) {
    uintptr_t cls = (uintptr_t)object_getClass(self);
    return t_answered.cls == cls && t_answered.sel == sel && cls != 0;
}

static inline __attribute__((always_inline)) BOOL cs_sel_answered_by_table(CS_UNRETAINED id self, SEL sel) {
    if (CS_LIKELY(cs_sel_answered_by_memo(self, sel))) return YES;
    return cs_sel_answered_slow((uintptr_t)object_getClass(self), sel);
}
#endif

#define CS_SEL_PERFORM_BODY(call_original)                                                          \
    do {                                                                                            \
        if (CS_LIKELY(cs_sel_answered_by_table(self, sel))) return call_original;                   \
        cs_object_call_mark previous = cs_backend_object_call_begin(self, sel);                     \
        id result = call_original;                                                                  \
        cs_backend_object_call_end(previous);                                                       \
        return result;                                                                              \
    } while (0)

static inline id cs_sel_perform0(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller, SEL sel) {
    (void)caller;
    CS_SEL_PERFORM_BODY(((id(*)(id, SEL, SEL))original)(self, _cmd, sel));
}
CS_DEFINE_FAST_HOOK_1(cs_sel_perform0, id, SEL, cs_sel_answered_by_memo)

static inline id cs_sel_perform1(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller, SEL sel,
                                 CS_UNRETAINED id object) {
    (void)caller;
    CS_SEL_PERFORM_BODY(((id(*)(id, SEL, SEL, id))original)(self, _cmd, sel, object));
}
CS_DEFINE_FAST_HOOK_2(cs_sel_perform1, id, SEL, CS_UNRETAINED id, cs_sel_answered_by_memo)

static inline id cs_sel_perform2(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller, SEL sel,
                                 CS_UNRETAINED id object1, CS_UNRETAINED id object2) {
    (void)caller;
    CS_SEL_PERFORM_BODY(((id(*)(id, SEL, SEL, id, id))original)(self, _cmd, sel, object1, object2));
}
CS_DEFINE_FAST_HOOK_3(cs_sel_perform2, id, SEL, CS_UNRETAINED id, CS_UNRETAINED id, cs_sel_answered_by_memo)

/* The class side: the root metaclass's own copies of the same methods. */
static inline id cs_sel_class_perform0(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller, SEL sel) {
    return cs_sel_perform0(original, self, _cmd, caller, sel);
}
CS_DEFINE_FAST_HOOK_1(cs_sel_class_perform0, id, SEL, cs_sel_answered_by_memo)
static inline id cs_sel_class_perform1(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller, SEL sel,
                                       CS_UNRETAINED id object) {
    return cs_sel_perform1(original, self, _cmd, caller, sel, object);
}
CS_DEFINE_FAST_HOOK_2(cs_sel_class_perform1, id, SEL, CS_UNRETAINED id, cs_sel_answered_by_memo)
static inline id cs_sel_class_perform2(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller, SEL sel,
                                       CS_UNRETAINED id object1, CS_UNRETAINED id object2) {
    return cs_sel_perform2(original, self, _cmd, caller, sel, object1, object2);
}
CS_DEFINE_FAST_HOOK_3(cs_sel_class_perform2, id, SEL, CS_UNRETAINED id, CS_UNRETAINED id, cs_sel_answered_by_memo)

/* Root-only: classes that override performSelector: (NSProxy, apps) keep theirs. */
static const CSHookSpec kSelectorHooks[] = {
    CS_ROOT_HOOK("NSObject", "performSelector:", cs_sel_perform0),
    CS_ROOT_HOOK("NSObject", "performSelector:withObject:", cs_sel_perform1),
    CS_ROOT_HOOK("NSObject", "performSelector:withObject:withObject:", cs_sel_perform2),
    CS_CLASS_ROOT_HOOK("NSObject", "performSelector:", cs_sel_class_perform0),
    CS_CLASS_ROOT_HOOK("NSObject", "performSelector:withObject:", cs_sel_class_perform1),
    CS_CLASS_ROOT_HOOK("NSObject", "performSelector:withObject:withObject:", cs_sel_class_perform2),
};

#pragma mark - Install

static const char *cs_selectors_install(uint32_t *hooked) {
    g_json_roots[0] = CS_CLASS(NSString);
    g_json_roots[1] = CS_CLASS(NSNumber);
    g_json_roots[2] = CS_CLASS(NSArray);
    g_json_roots[3] = CS_CLASS(NSDictionary);
    const char *failure = cs_backend_install_forward_handler(cs_selectors_decide, cs_selectors_report);
    if (failure == NULL) *hooked += 1;
    return failure;
}

static void cs_selectors_uninstall(void) {
    cs_backend_uninstall_forward_handler();
    /* Tests only: no message is in flight between uninstall and the next install. */
    memset(g_scope_cache, 0, sizeof g_scope_cache);
}

#pragma mark - Canary

@interface CSUnrecognizedSelectorCanary : NSObject
- (int)cs_knownValue;
@end

@implementation CSUnrecognizedSelectorCanary
- (int)cs_knownValue CS_GUARD_METHOD(selector) {
    return 7;
}
@end

static const char *cs_selectors_canary(void) {
    g_canary_class = CS_CLASS(CSUnrecognizedSelectorCanary);
    CSUnrecognizedSelectorCanary *object = CS_AUTORELEASE([[CS_CLASS(CSUnrecognizedSelectorCanary) alloc] init]);
    SEL missing = cs_backend_selector("cs_canaryMissingSelector");
    CS_CANARY_MISUSE([object performSelector:missing] == nil, "-[NSObject unrecognized selector] not intercepted");
    CS_CANARY_MISUSE([CS_CLASS(CSUnrecognizedSelectorCanary) performSelector:missing] == nil,
                     "+[NSObject unrecognized selector] not intercepted");
    CS_CANARY_LEGAL([object cs_knownValue] == 7 && ![object respondsToSelector:missing] &&
                        [object methodSignatureForSelector:missing] == nil,
                    "implemented selector, respondsToSelector: or methodSignatureForSelector: changed");
    return NULL;
}

CS_GUARD_DEFINE_HOOKED(CSGuardSelectors, selector, kSelectorHooks, cs_selectors_install, cs_selectors_uninstall,
                       cs_selectors_canary);
