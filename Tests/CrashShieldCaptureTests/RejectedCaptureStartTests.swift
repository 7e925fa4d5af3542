import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// A second capture start is rejected with `alreadyStarted` and
/// changes nothing. Each run ends in a deliberate crash, so each is a child process; the report it
/// leaves shows what capture was left with.
@Suite struct RejectedCaptureStartTests {
    private func run(first: String, second: String, label: String) throws -> (ChildResult, String, String) {
        let directory = temporaryDirectory("rejected-\(label)")
        let other = temporaryDirectory("rejected-\(label)-other")
        try FileManager.default.removeItem(atPath: other)
        let result = try runChild(Built.testProbe, ["rejected-start-probe", "--dir", directory, "--other-dir", other,
                                                 "--first", first, "--second", second])
        return (result, directory, other)
    }

    /// Capture installed through the C entry point: `CrashCapture.start` says `alreadyStarted`
    /// before it touches anything (it created the other directory, scanned it and said
    /// `installFailed`).
    @Test func captureStartAfterTheCEntryPointIsRejectedFirst() throws {
        let (result, directory, other) = try run(first: "capture-c", second: "capture", label: "c")
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: other)
        }
        #expect(result.termination == .signaled(SIGSEGV))
        #expect(result.output.contains("REJECTED alreadyStarted"), "\(result.output)")
        #expect(!FileManager.default.fileExists(atPath: other), "the rejected call created its directory")
        #expect(!result.output.contains("REJECTED-SINK-RECEIVED"))
        #expect(result.output.contains("LAUNCH-PROTECTION no"), "the rejected call began launch protection")
        #expect(loadReports(directory, symbolicate: false).count == 1)
    }

    /// `CrashShieldSDK.start` (guards, capture, launch protection) after `CrashCapture.start`:
    /// rejected before any part starts: no guard is installed, the guards' code is not registered
    /// with the handler (reports of this capture have no guard_frames key, as before the call), no
    /// launch protection begins, no directory is created, no sink is given anything.
    @Test func shieldStartAfterCaptureStartChangesNothing() throws {
        let (result, directory, other) = try run(first: "capture", second: "start-capture", label: "shield")
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: other)
        }
        #expect(result.termination == .signaled(SIGSEGV))
        #expect(result.output.contains("REJECTED alreadyStarted"), "\(result.output)")
        #expect(!FileManager.default.fileExists(atPath: other))
        #expect(result.output.contains("GUARDS-ACTIVE 0"), "the rejected call installed guards: \(result.output)")
        #expect(result.output.contains("LAUNCH-PROTECTION no"))
        #expect(!result.output.contains("REJECTED-SINK-RECEIVED"))
        let report = try #require(loadReports(directory, symbolicate: false).first)
        #expect(report.process?.name == "first-start")
        #expect(report.crashedThread?.guardFrames == nil, "the rejected call registered the guards' code")
        #expect(report.guards?.allSatisfy { $0.state != .active } ?? true, "the report lists active guards")
    }

    /// A second `CrashShieldSDK.start`: rejected; capture keeps the first call's directory and app
    /// name, no launch protection begins, and the rejected call's report sink is given nothing (its
    /// directory holds a report).
    @Test func secondShieldStartChangesNothing() throws {
        let directory = temporaryDirectory("rejected-twice")
        let other = temporaryDirectory("rejected-twice-other")
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: other)
        }
        let seed = try runChild(Built.shield, ["crash", "segv", "--dir", other])
        #expect(seed.termination == .signaled(SIGSEGV))
        let result = try runChild(Built.testProbe, ["rejected-start-probe", "--dir", directory, "--other-dir", other,
                                                 "--first", "start-capture", "--second", "start-capture"])
        #expect(result.termination == .signaled(SIGSEGV))
        #expect(result.output.contains("REJECTED alreadyStarted"), "\(result.output)")
        #expect(!result.output.contains("REJECTED-SINK-RECEIVED"))
        #expect(result.output.contains("LAUNCH-PROTECTION no"))
        #expect(loadReports(other, symbolicate: false).count == 1, "the other directory got a report")
        let report = try #require(loadReports(directory, symbolicate: false).first)
        #expect(report.process?.name == "first-start")
    }

    /// `stop` uninstalls capture and puts back the handler installed before `start`: a crash after
    /// it writes no report and reaches that handler. For both products.
    @Test(arguments: [false, true])
    func stopUninstallsCaptureAndRestoresThePreviousHandler(captureOnly: Bool) throws {
        let directory = temporaryDirectory("stop")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.testProbe, ["stop-probe", "--dir", directory] + (captureOnly ? ["--capture-only"] : []))
        #expect(result.termination == .signaled(SIGSEGV))
        #expect(result.output.contains("ENABLED false INSTALLED false"), "\(result.output)")
        #expect(result.output.contains("PREVIOUS-HANDLER-RAN"), "\(result.output)")
        #expect(loadReports(directory, symbolicate: false).isEmpty, "a report was written after stop")
    }

    /// A start after `stop` installs capture again: the crash is captured.
    @Test(arguments: [false, true])
    func startAfterStopCapturesAgain(captureOnly: Bool) throws {
        let directory = temporaryDirectory("restart")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.testProbe, ["stop-probe", "--dir", directory, "--restart"]
                                  + (captureOnly ? ["--capture-only"] : []))
        #expect(result.termination == .signaled(SIGSEGV))
        #expect(result.output.contains("RESTARTED"), "\(result.output)")
        #expect(loadReports(directory, symbolicate: false).count == 1)
    }
}
