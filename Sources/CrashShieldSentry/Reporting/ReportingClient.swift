import CrashShieldBase
import CrashShieldRecording
import CrashShieldProtocol
import Foundation
package import _CrashShieldCapture

/// Reporting as part of a start: one per process, created by the start (`CrashShieldSDK.start`
/// with `options.reporting`, `CrashCapture.start(_:launchProtection:reporting:)`), ended by
/// `stop()` and at a clean exit.
///
/// Everything lives in the report directory (capture's directory; without capture, launch
/// protection's `directoryWithoutCapture` or `CaptureOptions.defaultDirectory`): the installation
/// id, `session.json`, the outbox, and `reported-reports` (ids of reports already converted but
/// kept on disk for report sinks, so they are sent once).
///
/// Order of work:
/// 1. `init` only records the settings (no I/O: the start stays fast).
/// 2. `launchDecided` (called by launch protection before any repair step, or by the start when
///    launch protection does not run) sets up the installation id, `EventReporter`, this
///    launch's `SessionTracker`, the outbox and the transport; converts the crash reports found at
///    start into envelopes (the previous session closed `crashed` with its report, `abnormal` when
///    it vanished) and stores them; stores the new session's initial update; starts sending. All
///    of it on the reporting queue, which runs nothing before `beginWork` (called as the start
///    returns, so none of this competes with the start for the CPU), except when the previous run
///    crashed during launch: then it runs on the caller's thread and waits up to
///    `launchCrashFlushTimeout` for the send, so a crash-looping app is heard before its repair
///    steps run.
/// 3. `submitIncident` converts an incident on the reporting queue (after step 2) and submits it;
///    `launchLoopEnded` (launch protection: a launch that ran a repair step completed) submits
///    the event naming that step.
/// 4. `end` (clean exit, `stop`) stores the session's `exited` update and sends for at most
///    `exitFlushTimeout`, then closes sending (see `end`): after `end` returns, no thread of this
///    client touches the outbox, the transport or URLSession (within a bounded grace).
///
/// Forks: the client belongs to the process that created it. In a forked child (another pid)
/// every entry point is a no-op, `end` included: the child neither sends nor writes to the
/// parent's outbox, and its exit does not end the parent's session.
///
/// Drops (`beforeSend`, sampling) go straight into the outbox's discard counts (one counter): the
/// transport adds them as a client report to the next envelope it sends.
// @unchecked Sendable: the mutable state is read and written only under `lock`; the rest is immutable
package final class ReportingClient: @unchecked Sendable {
    /// Ids of reports converted while report sinks still need the files.
    static let reportedListFileName = "reported-reports"

    package let options: ReportingOptions
    package let directory: String
    let appName: String?
    let appVersion: String?
    let symbolicate: Bool
    /// Report files are removed once converted (false while report sinks still need them).
    let removeConvertedReports: Bool
    /// The reports found at start (capture's scan); nil: read the directory.
    private let pendingAtStart: [PendingReport]?
    /// The previous run's record (capture's start read it): its fatal hang or abnormal exit.
    private let previousRun: PreviousRunRecord?
    let transportOptions: TransportOptions
    let httpClient: (any EnvelopeHTTPClient)?

    /// Inactive until `beginWork`: work queued before waits for the start to return.
    private let queue = DispatchQueue(label: "crashshield.reporting", qos: .utility, attributes: .initiallyInactive)
    private let lock = Locked()
    private var decided = false
    private var ended = false
    private var working = false
    /// Set by `end` once its flush is over: a transport set up later is closed at once.
    private var sendingClosed = false
    /// Set as `end` returns: work the reporting queue still runs afterwards (the process may be
    /// exiting) writes nothing more.
    private var abandoned = false
    /// The transport once set up (under `lock`, so `end` can close it while the queue is busy).
    private var transport: EnvelopeTransport?
    /// The remote-configuration fetch this client started (under `lock`); `end` cancels it.
    private var remoteFetch: (cancellation: URLTaskCancellation, activation: RemoteConfigActivation)?
    /// The process that created the client; in any other (a forked child) it does nothing.
    private let ownerProcess = getpid()

    /// How long `end` waits, after its flush, for a running send pass and the reporting queue to
    /// stop (a cancelled request normally ends within milliseconds).
    package static let endGrace: Duration = .milliseconds(500)
    /// Set on the reporting queue (or, for a launch crash, on the start's thread before the queue
    /// gets any work); read on the queue.
    private var parts: Parts?

    struct Parts {
        let reporter: EventReporter
        let sessions: SessionTracker?
        let outbox: Outbox
        let transport: EnvelopeTransport
        let incidentConverter: IncidentEventConverter
        /// Names for incident and handled events' in-app frames (nil when `symbolicate` is off).
        let incidentSymbols: IncidentSymbols?
    }

    private static let currentBox = Locked<ReportingClient?>(nil)
    /// The client of this process; nil before a start with reporting and after `stop`.
    package static var current: ReportingClient? { currentBox.withLock { $0 } }

    /// A client that reads the reports pending in `directory` itself (no capture scan to take them from).
    package convenience init(options: ReportingOptions, directory: String, appName: String?, appVersion: String?,
                             symbolicate: Bool = true, transportOptions: TransportOptions = TransportOptions(),
                             httpClient: (any EnvelopeHTTPClient)? = nil) {
        self.init(options: options, directory: directory, appName: appName, appVersion: appVersion, symbolicate: symbolicate,
                  removeConvertedReports: true, pendingAtStart: nil, transportOptions: transportOptions, httpClient: httpClient)
    }

    init(options: ReportingOptions, directory: String, appName: String?, appVersion: String?,
         symbolicate: Bool, removeConvertedReports: Bool, pendingAtStart: [PendingReport]?,
         previousRun: PreviousRunRecord? = nil, transportOptions: TransportOptions = TransportOptions(), httpClient: (any EnvelopeHTTPClient)? = nil) {
        self.options = options
        self.directory = directory
        self.appName = appName
        self.appVersion = appVersion
        self.symbolicate = symbolicate
        self.removeConvertedReports = removeConvertedReports
        self.pendingAtStart = pendingAtStart
        self.previousRun = previousRun
        self.transportOptions = transportOptions
        self.httpClient = httpClient
    }

    /// Makes `client` the process's client (and registers the exit handler once). False when one
    /// is running already (it stays).
    package static func install(_ client: ReportingClient) -> Bool {
        var installed = false
        currentBox.withLock { current in
            if current == nil {
                current = client
                installed = true
            }
        }
        if installed {
            _ = exitHandlerRegistration
            RunWatch.setHangHandler { hang in ReportingClient.current?.submitAppHang(hang) }
        }
        return installed
    }

    private static let exitHandlerRegistration: Void = {
        // First, so OpenSSL's own exit cleanup is never registered after (and so run before) this
        // handler: see `OpenSSLExit`.
        OpenSSLExit.keepThroughExit()
        atexit { ReportingClient.current?.end() }
    }()

    /// Activates the remote configuration stored in `directory` for this run
    /// (`RemoteConfiguration.activate`: the first activation of a process wins) with the reporting
    /// DSN and `remoteConfigPublicKey`, and starts the background fetch of a newer one.
    /// The fetch starts from the reporting queue (`fetchRemoteConfigurationLater`), not from the
    /// start's thread: the first task of a process starts the concurrency runtime's threads.
    package static func activateRemoteConfiguration(_ options: ReportingOptions, directory: String, appVersion: String?) {
        var remote = RemoteConfigOptions(dsn: options.dsn, directory: directory)
        remote.publicKey = options.remoteConfigPublicKey
        remote.appVersion = appVersion
        remote.release = options.release
        let activation = RemoteConfiguration.activateWithoutFetch(remote)
        pendingFetch.withLock { $0 = (remote, activation) }
    }

    /// The fetch `activateRemoteConfiguration` left for the reporting queue.
    private static let pendingFetch = Locked<(RemoteConfigOptions, RemoteConfigActivation)?>(nil)

    /// Starts the pending fetch, unless `end` has begun (then it is left for the next start).
    private func startPendingFetch() {
        lock.lock()
        defer { lock.unlock() }
        guard !ended else { return }
        var fetch: (RemoteConfigOptions, RemoteConfigActivation)?
        Self.pendingFetch.withLock { fetch = $0; $0 = nil }
        if let (options, activation) = fetch {
            remoteFetch = (RemoteConfiguration.fetchInBackground(options, reportingTo: activation), activation)
        }
    }

    /// Ends the process's client (`end`) and forgets it. No-op when none runs.
    package static func stopCurrent() {
        var client: ReportingClient?
        currentBox.withLock { current in
            client = current
            current = nil
        }
        client?.end()
    }

    /// Lets the reporting queue run what was queued (setup, conversion, incidents) and everything
    /// after. The start calls it as it returns; `end`, `waitUntilIdle` and a launch crash call it
    /// too, so nothing waits for a queue that never runs. Idempotent.
    package func beginWork() {
        lock.lock()
        let first = !working
        working = true
        lock.unlock()
        if first { queue.activate() }
    }

    /// Launch protection decided how the previous run ended (nil: it does not run). The first
    /// call sets up and converts (see the type's comment); later calls do nothing.
    package func launchDecided(_ decision: LaunchDecision?) {
        lock.lock()
        let first = !decided
        decided = true
        lock.unlock()
        guard first else { return }
        if let lastRun = decision?.lastRun, lastRun.outcome == .crashed, lastRun.crashedDuringLaunch {
            // A crash at launch: heard before the repair steps and the app go on.
            beginWork()
            queue.sync { setUpAndConvert(decision) }
            queue.sync { parts?.transport }?.flush(timeout: options.launchCrashFlushTimeout)
            queue.async { [self] in startPendingFetch() }
        } else {
            queue.async { [self] in
                setUpAndConvert(decision)
                parts?.transport.sendInBackground()
                startPendingFetch()
            }
        }
    }

    /// Runs on the reporting queue.
    private func setUpAndConvert(_ decision: LaunchDecision?) {
        guard parts == nil else { return }
        let installationID = (try? InstallationID.load(directory: directory)) ?? UUID().uuidString.lowercased()
        guard let outbox = try? Outbox(directory: Outbox.directory(forReportDirectory: directory)) else { return }
        let reporter = EventReporter(options: options, installationID: installationID, discards: DiscardTally(forwardingTo: outbox))
        let transport = EnvelopeTransport(dsn: options.dsn, outbox: outbox, options: transportOptions,
                                          httpClient: httpClient ?? Self.testHTTPClientFactory.withLock { $0 }?())
        lock.lock()
        self.transport = transport
        let closeNow = sendingClosed
        lock.unlock()
        if closeNow { transport.close(grace: .zero) }  // set up after `end` gave up waiting: never sends
        let sessions = try? SessionTracker(directory: directory, release: options.effectiveRelease(processName: appName, appVersion: appVersion),
                                           environment: options.environment, installationID: installationID,
                                           launchID: decision?.launchID)
        let incidentConverter = reporter.incidentConverter(appVersion: appVersion)
        parts = Parts(reporter: reporter, sessions: sessions, outbox: outbox, transport: transport,
                      incidentConverter: incidentConverter,
                      incidentSymbols: symbolicate ? IncidentSymbols(inApp: incidentConverter.inApp, executable: incidentConverter.executable) : nil)

        // Crash reports of earlier runs, with the previous launch's session.
        let reported = readReportedList()
        var reports: [CrashReport] = []
        if let pendingAtStart {
            reports = pendingAtStart.compactMap(\.report)
        } else {
            reports = CrashReportStore(directory: directory).load(symbolicate: false).compactMap { try? $0.result.get() }
        }
        reports = reports.filter { !reported.contains($0.id) }
        if symbolicate { Symbolicator.symbolicate(&reports) }
        let context = CrashEventContext(consecutiveLaunchCrashes: decision?.consecutiveLaunchCrashes,
                                        repairStep: decision?.previousRunRepairStep,
                                        launchID: decision?.previousLaunchID ?? "")
        // The previous run's fatal hang or abnormal exit (its hang's frames symbolicated first).
        var previousRecord = previousRun
        if decision?.lastRun.outcome == .endedWithoutReport, var hang = previousRecord?.hang, let symbols = parts?.incidentSymbols {
            hang.symbolicate(with: symbols)
            previousRecord?.hang = hang
        }
        let previousRunEvent = reporter.previousRunEvent(lastRun: decision?.lastRun, previousLaunchID: decision?.previousLaunchID,
                                                         record: previousRecord, converter: incidentConverter)
        var stored = true
        for envelope in reporter.crashEnvelopes(reports: reports, sessions: sessions, context: context,
                                                previousRunCrashedWithoutReport: decision?.lastRun.reportLost ?? false,
                                                previousLaunchID: decision?.previousLaunchID, previousRunEvent: previousRunEvent) {
            // After `end` returned (the process may be exiting), nothing more is written; the
            // reports stay on disk and the next start converts them (same event ids).
            if isAbandoned { stored = false; break }
            do { try outbox.enqueue(envelope) } catch { stored = false }
        }
        // A report is let go only once its envelope is durable; otherwise the next start converts
        // it again (same event id: the server keeps one).
        if stored, !reports.isEmpty {
            if removeConvertedReports {
                for report in reports { if let path = report.file { unlink(path) } }
            } else {
                let stillPending = Set((pendingAtStart?.compactMap(\.report) ?? []).map(\.id))
                writeReportedList(reported.intersection(stillPending).union(reports.map(\.id)))
            }
        }
        if !isAbandoned, let start = sessions?.initialUpdate(), let envelope = reporter.sessionEnvelope([start]) {
            _ = try? outbox.enqueue(envelope)
        }
    }

    private var isAbandoned: Bool {
        lock.lock()
        defer { lock.unlock() }
        return abandoned
    }

    /// False in a forked child of the process that created the client.
    private var inOwnerProcess: Bool { getpid() == ownerProcess }

    private static let testHTTPClientFactory = Locked<(@Sendable () -> any EnvelopeHTTPClient)?>(nil)

    /// Test seam (the `shield reporting-probe` child): the HTTP client that transports set up
    /// later by clients without their own `httpClient` use; nil (the default): URLSession.
    package static func setHTTPClientForTesting(_ make: (@Sendable () -> any EnvelopeHTTPClient)?) {
        testHTTPClientFactory.withLock { $0 = make }
    }

    /// Converts `record` into an incident event (aggregated, sampled, `beforeSend`) and submits it,
    /// on the reporting queue. Nothing after `end`.
    package func submitIncident(_ record: IncidentRecord) {
        guard inOwnerProcess else { return }
        queue.async { [self] in
            guard let parts, !isEnded else { return }
            var record = record
            parts.incidentSymbols?.symbolicate(&record.frames)
            if let envelope = parts.reporter.incidentEnvelope(record, converter: parts.incidentConverter, session: parts.sessions) {
                try? parts.transport.submit(envelope)
            }
        }
    }

    /// Converts a hang that ended in this process into its event (`appHangEnvelope`: the scope
    /// now, symbolicated like an incident) and submits it on the reporting queue. Nothing after `end`.
    package func submitAppHang(_ hang: AppHang) {
        guard inOwnerProcess, !isEnded else { return }
        let scope = CrashScope.snapshot(lastBreadcrumbs: CrashScope.maxBreadcrumbs)
        queue.async { [self] in
            guard let parts, !isEnded else { return }
            var hang = hang
            if let symbols = parts.incidentSymbols { hang.symbolicate(with: symbols) }
            if let envelope = parts.reporter.appHangEnvelope(hang, converter: parts.incidentConverter, session: parts.sessions, scope: scope) {
                try? parts.transport.submit(envelope)
            }
        }
    }

    /// Converts an event the app reported itself (scope taken now, `beforeSend`) and submits it
    /// on the reporting queue; returns its event id, or nil after `end` (nothing is sent then).
    package func submitHandled(_ handled: IncidentEventConverter.Handled, level: SentryEvent.Level,
                               frames: [IncidentRecord.Frame], threadID: UInt64, isMainThread: Bool) -> String? {
        guard inOwnerProcess, !isEnded else { return nil }
        let eventID = SentryID.random()
        let scope = CrashScope.snapshot(lastBreadcrumbs: CrashScope.maxBreadcrumbs)
        queue.async { [self] in
            guard let parts, !isEnded else { return }
            var frames = frames
            parts.incidentSymbols?.symbolicate(&frames)
            if let envelope = parts.reporter.handledEnvelope(
                handled, level: level, frames: frames, threadID: threadID, isMainThread: isMainThread, eventID: eventID,
                converter: parts.incidentConverter, session: parts.sessions, scope: scope) {
                try? parts.transport.submit(envelope)
            }
        }
        return eventID
    }

    /// Waits until what was submitted so far is converted and stored, then sends what is pending,
    /// for at most `timeout` in all; true when nothing was left unsent in time.
    package func flush(timeout: Duration) -> Bool {
        guard inOwnerProcess, !isEnded else { return false }
        let deadline = ContinuousClock.now + timeout
        guard waitUntilIdle(timeout: timeout) else { return false }
        lock.lock()
        let transport = self.transport
        lock.unlock()
        let left = deadline - ContinuousClock.now
        guard let transport, left > .zero else { return false }
        let result = transport.flush(timeout: left)
        return result.stop == nil && result.remaining == 0
    }

    /// Launch protection's launch completed after the repair step `step` ran at its start (it
    /// ended a loop of `consecutiveLaunchCrashes` launch crashes): submits
    /// `EventReporter.launchLoopEndedEnvelope` on the reporting queue. Nothing after `end`; a call
    /// before `end` is stored before `end`'s own work (the queue is serial), so an app that exits
    /// right after its launch completed still sends it within `exitFlushTimeout`, unless the
    /// queue was still busy when `end` returned: then it stores nothing.
    package func launchLoopEnded(step: String, consecutiveLaunchCrashes: Int, stepFailed: Bool, launchID: String) {
        guard !isEnded, inOwnerProcess else { return }
        queue.async { [self] in
            // Reached after `end` returned (its wait for the queue ran out): the process may be
            // exiting, so nothing is stored, like the rest of the queue's work then.
            guard let parts, !isAbandoned else { return }
            if let envelope = parts.reporter.launchLoopEndedEnvelope(
                repairStep: step, consecutiveLaunchCrashes: consecutiveLaunchCrashes, stepFailed: stepFailed,
                launchID: launchID, converter: parts.incidentConverter) {
                try? parts.transport.submit(envelope)
            }
        }
    }

    private var isEnded: Bool {
        lock.lock()
        defer { lock.unlock() }
        return ended
    }

    /// A clean end (exit, `stop`): stores the session's `exited` update (unless this process wrote
    /// a crash report: the next start closes the session `crashed`) and sends what is pending, for
    /// at most `exitFlushTimeout` in all. Once; a no-op in a forked child.
    ///
    /// Then sending is closed for good (`EnvelopeTransport.close`): no send pass starts any more,
    /// the request in flight is cancelled, and a transport set up later never sends. The
    /// remote-configuration fetch is cancelled too (one not started yet is left for the next
    /// start). `end` waits at most `endGrace` (500 ms) for the running pass, the fetch and the
    /// reporting queue to stop (the queue may still store: setup, conversion, the `exited`
    /// update); what the queue runs after `end` returned stores nothing. So in all it returns within
    /// `exitFlushTimeout` + `endGrace`, and afterwards (unless a grace ran out) no thread of this
    /// client touches the outbox, the transport or URLSession while `exit` goes on. Nothing is
    /// lost: envelopes leave the outbox only once the server answered, reports only once their
    /// envelopes are stored, so what was not sent is sent by the next launch.
    package func end() {
        guard inOwnerProcess else { return }
        lock.lock()
        let first = !ended
        ended = true
        decided = true  // a client ended before launch protection decided sets up nothing later
        lock.unlock()
        guard first else { return }
        beginWork()
        let deadline = ContinuousClock.now + options.exitFlushTimeout
        let done = DispatchSemaphore(value: 0)
        // @unchecked Sendable: written by the queue before it signals `done`, read only after `done`
        final class Box: @unchecked Sendable { var transport: EnvelopeTransport? }
        let box = Box()
        queue.async { [self] in
            // Reached only after `end` returned (the process may be exiting): write nothing; the
            // next start closes this session as `abnormal`.
            if isAbandoned {
                done.signal()
                return
            }
            if let parts {
                if !CrashCapture.reportWrittenThisRun, let end = parts.sessions?.end(.exited),
                   let envelope = parts.reporter.sessionEnvelope([end]) {
                    _ = try? parts.outbox.enqueue(envelope)
                }
                box.transport = parts.transport
            }
            done.signal()
        }
        let left = deadline - ContinuousClock.now
        if left > .zero, done.wait(timeout: .now() + .nanoseconds(Int(clamping: left.nanoseconds))) == .success,
           let transport = box.transport {
            let remaining = deadline - ContinuousClock.now
            if remaining > .zero { transport.flush(timeout: remaining) }
        }
        closeSending()
    }

    /// Closes the transport (set up or not yet) and cancels the remote-configuration fetch, then
    /// waits, at most `endGrace` in all, for the running pass, the fetch and the reporting
    /// queue's current work to stop.
    private func closeSending() {
        let graceEnds = ContinuousClock.now + Self.endGrace
        lock.lock()
        sendingClosed = true
        let transport = self.transport
        let fetch = remoteFetch
        lock.unlock()
        fetch?.cancellation.cancel()
        transport?.close(grace: Self.endGrace)
        if let fetch {
            let left = graceEnds - ContinuousClock.now
            if left > .zero { _ = fetch.activation.waitForBackgroundFetch(timeout: left) }
        }
        let left = graceEnds - ContinuousClock.now
        if left > .zero {
            let idle = DispatchSemaphore(value: 0)
            queue.async { idle.signal() }
            _ = idle.wait(timeout: .now() + .nanoseconds(Int(clamping: left.nanoseconds)))
        }
        lock.lock()
        abandoned = true
        lock.unlock()
    }

    /// Waits until the work queued so far (setup, conversion, incidents) is done, for tests and
    /// the bench; false when `timeout` passed first.
    package func waitUntilIdle(timeout: Duration) -> Bool {
        beginWork()
        let done = DispatchSemaphore(value: 0)
        queue.async { done.signal() }
        return done.wait(timeout: .now() + .nanoseconds(Int(clamping: timeout.nanoseconds))) == .success
    }

    private var reportedListPath: String { "\(directory)/\(Self.reportedListFileName)" }

    private func readReportedList() -> Set<String> {
        guard let data = FileManager.default.contents(atPath: reportedListPath) else { return [] }
        return Set(String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init))
    }

    private func writeReportedList(_ ids: Set<String>) {
        let text = ids.sorted().map { $0 + "\n" }.joined()
        _ = try? DurableFile.write(Data(text.utf8), to: reportedListPath)
    }
}
