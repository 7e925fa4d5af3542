import CrashShieldBase
import CrashShieldGuards
import CrashShieldRecording
import CrashShieldSentry

/// Configuration for `CrashShieldSDK.start(_:)`. Every property has a documented default; an
/// `Options()` value protects with every guard.
public struct CrashShieldOptions: Sendable {
    /// Policy for each guard of `preset` not listed in `policies` or a remote document.
    /// Default: `.neutralize`.
    public var defaultPolicy: GuardPolicy = .neutralize

    /// Per-guard policies, overriding `defaultPolicy` and `preset`. Default: empty.
    public var policies: [GuardID: GuardPolicy] = [:]

    /// Which guards take `defaultPolicy` when neither `policies` nor a remote document names
    /// them; the others are installed with policy `.off`, so a remote document (applied at the
    /// next start) or `CrashShieldSDK.setPolicy` can switch them on without a release.
    /// Default: `.all`.
    public var preset: GuardPreset = .all

    /// Class-name prefixes a misuse's receiver must match (itself or a superclass) to be guarded.
    /// A misuse on any other receiver keeps its original behaviour, with no incident. Empty means
    /// every class. The list never switches a guard off: each guard still passes its canary and
    /// stays active. Default: empty.
    public var allowedClassPrefixes: [String] = []

    /// Class-name prefixes whose misuses are left alone (the original behaviour happens, no
    /// incident). Checked against the receiver's class and its superclasses; wins over
    /// `allowedClassPrefixes`. The list never switches a guard off. Default: empty.
    public var deniedClassPrefixes: [String] = []

    /// Prefixes of your own (or third-party) class names whose own implementations of guarded
    /// selectors are guarded too. By default the hooks go only on implementations that live in
    /// the system's images (GNUstep Base and libobjc; Foundation, CoreFoundation and the other
    /// system images on Apple): an app subclass of `NSArray`, `NSString`... that implements
    /// `-objectAtIndex:`, `-characterAtIndex:`... itself keeps its own contract and is left alone.
    /// Listing its prefix here opts it in. Matched against the class that defines the method.
    /// Default: empty.
    public var guardedAppClassPrefixes: [String] = []

    /// Sinks that receive every delivered incident, in order, on the delivery thread.
    /// Default: empty (incidents are still counted and available through `CrashShieldSDK.incidents`).
    public var sinks: [any IncidentSink] = []

    /// Minimum time between two delivered count updates of one fingerprint. The first occurrence is
    /// always delivered; later ones are counted and reported at most this often. Default: 1 second.
    public var countUpdateInterval: Duration = .seconds(1)

    /// Classes whose deallocated instances are kept as zombies, by exact name: the instance's
    /// properties are released, its memory is kept, and a message to it returns nil / 0 and
    /// records an incident naming the class and the selector.
    /// Zombies are opt-in: empty (the default) zombifies nothing. Protection lasts only while a
    /// zombie is kept (see `zombieMaxBytes`, `zombieMaxCount`, `CrashShieldSDK.flushZombies()`).
    public var zombieClassNames: [String] = []

    /// Class-name prefixes whose instances are kept as zombies (your app's classes). Default: empty.
    public var zombieClassPrefixes: [String] = []

    /// Class names or prefixes that are never zombified, checked against the class and its
    /// superclasses; wins over the two lists above. Default: empty.
    public var zombieDeniedClasses: [String] = []

    /// Memory budget of the zombie FIFO, in bytes; the oldest zombies are freed beyond it.
    /// Default: 2 MiB.
    public var zombieMaxBytes: Int = 2 * 1024 * 1024

    /// Most zombies kept at once; the oldest are freed beyond it. Default: 10 000.
    public var zombieMaxCount: Int = 10_000

    /// (class name, selector) pairs that must run on the main thread. A call from
    /// another thread is re-dispatched asynchronously to the main queue, with an incident. Only
    /// instance methods returning `Void` with at most one object or integer argument qualify.
    /// Default: empty on Linux.
    public var mainThreadOnlyCalls: [MainThreadCall] = []

    /// Classes (public names; subclasses included) whose instances a repeating `NSTimer` holds
    /// weakly: objects whose lifetime a timer must not extend. A timer whose target is
    /// of any other class keeps NSTimer's strong reference, so a timer that is its target's only
    /// owner (a poller that invalidates itself after N ticks) works as without the guard. Classes
    /// that do not exist in the process are ignored.
    /// Default: `UIViewController`, `UIView`, `NSViewController`, `NSView` on Apple platforms;
    /// empty elsewhere.
    public var timerWeakTargetClasses: [String] = CrashShieldOptions.defaultTimerWeakTargetClasses

    /// The platform default of `timerWeakTargetClasses`.
    #if canImport(Darwin)
    package static let defaultTimerWeakTargetClasses = ["UIViewController", "UIView", "NSViewController", "NSView"]
    #else
    package static let defaultTimerWeakTargetClasses: [String] = []
    #endif

