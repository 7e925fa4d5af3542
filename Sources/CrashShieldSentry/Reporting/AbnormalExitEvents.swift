import CrashShieldBase
import CrashShieldRecording
import CrashShieldProtocol
import Foundation
package import _CrashShieldCapture

/// App hangs and exits without a report as events (docs/REPORTING.md, "App hangs and abnormal
/// exits").
///
/// - An app hang (`AppHang`, not fatal): level `error`, one exception `App Hanging` with mechanism
///   `AppHang` (handled), the watched thread's stack (a `snapshot`), value and `extra` with the
///   duration; the scope when it is sent. Grouped by the server like any exception (type and top
///   in-app frames), so each hanging call site is an issue of its own. `threads.values`, as
///   sentry-cocoa sends an app hang's: the hung thread first (`current`, `main`, `crashed: false`;
///   no stack of its own: the exception's `thread_id` names it, Sentry's rule for the thread of an
///   exception), then every other thread sampled (`crashed: false`, `current: false`, its id,
///   name and stack; one that did not answer without a stack). What could not be sampled (threads
///   that did not answer, beyond the limit, left out of the run record) is counted in
///   `extra["crashshield.hang_threads"]` and said in `extra["crashshield.unknown"]`.
/// - A fatal hang (the process ended while hanging, sent at the next start): the same with level
///   `fatal`, `handled: false`, the duration until the last sign of life, and the previous run's
///   facts (`abnormalExitFacts`); it stands for that run's abnormal exit (one event per death).
/// - An abnormal exit (the previous run ended with no crash report, no clean exit and no `stop()`,
///   and neither the app nor the OS was updated since): level `fatal`, one exception
///   `AbnormalExit` with mechanism `AbnormalExit` (handled: false, no stack: nothing was running
///   that could take one), fingerprint `["crashshield.abnormal-exit"]`, the previous run's scope
///   and breadcrumbs, and what is known under `contexts`-like `extra["crashshield.abnormal_exit"]`.
extension EventReporter {
    package static let appHangType = "App Hanging"
    package static let appHangMechanism = "AppHang"
    package static let abnormalExitType = "AbnormalExit"
    package static let abnormalExitMechanism = "AbnormalExit"

