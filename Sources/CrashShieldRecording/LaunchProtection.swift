import CrashShieldBase
import Foundation
package import _CrashShieldCapture
package import _CrashShieldLaunch

/// Options for crash-loop protection (`CrashShieldOptions.launchProtection` or the
/// `launchProtection` argument of `CrashCapture.start(_:launchProtection:)`): consecutive crashes
/// during launch (before `launchCompleted()` or the end of `launchWindow`) are counted, and at
/// `threshold` the repair steps run before the app's normal launch. With crash capture on, only
/// launches that left a crash report count: a user swiping the app away or a `kill -9` does not.
public struct LaunchProtectionOptions: Sendable {
    /// Consecutive launch crashes that start the repair flow. Default: 3.
    public var threshold = 3
    /// A launch ends at `launchCompleted()` or after this window, whichever comes first. Default: 5 s.
    public var launchWindow: Duration = .seconds(5)
    /// Repair steps, mildest first. At the threshold the first step not yet attempted runs;
    /// every further launch crash runs the next one (escalation). When all were attempted,
    /// nothing more runs (no loop) until a launch completes. Default: safe mode only.
    public var repairSteps: [RepairStep] = [.safeMode()]
    /// Where the launch state lives when capture is off (`CrashShieldOptions.capture == nil`); with
    /// capture on it always lives in the capture directory and this is ignored.
    /// Default: nil, meaning `CaptureOptions.defaultDirectory`.
    public var directoryWithoutCapture: String?
    /// Launch protection with every default described at its property.
    public init() {}

    /// Records how each run ends and nothing more: no repair step, no threshold.
    static var recordOnly: LaunchProtectionOptions {
        var options = LaunchProtectionOptions()
        options.threshold = .max
        options.repairSteps = []
        return options
    }
}

/// What `RepairStep`s see and may change.
public final class RepairContext: Sendable {
    /// The SDK's directory (reports, launch state): never deleted by a step.
    public let directory: String
    /// Consecutive launch crashes so far, this loop's latest included.
    public let consecutiveLaunchCrashes: Int
    /// The report of the last launch crash, when capture recorded one (decoded on first read).
    public var lastReport: CrashEvent? { lastReportSource?.report.map(CrashEvent.init) }
    private let lastReportSource: PendingReport?
    private let safeMode = Locked(false)

    init(directory: String, consecutiveLaunchCrashes: Int, lastReportSource: PendingReport?) {
        self.directory = directory
        self.consecutiveLaunchCrashes = consecutiveLaunchCrashes
        self.lastReportSource = lastReportSource
    }

    convenience init(directory: String, consecutiveLaunchCrashes: Int, lastReport: CrashReport?) {
        self.init(directory: directory, consecutiveLaunchCrashes: consecutiveLaunchCrashes,
                  lastReportSource: lastReport.map(PendingReport.init(decoded:)))
    }

    /// Turns safe mode on (persisted until `LaunchProtection.endSafeMode()`).
    public func enableSafeMode() { safeMode.withLock { $0 = true } }

    var safeModeRequested: Bool { safeMode.withLock { $0 } }

    /// True when `path` is the SDK's directory or inside it, or contains it.
    package func touchesSDKState(_ path: String) -> Bool {
        let target = URL(fileURLWithPath: path).standardizedFileURL.path
        let own = URL(fileURLWithPath: directory).standardizedFileURL.path
        return target == own || own.hasPrefix(target + "/") || target.hasPrefix(own + "/")
    }
}

/// One step of the repair flow: an `async throws` closure. It succeeds when it returns and fails
/// when it throws or does not return within `timeout` (it is then cancelled, and the launch goes
/// on). Before a step runs, its id is persisted as attempted, so a step that crashes the app is
/// never run again in the same crash loop.
///
/// Launch protection runs the step before `start` returns, on a detached task, while the thread
/// that called `start` waits. A step that needs the main actor (or the main queue) while `start`
/// runs on the main thread cannot proceed: it times out instead of deadlocking.
///
/// ```swift
/// RepairStep(id: "reset-database", timeout: .seconds(5)) { context in
///     try await database.reset()
/// }
/// ```
public struct RepairStep: Sendable {
    /// Identifies the step in the launch state and in `LaunchProtection.repairsRun`; commas become "_".
    public let id: String
    /// How long the step may run. Default: 10 seconds.
    public let timeout: Duration
    let body: @Sendable (RepairContext) async throws -> Void

