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
