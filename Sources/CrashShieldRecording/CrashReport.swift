import CrashShieldBase
import Foundation

/// A fatal crash report as written by the crash handler (Schema/crash-report.schema.json,
/// version 1), plus what the next start adds: symbols and a classification.
///
/// Every field is optional because a report may be cut short (a second failure while writing,
/// power loss); `isComplete` tells a full report from a truncated one. Addresses are hex strings
/// in the file ("0x..."), because JSON numbers lose 64-bit precision.
public struct CrashReport: Codable, Sendable, Hashable {
    public var schema: String?
    public var version: Int?
    /// Unique per report; also the file name without ".json".
    public var id: String
    /// What ended the process: a fatal signal or an uncaught Objective-C exception.
    public var kind: Kind?
    public var timestampNs: UInt64?
    /// Time from process start to the crash.
    public var uptimeNs: UInt64?
    public var launchId: String?
    /// Where the app's launch was at the moment of the crash.
    public var launchPhase: LaunchPhase?
    /// The version of the remote configuration document active in the crashed run; nil when
    /// none was active (or the report predates the field).
    public var remoteConfigVersion: Int64?
    /// True when the handler itself crashed and rewrote the report as a minimal one.
    public var minimal: Bool?
    public var crash: Crash?
    public var handlerCrash: HandlerCrash?
    public var exception: ExceptionInfo?
    public var crashedThread: CrashedThread?
    public var registers: [String: String]?
    /// The most recent guard incidents before the crash, oldest first.
    public var incidents: [RecentIncident]?
    /// The app's scope (`CrashScope`: user, tags, contexts, its own breadcrumbs) as last set
    /// before the crash, shrunk to the report's bound (its `dropped…` counts say what was left
    /// out). Absent when the scope was empty, and in reports of older versions.
    public var scope: CrashScope.Snapshot?
    /// Guard states at the time of the crash (written by the CrashShield module when guards run).
    public var guards: [GuardState]?
    public var process: ProcessInfo?
    public var os: OSInfo?
    public var images: [Image]?
    /// Other threads that crashed while this report was being written (counted when its tail was
    /// written): they waited for this one and ended with the process, without a report of their own.
    public var otherCrashingThreads: Int?
    /// Time the handler spent from entry to the last byte written.
    public var handlerNs: UInt64?
    /// Written last: true only for a report that was written to the end.
    public var complete: Bool?

    /// Added on load (not in the file): what kind of failure this was.
    public var classification: Classification?
    /// Added on load: the file the report came from.
    public var file: String?

    public var isComplete: Bool { complete == true }

    public struct Crash: Codable, Sendable, Hashable {
        /// Signal number; 0 for an uncaught exception.
        public var signal: Int32?
        public var signalName: String?
        public var code: Int32?
        public var codeName: String?
        public var faultAddress: String?
        public var pc: String?
        public var instructionBytes: String?
        /// The trap instruction at `pc`, when the crash was one (absent otherwise).
        public var trapInstruction: TrapInstruction?
        public var senderPid: Int32?
        /// The language runtime's message of the fatal error, when it left one for crash
        /// reporters (Swift: "Fatal error: Index out of range", with file and line).
        public var runtimeMessage: String?
        public var threadId: UInt64?
        public var threadName: String?
        public var mainThread: Bool?
        /// True when the thread was parked and the process kept running (opt-in recovery).
        public var recovered: Bool?
    }

    public struct HandlerCrash: Codable, Sendable, Hashable {
        public var signal: Int32?
        public var signalName: String?
    }

    /// The uncaught exception that ended the process: an Objective-C exception (kind
    /// `objc_exception`), or a C++ exception noted by the terminate handler before the process
    /// aborted (kind `signal`, SIGABRT, `runtime` "c++").
    public struct ExceptionInfo: Codable, Sendable, Hashable {
        /// "c++" for a C++ exception; absent for an Objective-C exception.
        public var runtime: String?
        /// Objective-C: the exception's name ("NSRangeException"). C++: the exception's type,
        /// demangled ("std::out_of_range"); "" when std::terminate ran with no active exception.
        public var name: String?
        /// Objective-C: the reason. C++: `what()` for a `std::exception`, "" for any other type.
        public var reason: String?
        /// The guard whose report-only policy let this exception through (its hook recorded the
        /// misuse on this thread, then called the original, which threw): the app's crash, not a
        /// fault of the guard, so the guard is left out of `CrashedThread.guardFrames`.
        public var reportOnlyGuard: String?
    }

