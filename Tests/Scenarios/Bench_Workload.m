/*
 * Bench_Workload.m — an app-like workload: parse a ~1 MB JSON document (generated
 * deterministically, once, outside the timing), build model objects through key-value coding,
 * iterate them formatting and slicing strings, and fill and read caches (NSCache and an
 * NSMutableDictionary). `shield bench` times it with every guard installed against none.
 *
 * One operation is one whole run of the workload; the case asks for a fixed number of runs per
 * measurement instead of the harness's calibration.
 */
#import "CSScenarioSupport.h"
#include <pthread.h>
#include <stdio.h>

static volatile uintptr_t g_workload_sink;

/** A model filled through -setValue:forKey: (KVC finds the setters). */
@interface CSWorkloadUser : NSObject {
    NSInteger identifier;
    __strong NSString *name;
    __strong NSString *email;
    double score;
    BOOL active;
    __strong NSArray *tags;
    __strong NSString *city;
    __strong NSString *zip;
}
- (NSString *)name;
- (NSString *)email;
- (double)score;
- (NSArray *)tags;
- (NSString *)city;
- (NSString *)zip;
@end

@implementation CSWorkloadUser
- (void)dealloc {
    CS_RELEASE(name);
    CS_RELEASE(email);
    CS_RELEASE(tags);
    CS_RELEASE(city);
    CS_RELEASE(zip);
    CS_SUPER_DEALLOC();
}
- (NSInteger)identifier { return identifier; }
- (void)setIdentifier:(NSInteger)value { identifier = value; }
- (NSString *)name { return name; }
- (void)setName:(NSString *)value { id old = name; name = CS_RETAIN(value); CS_RELEASE(old); }
- (NSString *)email { return email; }
- (void)setEmail:(NSString *)value { id old = email; email = CS_RETAIN(value); CS_RELEASE(old); }
- (double)score { return score; }
- (void)setScore:(double)value { score = value; }
- (BOOL)active { return active; }
- (void)setActive:(BOOL)value { active = value; }
- (NSArray *)tags { return tags; }
- (void)setTags:(NSArray *)value { id old = tags; tags = CS_RETAIN(value); CS_RELEASE(old); }
- (NSString *)city { return city; }
- (void)setCity:(NSString *)value { id old = city; city = CS_RETAIN(value); CS_RELEASE(old); }
- (NSString *)zip { return zip; }
- (void)setZip:(NSString *)value { id old = zip; zip = CS_RETAIN(value); CS_RELEASE(old); }
@end

/* ~1 MB of JSON: an object with a "users" array; every field derived from the record's index. */
static NSData *g_document;
static pthread_once_t g_document_once = PTHREAD_ONCE_INIT;

static void cs_workload_make_document(void) {
    @autoreleasepool {
        NSMutableString *json = [NSMutableString stringWithCapacity:1100000];
        [json appendString:@"{\"version\":3,\"users\":["];
        for (NSUInteger i = 0; [json length] < 1000000; i++) {
            if (i > 0) [json appendString:@","];
            [json appendFormat:@"{\"id\":%lu,\"name\":\"User %lu Name\",\"email\":\"user%lu@example.com\","
                               @"\"score\":%lu.5,\"active\":%@,\"tags\":[\"t%lu\",\"group%lu\",\"x\"],"
                               @"\"address\":{\"city\":\"City %lu\",\"zip\":\"%05lu\",\"street\":\"%lu Main Street\"},"
                               @"\"bio\":\"Lorem ipsum dolor sit amet, consectetur adipiscing elit %lu.\"}",
                               (unsigned long)i, (unsigned long)i, (unsigned long)i, (unsigned long)(i % 1000),
                               (i % 3) ? @"true" : @"false", (unsigned long)(i % 7), (unsigned long)(i % 11),
                               (unsigned long)(i % 50), (unsigned long)(10000 + i % 90000), (unsigned long)i,
                               (unsigned long)i];
        }
        [json appendString:@"]}"];
        g_document = CS_RETAIN([json dataUsingEncoding:NSUTF8StringEncoding]);
    }
}

