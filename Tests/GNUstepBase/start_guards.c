/*
 * Linked into every program of GNUstep Base's Tests/base for the guarded run of
 * scripts/gnustep-base-suite.sh: starts every guard before main(), as an app that calls
 * cs_guards_start(NULL) first would.
 *
 * Contract with the script:
 * - This object is linked after the test's own objects and after the guards' objects (one
 *   relocatable object, this file last), so its constructor runs after the runtime has registered
 *   the test's classes and the guards' own classes and selectors (.init_array runs in link order).
 *   It has no constructor priority on purpose: a prioritised constructor would run before them.
 * - Silence means every guard is active. Anything else (start refused, a guard not active) is one
 *   line per problem on stderr starting with CS_SUITE_STARTER_MARK, which lands in tests.log; the
 *   script fails the run when it finds that mark.
 * - At a normal exit, when any guard recorded a misuse, one line on stderr starting with
 *   CS_SUITE_INCIDENTS_MARK gives each such guard's count (`container=2 kvc=1`). The script checks
 *   that the guard an expected failure names did record a misuse in that test program.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cs_runtime.h>

#define CS_SUITE_STARTER_MARK "crashshield-suite-starter:"
#define CS_SUITE_INCIDENTS_MARK "crashshield-suite-incidents:"

/* One write, so that the line stays whole among other threads' output at exit. */
static void cs_suite_print_incident_counts(void) {
    char line[512];
    size_t used = (size_t)snprintf(line, sizeof line, "%s", CS_SUITE_INCIDENTS_MARK);
    const size_t mark_length = used;
    for (size_t i = 0; i < cs_guard_count() && used < sizeof line; i++) {
        const char *name = cs_guard_status_at(i).name;
        uint64_t count = cs_incidents_count_for_guard(name);
        if (count > 0)
            used += (size_t)snprintf(line + used, sizeof line - used, " %s=%llu", name, (unsigned long long)count);
    }
    if (used > mark_length && used < sizeof line) fprintf(stderr, "%s\n", line);
}

/* Referenced by name by the script (nm) to prove a test program was linked with the guards. */
__attribute__((constructor, used)) void cs_suite_start_guards(void) {
    cs_start_result result = cs_guards_start(NULL);
    if (result != CS_START_OK) {
        fprintf(stderr, CS_SUITE_STARTER_MARK " cs_guards_start returned %d\n", (int)result);
        return;
    }
    atexit(cs_suite_print_incident_counts);
    for (size_t i = 0; i < cs_guard_count(); i++) {
        cs_guard_status status = cs_guard_status_at(i);
        if (status.state != CS_GUARD_ACTIVE)
            fprintf(stderr, CS_SUITE_STARTER_MARK " guard %s not active (state %d): %s\n", status.name,
                    (int)status.state, status.detail ? status.detail : "no detail");
    }
}
