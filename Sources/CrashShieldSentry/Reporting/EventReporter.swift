import CrashShieldBase
import CrashShieldRecording
import CrashShieldProtocol
import Foundation

/// Builds the envelopes reporting sends: crashes (with their session), incidents (aggregated,
/// sampled), sessions and client reports. It applies `beforeSend` and the incident sample rate
/// and counts what they drop; storing and sending the envelopes is the outbox's and transport's
/// job. Thread-safe.
// @unchecked Sendable: only immutable properties; the mutable ones are themselves thread-safe
package final class EventReporter: @unchecked Sendable {
    package let options: ReportingOptions
    /// `did` of sessions; also every event's `user.id` when the app's user has no id.
    package let installationID: String
    /// What was dropped, for the next client report.
    package let discards: DiscardTally
    let aggregator = IncidentAggregator()
    let random: @Sendable () -> Double
    /// Distinguishes this process in incident event ids.
    let processInstance: String
    let images = ImageIdentityCache()

    /// - Parameters:
    ///   - random: a number in 0..<1 per incident, for sampling. Default: the system generator.
    package init(options: ReportingOptions, installationID: String, discards: DiscardTally = DiscardTally(),
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
                processInstance: String = EventReporter.randomProcessInstance()) {
        self.options = options
        self.installationID = installationID
        self.discards = discards
        self.random = random
        self.processInstance = processInstance
    }

    /// A random id in `SentryID.random()`'s form (32 lowercase hex digits of a random UUID),
    /// written from the UUID's bytes: `SentryID.random()` formats and edits a string, which cost
    /// ~0.75 M instructions of the reporting setup (the first `replacingOccurrences` of a process).
    static func randomProcessInstance() -> String {
        let digits = Array("0123456789abcdef".utf8)
        let bytes = withUnsafeBytes(of: UUID().uuid) { Array($0) }
        var hex: [UInt8] = []
        hex.reserveCapacity(32)
        for byte in bytes {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: hex, as: UTF8.self)
    }

    /// The envelopes for the crash reports found at start, oldest first, and for the previous
    /// launch's session: the newest report of that launch carries its `crashed` update in the
    /// same envelope; when no report belongs to it, an `abnormal` update goes in an envelope of
    /// its own (last), or a `crashed` one when `previousRunCrashedWithoutReport` (launch
    /// protection's `lastRun.reportLost`). A report dropped by `beforeSend` is counted
    /// (`before_send`, `error`); its session update is still sent alone, so crash-free rates stay
    /// right.
    ///
    /// `previousRunEvent` (`previousRunEvent(lastRun:...)`: the previous run's abnormal exit or
    /// fatal hang) goes last, in the envelope of that run's `abnormal` update.
    ///
    /// `previousLaunchID` (launch protection's id of the previous launch): when that launch's
    /// report has no stored session (it crashed before its session's first write), the report
    /// carries a session that starts and ends `crashed` in one update
    /// (`SessionTracker.crashedUpdate(unrecordedLaunchOf:)`).
    package func crashEnvelopes(reports: [CrashReport], sessions: SessionTracker?, context: CrashEventContext = CrashEventContext(),
                               previousRunCrashedWithoutReport: Bool = false, previousLaunchID: String? = nil,
                               previousRunEvent: SentryEvent? = nil) -> [Envelope] {
        let converter = CrashEventConverter(options: options)
        let ordered = reports.sorted { ($0.timestampNs ?? 0, $0.id) < ($1.timestampNs ?? 0, $1.id) }
        let sessionReport = ordered.last { sessions?.reportBelongsToPrevious($0) == true }
        let unrecordedReport = sessionReport != nil || previousLaunchID == nil ? nil
            : ordered.last { $0.launchId == previousLaunchID && $0.crash?.recovered != true }
        var envelopes: [Envelope] = []
        for report in ordered {
            let session = report == sessionReport ? sessions?.closePrevious(crash: report)
                : report == unrecordedReport ? sessions?.crashedUpdate(unrecordedLaunchOf: report) : nil
            var event = converter.event(from: report, context: context)
            event.apply(scope: report.scope, installationID: installationID)
            if let incident = reportOnlyIncidentEnvelope(report, crashEvent: event) { envelopes.append(incident) }
            if let edited = apply(event) {
                if let envelope = try? Envelope.event(edited, session: session, sdk: ReportingOptions.sdk, dsn: options.dsn) {
                    envelopes.append(envelope)
                }
            } else if let session, let envelope = sessionEnvelope([session]) {
                envelopes.append(envelope)
            }
        }
        let abnormal = sessions?.closePrevious(crash: nil, crashedWithoutReport: previousRunCrashedWithoutReport)
        // The previous run's abnormal exit or fatal hang travels with its `abnormal` update.
        if let previousRunEvent, let edited = apply(previousRunEvent),
           let envelope = try? Envelope.event(edited, session: abnormal, sdk: ReportingOptions.sdk, dsn: options.dsn) {
            envelopes.append(envelope)
        } else if let abnormal, let envelope = sessionEnvelope([abnormal]) {
            envelopes.append(envelope)
        }
        return envelopes
    }

    /// For a crash that a report-only guard let through (`exception.report_only_guard`): the
    /// incident that guard recorded (the crashed thread's latest report-only one in the report),
    /// as the incident event the process had no time to send, sent beside the crash it explains.
    /// Its frames are the crash's, its fingerprint the incident's (so it joins the issue of the
    /// same misuse reported live), its release, contexts, debug images and scope the crash
    /// event's; the id is derived from the report, so a re-sent report gives the same event. Nil
    /// when there is none, or `beforeSend` drops it (counted: `before_send`).
    func reportOnlyIncidentEnvelope(_ report: CrashReport, crashEvent: SentryEvent) -> Envelope? {
        guard let guardName = report.exception?.reportOnlyGuard,
              let incident = (report.incidents ?? []).filter({ $0.guard == guardName && $0.policy == "reportOnly" })
                  .max(by: { ($0.sequence ?? 0) < ($1.sequence ?? 0) })
        else { return nil }
        // The incident's stack starts at the app's call site, as a live incident's does: below the
        // guard's own frames (the exception's machinery and the hook are above it).
        let crashFrames = report.crashedThread?.frames ?? []
        let callSite = (crashFrames.lastIndex { $0.sdk == true }).map { $0 + 1 } ?? crashFrames.startIndex
        let frames = crashFrames[callSite...].compactMap { frame -> IncidentRecord.Frame? in
            guard let address = frame.addressValue else { return nil }
            var converted = IncidentRecord.Frame(address: address, imagePath: frame.image ?? "", imageOffset: frame.offsetValue)
            (converted.function, converted.file, converted.line) = (frame.function, frame.file, frame.line)
            return converted
        }
        let record = IncidentRecord(
            guardName: guardName, policy: "reportOnly", className: incident.class ?? "", selector: incident.selector ?? "",
            isClassMethod: incident.classMethod == true, reason: incident.reason ?? "", frames: frames,
            threadID: report.crash?.threadId ?? 0, isMainThread: report.crash?.mainThread == true,
            wallTime: Date(timeIntervalSince1970: Double(report.timestampNs ?? 0) / 1e9),
            fingerprint: incident.fingerprint.flatMap { UInt64($0.hasPrefix("0x") ? String($0.dropFirst(2)) : $0, radix: 16) } ?? 0,
            count: max(incident.count ?? 1, 1), isFirstOccurrence: true, scope: report.scope)
        let converter = IncidentEventConverter(
            release: crashEvent.release ?? "", dist: crashEvent.dist, environment: crashEvent.environment ?? options.environment,
            inApp: InAppClassifier(include: options.inAppInclude, exclude: options.inAppExclude),
            executable: report.process?.executable, contexts: crashEvent.contexts, platform: crashEvent.platform)
        var event = converter.event(from: record, occurrences: record.count, processInstance: report.id)
        event.eventID = SentryID.derived(from: "crashshield.report-only-incident:" + report.id)
        event.debugMeta = crashEvent.debugMeta
        event.extra?["crashshield.report_id"] = .string(report.id)
        event.apply(scope: report.scope, installationID: installationID)
        guard let edited = apply(event) else { return nil }
        return try? Envelope.event(edited, sdk: ReportingOptions.sdk, dsn: options.dsn)
    }

    /// The envelope for an incident, or nil when it adds no event (a repeat below the next power
    /// of ten: `IncidentAggregator`), was sampled out (counted: `sample_rate`) or dropped by
    /// `beforeSend` (counted: `before_send`). A sent incident counts as an error in `session`.
    package func incidentEnvelope(_ record: IncidentRecord, converter: IncidentEventConverter, session: SessionTracker? = nil) -> Envelope? {
        guard let occurrences = aggregator.occurrencesToReport(record) else { return nil }
        if options.incidentSampleRate < 1, !(random() < options.incidentSampleRate) {
            discards.record(reason: "sample_rate", category: "error")
            return nil
        }
        var event = converter.event(from: record, occurrences: occurrences, processInstance: processInstance)
        event.apply(scope: record.scope, installationID: installationID)
        guard let edited = apply(event) else { return nil }
        session?.recordError()
        return try? Envelope.event(edited, sdk: ReportingOptions.sdk, dsn: options.dsn)
    }

    /// The envelope for an event the app reported itself (`Handled`), with the app's scope as it
    /// is now; nil when `beforeSend` drops it (counted: `before_send`). Counts as an error in
    /// `session`.
    package func handledEnvelope(_ handled: IncidentEventConverter.Handled, level: SentryEvent.Level,
                                 frames: [IncidentRecord.Frame], threadID: UInt64, isMainThread: Bool, eventID: String,
                                 converter: IncidentEventConverter, session: SessionTracker? = nil,
                                 scope: CrashScope.Snapshot? = CrashScope.snapshot(lastBreadcrumbs: CrashScope.maxBreadcrumbs)) -> Envelope? {
        var event = converter.event(handled: handled, level: level, frames: frames, threadID: threadID,
                                    isMainThread: isMainThread, eventID: eventID)
        event.apply(scope: scope, installationID: installationID)
        guard let edited = apply(event) else { return nil }
        session?.recordError()
        return try? Envelope.event(edited, sdk: ReportingOptions.sdk, dsn: options.dsn)
    }

    /// The event that a launch-crash loop ended: the launch that ran `repairStep` at its start
    /// (after `consecutiveLaunchCrashes` launch crashes in a row) completed. `level: info`, a
    /// message naming the step, tags `launch.repair_step` (the step), `launch.consecutive_crashes`
    /// (the loop's length) and `launch.phase` = `running`; grouped per step
    /// (`["crashshield.launch-loop-ended", step]`). Release, environment and contexts are the
    /// incidents' (`converter`); the scope is `scope` (default: the app's scope now, with the
    /// `CrashScope.incidentBreadcrumbs` most recent breadcrumbs). Its id is derived from
    /// `launchID`, so one launch gives one event.
    /// Nil when `beforeSend` drops it (counted: `before_send`).
    package func launchLoopEndedEnvelope(repairStep: String, consecutiveLaunchCrashes: Int, stepFailed: Bool, launchID: String,
                                         converter: IncidentEventConverter, now: Date = Date(),
                                         scope: CrashScope.Snapshot? = CrashScope.snapshot(lastBreadcrumbs: CrashScope.incidentBreadcrumbs)) -> Envelope? {
        let step = String(repairStep.prefix(200))
        var event = converter.baseEvent(eventID: SentryID.derived(from: "crashshield.launch-loop-ended:" + launchID),
                                        timestamp: now, level: .info)
        let crashes = consecutiveLaunchCrashes == 1 ? "1 launch crash" : "\(consecutiveLaunchCrashes) launch crashes in a row"
        event.logentry = SentryEvent.LogEntry(
            formatted: "Launch completed after repair step \(step)\(stepFailed ? " (the step failed or timed out)" : "") ended a loop of \(crashes)")
        event.fingerprint = ["crashshield.launch-loop-ended", step]
        event.tags = ["launch.phase": "running", "launch.repair_step": step,
                      "launch.consecutive_crashes": String(consecutiveLaunchCrashes)]
        event.extra = ["crashshield.launch_id": .string(launchID), "crashshield.repair_step_failed": .bool(stepFailed)]
        event.apply(scope: scope, installationID: installationID)
        guard let edited = apply(event) else { return nil }
        return try? Envelope.event(edited, sdk: ReportingOptions.sdk, dsn: options.dsn)
    }

    /// The converter for incidents of this process: release, dist and environment from the
    /// options, contexts from this machine, `debug_meta` from the frames' image files (read once
    /// per image; an image replaced on disk since it was loaded gives the new file's build id).
    package func incidentConverter(appVersion: String? = nil) -> IncidentEventConverter {
        #if os(Linux)
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments.first
        #else
        let executable = Bundle.main.executablePath ?? CommandLine.arguments.first  // no /proc on Darwin
        #endif
        let name = executable.map { ($0 as NSString).lastPathComponent }
        var system = utsname()
        uname(&system)
        func text<T>(_ field: T) -> String {
            withUnsafeBytes(of: field) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        }
        let sysname = text(system.sysname)
        let arch = CrashEventConverter.sentryArch(text(system.machine))
        #if canImport(Darwin)
        let platform = "cocoa"
        #else
        let platform = "native"
        #endif
        return IncidentEventConverter(
            release: options.effectiveRelease(processName: name, appVersion: appVersion), dist: options.dist,
            environment: options.environment, inApp: InAppClassifier(include: options.inAppInclude, exclude: options.inAppExclude),
            executable: executable,
            contexts: SentryEvent.Contexts(
                os: SentryEvent.OSContext(name: sysname, version: text(system.release), kernelVersion: text(system.version)),
                device: arch.map { SentryEvent.DeviceContext(arch: $0) },
                app: SentryEvent.AppContext(appName: name, appVersion: appVersion, appBuild: options.dist)),
            platform: platform,
            imageIdentity: { [images] path in images.identity(of: path) })
    }

    /// An envelope of session updates; nil for none.
    package func sessionEnvelope(_ updates: [SessionUpdate]) -> Envelope? {
        guard !updates.isEmpty else { return nil }
        return try? Envelope.sessions(updates, sdk: ReportingOptions.sdk, dsn: options.dsn)
    }

    /// A client report of what was dropped since the last one; nil when nothing was.
    package func clientReportEnvelope(now: Date = Date()) -> Envelope? {
        guard let report = discards.takeClientReport(now: now) else { return nil }
        return try? Envelope.clientReport(report, sdk: ReportingOptions.sdk, dsn: options.dsn)
    }

    private func apply(_ event: SentryEvent) -> SentryEvent? {
        guard let hook = options.beforeSend else { return event }
        guard let edited = hook(event) else {
            discards.record(reason: "before_send", category: "error")
            return nil
        }
        return edited
    }
}
