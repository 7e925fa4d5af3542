import CrashShieldBase
import Foundation
import Logging
package import _CrashShieldCapture
package import _CrashShieldLaunch

/// Receives crash reports from earlier runs at the next start. Returning normally means the sink
/// accepted the report; throwing means it did not (the report stays on disk and is offered again
/// at the next start). A report file is deleted only after every sink accepted it, so sinks must
/// tolerate seeing a report twice (use `CrashEvent.id`).
public protocol CrashReportSink: AnyObject, Sendable {
    /// Takes one crash of an earlier run; throws to leave it on disk for the next start.
    func receive(_ report: CrashEvent) throws
}

/// Calls a closure for every report; the closure throws to reject.
public final class ClosureCrashReportSink: CrashReportSink {
    private let body: @Sendable (CrashEvent) throws -> Void
    /// A sink that calls `body` with every report.
    public init(_ body: @escaping @Sendable (CrashEvent) throws -> Void) { self.body = body }
    public func receive(_ report: CrashEvent) throws { try body(report) }
}

/// Logs one line per report through swift-log (level `.critical` by default).
public final class LoggingCrashReportSink: CrashReportSink {
    private let logger: Logger
    private let level: Logger.Level

    /// - Parameters:
    ///   - logger: where to log. Default: a logger labelled "CrashShield.crash".
    ///   - level: the level for every report. Default: `.critical`.
    public init(logger: Logger = Logger(label: "CrashShield.crash"), level: Logger.Level = .critical) {
        self.logger = logger
        self.level = level
    }

    public func receive(_ report: CrashEvent) throws {
        let top = report.crashedThreadFrames.first { $0.function != nil }?.function ?? "?"
        logger.log(
            level: level, "crash in previous run: \(report.signal.name.isEmpty ? report.kind.rawValue : report.signal.name) in \(top)",
            metadata: [
                "report": "\(report.id)", "classification": "\(report.classification.rawValue)",
                "launch_phase": "\(report.launchPhase.rawValue)", "complete": "\(report.isComplete)",
            ])
    }
}

