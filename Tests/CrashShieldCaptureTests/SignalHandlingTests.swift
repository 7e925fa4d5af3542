import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// The handler among processes and other signal users — fork, handlers
/// installed before capture (their flags, faults they resolve, slow ones), an app's SIGALRM, and
/// threads crashing with different signals. Every crash runs in a child process with a timeout.
@Suite struct SignalHandlingTests {
    /// Reports in `directory` with the path each was read from.
    static func reportsWithPaths(_ directory: String) -> [(path: String, report: CrashReport)] {
        CrashCapture.pendingReports(in: directory, symbolicate: false).compactMap { item in
            (try? item.result.get()).map { (item.path, $0) }
        }
    }

    /// "CHILD pid=<p> <ending>" printed by `shield crash fork-child-segv`.
    static func forkedChild(in output: String) -> (pid: Int32, ending: String)? {
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("CHILD pid=") }) else { return nil }
        let fields = line.split(separator: " ")
        guard fields.count == 3, let pid = Int32(fields[1].dropFirst("pid=".count)) else { return nil }
        return (pid, String(fields[2]))
    }

    /// A forked child's crash is the child's: its report has the child's pid (in the file
    /// name and in `process.pid`), names the forking thread as the main thread, and the child dies
    /// by the signal. The parent's own later crash still gets its report (its file name is not
    /// taken by the child's).
    @Test func forkedChildCrashIsReportedAsItsOwnProcessAndTheParentCrashToo() throws {
        let directory = temporaryDirectory("fork")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let child = try Child(Built.shield, ["crash", "fork-child-segv", "--parent-crashes", "--dir", directory])
        let parentPid = child.process.processIdentifier
        let result = child.wait(timeout: 60)
        #expect(result.termination == .signaled(SIGSEGV))
        let forked = try #require(Self.forkedChild(in: result.output), "output: \(result.output)")
        #expect(forked.ending == "signaled:\(SIGSEGV)")

        let reports = Self.reportsWithPaths(directory)
        try #require(reports.count == 2, "reports: \(reports.map(\.path))")
        let childReport = try #require(reports.first { $0.report.process?.pid == forked.pid })
        #expect((childReport.path as NSString).lastPathComponent.hasPrefix("report-\(forked.pid)-"))
        #expect(childReport.report.crash?.signal == SIGSEGV)
        #expect(childReport.report.crash?.mainThread == true)
        #expect(childReport.report.isComplete)
        #expect(childReport.report.launchId == nil, "the child is not the launch")
        let parentReport = try #require(reports.first { $0.report.process?.pid == parentPid })
        #expect((parentReport.path as NSString).lastPathComponent.hasPrefix("report-\(parentPid)-"))
        #expect(parentReport.report.crash?.signal == SIGSEGV)
        #expect(parentReport.report.isComplete)
    }

    /// With `recover_background_threads`, a forked child's crash on the thread that forked
    /// (here a background thread of the parent: the child's main thread) is not parked as a
    /// background thread: the child dies by the signal instead of hanging (the parent gives it 20 s).
    @Test func forkedChildOfARecoveringProcessDiesInsteadOfBeingParked() throws {
        let directory = temporaryDirectory("fork-recover")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "fork-child-segv", "--recover", "--from-thread", "--dir", directory],
                                  timeout: 60)
        #expect(result.termination == .exited(0))
        let forked = try #require(Self.forkedChild(in: result.output), "output: \(result.output)")
        #expect(forked.ending == "signaled:\(SIGSEGV)")
        let reports = Self.reportsWithPaths(directory)
        try #require(reports.count == 1)
        #expect(reports[0].report.process?.pid == forked.pid)
        #expect(reports[0].report.crash?.recovered == false)
        #expect(reports[0].report.crash?.mainThread == true)
    }

    /// A report file name that is already taken never loses the report: the next name is used.
    @Test func takenReportNameMovesToTheNextName() throws {
        let directory = temporaryDirectory("name-taken")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "segv", "--occupy-report-name", "--dir", directory])
        #expect(result.termination == .signaled(SIGSEGV))
        #expect(CrashReportStore(directory: directory).reportFiles().count == 2, "the empty file and the report")
        let reports = loadReports(directory, symbolicate: false)
        try #require(reports.count == 1)
        #expect(reports[0].crash?.signal == SIGSEGV)
        #expect(reports[0].isComplete)
    }

    /// A previous handler installed with SA_RESETHAND runs once (the one-shot reset is
    /// honoured, so the re-executed fault meets the default action), with its sa_mask and its own
    /// signal blocked as the kernel would block them.
    @Test func previousResetHandHandlerRunsOnceWithItsMask() throws {
        let directory = temporaryDirectory("resethand")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "segv", "--resethand-previous", "--dir", directory])
        #expect(result.termination == .signaled(SIGSEGV))
        let calls = result.output.split(separator: "\n").filter { $0.hasPrefix("RESETHAND-HANDLER-RAN") }
        #expect(calls == ["RESETHAND-HANDLER-RAN mask=1"])
        #expect(loadReports(directory, symbolicate: false).count == 1)
    }

    /// A fault that the previous handler resolves (mprotect and return, like a guard page
    /// or a GC write barrier) is not a crash: no report is kept, the process goes on, capture stays
    /// armed, and the real crash after it is reported and ends the process.
    @Test func faultResolvedByThePreviousHandlerIsNotACrash() throws {
        let directory = temporaryDirectory("resolved")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "resolved-fault", "--dir", directory])
        #expect(result.termination == .signaled(SIGSEGV))
        #expect(result.output.contains("RESOLVED faults=1 installed=true written=false reports=0"), "output: \(result.output)")
        let reports = loadReports(directory)
        try #require(reports.count == 1)
        #expect(reports[0].crash?.signal == SIGSEGV)
        #expect(reports[0].crash?.faultAddress == "0x0")
        let functions = (reports[0].crashedThread?.frames ?? []).compactMap(\.function)
        #expect(functions.first?.contains("csc_crash_segv") == true, "frames: \(functions.prefix(6))")
    }

    /// An app that blocks SIGALRM and takes it with sigwait has a tick pending at the
    /// crash. The watchdog must not unblock it: the report is written and the process dies by the
    /// crash's signal. (The stuck-handler watchdog test in HandlerBehaviourTests still passes.)
    @Test func pendingBlockedSIGALRMDoesNotEndTheHandler() throws {
        let directory = temporaryDirectory("pending-alarm")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "segv-pending-alarm", "--dir", directory])
        #expect(!result.output.contains("NO-PENDING-ALARM"))
        #expect(result.termination == .signaled(SIGSEGV))
        let reports = loadReports(directory, symbolicate: false)
        try #require(reports.count == 1)
        #expect(reports[0].crash?.signal == SIGSEGV)
        #expect(reports[0].isComplete)
    }

    /// Three threads crash at the same moment with SIGSEGV, SIGABRT and SIGFPE. In every
    /// run the process ends with the signal its one report names. Half the runs have previous
    /// handlers that take 100 ms when they run first (a backtracer's work): the threads that lost
    /// the race must keep waiting while the owner passes its signal on.
    @Test func threeThreadsWithDifferentSignalsEndWithTheReportedSignal() throws {
        var mismatches: [String] = []
        for run in 0..<32 {
            let directory = temporaryDirectory("three-signals-\(run)")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var arguments = ["crash", "three-signals", "--dir", directory]
            if run % 2 == 1 { arguments.append("--slow-previous-handlers") }
            let result = try runChild(Built.shield, arguments, timeout: 30)
            let reports = loadReports(directory, symbolicate: false)
            guard reports.count == 1, let signal = reports[0].crash?.signal else {
                mismatches.append("run \(run): \(reports.count) reports, \(result.termination)")
                continue
            }
            if result.termination != .signaled(signal) {
                mismatches.append("run \(run): report \(signal), process \(result.termination)")
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
    }
}

/// The same class as the SA_RESETHAND and resolved-fault cases above, for signals that do not
/// re-fire: a signal that was sent (raise, kill) and that the app ignores, or that a previous
/// handler handles and returns from, does not end the process and leaves no report — as
/// without capture.
@Suite struct SentSignalTests {
    @Test func sentSignalTheAppIgnoresIsIgnored() throws {
        let directory = temporaryDirectory("raise-ignored")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "raise-trap", "--ignore-sigtrap", "--dir", directory])
        #expect(result.termination == .exited(0))
        #expect(result.output.contains("SURVIVED installed=true written=false"))
        #expect(CrashReportStore(directory: directory).reportFiles().isEmpty)
    }

    @Test func sentSignalAPreviousHandlerHandlesIsNotACrash() throws {
        let directory = temporaryDirectory("raise-handled")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "raise-trap", "--previous-trap-handler", "--dir", directory])
        #expect(result.termination == .exited(0))
        #expect(result.output.contains("TRAP-HANDLER-RAN"))
        #expect(result.output.contains("SURVIVED installed=true written=false"))
        #expect(CrashReportStore(directory: directory).reportFiles().isEmpty)
    }
}

