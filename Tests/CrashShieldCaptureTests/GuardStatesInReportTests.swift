import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry
import _CrashShieldCapture

/// A report lists the guard states of the moment of the crash, not those of the
/// start. Every run crashes on purpose, so each is a child process (`shield crash`) with a timeout.
@Suite struct GuardStatesInReportTests {
    private func policies(in report: CrashReport) -> [String: CrashReport.GuardState.Policy] {
        Dictionary((report.guards ?? []).compactMap { guardState in
            guardState.name.flatMap { name in guardState.policy.map { (name, $0) } }
        }, uniquingKeysWith: { first, _ in first })
    }

    /// Policies switched with `setPolicy` after guards and capture started (an Objective-C guard
    /// and a Swift guard, to two different policies) are the ones the report names.
    @Test func reportNamesThePoliciesSwitchedAfterStart() throws {
        let directory = temporaryDirectory("guard-states-switched")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crash = try runChild(Built.shield, ["crash", "segv", "--dir", directory, "--guards",
                                                "--set-policy", "container=off", "--set-policy", "decoding=reportOnly"])
        #expect(crash.termination == .signaled(SIGSEGV))
        let report = try #require(loadReports(directory, symbolicate: false).first)
        let named = policies(in: report)
        #expect(named["container"] == .off, "\(named)")
        #expect(named["decoding"] == .reportOnly, "\(named)")
        // Guards left alone keep the policy they started with.
        #expect(named["string"] == .neutralize, "\(named)")
        #expect((report.guards ?? []).contains { $0.name == "container" && $0.state == .active })
    }

    /// Guards started after capture: the report names them active with their policies (the
    /// capture start published the states of guards that were not installed yet).
    @Test func reportNamesGuardsStartedAfterCapture() throws {
        let directory = temporaryDirectory("guard-states-late-start")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crash = try runChild(Built.shield, ["crash", "segv", "--dir", directory, "--guards-after-capture"])
        #expect(crash.termination == .signaled(SIGSEGV))
        let report = try #require(loadReports(directory, symbolicate: false).first)
        let container = try #require((report.guards ?? []).first { $0.name == "container" })
        #expect(container.state == .active)
        #expect(container.policy == .neutralize)
    }
}