    /// Fatal crash capture (signals and uncaught Objective-C exceptions), written by an
    /// async-signal-safe handler into `capture.directory` and read at the next start; nil switches
    /// it off. Default: on, with `CaptureOptions()` (the default directory).
    ///
    /// Assigning it (`options.capture = nil`, or `options.capture = CaptureOptions(...)`, even one
    /// equal to the default) is the app's own choice, and a remote configuration rule's `capture`
    /// no longer switches it. Left unassigned, capture is on, and `CrashShieldSDK.start` switches
    /// it off for that launch when the active remote configuration rule says `"capture": false`.
    /// Changing a field in place (`options.capture?.appVersion = "2.4.1"`) configures the default
    /// capture and is not such a choice (`captureIsSetByApp` stays as it was).
    public var capture: CaptureOptions? {
        get { captureStorage }
        set {
            captureStorage = newValue
            captureIsSetByApp = true
        }
        // In-place changes of a field (optional chaining, `inout`) go through here, not `set`.
        _modify { yield &captureStorage }
    }

    /// True once the app assigned `capture` (on or off); a remote configuration rule's `capture`
    /// then leaves it alone. False while `capture` has its default, also after fields of it were
    /// changed in place. Default: false.
    package private(set) var captureIsSetByApp = false

    /// The value of `capture`; `captureIsSetByApp` records whether the app assigned it.
    private var captureStorage: CaptureOptions? = CaptureOptions()

    /// Crash-loop protection: counts launch crashes and runs the repair steps at the threshold,
    /// before `start` returns; nil switches it off. With capture on, a launch crash is one with a
    /// report written during launch; with capture off, a launch that never completed.
    /// Default: on, with `LaunchProtectionOptions()` (threshold 3, safe mode as the only step).
    public var launchProtection: LaunchProtectionOptions? = LaunchProtectionOptions()

    /// Reporting to a Sentry-compatible server (Sentry, self-hosted Sentry, GlitchTip, the
    /// CrashShield collector): crash reports, incidents (as `warning` events) and one session per
    /// launch, plus remote configuration fetched from the same server. nil keeps everything on the
    /// device. Default: nil.
    ///
    /// Its files live in the report directory: `capture.directory`, or with capture off
    /// `launchProtection.directoryWithoutCapture` (else `CaptureOptions.defaultDirectory`); with
    /// capture off, incidents and sessions are still sent (and reports left in that directory by
    /// an earlier run with capture on).
    public var reporting: ReportingOptions?

    /// Guards switched off (policy `.off`) for a run that launch protection put in safe mode.
    /// Default: empty.
    public var safeModeGuards: [GuardID] = []

    /// Options with every default described at its property.
    public init() {}

    func policy(for id: GuardID) -> GuardPolicy {
        policies[id] ?? (preset.includes(id) ? defaultPolicy : .off)
    }

    /// Applies a remote configuration rule's `capture` when the app did not assign `capture`:
    /// false switches capture off (launch protection then keeps its state in the capture
    /// directory, unless the app gave it `directoryWithoutCapture`); true and nil change nothing
    /// (capture is on by default). `captureIsSetByApp` stays false.
    mutating func applyRemoteCapture(_ remoteCapture: Bool?) {
        guard !captureIsSetByApp, remoteCapture == false, let switchedOff = captureStorage else { return }
        if launchProtection != nil, launchProtection?.directoryWithoutCapture == nil {
            launchProtection?.directoryWithoutCapture = switchedOff.directory
        }
        captureStorage = nil
    }
}

extension CrashShieldOptions {
    /// The guards alone: default guard settings with crash capture and launch protection off, so
    /// `start` installs no signal handlers and writes no launch state. For in-package processes
    /// that run guards inside another harness (the `shield` scenario and bench children, tests).
    package static var guardsOnly: CrashShieldOptions {
        var options = CrashShieldOptions()
        options.capture = nil
        options.launchProtection = nil
        return options
    }
}

/// The guards `CrashShieldOptions.defaultPolicy` applies to (see `CrashShieldOptions.preset`).
public enum GuardPreset: Sendable, Hashable, CaseIterable {
    /// Every guard. The default.
    case all
    /// The guards for the misuses Objective-C apps most often crash on, and nothing that needs
    /// per-app configuration: unrecognized selectors (`selector`), container and string ranges
    /// and nils (`container`, `string`), JSON nulls (`nsnull`) and KVO pairing (`kvo`), plus the
    /// Swift-side guards that act only where the code asks for them (`swift`, `decoding`).
    /// `kvc`, `notification`, `timer`, `zombie` and `mainthread` start `.off` until a remote
    /// document (for example the collector's "protect" switch for a crash seen in the field)
    /// turns them on.
    case common

    /// The guards `.common` leaves at `defaultPolicy`.
    package static let commonGuards: Set<GuardID> = [.container, .string, .swiftAccess, .selector, .nsnull, .decoding, .kvo]

    /// Whether this preset leaves `id` at `defaultPolicy` (`.all`: every guard, also one a later
    /// version adds; `.common`: `commonGuards`).
    package func includes(_ id: GuardID) -> Bool {
        switch self {
        case .all: return true
        case .common: return Self.commonGuards.contains(id)
        }
    }
}

/// One main-thread-only method, by class name and selector name (e.g. "setNeedsLayout").
public struct MainThreadCall: Sendable, Hashable {
    /// The class that declares the method ("UIView").
    public var className: String
    /// The selector's name ("setNeedsLayout").
    public var selector: String
    /// The method `selector` of the class named `className`.
    public init(className: String, selector: String) {
        self.className = className
        self.selector = selector
    }
}