    /// The event of `hang`. `previousRun`: for a fatal hang, the run it ended.
    package func appHangEvent(_ hang: AppHang, converter: IncidentEventConverter, eventID: String,
                              previousRun: PreviousRunRecord? = nil, now: Date = Date()) -> SentryEvent {
        let seconds = Double(hang.duration.nanoseconds) / 1e9
        let timestamp = hang.fatal ? (previousRun?.lastAlive ?? hang.started.addingTimeInterval(seconds)) : now
        var event = converter.baseEvent(eventID: eventID, timestamp: timestamp, level: hang.fatal ? .fatal : .error)
        let text = String(format: "%.1f", seconds)
        let value = hang.fatal
            ? "The app was hanging for at least \(text) s when the process ended (the thread that started CrashShield did not answer)"
            : "The app was hanging for \(text) s (the thread that started CrashShield did not answer)"
        var data: [String: JSONValue] = ["duration_ms": .int(Int64(clamping: hang.duration.nanoseconds / 1_000_000)),
                                         "timeout_ms": .int(Int64(hang.timeoutMilliseconds)),
                                         "stack_sampled": .bool(hang.sampled)]
        if hang.fatal { data["fatal"] = .bool(true) }
        var stacktrace = converter.stacktrace(hang.frames)
        stacktrace?.snapshot = true
        let exception = SentryEvent.ExceptionValue(
            type: Self.appHangType, value: value,
            mechanism: SentryEvent.Mechanism(type: Self.appHangMechanism, handled: !hang.fatal, data: data),
            stacktrace: stacktrace, threadID: hang.threadID)
        event.exception = SentryEvent.Values([exception])
        var threads = [SentryEvent.Thread(id: hang.threadID, name: hang.threadName, crashed: false, current: true, main: true)]
        for other in hang.threads {
            var thread = SentryEvent.Thread(id: other.id, name: other.name, crashed: false, current: false, main: false)
            thread.stacktrace = converter.stacktrace(other.frames)
            thread.stacktrace?.snapshot = true
            threads.append(thread)
        }
        event.threads = SentryEvent.Values(threads)
        event.debugMeta = converter.debugMeta(hang.frames + hang.threads.flatMap(\.frames))
        event.tags = ["crashshield.event": hang.fatal ? "fatal_app_hang" : "app_hang"]
        var extra: [String: JSONValue] = ["crashshield.hang_duration_ms": data["duration_ms"]!,
                                          "crashshield.hang_started": .string(SentryTimestamp.rfc3339(hang.started))]
        var unknown: [JSONValue] = []
        if !hang.sampled { unknown.append(.string("stack: the hanging thread could not be sampled")) }
        let unanswered = hang.threads.filter { $0.outcome == .noAnswer }
        let blocking = hang.threads.filter { $0.outcome == .blocksSignal }
        extra["crashshield.hang_threads"] = .object([
            "listed": .bool(hang.threadsListed),
            "found": .int(Int64(hang.threadsFound)),
            "sampled": .int(Int64(hang.threads.count { $0.outcome == .sampled })),
            "not_answered": .array(unanswered.map { .int(Int64(clamping: $0.id)) }),
            "signal_blocked": .array(blocking.map { .int(Int64(clamping: $0.id)) }),
            "beyond_limit": .int(Int64(hang.threadsBeyondLimit)),
            "left_out_of_run_record": .int(Int64(hang.threadsLeftOut)),
        ])
        if !hang.threadsListed {
            unknown.append(.string("other threads: they could not be listed"))
        }
        if !unanswered.isEmpty {
            unknown.append(.string("stacks of \(unanswered.count) other thread(s) (listed without a stack): they did not answer the "
                + "sampling signal within \(CSC_HANG_THREAD_ANSWER_MS) ms (Linux) or could not be suspended (Apple)"))
        }
        if !blocking.isEmpty {
            unknown.append(.string("stacks of \(blocking.count) other thread(s) (listed without a stack): they block the sampling signal, "
                + "the only way to sample another thread on Linux (libdispatch's worker threads block every signal)"))
        }
        if hang.threadsBeyondLimit > 0 {
            unknown.append(.string("\(hang.threadsBeyondLimit) other thread(s) beyond the \(CSC_HANG_MAX_THREADS) sampled per hang"))
        }
        if hang.threadsLeftOut > 0 {
            unknown.append(.string("\(hang.threadsLeftOut) other thread(s) sampled but left out of the run record "
                + "(room for \(CSC_HANG_RECORD_THREADS))"))
        }
        if !unknown.isEmpty { extra["crashshield.unknown"] = .array(unknown) }
        if let previousRun { extra["crashshield.abnormal_exit"] = .object(Self.abnormalExitFacts(previousRun, hanging: true)) }
        event.extra = extra
        return event
    }

    /// The envelope of a hang that ended in this process (scope: the app's now); nil when
    /// `beforeSend` drops it (counted). Counts as an error in `session`.
    package func appHangEnvelope(_ hang: AppHang, converter: IncidentEventConverter, session: SessionTracker?,
                                 scope: CrashScope.Snapshot? = CrashScope.snapshot(lastBreadcrumbs: CrashScope.maxBreadcrumbs)) -> Envelope? {
        var event = appHangEvent(hang, converter: converter, eventID: SentryID.random())
        event.apply(scope: scope, installationID: installationID)
        guard let edited = applyBeforeSend(event) else { return nil }
        session?.recordError()
        return try? Envelope.event(edited, sdk: ReportingOptions.sdk, dsn: options.dsn)
    }