    /// A step named `id` (unique among the steps) that runs `body`, ended after `timeout`.
    public init(id: String, timeout: Duration = .seconds(10),
                _ body: @escaping @Sendable (RepairContext) async throws -> Void) {
        self.id = id
        self.timeout = timeout
        self.body = body
    }

    /// A synchronous step (the built-in steps): succeeds unless `body` throws.
    package static func run(id: String, _ body: @escaping @Sendable (RepairContext) throws -> Void) -> RepairStep {
        RepairStep(id: id) { context in try body(context) }
    }

    /// Safe mode: `LaunchProtection.isSafeMode` becomes true (persisted) so the app (and
    /// CrashShield, for its risky guards) can switch features off. Id "safe-mode".
    public static func safeMode() -> RepairStep {
        .run(id: "safe-mode") { $0.enableSafeMode() }
    }

    /// Removes the contents of cache directories (the directories stay). An entry that is, holds
    /// or lies inside the SDK's directory is left alone. Id "clear-caches".
    public static func clearCaches(_ directories: [String]) -> RepairStep {
        .run(id: "clear-caches") { context in
            for directory in directories {
                for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
                    let entry = "\(directory)/\(name)"
                    if !context.touchesSDKState(entry) { try? FileManager.default.removeItem(atPath: entry) }
                }
            }
        }
    }

    /// Moves named files (a database, say) into "<sdk directory>/quarantine/<time>/", where they
    /// can be recovered; nothing is deleted. Id "quarantine".
    public static func quarantine(_ paths: [String]) -> RepairStep {
        .run(id: "quarantine") { context in
            let folder = "\(context.directory)/quarantine/\(Int(Date().timeIntervalSince1970))"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for path in paths where FileManager.default.fileExists(atPath: path) && !context.touchesSDKState(path) {
                try FileManager.default.moveItem(atPath: path, toPath: "\(folder)/\((path as NSString).lastPathComponent)")
            }
        }
    }

    /// Deletes user data. Does nothing unless `explicitOptIn` is true. Id "delete-user-data".
    public static func deleteUserData(_ paths: [String], explicitOptIn: Bool) -> RepairStep {
        .run(id: "delete-user-data") { context in
            guard explicitOptIn else { return }
            for path in paths where !context.touchesSDKState(path) { try? FileManager.default.removeItem(atPath: path) }
        }
    }
}

/// What launch protection decided about the previous run, before any repair step runs.
package struct LaunchDecision: Sendable {
    /// This launch's id.
    package let launchID: String
    /// The previous launch's id; nil at the first launch.
    package let previousLaunchID: String?
    package let lastRun: LastRun
    /// Launch crashes in a row, the previous run's included.
    package let consecutiveLaunchCrashes: Int
    /// The repair step the previous run ran at its start; nil when it ran none.
    package let previousRunRepairStep: String?
}

