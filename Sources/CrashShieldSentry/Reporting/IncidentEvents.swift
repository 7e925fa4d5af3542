import CrashShieldBase
import CrashShieldRecording
import CrashShieldProtocol
import Foundation

/// Turns an incident into a Sentry event: `level: warning`, one exception with the guard as its
/// type, the reason as its value and `mechanism {type: "crashshield.guard", handled: true}`, the
/// call site's frames caller → callee, and the incident's own fingerprint
/// (`["crashshield.incident", guard, fingerprint]`), so every occurrence of one bug is one issue.
package struct IncidentEventConverter: Sendable {
    package var release: String
    package var dist: String?
    package var environment: String
    package var inApp: InAppClassifier
    /// Path of the running executable (in-app decisions).
    package var executable: String?
    /// Contexts sent with every incident (os, device, app): the same for a whole process.
    package var contexts: SentryEvent.Contexts?
    package var platform: String
    /// The identity of the image at a path, for `debug_meta` (so the server can symbolicate the
    /// frames); images it returns nil for are left out. Default: none (no `debug_meta`).
    /// `EventReporter.incidentConverter` reads the image files (`ImageIdentityCache`).
    package var imageIdentity: (@Sendable (String) -> ImageIdentity?)?

    package init(release: String, dist: String?, environment: String, inApp: InAppClassifier = InAppClassifier(),
                executable: String? = nil, contexts: SentryEvent.Contexts? = nil, platform: String = "native",
                imageIdentity: (@Sendable (String) -> ImageIdentity?)? = nil) {
        self.release = release
        self.dist = dist
        self.environment = environment
        self.inApp = inApp
        self.executable = executable
        self.contexts = contexts
        self.platform = platform
        self.imageIdentity = imageIdentity
    }

    /// The event for `record`, reporting `occurrences` (the count at this report). Its id is
    /// derived from the fingerprint, the process and the count, so converting the same
    /// occurrence twice gives the same id.
    package func event(from record: IncidentRecord, occurrences: Int, processInstance: String) -> SentryEvent {
        var event = baseEvent(
            eventID: SentryID.derived(from: "crashshield.incident:\(processInstance):\(record.fingerprintHex):\(occurrences)"),
            timestamp: record.wallTime, level: .warning)
        var exception = SentryEvent.ExceptionValue(
            type: record.guardName, value: record.reason,
            mechanism: SentryEvent.Mechanism(
                type: "crashshield.guard", handled: true, description: record.methodName,
                data: ["policy": .string(record.policy), "method": .string(record.methodName)]),
            stacktrace: stacktrace(record.frames), threadID: record.threadID)
        exception.module = record.className.isEmpty ? nil : record.className
        event.exception = SentryEvent.Values([exception])
        event.threads = SentryEvent.Values([SentryEvent.Thread(id: record.threadID, current: true, main: record.isMainThread)])
        event.debugMeta = debugMeta(record.frames)
        event.fingerprint = ["crashshield.incident", record.guardName, record.fingerprintHex]
        event.tags = ["crashshield.guard": record.guardName, "crashshield.policy": record.policy,
                      "crashshield.incident_count": String(occurrences)]
        event.extra = ["crashshield.occurrences": .int(Int64(clamping: occurrences)),
                       "crashshield.class": .string(record.className), "crashshield.selector": .string(record.selector),
                       "crashshield.class_method": .bool(record.isClassMethod),
                       "crashshield.fingerprint": .string(record.fingerprintHex)]
        return event
    }
}

extension IncidentEventConverter {
    /// What the app reports itself (`CrashShieldSDK.capture(error:)`, `capture(message:)`).
    package enum Handled: Sendable {
        /// An error: its type name and description.
        case error(type: String, description: String)
        case message(String)
    }

    /// The event for something the app reported itself: `level` as given; an error is one
    /// exception (`type`, `value`, mechanism `generic`, handled) with the caller's frames, a
    /// message is a `logentry` with the frames as the thread's stack. Grouped by the server
    /// (type and frames, or the message).
    package func event(handled: Handled, level: SentryEvent.Level, frames: [IncidentRecord.Frame], threadID: UInt64,
                       isMainThread: Bool, eventID: String, timestamp: Date = Date()) -> SentryEvent {
        var event = baseEvent(eventID: eventID, timestamp: timestamp, level: level)
        switch handled {
        case .error(let type, let description):
            event.exception = SentryEvent.Values([SentryEvent.ExceptionValue(
                type: type, value: description, mechanism: SentryEvent.Mechanism(type: "generic", handled: true),
                stacktrace: stacktrace(frames), threadID: threadID)])
            event.threads = SentryEvent.Values([SentryEvent.Thread(id: threadID, current: true, main: isMainThread)])
        case .message(let text):
            event.logentry = SentryEvent.LogEntry(formatted: text)
            var thread = SentryEvent.Thread(id: threadID, current: true, main: isMainThread)
            thread.stacktrace = stacktrace(frames)
            event.threads = SentryEvent.Values([thread])
        }
        event.debugMeta = debugMeta(frames)
        return event
    }

