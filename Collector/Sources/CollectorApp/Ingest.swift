import CrashShieldProtocol
import Foundation
import Logging

/// Size limits applied to ingest requests (defaults follow Sentry's documented limits).
public struct IngestLimits: Sendable {
    /// Request body as sent (compressed or not). Default 20 MiB.
    public var maxBodyBytes: Int = 20 * 1024 * 1024
    /// Body after decompression. Default 100 MiB.
    public var maxDecompressedBytes: Int = 100 * 1024 * 1024
    /// One `event` item (or a `/store/` body). Default 1 MiB.
    public var maxEventBytes: Int = 1024 * 1024
    /// `session` updates per envelope, and `sessions` aggregate groups. Default 100.
    public var maxSessionsPerEnvelope: Int = 100

    public init() {}
}

/// What an accepted ingest request stored.
struct IngestOutcome: Sendable {
    var eventID: String?
    var storedItems: [String] = []
    var skippedItems: [String] = []
}

/// Turns a decoded request body into stored events, sessions, attachments and client reports.
/// Parsing, validation and grouping run in the request's task; the storing goes through the
/// store's single `IngestWriter` (group commit), and a request returns once its writes committed.
struct IngestService: Sendable {
    let writer: IngestWriter
    let limits: IngestLimits
    let metrics: CollectorMetrics
    let logger: Logger

    init(writer: IngestWriter, limits: IngestLimits, metrics: CollectorMetrics, logger: Logger) {
        self.writer = writer
        self.limits = limits
        self.metrics = metrics
        self.logger = logger
    }

    /// A service with a writer of its own over `store` (one writer per store: share the service).
    init(store: any CollectorStore, limits: IngestLimits, queueLimits: IngestQueueLimits = IngestQueueLimits(),
         metrics: CollectorMetrics, logger: Logger) {
        self.init(writer: IngestWriter(store: store, metrics: metrics, limits: queueLimits), limits: limits, metrics: metrics, logger: logger)
    }