/// How the previous run ended.
public struct LastRun: Sendable, Equatable {
    /// How the previous run ended.
    public enum Outcome: String, Sendable, Equatable {
        /// There was no previous run in this directory.
        case firstLaunch = "first_launch"
        /// It exited normally (`exit`, `main` returned, or `stop`).
        case cleanExit = "clean_exit"
        /// A crash report exists for it (or, without capture, the timer method says so).
        case crashed
        /// It ended without a clean exit and without a report: killed (kill -9, swipe-away),
        /// out of memory, power loss.
        case endedWithoutReport = "ended_without_report"
    }
    /// How the previous run ended.
    public var outcome: Outcome
    /// The run crashed before its launch completed (`LaunchProtection.launchCompleted()`).
    public var crashedDuringLaunch: Bool
    /// The report of the crash, when capture wrote one. Decoded on the first read: the start
    /// decides the outcome from a C scan of the report's launch fields (the first JSONDecoder
    /// use in a process alone costs ~2 ms). nil also when the file, though it names
    /// this launch, does not decode as a report.
    public var report: CrashEvent? {
        get { reportSource?.report.map(CrashEvent.init) }
        set { reportSource = newValue.map { PendingReport(decoded: $0.raw) } }
    }
    /// The app version differs from the previous run's.
    public var appUpdated: Bool
    /// The previous run's app version; nil when it gave none or there was no previous run.
    public var previousAppVersion: String?
    /// How `outcome` was decided.
    package var detection: Detection
    /// The run crashed (outcome `crashed`) but its report could not be written (directory
    /// unwritable, disk full, file-size limit): the handler left a marker instead.
    public var reportLost = false

    /// Where `report` comes from (compared by the decoded report).
    var reportSource: PendingReport?

    init(outcome: Outcome, crashedDuringLaunch: Bool, report: PendingReport?, appUpdated: Bool,
         previousAppVersion: String?, detection: Detection, reportLost: Bool = false) {
        self.reportLost = reportLost
        self.outcome = outcome
        self.crashedDuringLaunch = crashedDuringLaunch
        self.reportSource = report
        self.appUpdated = appUpdated
        self.previousAppVersion = previousAppVersion
        self.detection = detection
    }

    /// How launch protection tells how the previous run ended.
    package struct Detection: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// From crash reports (capture on): a run crashed when capture wrote a report (or a
        /// marker that its report was lost) for it; a run without a clean exit and without a
        /// report ended otherwise (killed, out of memory, power loss).
        package static let report = Detection(rawValue: "report")
        /// From the launch state alone (capture off): a launch that never completed counts as a
        /// crash, so a kill during launch is counted too; a run that ended after its launch
        /// without a clean exit counts as ended without a report.
        package static let timer = Detection(rawValue: "timer")
    }
}

/// Crash-loop protection for one run. Created by `CrashCapture.start` when its options enable
/// launch protection; read it from `CrashCapture.launchProtection`.
///
/// State lives in "<directory>/launch-state", written atomically (temporary file, then rename)
/// and validated on read (header, checksum, ranges); a corrupt or unknown file resets the state
/// and never crashes.
public final class LaunchProtection {
    struct State: Equatable {
        var launchId: String?
        var phase: String?          // launching | running | exited
        var appVersion: String?
        var consecutiveLaunchCrashes = 0
        var attemptedSteps: [String] = []
        var safeMode = false
    }

    package let directory: String
    package let launchID: String
    /// How the previous run ended.
    public let lastRun: LastRun
    /// Consecutive launch crashes before this launch.
    public let consecutiveLaunchCrashes: Int
    /// Ids of the repair steps run at this start (empty when no repair was needed).
    public let repairsRun: [String]
    /// Ids of steps that failed or timed out at this start.
    public let repairsFailed: [String]
    /// True when every step was attempted and the app still crashes at launch.
    public let repairExhausted: Bool
    /// True when the state file was unreadable and was reset.
    package let stateWasReset: Bool

    private let lock = Locked()
    private var state: State
    private let captureEnabled: Bool

    /// The protection of this process's latest launch, for the exit handler (an `atexit` handler
    /// may run on any thread, while another thread begins a launch).
    private static let current = Locked<LaunchProtection?>(nil)

    var statePath: String { "\(directory)/launch-state" }

    /// Safe mode is on (set by the "safe-mode" step; stays on until `endSafeMode()`).
    public var isSafeMode: Bool {
        lock.lock()
        defer { lock.unlock() }
        return state.safeMode
    }

    /// Whether this launch has completed.
    public var isLaunchCompleted: Bool {
        lock.lock()
        defer { lock.unlock() }
        return state.phase != "launching"
    }

