import Testing
import _CrashShieldRuntime
import _CrashShieldScenarios

extension RuntimeTests {
    @Suite struct Backend {
        /// GCC libobjc: a replaced IMP must reach a subclass that holds its own copy of the
        /// dispatch-table bucket. The control shows the condition is really there.
        @Test func replacementReachesSubclassesWithOwnDispatchTables() {
            let probe = cs_test_dispatch_refresh()
            #expect(probe.before == 11)
            #expect(probe.control_base == 2)
            #expect(probe.control_sub == 1, "the fixture no longer reproduces a stale dispatch table")
            #expect(probe.backend_base == 2)
            #expect(probe.backend_sub == 2)
            #expect(probe.previous_is_original)
            #expect(probe.non_owner_refused)
            #expect(probe.restored_sub == 1)
        }

        @Test func ownerDiscoveryFindsConcreteClusterClasses() {
            // Several concrete classes define these themselves on every Foundation we know;
            // the exact number is the runtime's business.
            #expect(cs_test_owner_count("NSArray", "objectAtIndex:", false) > 1)
            #expect(cs_test_owner_count("NSString", "characterAtIndex:", false) > 1)
            #expect(cs_test_owner_count("NSArray", "arrayWithObjects:count:", true) >= 1)
            #expect(cs_test_owner_count("NSArray", "noSuchSelectorAnywhere:", false) == 0)
        }

        @Test func sideTableSurvivesConcurrentUse() {
            #expect(cs_test_sidetable_stress(8, 2_000) == 0)
        }
    }
}
