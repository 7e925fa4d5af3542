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
 */
#include <stdio.h>

#include <cs_runtime.h>

#define CS_SUITE_STARTER_MARK "crashshield-suite-starter:"

/* Referenced by name by the script (nm) to prove a test program was linked with the guards. */
__attribute__((constructor, used)) void cs_suite_start_guards(void) {
    cs_start_result result = cs_guards_start(NULL);
    if (result != CS_START_OK) {
        fprintf(stderr, CS_SUITE_STARTER_MARK " cs_guards_start returned %d\n", (int)result);
        return;
    }
    for (size_t i = 0; i < cs_guard_count(); i++) {
        cs_guard_status status = cs_guard_status_at(i);
        if (status.state != CS_GUARD_ACTIVE)
            fprintf(stderr, CS_SUITE_STARTER_MARK " guard %s not active (state %d): %s\n", status.name,
                    (int)status.state, status.detail ? status.detail : "no detail");
    }
}
