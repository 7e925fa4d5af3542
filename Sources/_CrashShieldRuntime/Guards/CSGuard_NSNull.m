/*
 * CSGuard_NSNull.m — a message to NSNull that an empty NSString, NSNumber, NSArray or
 * NSDictionary understands returns what the empty one returns; any other message returns zero
 * (nil, 0, a zeroed struct). Each message is an incident: it usually means a JSON null the code
 * did not expect.
 *
 * Mechanism: only the runtime's forwarding path (the backend's retarget hook for NSNull). No
 * method of NSNull changes, so its public answers stay exactly as unguarded:
 * methodSignatureForSelector: is nil for what NSNull does not implement (code that builds an
 * NSInvocation after asking is not misled), respondsToSelector: NO, forwardInvocation: NSObject's.
 * - A selector a stand-in answers is sent to the stand-in itself, same arguments, reported with
 *   its call site, with no NSInvocation.
 * - Any other selector gets the backend's zero stub, when the call's return convention is known
 *   (a typed selector, performSelector:); otherwise it is declined and throws as unguarded.
 * - Report-only records at lookup and declines; off and filtered classes decline.
 * Where the backend has no retarget hook (architectures other than x86_64 on GNUstep) the guard
 * fails to install and says so, rather than answering through a public method.
 *
 * Stand-ins are tried in a fixed order (string, number, array, dictionary); the first that
 * responds to the selector answers it. A stand-in's own misuse (objectAtIndex: on the empty
 * array) behaves as it would on an empty array: the container guard, when active, handles it.
 */
#import "../Engine/CSEngine.h"
#import "../Backend/CSBackend.h"
#include <string.h>

CS_GUARD_CODE_SECTION(nsnull) /* every function below: see CS_GUARD_METHOD */

extern CSGuard CSGuardNSNull;
#define G (&CSGuardNSNull)

#define CS_STANDIN_COUNT 4
static id g_standins[CS_STANDIN_COUNT]; /* owned (strong under ARC): made once, never released */
static const char *const kStandinReasons[CS_STANDIN_COUNT] = {
    "message to NSNull answered as an empty NSString",
    "message to NSNull answered as a zero NSNumber",
    "message to NSNull answered as an empty NSArray",
    "message to NSNull answered as an empty NSDictionary",
};
static const char *const kZeroReason = "message to NSNull no empty value answers: nil/0 returned";

static CS_UNRETAINED Class g_null_class;
static BOOL g_installed;

static int cs_standin_index(SEL sel) {
    for (int i = 0; i < CS_STANDIN_COUNT; i++)
        if ([g_standins[i] respondsToSelector:sel]) return i;
    return -1;
}

static const char *cs_null_reason(SEL sel) {
    int index = cs_standin_index(sel);
    return index >= 0 ? kStandinReasons[index] : kZeroReason;
}

#pragma mark - Forwarding (the backend's retarget hook)

/* At lookup of a message NSNull does not implement. A message nothing can answer (no stand-in,
 * and a return convention the zero stub cannot serve) is declined without an incident under
 * every policy, so report-only records exactly what neutralise would answer. */
static cs_forward_decision cs_null_decide(CS_UNRETAINED id receiver, SEL sel, BOOL zero_answerable) {
    cs_policy policy = cs_guard_policy(G);
    if (policy == CS_POLICY_OFF) return CS_FORWARD_DECLINE;
    cs_class_listing listing = cs_guard_class_listing(g_null_class);
    if (listing == CS_CLASS_DENY_LISTED || listing == CS_CLASS_NOT_ALLOW_LISTED) return CS_FORWARD_DECLINE;
    cs_forward_decision decision =
        cs_standin_index(sel) >= 0 ? CS_FORWARD_RETARGET : (zero_answerable ? CS_FORWARD_STUB : CS_FORWARD_DECLINE);
    if (decision != CS_FORWARD_DECLINE && policy == CS_POLICY_REPORT_ONLY) {
        /* The call site is not known at lookup: the stack is captured instead. Then GNUstep's
         * own forwarding throws as it would have. */
        cs_guard_misuse(G, receiver, sel, NULL, cs_null_reason(sel), 0, 0, 0);
        return CS_FORWARD_DECLINE;
    }
    return decision;
}

