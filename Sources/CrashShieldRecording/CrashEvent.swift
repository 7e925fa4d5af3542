import CrashShieldBase
import Foundation

/// A fatal crash of an earlier run, as the SDK hands it over: to `CrashReportSink`s, in
/// `LastRun.report`, `RepairContext.lastReport` and `CrashCapture.reportsFoundAtStart`.
///
/// Its essentials are never optional. A report file can be cut short (a second failure while the
/// handler wrote it, power loss), so each essential has a documented fallback for a report that
/// ended before it; `isComplete` tells a full report from such a one. The report file keeps every
/// field the handler wrote (registers, images, recent incidents, guard states); `shield reports`
/// prints it.
public struct CrashEvent: Sendable, Hashable, Identifiable {
    /// Unique per report (the report file's name without ".json"); sinks use it to tell a report
    /// offered twice.
    public let id: String
    /// When the process crashed (the crash handler's wall clock). For a report cut short before
    /// it: the report file's modification time; the Unix epoch when that is unknown too.
    public let timestamp: Date
    /// What ended the process: `.signal` or `.objcException`. For a report cut short before it:
    /// `.objcException` when the report names an exception, `.signal` otherwise.
    public let kind: Kind
    /// What kind of failure this was (Swift runtime trap, bad memory access, abort...);
    /// `.unknown` when the report cannot tell.
    public let classification: Classification
    /// The fatal signal. For an uncaught Objective-C exception: number 0 and name "".
    public let signal: Signal
    /// The uncaught exception that ended the process: an Objective-C exception (kind
    /// `.objcException`), or a C++ exception whose abort the report records (kind `.signal`,
    /// SIGABRT); nil for any other signal.
    public let exception: Exception?
    /// The crashed thread's frames, innermost first, symbolicated when delivery symbolicates
    /// (the default); empty when the report was cut short before them.
    public let crashedThreadFrames: [Frame]
    /// The app that crashed.
    public let app: App
    /// The operating system it ran on.
    public let os: OperatingSystem
    /// Where the app's launch was at the crash; `.unknown` when the report does not say.
    public let launchPhase: LaunchPhase
    /// True only for a report the handler wrote to the end.
    public let isComplete: Bool
    /// The report as read from disk (every field optional, as the file may be cut short).
    package let raw: CrashReport
    /// The app's scope when it crashed (user, tags, contexts, last breadcrumbs); nil when the
    /// report has none.
    public var scope: CrashScope.Snapshot? { raw.scope }

    /// A fatal signal: its number and name ("SIGSEGV").
    public struct Signal: Sendable, Hashable {
        /// The signal number; 0 for an uncaught exception.
        public let number: Int
        /// "SIGSEGV", "SIGABRT"...; "" for an uncaught exception; "signal <n>" when the report
        /// has the number without the name.
        public let name: String
    }

    /// An uncaught exception.
    public struct Exception: Sendable, Hashable {
        /// The exception's name ("NSRangeException"), or a C++ exception's demangled type
        /// ("std::out_of_range"); "" when the report was cut short before it.
        public let name: String
        /// The exception's reason (C++: `what()`); "" when it had none or the report was cut
        /// short before it.
        public let reason: String
        /// "objc" or "c++".
        public let runtime: String
    }

    /// The crashed process.
    public struct App: Sendable, Hashable {
        /// `CaptureOptions.appName`, else the executable's file name; "" when the report has neither.
        public let name: String
        /// `CaptureOptions.appVersion`; nil when the app gave none.
        public let version: String?
        /// The executable's path; "" when the report was cut short before it.
        public let executable: String
        /// The process id; 0 when the report was cut short before it.
        public let processID: Int
    }

    /// The operating system (uname); each field "" when the report was cut short before it.
    public struct OperatingSystem: Sendable, Hashable {
        /// "Linux", "Darwin"...
        public let name: String
        /// The kernel release ("6.1.0-13-amd64", "23.1.0").
        public let release: String
        /// The kernel version string.
        public let version: String
        /// "x86_64", "arm64"...
        public let machine: String
    }

    /// The event of `raw`, with the fallbacks above for what it lacks.
    package init(_ raw: CrashReport) {
        self.raw = raw
        id = raw.id
        if let nanoseconds = raw.timestampNs {
            timestamp = Date(timeIntervalSince1970: TimeInterval(nanoseconds) / 1_000_000_000)
        } else if let file = raw.file,
                  let modified = (try? FileManager.default.attributesOfItem(atPath: file))?[.modificationDate] as? Date {
            timestamp = modified
        } else {
            timestamp = Date(timeIntervalSince1970: 0)
        }
        kind = raw.kind ?? (raw.exception != nil && raw.exception?.runtime == nil ? .objcException : .signal)
        classification = raw.classification ?? raw.classify()
        let number = raw.crash?.signal.map { Int($0) } ?? 0
        signal = Signal(number: number, name: raw.crash?.signalName ?? (number == 0 ? "" : "signal \(number)"))
        exception = raw.exception.map { Exception(name: $0.name ?? "", reason: $0.reason ?? "", runtime: $0.runtime ?? "objc") }
            ?? (kind == .objcException ? Exception(name: "", reason: "", runtime: "objc") : nil)
        crashedThreadFrames = raw.crashedThread?.frames ?? []
        let executable = raw.process?.executable ?? ""
        let executableName = (executable as NSString).lastPathComponent
        app = App(name: raw.process?.name ?? executableName, version: raw.process?.appVersion, executable: executable,
                  processID: raw.process?.pid.map { Int($0) } ?? 0)
        os = OperatingSystem(name: raw.os?.sysname ?? "", release: raw.os?.release ?? "", version: raw.os?.version ?? "",
                             machine: raw.os?.machine ?? "")
        launchPhase = raw.launchPhase ?? .unknown
        isComplete = raw.isComplete
    }
}
