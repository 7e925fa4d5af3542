import CrashShieldBase
import Foundation

/// A fatal crash report as written by the crash handler (Schema/crash-report.schema.json,
/// version 1), plus what the next start adds: symbols and a classification.
///
/// Every field is optional because a report may be cut short (a second failure while writing,
/// power loss); `isComplete` tells a full report from a truncated one. Addresses are hex strings
/// in the file ("0x..."), because JSON numbers lose 64-bit precision.
package struct CrashReport: Codable, Sendable, Hashable {
    package var schema: String?
    package var version: Int?
    /// Unique per report; also the file name without ".json".
    package var id: String
    /// What ended the process: a fatal signal or an uncaught Objective-C exception.
    package var kind: Kind?
    package var timestampNs: UInt64?
    /// Time from process start to the crash.
    package var uptimeNs: UInt64?
    package var launchId: String?
    /// Where the app's launch was at the moment of the crash.
    package var launchPhase: LaunchPhase?
    /// The version of the remote configuration document active in the crashed run; nil when
    /// none was active (or the report predates the field).
    package var remoteConfigVersion: Int64?
    /// True when the handler itself crashed and rewrote the report as a minimal one.
    package var minimal: Bool?
    package var crash: Crash?
    package var handlerCrash: HandlerCrash?
    package var exception: ExceptionInfo?
    package var crashedThread: CrashedThread?
    package var registers: [String: String]?
    /// The most recent guard incidents before the crash, oldest first.
    package var incidents: [RecentIncident]?
    /// The app's scope (`CrashScope`: user, tags, contexts, its own breadcrumbs) as last set
    /// before the crash, shrunk to the report's bound (its `dropped…` counts say what was left
    /// out). Absent when the scope was empty, and in reports of older versions.
    package var scope: CrashScope.Snapshot?
    /// Guard states at the time of the crash (written by the CrashShield module when guards run).
    package var guards: [GuardState]?
    package var process: ProcessInfo?
    package var os: OSInfo?
    package var images: [Image]?
    /// Other threads that crashed while this report was being written (counted when its tail was
    /// written): they waited for this one and ended with the process, without a report of their own.
    package var otherCrashingThreads: Int?
    /// Time the handler spent from entry to the last byte written.
    package var handlerNs: UInt64?
    /// Written last: true only for a report that was written to the end.
    package var complete: Bool?

    /// Added on load (not in the file): what kind of failure this was.
    package var classification: Classification?
    /// Added on load: the file the report came from.
    package var file: String?

    package var isComplete: Bool { complete == true }

    package struct Crash: Codable, Sendable, Hashable {
        /// Signal number; 0 for an uncaught exception.
        package var signal: Int32?
        package var signalName: String?
        package var code: Int32?
        package var codeName: String?
        package var faultAddress: String?
        package var pc: String?
        package var instructionBytes: String?
        /// The trap instruction at `pc`, when the crash was one (absent otherwise).
        package var trapInstruction: TrapInstruction?
        package var senderPid: Int32?
        /// The language runtime's message of the fatal error, when it left one for crash
        /// reporters (Swift: "Fatal error: Index out of range", with file and line).
        package var runtimeMessage: String?
        package var threadId: UInt64?
        package var threadName: String?
        package var mainThread: Bool?
        /// True when the thread was parked and the process kept running (opt-in recovery).
        package var recovered: Bool?
    }

    package struct HandlerCrash: Codable, Sendable, Hashable {
        package var signal: Int32?
        package var signalName: String?
    }

    /// The uncaught exception that ended the process: an Objective-C exception (kind
    /// `objc_exception`), or a C++ exception noted by the terminate handler before the process
    /// aborted (kind `signal`, SIGABRT, `runtime` "c++").
    package struct ExceptionInfo: Codable, Sendable, Hashable {
        /// "c++" for a C++ exception; absent for an Objective-C exception.
        package var runtime: String?
        /// Objective-C: the exception's name ("NSRangeException"). C++: the exception's type,
        /// demangled ("std::out_of_range"); "" when std::terminate ran with no active exception.
        package var name: String?
        /// Objective-C: the reason. C++: `what()` for a `std::exception`, "" for any other type.
        package var reason: String?
        /// The guard whose report-only policy let this exception through (its hook recorded the
        /// misuse on this thread, then called the original, which threw): the app's crash, not a
        /// fault of the guard, so the guard is left out of `CrashedThread.guardFrames`.
        package var reportOnlyGuard: String?
    }

    package struct CrashedThread: Codable, Sendable, Hashable {
        /// How `frames` were gathered.
        package var unwinder: Unwinder?
        /// True when frame 0 is the faulting instruction; the others are return addresses.
        package var firstFrameIsPc: Bool?
        /// Names of the guards whose code is among `frames`, as the crash handler found them (the
        /// guard fail-safe reads this). Absent in reports of older versions and of processes that
        /// did not start capture through `CrashShieldSDK.start`.
        package var guardFrames: [String]?
        package var frames: [Frame]?
    }

    package typealias Frame = CrashEvent.Frame

    package struct RecentIncident: Codable, Sendable, Hashable {
        package var sequence: UInt64?
        package var `guard`: String?
        package var `class`: String?
        package var selector: String?
        package var classMethod: Bool?
        package var reason: String?
        package var count: Int?
        package var monotonicNs: UInt64?
        /// The policy the guard applied: "neutralize", "reportOnly" or "off". Absent in reports
        /// of older versions.
        package var policy: String?
        /// The incident's fingerprint ("0x…"), as its event's. Absent in reports of older versions.
        package var fingerprint: String?
    }

    package struct GuardState: Codable, Sendable, Hashable {
        /// The guard's identifier (`GuardID.rawValue` in the CrashShield module).
        package var name: String?
        package var state: State?
        package var policy: Policy?

        package init(name: String?, state: State?, policy: Policy?) {
            self.name = name
            self.state = state
            self.policy = policy
        }
    }

    package struct ProcessInfo: Codable, Sendable, Hashable {
        package var pid: Int32?
        package var executable: String?
        package var name: String?
        package var appVersion: String?
        /// The last memory sample before the crash (the app-hang watchdog samples every second);
        /// absent when none was taken, and in reports of older versions.
        package var memory: Memory?
    }

    /// Memory figures of the crashed process, as last sampled before the crash.
    package struct Memory: Codable, Sendable, Hashable {
        /// Wall-clock time of the sample, in nanoseconds since 1970.
        package var sampledNs: UInt64?
        package var residentBytes: UInt64?
        package var peakResidentBytes: UInt64?
        /// Apple's `phys_footprint` (what the system's memory limit is measured against); absent elsewhere.
        package var footprintBytes: UInt64?
        /// Memory warnings the system sent during the run (Apple).
        package var memoryWarnings: Int?
    }

    package struct OSInfo: Codable, Sendable, Hashable {
        package var sysname: String?
        package var release: String?
        package var version: String?
        package var machine: String?
    }

    package struct Image: Codable, Sendable, Hashable {
        package var path: String?
        package var base: String?
        package var start: String?
        package var size: String?
        package var buildId: String?
    }

    package typealias Classification = CrashEvent.Classification
}

