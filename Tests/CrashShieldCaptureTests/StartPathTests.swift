import CrashShieldTestDoubles
import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry
import _CrashShieldCapture

/// The start path never blocks and never trips over what it finds at its paths:
/// every case is a `shield launch-probe` child with a timeout, since the old behaviour was
/// to block in open(2) forever.
@Suite struct StartPathTests {
    struct Probe: Decodable {
        let last_run: String
        let consecutive: Int
        let state_reset: Bool
    }

    /// One launch that must end by itself, well before the timeout.
    func launch(_ directory: String) throws -> Probe {
        let result = try runChild(Built.shield, ["launch-probe", "--dir", directory], timeout: 20)
        #expect(result.termination == .exited(0), "the start blocked or failed: \(result.termination)")
        let line = try #require(result.output.split(separator: "\n").first { $0.hasPrefix("{") })
        return try JSONDecoder().decode(Probe.self, from: Data(line.utf8))
    }

    /// The directory's entries, less the unreported-crash marker that capture keeps open there.
    func entries(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0 != CSC_UNREPORTED_MARKER }.sorted()
    }

    func fileType(_ path: String) -> FileAttributeType? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.type] as? FileAttributeType
    }

    /// A FIFO at the state path: no writer ever comes, so a blocking open(2) would never return.
    @Test func fifoAtTheStatePathDoesNotBlockTheStart() throws {
        let directory = temporaryDirectory("fifo-state")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(mkfifo("\(directory)/launch-state", 0o644) == 0)
        let probe = try launch(directory)
        #expect(probe.state_reset, "something that is not a state file is a reset, not a first launch")
        #expect(fileType("\(directory)/launch-state") == .typeRegular, "the state replaced the FIFO")
        #expect(try launch(directory).last_run == "clean_exit")
    }

    /// A symlink at the state path (to a FIFO, or to a device) is not the SDK's file: not followed.
    @Test func symlinkAtTheStatePathIsNotFollowed() throws {
        for target in ["fifo", "/dev/zero"] {
            let directory = temporaryDirectory("symlink-state")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var destination = target
            if target == "fifo" {
                destination = "\(directory)/elsewhere"
                #expect(mkfifo(destination, 0o644) == 0)
            }
            #expect(symlink(destination, "\(directory)/launch-state") == 0)
            let probe = try launch(directory)
            #expect(probe.state_reset, "\(target)")
            #expect(fileType("\(directory)/launch-state") == .typeRegular, "\(target)")
            #expect(try launch(directory).last_run == "clean_exit", "\(target)")
            if target == "fifo" { #expect(fileType(destination) != .typeRegular && FileManager.default.fileExists(atPath: destination), "the link's target is left alone") }
        }
    }

    /// A directory at the state path: an empty one gives way to the state; a non-empty one is left
    /// alone. Either way no temporary file is left behind and later writes in the same run (the
    /// launch's completion, the clean exit) still land.
    @Test func directoryAtTheStatePathLeavesNoTemporaryFiles() throws {
        let directory = temporaryDirectory("dir-state")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: "\(directory)/launch-state", withIntermediateDirectories: false)
        #expect(try launch(directory).state_reset)
        // The run's record comes at the watchdog's first tick, 20 ms after the start: a probe that
        // exits sooner has none (docs/CAPTURE.md).
        let runFiles: Set<String> = ["launch-state", "run-record"]
        #expect(entries(directory).contains("launch-state"))
        #expect(Set(entries(directory)).isSubset(of: runFiles), "the state and the run's record, no temporary file")
        #expect(fileType("\(directory)/launch-state") == .typeRegular)
        #expect(try launch(directory).last_run == "clean_exit", "the launch's later state writes landed")

        let occupied = temporaryDirectory("dir-state-full")
        defer { try? FileManager.default.removeItem(atPath: occupied) }
        try FileManager.default.createDirectory(atPath: "\(occupied)/launch-state", withIntermediateDirectories: false)
        #expect(FileManager.default.createFile(atPath: "\(occupied)/launch-state/keep", contents: Data("x".utf8)))
        for _ in 0..<2 {
            let probe = try launch(occupied)
            #expect(probe.state_reset)
            #expect(probe.last_run == "first_launch")
        }
        #expect(entries(occupied).contains("launch-state"))
        #expect(Set(entries(occupied)).isSubset(of: runFiles), "no temporary file left")
        #expect(entries("\(occupied)/launch-state") == ["keep"], "the directory's content is untouched")
    }

    /// Entries named like reports that are not regular files (a FIFO, a directory, a symlink to a
    /// FIFO) or are far too large are never opened for a blocking read at start; delivery moves
    /// them aside as unreadable.
    @Test func strangeReportFilesDoNotBlockTheStart() throws {
        let directory = temporaryDirectory("strange-reports")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(mkfifo("\(directory)/report-1-1-0.json", 0o644) == 0)
        try FileManager.default.createDirectory(atPath: "\(directory)/report-2-2-0.json", withIntermediateDirectories: false)
        #expect(mkfifo("\(directory)/elsewhere", 0o644) == 0)
        #expect(symlink("\(directory)/elsewhere", "\(directory)/report-3-3-0.json") == 0)
        let huge = "\(directory)/report-4-4-0.json"
        #expect(FileManager.default.createFile(atPath: huge, contents: Data("{\"id\":\"x\"".utf8)))
        #expect(truncate(huge, 1 << 36) == 0, "a sparse 64 GiB file") // refused by its size, never read

        let probe = try launch(directory)
        #expect(probe.last_run == "first_launch")
        #expect(try launch(directory).last_run == "clean_exit")

        // In this process too (it would block here without a timeout if a FIFO were opened).
        let loaded = CrashReportStore(directory: directory).load(symbolicate: false)
        #expect(loaded.count == 4)
        #expect(loaded.allSatisfy { if case .failure(.unreadable) = $0.result { true } else { false } })
        let delivery = CrashReportStore(directory: directory).deliver(to: [InMemoryCrashReportSink()], symbolicate: false)
        #expect(delivery.unreadable.count == 4)
        #expect(CrashReportStore(directory: directory).reportFiles().isEmpty)
    }
}
