/*
 * Bench_Start.m — what cs_guards_start costs: every guard's owners found, hooks installed and
 * canaries run, and how that grows with the number of classes.
 */
#import "CSScenarioSupport.h"
#include "cs_runtime.h"
#include "cs_scope_support.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Starts are slow next to the other cases' calls: at most this many per measurement. */
static const uint64_t kMaxStartsPerMeasurement = 40;

/* Each measured start begins from uninstalled guards. The baseline leaves them uninstalled, the
 * guarded run leaves them installed (what the harness expects of either side). The harness
 * divides by `iterations`, so fewer starts are scaled up to it: the figure stays per start. */
/* Reads and writes a buffer larger than the CPU's caches, so that what ran before (the uninstall,
 * which walks every class) leaves nothing of its own in them: a start at an app's launch meets
 * cold caches, whatever the process's class count. */
static void cs_evict_caches(void) {
    enum { kEvictBytes = 64u << 20 };
    static volatile unsigned char *buffer;
    if (buffer == NULL) buffer = calloc(kEvictBytes, 1);
    if (buffer == NULL) return;
    for (size_t i = 0; i < kEvictBytes; i += 64) buffer[i]++;
}

static uint64_t cs_measure_starts_evicting(uint64_t iterations, bool leave_installed, bool evict) {
    uint64_t starts = iterations < kMaxStartsPerMeasurement ? iterations : kMaxStartsPerMeasurement;
    uint64_t elapsed = 0;
    /* Zombies an earlier case kept would be freed inside the measured starts otherwise. */
    cs_zombie_flush();
    for (uint64_t i = 0; i < starts; i++) {
        cs_guards_uninstall();
        if (evict) cs_evict_caches();
        uint64_t start = cs_bench_now();
        cs_guards_start(NULL);
        elapsed += cs_bench_now() - start;
    }
    if (!leave_installed) cs_guards_uninstall();
    return elapsed * iterations / (starts ? starts : 1);
}

static uint64_t cs_measure_starts(uint64_t iterations, bool leave_installed) {
    return cs_measure_starts_evicting(iterations, leave_installed, false);
}

static uint64_t bench_guards_start(uint64_t iterations, bool guarded) {
    uint64_t elapsed;
    @autoreleasepool {
        elapsed = cs_measure_starts(iterations, guarded);
    }
    return elapsed;
}

/* The best of a few starts, in microseconds, with the guards left as they were found, and that
 * start's dispatch-table writes. */
typedef struct {
    double total_us;
    double table_writes_us;
    cs_guards_start_timing parts;
} cs_start_figure;

static cs_start_figure cs_best_start(bool cold) {
    cs_start_figure best = {1e30, 0, {0}};
    for (int i = 0; i < 5; i++) {
        @autoreleasepool {
            double us = (double)cs_measure_starts_evicting(1, true, cold) / 1000.0;
            if (us < best.total_us)
                best = (cs_start_figure){us, (double)cs_guards_last_start_timing().table_writes_ns / 1000.0,
                                         cs_guards_last_start_timing()};
        }
    }
    return best;
}

/* In a process that has started the guards before (as here), so classes GNUstep initialises
 * on first use are ready: the first start of a fresh process pays that too (see the README).
 * Runs after every round: adds NSObject subclasses made at run time (they stay for the rest of the
 * process, so nothing else is measured after this) and reports the start time at each count:
 * +10,000 and +50,000 classes never messaged, then +10,000 more that were messaged once, whose
 * installed dispatch tables each hook written into NSObject's table must reach. Each figure also
 * without its dispatch-table writes (GNUstep: a walk of each owner's subclasses, which grows with
 * NSObject's subclasses whether messaged or not); owner discovery must not grow with them.
 * Two series: "warm", each start right after the uninstall before it (whose walk of every class
 * leaves the caches full of class structures the more classes there are), and "cold", each start
 * after the caches were evicted, as at an app's launch: the same state for every class count. */
static void note_series(char *buffer, size_t capacity, const char *label, const cs_start_figure figures[4], bool first) {
    size_t used = strlen(buffer);
    double rest = figures[0].total_us - figures[0].table_writes_us;
    double rest_10k = figures[1].total_us - figures[1].table_writes_us;
    double rest_50k = figures[2].total_us - figures[2].table_writes_us;
    used += (size_t)snprintf(
        buffer + used, capacity - used,
        "%s%s: start %.0f us, +10000 app classes %.0f us, +50000 %.0f us, +10000 of them messaged %.0f us; "
        "without table writes %.0f / %.0f (%+.1f%%) / %.0f (%+.1f%%) / %.0f us; table writes %.0f / %.0f / %.0f / %.0f us",
        first ? "" : " || ", label, figures[0].total_us, figures[1].total_us, figures[2].total_us, figures[3].total_us,
        rest, rest_10k, 100.0 * (rest_10k - rest) / rest, rest_50k, 100.0 * (rest_50k - rest) / rest,
        figures[3].total_us - figures[3].table_writes_us, figures[0].table_writes_us, figures[1].table_writes_us,
        figures[2].table_writes_us, figures[3].table_writes_us);
    for (size_t f = 0; f < 4 && used < capacity; f++) {
        const cs_guards_start_timing *t = &figures[f].parts;
        used += (size_t)snprintf(buffer + used, capacity - used, "%s%.0f/%.0f/%.0f", f == 0 ? "; discovery/hooks/canaries us " : " | ",
                                 t->discovery_ns / 1e3, t->hooks_ns / 1e3, t->canaries_ns / 1e3);
    }
}

static void note_guards_start(char *buffer, size_t capacity) {
    int classes = objc_getClassList(NULL, 0);
    cs_start_figure warm[4], cold[4];
    warm[0] = cs_best_start(false);
    cold[0] = cs_best_start(true);
    cs_scope_make_filler_classes(10000);
    warm[1] = cs_best_start(false);
    cold[1] = cs_best_start(true);
    cs_scope_make_filler_classes(50000);
    warm[2] = cs_best_start(false);
    cold[2] = cs_best_start(true);
    cs_scope_make_used_filler_classes(10000);
    warm[3] = cs_best_start(false);
    cold[3] = cs_best_start(true);
    cs_guards_uninstall();
    snprintf(buffer, capacity, "%d classes at first; ", classes);
    note_series(buffer, capacity, "warm", warm, true);
    note_series(buffer, capacity, "cold", cold, false);
}

static const cs_bench_case kBenches[] = {
    {"guards start (every guard hooked and verified)", bench_guards_start, note_guards_start},
};
const cs_bench_table cs_start_benches = CS_TABLE(kBenches);