    /// An event of this process with no content yet: id, time, level, logger, release, dist,
    /// environment, SDK and contexts.
    func baseEvent(eventID: String, timestamp: Date, level: SentryEvent.Level) -> SentryEvent {
        var event = SentryEvent(eventID: eventID, timestamp: SentryTimestamp.rfc3339(timestamp), platform: platform)
        event.level = level
        event.logger = "crashshield"
        event.release = release
        event.dist = dist
        event.environment = environment
        event.sdk = ReportingOptions.sdk
        event.contexts = contexts
        return event
    }

    /// `frames` (return addresses, call site first) as a stack trace, caller → callee.
    func stacktrace(_ frames: [IncidentRecord.Frame]) -> SentryEvent.Stacktrace? {
        let converted = frames.map { frame -> SentryEvent.Frame in
            var result = SentryEvent.Frame(instructionAddr: CrashEventConverter.hex(frame.address), function: frame.function)
            result.filename = frame.file
            result.lineno = frame.line
            if !frame.imagePath.isEmpty {
                result.package = frame.imagePath
                result.inApp = inApp.isInApp(imagePath: frame.imagePath, executable: executable)
                if let offset = frame.imageOffset, offset <= frame.address {
                    result.imageAddr = CrashEventConverter.hex(frame.address - offset)
                }
            }
            return result
        }
        return converted.isEmpty ? nil : SentryEvent.Stacktrace(frames: converted.reversed(), instructionAddrAdjustment: "all")
    }

    /// `debug_meta` for the images of `frames` (`imageIdentity`), nil for none.
    func debugMeta(_ frames: [IncidentRecord.Frame]) -> SentryEvent.DebugMeta? {
        guard let imageIdentity else { return nil }
        var seen = Set<String>()
        var images: [SentryEvent.DebugImage] = []
        for frame in frames where !frame.imagePath.isEmpty && !seen.contains(frame.imagePath) {
            seen.insert(frame.imagePath)
            guard let offset = frame.imageOffset, offset <= frame.address, let identity = imageIdentity(frame.imagePath),
                  let image = identity.debugImage(path: frame.imagePath, base: frame.address - offset, arch: contexts?.device?.arch)
            else { continue }
            images.append(image)
        }
        return images.isEmpty ? nil : SentryEvent.DebugMeta(images: images)
    }
}

/// Decides which incident occurrences become events, so a misuse in a loop is not one event
/// per occurrence.
///
/// Rule: the first occurrence of a fingerprint in a process is an event; after that, an event
/// is sent when the count reaches the next power of ten (10, 100, 1000, ...), carrying the count
/// (`crashshield.occurrences` extra, `crashshield.incident_count` tag). Count updates in between
/// send nothing. A fingerprint repeated n times gives at most 1 + ⌊log10 n⌋ events per process,
/// all grouped into one issue by their fingerprint. Thread-safe.
package final class IncidentAggregator: Sendable {
    private let reported = Locked<[UInt64: Int]>([:])

    package init() {}

    /// The occurrence count to report for `record`, or nil when it adds no event.
    package func occurrencesToReport(_ record: IncidentRecord) -> Int? {
        reported.withLock { reported in
            let count = max(record.count, 1)
            guard let last = reported[record.fingerprint] else {
                // The first time this process reports the fingerprint (a count update whose first
                // occurrence was not seen by reporting counts as first, with its count).
                reported[record.fingerprint] = count
                return count
            }
            guard Self.decade(count) > Self.decade(last) else { return nil }
            reported[record.fingerprint] = count
            return count
        }
    }

    /// ⌊log10 n⌋ for n ≥ 1.
    static func decade(_ value: Int) -> Int {
        var value = value
        var digits = 0
        while value >= 10 {
            value /= 10
            digits += 1
        }
        return digits
    }
}

