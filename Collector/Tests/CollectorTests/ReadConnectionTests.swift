@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Logging
import Synchronization
import Testing

/// Reads never wait for the writer (so one dashboard user cannot stall ingest): a store's
/// reads run on read connections of their own (SQLite WAL readers, PostgreSQL connections),
/// which reconnect after losing the server; the pages' queries read through indexes.
@Suite("Read connections")
struct ReadConnectionTests {
    /// While the writer holds a transaction open (its lock taken, a row written and not
    /// committed), reads of every kind complete, and none of them sees the uncommitted row.
    /// (Before: every read waited for the writer's lock, so the reads finished only after the
    /// transaction ended and this test's writer gave up waiting for them.)
    @Test func readsCompleteWhileTheWriterHoldsATransaction() async throws {
        try await TestDatabase.withStore { store in
            let project = try await store.createProject(name: "p")
            _ = try await store.insertEvent(StoreTests.record(project: project.id))
            let readsDone = Atomic<Bool>(false)
            let writerInside = Atomic<Bool>(false)
            let readers = Task {
                while !writerInside.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(5)) }
                let projects = try await store.projects()
                let issues = try await store.issues(projectID: project.id)
                let summaries = try await store.projectSummaries()
                let events = try await store.recentEvents(projectID: project.id, limit: 10)
                _ = try await store.releaseHealth(projectID: project.id)
                _ = try await store.launchSummary(projectID: project.id, window: 10)
                // The issue list's and the issue page's reads (these took the writer's lock).
                let page = try await store.issues(projectID: project.id, query: IssueQuery())
                _ = try await store.issueActivity(issueIDs: page.issues.map(\.id), days: 0...Int64.max)
                _ = try await store.issueFilterValues(projectID: project.id, limit: 10)
                let event = try await store.issueEvent(issueID: try #require(page.issues.first).id, projectID: project.id, eventID: nil)
                _ = try await store.eventAttachments(projectID: project.id, eventID: try #require(event).event.summary.eventID, limit: 10)
                _ = try await store.attachment(projectID: project.id, id: 1)
                readsDone.store(true, ordering: .releasing)
                return (projects.map(\.name), issues.count, summaries.map(\.issues), events.count)
            }
            // The bound only ends the wait when reads are blocked (as they were before): then the
            // transaction commits and `sawReads` is false.
            let sawReads = try await store.transaction { () -> Bool in
                _ = try await store.query("INSERT INTO projects (name, public_key, config_signing_key, created_at) VALUES ('uncommitted', 'k-uncommitted', ?, 0)",
                                          [.blob(Data(repeating: 1, count: 32))])
                writerInside.store(true, ordering: .releasing)
                let deadline = ContinuousClock.now + .seconds(20)
                while !readsDone.load(ordering: .acquiring) && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                }
                return readsDone.load(ordering: .acquiring)
            }
            #expect(sawReads, "the reads waited for the writer's transaction")
            let (names, issues, summaries, events) = try await readers.value
            #expect(names == ["p"], "a read saw an uncommitted row")
            #expect(issues == 1 && summaries == [1] && events == 1)
            #expect(try await store.projects().count == 2)
        }
    }

    /// The server ends every connection (the server side of a restart): the next reads succeed on
    /// new connections of the read pool, on every read connection, and the storage state stays ok.
    /// (Before: reads shared the writer's connection, and the first read after the loss failed
    /// with 503 `storage.unavailable`.)
    @Test(.enabled(if: TestDatabase.isPostgres, "needs COLLECTOR_TEST_POSTGRES_URL"))
    func readConnectionsReconnectAfterTheServerEndedThem() async throws {
        try await ShutdownAndLockWaitTests.withPostgres { database, url in
            let store = try await TestDatabase.open(database)
            try await store.migrate()
            let project = try await store.createProject(name: "p")
            #expect(store.readers?.connections.count == SQLStore.defaultReadConnections)
            try await StorageAvailabilityTests.terminateConnections(to: url)
            // As many reads at once as there are read connections, twice: each connection is used.
            for _ in 0..<2 {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<SQLStore.defaultReadConnections {
                        group.addTask {
                            let name = try await store.project(id: project.id)?.name
                            #expect(name == "p")
                        }
                    }
                    try await group.waitForAll()
                }
            }
            #expect(store.monitor.current == .ok)
            #expect(store.monitor.failureCount("unavailable") == 0)
            try await store.close()
        }
    }

    /// A page (`withPageRead`) runs whole on a page connection's thread, below the priority of the
    /// threads that serve ingest (a page built on the threads ingest's handlers use, reloaded
    /// by one dashboard user, takes a third of ingest's rate);
    /// its reads use that connection; a write in it goes to the writer's connection and runs at
    /// the default priority (on SQLite a read connection would refuse it); outside a page the
    /// priority is untouched.
    @Test func pagesRunWholeOnPageThreadsBelowIngestPriority() async throws {
        try await TestDatabase.withStore { store in
            let pages = try #require(store.pageReaders)
            #expect(pages.connections.count == SQLStore.defaultPageConnections)
            let outside = ThreadPriority.currentNiceValue()
            let (connection, nice, niceAfterRead, projectName, niceInWrite) = try await store.withPageRead {
                let connection = SQLStore.readConnection
                let nice = ThreadPriority.currentNiceValue()
                _ = try await store.projects()
                let niceAfterRead = ThreadPriority.currentNiceValue()
                let created = try await store.createProject(name: "made inside a page")
                let niceInWrite = try await store.transaction { ThreadPriority.currentNiceValue() }
                #expect(SQLStore.readConnection === connection, "the page lost its connection after a write")
                return (connection, nice, niceAfterRead, created.name, niceInWrite)
            }
            #expect(pages.connections.contains { $0 === connection })
            #expect(projectName == "made inside a page")
            #expect(try await store.projects().map(\.name).contains("made inside a page"))
            #if os(Linux)
            #expect(outside == 0)
            #expect(nice == ThreadPriority.niceValue && niceAfterRead == ThreadPriority.niceValue)
            #expect(niceInWrite == 0, "a write in a page held the writer's lock at the page's priority")
            #expect(ThreadPriority.currentNiceValue() == 0)
            #endif
        }
    }

    /// Pages built at once never outnumber the page connections: the others wait for one.
    @Test func pagesAtOnceAreBoundedByThePageConnections() async throws {
        try await TestDatabase.withStore { store in
            final class Counts: Sendable {
                let running = Atomic<Int>(0)
                let peak = Atomic<Int>(0)
            }
            let counts = Counts()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<(SQLStore.defaultPageConnections * 3) {
                    group.addTask {
                        try await store.withPageRead {
                            let now = counts.running.add(1, ordering: .relaxed).newValue
                            _ = counts.peak.max(now, ordering: .relaxed)
                            _ = try await store.projects()
                            try await Task.sleep(for: .milliseconds(30))
                            counts.running.subtract(1, ordering: .relaxed)
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(counts.peak.load(ordering: .relaxed) == SQLStore.defaultPageConnections)
        }
    }

    /// The access paths SQLite may use for `events` in the dashboard's and the API's reads: the
    /// indexes on (project, received), (issue, received), prevented crashes only, and the unique
    /// (project, event id) lookup. Anything else reads events the page does not show.
    static func eventsAccessIsIndexed(_ line: String) -> Bool {
        guard line.contains(" events") else { return true }
        return line.contains("events_project_received") || line.contains("events_issue")
            || line.contains("events_incidents") || line.contains("events_incident_time (project_id=? AND timestamp>?)")
            || line.contains("(project_id=? AND event_id=?)")
    }

    /// Every statement the read connections ran for the dashboard's pages and the API's reads
    /// uses an index for `events` (SQLite's `EXPLAIN QUERY PLAN`: no full scan, no search by
    /// project alone, no sort of a project's events before a limit) and reads no `sessions`.
    /// (Before: the launch-crash page sorted every event of the project, the projects and
    /// prevented-crash pages read them all, release health read every session.)
    @Test(.enabled(if: !TestDatabase.isPostgres, "SQLite's query plans"))
    func pageQueriesReadEventsThroughIndexes() async throws {
        try await TestDatabase.withStore { store in
            let project = try await store.createProject(name: "p")
            for index in 0..<20 {
                let json = DashboardTests.richEvent(release: "app@1.\(index % 3).0", guardName: index % 4 == 0 ? "container" : nil)
                let outcome = try await store.insertEvent(EventRecord.extract(projectID: project.id, payload: json.jsonData(), json: json,
                                                                              fallbackEventID: nil, received: Date()))
                #expect(outcome != .duplicate)
            }
            let issue = try #require(try await store.issues(projectID: project.id).first)
            let since = Date().addingTimeInterval(-14 * 86_400)
            // What the pages and API routes read (DashboardPages, IssuePage, Routes).
            _ = try await store.projectSummaries()
            _ = try await store.projects()
            _ = try await store.issues(projectID: project.id)
            _ = try await store.issue(id: issue.id)
            _ = try await store.events(issueID: issue.id, limit: 50)
            _ = try await store.issueEvents(issueID: issue.id, limit: 50)
            _ = try await store.eventPayload(projectID: project.id, eventID: Fixtures.eventID())
            _ = try await store.releaseHealth(projectID: project.id)
            _ = try await store.releaseDays(projectID: project.id, releases: ["app@1.0.0", "app@1.1.0"], since: since)
            _ = try await store.incidents(projectID: project.id)
            _ = try await store.incidentRows(projectID: project.id, since: since, limit: 1000)
            _ = try await store.incidentDayCounts(projectID: project.id, since: since, recent: Date().addingTimeInterval(-7 * 86_400))
            _ = try await store.recentEvents(projectID: project.id, limit: 5000)
            _ = try await store.launchSummary(projectID: project.id, window: 5000)
            _ = try await store.launchSummary(projectID: project.id, window: 5)
            _ = try await store.attachmentCount(projectID: project.id)
            _ = try await store.discardedTotal(projectID: project.id)
            _ = try await store.sdkConfigHistory(projectID: project.id)

            let readers = try #require(store.readers?.connections.compactMap { $0.backend as? SQLiteBackend })
            let statements = Set(readers.flatMap(\.cachedStatementTexts))
            #expect(statements.contains { $0.contains("FROM events") } && statements.contains { $0.contains("FROM incidents") })
            for sql in statements {
                let plan = try await store.query("EXPLAIN QUERY PLAN " + sql).compactMap { $0.string("detail") }
                for line in plan {
                    #expect(Self.eventsAccessIsIndexed(line), "\(line) in the plan of: \(sql)")
                    // The launch page's tags: the rows of the newest events, by the index.
                    if line.contains("event_launch_tags") {
                        #expect(line.contains("USING INDEX event_launch_tags_project (project_id=?"), "\(line) in the plan of: \(sql)")
                    }
                    // Release health reads its summaries, never the sessions themselves.
                    #expect(!line.contains(" sessions "), "\(line) in the plan of: \(sql)")
                    if line.contains("TEMP B-TREE FOR ORDER BY") && sql.contains("LIMIT") {
                        #expect(!plan.contains { $0.contains(" events") }, "events sorted before the limit: \(sql)")
                    }
                }
            }
        }
    }

    /// Release health from the summaries equals what the sessions say (the query release health
    /// ran over every session before), through inserts, status changes, stale and repeated
    /// updates, sessions without a user and several days; also after `migrate()` filled the
    /// summaries of sessions stored before them. Per-day figures match too.
    @Test func releaseHealthSummariesMatchTheSessions() async throws {
        try await TestDatabase.withStore(migrated: false) { store in
            let dialect = store.backend.dialect
            _ = try await store.query(SQLStore.typed("CREATE TABLE schema_migrations (version {int} PRIMARY KEY, applied_at {real} NOT NULL)", for: dialect)!)
            for migration in SQLStore.migrations where migration.version <= 7 {
                for statement in migration.statements { _ = try await store.query(SQLStore.typed(statement, for: dialect)!) }
                _ = try await store.query("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", [.int(Int64(migration.version)), .double(0)])
            }
            let project = try await store.createProject(name: "p")
            let now = Date()
            func update(_ sid: String, _ user: String?, _ status: String, seq: Int64, errors: Int64 = 0, release: String = "app@1.0.0",
                        daysAgo: Double = 0) -> CollectorApp.SessionUpdate {
                let started = now.addingTimeInterval(-daysAgo * 86_400)
                return CollectorApp.SessionUpdate(sessionID: sid, distinctID: user, sequence: seq, started: started, timestamp: started, status: status,
                                     errors: errors, release: release, environment: "production")
            }
            // Stored before migration 8: the migration fills the summaries from these.
            for session in [update("old-1", "u1", "crashed", seq: 0, daysAgo: 3), update("old-2", "u2", "ok", seq: 0, daysAgo: 2),
                            update("old-3", nil, "exited", seq: 0, release: "app@0.9.0", daysAgo: 1)] {
                try await store.recordSession(projectID: project.id, session)
            }
            try await store.migrate()
            // Then through the triggers.
            let updates: [[CollectorApp.SessionUpdate]] = [
                [update("s1", "u1", "ok", seq: 0), update("s2", "u2", "ok", seq: 0), update("s3", nil, "ok", seq: 0, daysAgo: 1)],
                [update("s1", "u1", "crashed", seq: 1), update("s2", "u2", "ok", seq: 1, errors: 2), update("old-2", "u2", "abnormal", seq: 1, daysAgo: 2)],
                // Stale (lower seq) and after a terminal state: no change.
                [update("s2", "u2", "errored", seq: 0), update("s1", "u1", "exited", seq: 2)],
                [update("s3", nil, "errored", seq: 1, daysAgo: 1), update("s4", "u3", "crashed", seq: 0, release: "app@1.1.0"),
                 update("s5", "u3", "exited", seq: 0, release: "app@1.1.0"), update("s2", nil, "exited", seq: 3)],
            ]
            for batch in updates {
                var write = IngestWrite(projectID: project.id)
                write.sessions = batch
                _ = try await store.commitIngest([write])
            }
            let expected = try await store.query(
                """
                SELECT release, count(*) AS sessions,
                    sum(CASE WHEN status = 'crashed' THEN 1 ELSE 0 END) AS crashed,
                    sum(CASE WHEN status = 'abnormal' THEN 1 ELSE 0 END) AS abnormal,
                    sum(CASE WHEN status NOT IN ('crashed', 'abnormal') AND (errors > 0 OR status = 'errored') THEN 1 ELSE 0 END) AS errored,
                    count(DISTINCT distinct_id) AS users,
                    count(DISTINCT CASE WHEN status = 'crashed' THEN distinct_id END) AS crashed_users
                FROM sessions WHERE project_id = ? GROUP BY release ORDER BY release
                """, [.int(project.id)]
            ).map { row in
                ReleaseHealth(release: row.string("release") ?? "", sessions: row.int("sessions") ?? 0, crashedSessions: row.int("crashed") ?? 0,
                              abnormalSessions: row.int("abnormal") ?? 0, erroredSessions: row.int("errored") ?? 0,
                              users: row.int("users") ?? 0, crashedUsers: row.int("crashed_users") ?? 0)
            }
            #expect(expected.count == 3)
            let health = try await store.releaseHealth(projectID: project.id).sorted { $0.release < $1.release }
            #expect(health == expected)
            // Per day, of the release with sessions on several days.
            let days = try await store.releaseDays(projectID: project.id, releases: ["app@1.0.0"], since: now.addingTimeInterval(-14 * 86_400))
            let sessionsPerDay = try await store.query(
                SQLStore.typed("SELECT {day} AS day, count(*) AS n, sum({crashed}) AS c FROM sessions WHERE release = 'app@1.0.0' GROUP BY {day}", for: dialect)!)
            #expect(days.count == sessionsPerDay.count)
            for row in sessionsPerDay {
                let day = Date(timeIntervalSince1970: Double(row.int("day") ?? 0) * 86_400)
                let entry = days.first { $0.day == day }
                #expect(entry?.sessions == row.int("n") && entry?.crashed == row.int("c"), "\(String(describing: entry)) \(row)")
            }
        }
    }

    /// A database migrated to version 8 (before these indexes) gains them on `migrate()`.
    @Test func migratingAnExistingDatabaseAddsTheReadIndexes() async throws {
        try await TestDatabase.withStore(migrated: false) { store in
            let dialect = store.backend.dialect
            _ = try await store.query(SQLStore.typed("CREATE TABLE schema_migrations (version {int} PRIMARY KEY, applied_at {real} NOT NULL)", for: dialect)!)
            for migration in SQLStore.migrations where migration.version <= 8 {
                for statement in migration.statements {
                    guard let typed = SQLStore.typed(statement, for: dialect) else { continue }
                    _ = try await store.query(typed)
                }
                _ = try await store.query("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", [.int(Int64(migration.version)), .double(0)])
            }
            let project = try await store.createProject(name: "old")
            _ = try await store.insertEvent(StoreTests.record(project: project.id))
            try await store.migrate()
            let indexes = dialect == .sqlite
                ? try await store.query("SELECT name FROM sqlite_master WHERE type = 'index'").compactMap { $0.string("name") }
                : try await store.query("SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema()").compactMap { $0.string("name") }
            for name in ["events_project_received", "events_incidents", "issues_last_seen", "issues_project_status",
                         "sessions_project_started", "session_aggregates_project_bucket", "release_day_users_day"] {
                #expect(indexes.contains(name), "\(name) missing")
            }
            #expect(try await store.recentEvents(projectID: project.id, limit: 10).count == 1)
        }
    }
}