    private init(directory: String, launchID: String, lastRun: LastRun, consecutive: Int, repairsRun: [String],
                 repairsFailed: [String], exhausted: Bool, reset: Bool, state: State, captureEnabled: Bool) {
        self.directory = directory
        self.launchID = launchID
        self.lastRun = lastRun
        self.consecutiveLaunchCrashes = consecutive
        self.repairsRun = repairsRun
        self.repairsFailed = repairsFailed
        self.repairExhausted = exhausted
        self.stateWasReset = reset
        self.state = state
        self.captureEnabled = captureEnabled
    }

    /// Starts launch protection for this run: decides how the previous run ended, counts launch
    /// crashes, runs the repair flow at the threshold (before returning), and marks this launch
    /// as started. `captureEnabled` false selects the timer method (a launch that never completed
    /// counts as a crash, so a kill -9 during launch is a false positive).
    ///
    /// Once per launch and directory: while this process's launch protection for `directory` has
    /// not ended (`markExited()`), a second call (directly, or by `CrashCapture.start`) changes
    /// nothing and returns that protection (it would take the running launch for a previous run
    /// that ended without `markExited`: a crash, or a launch crash with the timer method).
    package static func begin(directory: String, options: LaunchProtectionOptions = LaunchProtectionOptions(),
                             launchID: String = makeLaunchID(), appVersion: String? = nil,
                             captureEnabled: Bool, reports: [CrashReport]? = nil,
                             beforeRepair: ((LaunchDecision) -> Void)? = nil) -> LaunchProtection {
        begin(directory: directory, options: options, launchID: launchID, appVersion: appVersion,
              captureEnabled: captureEnabled, pending: reports.map { $0.map(PendingReport.init(decoded:)) },
              beforeRepair: beforeRepair)
    }

    /// `begin` with the reports found at start as scanned (not yet decoded) files.
    /// `beforeRepair` is called once the previous run's end and the launch-crash count are known,
    /// before any repair step runs (reporting sends a launch crash there); not called when this
    /// returns the launch already running.
    static func begin(directory: String, options: LaunchProtectionOptions, launchID: String, appVersion: String?,
                      captureEnabled: Bool, pending: [PendingReport]?,
                      beforeRepair: ((LaunchDecision) -> Void)? = nil) -> LaunchProtection {
        // Validate, then act: the check and the begin are one step for every caller.
        let key = launchKey(directory)
        beginLock.lock()
        defer { beginLock.unlock() }
        if let running = runningLaunches[key], !running.hasEnded { return running }
        let protection = beginLaunch(directory: directory, options: options, launchID: launchID, appVersion: appVersion,
                                     captureEnabled: captureEnabled, pending: pending, beforeRepair: beforeRepair)
        runningLaunches[key] = protection
        return protection
    }