    /// The event for the previous run when it ended without a report (see the type's comment):
    /// its fatal hang when it was hanging, else an abnormal exit. Nil when it is not one: a crash
    /// report or a clean exit ended it, `stop()` ended the watch, the app or the OS was updated
    /// since (an update is not a kill), or no run record of that launch exists. Its id is derived
    /// from the previous launch id (one event per run, however often it is converted). The
    /// release and contexts are this run's (`converter`), with the previous app version in
    /// `extra` when it differs; the scope is the previous run's.
    package func previousRunEvent(lastRun: LastRun?, previousLaunchID: String?, record: PreviousRunRecord?,
                                  converter: IncidentEventConverter, osVersion: String = RunWatch.osVersion) -> SentryEvent? {
        guard let lastRun, lastRun.outcome == .endedWithoutReport, !lastRun.appUpdated,
              let record, let previousLaunchID, record.launchID == previousLaunchID, !record.stopped,
              record.osVersion == osVersion
        else { return nil }
        var event: SentryEvent
        if var hang = record.hang {
            hang.fatal = true
            event = appHangEvent(hang, converter: converter,
                                 eventID: SentryID.derived(from: "crashshield.fatal-hang:" + previousLaunchID), previousRun: record)
        } else {
            event = converter.baseEvent(eventID: SentryID.derived(from: "crashshield.abnormal-exit:" + previousLaunchID),
                                        timestamp: record.lastAlive ?? record.started, level: .fatal)
            let ran = (record.lastAlive ?? record.started).timeIntervalSince(record.started)
            event.exception = SentryEvent.Values([SentryEvent.ExceptionValue(
                type: Self.abnormalExitType,
                value: "The previous run ended after \(String(format: "%.0f", ran)) s without a crash report and without a clean exit "
                    + "(killed: kill -9, the out-of-memory killer, the system's watchdog, or power loss)",
                mechanism: SentryEvent.Mechanism(type: Self.abnormalExitMechanism, handled: false))])
            event.fingerprint = ["crashshield.abnormal-exit"]
            event.tags = ["crashshield.event": "abnormal_exit"]
            event.extra = ["crashshield.abnormal_exit": .object(Self.abnormalExitFacts(record, hanging: false))]
        }
        event.tags?["crashshield.previous_launch_id"] = previousLaunchID
        event.apply(scope: record.scope, installationID: installationID)
        return event
    }

    /// What is known about a run that ended without a report, and what could not be known.
    static func abnormalExitFacts(_ record: PreviousRunRecord, hanging: Bool) -> [String: JSONValue] {
        var facts: [String: JSONValue] = [
            "started": .string(SentryTimestamp.rfc3339(record.started)),
            "hanging": .bool(hanging),
            "hang_detection": .bool(record.hangDetection),
            "app_version": .string(record.appVersion),
            "os_version": .string(record.osVersion),
        ]
        var unknown: [JSONValue] = [.string("cause: no signal handler runs for SIGKILL, the out-of-memory killer or a watchdog kill"),
                                    .string("exit time: only the last sign of life, written at most 1 s apart")]
        if let alive = record.lastAlive {
            facts["last_alive"] = .string(SentryTimestamp.rfc3339(alive))
            facts["ran_seconds"] = .double((alive.timeIntervalSince(record.started) * 10).rounded() / 10)
        } else {
            unknown.append(.string("run time: the watchdog never wrote a sign of life"))
        }
        if let memory = record.memory {
            var values: [String: JSONValue] = [
                "sampled": .string(SentryTimestamp.rfc3339(memory.sampled)),
                "resident_bytes": .int(Int64(clamping: memory.residentBytes)),
                "peak_resident_bytes": .int(Int64(clamping: memory.peakResidentBytes)),
                "memory_warnings": .int(Int64(memory.warnings)),
            ]
            if let footprint = memory.footprintBytes { values["footprint_bytes"] = .int(Int64(clamping: footprint)) }
            if let warning = memory.lastWarning { values["last_memory_warning"] = .string(SentryTimestamp.rfc3339(warning)) }
            facts["memory"] = .object(values)
        } else {
            unknown.append(.string("memory: never sampled"))
        }
        facts["unknown"] = .array(unknown)
        return facts
    }

    func applyBeforeSend(_ event: SentryEvent) -> SentryEvent? {
        guard let hook = options.beforeSend else { return event }
        guard let edited = hook(event) else {
            discards.record(reason: "before_send", category: "error")
            return nil
        }
        return edited
    }
}
