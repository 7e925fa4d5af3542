/*
 * CSGuard_NSNull.m — SPEC §2.4: a message to NSNull that an empty NSString, NSNumber, NSArray or
 * NSDictionary understands returns what the empty one returns; any other message returns zero
 * (nil, 0, a zeroed struct). Each message is an incident: it usually means a JSON null the code
 * did not expect.
 *
 * Mechanism (research/gnustep-probe.md §9; the same methods exist on Apple): NSNull gets its own
 * -methodSignatureForSelector: and -forwardInvocation: (it only inherits NSObject's), so the
 * runtime's forwarding finds a signature and hands the invocation over. NSNull's real methods
 * (description, isEqual:, hash, copy...) never reach forwarding and are untouched; so is
 * respondsToSelector:. With the policy off both methods answer exactly what NSObject's answer.
 *
 * Fast path (GNUstep, x86_64): the backend's forward hook sends a message a stand-in answers
 * straight to the stand-in (cs_backend_install_forward_retarget), reported with its call site,
 * with no NSInvocation: ~0.3 us instead of ~6 us. The forwarding methods remain for the zero
 * fallback, report-only, filtered classes and runtimes without the fast path.
 *
 * Stand-ins are tried in a fixed order (string, number, array, dictionary); the first that
 * responds to the selector answers it. A stand-in's own misuse (objectAtIndex: on the empty
 * array) behaves as it would on an empty array: the container guard, when active, handles it.
 */
#import "../Engine/CSEngine.h"
#import "../Backend/CSBackend.h"
#include <string.h>

#pragma clang section text = "cs_guard_nsnull" /* every function below: see CS_GUARD_METHOD */

extern CSGuard CSGuardNSNull;
#define G (&CSGuardNSNull)

#define CS_STANDIN_COUNT 4
static id g_standins[CS_STANDIN_COUNT]; /* made once, never released */
static const char *const kStandinReasons[CS_STANDIN_COUNT] = {
    "message to NSNull answered as an empty NSString",
    "message to NSNull answered as a zero NSNumber",
    "message to NSNull answered as an empty NSArray",
    "message to NSNull answered as an empty NSDictionary",
};
static const char *const kZeroReason = "message to NSNull no empty value answers: nil/0 returned";

static Class g_null_class;
static IMP g_original_signature; /* NSNull's previous -methodSignatureForSelector: (inherited) */
static IMP g_original_forward;   /* NSNull's previous -forwardInvocation: (inherited) */
static BOOL g_installed;

static int cs_standin_index(SEL sel) {
    for (int i = 0; i < CS_STANDIN_COUNT; i++)
        if ([g_standins[i] respondsToSelector:sel]) return i;
    return -1;
}

static NSMethodSignature *cs_null_methodSignatureForSelector(id self, SEL _cmd, SEL sel) {
    NSMethodSignature *signature = ((NSMethodSignature * (*)(id, SEL, SEL)) g_original_signature)(self, _cmd, sel);
    if (signature != nil || !cs_guard_is_on(G)) return signature;
    int index = cs_standin_index(sel);
    if (index >= 0) return [g_standins[index] methodSignatureForSelector:sel];
    /* Nobody answers it: the call-site types, else an object return without arguments. */
    const char *types = cs_backend_selector_types(sel);
    return [NSMethodSignature signatureWithObjCTypes:(types && types[0]) ? types : "@@:"];
}

static void cs_null_forwardInvocation(id self, SEL _cmd, NSInvocation *invocation) {
    if (cs_guard_is_on(G)) {
        SEL sel = [invocation selector];
        int index = cs_standin_index(sel);
        const char *reason = index >= 0 ? kStandinReasons[index] : kZeroReason;
        if (cs_guard_misuse(G, self, sel, NULL, reason, 0, 0, 0)) {
            if (index >= 0) {
                [invocation invokeWithTarget:g_standins[index]];
                return;
            }
            NSUInteger length = [[invocation methodSignature] methodReturnLength];
            if (length > 0) {
                char small[64] = {0};
                void *zero = length <= sizeof small ? (void *)small : calloc(1, length);
                [invocation setReturnValue:zero];
                if (zero != (void *)small) free(zero);
            }
            return;
        }
    }
    ((void (*)(id, SEL, NSInvocation *))g_original_forward)(self, _cmd, invocation);
}