    /// The directory as one spelling: its canonical path (`realpath`: links, `.`, `..` and repeated
    /// slashes resolved), or the path as given when it cannot be resolved. Not `URL`'s
    /// standardization: on Linux that tripled the start's cost (`shield bench-capture`).
    private static func launchKey(_ directory: String) -> String {
        guard let resolved = realpath(directory, nil) else { return directory }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Launch protections this process began, by canonical directory (read and written under
    /// `beginLock`; recursive because a repair step runs inside `begin`).
    // read and written only under `beginLock`
    nonisolated(unsafe) private static var runningLaunches: [String: LaunchProtection] = [:]
    private static let beginLock = Locked(recursive: true)

    /// True once this launch ended (`markExited()`).
    var hasEnded: Bool {
        lock.lock()
        defer { lock.unlock() }
        return state.phase == "exited"
    }

    /// Forgets this process's launch protection for `directory`, as the death of the process
    /// would: the next `begin` there is a new launch. For tests that simulate several launches.
    package static func forgetLaunchForTesting(directory: String) {
        beginLock.lock()
        runningLaunches[launchKey(directory)] = nil
        beginLock.unlock()
    }

    private static func beginLaunch(directory: String, options: LaunchProtectionOptions, launchID: String,
                                    appVersion: String?, captureEnabled: Bool, pending: [PendingReport]?,
                                    beforeRepair: ((LaunchDecision) -> Void)?) -> LaunchProtection {
        // From here on a crash is a launch crash, the repair steps' own crashes included: a step
        // that crashes must move the next launch on to the next step, not reset the count (a
        // report written with phase "unknown" would count as a crash after launch).
        csc_set_launch_phase(CSC_PHASE_LAUNCHING)
        if !isDirectory(directory) { try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        let path = "\(directory)/launch-state"
        let (read, reset) = readState(path)
        var state = read ?? State()

        // How did the previous run end? The reports are read only when they can tell: with capture
        // on, after a run that did not exit cleanly (the timer method never reads them).
        var lastRun: LastRun
        let updated = state.appVersion != nil && appVersion != nil && state.appVersion != appVersion
        if let previousID = state.launchId {
            if state.phase == "exited" {
                lastRun = LastRun(outcome: .cleanExit, crashedDuringLaunch: false, report: nil, appUpdated: updated,
                                  previousAppVersion: state.appVersion, detection: captureEnabled ? .report : .timer)
            } else if captureEnabled {
                let reports = pending ?? CrashReportStore(directory: directory).scanIfAny().reports
                let report = reports.last { $0.launchId == previousID && !$0.recovered }
                if let report {
                    let duringLaunch = report.launchPhase == .launching
                    lastRun = LastRun(outcome: .crashed, crashedDuringLaunch: duringLaunch, report: report, appUpdated: updated,
                                      previousAppVersion: state.appVersion, detection: .report)
                } else if let lost = UnreportedCrash.read(directory: directory), lost.launchID == previousID {
                    UnreportedCrash.clear(directory: directory)
                    lastRun = LastRun(outcome: .crashed, crashedDuringLaunch: lost.phase == .launching, report: nil,
                                      appUpdated: updated, previousAppVersion: state.appVersion, detection: .report,
                                      reportLost: true)
                } else {
                    lastRun = LastRun(outcome: .endedWithoutReport, crashedDuringLaunch: false, report: nil, appUpdated: updated,
                                      previousAppVersion: state.appVersion, detection: .report)
                }
            } else {
                let duringLaunch = state.phase == "launching"
                lastRun = LastRun(outcome: duringLaunch ? .crashed : .endedWithoutReport, crashedDuringLaunch: duringLaunch,
                                  report: nil, appUpdated: updated, previousAppVersion: state.appVersion, detection: .timer)
            }
        } else {
            lastRun = LastRun(outcome: .firstLaunch, crashedDuringLaunch: false, report: nil, appUpdated: false,
                              previousAppVersion: nil, detection: captureEnabled ? .report : .timer)
        }

        // Count: a launch crash adds one; a crash after launch resets; a run that ended without
        // a report (kill -9, swipe-away) neither counts nor resets.
        if lastRun.outcome == .crashed {
            state.consecutiveLaunchCrashes = lastRun.crashedDuringLaunch ? state.consecutiveLaunchCrashes + 1 : 0
        }
        if lastRun.outcome == .cleanExit && state.phase == "exited" && !lastRun.crashedDuringLaunch {
            // Clean exits keep the count only if that launch never completed (exit during launch).
        }
        let consecutive = state.consecutiveLaunchCrashes
        let repairStepPath = "\(directory)/\(repairStepFileName)"
        if let beforeRepair {
            beforeRepair(LaunchDecision(launchID: launchID, previousLaunchID: state.launchId, lastRun: lastRun, consecutiveLaunchCrashes: consecutive,
                                        previousRunRepairStep: state.launchId.flatMap { readRepairStep(repairStepPath, launchID: $0) }))
        }

        // Repair flow: the next step not attempted yet; its marker is persisted before it runs,
        // so a crash inside a step never repeats that step.
        var run: [String] = [], failed: [String] = []
        var exhausted = false
        if consecutive >= options.threshold {
            if let step = options.repairSteps.first(where: { !state.attemptedSteps.contains($0.id) }) {
                state.attemptedSteps.append(step.id)
                state.launchId = launchID
                state.phase = "launching"
                state.appVersion = appVersion
                writeState(state, to: path)
                writeRepairStep(step.id, launchID: launchID, to: repairStepPath)
                let context = RepairContext(directory: directory, consecutiveLaunchCrashes: consecutive, lastReportSource: lastRun.reportSource)
                run.append(step.id)
                if !runStep(step, context: context) { failed.append(step.id) }
                if context.safeModeRequested { state.safeMode = true }
            } else {
                exhausted = true
            }
        }

        state.launchId = launchID
        state.phase = "launching"
        state.appVersion = appVersion
        writeState(state, to: path)
        csc_set_launch_phase(CSC_PHASE_LAUNCHING)

        let protection = LaunchProtection(
            directory: directory, launchID: launchID, lastRun: lastRun, consecutive: consecutive, repairsRun: run,
            repairsFailed: failed, exhausted: exhausted, reset: reset, state: state, captureEnabled: captureEnabled)
        current.withLock { $0 = protection }
        _ = Self.exitHandlerRegistration
        let window = options.launchWindow
        let nanoseconds = max(0, window.nanoseconds)
        completeLaunch(of: protection, after: UInt64(clamping: nanoseconds))
        return protection
    }

    /// "<launch id> <step id>": the repair step a launch ran at its start, so the next start can
    /// tag that launch's crash with it (`launch.repair_step`). Written before the step runs.
    static let repairStepFileName = "repair-step"

    private static func writeRepairStep(_ step: String, launchID: String, to path: String) {
        let bytes = Array("\(launchID) \(step)\n".utf8)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    /// The step of `repair-step` when it names `launchID`; nil otherwise (read in C: start path).
    private static func readRepairStep(_ path: String, launchID: String) -> String? {
        var length = 0
        guard let buffer = csc_read_file(path, 4096, &length) else { return nil }
        defer { free(buffer) }
        let text = buffer.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
        let parts = text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0] == launchID else { return nil }
        return String(parts[1])
    }

    /// One atexit registration per process, however often `begin` runs (tests run it many times).
    private static let exitHandlerRegistration: Void = {
        atexit { LaunchProtection.current.withLock { $0 }?.markExited() }
    }()

    // @unchecked Sendable: `protection` is set once in init, then only read (weak loads are atomic).
    private final class WeakReference: @unchecked Sendable {
        weak var protection: LaunchProtection?
        init(_ protection: LaunchProtection) { self.protection = protection }
    }

    /// Ends the launch window: a plain thread that sleeps (csc_run_after), because the first
    /// `DispatchQueue.asyncAfter` of a process starts libdispatch's timer machinery on the
    /// caller's thread (~0.1 ms on the start path); Dispatch only if no thread can be started.
    /// With capture's watchdog running, that thread is created by the watchdog after the start
    /// returned (`RunWatch.afterStart`) and sleeps what is left of the window.
    private static func completeLaunch(of protection: LaunchProtection, after nanoseconds: UInt64) {
        let deadline = monotonicNanoseconds() &+ nanoseconds
        let reference = WeakReference(protection)
        if RunWatch.afterStart({
            let now = monotonicNanoseconds()
            startWindowTimer(reference, after: deadline > now ? deadline - now : 0)
        }) { return }
        startWindowTimer(reference, after: nanoseconds)
    }

    private static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    private static func startWindowTimer(_ protection: WeakReference, after nanoseconds: UInt64) {
        let reference = Unmanaged.passRetained(protection).toOpaque()
        let started = csc_run_after(nanoseconds, { context in
            guard let context else { return }
            Unmanaged<WeakReference>.fromOpaque(context).takeRetainedValue().protection?.launchCompleted()
        }, reference)
        if started { return }
        Unmanaged<WeakReference>.fromOpaque(reference).release()
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: nanoseconds))) {
            protection.protection?.launchCompleted()
        }
    }