extension CrashReport {
    /// Decodes a report file's bytes. A report cut short is first closed at its last complete
    /// value (see `TolerantJSON`); a report that still does not decode throws.
    package static func decode(_ bytes: [UInt8]) throws -> CrashReport {
        guard let repaired = TolerantJSON.repair(bytes) else { throw CrashReportError.unreadable }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        do {
            var report = try decoder.decode(CrashReport.self, from: Data(repaired.bytes))
            report.classification = report.classify()
            return report
        } catch {
            throw CrashReportError.invalid(String(describing: error))
        }
    }

    /// Encodes the report (with symbols and classification) in the file's key style, keys sorted;
    /// `pretty` adds line breaks and indentation. Default: compact.
    package func jsonData(pretty: Bool = false) -> Data {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)) ?? Data("{}".utf8)
    }

    /// Classification from what the report holds. Symbols (if present) decide whether a trap is a
    /// Swift trap; call again after symbolication.
    package func classify() -> Classification {
        if kind == .objcException { return .objcException }
        guard let crash else { return .unknown }
        if exception?.runtime == "c++", crash.signal == SIGABRT { return .cppException }
        let frame0 = crashedThread?.frames?.first
        switch crash.signal ?? 0 {
        case SIGILL, SIGTRAP:
            if crash.trapInstruction != nil || crash.signal == SIGTRAP {
                return Self.isSwiftFrame(frame0) ? .swiftTrap : .trap
            }
            return .trap
        case SIGABRT: return .abort
        case SIGSEGV, SIGBUS:
            if let fault = crash.faultAddress.flatMap({ UInt64(hex: $0) }),
               let sp = (registers?["rsp"] ?? registers?["sp"]).flatMap({ UInt64(hex: $0) }),
               fault != 0, (fault > sp ? fault - sp : sp - fault) < 256 * 1024 {
                return .stackOverflow
            }
            return .badAccess
        case SIGFPE: return .arithmetic
        case SIGPIPE: return .brokenPipe
        case SIGSYS: return .badSystemCall
        default: return .unknown
        }
    }

    /// A frame in the Swift runtime, or a function with a Swift mangled name.
    static func isSwiftFrame(_ frame: Frame?) -> Bool {
        guard let frame else { return false }
        if let image = frame.image, (image as NSString).lastPathComponent.hasPrefix("libswiftCore") { return true }
        guard let function = frame.function else { return false }
        return function.hasPrefix("$s") || function.hasPrefix("_$s") || function.hasPrefix("$S")
            || function.hasPrefix("Swift.") || function.contains("Swift._assertionFailure")
            || function.contains("Swift._fatalErrorMessage")
    }
}

