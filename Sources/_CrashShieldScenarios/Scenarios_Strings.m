/*
 * Scenarios_Strings.m — SPEC §2.2 misuse scenarios and legal-input oracles.
 */
#import "CSScenarioSupport.h"

#pragma mark - Scenarios

static bool string_characterAtIndex_beyond(void) {
    return [@"abc" characterAtIndex:cs_opaque_index(9)] == 0;
}

static const cs_scenario kScenarios[] = {
    {"string.characterAtIndex.beyond", "string", "characterAtIndex:", false, string_characterAtIndex_beyond},
};
const cs_scenario_table cs_string_scenarios = CS_TABLE(kScenarios);

#pragma mark - Oracles

static void *oracle_string_characterAtIndex(void) {
    NSMutableString *out = [NSMutableString string];
    NSArray *strings = [NSArray arrayWithObjects:@"abc", [NSString stringWithFormat:@"%s", "xyz"],
                                                 [NSString stringWithUTF8String:"h\xc3\xa9llo"],
                                                 [NSMutableString stringWithString:@"mut"], nil];
    for (NSString *s in strings)
        for (NSUInteger i = 0; i < [s length]; i++) [out appendFormat:@"%u ", (unsigned)[s characterAtIndex:i]];
    return out;
}

static const cs_oracle kOracles[] = {
    {"NSString characterAtIndex:", oracle_string_characterAtIndex},
};
const cs_oracle_table cs_string_oracles = CS_TABLE(kOracles);
