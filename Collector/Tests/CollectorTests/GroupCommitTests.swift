@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Logging
import Testing

/// Group commit (`CollectorStore.commitIngest`, `IngestWriter`): a batch must leave the database
/// exactly as storing its writes one by one does.
@Suite("Group commit")
struct GroupCommitTests {
    static func write(project: Int64, id: String, functions: [String], release: String?, user: String?,
                      received: Date) throws -> IngestWrite {
        guard case .object(var fields) = Fixtures.exceptionEvent(id: id, functions: functions, release: release, user: user) else {
            throw CollectorError.badRequest("test", "not an object")
        }
        // Captured when received: the same times in both databases (issue times are event times).
        fields["timestamp"] = .double(received.timeIntervalSince1970)
        fields["environment"] = .string(release == nil ? "staging" : "production")
        let json = JSONValue.object(fields)
        let record = try EventRecord.extract(projectID: project, payload: json.jsonData(), json: json, fallbackEventID: nil,
                                             received: received)
        return IngestWrite(projectID: project, event: record, received: received)
    }

    static func session(_ sid: String, status: String, seq: Int, errors: Int = 0) throws -> CollectorApp.SessionUpdate {
        let json: JSONValue = ["sid": .string(sid), "did": "user-1", "init": .bool(seq == 0), "seq": .int(Int64(seq)),
                               "started": "2026-11-26T00:00:00Z", "timestamp": "2026-11-26T00:01:00Z",
                               "status": .string(status), "errors": .int(Int64(errors)), "attrs": ["release": "app@1.0"]]
        return try CollectorApp.SessionUpdate.parse(json, received: Date())
    }