    public struct CrashedThread: Codable, Sendable, Hashable {
        /// How `frames` were gathered.
        public var unwinder: Unwinder?
        /// True when frame 0 is the faulting instruction; the others are return addresses.
        public var firstFrameIsPc: Bool?
        /// Names of the guards whose code is among `frames`, as the crash handler found them (the
        /// guard fail-safe reads this). Absent in reports of older versions and of processes that
        /// did not start capture through `CrashShieldSDK.start`.
        public var guardFrames: [String]?
        public var frames: [Frame]?
    }

    public struct Frame: Codable, Sendable, Hashable {
        /// Absent only in a frame cut short by truncation.
        public var address: String?
        /// Path of the image that contains the address, as loaded.
        public var image: String?
        /// Address minus the image's load bias: the file's virtual address.
        public var offset: String?
        /// True when the address is in CrashShield's own code (a guard's code section, the C++
        /// terminate handler's), as the crash handler found it: events mark such a frame not
        /// in-app, so the crash's culprit is the app's frame below it. Absent otherwise.
        public var sdk: Bool?
        /// Added by symbolication.
        public var function: String?
        public var file: String?
        public var line: Int?
        /// Which symbolizer found `function` (and `file`, `line`).
        public var symbolSource: SymbolSource?

        public var addressValue: UInt64? { address.flatMap { UInt64(hex: $0) } }
        public var offsetValue: UInt64? { offset.flatMap { UInt64(hex: $0) } }
    }

    public struct RecentIncident: Codable, Sendable, Hashable {
        public var sequence: UInt64?
        public var `guard`: String?
        public var `class`: String?
        public var selector: String?
        public var classMethod: Bool?
        public var reason: String?
        public var count: Int?
        public var monotonicNs: UInt64?
        /// The policy the guard applied: "neutralize", "reportOnly" or "off". Absent in reports
        /// of older versions.
        public var policy: String?
        /// The incident's fingerprint ("0x…"), as its event's. Absent in reports of older versions.
        public var fingerprint: String?
    }

    public struct GuardState: Codable, Sendable, Hashable {
        /// The guard's identifier (`GuardID.rawValue` in the CrashShield module).
        public var name: String?
        public var state: State?
        public var policy: Policy?

        public init(name: String?, state: State?, policy: Policy?) {
            self.name = name
            self.state = state
            self.policy = policy
        }
    }

    public struct ProcessInfo: Codable, Sendable, Hashable {
        public var pid: Int32?
        public var executable: String?
        public var name: String?
        public var appVersion: String?
        /// The last memory sample before the crash (the app-hang watchdog samples every second);
        /// absent when none was taken, and in reports of older versions.
        public var memory: Memory?
    }

    /// Memory figures of the crashed process, as last sampled before the crash.
    public struct Memory: Codable, Sendable, Hashable {
        /// Wall-clock time of the sample, in nanoseconds since 1970.
        public var sampledNs: UInt64?
        public var residentBytes: UInt64?
        public var peakResidentBytes: UInt64?
        /// Apple's `phys_footprint` (what the system's memory limit is measured against); absent elsewhere.
        public var footprintBytes: UInt64?
        /// Memory warnings the system sent during the run (Apple).
        public var memoryWarnings: Int?
    }

    public struct OSInfo: Codable, Sendable, Hashable {
        public var sysname: String?
        public var release: String?
        public var version: String?
        public var machine: String?
    }

    public struct Image: Codable, Sendable, Hashable {
        public var path: String?
        public var base: String?
        public var start: String?
        public var size: String?
        public var buildId: String?
    }

