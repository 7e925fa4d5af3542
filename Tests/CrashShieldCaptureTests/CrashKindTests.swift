import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// One test per crash kind, each in a child process (`shield crash <kind> --dir D`):
/// the child dies with the kind's signal (GNUstep ends an uncaught exception with exit(1)), and
/// D then holds exactly one complete report with that signal, the expected classification, and
/// a symbolicated crashed-thread stack that names the function that crashed.
@Suite struct CrashKindTests {
    struct Kind: Sendable, CustomTestStringConvertible {
        let name: String
        let termination: Termination
        let signal: Int32
        let classification: CrashReport.Classification
        let function: String
        var mainThread = true
        var testDescription: String { name }
    }

    static let kinds: [Kind] = [
        Kind(name: "segv", termination: .signaled(SIGSEGV), signal: SIGSEGV, classification: .badAccess, function: "csc_crash_segv"),
        Kind(name: "bus", termination: .signaled(SIGBUS), signal: SIGBUS, classification: .badAccess, function: "csc_crash_bus"),
        Kind(name: "ill", termination: .signaled(SIGILL), signal: SIGILL, classification: .trap, function: "csc_crash_ill"),
        Kind(name: "fpe", termination: .signaled(SIGFPE), signal: SIGFPE, classification: .arithmetic, function: "csc_crash_fpe"),
        Kind(name: "abort", termination: .signaled(SIGABRT), signal: SIGABRT, classification: .abort, function: "csc_crash_abort"),
        Kind(name: "trap", termination: .signaled(SIGTRAP), signal: SIGTRAP, classification: .trap, function: "csc_crash_trap"),
        Kind(name: "objc-exception", termination: .signaled(SIGABRT), signal: 0, classification: .objcException,
             function: "cs_capture_raise_uncaught_exception"),
        Kind(name: "swift-index", termination: .signaled(swiftTrapSignal), signal: swiftTrapSignal, classification: .swiftTrap,
             function: "CrashKinds.swiftIndex"),
        Kind(name: "swift-unwrap", termination: .signaled(swiftTrapSignal), signal: swiftTrapSignal, classification: .swiftTrap,
             function: "CrashKinds.swiftUnwrap"),
        Kind(name: "stack-overflow", termination: .signaled(SIGSEGV), signal: SIGSEGV, classification: .stackOverflow,
             function: "csc_recurse"),
        Kind(name: "thread-segv", termination: .signaled(SIGSEGV), signal: SIGSEGV, classification: .badAccess,
             function: "csc_crash_segv", mainThread: false),
        Kind(name: "two-threads", termination: .signaled(SIGSEGV), signal: SIGSEGV, classification: .badAccess,
             function: "csc_crash_segv", mainThread: false),
        // A stack overflow on a background thread that has its own alternate stack.
        Kind(name: "thread-stack-overflow", termination: .signaled(SIGSEGV), signal: SIGSEGV, classification: .stackOverflow,
             function: "csc_recurse", mainThread: false),
    ]

