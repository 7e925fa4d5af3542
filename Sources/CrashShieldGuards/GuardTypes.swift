import CrashShieldBase
/// Identifies one guard. Names are stable and appear in incidents, status and the `shield` CLI.
public struct GuardID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// Foundation containers: arrays, dictionaries, sets, ordered sets, NSCache, NSUserDefaults,
    /// NSData. An out-of-range read returns nil (a range read, the part that is valid); a copy
    /// into the caller's buffer with a bad range (`getBytes:range:`, `getObjects:range:`) writes
    /// nothing; a nil element or key, or an out-of-range mutation, is a no-op; a nil in a
    /// collection literal is skipped. A nil value for `setObject:forKeyedSubscript:` still removes
    /// the key (legal).
    public static let container = GuardID(rawValue: "container")
    /// Strings and attributed strings: an out-of-range index or range, or a nil argument, gives
    /// an empty or nil result (`characterAtIndex:` returns 0) or a no-op mutation.
    public static let string = GuardID(rawValue: "string")
    /// The `[shielded:]` collection and string accessors: an index or range out of bounds returns
    /// nil and records an incident instead of trapping. Swift-side: no runtime hooks.
    public static let swiftAccess = GuardID(rawValue: "swift")
    /// Unrecognized selectors: a message no class in the chain implements returns nil / 0 / a
    /// zeroed struct instead of throwing. By default only the app's own classes (not system
    /// libraries), narrowed or widened with the class-prefix lists; classes that do their own
    /// forwarding and NSProxy subclasses are left alone. `respondsToSelector:` still answers NO.
    public static let selector = GuardID(rawValue: "selector")
    /// Messages to NSNull, usually a JSON null the code did not expect: a message an empty
    /// NSString, NSNumber, NSArray or NSDictionary understands returns what the empty one returns
    /// (`length` 0, `objectForKey:` nil); any other message is handled as an unrecognized selector.
    public static let nsnull = GuardID(rawValue: "nsnull")
    /// Key-value coding: an undefined key (reads return nil, writes are ignored), a nil key, nil
    /// for a scalar property (ignored) and a bad key path. A class that overrides the undefined-key
    /// methods keeps its own behaviour.
    public static let kvc = GuardID(rawValue: "kvc")
    /// Lenient `Decodable` wrappers (`@Lenient`): an unexpected JSON `null`, a missing key or a
    /// type mismatch decodes as the default value and records an incident. Swift-side: no
    /// runtime hooks.
    public static let decoding = GuardID(rawValue: "decoding")
    /// Key-value observing, with registrations tracked by one proxy per observed object: a
    /// duplicate add is blocked, a remove of a registration that does not exist is ignored, the
    /// registrations of an observer or observed object that deallocates are removed, and a
    /// change for an observer without `observeValueForKeyPath:ofObject:change:context:` is dropped.
    public static let kvo = GuardID(rawValue: "kvo")
    /// Notification observers (added with `addObserver:selector:name:object:`) that deallocate
    /// while registered are removed, so a later post never reaches freed memory.
    public static let notification = GuardID(rawValue: "notification")
    /// Repeating timers whose target is of a class in `CrashShieldOptions.timerWeakTargetClasses`
    /// hold that target weakly; once it is gone, the next fire invalidates the timer. Other
    /// timers keep NSTimer's strong reference; one-shot timers are untouched.
    public static let timer = GuardID(rawValue: "timer")
    /// Opt-in zombies: deallocated instances of the classes named in the options are kept for a
    /// while, and a message to one returns nil / 0 instead of reaching freed memory.
    public static let zombie = GuardID(rawValue: "zombie")
    /// The calls in `CrashShieldOptions.mainThreadOnlyCalls`, made from another thread, are
    /// re-dispatched asynchronously to the main queue.
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
    /// Whether the guard runs, and why not when it does not.
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

    /// The guard this status is about.
    public let id: GuardID
    /// Whether the guard runs.
    public let state: State
    /// The policy in effect (`.off` unless `state` is `.active`).
    public let policy: GuardPolicy
    /// Method implementations replaced: one per (owning class, selector).
    public let hookedMethods: Int
    /// In-scope implementations left unhooked because one selector had more owners than the
    /// engine's hook slots, as `-[Class selector]`; the guard stays active for every other owner.
    public let skippedHooks: [String]

    package init(id: GuardID, state: State, policy: GuardPolicy, hookedMethods: Int, skippedHooks: [String]) {
        self.id = id
        self.state = state
        self.policy = policy
        self.hookedMethods = hookedMethods
        self.skippedHooks = skippedHooks
    }
}

/// An error thrown by the CrashShield API.
///
/// Check the kind with `code`, which is stable across versions (new codes may be added):
/// `catch let error as CrashShieldError where error.code == .alreadyStarted`, or match a value
/// without details directly: `catch CrashShieldError.alreadyStarted`. `message` is for people and
/// may change; `guardID` names the guard for `unknownGuard` and `guardNotActive`.
public struct CrashShieldError: CodedError {
    /// The kind of error; `rawValue` is a stable string (the Swift name, e.g. "alreadyStarted").
    public struct Code: StableErrorCode {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

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

    package init(code: Code, message: String, guardID: GuardID? = nil) {
        self.code = code
        self.message = message
        self.guardID = guardID
    }

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
}
