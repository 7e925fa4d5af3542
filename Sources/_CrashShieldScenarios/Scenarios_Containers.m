/*
 * Scenarios_Containers.m — SPEC §2.1 misuse scenarios and legal-input oracles.
 */
#import "CSScenarioSupport.h"

#pragma mark - Scenarios

static bool array_objectAtIndex_beyond(void) {
    NSArray *array = [NSArray arrayWithObjects:@"a", @"b", nil];
    return [array objectAtIndex:cs_opaque_index(5)] == nil;
}

static const cs_scenario kScenarios[] = {
    {"array.objectAtIndex.beyond", "container", "objectAtIndex:", false, array_objectAtIndex_beyond},
};
const cs_scenario_table cs_container_scenarios = CS_TABLE(kScenarios);

#pragma mark - Oracles

static void *oracle_array_objectAtIndex(void) {
    NSMutableString *out = [NSMutableString string];
    NSArray *literal = [NSArray arrayWithObjects:@"a", @"b", @"c", nil];
    NSMutableArray *mutable = [NSMutableArray arrayWithArray:literal];
    for (NSUInteger i = 0; i < 3; i++) {
        [out appendFormat:@"%@ ", cs_describe([literal objectAtIndex:i])];
        [out appendFormat:@"%@ ", cs_describe([mutable objectAtIndex:i])];
    }
    return out;
}

static const cs_oracle kOracles[] = {
    {"NSArray objectAtIndex:", oracle_array_objectAtIndex},
};
const cs_oracle_table cs_container_oracles = CS_TABLE(kOracles);
