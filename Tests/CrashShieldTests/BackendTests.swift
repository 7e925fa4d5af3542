import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing
import CrashShield
import _CrashShieldRuntime
import _CrashShieldScenarios
import _CrashShieldTestSupport

extension RuntimeTests {
    @Suite struct Backend {
        #if !canImport(Darwin)
        /// GCC libobjc: the own-method lookup that reads method lists in place answers exactly as
        /// class_copyMethodList does, for every method of every class and metaclass (categories
        /// and methods added at run time included) and for a selector no class defines.
        @Test func ownMethodLookupMatchesTheCopiedMethodLists() {
            var checked = 0
            var inPlace = false
            let mismatches = cs_backend_own_method_mismatches_for_testing(&checked, &inPlace)
            #expect(inPlace, "GCC libobjc's method lists no longer read as the backend expects")
            #expect(checked > 5_000)  // GNUstep Base alone defines several thousand methods
            #expect(mismatches == 0)
        }
        #endif

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

        /// GCC libobjc: replacing a method while other threads message its class never kills the
        /// process. A dispatch-table rebuild frees the tables those threads are reading (SIGSEGV in
        /// objc_msg_lookup); the backend writes the entries in place instead. In a child process (a
        /// crash must not take the test run with it); the alarm ends a hung child, which fails the
        /// expectation as well. Exit codes: 3 no owner found, 4 a replacement did not reach the
        /// receiver's class, 5 the messaging threads never ran.
        @Test func replacingAClusterMethodWhileOtherThreadsMessageItNeverCrashes() async {
            await #expect(processExitsWith: .success) {
                alarm(120)
                let probe = cs_test_concurrent_replacement(2000, false)
                guard probe.found_owner else { exit(3) }
                guard probe.stale == 0 else { exit(4) }
                exit(probe.calls > 0 ? 0 : 5)
            }
        }

