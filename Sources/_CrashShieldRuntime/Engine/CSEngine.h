/*
 * CSEngine.h — the guard engine: what a guard is, and what its hooks may call.
 *
 * A guard is a static CSGuard in its own file (Guards/CSGuard_<Name>.m) plus one row in
 * CSGuardRegistry.m. The engine installs the guard's hooks, runs its canary, and owns its policy.
 *
 * Hook contract (hot path):
 * - Read the policy once with cs_guard_is_on(); when off, call the original at once. Code that
 *   needs the policy itself reads it with cs_guard_policy(), never from the field.
 * - Check the arguments before calling the original; never wrap the original in @try/@catch.
 * - On a misuse, call cs_guard_misuse(): it records the incident and answers whether to
 *   neutralise (YES) or fall through to the original behaviour (NO: report-only, class filtered).
 * - Do no formatting, allocation or object description on the misuse path either.
 */
#ifndef CS_ENGINE_H
#define CS_ENGINE_H

#import "CSHookSlots.h"
#include "CSGuardSection.h"
#include "cs_runtime.h"

typedef struct CSGuard {
    const char *name;              /* stable, public: "container", "string", ... */
    const CSHookSpec *hooks;
    size_t hook_count;
    /* Performs the guard's misuse on scratch objects and a legal call; returns NULL when both
     * behaved (misuse intercepted, legal call untouched), else a static reason. Runs with the
     * guard neutralising on the canary's thread only (CS_GUARD_POLICY_CANARY) and the incident
     * pipeline in canary mode. Its misuses must run on that thread. */
    const char *(*canary)(void);
    /* Optional, for guards whose mechanism is not a method swizzle (e.g. the runtime's forward
     * hook): called after the hook table is installed, under the engine lock. Returns NULL on
     * success (and adds what it replaced to *hooked), else a static reason; on failure the engine
     * calls `uninstall`. `uninstall` must undo everything `install` did and tolerate being called
     * when nothing is installed. */
    const char *(*install)(uint32_t *hooked);
    void (*uninstall)(void);

    /* The guard's code, [code_start, code_end): every function of its file (see CS_GUARD_CODE
     * below). Both NULL where code sections are not available; the fail-safe then falls back to
     * the span of the hook slots. */
    const char *code_start;
    const char *code_end;

    /* Engine-owned state. */
    int policy;                    /* CS_ATOMIC_*; a cs_policy, OFF unless ACTIVE, or CS_GUARD_POLICY_CANARY */
    cs_guard_state state;
    const char *detail;
    uint32_t hooked_methods;
    cs_guard_skipped_hook *skipped; /* malloc'd, skipped_count entries; replaced at each install */
    uint32_t skipped_count;
} CSGuard;

/*
 * Guard code sections, for the fail-safe (a crash with frames inside a guard switches
 * that guard off). Each guard file, after its includes, opens its section with
 *     CS_GUARD_CODE_SECTION(<tag>)
 * which puts every C function that follows (hook bodies, slot functions, callbacks, functions
 * added with class_addMethod) into that guard's section; the pragma behind it does not reach
 * Objective-C methods, so each method of a guard's own classes carries CS_GUARD_METHOD(tag).
 * CS_GUARD_DEFINE records the section's bounds. `tag` is the guard's public name ("kvo"), so
 * name and section cannot drift apart. Names and bounds per object format (ELF, Mach-O, none):
 * CSGuardSection.h.
 */
#define CS_GUARD_CODE_FIELDS(tag) .code_start = CS_GUARD_CODE_START(tag), .code_end = CS_GUARD_CODE_END(tag),

#define CS_GUARD_STRUCT(symbol, tag, hook_table, count, install_fn, uninstall_fn, canary_fn)     \
    CS_GUARD_CODE_RANGE(tag)                                                                       \
    CSGuard symbol = {                                                                             \
        .name = #tag,                                                                              \
        .hooks = hook_table,                                                                       \
        .hook_count = count,                                                                       \
        .canary = canary_fn,                                                                       \
        .install = install_fn,                                                                     \
        .uninstall = uninstall_fn,                                                                 \
        CS_GUARD_CODE_FIELDS(tag)                                                                  \
        .policy = CS_POLICY_OFF,                                                                   \
    }
