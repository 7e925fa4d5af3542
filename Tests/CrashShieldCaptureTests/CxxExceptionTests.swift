import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// Uncaught C++ exceptions, each in a child process (`shield crash <kind>`):
/// the process still dies of SIGABRT with the real stack, and the report, the event and
/// `shield reports` also name the exception's type (demangled) and its what() text.
@Suite struct CxxExceptionTests {
    struct Kind: Sendable, CustomTestStringConvertible {
        let name: String
        let type: String
        let reason: String
        /// A function of the throw site that the crashed thread's frames must name.
        let function: String
        var mainThread = true
        /// The innermost in-app frame of the event, when it is not `function`: at a noexcept
        /// boundary clang's `__clang_call_terminate` helper, compiled into the app, calls
        /// std::terminate (the app's code, not CrashShield's; `function` is the frame below it).
        var culprit: String?
        var testDescription: String { name }
    }

    static let kinds: [Kind] = [
        Kind(name: "cxx-exception", type: "std::out_of_range", reason: "cart index 7 beyond 3 items",
             function: "crashshield_test::checkout_total(int)"),
        // An app's type that is no std::exception: its type, no what().
        Kind(name: "cxx-custom-type", type: "crashshield_test::PaymentDeclined", reason: "",
             function: "crashshield_test::charge_card(int)"),
        // Out of a noexcept function: the runtime terminates at its boundary.
        Kind(name: "cxx-noexcept", type: "std::runtime_error", reason: "receipt printer offline",
             function: "crashshield_test::save_receipt(int)", culprit: "__clang_call_terminate"),
        Kind(name: "thread-cxx-exception", type: "std::out_of_range", reason: "cart index 11 beyond 3 items",
             function: "crashshield_test::checkout_total(int)", mainThread: false),
        Kind(name: "cxx-terminate", type: "", reason: "std::terminate called without an active exception",
             function: "csc_crash_cxx_terminate"),
    ]

    @Test(arguments: kinds)
    func uncaughtExceptionIsNamedInReportEventAndListing(_ kind: Kind) throws {
        let directory = temporaryDirectory(kind.name)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try Child(Built.shield, ["crash", kind.name, "--dir", directory], captureStandardError: true).wait(timeout: 30)
        #expect(result.termination == .signaled(SIGABRT))
        // The C++ runtime's own terminate handler still ran after ours (it prints the type).
        if !kind.type.isEmpty { #expect(result.output.contains("terminate called"), "\(result.output)") }

        let reports = loadReports(directory)
        try #require(reports.count == 1, "expected exactly one report, found \(reports.count)")
        let report = reports[0]
        #expect(report.isComplete)
        #expect(report.kind == .signal)
        #expect(report.crash?.signal == SIGABRT)
        #expect(report.crash?.mainThread == kind.mainThread)
        #expect(report.exception?.runtime == "c++")
        #expect(report.exception?.name == kind.type)
        #expect(report.exception?.reason == kind.reason)
        #expect(report.classification == .cppException)
        let functions = (report.crashedThread?.frames ?? []).compactMap(\.function)
        #expect(functions.contains { $0.contains(kind.function) }, "frames: \(functions.prefix(12))")
        // The terminate handler's frame is CrashShield's (its own code section), and the only one.
        let sdkFrames = (report.crashedThread?.frames ?? []).filter { $0.sdk == true }
        #expect(sdkFrames.count == 1 && sdkFrames.first?.function?.contains("terminate_handler") == true,
                "\(sdkFrames.map(\.function))")

        let crashEvent = CrashEvent(report)
        #expect(crashEvent.exception == CrashEvent.Exception(name: kind.type, reason: kind.reason, runtime: "c++"))
        #expect(crashEvent.signal.number == Int(SIGABRT))

        let event = CrashEventConverter(release: "app@1", dist: nil, environment: "test").event(from: report)
        let value = try #require(event.exception?.values.first)
        #expect(value.type == (kind.type.isEmpty ? "std::terminate" : kind.type))
        #expect(value.value == (kind.reason.isEmpty ? "uncaught exception" : kind.reason))
        #expect(value.mechanism?.type == "cpp_exception")
        #expect(value.mechanism?.handled == false)
        #expect(value.mechanism?.meta?.signal?.number == SIGABRT)
        // The throw site, demangled, is among the event's frames too, and it is the culprit: the
        // innermost in-app frame (the terminate handler's frame above it is not in-app).
        #expect(value.stacktrace?.frames.contains { $0.function?.contains(kind.function) == true } == true)
        let inApp = (value.stacktrace?.frames ?? []).filter { $0.inApp == true }.compactMap(\.function)
        #expect(inApp.last?.contains(kind.culprit ?? kind.function) == true, "in-app frames \(inApp.suffix(3))")
        if kind.culprit != nil { #expect(inApp.dropLast().last?.contains(kind.function) == true, "\(inApp.suffix(3))") }

        let listing = try runChild(Built.shield, ["reports", "--dir", directory])
        #expect(listing.output.contains("cpp_exception SIGABRT"), "\(listing.output)")
        #expect(listing.output.contains("c++ exception \(kind.type): \(kind.reason)"), "\(listing.output)")
    }

    /// A terminate handler the app installed before capture still runs, after the note.
    @Test func appsTerminateHandlerStillRuns() throws {
        let directory = temporaryDirectory("cxx-app-terminate")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try Child(Built.shield, ["crash", "cxx-exception", "--app-terminate-handler", "--dir", directory],
                               captureStandardError: true).wait(timeout: 30)
        #expect(result.termination == .signaled(SIGABRT))
        #expect(result.output.contains("app terminate handler ran"), "\(result.output)")
        let reports = loadReports(directory)
        try #require(reports.count == 1)
        #expect(reports[0].exception?.name == "std::out_of_range")
        #expect(reports[0].classification == .cppException)
    }

    /// An exception thrown and caught, then a plain abort(): no exception in the report.
    @Test func caughtExceptionThenAbortIsAPlainAbort() throws {
        let directory = temporaryDirectory("cxx-caught-abort")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, ["crash", "cxx-caught-abort", "--dir", directory])
        #expect(result.termination == .signaled(SIGABRT))
        let reports = loadReports(directory)
        try #require(reports.count == 1)
        #expect(reports[0].exception == nil)
        #expect(reports[0].classification == .abort)
    }
}