        /// The same for a method of the root class, whose replacement affects every class's table.
        @Test func replacingARootMethodWhileOtherThreadsMessageItNeverCrashes() async {
            await #expect(processExitsWith: .success) {
                alarm(120)
                let probe = cs_test_concurrent_replacement(2000, true)
                guard probe.found_owner else { exit(3) }
                guard probe.stale == 0 else { exit(4) }
                exit(probe.calls > 0 ? 0 : 5)
            }
        }

        /// Adding a method to the root class while other threads message its subclasses never
        /// kills the process (the KVO guard's first start adds -removeObserver:forKeyPath:context:
        /// to NSObject this way): class_addMethod's rebuild of every table below NSObject frees
        /// tables those threads are reading; the backend writes the new entries in place. Exit
        /// codes: 3 no NSObject, 4 an add did not reach the subclass, 5 the threads never ran.
        @Test func addingARootMethodWhileOtherThreadsMessageItNeverCrashes() async {
            await #expect(processExitsWith: .success) {
                alarm(120)
                let probe = cs_test_concurrent_add(8000)
                guard probe.found_owner else { exit(3) }
                guard probe.stale == 0 else { exit(4) }
                exit(probe.calls > 0 ? 0 : 5)
            }
        }

        #if !canImport(Darwin) // GCC libobjc (GNUstep) only
        /// GCC libobjc: adding methods whose selectors were registered after the dispatch tables
        /// were built, while other threads message a subclass, never kills the process. Those tables
        /// must grow; class_addMethod's rebuild frees tables those threads are reading, and
        /// libobjc's own growth (sarray_realloc) publishes the larger capacity before the larger
        /// array and frees the old one. The backend grows each table in place, safely for readers.
        /// Exit codes: 3 no NSObject, 4 an add did not reach the subclass, 5 the threads never ran,
        /// 6 no selector lay past NSObject's table (the fixture no longer tests growth), 7 the
        /// backend does not grow tables in place.
        @Test func addingPastTheDispatchTablesWhileOtherThreadsMessageNeverCrashes() async {
            await #expect(processExitsWith: .success) {
                alarm(120)
                let probe = cs_test_concurrent_add_past_tables(4000)
                guard probe.run.found_owner else { exit(3) }
                guard probe.run.stale == 0 else { exit(4) }
                guard probe.run.calls > 0 else { exit(5) }
                guard probe.past_capacity > 0 else { exit(6) }
                exit(probe.grows_tables ? 0 : 7)
            }
        }

        /// GCC libobjc: a replacement whose selector lies past a table it writes gives that table
        /// room first, as adding does (one decision for both): sarray_at_put_safe there would grow
        /// it through sarray_realloc, which aborts the process on a table a subclass's table was
        /// lazily copied from. Exit codes: 3 the fixture's selector fit the table, 4 the previous
        /// IMP was not the method's, 5 the owner does not answer with the replacement, 6 the grown
        /// subclass table no longer dispatches an inherited method.
        @Test func replacingAMethodPastItsOwnersTableNeverAborts() async {
            await #expect(processExitsWith: .success) {
                alarm(60)
                let probe = cs_test_replace_past_table()
                guard probe.fixture_holds else { exit(3) }
                guard probe.previous_is_original else { exit(4) }
                guard probe.owner_answer == 2 else { exit(5) }
                exit(probe.sub_answer == 1 ? 0 : 6)
            }
        }

        /// The table self-check: on this libobjc, dispatch tables are written in place.
        @Test func dispatchTablesAreWrittenInPlaceOnThisRuntime() {
            #expect(cs_test_dispatch_write_fallback() == nil)
        }

        /// The table self-check refuses a changed dispatch-table layout (played by the test seam)
        /// with a stable code, and the backend still reaches subclasses by rebuilding; the real
        /// layout passes the check again. In a child: the rebuilds are unsafe beside other tests'
        /// threads. Exit codes: 3 the first variant was not refused, 4 the second was not,
        /// 5 a replacement did not reach the subclass under the fallback, 6 an add failed under it,
        /// 7 the real layout was refused.
        @Test func aChangedDispatchTableLayoutFallsBackToRebuilding() async {
            await #expect(processExitsWith: .success) {
                alarm(60)
                let mismatch = "dispatch-table-layout-mismatch"
                _ = cs_test_dispatch_write_fallback() // decided once on the real layout first
                cs_backend_assume_table_layout_for_testing(1)
                guard let first = cs_test_dispatch_write_fallback(), String(cString: first) == mismatch else { exit(3) }
                cs_backend_assume_table_layout_for_testing(2)
                guard let second = cs_test_dispatch_write_fallback(), String(cString: second) == mismatch else { exit(4) }
                let probe = cs_test_dispatch_refresh()
                guard probe.backend_sub == 2, probe.restored_sub == 1 else { exit(5) }
                guard cs_test_add_method_reaches_subclass() else { exit(6) }
                cs_backend_assume_table_layout_for_testing(0)
                exit(cs_test_dispatch_write_fallback() == nil ? 0 : 7)
            }
        }
        #endif

        @Test func ownerDiscoveryFindsConcreteClusterClasses() {
            // Several concrete classes define these themselves on every Foundation we know;
            // the exact number is the runtime's business.
            #expect(cs_test_owner_count("NSArray", "objectAtIndex:", false) > 1)
            #expect(cs_test_owner_count("NSString", "characterAtIndex:", false) > 1)
            #expect(cs_test_owner_count("NSArray", "arrayWithObjects:count:", true) >= 1)
            #expect(cs_test_owner_count("NSArray", "noSuchSelectorAnywhere:", false) == 0)
        }

        /// Regression: the engine once read an owner's IMP through the dispatch table, which on GCC
        /// libobjc could answer with the slot just installed on a superclass, so a subclass ended up
        /// calling its superclass's original (a crash in the container oracle).
        @Test func installUninstallCyclesRestoreEveryOwnerExactly() {
            CrashShieldSDK._resetForTesting()
            let result = cs_test_install_cycles(5)
            CrashShieldSDK._resetForTesting()
            #expect(result.owners > 100)
            #expect(result.slot_chained_to_slot == 0)
            #expect(result.changed_after_uninstall == 0)
        }

        @Test func sideTableSurvivesConcurrentUse() {
            #expect(cs_test_sidetable_stress(8, 2_000) == 0)
        }
    }
}

extension RuntimeTests.Backend {
    /// Discovery bounded by the system's images finds exactly the owners a walk of every class
    /// finds with a system implementation on a class of a system image, and none of the app's
    /// (this process has app classes that define hooked selectors themselves).
    @Test func imageBoundedDiscoveryFindsEverySystemOwner() {
        let comparison = cs_scope_compare_discovery()
        #expect(comparison.system_pairs != Int.max)
        #expect(comparison.system_pairs > 100)
        #expect(comparison.app_pairs > 0)
    }

    /// "System" is decided by where the implementation lives: GNUstep's and the runtime's yes,
    /// an app class's (compiled or added at run time) no.
    @Test func systemImplementationsAreFoundByAddress() {
        #expect(cs_scope_system_implementation_bits() == 1 | 2 | 4)
    }
}