#define CS_TABLE_COUNT(table) (sizeof(table) / sizeof((table)[0]))

/** The guard `symbol`, named #tag: a hook table and a canary. */
#define CS_GUARD_DEFINE(symbol, tag, hook_table, canary_fn)                                        \
    CS_GUARD_STRUCT(symbol, tag, hook_table, CS_TABLE_COUNT(hook_table), NULL, NULL, canary_fn)

/** A guard without a hook table: `install`/`uninstall` do the work (see CSGuard). */
#define CS_GUARD_DEFINE_CUSTOM(symbol, tag, install_fn, uninstall_fn, canary_fn)                   \
    CS_GUARD_STRUCT(symbol, tag, NULL, 0, install_fn, uninstall_fn, canary_fn)

/** A hook table plus `install`/`uninstall` for what the table cannot express. */
#define CS_GUARD_DEFINE_HOOKED(symbol, tag, hook_table, install_fn, uninstall_fn, canary_fn)       \
    CS_GUARD_STRUCT(symbol, tag, hook_table, CS_TABLE_COUNT(hook_table), install_fn, uninstall_fn, canary_fn)

/** YES while this thread runs a guard's canary (canary helpers below). */
BOOL cs_canary_running(void);

/** The value of CSGuard.policy while the guard's canary runs (the engine lock is held, so status
 *  never shows it; it is no cs_policy of the API). The thread running the canary neutralises;
 *  every other thread sees CS_POLICY_OFF, the policy of a guard not yet verified, so a canary
 *  changes no other thread's outcome (its misuses throw as unguarded and record nothing). */
#define CS_GUARD_POLICY_CANARY 3
_Static_assert(CS_POLICY_NEUTRALIZE < CS_POLICY_OFF && CS_POLICY_REPORT_ONLY < CS_POLICY_OFF &&
                   CS_GUARD_POLICY_CANARY > CS_POLICY_OFF,
               "cs_guard_is_on: the applying policies sort below CS_POLICY_OFF");

/** YES when the guard applies to this thread's calls now: its policy is neutralize or
 *  report-only, or its canary runs on this thread. One compare on the hot path. */
static inline BOOL cs_guard_is_on(CSGuard *g) {
    int policy = CS_ATOMIC_LOAD_RELAXED(&g->policy);
    if (CS_LIKELY(policy < CS_POLICY_OFF)) return YES;
    return policy == CS_GUARD_POLICY_CANARY && cs_canary_running();
}

/**
 * The first statement of a fast predicate (CS_DEFINE_FAST_HOOK_* in CSHookSlots.h):
 *
 *     CS_FAST_PREDICATE_POLICY_GATE(G);
 *
 * makes the predicate answer YES when the guard's policy is off (the slot runs the original
 * unchecked, as the full body would) and NO under CS_GUARD_POLICY_CANARY (only the full body asks
 * whether this thread runs the canary); with an applying policy it falls through to the
 * predicate's own check. One load and one compare on the applying path.
 *
 * Code-layout contract: the off answer is a computed value, never a constant YES merged into the
 * predicate's result. Under the slot's CS_LIKELY, clang gives the edge from a block that merges
 * a constant YES into its other successor (the bounds check) a zero weight, and its hot/cold
 * splitting then moved the whole bounds check into an outlined function: a call and a frame on
 * every legal call (`shield bench` objectAtIndex: 1.45x unguarded, characterAtIndex: 1.45x).
 * cs_guard_is_on() under CS_UNLIKELY(!...) in a predicate does exactly that.
 */
#define CS_FAST_PREDICATE_POLICY_GATE(g)                                                            \
    do {                                                                                           \
        int cs_gate_policy_ = CS_ATOMIC_LOAD_RELAXED(&(g)->policy);                                 \
        if (CS_UNLIKELY(cs_gate_policy_ >= CS_POLICY_OFF)) return cs_gate_policy_ != CS_GUARD_POLICY_CANARY; \
    } while (0)

/** The policy the guard applies to this thread's calls (resolves CS_GUARD_POLICY_CANARY). */
static inline cs_policy cs_guard_policy(CSGuard *g) {
    int policy = CS_ATOMIC_LOAD_RELAXED(&g->policy);
    if (CS_UNLIKELY(policy == CS_GUARD_POLICY_CANARY))
        return cs_canary_running() ? CS_POLICY_NEUTRALIZE : CS_POLICY_OFF;
    return (cs_policy)policy;
}

