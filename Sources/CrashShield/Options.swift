/// Configuration for `CrashShield.start(_:)`. Every property has a documented default; an
/// `Options()` value protects with every guard.
public struct CrashShieldOptions: Sendable {
    /// Policy for each guard not listed in `policies`. Default: `.neutralize`.
    public var defaultPolicy: GuardPolicy = .neutralize

    /// Per-guard policies, overriding `defaultPolicy`. Default: empty.
    public var policies: [GuardID: GuardPolicy] = [:]

    /// Class-name prefixes a misuse's receiver must match (itself or a superclass) to be guarded.
    /// Empty means every class. Default: empty.
    public var allowedClassPrefixes: [String] = []

    /// Class-name prefixes whose misuses are left alone (the original behaviour happens, no
    /// incident). Checked against the receiver's class and its superclasses. Default: empty.
    public var deniedClassPrefixes: [String] = []

    /// Sinks that receive every delivered incident, in order, on the delivery thread.
    /// Default: empty (incidents are still counted and available through `CrashShield.incidents`).
    public var sinks: [any IncidentSink] = []

    /// Minimum time between two delivered count updates of one fingerprint. The first occurrence is
    /// always delivered; later ones are counted and reported at most this often. Default: 1 second.
    public var countUpdateInterval: Duration = .seconds(1)

    public init() {}

    func policy(for id: GuardID) -> GuardPolicy { policies[id] ?? defaultPolicy }
}
