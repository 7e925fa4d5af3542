/// Identifies one guard. Names are stable and appear in incidents, status and the `shield` CLI.
public struct GuardID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// Foundation containers (SPEC §2.1): arrays, dictionaries, sets, ordered sets, NSCache,
    /// NSUserDefaults, NSData.
    public static let container = GuardID(rawValue: "container")
    /// Strings and attributed strings (SPEC §2.2).
    public static let string = GuardID(rawValue: "string")
    /// The Swift counterparts (`[shielded:]` accessors, SPEC §2.11). They have no runtime hooks.
    public static let swiftAccess = GuardID(rawValue: "swift")
    /// Unrecognized selectors (SPEC §2.3): the app's own classes by default, see the allow list.
    public static let selector = GuardID(rawValue: "selector")
    /// Messages to NSNull (SPEC §2.4), usually a JSON null the code did not expect.
    public static let nsnull = GuardID(rawValue: "nsnull")
    /// Key-value coding (SPEC §2.5): undefined keys, nil keys, nil for scalars, bad key paths.
    public static let kvc = GuardID(rawValue: "kvc")
    /// Lenient `Decodable` wrappers (`@Lenient`, SPEC §2.11). Swift-side: no runtime hooks.
    public static let decoding = GuardID(rawValue: "decoding")
    /// Key-value observing (SPEC §2.6): registrations tracked by one proxy per observed object.
    public static let kvo = GuardID(rawValue: "kvo")
    /// Notification observers that deallocate while registered are removed (SPEC §2.7).
    public static let notification = GuardID(rawValue: "notification")
    /// Repeating timers hold their targets weakly (SPEC §2.8).
    public static let timer = GuardID(rawValue: "timer")
    /// Opt-in zombies: messages to deallocated instances of chosen classes (SPEC §2.9).
    public static let zombie = GuardID(rawValue: "zombie")
    /// Configured main-thread-only calls made elsewhere are re-dispatched (SPEC §2.10).
    public static let mainThread = GuardID(rawValue: "mainthread")
}

/// What a guard does when it intercepts a misuse.
public enum GuardPolicy: Sendable, Hashable, CaseIterable {
    /// Record an incident, then make the call harmless. The default.
    case neutralize
    /// Record an incident, then let the original behaviour (usually an exception) happen.
    case reportOnly
    /// Do nothing: the original behaviour, no incident.
    case off
}

/// What `CrashShieldSDK.status` reports for one guard.
public struct GuardStatus: Sendable, Hashable {
    public enum State: Sendable, Hashable {
        /// Not started, or not installed on this runtime.
        case notInstalled
        /// Hooks installed and the install-time canary passed.
        case active
        /// The canary did not see what it expected; the guard's hooks were removed again.
        case canaryFailed(reason: String)
        /// A class or selector the guard needs does not exist on this runtime.
        case installFailed(reason: String)
    }

    public let id: GuardID
    public let state: State
    /// The policy in effect (`.off` unless `state` is `.active`).
    public let policy: GuardPolicy
    /// Method implementations replaced: one per (owning class, selector).
    public let hookedMethods: Int
    /// In-scope implementations left unhooked because one selector had more owners than the
    /// engine's hook slots, as `-[Class selector]`; the guard stays active for every other owner.
    public let skippedHooks: [String]
}

/// An error thrown by the CrashShield API.
///
/// Check the kind with `code`, which is stable across versions (new codes may be added):
/// `catch let error as CrashShieldError where error.code == .alreadyStarted`, or match a value
/// without details directly: `catch CrashShieldError.alreadyStarted`. `message` is for people and
/// may change; `guardID` names the guard for `unknownGuard` and `guardNotActive`.
public struct CrashShieldError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of error; `rawValue` is a stable string (the Swift name, e.g. "alreadyStarted").
    public struct Code: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// `start` was called before; the first configuration stays in effect.
        public static let alreadyStarted = Code(rawValue: "alreadyStarted")
        /// The process has no Objective-C runtime, so the runtime guards cannot be installed.
        public static let runtimeUnavailable = Code(rawValue: "runtimeUnavailable")
        /// No guard has this identifier.
        public static let unknownGuard = Code(rawValue: "unknownGuard")
        /// The guard exists but is not active (see `CrashShieldSDK.status`), so its policy cannot change.
        public static let guardNotActive = Code(rawValue: "guardNotActive")
    }

    public let code: Code
    /// What went wrong, for people; the wording may change between versions.
    public let message: String
    /// The guard the error is about (`unknownGuard`, `guardNotActive`); nil for the other codes.
    public let guardID: GuardID?

    public init(code: Code, message: String, guardID: GuardID? = nil) {
        self.code = code
        self.message = message
        self.guardID = guardID
    }

    /// "<code>: <message>".
    public var description: String { "\(code): \(message)" }

    /// `start` was called before; the first configuration stays in effect.
    public static let alreadyStarted = CrashShieldError(
        code: .alreadyStarted, message: "CrashShield was started before; the first configuration stays in effect")
    /// The process has no Objective-C runtime, so the runtime guards cannot be installed.
    public static let runtimeUnavailable = CrashShieldError(
        code: .runtimeUnavailable, message: "no Objective-C runtime in this process, so no runtime guard can be installed")
    /// No guard has the identifier `id`.
    public static func unknownGuard(_ id: GuardID) -> CrashShieldError {
        CrashShieldError(code: .unknownGuard, message: "no guard is named \"\(id.rawValue)\"", guardID: id)
    }
    /// The guard `id` exists but is not active, so its policy cannot change.
    public static func guardNotActive(_ id: GuardID) -> CrashShieldError {
        CrashShieldError(
            code: .guardNotActive, message: "the guard \"\(id.rawValue)\" is not active, so its policy cannot change",
            guardID: id)
    }

    /// Matches by code, so `catch CrashShieldError.alreadyStarted` catches every error of that code.
    public static func ~= (pattern: CrashShieldError, value: any Error) -> Bool {
        (value as? CrashShieldError)?.code == pattern.code
    }
}
