import Foundation

/// One event of an issue and where it stands among the issue's events. The issue's order is
/// received time, then storage order (`events.id`), newest first, as the issue page lists them;
/// each neighbour is an event id, nil when there is none (`newer` and `newest` are nil for the
/// newest event, `older` and `oldest` for the oldest).
public struct IssueEventPosition: Sendable {
    public let event: StoredEvent
    public let newer: String?
    public let older: String?
    public let newest: String?
    public let oldest: String?
}

/// An attachment as stored with an event (`attachment` envelope item), without its bytes.
public struct AttachmentInfo: Sendable, Hashable {
    public let id: Int64
    public let eventID: String?
    /// The item's `filename` header as sent (any text: escape it, never use it as a path).
    public let filename: String
    /// The item's `content_type` header as sent; describes the bytes, is not trusted to serve them.
    public let contentType: String?
    /// Sentry's `attachment_type` (`event.attachment`, `event.minidump`, ...).
    public let attachmentType: String?
    public let size: Int64
    public let received: Date
}

/// An attachment with its bytes.
public struct StoredAttachment: Sendable {
    public let info: AttachmentInfo
    public let data: Data
}

// The issue page's reads. Each is a bounded number of indexed lookups, whatever the number of
// events of the issue: the event by `(project_id, event_id)` (unique), its neighbours by
// `events_issue (issue_id, received)` with a range on `received` (ties are broken by `id`, which
// SQLite's index holds as the rowid), attachments by `attachments_event (project_id, event_id)`.
extension SQLStore {
    private static let eventColumns = "id, event_id, issue_id, received, timestamp, level, release, environment, platform"

    private static func positionedEvent(_ row: DBRow) -> (key: (received: Double, id: Int64), event: StoredEvent)? {
        guard let rowID = row.int("id"), let id = row.string("event_id"), let issue = row.int("issue_id"),
              let received = row.double("received"), let timestamp = row.double("timestamp"), let payload = row.data("payload")
        else { return nil }
        let summary = EventSummary(
            eventID: id, issueID: issue, received: Date(timeIntervalSince1970: received),
            timestamp: Date(timeIntervalSince1970: timestamp), level: row.string("level") ?? "",
            release: row.string("release"), environment: row.string("environment"), platform: row.string("platform"))
        return ((received, rowID), StoredEvent(summary: summary, payload: payload))
    }

    public func issueEvent(issueID: Int64, projectID: Int64, eventID: String?) async throws -> IssueEventPosition? {
        try await read {
            let issue = Self.int(issueID)
            let rows: [DBRow]
            if let eventID {
                rows = try await query(
                    "SELECT \(Self.eventColumns), payload FROM events WHERE project_id = ? AND event_id = ? AND issue_id = ?",
                    [Self.int(projectID), .text(eventID), issue])
            } else {
                rows = try await query(
                    "SELECT \(Self.eventColumns), payload FROM events WHERE issue_id = ? ORDER BY received DESC, id DESC LIMIT 1", [issue])
            }
            guard let found = rows.first.flatMap(Self.positionedEvent) else { return nil }
            let received = DBValue.double(found.key.received), id = DBValue.int(found.key.id)
            func first(_ sql: String, _ binds: [DBValue]) async throws -> String? {
                try await query("SELECT event_id FROM events WHERE issue_id = ?\(sql) LIMIT 1", [issue] + binds).first?.string("event_id")
            }
            let newer = try await first(" AND received >= ? AND (received > ? OR id > ?) ORDER BY received, id", [received, received, id])
            let older = try await first(" AND received <= ? AND (received < ? OR id < ?) ORDER BY received DESC, id DESC", [received, received, id])
            let newest = newer == nil ? nil : try await first(" ORDER BY received DESC, id DESC", [])
            let oldest = older == nil ? nil : try await first(" ORDER BY received, id", [])
            return IssueEventPosition(event: found.event, newer: newer, older: older, newest: newest, oldest: oldest)
        }
    }

    private static func attachmentInfo(_ row: DBRow) -> AttachmentInfo? {
        guard let id = row.int("id"), let filename = row.string("filename"), let size = row.int("size"),
              let received = row.double("received")
        else { return nil }
        return AttachmentInfo(id: id, eventID: row.string("event_id"), filename: filename, contentType: row.string("content_type"),
                              attachmentType: row.string("attachment_type"), size: size, received: Date(timeIntervalSince1970: received))
    }

    private static let attachmentColumns = "id, event_id, filename, content_type, attachment_type, size, received"

    public func eventAttachments(projectID: Int64, eventID: String, limit: Int) async throws -> [AttachmentInfo] {
        try await read {
            try await query(
                "SELECT \(Self.attachmentColumns) FROM attachments WHERE project_id = ? AND event_id = ? ORDER BY id LIMIT ?",
                [Self.int(projectID), .text(eventID), Self.int(limit)]
            ).compactMap(Self.attachmentInfo)
        }
    }

    public func attachment(projectID: Int64, id: Int64) async throws -> StoredAttachment? {
        try await read {
            guard let row = try await query("SELECT \(Self.attachmentColumns), data FROM attachments WHERE id = ? AND project_id = ?",
                                            [Self.int(id), Self.int(projectID)]).first,
                  let info = Self.attachmentInfo(row), let data = row.data("data")
            else { return nil }
            return StoredAttachment(info: info, data: data)
        }
    }
}