    /// What the failure was, decided on load from the signal, the trap instruction and symbols.
    /// Extensible like the report's other named values (below): later versions may tell more
    /// kinds of failure apart, and a report encoded by one (`jsonData`) still decodes here.
    public struct Classification: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A Swift runtime trap (index out of range, force unwrap of nil, overflow, fatalError):
        /// a trap instruction (ud2 on x86_64, brk on arm64) in Swift code.
        public static let swiftTrap = Classification(rawValue: "swift_trap")
        /// An uncaught Objective-C exception.
        public static let objcException = Classification(rawValue: "objc_exception")
        /// An uncaught C++ exception, or `std::terminate` (`exception` says which).
        public static let cppException = Classification(rawValue: "cpp_exception")
        /// SIGABRT: `abort()`, a failed C assertion, or the runtime aborting.
        public static let abort = Classification(rawValue: "abort")
        /// A trap instruction outside Swift code (`__builtin_trap`, a breakpoint), or an illegal
        /// instruction.
        public static let trap = Classification(rawValue: "trap")
        /// SIGSEGV or SIGBUS at an address within 256 KiB of the stack pointer.
        public static let stackOverflow = Classification(rawValue: "stack_overflow")
        /// SIGSEGV or SIGBUS elsewhere: a bad pointer, a use after free, a write to read-only memory.
        public static let badAccess = Classification(rawValue: "bad_access")
        /// SIGFPE: an arithmetic fault, such as an integer division by zero.
        public static let arithmetic = Classification(rawValue: "arithmetic")
        /// SIGPIPE: a write to a pipe or socket whose reader is gone.
        public static let brokenPipe = Classification(rawValue: "broken_pipe")
        /// SIGSYS: a system call the process may not make.
        public static let badSystemCall = Classification(rawValue: "bad_system_call")
        /// No crash section, or a signal none of the above covers.
        public static let unknown = Classification(rawValue: "unknown")
    }
}

extension CrashReport {
    /// Decodes a report file's bytes. A report cut short is first closed at its last complete
    /// value (see `TolerantJSON`); a report that still does not decode throws.
    public static func decode(_ bytes: [UInt8]) throws -> CrashReport {
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
    public func jsonData(pretty: Bool = false) -> Data {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)) ?? Data("{}".utf8)
    }

    /// Classification from what the report holds. Symbols (if present) decide whether a trap is a
    /// Swift trap; call again after symbolication.
    public func classify() -> Classification {
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
    /// What ended the process.
    public struct Kind: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A fatal signal (SIGSEGV, SIGABRT, a trap, ...): `crash` describes it.
        public static let signal = Kind(rawValue: "signal")
        /// An uncaught Objective-C exception: `exception` holds its name and reason, and the
        /// crashed thread's frames are the exception's return addresses.
        public static let objcException = Kind(rawValue: "objc_exception")
    }

    /// Where the app's launch was at the moment of the crash, as launch protection had set it.
    public struct LaunchPhase: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The launch had begun and not yet completed (`LaunchProtection.launchCompleted()` or
        /// the end of the launch window): the crash counts as a launch crash.
        public static let launching = LaunchPhase(rawValue: "launching")
        /// The launch had completed, or capture runs without launch protection.
        public static let running = LaunchPhase(rawValue: "running")
        /// The process had begun a clean exit (`LaunchProtection.markExited()`).
        public static let terminating = LaunchPhase(rawValue: "terminating")
        /// No phase was set: the crash came after capture was installed and before launch
        /// protection began, or capture was installed through the C API alone.
        public static let unknown = LaunchPhase(rawValue: "unknown")
    }
}

extension CrashReport.Crash {
    /// A trap instruction recognised at the crashing `pc`: code that stopped itself on purpose
    /// (a Swift runtime check, `__builtin_trap`, a breakpoint).
    public struct TrapInstruction: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// x86_64 `ud2` (SIGILL): Swift runtime traps and `__builtin_trap`.
        public static let ud2 = TrapInstruction(rawValue: "ud2")
        /// x86_64 `int3` (SIGTRAP): a breakpoint instruction.
        public static let int3 = TrapInstruction(rawValue: "int3")
        /// arm64 `brk` (SIGTRAP): Swift runtime traps, `__builtin_trap` and breakpoints.
        public static let brk = TrapInstruction(rawValue: "brk")
    }
}

