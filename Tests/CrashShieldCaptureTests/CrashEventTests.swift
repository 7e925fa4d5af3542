import Foundation
import Testing

@testable import CrashShieldCapture

/// Issue 13 item 4: users get `CrashEvent`, whose essentials are not optional: taken from the
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