/// Counts what reporting dropped, to be sent as a `client_report`. Thread-safe; in memory.
package final class DiscardTally: Sendable {
    private let counts = Locked<[Key: Int]>([:])

    struct Key: Hashable { let reason: String; let category: String }

    /// Where counts go instead of this tally (the outbox's discard counts, so there is one
    /// counter: the transport reports them with the next envelope it sends).
    private let forward: (@Sendable (String, String, Int) -> Void)?

    package init() { forward = nil }

    /// A tally that adds every drop to `outbox`'s discard counts instead of keeping its own;
    /// `takeClientReport` then returns nil (the transport reports them).
    package init(forwardingTo outbox: Outbox) {
        forward = { reason, category, quantity in
            outbox.recordDiscards([(Outbox.DiscardKey(reason: reason, category: category), quantity)])
        }
    }

    /// Counts `quantity` items of `category` ("error", "session", ...) dropped for `reason`
    /// (`sample_rate`, `before_send`, `queue_overflow`, ...).
    package func record(reason: String, category: String, quantity: Int = 1) {
        guard quantity > 0 else { return }
        if let forward { return forward(reason, category, quantity) }
        counts.withLock { $0[Key(reason: reason, category: category), default: 0] += quantity }
    }

    /// The counts so far as a client report, and resets them; nil when nothing was dropped.
    package func takeClientReport(now: Date = Date()) -> ClientReport? {
        let taken = counts.withLock { counts in
            defer { counts = [:] }
            return counts
        }
        guard !taken.isEmpty else { return nil }
        let entries = taken.sorted { ($0.key.reason, $0.key.category) < ($1.key.reason, $1.key.category) }
            .map { ClientReport.DiscardedEvents(reason: $0.key.reason, category: $0.key.category, quantity: $0.value) }
        return ClientReport(timestamp: SentryTimestamp.rfc3339(now), discardedEvents: entries)
    }
}

/// Function, file and line for the in-app frames of incident and handled events, found as crash
/// reports' are (`Symbolicator`: dladdr, then llvm-symbolizer or addr2line on the image file), so
/// that an incident's issue names the app function that made the call. Runs on the reporting
/// queue only (it blocks on the external tool); a frame's answer is kept for the process's life,
/// so a repeated call site costs nothing the second time.
// @unchecked Sendable: `answers` is used on the reporting queue only (one thread at a time)
package final class IncidentSymbols: @unchecked Sendable {
    private struct Answer { var function: String?, file: String?, line: Int? }
    private var answers: [String: Answer] = [:]
    private let isInApp: (String) -> Bool

    package init(inApp: InAppClassifier, executable: String?) {
        isInApp = { inApp.isInApp(imagePath: $0, executable: executable) }
    }

    package func symbolicate(_ frames: inout [IncidentRecord.Frame]) {
        func key(_ frame: IncidentRecord.Frame) -> String? {
            guard let offset = frame.imageOffset, !frame.imagePath.isEmpty, isInApp(frame.imagePath) else { return nil }
            return frame.imagePath + "\u{0}" + String(offset, radix: 16)
        }
        let missing = frames.filter { frame in key(frame).map { answers[$0] == nil } ?? false }
        if !missing.isEmpty {
            // The frames as a report's crashed thread (return addresses), the form Symbolicator reads.
            let entries: [[String: String]] = missing.map { frame in
                ["address": CrashEventConverter.hex(frame.address), "image": frame.imagePath,
                 "offset": CrashEventConverter.hex(frame.imageOffset ?? 0)]
            }
            let document: [String: Any] = ["id": "incident", "crashed_thread": ["first_frame_is_pc": false, "frames": entries]]
            guard let data = try? JSONSerialization.data(withJSONObject: document),
                  var report = try? CrashReport.decode(Array(data)) else { return }
            Symbolicator.symbolicate(&report)
            for (frame, named) in zip(missing, report.crashedThread?.frames ?? []) {
                if let key = key(frame) { answers[key] = Answer(function: named.function, file: named.file, line: named.line) }
            }
        }
        for index in frames.indices {
            guard let key = key(frames[index]), let answer = answers[key] else { continue }
            frames[index].function = answer.function
            frames[index].file = answer.file
            frames[index].line = answer.line
        }
    }
}

extension AppHang {
    /// Names the in-app frames of every thread (one symbolicator run for all of them).
    package mutating func symbolicate(with symbols: IncidentSymbols) {
        var all = frames
        for thread in threads { all += thread.frames }
        symbols.symbolicate(&all)
        var at = frames.count
        frames = Array(all[0..<at])
        for index in threads.indices {
            let count = threads[index].frames.count
            threads[index].frames = Array(all[at..<(at + count)])
            at += count
        }
    }}
