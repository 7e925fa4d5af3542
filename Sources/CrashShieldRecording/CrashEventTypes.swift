import CrashShieldBase
import Foundation

// The parts of a crash report an app reads through `CrashEvent`.
extension CrashEvent {
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

    /// One frame of the crashed thread: an address, its image, and the symbol when symbolication found one.
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
        /// The source file, when the image has debug information.
        public var file: String?
        /// The line in `file`.
        public var line: Int?
        /// Which symbolizer found `function` (and `file`, `line`).
        package var symbolSource: SymbolSource?

        package var addressValue: UInt64? { address.flatMap { UInt64(hex: $0) } }
        package var offsetValue: UInt64? { offset.flatMap { UInt64(hex: $0) } }
    }
}

extension CrashEvent.Frame {
    /// The tool that symbolicated a frame.
    package struct SymbolSource: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// The dynamic linker's symbol table (`dladdr`): exported function names only, no file
        /// or line.
        package static let dladdr = SymbolSource(rawValue: "dladdr")
        /// `llvm-symbolizer` with the image's debug information: function, file and line.
        package static let llvmSymbolizer = SymbolSource(rawValue: "llvm-symbolizer")
        /// `addr2line` with the image's debug information: function, file and line.
        package static let addr2line = SymbolSource(rawValue: "addr2line")
    }
}