/** One run: returns a checksum of what it computed (so nothing is optimised away). */
static uintptr_t cs_workload_run_once(void) {
    uintptr_t checksum = 0;
    @autoreleasepool {
        NSDictionary *root = [NSJSONSerialization JSONObjectWithData:g_document options:0 error:NULL];
        NSArray *records = [root objectForKey:@"users"];
        NSUInteger count = [records count];
        NSMutableArray *users = [NSMutableArray arrayWithCapacity:count];
        NSArray *plainKeys = [NSArray arrayWithObjects:@"name", @"email", @"score", @"active", @"tags", nil];
        for (NSUInteger i = 0; i < count; i++) {
            NSDictionary *record = [records objectAtIndex:i];
            CSWorkloadUser *user = [[CSWorkloadUser alloc] init];
            [user setValue:[record objectForKey:@"id"] forKey:@"identifier"];
            for (NSString *key in plainKeys) [user setValue:[record objectForKey:key] forKey:key];
            NSDictionary *address = [record objectForKey:@"address"];
            [user setValue:[address objectForKey:@"city"] forKey:@"city"];
            [user setValue:[address objectForKey:@"zip"] forKey:@"zip"];
            [users addObject:user];
            CS_RELEASE(user);
        }

        NSCache *cache = [[NSCache alloc] init];
        NSMutableDictionary *byCity = [NSMutableDictionary dictionary];
        for (NSUInteger i = 0; i < count; i++) {
            CSWorkloadUser *user = [users objectAtIndex:i];
            NSString *line = [NSString stringWithFormat:@"%@ <%@> %.1f %@", [user name], [user email], [user score],
                                                        [[user tags] componentsJoinedByString:@","]];
            NSRange at = [line rangeOfString:@"@"];
            NSString *local = at.location != NSNotFound ? [line substringToIndex:at.location] : line;
            checksum += [local length] + [line characterAtIndex:0];
            if ([[user zip] hasPrefix:@"1"]) checksum++;
            NSString *upper = [[user city] uppercaseString];
            [cache setObject:line forKey:[user email]];
            NSMutableArray *group = [byCity objectForKey:upper];
            if (group == nil) {
                group = [NSMutableArray array];
                [byCity setObject:group forKey:upper];
            }
            [group addObject:user];
        }
        for (NSUInteger i = 0; i < count; i += 3) {
            CSWorkloadUser *user = [users objectAtIndex:i];
            checksum += (uintptr_t)[[cache objectForKey:[user email]] length];
            checksum += [[byCity objectForKey:[[user city] uppercaseString]] count];
        }
        for (NSString *city in [[byCity allKeys] sortedArrayUsingSelector:@selector(compare:)])
            checksum += [[city substringWithRange:NSMakeRange(0, 4)] hash] & 0xff;
        CS_RELEASE(cache);
    }
    return checksum;
}

static uint64_t bench_workload(uint64_t iterations, bool guarded) {
    (void)guarded;
    pthread_once(&g_document_once, cs_workload_make_document);
    uintptr_t checksum = 0;
    uint64_t start = cs_bench_now();
    for (uint64_t i = 0; i < iterations; i++) checksum += cs_workload_run_once();
    uint64_t elapsed = cs_bench_now() - start;
    g_workload_sink = checksum;
    return elapsed;
}

static void note_workload(char *buffer, size_t capacity) {
    pthread_once(&g_document_once, cs_workload_make_document);
    snprintf(buffer, capacity, "one run: parse %lu bytes of JSON, KVC models, formatting, NSCache and dictionary caches; "
                               "goal: guarded <= 1.03 x",
             (unsigned long)[g_document length]);
}

static const cs_bench_case kWorkloadBenches[] = {
    {"workload: JSON -> KVC models -> strings -> caches (all guards)", bench_workload, note_workload, 2},
};
const cs_bench_table cs_workload_benches = CS_TABLE(kWorkloadBenches);
