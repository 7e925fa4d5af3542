import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing
@testable import CrashShield
import _CrashShieldScenarios

/// The runtime target is built without -fexceptions and without the constant-string class
/// (docs/ARCHITECTURE.md, "Building"): these pin the helpers that replace them.
extension RuntimeTests {
    @Suite struct BuildAsDependency {
        @Test func objectiveCPlusPlusHelpersCatchAndCleanUp() {
            let probe = cs_test_objc_try()
            #expect(probe.try_caught_range_exception)
            #expect(probe.try_returned_nil_without_exception)
            #expect(probe.finally_cleanup_ran)
            #expect(probe.finally_exception_reached_caller)
        }

        @Test func internedStringIsAnNSStringMadeOnce() {
            #expect(cs_test_interned_string())
        }

        /// Report-only lets a nil element reach the original, which throws through the hook; the
        /// nesting depth of the bulk initialisers must be restored by then, or the next misuse on
        /// this thread would be taken for an already reported nested one and go unrecorded.
        @Test func bulkInitialiserThatThrowsInReportOnlyLeavesTheNextMisuseRecorded() throws {
            try withGuards {
                try CrashShieldSDK.setPolicy(.reportOnly, for: .container)
                #expect(runScenario("array.literal.nil") == .threw("NSInvalidArgumentException"))
                CrashShieldSDK.flushIncidents()
                let afterReportOnly = CrashShieldSDK.recordedCount(for: .container)
                try CrashShieldSDK.setPolicy(.neutralize, for: .container)
                #expect(runScenario("array.literal.nil") == .neutral)
                CrashShieldSDK.flushIncidents()
                #expect(CrashShieldSDK.recordedCount(for: .container) == afterReportOnly + 1)
            }
        }
    }
}