    /// Processes an envelope for `project`. The envelope header's `dsn`, when present, must name
    /// the project (`envelope.dsn_mismatch`, 403).
    func ingestEnvelope(_ envelope: Envelope, project: Project, received: Date = Date()) async throws -> IngestOutcome {
        if let dsnText = envelope.header["dsn"]?.stringValue, let dsn = try? DSN(dsnText) {
            guard dsn.projectID == String(project.id), SentryAuth.normalizedKey(dsn.publicKey) == project.publicKey else {
                throw CollectorError.forbidden("envelope.dsn_mismatch", "the envelope's dsn names another project or key")
            }
        }
        let headerEventID = envelope.header["event_id"]?.stringValue
        var outcome = IngestOutcome(eventID: headerEventID.flatMap(SentryAuth.normalizedKey))
        // One pass sorts the items by type (each item's `type` is read once). The types below
        // are stored; every other type is read past and skipped (named in the outcome).
        var events: [Envelope.Item] = []
        var sessions: [Envelope.Item] = []
        var aggregateItems: [Envelope.Item] = []
        var clientReports: [Envelope.Item] = []
        var attachments: [Envelope.Item] = []
        var skippedTypes: [String] = []
        for item in envelope.items {
            let type = item.type
            switch type {
            case "event": events.append(item)
            case "session": sessions.append(item)
            case "sessions": aggregateItems.append(item)
            case "client_report": clientReports.append(item)
            case "attachment": attachments.append(item)
            default: skippedTypes.append(type)
            }
        }
        guard events.count <= 1 else { throw CollectorError.badRequest("envelope.events", "an envelope carries at most one event") }
        guard sessions.count <= limits.maxSessionsPerEnvelope else {
            throw CollectorError.badRequest("envelope.sessions", "more than \(limits.maxSessionsPerEnvelope) sessions in one envelope")
        }
        // Validate everything before storing anything, so a malformed envelope stores nothing.
        // An event item over the event limit is dropped alone (the envelope's sessions,
        // attachments and client reports are still stored) and counted as an outcome
        // (`too_large`, category `error`), next to the client reports.
        var eventRecord: EventRecord?
        var dropped: [DiscardedCount] = []
        if let item = events.first, item.payload.count > limits.maxEventBytes {
            dropped.append(DiscardedCount(reason: "too_large", category: "error", quantity: 1))
            outcome.eventID = nil
            outcome.skippedItems.append("event (too large)")
        } else if let item = events.first {
            eventRecord = try EventRecord.extract(projectID: project.id, payload: item.payload, fallbackEventID: headerEventID,
                                                  received: received, invalidJSONMessage: "the event item is not valid JSON")
        }
        var sessionUpdates: [SessionUpdate] = []
        for item in sessions {
            sessionUpdates.append(try SessionUpdate.read(item.payload, received: received))
        }
        var aggregates: [SessionAggregate] = []
        for item in aggregateItems {
            guard let json = try? StrictJSON.parse(item.payload, rules: .lastKeyWins) else {
                throw CollectorError.badRequest("sessions.json", "a sessions item is not valid JSON")
            }
            aggregates += try SessionAggregate.parse(json)
        }
        var discarded: [DiscardedCount] = []
        for item in clientReports {
            guard let json = try? StrictJSON.parse(item.payload, rules: .lastKeyWins) else {
                throw CollectorError.badRequest("client_report.json", "a client_report item is not valid JSON")
            }
            for key in ["discarded_events", "rate_limited_events", "filtered_events", "filtered_sampling_events"] {
                for entry in json[key]?.arrayValue ?? [] {
                    guard let quantity = entry["quantity"]?.intValue, quantity > 0 else { continue }
                    discarded.append(DiscardedCount(reason: entry["reason"]?.stringValue ?? key,
                                                    category: entry["category"]?.stringValue ?? "unknown", quantity: quantity))
                }
            }
        }

        var write = IngestWrite(projectID: project.id, event: eventRecord, received: received)
        write.sessions = sessionUpdates
        write.sessionAggregates = aggregates
        if let eventID = eventRecord?.eventID { outcome.eventID = eventID }
        for item in attachments {
            write.attachments.append(AttachmentRecord(
                eventID: outcome.eventID, filename: item.header["filename"]?.stringValue ?? "attachment",
                contentType: item.header["content_type"]?.stringValue,
                attachmentType: item.header["attachment_type"]?.stringValue, data: item.payload))
        }
        write.discarded = discarded + dropped
        // An envelope with nothing to store (only skipped item types) costs no transaction.
        let stored = write.isEmpty ? IngestWriteOutcome(event: nil) : try await writer.submit(write)

        if let eventRecord, let result = stored.event {
            switch result {
            case .stored(let issueID, let newIssue, let regressed):
                metrics.ingested("event")
                outcome.storedItems.append("event")
                logger.debug("event stored", metadata: [
                    "project": "\(project.id)", "event_id": "\(eventRecord.eventID)", "issue": "\(issueID)",
                    "new_issue": "\(newIssue)", "regressed": "\(regressed)",
                ])
            case .duplicate:
                metrics.duplicate()
                outcome.skippedItems.append("event (duplicate)")
            }
        }
        for _ in sessionUpdates {
            metrics.ingested("session")
            outcome.storedItems.append("session")
        }
        if !aggregates.isEmpty {
            metrics.ingested("sessions")
            outcome.storedItems.append("sessions")
        }
        for _ in write.attachments {
            metrics.ingested("attachment")
            outcome.storedItems.append("attachment")
        }
        if !discarded.isEmpty {
            metrics.ingested("client_report")
            outcome.storedItems.append("client_report")
        }
        for entry in dropped {
            metrics.discarded(reason: entry.reason, category: entry.category, quantity: entry.quantity)
            logger.debug("event dropped", metadata: ["project": "\(project.id)", "reason": "\(entry.reason)", "limit": "\(limits.maxEventBytes)"])
        }
        outcome.skippedItems += skippedTypes
        return outcome
    }

    /// Processes a `/store/` body: one event as JSON.
    func ingestStoreEvent(_ body: [UInt8], project: Project, received: Date = Date()) async throws -> IngestOutcome {
        guard body.count <= limits.maxEventBytes else {
            throw CollectorError.tooLarge("event.too_large", "the event is larger than \(limits.maxEventBytes) bytes")
        }
        let payload = Data(body)
        let record = try EventRecord.extract(projectID: project.id, payload: payload, fallbackEventID: nil, received: received,
                                             invalidJSONMessage: "the body is not valid JSON")
        var outcome = IngestOutcome(eventID: record.eventID)
        switch try await writer.submit(IngestWrite(projectID: project.id, event: record, received: received)).event {
        case .some(.stored), nil:
            metrics.ingested("event")
            outcome.storedItems.append("event")
        case .some(.duplicate):
            metrics.duplicate()
            outcome.skippedItems.append("event (duplicate)")
        }
        return outcome
    }
}