    @Test(arguments: kinds)
    func crashKindLeavesOneSymbolicatedReport(_ kind: Kind) throws {
        let directory = temporaryDirectory(kind.name)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", kind.name, "--dir", directory])
        #expect(result.termination == kind.termination)

        let reports = loadReports(directory)
        try #require(reports.count == 1, "expected exactly one report, found \(reports.count)")
        let report = reports[0]
        #expect(report.isComplete)
        #expect(report.schema == "crashshield.crash-report")
        #expect(report.version == 1)
        #expect(report.crash?.signal == kind.signal)
        #expect(report.classification == kind.classification)
        #expect(report.crash?.mainThread == kind.mainThread)
        let functions = (report.crashedThread?.frames ?? []).compactMap(\.function)
        #expect(functions.contains { $0.contains(kind.function) }, "frames: \(functions.prefix(8))")
        #expect((report.images ?? []).contains { $0.buildId?.isEmpty == false })
        // `shield crash` starts capture through the capture steps of CrashShieldSDK.start, which give the handler
        // the guards' code: every report says which guards are among its frames (none here).
        #expect(report.crashedThread?.guardFrames == [], "guard_frames: \(String(describing: report.crashedThread?.guardFrames))")
        if kind.name == "objc-exception" {
            #expect(report.exception?.name == "CrashShieldTestException")
            #expect(report.kind == .objcException)
            // After the report the process ends with SIGABRT (termination above;
            // GNUstep alone exits with status 1), and the runtime's line still reaches stderr.
            let withStandardError = try Child(Built.shield, ["crash", kind.name, "--dir", directory], captureStandardError: true).wait(timeout: 30)
            #expect(withStandardError.termination == .signaled(SIGABRT))
            #expect(withStandardError.output.contains("Uncaught exception CrashShieldTestException, reason: raised on purpose"),
                    "\(withStandardError.output)")
        } else {
            #expect(report.registers?["rip"] != nil || report.registers?["pc"] != nil)
            // The handler read the bytes at the faulting PC (fault-free read).
            #expect(report.crash?.instructionBytes?.count == 8)
        }
        // The Swift runtime's own message of the failure (left for crash
        // reporters just before the trap) is in the report, and becomes the event's value.
        let runtimeMessages = ["swift-index": "Fatal error: Index out of range",
                               "swift-unwrap": "Fatal error: Unexpectedly found nil while unwrapping an Optional value"]
        if let expected = runtimeMessages[kind.name] {
            #expect(report.crash?.runtimeMessage?.contains(expected) == true, "\(String(describing: report.crash?.runtimeMessage))")
            let event = CrashEventConverter(release: "app@1", dist: nil, environment: "test").event(from: report)
            #expect(event.exception?.values.first?.value?.contains(expected) == true)
            #expect(event.exception?.values.first?.type == "Swift runtime trap")
        } else {
            #expect(report.crash?.runtimeMessage == nil, "no Swift failure: no runtime message")
        }
        #if arch(x86_64)
        let traps: [String: CrashReport.Crash.TrapInstruction] = ["ill": .ud2, "trap": .int3, "swift-index": .ud2, "swift-unwrap": .ud2]
        if let expected = traps[kind.name] { #expect(report.crash?.trapInstruction == expected) }
        #endif
    }

    /// Two threads fault at once: one report, and it counts the other thread, so the loser was
    /// in the handler while the report was written and wrote nothing. (`two-threads` makes the
    /// report wait, up to 0.5 s, for the second crash: on a loaded machine the second thread can
    /// otherwise fault only after the report is done.)
    @Test func twoThreadsCrashingTogetherLeaveOneReportThatCountsTheOther() throws {
        let directory = temporaryDirectory("two-threads-count")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "two-threads", "--dir", directory])
        #expect(result.termination == .signaled(SIGSEGV))
        let reports = loadReports(directory)
        try #require(reports.count == 1, "expected exactly one report, found \(reports.count)")
        #expect(reports[0].otherCrashingThreads == 1)
    }

    /// `shield reports --json --dir D` prints exactly one JSON line for the crash, with
    /// the signal and a crashed-thread frame naming the function.
    @Test func reportsCommandPrintsOneJSONLinePerReport() throws {
        let directory = temporaryDirectory("reports-cli")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try runChild(Built.shield, ["crash", "segv", "--dir", directory])
        let listing = try runChild(Built.shield, ["reports", "--json", "--dir", directory])
        #expect(listing.termination == .exited(0))
        let lines = listing.output.split(separator: "\n")
        try #require(lines.count == 1)
        let object = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any]
        let crash = object?["crash"] as? [String: Any]
        #expect(crash?["signal_name"] as? String == "SIGSEGV")
        let frames = (object?["crashed_thread"] as? [String: Any])?["frames"] as? [[String: Any]] ?? []
        #expect(frames.first?["function"] as? String == "csc_crash_segv")
    }
}
