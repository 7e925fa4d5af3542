/*
 * CSGuard_Selectors.m — SPEC §2.3: a message that no class in the receiver's chain implements
 * returns nil / 0 / 0.0 / a zeroed struct instead of throwing, and is recorded with `+` or `-`.
 *
 * Mechanism: not a method swizzle. The backend's forward handler (the runtime's forward hook on
 * GNUstep, chained to GNUstep's own) asks cs_selectors_decide() about every unrecognized message;
 * the stub it then returns reports through cs_selectors_report() with the real call site.
 *
 * Scope, decided per receiver class and cached (the answer cannot change while the class keeps
 * its methods):
 * - left alone: receivers whose root class is not NSObject (NSProxy subclasses and other roots),
 *   and classes with their own forwarding: an implementation of forwardInvocation:,
 *   methodSignatureForSelector:, forwardingTargetForSelector: (instance or class side, as the
 *   message is), +resolveInstanceMethod: or +resolveClassMethod: other than NSObject's;
 * - guarded by default: classes from the app's own images (cs_backend_class_is_system);
 * - class filters (read on every message, never cached): a deny-listed class is left alone; when
 *   allow prefixes are set they replace the default scope (an allow-listed system class such as
 *   NSNumber is guarded, an unlisted app class is not).
 * respondsToSelector: keeps answering NO: no method is ever added.
 */
#import "../Engine/CSEngine.h"
#import "../Backend/CSBackend.h"
#include <string.h>

#pragma clang section text = "cs_guard_selector" /* every function below: see CS_GUARD_METHOD */

extern CSGuard CSGuardSelectors;
#define G (&CSGuardSelectors)

static const char *const kUnrecognizedReason = "unrecognized selector: nil/0 returned";

#pragma mark - Scope cache

enum { CS_SCOPE_NONE = 0, CS_SCOPE_APP = 1, CS_SCOPE_SYSTEM = 2, CS_SCOPE_OWN_FORWARDING = 3 };

#define CS_SCOPE_CACHE_SIZE 1024u /* power of two */
#define CS_SCOPE_PROBES 16u

/* Open addressing keyed by the receiver's class (the metaclass for `+` messages). A slot's key
 * is claimed once with a CAS and never changes until uninstall; its scope is written after. */
typedef struct {
    uintptr_t key; /* the Class, as an integer for the atomic builtins */
    int scope;
} cs_scope_entry;

static cs_scope_entry g_scope_cache[CS_SCOPE_CACHE_SIZE];
static Class g_canary_class; /* always in scope, so the canary does not depend on images or filters */

static IMP cs_method_imp(Class cls, SEL sel) {
    Method method = class_getInstanceMethod(cls, sel);
    return method ? method_getImplementation(method) : NULL;
}

/* `dispatch_class` is the class (or metaclass) the message was looked up in. */
static int cs_compute_scope(Class plain, Class dispatch_class, BOOL is_class) {
    Class root = plain;
    while (class_getSuperclass(root) != Nil) root = class_getSuperclass(root);
    Class nsobject = objc_lookUpClass("NSObject");
    if (root != nsobject) return CS_SCOPE_OWN_FORWARDING; /* NSProxy and other roots */

    static const char *const kForwarding[] = {"forwardInvocation:", "methodSignatureForSelector:",
                                              "forwardingTargetForSelector:"};
    Class reference = is_class ? object_getClass((id)nsobject) : nsobject;
    for (size_t i = 0; i < sizeof kForwarding / sizeof kForwarding[0]; i++) {
        SEL sel = cs_backend_selector(kForwarding[i]);
        if (cs_method_imp(dispatch_class, sel) != cs_method_imp(reference, sel)) return CS_SCOPE_OWN_FORWARDING;
    }
    static const char *const kResolvers[] = {"resolveInstanceMethod:", "resolveClassMethod:"};
    Class meta = object_getClass((id)plain);
    Class nsobject_meta = object_getClass((id)nsobject);
    for (size_t i = 0; i < sizeof kResolvers / sizeof kResolvers[0]; i++) {
        SEL sel = cs_backend_selector(kResolvers[i]);
        if (cs_method_imp(meta, sel) != cs_method_imp(nsobject_meta, sel)) return CS_SCOPE_OWN_FORWARDING;
    }
    return cs_backend_class_is_system(plain) ? CS_SCOPE_SYSTEM : CS_SCOPE_APP;
}

static int cs_scope_for(Class plain, Class dispatch_class, BOOL is_class) {
    uint32_t start = (uint32_t)(((uintptr_t)dispatch_class >> 4) * 2654435761u);
    cs_scope_entry *free_slot = NULL;
    for (uint32_t probe = 0; probe < CS_SCOPE_PROBES; probe++) {
        cs_scope_entry *entry = &g_scope_cache[(start + probe) & (CS_SCOPE_CACHE_SIZE - 1)];
        uintptr_t key = CS_ATOMIC_LOAD(&entry->key);
        if (key == (uintptr_t)dispatch_class) {
            int scope = CS_ATOMIC_LOAD(&entry->scope);
            if (scope != CS_SCOPE_NONE) return scope;
            break; /* being computed by another thread: compute it too */
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

static cs_forward_decision cs_selectors_decide(id receiver, SEL sel) {
    cs_policy policy = (cs_policy)CS_ATOMIC_LOAD_RELAXED(&G->policy);
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

static void cs_selectors_report(id receiver, SEL sel, const void *caller) {
    cs_guard_record(G, receiver, sel, caller, kUnrecognizedReason, 0, 0, 0);
}

#pragma mark - Install

static const char *cs_selectors_install(uint32_t *hooked) {
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
    g_canary_class = [CSUnrecognizedSelectorCanary class];
    CSUnrecognizedSelectorCanary *object = CS_AUTORELEASE([[CSUnrecognizedSelectorCanary alloc] init]);
    SEL missing = cs_backend_selector("cs_canaryMissingSelector");
    CS_CANARY_MISUSE([object performSelector:missing] == nil, "-[NSObject unrecognized selector] not intercepted");
    CS_CANARY_MISUSE([[CSUnrecognizedSelectorCanary class] performSelector:missing] == nil,
                     "+[NSObject unrecognized selector] not intercepted");
    CS_CANARY_LEGAL([object cs_knownValue] == 7 && ![object respondsToSelector:missing],
                    "implemented selector or respondsToSelector: changed");
    return NULL;
}

CS_GUARD_DEFINE_CUSTOM(CSGuardSelectors, selector, cs_selectors_install, cs_selectors_uninstall,
                       cs_selectors_canary);