    /// The app finished launching: the launch-crash count and the repair markers reset. When a
    /// repair step ran at this start, the loop it ended is reported (with reporting on, for this
    /// directory: an `info` event tagged `launch.repair_step`). Idempotent; also called when the
    /// launch window passes.
    public func launchCompleted() {
        lock.lock()
        guard state.phase == "launching" else {
            lock.unlock()
            return
        }
        state.phase = "running"
        state.consecutiveLaunchCrashes = 0
        state.attemptedSteps = []
        Self.writeState(state, to: statePath)
        csc_set_launch_phase(CSC_PHASE_RUNNING)
        lock.unlock()
        if let step = repairsRun.last, let bridge = CaptureReporting.bridge {
            bridge.launchLoopEnded(directory: directory, step: step, consecutiveLaunchCrashes: consecutiveLaunchCrashes,
                                   stepFailed: repairsFailed.contains(step), launchID: launchID)
        }
    }

    /// Ends safe mode (persisted).
    public func endSafeMode() {
        lock.lock()
        defer { lock.unlock() }
        state.safeMode = false
        Self.writeState(state, to: statePath)
    }

    /// Marks a clean exit (registered with atexit; call it yourself where the app terminates
    /// without exit(3)). Ignored when this process wrote a crash report.
    package func markExited() {
        lock.lock()
        defer { lock.unlock() }
        guard !csc_report_written() else { return }
        state.phase = "exited"
        Self.writeState(state, to: statePath)
        csc_set_launch_phase(CSC_PHASE_TERMINATING)
    }

