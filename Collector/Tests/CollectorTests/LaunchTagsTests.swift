@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

/// The launch-crash page reads launch tags stored at ingest (`event_launch_tags`, migration 13)
/// instead of parsing the newest 5,000 payloads per load, so that the page reads less while
/// ingest runs. Ingest fills them, the migration backfills them for existing events, and the
/// page's counts are what reading the payloads gave.
@Suite("Launch tags")
struct LaunchTagsTests {
    /// Events of every shape the page reads: object and list tags, numbers as values, escaped
    /// keys, a repeated `tags` member (the last counts), keys that only look alike.
    static func events() -> [(payload: String, launch: Bool)] {
        func event(_ release: String?, _ tags: String) -> String {
            let id = Fixtures.eventID()
            let release = release.map { #""release": "\#($0)", "# } ?? ""
            return #"{"event_id": "\#(id)", \#(release)"level": "fatal", "message": "m", "tags": \#(tags)}"#
        }
        return [
            (event("app@1.0.0", #"{"launch.phase": "launching", "launch.consecutive_crashes": "1"}"#), true),
            (event("app@1.0.0", #"{"launch.phase": "launching", "launch.consecutive_crashes": 3}"#), true),
            (event("app@2.0.0", #"{"launch.phase": "launch", "other": "x"}"#), true),
            (event("app@2.0.0", #"{"launch.phase": "running", "launch.repair_step": "clear-caches", "launch.consecutive_crashes": "2"}"#), true),
            (event(nil, #"[["launch.phase", "launching"], ["launch.phase", "running"], ["repair.note", "x"], ["guard", "y"]]"#), true),
            (event("app@2.0.0", #"{"\u006caunch.repair_step": "safe-mode", "launchy": true}"#), true),
            (#"{"event_id": "\#(Fixtures.eventID())", "release": "app@3.0.0", "tags": {"launch.phase": "launching"}, "x": 1, "tags": {"lunch": "x"}}"#, false),
            (event("app@3.0.0", #"{"relaunch": "x", "guard": "container", "launch.nested": {"a": 1}}"#), false),
            (event("app@3.0.0", #"{}"#), false),
        ]
    }

    /// What the page counted before (DashboardPages, until migration 13): each of the newest
    /// events' payloads read for its `tags`.
    static func fromPayloads(_ events: [StoredEvent]) -> LaunchSummary {
        var summary = LaunchSummary()
        summary.eventsRead = events.count
        for event in events {
            guard let member = try? StrictJSON.member("tags", of: event.payload, rules: .lastKeyWins) else { continue }
            summary.add(release: event.summary.release, tags: LaunchTag.of(tags: member))
        }
        return summary
    }

    static func ingest(_ store: SQLStore, project: Int64, _ payload: String, received: Date) async throws {
        let record = try EventRecord.extract(projectID: project, payload: Data(payload.utf8), fallbackEventID: nil, received: received,
                                             invalidJSONMessage: "invalid")
        #expect(try await store.insertEvent(record) != .duplicate)
    }

    static func rows(_ store: SQLStore) async throws -> [String] {
        try await store.query(
            "SELECT event_row, position, project_id, received, release, tag_key, tag_value FROM event_launch_tags ORDER BY event_row, position"
        ).map { row in
            [row.int("event_row").map(String.init), row.int("position").map(String.init), row.int("project_id").map(String.init),
             row.double("received").map { String($0) }, row.string("release"), row.string("tag_key"), row.string("tag_value")]
                .map { $0 ?? "nil" }.joined(separator: "|")
        }
    }

    /// Ingest stores each event's launch tags; the page's counts from them equal the counts from
    /// the payloads, and are the expected ones.
    @Test func ingestStoresTheLaunchTagsThePageCounts() async throws {
        try await TestDatabase.withStore { store in
            let project = try await store.createProject(name: "p")
            let other = try await store.createProject(name: "other")
            let start = Date().addingTimeInterval(-100)
            for (index, event) in Self.events().enumerated() {
                try await Self.ingest(store, project: project.id, event.payload, received: start.addingTimeInterval(Double(index)))
            }
            try await Self.ingest(store, project: other.id, Self.events()[0].payload.replacingOccurrences(of: "app@1.0.0", with: "other@1"),
                                  received: start)
            let summary = try await store.launchSummary(projectID: project.id, window: LaunchSummary.window)
            let before = Self.fromPayloads(try await store.recentEvents(projectID: project.id, limit: LaunchSummary.window))
            #expect(summary == before)
            #expect(summary.eventsRead == 9)
            #expect(summary.crashesByRelease == [
                "app@1.0.0": .init(count: 2, maxConsecutive: 3), "app@2.0.0": .init(count: 1, maxConsecutive: 1),
                "(no release)": .init(count: 1, maxConsecutive: 1),
            ])
            #expect(summary.repairs == ["clear-caches": .init(count: 1, releases: ["app@2.0.0"]), "safe-mode": .init(count: 1, releases: ["app@2.0.0"])])
            #expect(summary.tagKeys == ["launch.phase": 6, "launch.consecutive_crashes": 3, "launch.repair_step": 2, "repair.note": 1, "launchy": 1])
            // Only events with launch tags have rows; none of another project's is counted.
            let rows = try await Self.rows(store)
            #expect(rows.count == 13 + 2)
            #expect(try await store.launchSummary(projectID: other.id, window: 10).crashesByRelease == ["other@1": .init(count: 1, maxConsecutive: 1)])
            // Retention deletes them with their events.
            _ = try await store.deleteData(receivedBefore: start.addingTimeInterval(2.5))
            #expect(try await Self.rows(store).count == 8)
            #expect(try await store.launchSummary(projectID: project.id, window: 100) == Self.fromPayloads(try await store.recentEvents(projectID: project.id, limit: 100)))
        }
    }

    /// The page reads the newest `window` events by received time, then id (as `recentEvents`
    /// does): at every window size, with events received at the same instant, the stored rows
    /// give what the payloads gave.
    @Test func theWindowIsTheNewestEventsAsBefore() async throws {
        try await TestDatabase.withStore { store in
            let project = try await store.createProject(name: "p")
            let start = Date().addingTimeInterval(-100)
            var events: [String] = []
            for round in 0..<3 { events += Self.events().map(\.payload).map { $0.replacingOccurrences(of: "app@", with: "r\(round)-app@") } }
            for (index, payload) in events.enumerated() {
                // Three events at each instant: ties broken by id.
                try await Self.ingest(store, project: project.id, payload, received: start.addingTimeInterval(Double(index / 3)))
            }
            for window in 1...(events.count + 1) {
                let summary = try await store.launchSummary(projectID: project.id, window: window)
                #expect(summary == Self.fromPayloads(try await store.recentEvents(projectID: project.id, limit: window)), "window \(window)")
            }
        }
    }

    /// A database at migration 12 with events: migration 13 backfills their launch tags, the
    /// same rows ingest writes, and the page's counts are what the payloads give.
    @Test func migrationBackfillsTheLaunchTagsOfExistingEvents() async throws {
        try await TestDatabase.withStore(migrated: false) { store in
            let dialect = store.backend.dialect
            _ = try await store.query(SQLStore.typed("CREATE TABLE schema_migrations (version {int} PRIMARY KEY, applied_at {real} NOT NULL)", for: dialect)!)
            for migration in SQLStore.migrations where migration.version <= 12 {
                for statement in migration.statements {
                    guard let typed = SQLStore.typed(statement, for: dialect) else { continue }
                    _ = try await store.query(typed)
                }
                _ = try await store.query("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", [.int(Int64(migration.version)), .double(0)])
            }
            // Migration 12's schema has no launch tags, so events go in with their launch tags
            // renamed (ingest's statements would write them), and get their payloads as received
            // afterwards, as a collector of that version stored them.
            let project = try await store.createProject(name: "old")
            let start = Date().addingTimeInterval(-100)
            for (index, event) in Self.events().enumerated() {
                let stripped = event.payload.replacingOccurrences(of: "aunch", with: "aunxh").replacingOccurrences(of: "repair", with: "repaxr")
                try await Self.ingest(store, project: project.id, stripped, received: start.addingTimeInterval(Double(index)))
                let id = try #require(try StrictJSON.member("event_id", of: Data(stripped.utf8), rules: .lastKeyWins)?.stringValue)
                _ = try await store.query("UPDATE events SET payload = ? WHERE event_id = ?", [.blob(Data(event.payload.utf8)), .text(id)])
            }
            let payloads = Self.fromPayloads(try await store.recentEvents(projectID: project.id, limit: LaunchSummary.window))
            #expect(payloads.crashesByRelease.count == 3)

            try await store.migrate()
            #expect(try await store.appliedMigrations() == SQLStore.migrations.map(\.version))
            let backfilled = try await Self.rows(store)
            #expect(backfilled.count == 13)
            #expect(try await store.launchSummary(projectID: project.id, window: LaunchSummary.window) == payloads)

            // The same rows as ingest writes for the same events (on another database; event
            // row ids aside).
            let events = try await store.query("SELECT payload, received FROM events ORDER BY id")
            try await TestDatabase.withStore { fresh in
                let copy = try await fresh.createProject(name: "old")
                #expect(copy.id == project.id)
                for row in events {
                    let payload = try #require(row.data("payload")), received = try #require(row.double("received"))
                    try await Self.ingest(fresh, project: copy.id, String(decoding: payload, as: UTF8.self),
                                          received: Date(timeIntervalSince1970: received))
                }
                let ingested = try await Self.rows(fresh)
                #expect(ingested.map { $0.split(separator: "|").dropFirst() } == backfilled.map { $0.split(separator: "|").dropFirst() })
            }
        }
    }
}