/// The report files in one directory.
package struct CrashReportStore: Sendable {
    package let directory: String

    package init(directory: String) { self.directory = directory }

    /// Paths of the report files, oldest first (file names sort by pid then time, so sort by
    /// modification date, then path).
    package func reportFiles() -> [String] {
        // opendir/readdir/stat/qsort in C: this runs on every start (budget: about 1 ms), and the
        // first use of Swift's string and sorting generics in a process costs ~0.1 ms.
        var count = 0
        let entries = csc_pending_reports_list(directory, false, 0, &count)
        defer { csc_pending_reports_free(entries, count) }
        return (0..<count).map { String(cString: entries![$0].path) }
    }

    package struct Loaded: Sendable {
        package let path: String
        package let result: Result<CrashReport, CrashReportError>
    }

    /// Loads every report file; `symbolicate` runs the symbolicator on each (slow: external tools).
    /// Each file is read once; symbolication runs once for all of them (one tool run per image).
    package func load(symbolicate: Bool) -> [Loaded] {
        var loaded: [Loaded] = reportFiles().map { path in
            guard let bytes = readWholeFile(path) else {
                return Loaded(path: path, result: .failure(.unreadable))
            }
            do {
                var report = try CrashReport.decode(bytes)
                report.file = path
                return Loaded(path: path, result: .success(report))
            } catch let error as CrashReportError {
                return Loaded(path: path, result: .failure(error))
            } catch {
                return Loaded(path: path, result: .failure(.unreadable))
            }
        }
        guard symbolicate else { return loaded }
        let decoded = loaded.indices.compactMap { index in (try? loaded[index].result.get()).map { (index, $0) } }
        var reports = decoded.map(\.1)
        Symbolicator.symbolicate(&reports)
        for ((index, _), report) in zip(decoded, reports) { loaded[index] = Loaded(path: loaded[index].path, result: .success(report)) }
        return loaded
    }

    /// The reports found at start, oldest first, each read into memory and scanned in C for its
    /// launch fields; the full decode waits until someone reads `report` (start budget: the first
    /// JSONDecoder use costs ~2 ms). A directory without report files, the usual case at start,
    /// costs one readdir in C and no Swift/Foundation work.
    ///
    /// First the directory is bounded: the oldest reports beyond the newest `maxPendingReports`,
    /// and every report older than `maxPendingAgeSeconds` except the newest, are deleted unread (the
    /// work of a start stays bounded however many reports an app leaves undelivered); how many
    /// were deleted is added to the directory's `droppedReportsFileName` count and returned.
    /// `now`: seconds since 1970 (tests pass their own).
    func scanIfAny(now: Int = time(nil)) -> (reports: [PendingReport], dropped: Int) {
        guard csc_directory_has_reports(directory) else { return ([], 0) }
        var count = 0
        guard let entries = csc_pending_reports_list(directory, false, 0, &count) else { return ([], 0) }
        defer { csc_pending_reports_free(entries, count) }
        let oldest = now - CrashReportStore.maxPendingAgeSeconds
        let dropped = csc_pending_reports_prune(entries, &count, CrashReportStore.maxPendingReports,
                                                oldest > 0 ? Int64(oldest) * 1_000_000_000 : 0)
        if dropped > 0 { addDropped(dropped) }
        csc_pending_reports_read(entries, count, CrashReportStore.sizeLimit)
        var reports: [PendingReport] = []
        for index in 0..<count {
            guard let bytes = entries[index].bytes else { continue } // unreadable: never a report
            entries[index].bytes = nil // the PendingReport owns it now
            if let report = PendingReport(path: String(cString: entries[index].path), taking: bytes,
                                          length: entries[index].length, fields: entries[index].fields) {
                reports.append(report)
            }
        }
        return (reports, dropped)
    }

    /// At most this many reports stay pending: at start, the oldest beyond it are deleted.
    package static let maxPendingReports = 30
    /// A report older than this (by its file's modification time) is deleted at start, unless it
    /// is the newest one (the previous run's crash is always read): 30 days.
    package static let maxPendingAgeSeconds = 30 * 24 * 3600
    /// The file in the report directory that counts the reports deleted unread at start (decimal).
    package static let droppedReportsFileName = "dropped-reports"

    /// How many reports starts have deleted unread from this directory (cap and age), in total.
    package var droppedReports: Int {
        var length = 0
        guard let buffer = csc_read_file("\(directory)/\(CrashReportStore.droppedReportsFileName)", 64, &length) else { return 0 }
        defer { free(buffer) }
        return Int(String(cString: buffer).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    private func addDropped(_ count: Int) {
        let text = "\(droppedReports + count)\n"
        _ = text.withCString { csc_write_file_atomically("\(directory)/\(CrashReportStore.droppedReportsFileName)", $0, strlen($0)) }
    }

    /// Reports are far below this; a larger file is not one of ours (unreadable).
    static let sizeLimit = 64 << 20

    /// open/read in C: the first FileManager call of a process costs ~0.1 ms of the start budget.
    /// Never blocks: only a regular file is read (a FIFO, directory, device or symlink named like
    /// a report is unreadable). Reports are far below the 64 MiB limit; a larger file is not one
    /// of ours (unreadable, refused by its size without reading it).
    private func readWholeFile(_ path: String) -> [UInt8]? {
        var length = 0
        guard let buffer = csc_read_file(path, CrashReportStore.sizeLimit, &length) else { return nil }
        defer { free(buffer) }
        return buffer.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
    }

    /// Outcome of `deliver`.
    package struct Delivery: Sendable {
        package var delivered: [String] = []
        package var kept: [String] = []
        /// Files that are not reports at all; moved into "<directory>/unreadable" so they are not
        /// offered forever.
        package var unreadable: [String] = []
    }

    /// Hands every report to every sink; deletes a report file only after all sinks accepted it.
    @discardableResult
    package func deliver(to sinks: [any CrashReportSink], symbolicate: Bool = true) -> Delivery {
        var delivery = Delivery()
        guard !sinks.isEmpty else { return delivery }
        for loaded in load(symbolicate: symbolicate) {
            switch loaded.result {
            case .failure:
                let aside = "\(directory)/unreadable"
                try? FileManager.default.createDirectory(atPath: aside, withIntermediateDirectories: true)
                try? FileManager.default.moveItem(atPath: loaded.path, toPath: "\(aside)/\((loaded.path as NSString).lastPathComponent)")
                delivery.unreadable.append(loaded.path)
            case .success(let report):
                var accepted = true
                let event = CrashEvent(report)
                for sink in sinks {
                    do { try sink.receive(event) } catch { accepted = false }
                }
                if accepted {
                    try? FileManager.default.removeItem(atPath: loaded.path)
                    delivery.delivered.append(report.id)
                } else {
                    delivery.kept.append(report.id)
                }
            }
        }
        return delivery
    }
}

/// A report file found at start. Its launch fields (id, phase, recovered) come from a C scan of
/// the bytes (`csc_report_scan_launch_fields`, same rules as `TolerantJSON`); the full decode
/// runs once, on the first read of `report`, from the bytes read at start (a sink may have
/// deleted the file by then).
// @unchecked Sendable: `bytes` and `decoded` are read and written only under `lock`; the rest is immutable
package final class PendingReport: @unchecked Sendable, Equatable {
    let path: String?
    let launchId: String?
    let launchPhase: CrashReport.LaunchPhase?
    /// The crashed thread was parked and the process lived on: not how the run ended.
    let recovered: Bool
    /// crashed_thread.guard_frames as the scan read it (see `CrashCapture.GuardFramesOfReport`);
    /// nil when only the decoded report can tell, and always for a report decoded at once.
    let scannedGuardFrames: [String]?
    private let lock = Locked()
    /// The file's content until the full decode (malloc'd, owned; freed after decoding).
    private var bytes: UnsafeMutableRawBufferPointer?
    private var decoded: CrashReport?

    /// Takes ownership of `buffer` (malloc'd, `length` bytes), scanned into `fields`. nil when
    /// the bytes are not a report (the full decoder would reject them too).
    init?(path: String, taking buffer: UnsafeMutableRawPointer, length: Int, fields: csc_report_launch_fields) {
        let bytes = UnsafeMutableRawBufferPointer(start: buffer, count: length)
        self.path = path
        if fields.needs_full_decode {
            // A field the scan cannot read alike with the decoder: decode now (rare; never for a
            // report this SDK wrote).
            defer { free(buffer) }
            guard var report = try? CrashReport.decode(Array(bytes)) else { return nil }
            report.file = path
            launchId = report.launchId
            launchPhase = report.launchPhase
            recovered = report.crash?.recovered == true
            scannedGuardFrames = nil
            decoded = report
            return
        }
        guard fields.is_report else {
            free(buffer)
            return nil
        }
        var fields = fields
        launchId = fields.has_launch_id ? withUnsafeBytes(of: &fields.launch_id) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) } : nil
        launchPhase = fields.has_launch_phase ? withUnsafeBytes(of: &fields.launch_phase) { CrashReport.LaunchPhase(rawValue: String(cString: $0.bindMemory(to: CChar.self).baseAddress!)) } : nil
        recovered = fields.recovered
        switch fields.guard_frames_status {
        case CSC_GUARD_FRAMES_READ:
            let names = withUnsafeBytes(of: &fields.guard_frames) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            scannedGuardFrames = names.split(separator: ",").map(String.init)
        case CSC_GUARD_FRAMES_ABSENT where !fields.has_crashed_frames:
            scannedGuardFrames = [] // no frames: none inside a guard
        default:
            scannedGuardFrames = nil
        }
        self.bytes = bytes
    }

    deinit { free(bytes?.baseAddress) }

    /// An already decoded report (callers of `LaunchProtection.begin(reports:)`).
    init(decoded report: CrashReport) {
        path = report.file
        launchId = report.launchId
        launchPhase = report.launchPhase
        recovered = report.crash?.recovered == true
        scannedGuardFrames = nil
        decoded = report
    }

    /// The decoded report (not symbolicated); nil when the bytes, though scanned, do not decode
    /// (a wrong type in a field the scan does not read).
    package var report: CrashReport? {
        lock.lock()
        defer { lock.unlock() }
        if let bytes {
            self.bytes = nil
            defer { free(bytes.baseAddress) }
            if var report = try? CrashReport.decode(Array(bytes)) {
                report.file = path
                decoded = report
            }
        }
        return decoded
    }

    /// True once the full decode ran (or the report came decoded).
    var isDecoded: Bool {
        lock.lock()
        defer { lock.unlock() }
        return bytes == nil
    }

    package static func == (lhs: PendingReport, rhs: PendingReport) -> Bool { lhs === rhs || lhs.report == rhs.report }
}
