import Foundation
internal import _CrashShieldIncidents
internal import _CrashShieldRuntime

/// CrashShield's entry point.
///
/// ```swift
/// var options = CrashShieldOptions()
/// options.sinks = [LoggingIncidentSink()]
/// try CrashShieldSDK.start(options)
/// for await incident in CrashShieldSDK.incidents { print(incident.methodName, incident.reason) }
/// ```
///
/// Every member is thread-safe.
public enum CrashShieldSDK {
    /// Installs every guard once, runs each guard's canary and applies `options`.
    ///
    /// A rejected call changes nothing: its sinks are not added, and the Swift guards' policies,
    /// the zombie, timer and main-thread configuration and the count-update interval stay as the
    /// first start (or `setPolicy`) left them.
    ///
    /// - Throws: `CrashShieldError.alreadyStarted` on a second call (the first configuration
    ///   stays in effect), `CrashShieldError.runtimeUnavailable` without an Objective-C runtime.
    public static func start(_ options: CrashShieldOptions = CrashShieldOptions()) throws {
        // Validate, then act: every setting below is process-wide, so none is applied before the
        // guards are known to start. The lock makes the check and the start one step for every
        // caller of this function (a concurrent cs_guards_start() from C is handled below).
        startLock.lock()
        defer { startLock.unlock() }
        try throwIfRejected(cs_guards_start_check())

        let previousSwiftPolicies = swiftGuards.map { cs_swift_guard_policy($0.cell) }
        for sink in options.sinks { IncidentHub.shared.add(sink) }
        IncidentHub.shared.connect()
        cs_incidents_set_rate_limit_ns(UInt64(max(0, options.countUpdateInterval.nanoseconds)))
        for (id, cell) in swiftGuards { cs_swift_guard_set_policy(cell, options.policy(for: id).raw) }
        applyLifecycleOptions(options)

        let names = (0..<cs_guard_count()).map { GuardID(rawValue: String(cString: cs_guard_status_at($0).name)) }
        let policies = names.map { options.policy(for: $0) }
        let result: cs_start_result = withCStrings(names.map(\.rawValue)) { namePointers in
            var entries = zip(namePointers, policies).map { cs_guard_policy_entry(guard_name: $0, policy: $1.raw) }
            return withCStrings(options.allowedClassPrefixes) { allow in
                withCStrings(options.deniedClassPrefixes) { deny in
                    withCStrings(options.guardedAppClassPrefixes) { hooked in
                        entries.withUnsafeMutableBufferPointer { entryBuffer in
                            allow.withUnsafeBufferPointer { allowBuffer in
                                deny.withUnsafeBufferPointer { denyBuffer in
                                    hooked.withUnsafeBufferPointer { hookedBuffer in
                                        var config = cs_guards_config(
                                            policies: entryBuffer.baseAddress, policy_count: entryBuffer.count,
                                            allow_class_prefixes: allowBuffer.baseAddress, allow_count: allowBuffer.count,
                                            deny_class_prefixes: denyBuffer.baseAddress, deny_count: denyBuffer.count,
                                            hooked_app_class_prefixes: hookedBuffer.baseAddress,
                                            hooked_app_class_count: hookedBuffer.count)
                                        return cs_guards_start(&config)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        if result != CS_START_OK {
            // Only a C caller of cs_guards_start() between the check and here gets this far:
            // take back the sinks and Swift policies (the C side has no getter for the rest).
            for sink in options.sinks { IncidentHub.shared.remove(sink) }
            for ((_, cell), policy) in zip(swiftGuards, previousSwiftPolicies) { cs_swift_guard_set_policy(cell, policy) }
            try throwIfRejected(result)
        }
        publishGuardStates()
    }

    /// Serialises `start` (check and start are one step).
    private static let startLock = NSLock()

    private static func throwIfRejected(_ result: cs_start_result) throws {
        switch result {
        case CS_START_ALREADY_STARTED: throw CrashShieldError.alreadyStarted
        case CS_START_RUNTIME_UNAVAILABLE: throw CrashShieldError.runtimeUnavailable
        default: break
        }
    }

    /// The state of every guard, in registry order, then the Swift-side guards.
    public static var status: [GuardStatus] {
        var result = (0..<cs_guard_count()).map { index -> GuardStatus in
            let raw = cs_guard_status_at(index)
            let detail = raw.detail.map { String(cString: $0) } ?? ""
            let state: GuardStatus.State
            switch raw.state {
            case CS_GUARD_ACTIVE: state = .active
            case CS_GUARD_CANARY_FAILED: state = .canaryFailed(reason: detail)
            case CS_GUARD_INSTALL_FAILED: state = .installFailed(reason: detail)
            default: state = .notInstalled
            }
            let skipped = (0..<Int(raw.skipped_hooks)).compactMap { position -> String? in
                var hook = cs_guard_skipped_hook()
                guard cs_guard_skipped_hook_at(index, position, &hook) else { return nil }
                return "\(hook.class_method ? "+" : "-")[\(String(cString: hook.class_name)) \(String(cString: hook.selector))]"
            }
            return GuardStatus(
                id: GuardID(rawValue: String(cString: raw.name)), state: state, policy: GuardPolicy(raw.policy),
                hookedMethods: Int(raw.hooked_methods), skippedHooks: skipped)
        }
        for (id, cell) in swiftGuards {
            result.append(
                GuardStatus(
                    id: id, state: .active, policy: GuardPolicy(cs_swift_guard_policy(cell)), hookedMethods: 0,
                    skippedHooks: []))
        }
        return result
    }

    /// Switches one guard's policy; takes effect on the next guarded call, on every thread.
    /// Crash reports written from then on list the new policy.
    /// - Throws: `CrashShieldError.unknownGuard` or `.guardNotActive`.
    public static func setPolicy(_ policy: GuardPolicy, for id: GuardID) throws {
        if let cell = swiftGuards.first(where: { $0.id == id })?.cell {
            cs_swift_guard_set_policy(cell, policy.raw)
        } else {
            guard status.contains(where: { $0.id == id }) else { throw CrashShieldError.unknownGuard(id) }
            guard cs_guard_set_policy(id.rawValue, policy.raw) else { throw CrashShieldError.guardNotActive(id) }
        }
        publishGuardStates()
    }

    /// A new stream of every incident delivered from now on. Each access creates an independent
    /// subscriber; the stream keeps the newest 1024 incidents when the consumer falls behind.
    public static var incidents: AsyncStream<Incident> { IncidentHub.shared.stream() }

    /// Adds a sink after `start` (sinks in `CrashShieldOptions` are added by `start`).
    public static func addSink(_ sink: any IncidentSink) { IncidentHub.shared.add(sink) }

    /// Removes a sink added before.
    public static func removeSink(_ sink: any IncidentSink) { IncidentHub.shared.remove(sink) }

    /// Calls `body` for every delivered incident; returns the sink so it can be removed.
    @discardableResult
    public static func onIncident(_ body: @escaping @Sendable (Incident) -> Void) -> any IncidentSink {
        let sink = ClosureIncidentSink(body)
        addSink(sink)
        return sink
    }

    /// Waits until every incident recorded so far was handed to the sinks and streams, for at
    /// most `timeout` (rounded down to whole milliseconds). Default timeout: 2 seconds.
    /// - Returns: false when `timeout` passed first.
    @discardableResult
    public static func flushIncidents(timeout: Duration = .seconds(2)) -> Bool {
        let milliseconds = max(0, timeout.nanoseconds / 1_000_000)
        return cs_incidents_flush(UInt32(clamping: milliseconds))
    }

    /// Counters since start: every misuse is counted here, delivered or not.
    public static var statistics: IncidentStatistics {
        let raw = cs_incidents_stats()
        return IncidentStatistics(
            recorded: Int(clamping: raw.recorded), fingerprints: Int(clamping: raw.fingerprints),
            delivered: Int(clamping: raw.delivered), droppedDeliveries: Int(clamping: raw.dropped_deliveries))
    }

    /// Misuses recorded by one guard since start.
    public static func recordedCount(for id: GuardID) -> Int {
        Int(clamping: cs_incidents_count_for_guard(id.rawValue))
    }
}

/// Guards implemented in Swift (no runtime hooks), after the registry's guards in `status`.
/// Each is always active; its policy is an atomic cell in the C incident pipeline.
private let swiftGuards: [(id: GuardID, cell: cs_swift_guard)] = [
    (.swiftAccess, CS_SWIFT_GUARD_ACCESS),
    (.decoding, CS_SWIFT_GUARD_DECODING),
]

/// Incident counters (see `CrashShieldSDK.statistics`).
public struct IncidentStatistics: Sendable, Hashable {
    /// Every misuse recorded, repeats included.
    public let recorded: Int
    /// Distinct fingerprints.
    public let fingerprints: Int
    /// Incidents handed to sinks and streams.
    public let delivered: Int
    /// Deliveries dropped because the queue was full (their counts are kept).
    public let droppedDeliveries: Int
}

extension CrashShieldSDK {
    /// Restores every original implementation and forgets incidents, so a test can start again.
    package static func _resetForTesting() {
        cs_guards_uninstall_for_testing()
        cs_incidents_flush(2000)
        cs_incidents_reset()
        cs_guards_set_class_filters(nil, 0, nil, 0)
        for (_, cell) in swiftGuards { cs_swift_guard_set_policy(cell, CS_POLICY_NEUTRALIZE) }
        publishGuardStates()
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let parts = components
        return parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000
    }
}

/// Calls `body` with C strings that live for the duration of the call.
func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) throws -> R) rethrows -> R {
    let duplicates = strings.map { strdup($0) }
    defer { duplicates.forEach { free($0) } }
    return try body(duplicates.map { UnsafePointer($0) })
}
