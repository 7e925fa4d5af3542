/*
 * Scenarios.m — the ordered list of scenario and oracle tables, and the runner.
 * Adding a guard's scenarios: one file with a table, one row below.
 */
#import "CSScenarioSupport.h"
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
};

size_t cs_bench_count(void) {
    size_t total = 0;
    for (size_t t = 0; t < sizeof kBenchTables / sizeof kBenchTables[0]; t++) total += kBenchTables[t]->count;
    return total;
}

const cs_bench_case *cs_bench_at(size_t index) {
    for (size_t t = 0; t < sizeof kBenchTables / sizeof kBenchTables[0]; t++) {
        if (index < kBenchTables[t]->count) return &kBenchTables[t]->items[index];
        index -= kBenchTables[t]->count;
    }
    return NULL;
}

size_t cs_scenario_count(void) {
    size_t total = 0;
    for (size_t t = 0; t < sizeof kScenarioTables / sizeof kScenarioTables[0]; t++) total += kScenarioTables[t]->count;
    return total;
}

const cs_scenario *cs_scenario_at(size_t index) {
    for (size_t t = 0; t < sizeof kScenarioTables / sizeof kScenarioTables[0]; t++) {
        if (index < kScenarioTables[t]->count) return &kScenarioTables[t]->items[index];
        index -= kScenarioTables[t]->count;
    }
    return NULL;
}

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

size_t cs_oracle_count(void) {
    size_t total = 0;
    for (size_t t = 0; t < sizeof kOracleTables / sizeof kOracleTables[0]; t++) total += kOracleTables[t]->count;
    return total;
}

static const cs_oracle *cs_oracle_at(size_t index) {
    for (size_t t = 0; t < sizeof kOracleTables / sizeof kOracleTables[0]; t++) {
        if (index < kOracleTables[t]->count) return &kOracleTables[t]->items[index];
        index -= kOracleTables[t]->count;
    }
    return NULL;
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
            text = (NSString *)oracle->run();
        } @catch (NSException *exception) {
            text = [NSString stringWithFormat:@"exception:%@", [exception name]];
        }
        result = strdup([text UTF8String]);
    }
    return result;
}
