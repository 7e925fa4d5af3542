import CrashShieldTestDoubles
import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// Next start: pending reports go to the sinks and are deleted only after every sink accepted.
@Suite struct DeliveryTests {
    struct Rejected: Error {}

    func directoryWithExample() throws -> String {
        let directory = temporaryDirectory("delivery")
        let example = schemaDirectory + "/examples/signal-segv.json"
        try FileManager.default.copyItem(atPath: example, toPath: "\(directory)/report-1-2-0.json")
        return directory
    }

    @Test func acceptedReportsAreDeleted() throws {
        let directory = try directoryWithExample()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sink = InMemoryCrashReportSink()
        let delivery = CrashReportStore(directory: directory).deliver(to: [sink], symbolicate: false)
        #expect(delivery.delivered.count == 1)
        #expect(sink.reports.count == 1)
        #expect(sink.reports.first?.signal.name == "SIGSEGV")
        #expect(CrashReportStore(directory: directory).reportFiles().isEmpty)
    }

    @Test func rejectedReportsStayForTheNextStart() throws {
        let directory = try directoryWithExample()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let accepting = InMemoryCrashReportSink()
        let rejecting = ClosureCrashReportSink { _ in throw Rejected() }
        let delivery = CrashReportStore(directory: directory).deliver(to: [accepting, rejecting], symbolicate: false)
        #expect(delivery.kept.count == 1)
        #expect(accepting.reports.count == 1)
        #expect(CrashReportStore(directory: directory).reportFiles().count == 1)
        // Next start: both accept now, the file goes.
        let again = CrashReportStore(directory: directory).deliver(to: [accepting], symbolicate: false)
        #expect(again.delivered.count == 1)
        #expect(CrashReportStore(directory: directory).reportFiles().isEmpty)
    }

    @Test func unreadableFilesAreMovedAside() throws {
        let directory = temporaryDirectory("unreadable")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(FileManager.default.createFile(atPath: "\(directory)/report-9-9-0.json", contents: Data("not json".utf8)))
        let delivery = CrashReportStore(directory: directory).deliver(to: [InMemoryCrashReportSink()], symbolicate: false)
        #expect(delivery.unreadable.count == 1)
        #expect(FileManager.default.fileExists(atPath: "\(directory)/unreadable/report-9-9-0.json"))
    }

    /// Symbolication of a real report from this build names the crashing function and a file.
    @Test func symbolicationNamesFunctionAndFile() throws {
        let directory = temporaryDirectory("symbolicate")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try runChild(Built.shield, ["crash", "fpe", "--dir", directory])
        let report = try #require(loadReports(directory).first)
        let top = try #require(report.crashedThread?.frames?.first)
        #expect(top.function == "csc_crash_fpe")
        #expect(top.file?.hasSuffix("csc_crash_kinds.c") == true)
        #expect(top.symbolSource == .llvmSymbolizer || top.symbolSource == .addr2line)
    }
}
