import Foundation
import Testing

@testable import CrashShieldCapture

/// SPEC §2.12: a fatal report with frames inside a guard switches that guard off at the next
/// start, with an incident. Both runs are child processes (guards and capture are per process).
@Suite struct FailSafeTests {
    @Test func crashInsideAGuardSwitchesItOffAtTheNextStart() throws {
        let directory = temporaryDirectory("failsafe")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crash = try runChild(Built.shield, ["crash", "inside-guard", "--dir", directory])
        #expect(crash.termination == .signaled(SIGSEGV))
        let report = try #require(loadReports(directory).first)
        #expect((report.crashedThread?.frames ?? []).contains { $0.function?.contains("objectAtIndex") == true })
        #expect((report.guards ?? []).contains { $0.name == "container" && $0.state == "active" })
        // The misuse neutralised just before the crash is among the report's recent incidents.
        #expect((report.incidents ?? []).contains { $0.guard == "container" && $0.selector == "objectAtIndex:" })

        let next = try runChild(Built.shield, ["failsafe-probe", "--dir", directory])
        #expect(next.termination == .exited(0))
        #expect(next.output.contains("POLICY container off"))
        #expect(next.output.contains("POLICY string neutralize"))
        #expect(next.output.contains("FAILSAFE-INCIDENTS 1 container"))
    }

    @Test func reportsOutsideGuardsSwitchNothingOff() throws {
        let directory = temporaryDirectory("failsafe-none")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crash = try runChild(Built.shield, ["crash", "segv", "--dir", directory])
        #expect(crash.termination == .signaled(SIGSEGV))
        #expect(loadReports(directory).count == 1)
        let next = try runChild(Built.shield, ["failsafe-probe", "--dir", directory])
        #expect(next.termination == .exited(0))
        #expect(next.output.contains("POLICY container neutralize"))
        #expect(next.output.contains("FAILSAFE-INCIDENTS 0"))
    }
}