/// A handler installed before capture that jumps back out of a signal with
/// siglongjmp (a "can I read this address?" probe, a harness catching abort()) has handled it, and
/// never returns to ours. Nothing may be left behind: no report on disk, no claim held, our handler
/// armed, so the real crash after it — on the same thread or another — is reported and ends the
/// process with its signal.
@Suite struct JumpingPreviousHandlerTests {
    struct Case: CustomStringConvertible, Sendable {
        var jumpFrom: String
        var then: String
        var signal: Int32
        var description: String { "\(jumpFrom) then \(then)" }
    }

    static let cases = [
        Case(jumpFrom: "segv", then: "segv", signal: SIGSEGV),
        Case(jumpFrom: "segv", then: "abort", signal: SIGABRT),
        Case(jumpFrom: "segv", then: "thread-abort", signal: SIGABRT),
        // The same class for a signal that does not re-fire: abort() caught by the app.
        Case(jumpFrom: "abort", then: "abort", signal: SIGABRT),
        Case(jumpFrom: "abort", then: "segv", signal: SIGSEGV),
    ]

    @Test(arguments: cases)
    func signalTheAppJumpsOutOfIsNotACrashAndTheNextCrashIsReported(_ test: Case) throws {
        let directory = temporaryDirectory("jumped-\(test.jumpFrom)-\(test.then)")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let started = Date()
        let result = try runChild(Built.shield, ["crash", "jumped-signal", "--jump-from", test.jumpFrom, "--then", test.then, "--dir", directory],
                                  timeout: 20)
        let seconds = Date().timeIntervalSince(started)
        #expect(result.output.contains("JUMPED true installed=true written=false reports=0"), "output: \(result.output)")
        #expect(result.termination == .signaled(test.signal), "after \(seconds) s")
        #expect(seconds < 10, "the crash after the jump must not wait for the claim: \(seconds) s")
        let reports = loadReports(directory, symbolicate: false)
        try #require(reports.count == 1, "\(reports.count) reports")
        #expect(reports[0].crash?.signal == test.signal)
        #expect(reports[0].isComplete)
    }
}
