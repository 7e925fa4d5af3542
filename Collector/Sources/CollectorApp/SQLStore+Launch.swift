import CrashShieldProtocol
import Foundation

extension SQLStore {
    /// Migration 13's backfill: the launch tags of each project's newest `LaunchSummary.window`
    /// events (the events the launch-crash page reads; later events get theirs at ingest), read
    /// from their payloads as the page read them before (the last `tags` member,
    /// `LaunchTag.of`), into `event_launch_tags`. Runs in the migration's transaction.
    func backfillLaunchTags() async throws {
        let projects = try await query("SELECT id FROM projects ORDER BY id").compactMap { $0.int("id") }
        for project in projects {
            let events = try await query(
                "SELECT id, received, release, payload FROM events WHERE project_id = ? ORDER BY received DESC, id DESC LIMIT ?",
                [Self.int(project), Self.int(LaunchSummary.window)])
            for event in events {
                guard let row = event.int("id"), let received = event.double("received"), let payload = event.data("payload"),
                      let member = try? StrictJSON.member("tags", of: payload, rules: .lastKeyWins)
                else { continue }
                for (position, tag) in LaunchTag.of(tags: member).enumerated() {
                    _ = try await query(
                        """
                        INSERT INTO event_launch_tags (event_row, position, project_id, received, release, tag_key, tag_value)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        """,
                        [.int(row), Self.int(position), .int(project), .double(received), Self.text(event.string("release")),
                         .text(tag.key), .text(tag.value)])
                }
            }
        }
    }

    /// The launch-crash page's counts: the launch tags of the project's newest `window` events
    /// (the page: `LaunchSummary.window`) (by received time, then id, as `recentEvents` orders them),
    /// read from `event_launch_tags` by its index after finding the window's oldest event in
    /// `events_project_received`: no payload is read.
    public func launchSummary(projectID: Int64, window: Int) async throws -> LaunchSummary {
        precondition(window > 0)
        return try await read {
            let boundary = try await query(
                "SELECT received, id FROM events WHERE project_id = ? ORDER BY received DESC, id DESC LIMIT 1 OFFSET ?",
                [Self.int(projectID), Self.int(window - 1)]
            ).first
            var summary = LaunchSummary()
            let rows: [DBRow]
            if let boundary, let received = boundary.double("received"), let id = boundary.int("id") {
                summary.eventsRead = window
                rows = try await query(
                    """
                    SELECT event_row, release, tag_key, tag_value FROM event_launch_tags
                    WHERE project_id = ? AND received >= ? AND (received > ? OR event_row >= ?)
                    ORDER BY event_row, position
                    """, [Self.int(projectID), .double(received), .double(received), .int(id)])
            } else {
                // Fewer events than the window: all of them.
                summary.eventsRead = Int(try await query("SELECT count(*) AS n FROM events WHERE project_id = ?", [Self.int(projectID)])
                    .first?.int("n") ?? 0)
                rows = try await query(
                    "SELECT event_row, release, tag_key, tag_value FROM event_launch_tags WHERE project_id = ? ORDER BY event_row, position",
                    [Self.int(projectID)])
            }
            var current: (row: Int64, release: String?, tags: [LaunchTag])?
            for row in rows {
                guard let eventRow = row.int("event_row"), let key = row.string("tag_key"), let value = row.string("tag_value") else { continue }
                if current?.row != eventRow {
                    if let current { summary.add(release: current.release, tags: current.tags) }
                    current = (eventRow, row.string("release"), [])
                }
                current?.tags.append(LaunchTag(key: key, value: value))
            }
            if let current { summary.add(release: current.release, tags: current.tags) }
            return summary
        }
    }
}