/* The stand-in answering `sel`, while the guard neutralises; nil once it no longer does (a
 * policy switch between lookup and call: the message then returns zero). */
static id cs_null_target(CS_UNRETAINED id receiver, SEL sel) {
    (void)receiver;
    if (cs_guard_policy(G) != CS_POLICY_NEUTRALIZE) return nil;
    int index = cs_standin_index(sel);
    return index >= 0 ? g_standins[index] : nil;
}

static void cs_null_report(CS_UNRETAINED id receiver, SEL sel, const void *caller) {
    cs_guard_misuse(G, receiver, sel, caller, cs_null_reason(sel), 0, 0, 0);
}

#pragma mark - Install

static const char *cs_nsnull_install(uint32_t *hooked) {
    g_null_class = CS_CLASS(NSNull);
    if (g_null_class == Nil) return "NSNull does not exist on this runtime";
    if (g_standins[0] == nil) {
        g_standins[0] = CS_RETAIN([CS_CLASS(NSString) string]);
        g_standins[1] = CS_RETAIN([CS_CLASS(NSNumber) numberWithInt:0]);
        g_standins[2] = CS_RETAIN([CS_CLASS(NSArray) array]);
        g_standins[3] = CS_RETAIN([CS_CLASS(NSDictionary) dictionary]);
    }
    const char *failure =
        cs_backend_install_forward_retarget(g_null_class, cs_null_decide, cs_null_target, cs_null_report);
    if (failure != NULL) return failure;
    g_installed = YES;
    *hooked += 1;
    return NULL;
}

static void cs_nsnull_uninstall(void) {
    if (!g_installed) return;
    cs_backend_uninstall_forward_retarget();
    g_installed = NO;
}

#pragma mark - Canary

/* The canary's misuse is a message NSNull does not implement, sent with a typed selector. An app
 * (or a test suite: GNUstep's own adds -[NSObject length]) may give NSObject a category with any
 * of these, and then NSNull answers it itself: the canary probes the first selector NSNull does
 * not respond to. With all of them implemented there is nothing to forward and no misuse to try;
 * the legal half still runs. */
typedef enum { CS_NULL_PROBE_LENGTH, CS_NULL_PROBE_COUNT, CS_NULL_PROBE_INTEGER_VALUE, CS_NULL_PROBE_NONE } cs_null_probe;

static cs_null_probe cs_nsnull_canary_probe(id null) {
    if (![null respondsToSelector:@selector(length)]) return CS_NULL_PROBE_LENGTH;
    if (![null respondsToSelector:@selector(count)]) return CS_NULL_PROBE_COUNT;
    if (![null respondsToSelector:@selector(integerValue)]) return CS_NULL_PROBE_INTEGER_VALUE;
    return CS_NULL_PROBE_NONE;
}

static const char *cs_nsnull_canary(void) {
    id null = [CS_CLASS(NSNull) null];
    switch (cs_nsnull_canary_probe(null)) {
    case CS_NULL_PROBE_LENGTH:
        CS_CANARY_MISUSE([(NSString *)null length] == 0, "-[NSNull length] not answered as an empty string");
        CS_CANARY_LEGAL([null methodSignatureForSelector:@selector(length)] == nil, "NSNull's own methods changed");
        break;
    case CS_NULL_PROBE_COUNT:
        CS_CANARY_MISUSE([(NSArray *)null count] == 0, "-[NSNull count] not answered as an empty array");
        CS_CANARY_LEGAL([null methodSignatureForSelector:@selector(count)] == nil, "NSNull's own methods changed");
        break;
    case CS_NULL_PROBE_INTEGER_VALUE:
        CS_CANARY_MISUSE([(NSNumber *)null integerValue] == 0, "-[NSNull integerValue] not answered as zero");
        CS_CANARY_LEGAL([null methodSignatureForSelector:@selector(integerValue)] == nil,
                        "NSNull's own methods changed");
        break;
    case CS_NULL_PROBE_NONE:
        break;
    }
    CS_CANARY_LEGAL([null isEqual:[CS_CLASS(NSNull) null]] && [[null description] length] > 0, "NSNull's own methods changed");
    return NULL;
}

CS_GUARD_DEFINE_CUSTOM(CSGuardNSNull, nsnull, cs_nsnull_install, cs_nsnull_uninstall, cs_nsnull_canary);