extension CrashReport.CrashedThread {
    /// How the crash handler gathered the crashed thread's frames.
    public struct Unwinder: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The call-frame information (DWARF CFI) of each function: exact, frame pointers or not.
        public static let dwarf = Unwinder(rawValue: "dwarf")
        /// The chain of frame pointers, where DWARF was unavailable or gave up: frames of code
        /// built without frame pointers can be missing.
        public static let framePointer = Unwinder(rawValue: "frame_pointer")
        /// The return addresses an uncaught exception carried; frame 0 is not a faulting
        /// instruction (`firstFrameIsPc` is false).
        public static let exception = Unwinder(rawValue: "exception")
        /// The frames gathered before the handler itself crashed (a minimal report).
        public static let partial = Unwinder(rawValue: "partial")
        /// No frames: the handler had no machine context for the thread. (Not named `none`,
        /// which would read as `Optional.none` in a comparison with an optional.)
        public static let notUnwound = Unwinder(rawValue: "none")
    }
}

extension CrashReport.Frame {
    /// The tool that symbolicated a frame.
    public struct SymbolSource: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The dynamic linker's symbol table (`dladdr`): exported function names only, no file
        /// or line.
        public static let dladdr = SymbolSource(rawValue: "dladdr")
        /// `llvm-symbolizer` with the image's debug information: function, file and line.
        public static let llvmSymbolizer = SymbolSource(rawValue: "llvm-symbolizer")
        /// `addr2line` with the image's debug information: function, file and line.
        public static let addr2line = SymbolSource(rawValue: "addr2line")
    }
}

extension CrashReport.GuardState {
    /// A guard's installation state (`GuardStatus.State` in the CrashShield module).
    public struct State: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Hooks installed and the install-time canary passed.
        public static let active = State(rawValue: "active")
        /// The canary did not see what it expected; the guard's hooks were removed again.
        public static let canaryFailed = State(rawValue: "canary_failed")
        /// A class or selector the guard needs does not exist on this runtime.
        public static let installFailed = State(rawValue: "install_failed")
        /// Not started, or not installed on this runtime.
        public static let notInstalled = State(rawValue: "not_installed")
    }

    /// What a guard did with a misuse (`GuardPolicy` in the CrashShield module).
    public struct Policy: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Record an incident, then make the call harmless.
        public static let neutralize = Policy(rawValue: "neutralize")
        /// Record an incident, then let the original behaviour (usually an exception) happen.
        public static let reportOnly = Policy(rawValue: "reportOnly")
        /// Do nothing: the original behaviour, no incident.
        public static let off = Policy(rawValue: "off")
    }
}

/// Why bytes could not be read as a crash report.
///
/// Check the kind with `code`, which is stable across versions (new codes may be added):
/// `catch let error as CrashReportError where error.code == .invalid`. `message` is for people
/// and may change.
public struct CrashReportError: CodedError {
    /// The kind of error; `rawValue` is a stable string (the Swift name, e.g. "unreadable").
    public struct Code: StableErrorCode {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Not even a prefix of a JSON object.
        public static let unreadable = Code(rawValue: "unreadable")
        /// JSON, but not a report (a field of the wrong type).
        public static let invalid = Code(rawValue: "invalid")
    }

    public let code: Code
    /// What went wrong, for people (for `invalid`, the decoder's account of the field); the
    /// wording may change between versions.
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// Not even a prefix of a JSON object.
    public static let unreadable = CrashReportError(code: .unreadable, message: "not even a prefix of a JSON object")
    /// JSON, but not a report; `detail` says which field is wrong.
    public static func invalid(_ detail: String) -> CrashReportError {
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
    public var uptime: Duration? { uptimeNs.map { .nanoseconds(Int64(clamping: $0)) } }
    /// `handlerNs` as a `Duration`: time the handler spent from entry to the last byte written.
    public var handlerDuration: Duration? { handlerNs.map { .nanoseconds(Int64(clamping: $0)) } }
}
