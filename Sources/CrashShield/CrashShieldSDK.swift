import CrashShieldBase
import CrashShieldGuards
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
    /// Starts everything `options` asks for, in this order: the guards (each installed once, its
    /// canary run, `options` applied), fatal crash capture (`options.capture`; with it
    /// uncaught-exception capture and the guard fail-safe, which switches off for this run a guard
    /// whose code appears in a crash report of an earlier run), launch protection
    /// (`options.launchProtection`; its repair flow runs before this returns, and when it put the
    /// app in safe mode the guards in `options.safeModeGuards` are switched off), then the delivery
    /// of earlier crash reports to `options.capture.reportSinks` (on a background thread unless
    /// `deliverSynchronously`), then reporting (`options.reporting`): the crash reports of earlier
    /// runs, this launch's session and every incident from now on go to the server, converted and
    /// sent off the calling thread — except a crash during the previous launch, which is sent before
    /// launch protection's repair steps run (waiting at most `launchCrashFlushTimeout`). A clean
    /// exit and `stop()` send the session's end.
    ///
    /// Launch protection without capture (`options.capture = nil`) decides how the previous run
    /// ended from its launch state alone: a launch that never completed counts as a crash.
    ///
    /// When a remote configuration was activated before (`RemoteConfiguration.activate`, or this
    /// start with `options.reporting`), its rule fills in what `options` leaves unset
    /// (`CrashShieldOptions.applyingRemoteOverrides`): policies of guards not in `policies`,
    /// prefix lists the app left empty, the incident sample rate when the app set none, and
    /// `"capture": false` switches crash capture off for this launch when the app never assigned
    /// `options.capture` (the document is applied before the guards and capture start, so no
    /// signal handler is installed; reporting keeps the capture directory and the app's name and
    /// version). An app that assigned `options.capture` keeps capture on or off as it chose.
    ///
    /// Validate, then act: every part is checked before anything is changed, so a rejected call
    /// changes nothing: its sinks are not added, the Swift guards' policies, the zombie, timer and
    /// main-thread configuration and the count-update interval stay as before, no directory is
    /// created and capture keeps its first configuration. (Should installing the signal handlers
    /// fail after the checks passed, which only a failing `sigaction` does, the guards this call
    /// started are uninstalled again before the error is thrown.)
    ///
    /// - Throws: `CrashShieldError.alreadyStarted` on a second call (the first configuration stays
    ///   in effect; call `stop()` first to start again), `CrashShieldError.runtimeUnavailable`
    ///   without an Objective-C runtime, `CrashCaptureError.alreadyStarted` when capture was
    ///   started already through `CrashCapture.start` or the C API,
    ///   `CrashCaptureError.directoryUnavailable` when the capture directory cannot be created.
    public static func start(_ options: CrashShieldOptions = CrashShieldOptions()) throws {
        // The lock makes the checks and the start one step for every caller of this function (a
        // concurrent cs_guards_start() from C is handled in startGuards).
        startLock.lock()
        defer { startLock.unlock() }
        var steps = StartSteps()

        // The app declares its version once: capture takes it from the release when left unset.
        // In place (optional chaining): the app's choice of capture itself stays as it made it.
        var declared = options
        if declared.capture?.appVersion == nil {
            declared.capture?.appVersion = options.capture?.withAppVersion(from: options.reporting).appVersion
        }

        // 1. Validate every part; nothing has changed yet.
        try throwIfRejected(cs_guards_start_check())
        if let capture = declared.capture { try CrashCapture.validate(capture) }

        // With reporting, the stored remote configuration becomes this run's (a newer one is
        // fetched in the background for the next start) before anything reads it: its rule fills
        // in what the app left unset, and capture writes its version into every report.
        let reportingDirectory = declared.capture?.directory
            ?? declared.launchProtection?.directoryWithoutCapture ?? CaptureOptions.defaultDirectory
        if let reporting = declared.reporting {
            ReportingClient.activateRemoteConfiguration(reporting, directory: reportingDirectory,
                                                        appVersion: declared.capture?.appVersion ?? reporting.releaseVersion)
        }
        // The app's own capture options: reporting keeps their name and version (the release)
        // when the remote configuration switched capture off.
        let appCapture = declared.capture
        let options = optionsWithRemoteOverrides(declared)
        steps.end("checks and remote configuration")

        // 2. Act, in order. Each later step may rely on the earlier ones.
        try startGuards(options, steps: &steps)
        var protection: LaunchProtection?
        if let capture = options.capture {
            do {
                let clock = ContinuousClock()
                let captureStartedAt = clock.now
                protection = try runCaptureSteps(capture, launchProtection: options.launchProtection,
                                                 safeModeGuards: options.safeModeGuards, reporting: options.reporting)
                _lastCaptureStepDuration = clock.now - captureStartedAt
                steps.end("capture and launch protection")
            } catch {
                stopGuards(removing: options.sinks)
                throw error
            }
        } else {
            // Reporting without capture: incidents and sessions (see `CrashShieldOptions.reporting`).
            var client: ReportingClient?
            if let reporting = options.reporting {
                // appCapture is nil unless the remote configuration switched capture off.
                let appName = appCapture.map { $0.appName ?? CommandLine.arguments.first.map { ($0 as NSString).lastPathComponent } }
                let candidate = ReportingClient(options: reporting, directory: reportingDirectory,
                                                appName: appName ?? nil, appVersion: appCapture?.appVersion)
                if ReportingClient.install(candidate) { client = candidate }
            }
            if let launchOptions = options.launchProtection {
                protection = startLaunchProtectionWithoutCapture(launchOptions, safeModeGuards: options.safeModeGuards,
                                                                 reporting: client)
            }
            client?.launchDecided(nil)  // no-op when launch protection decided already
        }
        // Incidents go to reporting as `warning` events (converted and sent off the delivery thread).
        var sinks = options.sinks
        if let client = ReportingClient.current {
            let sink = ClosureIncidentSink { incident in client.submitIncident(incident.reportingRecord) }
            IncidentHub.shared.add(sink)
            sinks.append(sink)
        }

        startDeliveryThreadAfterStart(capture: options.capture != nil)

        // Registered after reporting's exit handler, so it runs before it: at exit, incident
        // delivery ends first (no sink call starts, a running one is waited for at most 500 ms),
        // then reporting's end runs with no sink call racing it.
        _ = incidentExitRegistration

        stateLock.lock()
        started = Started(sinks: sinks, capture: options.capture != nil, launchProtection: protection,
                          lastRun: protection?.lastRun ?? (options.capture != nil ? CrashCapture.lastRun : nil))
        stateLock.unlock()
        // Reporting's queued setup and conversion run from here on (no-op when capture began it).
        ReportingClient.current?.beginWork()
        steps.end("reporting hand-off and incident sinks")
        _lastStartSteps = steps.recorded
    }

    /// The incident delivery thread: with capture, created by the app-hang watchdog's first tick
    /// (`RunWatch.afterStart`), off the start's thread; without, here. An incident queued before
    /// then creates it itself.
    private static func startDeliveryThreadAfterStart(capture: Bool) {
        if capture, RunWatch.afterStart({ IncidentHub.shared.startDeliveryThread() }) { return }
        IncidentHub.shared.startDeliveryThread()
    }

    /// The steps of the last successful `start`, in order, with their durations: `shield bench`
    /// prints them. Written under `startLock`.
    // written under `startLock` by `start`; read by `shield bench` after `start` returned on its thread
    nonisolated(unsafe) package static var _lastStartSteps: [(step: String, duration: Duration)] = []

    /// Durations of consecutive steps, each from the end of the previous one.
    struct StartSteps {
        private let clock = ContinuousClock()
        private var last: ContinuousClock.Instant
        private(set) var recorded: [(step: String, duration: Duration)] = []

        init() { last = clock.now }

        mutating func end(_ step: String) {
            let now = clock.now
            recorded.append((step, now - last))
            last = now
        }

        /// Records `duration` as `step` without moving the clock (a part of the next `end`).
        mutating func add(_ step: String, _ duration: Duration) {
            recorded.append((step, duration))
        }
    }

    /// How long the capture steps of the last successful `start` with capture took (code ranges,
    /// capture, fail-safe, launch protection, safe mode, delivery hand-off): `shield bench-capture`
    /// reports it apart from the guards' installation. Written under `startLock`.
    // written under `startLock` by `start`; read by `shield bench-capture` after `start` returned on its thread
    nonisolated(unsafe) package static var _lastCaptureStepDuration: Duration = .zero

    /// The exit handler that ends incident delivery, once per process (the C pipeline registered
    /// the same, idempotent, handler when its delivery thread started; this later registration
    /// runs earlier).
    private static let incidentExitRegistration: Void = {
        atexit { _ = cs_incidents_end_delivery_for_exit() }
    }()

    /// What a successful `start` started, until `stop`.
    private struct Started {
        var sinks: [any IncidentSink]
        var capture: Bool
        var launchProtection: LaunchProtection?
        var lastRun: LastRun?
    }
    // read and written only under `stateLock`
    nonisolated(unsafe) private static var started: Started?
    private static let stateLock = Locked()

    /// True between a successful `start` and `stop`.
    public static var isEnabled: Bool {
        stateLock.lock()
        defer { stateLock.unlock() }
        return started != nil
    }

    /// Launch protection of this run: nil when `options.launchProtection` was nil, before `start`
    /// and after `stop`.
    public static var launchProtection: LaunchProtection? {
        stateLock.lock()
        defer { stateLock.unlock() }
        return started?.launchProtection
    }

    /// How the previous run ended, as found by `start`. Available when capture or launch
    /// protection is on (with capture on and launch protection off, the SDK still records each
    /// run's end in the capture directory); nil when both are off, before `start` and after `stop`.
    public static var lastRun: LastRun? {
        stateLock.lock()
        defer { stateLock.unlock() }
        return started?.lastRun
    }

    /// True when `lastRun` says the previous run crashed (false when it is nil).
    package static var crashedLastRun: Bool { lastRun?.outcome == .crashed }

    /// Undoes `start`: every guard's hooks are removed, so each guarded method behaves as without
    /// CrashShield again (the Swift-side guards return to their before-start policy,
    /// `.neutralize`). Objects the app still holds keep working as without the guards:
    /// key-value observing registrations made while guarded are handed back to the platform in
    /// their plain form (the observer itself, same key path, options and context), so the app's
    /// later removals work; notification observers stay registered as they were and lose only the
    /// automatic removal at dealloc; timers keep firing as scheduled, retaining their target
    /// again; kept zombies stay zombies, so a dangling pointer to one stays harmless (their
    /// memory, at most `zombieMaxBytes`, is freed by `flushZombies()` or, after a later `start`,
    /// by the budget). The sinks `start` added are removed; crash capture's
    /// signal handlers are uninstalled and the handlers installed before `start` are restored. The
    /// uncaught-exception handler stays in place but writes nothing while capture is stopped.
    /// Launch protection's record of this launch stays (a clean exit is still marked at exit).
    /// Reporting ends: the session's `exited` update and what is pending are sent, waiting at most
    /// `ReportingOptions.exitFlushTimeout`. A background fetch of `RemoteConfiguration.activate`
    /// that is still running is cancelled and waited for, at most 500 ms (it stores nothing).
    /// Incident delivery ends first, as at exit: incidents recorded but not yet delivered are
    /// dropped (counted in `statistics.droppedDeliveries`), and a sink call already running is
    /// waited for, at most 500 ms, so once `stop` returns no sink `start` added is called (unless
    /// one call outlasted the 500 ms); incidents recorded while `stop` runs are dropped too.
    /// Sinks added with `addSink` and incident streams stay, and receive the incidents recorded
    /// after `stop` returned (the Swift-side guards keep recording). No-op when not started.
    /// A later `start` starts everything again.
    public static func stop() {
        startLock.lock()
        defer { startLock.unlock() }
        stateLock.lock()
        let previous = started
        started = nil
        stateLock.unlock()
        guard let previous else { return }
        _ = cs_incidents_end_delivery(CS_INCIDENTS_END_GRACE_MS)
        defer { cs_incidents_resume_delivery() }
        ReportingClient.stopCurrent()
        RemoteConfiguration.endBackgroundFetches()
        if previous.capture { CrashCapture.stop() }
        stopGuards(removing: previous.sinks)
    }

    /// Installs the guards with `options` (the first step of `start`).
    private static func startGuards(_ options: CrashShieldOptions, steps: inout StartSteps) throws {
        let previousSwiftPolicies = swiftGuards.map { cs_swift_guard_policy($0.cell) }
        // The delivery thread is created after the start returns (startDeliveryThreadAfterStart).
        IncidentHub.shared.connect(startingThread: false)
        for sink in options.sinks { IncidentHub.shared.add(sink) }
        cs_incidents_set_rate_limit_ns(UInt64(max(0, options.countUpdateInterval.nanoseconds)))
        steps.end("incident delivery")
        for (id, cell) in swiftGuards { cs_swift_guard_set_policy(cell, options.policy(for: id).raw) }
        applyLifecycleOptions(options)
        steps.end("guard options")

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
        steps.end("guards")
        if result == CS_START_OK {
            let timing = cs_guards_last_start_timing()
            steps.add("guards: Objective-C runtime's first use", .nanoseconds(Int64(timing.runtime_ns)))
            steps.add("guards: owner discovery", .nanoseconds(Int64(timing.discovery_ns)))
            steps.add("guards: hooks", .nanoseconds(Int64(timing.hooks_ns)))
            steps.add("guards: dispatch-table writes (part of hooks)", .nanoseconds(Int64(timing.table_writes_ns)))
            steps.add("guards: canaries", .nanoseconds(Int64(timing.canaries_ns)))
        }
        if result != CS_START_OK {
            // Only a C caller of cs_guards_start() between the check and here gets this far:
            // take back the sinks and Swift policies (the C side has no getter for the rest).
            for sink in options.sinks { IncidentHub.shared.remove(sink) }
            for ((_, cell), policy) in zip(swiftGuards, previousSwiftPolicies) { cs_swift_guard_set_policy(cell, policy) }
            try throwIfRejected(result)
        }
        publishGuardStates()
        steps.end("guard status published")
    }

    /// Removes every guard's hooks (original implementations back; see `stop`), clears the class
    /// filters, puts the Swift-side guards back to `.neutralize` and removes `sinks`.
    private static func stopGuards(removing sinks: [any IncidentSink]) {
        cs_guards_uninstall()
        cs_guards_set_class_filters(nil, 0, nil, 0)
        for (_, cell) in swiftGuards { cs_swift_guard_set_policy(cell, CS_POLICY_NEUTRALIZE) }
        for sink in sinks { IncidentHub.shared.remove(sink) }
        publishGuardStates()
    }

    /// Serialises `start` and `stop` (check and start are one step).
    static let startLock = Locked()

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
    package static func addSink(_ sink: any IncidentSink) { IncidentHub.shared.add(sink) }

    /// Removes a sink added before.
    package static func removeSink(_ sink: any IncidentSink) { IncidentHub.shared.remove(sink) }

    /// Calls `body` for every delivered incident; returns the sink so it can be removed.
    @discardableResult
    package static func onIncident(_ body: @escaping @Sendable (Incident) -> Void) -> any IncidentSink {
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
let swiftGuards: [(id: GuardID, cell: cs_swift_guard)] = [
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
    /// Deliveries dropped (their counts are kept): the queue of 256 undelivered incidents was
    /// full, or delivery had ended (at exit and during `stop`: what was still queued; in a forked
    /// child: what the parent had queued).
    public let droppedDeliveries: Int
}

extension CrashShieldSDK {
    /// Restores every original implementation and forgets incidents, so a test can start again.
    package static func _resetForTesting() {
        stateLock.lock()
        let previous = started
        started = nil
        stateLock.unlock()
        ReportingClient.stopCurrent()
        if previous?.capture == true { CrashCapture.stop() }
        cs_guards_uninstall()
        cs_zombie_flush() // tests hold no pointer to a kept zombie across a reset
        cs_incidents_flush(2000)
        cs_incidents_reset()
        cs_guards_set_class_filters(nil, 0, nil, 0)
        for (_, cell) in swiftGuards { cs_swift_guard_set_policy(cell, CS_POLICY_NEUTRALIZE) }
        publishGuardStates()
    }
}

/// Calls `body` with C strings that live for the duration of the call.
func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) throws -> R) rethrows -> R {
    let duplicates = strings.map { strdup($0) }
    defer { duplicates.forEach { free($0) } }
    return try body(duplicates.map { UnsafePointer($0) })
}