/** Records a misuse (see the hook contract above). `reason` is a static template whose "{}"
 *  markers are replaced by `a0`, `a1` when the incident is formatted. Returns YES to neutralise.
 *  `receiver` is never retained (CS_UNRETAINED): it may be deallocating or a zombie. */
BOOL cs_guard_misuse(CSGuard *g, CS_UNRETAINED id receiver, SEL cmd, const void *caller, const char *reason,
                     uint8_t argc, uint64_t a0, uint64_t a1);

/** How the class filters (allow/deny prefixes) list a class. */
typedef enum {
    CS_CLASS_UNLISTED = 0,         /**< no deny prefix matches and no allow prefixes are set */
    CS_CLASS_ALLOW_LISTED = 1,     /**< an allow prefix matches (and no deny prefix) */
    CS_CLASS_DENY_LISTED = 2,      /**< a deny prefix matches: deny wins over allow */
    CS_CLASS_NOT_ALLOW_LISTED = 3, /**< allow prefixes are set and none matches */
} cs_class_listing;

/** The filters' verdict for `cls` (or its superclasses). Lock-free; cheap without filters.
 *  CS_CLASS_UNLISTED on a thread while it runs a canary: filters never decide whether a guard
 *  passes its canary, only which of the app's misuses are guarded. */
cs_class_listing cs_guard_class_listing(Class cls);

/** Records a misuse like cs_guard_misuse() but without consulting the class filters: for a
 *  guard that applies its own scope (the selector guard). Returns YES to neutralise. */
BOOL cs_guard_record(CSGuard *g, CS_UNRETAINED id receiver, SEL cmd, const void *caller, const char *reason,
                     uint8_t argc, uint64_t a0, uint64_t a1);

/* ---- canary helpers: used inside a guard's canary function ------------------------------- */

/* cs_canary_running() (declared above): a guard whose mechanism depends on app configuration
 * (lists of classes, budgets) uses it to give its canary's scratch objects the configuration the
 * canary needs, whatever the app configured. */

/** Hits recorded on this thread since the canary started. */
uint64_t cs_canary_hits(void);

/** Names the canary step about to run: when a step throws, the engine (which runs the canary
 *  through cs_objc_try) reports `threw_reason` as the canary's failure. A static string. */
void cs_canary_step(const char *threw_reason);

/** YES when `cls` (a metaclass for a class method) answers `sel` with one of the slots the guard
 *  installed from `slots`. A canary misuses only what its guard hooked: an owner the guard left
 *  alone (an app's swizzle in place before start, out of scope) is no reason to switch off the
 *  rest of the guard, so a step whose scratch receiver does not reach the hook is skipped. */
BOOL cs_canary_reaches_hook(Class cls, SEL sel, const CSHookSlots *slots);

/** Evaluates `misuse` (an expression that must be intercepted and yield `expected_ok` true). */
#define CS_CANARY_MISUSE(expr_ok, failure)                                                         \
    do {                                                                                           \
        uint64_t cs_before_ = cs_canary_hits();                                                    \
        cs_canary_step(failure " (threw)");                                                        \
        BOOL cs_ok_ = (expr_ok) ? YES : NO;                                                        \
        if (!cs_ok_ || cs_canary_hits() == cs_before_) return failure;                             \
    } while (0)

/** Evaluates a legal call that must give `expr_ok` true and record nothing. */
#define CS_CANARY_LEGAL(expr_ok, failure)                                                          \
    do {                                                                                           \
        uint64_t cs_before_ = cs_canary_hits();                                                    \
        cs_canary_step(failure " (threw)");                                                        \
        BOOL cs_ok_ = (expr_ok) ? YES : NO;                                                        \
        if (!cs_ok_ || cs_canary_hits() != cs_before_) return failure;                             \
    } while (0)

/* ---- registry (CSGuardRegistry.m) -------------------------------------------------------- */
extern CSGuard *const CSGuardRegistry[];
extern const size_t CSGuardRegistryCount;
#endif