    /// Runs `step` on a detached task and waits for it up to its timeout. The task prefers the
    /// repair-step thread (`RepairStepExecutor`), not the cooperative pool: `start` may be called
    /// from pool threads (an async `main`, a test runner), and waiting there could leave the step
    /// no thread to run on. The waiting thread is never needed by the task, so waiting on the main
    /// thread cannot deadlock; a step that awaits the main actor just times out.
    /// Returns true when the step returned in time.
    private static func runStep(_ step: RepairStep, context: RepairContext) -> Bool {
        let done = DispatchSemaphore(value: 0)
        let outcome = StepOutcome()
        let body = step.body
        let operation: @Sendable () async -> Void = {
            let success: Bool
            do {
                try await body(context)
                success = true
            } catch {
                success = false
            }
            if outcome.set(success) { done.signal() }
        }
        let task: Task<Void, Never>
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, macCatalyst 18, *) {
            task = Task.detached(executorPreference: RepairStepExecutor.shared, operation: operation)
        } else {
            task = Task.detached(operation: operation)
        }
        if done.wait(timeout: .now() + .nanoseconds(Int(clamping: max(0, step.timeout.nanoseconds)))) == .timedOut {
            // The first outcome wins: a step that returns from now on no longer counts.
            _ = outcome.set(false)
            task.cancel()
            return false
        }
        return outcome.value
    }

    /// One thread, started by the first repair step of the process, that runs the steps' jobs.
    @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, macCatalyst 18, *)
    // @unchecked Sendable: `jobs` is read and written only under `condition`
    private final class RepairStepExecutor: TaskExecutor, @unchecked Sendable {
        static package let shared = RepairStepExecutor()
        private let condition = NSCondition()
        private var jobs: [UnownedJob] = []

        private init() {
            let thread = Thread { [unowned self] in self.runJobs() }
            thread.name = "CrashShield.repair-steps"
            thread.start()
        }

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            condition.lock()
            jobs.append(job)
            condition.signal()
            condition.unlock()
        }

        private func runJobs() {
            while true {
                condition.lock()
                while jobs.isEmpty { condition.wait() }
                let job = jobs.removeFirst()
                condition.unlock()
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }
    }

    private final class StepOutcome: Sendable {
        private let state = Locked((done: false, value: false))
        var value: Bool { state.withLock { $0.value } }
        /// First completion wins; returns true for it.
        func set(_ success: Bool) -> Bool {
            state.withLock { state in
                guard !state.done else { return false }
                state = (done: true, value: success)
                return true
            }
        }
    }

    /// The state file is a few "key=value" lines after a header and before a checksum line
    /// (FNV-1a of everything above it; format in csc_launch.h). Plain text instead of JSON, and
    /// read, checked and written in C: this runs on every start, and the first use of Swift's
    /// generic collection code, Data or JSON in a process costs more than the 1 ms start budget
    /// allows. The checksum catches any damage.
    /// Returns the state (nil when there is none or it is corrupt) and whether it was corrupt.
    static func readState(_ path: String) -> (State?, corrupt: Bool) {
        var raw = csc_launch_state()
        defer { csc_launch_state_free(&raw) }
        switch csc_launch_state_read(path, &raw) {
        case CSC_LAUNCH_STATE_OK: return (State(raw), false)
        case CSC_LAUNCH_STATE_ABSENT: return (nil, false)
        default: return (nil, true)
        }
    }

    /// Decodes a state file's bytes; nil when they are not a valid state.
    static func decodeState(_ data: Data) -> State? {
        var raw = csc_launch_state()
        defer { csc_launch_state_free(&raw) }
        let status = data.withUnsafeBytes { csc_launch_state_decode($0.baseAddress, $0.count, &raw) }
        return status == CSC_LAUNCH_STATE_OK ? State(raw) : nil
    }

    /// Temporary file, then an atomic swap with the old one (csc_write_file_atomically): a
    /// reader sees the old or the new state, never a mix. No fsync: the swap is atomic against a
    /// crash of this process, which is what the state must survive; an fsync costs milliseconds
    /// on every launch (the budget is <= 1 ms).
    @discardableResult
    static func writeState(_ state: State, to path: String) -> Bool {
        // Commas separate the ids in the file, so an id's own commas become "_" (C cleans line breaks).
        var steps = "", separator = ""
        for step in state.attemptedSteps {
            steps += separator
            steps += step.contains(",") ? String(step.map { $0 == "," ? "_" : $0 }) : step
            separator = ","
        }
        return path.withCString { path in
            withOptionalCString(state.launchId) { launchId in
                withOptionalCString(state.phase) { phase in
                    withOptionalCString(state.appVersion) { appVersion in
                        steps.withCString { steps in
                            var raw = csc_launch_state()
                            raw.launch_id = launchId
                            raw.phase = phase
                            raw.app_version = appVersion
                            raw.attempted_steps = steps
                            raw.consecutive_launch_crashes = Int32(clamping: state.consecutiveLaunchCrashes)
                            raw.safe_mode = state.safeMode
                            return csc_launch_state_write(path, &raw)
                        }
                    }
                }
            }
        }
    }
}

// @unchecked Sendable: `state` is read and written only under `lock`; the rest is immutable.
extension LaunchProtection: @unchecked Sendable {}

extension LaunchProtection.State {
    init(_ raw: csc_launch_state) {
        self.init()
        if let text = raw.launch_id { launchId = String(cString: text) }
        if let text = raw.phase { phase = String(cString: text) }
        if let text = raw.app_version { appVersion = String(cString: text) }
        consecutiveLaunchCrashes = Int(raw.consecutive_launch_crashes)
        if let text = raw.attempted_steps, text.pointee != 0 {
            attemptedSteps = String(cString: text).split(separator: ",").map(String.init)
        }
        safeMode = raw.safe_mode
    }
}

/// A new launch id: a random UUID in lowercase (C: getrandom, no Foundation on the start path).
@usableFromInline
func makeLaunchID() -> String {
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: 37) { buffer in
        csc_make_launch_id(buffer.baseAddress!)
        return String(cString: buffer.baseAddress!)
    }
}
