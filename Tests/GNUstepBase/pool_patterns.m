/*
 * Autorelease-pool patterns and buffer-copy misuse that GNUstep Base's own tests rely on, run by
 * scripts/gnustep-base-suite.sh before the suite: built once plain and once with the guards object
 * (whose starter runs cs_guards_start(NULL) before main), every case in its own process. The
 * script requires each case to exit 0 and print "<case>: ok" in both builds.
 *
 * Regression: NSData/general.m asks -getBytes:range: for 312 bytes into a 100-byte buffer and
 * expects the throw. The container guard used to copy the valid part of the range (311 bytes),
 * which overwrote the heap after the buffer; there lay autorelease pools that the guards' start
 * had left in the thread's pool cache, and GNUstep's exit handler then raised "NSAutoreleasePool
 * corrupted pool in cache" (SIGSEGV under gnustep-tests). The case `getbytes-short-buffer` is that
 * sequence; `getobjects-short-buffer` is the same for -[NSArray getObjects:range:].
 *
 * Not a case: a pool released by a thread other than its own. GNUstep's pools are per thread;
 * plain GNUstep 1.28 then hangs when the pool's own thread exits (its exit drains a pool that is
 * already back in a cache), with or without the guards.
 *
 * Usage: pool_patterns <case>; pool_patterns (no argument) lists the cases, one per line.
 * Plain C and Objective-C only (gnustep-make's compiler, MRC): this is a test program, not SDK code.
 */
#import <Foundation/Foundation.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef int (*case_fn)(void);

/* A misuse the plain build throws for and the guarded build neutralises: either is fine here,
 * as long as nothing after it is damaged. */
#define RUN_MISUSE(statement) \
    NS_DURING statement; NS_HANDLER NS_ENDHANDLER

/* A new pool must come out of the thread's cache intact, work, and go back. */
static int pools_still_work(void) {
    NSAutoreleasePool *pool = [NSAutoreleasePool new];
    [[[NSObject alloc] init] autorelease];
    [pool release];
    return 1;
}

/* NSData/general.m, reduced: top pool, misuse into a short heap buffer, pool released, then an
 * autorelease with no pool, then a new pool (the exit handler makes one too). */
static int getbytes_short_buffer(void) {
    NSAutoreleasePool *arp = [NSAutoreleasePool new];
    NSMutableData *holder = [NSMutableData dataWithLength:100];
    char *hold = [holder mutableBytes];
    NSUInteger length = 312;
    char *bytes = malloc(length);
    memset(bytes, 'x', length);
    NSData *data = [NSData dataWithBytesNoCopy:bytes length:length];
    RUN_MISUSE([data getBytes:hold range:NSMakeRange(1, length)]);
    RUN_MISUSE([data getBytes:hold range:NSMakeRange(length, 1)]);
    [arp release];
    [[[NSObject alloc] init] autorelease]; /* no pool: GNUstep logs and makes a temporary one */
    return pools_still_work();
}

/* The same with -getObjects:range: into a heap buffer for 12 objects, asking for 41 of 40. */
static int getobjects_short_buffer(void) {
    NSAutoreleasePool *arp = [NSAutoreleasePool new];
    NSMutableData *holder = [NSMutableData dataWithLength:12 * sizeof(id)];
    id *twelve = [holder mutableBytes];
    NSMutableArray *array = [NSMutableArray array];
    for (int i = 0; i < 40; i++) [array addObject:[NSNumber numberWithInt:i]];
    RUN_MISUSE([array getObjects:twelve range:NSMakeRange(0, 41)]);
    [arp release];
    [[[NSObject alloc] init] autorelease];
    return pools_still_work();
}

static int drain_top_then_autorelease(void) {
    NSAutoreleasePool *arp = [NSAutoreleasePool new];
    [[[NSObject alloc] init] autorelease];
    [arp release];
    [[[NSObject alloc] init] autorelease];
    [[[NSObject alloc] init] autorelease];
    return pools_still_work();
}

/* Releasing an outer pool drains the inner one that is still open. */
static int nested_out_of_order(void) {
    NSAutoreleasePool *outer = [NSAutoreleasePool new];
    NSAutoreleasePool *inner = [NSAutoreleasePool new];
    (void)inner;
    [[[NSObject alloc] init] autorelease];
    [outer release];
    return pools_still_work() && [NSAutoreleasePool currentPool] == nil;
}

/* An exception leaves an inner pool open; the outer pool's release drains it. */
static int exception_through_pool(void) {
    NSAutoreleasePool *outer = [NSAutoreleasePool new];
    NS_DURING {
        NSAutoreleasePool *inner = [NSAutoreleasePool new];
        (void)inner;
        [[[NSObject alloc] init] autorelease];
        [NSException raise:NSGenericException format:@"through a pool"];
    }
    NS_HANDLER
    NS_ENDHANDLER
    [outer release];
    return pools_still_work();
}

static void *autorelease_without_pool(void *unused) {
    (void)unused;
    [[[NSObject alloc] init] autorelease];
    return NULL;
}

static int thread_without_pool(void) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, autorelease_without_pool, NULL) != 0) return 0;
    pthread_join(thread, NULL);
    return pools_still_work();
}

static const struct {
    const char *name;
    case_fn run;
} kCases[] = {
    {"getbytes-short-buffer", getbytes_short_buffer},
    {"getobjects-short-buffer", getobjects_short_buffer},
    {"drain-top-then-autorelease", drain_top_then_autorelease},
    {"nested-out-of-order", nested_out_of_order},
    {"exception-through-pool", exception_through_pool},
    {"thread-without-pool", thread_without_pool},
};

int main(int argc, char **argv) {
    size_t count = sizeof kCases / sizeof kCases[0];
    if (argc < 2) {
        for (size_t i = 0; i < count; i++) printf("%s\n", kCases[i].name);
        return 0;
    }
    for (size_t i = 0; i < count; i++) {
        if (strcmp(argv[1], kCases[i].name) != 0) continue;
        int ok = kCases[i].run();
        printf("%s: %s\n", kCases[i].name, ok ? "ok" : "FAILED");
        fflush(stdout);
        return ok ? 0 : 1;
    }
    fprintf(stderr, "pool_patterns: no case %s\n", argv[1]);
    return 2;
}