    /// Everything the ingest path writes, as comparable text rows (ids included: both databases
    /// start empty, so the same order of writes gives the same ids).
    static func snapshot(_ store: SQLStore) async throws -> [String] {
        var lines: [String] = []
        let tables = [
            ("issues", "SELECT id, fingerprint_hash, title, status, resolved_in_release, first_release, last_release, event_count, user_count, first_seen, last_seen FROM issues ORDER BY id"),
            ("events", "SELECT event_id, issue_id, release, user_key FROM events ORDER BY id"),
            ("issue_users", "SELECT issue_id, user_key FROM issue_users ORDER BY issue_id, user_key"),
            ("issue_releases", "SELECT issue_id, release, event_count, first_seen, last_seen FROM issue_releases ORDER BY issue_id, release"),
            ("issue_days", "SELECT issue_id, day, events FROM issue_days ORDER BY issue_id, day"),
            ("issue_facets", "SELECT issue_id, facet, value FROM issue_facets ORDER BY issue_id, facet, value"),
            ("sessions", "SELECT sid, seq, status, errors FROM sessions ORDER BY sid"),
            ("client_reports", "SELECT reason, category, quantity FROM client_reports ORDER BY reason, category"),
            ("attachments", "SELECT event_id, filename, size FROM attachments ORDER BY id"),
        ]
        for (table, sql) in tables {
            for row in try await store.query(sql) {
                lines.append(table + ": " + row.values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
            }
        }
        return lines
    }

    /// Stores `writes` one per transaction into one new database and as one batch into another,
    /// after `prepare` ran on each; returns both outcomes and both snapshots.
    static func compare(
        prepare: (SQLStore, Int64) async throws -> Void = { _, _ in },
        writes: (Int64) throws -> [IngestWrite]
    ) async throws -> (sequential: [IngestWriteOutcome], batched: [IngestWriteOutcome], sequentialRows: [String], batchedRows: [String]) {
        var outcomes: [[IngestWriteOutcome]] = []
        var snapshots: [[String]] = []
        for batched in [false, true] {
            let fresh = try await TestDatabase.fresh()
            let store = try await TestDatabase.open(fresh.database)
            try await store.migrate()
            let project = try await store.createProject(name: "p")
            try await prepare(store, project.id)
            let list = try writes(project.id)
            if batched {
                outcomes.append(try await store.commitIngest(list))
            } else {
                var one: [IngestWriteOutcome] = []
                for write in list { one += try await store.commitIngest([write]) }
                outcomes.append(one)
            }
            snapshots.append(try await snapshot(store))
            try await store.close()
            await fresh.drop()
        }
        return (outcomes[0], outcomes[1], snapshots[0], snapshots[1])
    }

    @Test func aBatchWithADuplicateIDAndTwoEventsOfANewIssueMatchesOneByOneIngestion() async throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let first = Fixtures.eventID()
        let ids = (0..<3).map { _ in Fixtures.eventID() }  // the same ids in both databases
        let result = try await Self.compare { project in
            var sessions = IngestWrite(projectID: project, received: now)
            sessions.sessions = [try Self.session("s1", status: "ok", seq: 0), try Self.session("s1", status: "crashed", seq: 1, errors: 1),
                                 try Self.session("s1", status: "ok", seq: 2)]  // after a terminal state: ignored
            sessions.discarded = [DiscardedCount(reason: "queue_overflow", category: "error", quantity: 2)]
            var withAttachment = try Self.write(project: project, id: first, functions: ["main", "load"], release: "1.0", user: "u1",
                                                received: now.addingTimeInterval(3))
            withAttachment.attachments = [AttachmentRecord(eventID: first, filename: "log.txt", contentType: "text/plain",
                                                           attachmentType: nil, data: Data("log".utf8))]
            withAttachment.discarded = [DiscardedCount(reason: "queue_overflow", category: "error", quantity: 3)]
            return [
                try Self.write(project: project, id: first, functions: ["main", "load"], release: "1.0", user: "u1", received: now),
                try Self.write(project: project, id: ids[0], functions: ["main", "load"], release: "1.1", user: "u2",
                               received: now.addingTimeInterval(1)),
                withAttachment,  // the first event's id again: a duplicate, its attachment and report still stored
                try Self.write(project: project, id: ids[1], functions: ["other"], release: nil, user: "u1",
                               received: now.addingTimeInterval(2)),
                try Self.write(project: project, id: ids[2], functions: ["main", "load"], release: "1.0", user: "u1",
                               received: now.addingTimeInterval(4)),
                sessions,
            ]
        }
        #expect(result.batched == result.sequential)
        #expect(result.batchedRows == result.sequentialRows)
        let events: [EventInsertOutcome?] = result.batched.map { $0.event }
        guard case .some(.stored(issueID: let issueA, newIssue: true, regressed: false)) = events[0],
              case .some(.stored(issueID: let issueB, newIssue: true, regressed: false)) = events[3]
        else {
            Issue.record("unexpected outcomes \(events)")
            return
        }
        #expect(events[1] == .stored(issueID: issueA, newIssue: false, regressed: false))
        #expect(events[2] == .duplicate)
        #expect(events[4] == .stored(issueID: issueA, newIssue: false, regressed: false))
        #expect(issueA != issueB)
        #expect(events[5] == nil)
        // Issue A: 3 events, users u1 and u2, releases 1.0 (twice) and 1.1; last release the newest.
        #expect(result.batchedRows.contains { $0.hasPrefix("issues: ") && $0.contains("event_count=int(3)") && $0.contains("user_count=int(2)")
                && $0.contains("last_release=text(\"1.1\")") && $0.contains("first_release=text(\"1.0\")") })
        #expect(result.batchedRows.filter { $0.hasPrefix("events: ") }.count == 4)
        #expect(result.batchedRows.contains { $0.hasPrefix("issue_releases: ") && $0.contains("release=text(\"1.0\")") && $0.contains("event_count=int(2)") })
        #expect(result.batchedRows.contains { $0.hasPrefix("sessions: ") && $0.contains("status=text(\"crashed\")") && $0.contains("seq=int(1)") })
        #expect(result.batchedRows.contains { $0.hasPrefix("client_reports: ") && $0.contains("quantity=int(5)") })
        #expect(result.batchedRows.filter { $0.hasPrefix("attachments: ") }.count == 1)
    }

    @Test func regressionsInABatchFollowTheOrderOfItsEvents() async throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let ids = (0..<4).map { _ in Fixtures.eventID() }  // the same ids in both databases
        let result = try await Self.compare(
            prepare: { store, project in
                let old = try Self.write(project: project, id: ids[3], functions: ["f"], release: "app@1.0", user: nil,
                                         received: now)
                let stored = try await store.commitIngest([old])
                guard case .some(.stored(issueID: let issue, newIssue: _, regressed: _)) = stored.first?.event else { throw CollectorError.storage("not stored") }
                _ = try await store.setIssueStatus(id: issue, .resolved)  // resolved in app@1.0
            },
            writes: { project in
                try ["app@0.9", "app@1.1", "app@1.2"].enumerated().map { index, release in
                    try Self.write(project: project, id: ids[index], functions: ["f"], release: release, user: nil,
                                   received: now.addingTimeInterval(Double(index + 1)))
                }
            })
        #expect(result.batched == result.sequential)
        #expect(result.batchedRows == result.sequentialRows)
        let regressed = result.batched.map { outcome -> Bool? in
            if case .some(.stored(issueID: _, newIssue: _, regressed: let regressed)) = outcome.event { return regressed }
            return nil
        }
        #expect(regressed == [false, true, false])  // an older release does not reopen; once regressed, stays
        #expect(result.batchedRows.contains { $0.hasPrefix("issues: ") && $0.contains("status=text(\"regressed\")")
                && $0.contains("last_release=text(\"app@1.2\")") && $0.contains("resolved_in_release=null") })
    }

    @Test func concurrentRequestsThroughTheWriterAreEachStoredOnce() async throws {
        try await TestDatabase.withStore { store in
            let project = try await store.createProject(name: "p")
            let metrics = CollectorMetrics()
            let writer = IngestWriter(store: store, metrics: metrics)
            let ids = (0..<30).map { _ in Fixtures.eventID() }
            let now = Date()
            // Every id twice, from 60 concurrent requests.
            let outcomes = try await withThrowingTaskGroup(of: IngestWriteOutcome.self) { group in
                for round in 0..<2 {
                    for (index, id) in ids.enumerated() {
                        let write = try Self.write(project: project.id, id: id, functions: ["f\(index % 3)"], release: "1.\(round)",
                                                   user: "u\(index % 5)", received: now)
                        group.addTask { try await writer.submit(write) }
                    }
                }
                return try await group.reduce(into: [IngestWriteOutcome]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0.event == .duplicate }.count == 30)
            #expect(metrics.committedRequestCount == 60)
            let issues = try await store.issues(projectID: project.id)
            #expect(issues.count == 3)
            #expect(issues.map(\.eventCount).reduce(0, +) == 30)
            #expect(issues.map(\.userCount).reduce(0, +) == 15)  // ids 0..<30: f(i%3) with u(i%5): every pair appears
            #expect(writer.depth == 0)
        }
    }

    /// While the store is busy (its lock held here), the queue fills to its depth limit and the
    /// next request is refused at once with `ingest.queue_full`; the queued ones are stored once
    /// the store is free.
    @Test func aFullQueueRefusesWithQueueFullAndKeepsWhatItAccepted() async throws {
        try await TestDatabase.withStore { store in
            let project = try await store.createProject(name: "p")
            var limits = IngestQueueLimits()
            limits.maxDepth = 2
            let metrics = CollectorMetrics()
            let writer = IngestWriter(store: store, metrics: metrics, limits: limits)
            let writes = try (0..<3).map { _ in
                try Self.write(project: project.id, id: Fixtures.eventID(), functions: ["f"], release: "1.0", user: nil, received: Date())
            }
            let (release, released) = AsyncStream.makeStream(of: Void.self)
            let (holds, held) = AsyncStream.makeStream(of: Void.self)
            let holding = Task {
                _ = try await store.serialized {
                    held.yield()
                    for await _ in release { break }
                    return 0
                }
            }
            // Wait until the lock is held, then queue two requests.
            for await _ in holds { break }
            let accepted = [writes[0], writes[1]].map { write in Task { try await writer.submit(write) } }
            while writer.depth < 2 { await Task.yield() }
            await #expect(throws: CollectorError(code: "ingest.queue_full",
                                                 message: "the collector is storing as fast as it can; retry in a second", status: 503)) {
                try await writer.submit(writes[2])
            }
            #expect(metrics.render().contains("collector_ingest_queue_depth 2"))
            released.yield()
            released.finish()
            _ = try await holding.value
            for task in accepted {
                guard case .some(.stored) = try await task.value.event else {
                    Issue.record("an accepted request was not stored")
                    continue
                }
            }
            #expect(try await store.issues(projectID: project.id).first?.eventCount == 2)
            #expect(writer.depth == 0)
        }
    }
}