#pragma mark - Fast path (the runtime's forward hook)

/* The stand-in answering `sel` for NSNull, when the guard neutralises for NSNull at all; nil
 * leaves the message to the forwarding methods above (zero fallback, report-only, off, filters). */
static id cs_null_target(id receiver, SEL sel) {
    (void)receiver;
    if (CS_ATOMIC_LOAD_RELAXED(&G->policy) != CS_POLICY_NEUTRALIZE) return nil;
    cs_class_listing listing = cs_guard_class_listing(g_null_class);
    if (listing == CS_CLASS_DENY_LISTED || listing == CS_CLASS_NOT_ALLOW_LISTED) return nil;
    int index = cs_standin_index(sel);
    return index >= 0 ? g_standins[index] : nil;
}

static void cs_null_report(id receiver, SEL sel, const void *caller) {
    int index = cs_standin_index(sel);
    cs_guard_misuse(G, receiver, sel, caller, index >= 0 ? kStandinReasons[index] : kZeroReason, 0, 0, 0);
}

#pragma mark - Install

static const char *cs_nsnull_install(uint32_t *hooked) {
    g_null_class = objc_lookUpClass("NSNull");
    if (g_null_class == Nil) return "NSNull does not exist on this runtime";
    if (g_standins[0] == nil) {
        g_standins[0] = CS_RETAIN([NSString string]);
        g_standins[1] = CS_RETAIN([NSNumber numberWithInt:0]);
        g_standins[2] = CS_RETAIN([NSArray array]);
        g_standins[3] = CS_RETAIN([NSDictionary dictionary]);
    }
    SEL signature_sel = cs_backend_selector("methodSignatureForSelector:");
    SEL forward_sel = cs_backend_selector("forwardInvocation:");
    /* The originals are stored before the replacements can be called. */
    g_original_signature = class_getMethodImplementation(g_null_class, signature_sel);
    g_original_forward = class_getMethodImplementation(g_null_class, forward_sel);
    IMP previous = cs_backend_override_method(g_null_class, signature_sel, (IMP)cs_null_methodSignatureForSelector, NULL);
    if (previous == NULL) return "NSNull has no methodSignatureForSelector:";
    g_original_signature = previous;
    g_installed = YES;
    previous = cs_backend_override_method(g_null_class, forward_sel, (IMP)cs_null_forwardInvocation, NULL);
    if (previous == NULL) return "NSNull has no forwardInvocation:";
    g_original_forward = previous;
    *hooked += 2;
    /* Where the runtime allows it, messages a stand-in answers skip NSInvocation altogether and
     * are reported with their call site; otherwise the forwarding methods do all the work. */
    if (cs_backend_install_forward_retarget(g_null_class, cs_null_target, cs_null_report) == NULL) *hooked += 1;
    return NULL;
}

static void cs_nsnull_uninstall(void) {
    if (!g_installed) return;
    cs_backend_uninstall_forward_retarget();
    SEL signature_sel = cs_backend_selector("methodSignatureForSelector:");
    SEL forward_sel = cs_backend_selector("forwardInvocation:");
    if (class_getMethodImplementation(g_null_class, signature_sel) == (IMP)cs_null_methodSignatureForSelector)
        cs_backend_override_method(g_null_class, signature_sel, g_original_signature, NULL);
    if (class_getMethodImplementation(g_null_class, forward_sel) == (IMP)cs_null_forwardInvocation)
        cs_backend_override_method(g_null_class, forward_sel, g_original_forward, NULL);
    g_installed = NO;
}

#pragma mark - Canary

static const char *cs_nsnull_canary(void) {
    id null = [NSNull null];
    CS_CANARY_MISUSE([(NSString *)null length] == 0, "-[NSNull length] not answered as an empty string");
    CS_CANARY_LEGAL([null isEqual:[NSNull null]] && [[null description] length] > 0, "NSNull's own methods changed");
    return NULL;
}

CS_GUARD_DEFINE_CUSTOM(CSGuardNSNull, nsnull, cs_nsnull_install, cs_nsnull_uninstall, cs_nsnull_canary);
