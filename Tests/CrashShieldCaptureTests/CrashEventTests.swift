import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// Users get `CrashEvent`, whose essentials are not optional: taken from the
/// report when it has them, from the documented fallbacks when the file was cut short.
@Suite struct CrashEventTests {
    @Test func completeReportGivesItsOwnValues() throws {
        let text = """
            {"schema":"crashshield.crash-report","version":1,"id":"report-7-1-0","kind":"signal",\
            "timestamp_ns":1700000000500000000,"launch_id":"a","launch_phase":"launching",\
            "crash":{"signal":11,"signal_name":"SIGSEGV","fault_address":"0x0"},\
            "crashed_thread":{"frames":[{"address":"0x10","function":"main"},{"address":"0x20"}]},\
            "process":{"pid":42,"executable":"/usr/bin/app","name":"App","app_version":"2.1"},\
            "os":{"sysname":"Linux","release":"6.1","version":"#1","machine":"x86_64"},"complete":true}
            """
        let event = CrashEvent(try CrashReport.decode(Array(text.utf8)))
        #expect(event.id == "report-7-1-0")
        #expect(event.timestamp == Date(timeIntervalSince1970: 1_700_000_000.5))
        #expect(event.kind == .signal)
        #expect(event.classification == .badAccess)
        #expect(event.signal == CrashEvent.Signal(number: 11, name: "SIGSEGV"))
        #expect(event.exception == nil)
        #expect(event.crashedThreadFrames.map(\.address) == ["0x10", "0x20"])
        #expect(event.app == CrashEvent.App(name: "App", version: "2.1", executable: "/usr/bin/app", processID: 42))
        #expect(event.os == CrashEvent.OperatingSystem(name: "Linux", release: "6.1", version: "#1", machine: "x86_64"))
        #expect(event.launchPhase == .launching)
        #expect(event.isComplete)
        #expect(event.raw.crash?.faultAddress == "0x0")
    }

    /// A report cut short right after its id: every essential falls back as documented; the
    /// timestamp is the file's modification time.
    @Test func truncatedReportFallsBack() throws {
        let directory = temporaryDirectory("event")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/report-1-2-0.json"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(#"{"schema":"crashshield.crash-report","id":"report-1-2-0""#.utf8)))
        let modified = Date(timeIntervalSince1970: 1_600_000_000)
        try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: path)
        var report = try CrashReport.decode(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        report.file = path
        let event = CrashEvent(report)
        #expect(event.id == "report-1-2-0")
        #expect(event.timestamp == modified)
        #expect(event.kind == .signal)
        #expect(event.signal == CrashEvent.Signal(number: 0, name: ""))
        #expect(event.crashedThreadFrames.isEmpty)
        #expect(event.app == CrashEvent.App(name: "", version: nil, executable: "", processID: 0))
        #expect(event.launchPhase == .unknown)
        #expect(!event.isComplete)

        report.file = nil
        #expect(CrashEvent(report).timestamp == Date(timeIntervalSince1970: 0))
    }

    /// An uncaught exception: signal 0 and "", the exception's name and reason; a report that
    /// names the exception but lost its kind is still an exception.
    @Test func exceptionReport() throws {
        let text = #"{"id":"r","exception":{"name":"NSRangeException","reason":"index 3"},"crash":{"signal":0},"process":{"executable":"/opt/tool"}}"#
        let event = CrashEvent(try CrashReport.decode(Array(text.utf8)))
        #expect(event.kind == .objcException)
        #expect(event.signal == CrashEvent.Signal(number: 0, name: ""))
        #expect(event.exception == CrashEvent.Exception(name: "NSRangeException", reason: "index 3", runtime: "objc"))
        #expect(event.app.name == "tool")
        // A C++ exception's report cut short before its kind: still a signal (SIGABRT), and a C++ exception.
        let cxx = CrashEvent(try CrashReport.decode(Array(#"{"id":"c","crash":{"signal":6},"exception":{"runtime":"c++","name":"std::bad_alloc","reason":"std::bad_alloc"}"#.utf8)))
        #expect(cxx.kind == .signal)
        #expect(cxx.classification == .cppException)
        #expect(cxx.exception == CrashEvent.Exception(name: "std::bad_alloc", reason: "std::bad_alloc", runtime: "c++"))
        let numberOnly = CrashEvent(try CrashReport.decode(Array(#"{"id":"s","crash":{"signal":6}}"#.utf8)))
        #expect(numberOnly.signal == CrashEvent.Signal(number: 6, name: "signal 6"))
    }
}

/// CrashShield's frames (marked "sdk" by the crash handler from its code
/// sections, not from names) are not in-app, so two crashes at one app call site reached through
/// different SDK code have the same in-app frames (what Sentry and the collector group by), and
/// two app call sites stay apart.
@Suite struct SDKFramesInEventsTests {
    static func report(_ frames: [(address: String, sdk: Bool)]) throws -> CrashReport {
        let list = frames.map { #"{"address":"\#($0.address)","image":"/opt/app/App","offset":"\#($0.address)"\#($0.sdk ? #","sdk":true"# : "")}"# }
        let text = #"{"id":"r","kind":"objc_exception","exception":{"name":"NSRangeException","reason":"r"},"crash":{"signal":0},"#
            + #""process":{"executable":"/opt/app/App"},"crashed_thread":{"first_frame_is_pc":false,"frames":["#
            + list.joined(separator: ",") + "]}}"
        return try CrashReport.decode(Array(text.utf8))
    }

    static func inAppAddresses(_ report: CrashReport) -> [String] {
        let event = CrashEventConverter(release: "app@1", dist: nil, environment: "test").event(from: report)
        return (event.exception?.values.first?.stacktrace?.frames ?? []).filter { $0.inApp == true }.compactMap(\.instructionAddr)
    }

    @Test func sdkFramesAreNotInAppAndDoNotSplitAnIssue() throws {
        let throughOneHook = try Self.report([("0x1000", true), ("0x2000", false), ("0x3000", false)])
        let throughTwoHooks = try Self.report([("0x1100", true), ("0x1200", true), ("0x2000", false), ("0x3000", false)])
        let otherCallSite = try Self.report([("0x1000", true), ("0x2400", false), ("0x3000", false)])
        #expect(Self.inAppAddresses(throughOneHook) == ["0x3000", "0x2000"])
        #expect(Self.inAppAddresses(throughOneHook) == Self.inAppAddresses(throughTwoHooks))
        #expect(Self.inAppAddresses(throughOneHook) != Self.inAppAddresses(otherCallSite))
        #expect(throughTwoHooks.crashedThread?.frames?.prefix(2).allSatisfy { $0.sdk == true } == true)
    }
}
