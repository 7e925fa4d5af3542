/*
 * cs_scenarios.h — misuse scenarios and legal-input oracles, for `shield demo` and the tests.
 * Not part of the SDK: apps never link this target.
 *
 * A scenario performs one misuse from SPEC §2 and checks the neutralised result. An oracle runs
 * legal calls of one hooked selector and describes their results as text, so a test can compare
 * the text with and without guards.
 */
#ifndef CS_SCENARIOS_H
#define CS_SCENARIOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *name;       /**< "array.objectAtIndex.beyond": area.selector.misuse */
    const char *guard_name; /**< guard expected to intercept it */
    const char *selector;   /**< selector the incident must name */
    bool class_method;      /**< the incident is a `+` method */
    /** Performs the misuse; returns true when the value it got back is the neutralised one.
     *  Without guards it usually throws before returning. */
    bool (*run)(void);
} cs_scenario;

typedef struct {
    const char *name;
    /** Runs legal calls; returns an autoreleased NSString * describing every result. */
    void *(*run)(void);
} cs_oracle;

/** One `shield bench` case. `run` performs `iterations` operations and returns the elapsed
 *  nanoseconds. The harness calls it with guards uninstalled (`guarded` false: the baseline) and
 *  installed (`guarded` true), alternating rounds, in one process. Most cases run the same code
 *  both times; a misuse case may differ (the baseline throws and catches the exception the guard
 *  prevents). */
typedef struct {
    const char *name;
    uint64_t (*run)(uint64_t iterations, bool guarded);
} cs_bench_case;

size_t cs_bench_count(void);
const cs_bench_case *cs_bench_at(size_t index);

size_t cs_scenario_count(void);
const cs_scenario *cs_scenario_at(size_t index);

/** Outcome of one scenario run in this process. */
typedef enum {
    CS_SCENARIO_RETURNED_NEUTRAL = 0, /**< returned, with the neutralised value */
    CS_SCENARIO_RETURNED_OTHER = 1,   /**< returned, with another value */
    CS_SCENARIO_THREW = 2,            /**< threw; the exception's name is in `exception_name` */
} cs_scenario_outcome;

/** Runs scenario `index` inside an autorelease pool, catching any exception it throws. */
cs_scenario_outcome cs_scenario_run(size_t index, char *exception_name, size_t capacity);

size_t cs_oracle_count(void);
const char *cs_oracle_name(size_t index);
/** Runs oracle `index`; returns a malloc'd UTF-8 description (free() it), "exception:Name"
 *  when a legal call threw. */
char *cs_oracle_run(size_t index);

/* ---- runtime backend fixtures (TestSupport_Runtime.m) ------------------------------------- */

/** What cs_test_dispatch_refresh() observed: 1 = the original IMP answered, 2 = the replacement. */
typedef struct {
    int before;               /**< 11: both methods original before any change */
    int control_base, control_sub; /**< plain method_setImplementation, no refresh */
    int backend_base, backend_sub; /**< cs_backend_replace_implementation */
    bool previous_is_original;
    bool non_owner_refused;
    int restored_sub;
} cs_dispatch_probe;

/** Replaces a method on a base class whose subclass holds its own dispatch-table bucket, once with
 *  the plain runtime call and once with the backend primitive, and restores it. */
cs_dispatch_probe cs_test_dispatch_refresh(void);
/** Number of classes at or below `root` that define `selector` themselves. */
size_t cs_test_owner_count(const char *root, const char *selector, bool class_side);
/** Hammers the side table from `threads` threads; returns the number of inconsistencies seen. */
unsigned cs_test_sidetable_stress(unsigned threads, unsigned iterations);

typedef struct {
    size_t owners;                 /**< (owner, selector) pairs the hook tables cover */
    size_t slot_chained_to_slot;   /**< installed slots whose original is a slot function */
    size_t changed_after_uninstall;/**< owners whose own IMP differs from before the first start */
} cs_install_cycle_result;
/** Starts and uninstalls every guard `cycles` times (leaves them uninstalled). */
cs_install_cycle_result cs_test_install_cycles(unsigned cycles);

/* ---- containers (Scenarios_Containers.m): helpers for the container guard's tests ---------- */

/** Runs `threads` threads for `iterations` rounds each, mixing legal calls and misuse on
 *  containers shared by all threads (plus legal mutations of per-thread arrays). Returns the
 *  number of misuses performed, or UINT64_MAX when a shared container changed or a legal call
 *  returned a wrong value. */
uint64_t cs_containers_stress(unsigned threads, unsigned iterations);
/** Seeded random misuse/legal mix on arrays, mutable arrays, dictionaries and data, checked
 *  against a model of the neutralised results. Writes the number of misuses to `misuses` and
 *  returns the number of results that differed from the model (0 when all matched). */
uint64_t cs_containers_randomized(uint64_t seed, unsigned iterations, uint64_t *misuses);
/** -[NSArray objectsAtIndexes:nil]; returns true when it gave an empty array. Call it ONLY with
 *  the container guard on: unguarded, GNUstep 1.28 allocates until memory runs out (so it is not
 *  a demo scenario, whose unguarded run would do exactly that). */
bool cs_containers_nil_index_set_misuse(void);

/* ---- strings (Scenarios_Strings.m) ------------------------------------------------------ */

/** Runs `threads` threads that each make `iterations` rounds of legal string calls and string
 *  misuses on shared receivers (plus legal mutations of thread-local strings). Returns the number
 *  of misuses performed, which is the exact number of "string" incidents to expect when the guard
 *  neutralises; `*wrong_results` (optional) receives how many calls returned something other than
 *  the legal or the neutralised value. */
uint64_t cs_strings_stress(unsigned threads, unsigned iterations, uint64_t *wrong_results);

/* ---- messages (Scenarios_Messages.m: SPEC §2.3-§2.5) ------------------------------------- */

/** Sends -length to an NSNumber (a system class): 1 = answered 0, 0 = other value, -1 = threw. */
int cs_msg_system_class_unrecognized(void);
/** Sends a message neither a forwarding class nor its target implements: same encoding. */
int cs_msg_forwarder_unknown(void);
/** Sends NSNull messages with register, variadic and floating-point arguments and a result
 *  returned in memory; returns 0 when each answered as the empty value does, else a bit mask of
 *  the wrong ones. */
int cs_msg_nsnull_answers_like_empty_values(void);
/** Runs the selector, NSNull and KVC misuses on `threads` threads (at most 16), `iterations`
 *  each; returns how many iterations did not get the neutralised results. */
uint32_t cs_msg_run_concurrently(uint32_t threads, uint32_t iterations);

#ifdef __cplusplus
}
#endif
#endif
