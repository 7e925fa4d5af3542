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

/* ---- strings (Scenarios_Strings.m) ------------------------------------------------------ */

/** Runs `threads` threads that each make `iterations` rounds of legal string calls and string
 *  misuses on shared receivers (plus legal mutations of thread-local strings). Returns the number
 *  of misuses performed, which is the exact number of "string" incidents to expect when the guard
 *  neutralises; `*wrong_results` (optional) receives how many calls returned something other than
 *  the legal or the neutralised value. */
uint64_t cs_strings_stress(unsigned threads, unsigned iterations, uint64_t *wrong_results);

#ifdef __cplusplus
}
#endif
#endif
