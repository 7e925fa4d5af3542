/*
 * Scenarios.m — the ordered list of scenario and oracle tables, and the runner.
 * Adding a guard's scenarios: one file with a table, one row below.
 */
#import "CSScenarioSupport.h"
#include <pthread.h>
#include <string.h>

extern const cs_scenario_table cs_container_scenarios;
extern const cs_scenario_table cs_string_scenarios;
extern const cs_oracle_table cs_container_oracles;
extern const cs_oracle_table cs_string_oracles;
extern const cs_bench_table cs_core_benches;
extern const cs_scenario_table cs_message_scenarios;
extern const cs_oracle_table cs_message_oracles;
extern const cs_bench_table cs_message_benches;
extern const cs_scenario_table cs_lifecycle_scenarios;
extern const cs_oracle_table cs_lifecycle_oracles;
extern const cs_bench_table cs_lifecycle_benches;
extern const cs_bench_table cs_workload_benches;
extern const cs_bench_table cs_start_benches;

static const cs_scenario_table *const kScenarioTables[] = {
    &cs_container_scenarios,
    &cs_string_scenarios,
    &cs_message_scenarios,
    &cs_lifecycle_scenarios,
};
static const cs_oracle_table *const kOracleTables[] = {
    &cs_container_oracles,
    &cs_string_oracles,
    &cs_message_oracles,
    &cs_lifecycle_oracles,
};
static const cs_bench_table *const kBenchTables[] = {
    &cs_core_benches,
    &cs_message_benches,
    &cs_lifecycle_benches,
    &cs_workload_benches,
    &cs_start_benches, /* last: its note adds classes to the process */
};

/* The family tables above are concatenated: item i of the whole list is found by walking them. */
#define CS_TABLE_LIST_ACCESSORS(linkage, count_fn, at_fn, item_type, tables)                     \
    size_t count_fn(void) {                                                                      \
        size_t total = 0;                                                                        \
        for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) total += tables[t]->count; \
        return total;                                                                            \
    }                                                                                            \
    linkage const item_type *at_fn(size_t index) {                                               \
        for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {                          \
            if (index < tables[t]->count) return &tables[t]->items[index];                       \
            index -= tables[t]->count;                                                           \
        }                                                                                        \
        return NULL;                                                                             \
    }

CS_TABLE_LIST_ACCESSORS(, cs_bench_count, cs_bench_at, cs_bench_case, kBenchTables)
CS_TABLE_LIST_ACCESSORS(, cs_scenario_count, cs_scenario_at, cs_scenario, kScenarioTables)
CS_TABLE_LIST_ACCESSORS(static, cs_oracle_count, cs_oracle_at, cs_oracle, kOracleTables)

cs_scenario_outcome cs_scenario_run(size_t index, char *exception_name, size_t capacity) {
    const cs_scenario *scenario = cs_scenario_at(index);
    if (capacity > 0) exception_name[0] = 0;
    if (scenario == NULL) return CS_SCENARIO_RETURNED_OTHER;
    cs_scenario_outcome outcome;
    @autoreleasepool {
        @try {
            outcome = scenario->run() ? CS_SCENARIO_RETURNED_NEUTRAL : CS_SCENARIO_RETURNED_OTHER;
        } @catch (NSException *exception) {
            if (capacity > 0) {
                strncpy(exception_name, [[exception name] UTF8String], capacity - 1);
                exception_name[capacity - 1] = 0;
            }
            outcome = CS_SCENARIO_THREW;
        }
    }
    return outcome;
}

bool cs_scenario_run_uncaught(size_t index) {
    const cs_scenario *scenario = cs_scenario_at(index);
    if (scenario == NULL) return false;
    bool neutral;
    @autoreleasepool {
        neutral = scenario->run();
    }
    return neutral;
}

typedef struct {
    size_t index;
    char *exception_name;
    size_t capacity;
    cs_scenario_outcome outcome;
} cs_scenario_thread_run;

static void *cs_scenario_thread_body(void *context) {
    cs_scenario_thread_run *run = context;
    run->outcome = cs_scenario_run(run->index, run->exception_name, run->capacity);
    return NULL;
}

cs_scenario_outcome cs_scenario_run_on_new_thread(size_t index, char *exception_name, size_t capacity) {
    cs_scenario_thread_run run = {.index = index, .exception_name = exception_name, .capacity = capacity,
                                  .outcome = CS_SCENARIO_RETURNED_OTHER};
    if (capacity > 0) exception_name[0] = 0;
    pthread_t thread;
    if (pthread_create(&thread, NULL, cs_scenario_thread_body, &run) != 0) return CS_SCENARIO_RETURNED_OTHER;
    pthread_join(thread, NULL);
    return run.outcome;
}

const char *cs_oracle_name(size_t index) {
    const cs_oracle *oracle = cs_oracle_at(index);
    return oracle ? oracle->name : NULL;
}

char *cs_oracle_run(size_t index) {
    const cs_oracle *oracle = cs_oracle_at(index);
    if (oracle == NULL) return NULL;
    char *result = NULL;
    @autoreleasepool {
        NSString *text;
        @try {
            text = CS_OBJECT(oracle->run()); /* autoreleased in this pool (cs_oracle) */
        } @catch (NSException *exception) {
            text = [NSString stringWithFormat:@"exception:%@", [exception name]];
        }
        result = strdup([text UTF8String]);
    }
    return result;
}