// The report's named values. Each is a string in the file and an extensible struct here: a value
// this version does not know (written by a newer one) decodes and encodes unchanged as its
// `rawValue`, and the static constants are the values this version writes, so code compares or
// switches over them (with a `default:` for values added later).

extension CrashReport {
    package typealias Kind = CrashEvent.Kind

    package typealias LaunchPhase = CrashEvent.LaunchPhase
}

extension CrashReport.Crash {
    /// A trap instruction recognised at the crashing `pc`: code that stopped itself on purpose
    /// (a Swift runtime check, `__builtin_trap`, a breakpoint).
    package struct TrapInstruction: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// x86_64 `ud2` (SIGILL): Swift runtime traps and `__builtin_trap`.
        package static let ud2 = TrapInstruction(rawValue: "ud2")
        /// x86_64 `int3` (SIGTRAP): a breakpoint instruction.
        package static let int3 = TrapInstruction(rawValue: "int3")
        /// arm64 `brk` (SIGTRAP): Swift runtime traps, `__builtin_trap` and breakpoints.
        package static let brk = TrapInstruction(rawValue: "brk")
    }
}

extension CrashReport.CrashedThread {
    /// How the crash handler gathered the crashed thread's frames.
    package struct Unwinder: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// The call-frame information (DWARF CFI) of each function: exact, frame pointers or not.
        package static let dwarf = Unwinder(rawValue: "dwarf")
        /// The chain of frame pointers, where DWARF was unavailable or gave up: frames of code
        /// built without frame pointers can be missing.
        package static let framePointer = Unwinder(rawValue: "frame_pointer")
        /// The return addresses an uncaught exception carried; frame 0 is not a faulting
        /// instruction (`firstFrameIsPc` is false).
        package static let exception = Unwinder(rawValue: "exception")
        /// The frames gathered before the handler itself crashed (a minimal report).
        package static let partial = Unwinder(rawValue: "partial")
        /// No frames: the handler had no machine context for the thread. (Not named `none`,
        /// which would read as `Optional.none` in a comparison with an optional.)
        package static let notUnwound = Unwinder(rawValue: "none")
    }
}


extension CrashReport.GuardState {
    /// A guard's installation state (`GuardStatus.State` in the CrashShield module).
    package struct State: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// Hooks installed and the install-time canary passed.
        package static let active = State(rawValue: "active")
        /// The canary did not see what it expected; the guard's hooks were removed again.
        package static let canaryFailed = State(rawValue: "canary_failed")
        /// A class or selector the guard needs does not exist on this runtime.
        package static let installFailed = State(rawValue: "install_failed")
        /// Not started, or not installed on this runtime.
        package static let notInstalled = State(rawValue: "not_installed")
    }

    /// What a guard did with a misuse (`GuardPolicy` in the CrashShield module).
    package struct Policy: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// Record an incident, then make the call harmless.
        package static let neutralize = Policy(rawValue: "neutralize")
        /// Record an incident, then let the original behaviour (usually an exception) happen.
        package static let reportOnly = Policy(rawValue: "reportOnly")
        /// Do nothing: the original behaviour, no incident.
        package static let off = Policy(rawValue: "off")
    }
}

/// Why bytes could not be read as a crash report.
///
/// Check the kind with `code`, which is stable across versions (new codes may be added):
/// `catch let error as CrashReportError where error.code == .invalid`. `message` is for people
/// and may change.
package struct CrashReportError: CodedError {
    /// The kind of error; `rawValue` is a stable string (the Swift name, e.g. "unreadable").
    package struct Code: StableErrorCode {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }

        /// Not even a prefix of a JSON object.
        package static let unreadable = Code(rawValue: "unreadable")
        /// JSON, but not a report (a field of the wrong type).
        package static let invalid = Code(rawValue: "invalid")
    }

    package let code: Code
    /// What went wrong, for people (for `invalid`, the decoder's account of the field); the
    /// wording may change between versions.
    package let message: String

    package init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// Not even a prefix of a JSON object.
    package static let unreadable = CrashReportError(code: .unreadable, message: "not even a prefix of a JSON object")
    /// JSON, but not a report; `detail` says which field is wrong.
    package static func invalid(_ detail: String) -> CrashReportError {
        CrashReportError(code: .invalid, message: detail)
    }
}

extension UInt64 {
    /// Parses "0x1f" (or "1f").
    package init?(hex: String) {
        let digits = hex.hasPrefix("0x") ? hex.dropFirst(2) : Substring(hex)
        self.init(digits, radix: 16)
    }
}

extension CrashReport {
    /// `uptimeNs` as a `Duration`: time from process start to the crash.
    package var uptime: Duration? { uptimeNs.map { .nanoseconds(Int64(clamping: $0)) } }
    /// `handlerNs` as a `Duration`: time the handler spent from entry to the last byte written.
    package var handlerDuration: Duration? { handlerNs.map { .nanoseconds(Int64(clamping: $0)) } }
}
