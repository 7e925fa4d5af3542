@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Logging
import Testing

/// Storage availability: a lost PostgreSQL connection and a full disk
/// are temporary faults, answered 503 `storage.unavailable` / `storage.full` with `Retry-After`
/// (never a lasting 500), shown by `/health` and `/metrics`; the collector reconnects, writes
/// resume when space returns, and nothing acknowledged is lost. The process-level tests (a
/// PostgreSQL restart under load, a full 30 MB volume) are in `scripts/test.sh`.
@Suite("Storage availability")
struct StorageAvailabilityTests {
    /// Ends every connection to `url`'s database except the caller's own (PostgreSQL's
    /// `pg_terminate_backend`: the server side of a restart, SQLSTATE 57P01 on the next statement).
    static func terminateConnections(to url: String) async throws {
        let database = try #require(URLComponents(string: url)?.path.dropFirst()).description
        let admin = try await PostgresBackend.connect(url: try #require(TestDatabase.postgresURL))
        let ended = try await admin.query(
            "SELECT pid, pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = ? AND pid <> pg_backend_pid()",
            [.text(database)])
        let pids = ended.compactMap { $0.int("pid") }
        #expect(!pids.isEmpty, "no connection to end")
        // pg_terminate_backend only signals: wait until those backends are gone (on a loaded
        // machine a backend can take longer than any fixed pause to act on the signal).
        let gone = "SELECT count(*) AS n FROM pg_stat_activity WHERE pid IN (\(pids.map(String.init).joined(separator: ", ")))"
        let deadline = ContinuousClock.now + .seconds(20)
        while !pids.isEmpty && ContinuousClock.now < deadline {
            if try await admin.query(gone, []).first?.int("n") == 0 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        try await admin.close()
    }

    static func failure(_ body: () async throws -> Void) async -> CollectorError? {
        do { try await body() } catch { return error as? CollectorError }
        return nil
    }

    @Test func postgresFailuresAreClassifiedAsTemporaryOrNot() {
        #expect(PostgresBackend.failureKind(sqlState: "", connectionBad: true) == .connectionLost)
        for state in ["57P01", "57P02", "57P03", "08006", "08001", "53300"] {
            #expect(PostgresBackend.failureKind(sqlState: state, connectionBad: false) == .connectionLost, "\(state)")
        }
        #expect(PostgresBackend.failureKind(sqlState: "53100", connectionBad: false) == .diskFull)
        for state in ["23505", "42P01", "55P03", "57014", ""] {
            #expect(PostgresBackend.failureKind(sqlState: state, connectionBad: false) == .other, "\(state)")
        }
        let backoff = (1...10).map { PostgresBackend.reconnectBackoff(failures: $0) }
        #expect(backoff.first == .milliseconds(250))
        #expect(backoff.last == .seconds(5))
        #expect(zip(backoff, backoff.dropFirst()).allSatisfy { $0 <= $1 })
    }

    @Test func theMonitorFollowsTheLastOutcome() async throws {
        let monitor = StorageMonitor(logger: Logger(label: "collector-tests"), database: "sqlite")
        monitor.failed(CollectorError.storageFull("full"))
        #expect(monitor.current == .full)
        monitor.succeeded(write: false)
        #expect(monitor.current == .full, "a read does not show that space came back")
        monitor.succeeded(write: true)
        #expect(monitor.current == .ok)
        monitor.failed(CollectorError.storageUnavailable("away"))
        #expect(monitor.current == .unavailable)
        monitor.failed(CollectorError.storageBusy("busy"))
        #expect(monitor.current == .unavailable)
        monitor.succeeded(write: false)
        #expect(monitor.current == .ok)
        #expect(monitor.failureCount("full") == 1 && monitor.failureCount("unavailable") == 1 && monitor.failureCount("busy") == 1)
    }

    /// SQLite's `SQLITE_FULL` (here from `PRAGMA max_page_count`, the disk of a test) answers
    /// 503 `storage.full` with `Retry-After: 30`; `checkStorage` and the metrics report it; once
    /// space returns, writes are stored again, and every write acknowledged before is stored.
    /// (Before: 500 `storage.failed`, and the health check said ok.)
    @Test func aFullSQLiteDatabaseRefusesWith503UntilSpaceReturns() async throws {
        let path = NSTemporaryDirectory() + "collector_full_" + UUID().uuidString + ".sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let store = try await SQLStore.openSQLite(path: path, logger: Logger(label: "collector-tests"))
        try await store.migrate()
        let project = try await store.createProject(name: "full")
        let metrics = CollectorMetrics()
        metrics.observeStorage(store.monitor)
        let writer = IngestWriter(store: store, metrics: metrics)
        let pages = try #require(try await store.query("PRAGMA page_count").first?.int("page_count"))
        _ = try await store.query("PRAGMA max_page_count = \(pages + 40)")

        func write(_ id: String) throws -> IngestWrite {
            let event = Fixtures.exceptionEvent(id: id, value: String(repeating: "x", count: 8_000))
            let record = try EventRecord.extract(projectID: project.id, payload: event.jsonData(), json: event,
                                                 fallbackEventID: nil, received: Date())
            return IngestWrite(projectID: project.id, event: record, received: Date())
        }
        var acknowledged: [String] = []
        var refusal: CollectorError?
        for _ in 0..<200 {
            let id = Fixtures.eventID()
            do {
                _ = try await writer.submit(try write(id))
                acknowledged.append(id)
            } catch let error as CollectorError {
                refusal = error
                break
            }
        }
        #expect(!acknowledged.isEmpty)
        #expect(refusal?.code == "storage.full")
        #expect(refusal?.status == 503)
        #expect(refusal?.retryAfter == 30)
        #expect(store.monitor.current == .full)
        #expect(await store.checkStorage() == .full, "the health check's write must fail too")
        let rendered = metrics.render()
        #expect(rendered.contains("collector_storage_failures_total{kind=\"full\"}"))
        #expect(rendered.contains("collector_storage_state{state=\"full\"} 1"))

        _ = try await store.query("PRAGMA max_page_count = 1073741823")
        #expect(await store.checkStorage() == .ok)
        let after = Fixtures.eventID()
        _ = try await writer.submit(try write(after))
        #expect(store.monitor.current == .ok)
        for id in acknowledged + [after] {
            #expect(try await store.eventPayload(projectID: project.id, eventID: id) != nil, "acknowledged \(id) lost")
        }
        try await store.close()
    }

    /// A transaction whose PostgreSQL connection was lost fails with `storage.unavailable`, and
    /// none of its later statements runs on the new connection (outside the transaction): they
    /// are refused until its `ROLLBACK`. A pipeline on a lost connection leaves no connection in
    /// pipeline mode behind ("not allowed in pipeline mode" before); a failed `BEGIN` leaves
    /// nothing to refuse.
    @Test(.enabled(if: TestDatabase.isPostgres, "needs COLLECTOR_TEST_POSTGRES_URL"))
    func aLostTransactionIsNeverContinuedOnTheNewConnection() async throws {
        try await ShutdownAndLockWaitTests.withPostgres { _, url in
            let backend = try await PostgresBackend.connect(url: url)
            _ = try await backend.query("CREATE TABLE lost (v INT)", [])
            _ = try await backend.query("BEGIN", [])
            _ = try await backend.query("INSERT INTO lost VALUES (1)", [])
            try await Self.terminateConnections(to: url)
            let lost = await Self.failure { _ = try await backend.query("INSERT INTO lost VALUES (2)", []) }
            #expect(lost?.code == "storage.unavailable" && lost?.status == 503 && lost?.retryAfter != nil, "\(String(describing: lost))")
            let refused = await Self.failure { _ = try await backend.query("INSERT INTO lost VALUES (3)", []) }
            #expect(refused?.code == "storage.unavailable", "a statement of the lost transaction ran: \(String(describing: refused))")
            let commit = await Self.failure { _ = try await backend.query("COMMIT", []) }
            #expect(commit?.code == "storage.unavailable")
            #expect(try await backend.query("SELECT count(*) AS n FROM lost", []).first?.int("n") == 0)

            // A pipeline (how ingest batches run) on a connection the server ended.
            try await Self.terminateConnections(to: url)
            let pipelined = await Self.failure {
                _ = try await backend.run([SQLStatement("BEGIN"), SQLStatement("SELECT 1 AS one"), SQLStatement("INSERT INTO lost VALUES (4)")])
            }
            #expect(pipelined?.code == "storage.unavailable", "\(String(describing: pipelined))")
            _ = try await backend.query("ROLLBACK", [])
            _ = try await backend.run([SQLStatement("BEGIN"), SQLStatement("INSERT INTO lost VALUES (5)"), SQLStatement("COMMIT")])
            #expect(try await backend.query("SELECT count(*) AS n FROM lost", []).first?.int("n") == 1)

            // A BEGIN that fails with the connection began nothing: the next statement runs.
            try await Self.terminateConnections(to: url)
            let begin = await Self.failure { _ = try await backend.query("BEGIN", []) }
            #expect(begin?.code == "storage.unavailable")
            #expect(try await backend.query("SELECT count(*) AS n FROM lost", []).first?.int("n") == 1)
            try await backend.close()
        }
    }

    /// The server ends the collector's connection (as a restart does): the next request is
    /// answered 503 `storage.unavailable` with `Retry-After`, the one after it is stored on a new
    /// connection, `/health` is ok again and `/metrics` counted the failure. (Before: 500
    /// `storage.failed` for as long as the collector ran.)
    @Test(.enabled(if: TestDatabase.isPostgres, "needs COLLECTOR_TEST_POSTGRES_URL"))
    func aLostPostgresConnectionIsAnswered503AndMadeAgain() async throws {
        try await ShutdownAndLockWaitTests.withPostgres { database, url in
            let collector = try await ShutdownAndLockWaitTests.RunningCollector.start(BlockingWorkTests.configuration(database))
            let harness = collector.harness
            let before = Fixtures.eventID()
            #expect(try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent(id: before))).status == 200)

            try await Self.terminateConnections(to: url)
            let refused = try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent()))
            #expect(refused.status == 503)
            #expect(refused.json?["code"]?.stringValue == "storage.unavailable")
            #expect(refused.headers["retry-after"] != nil)

            let after = Fixtures.eventID()
            let stored = try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent(id: after)))
            #expect(stored.status == 200, "not reconnected: \(stored.text)")
            let health = try await harness.client.execute("/health")
            #expect(health.status == 200)
            #expect(health.json?["storage"]?.stringValue == "ok")
            for id in [before, after] {
                #expect(try await harness.api("/api/0/projects/\(harness.project.id)/events/\(id)").status == 200, "\(id) not stored")
            }
            let metrics = try await collector.metrics()
            #expect(metrics.contains("collector_storage_failures_total{kind=\"unavailable\"} 1"))
            #expect(metrics.contains("collector_storage_unavailable_total{code=\"storage.unavailable\"} 1"))
            #expect(metrics.contains("collector_storage_state{state=\"ok\"} 1"))
            #expect(collector.logged.contains("database connection lost"))
            #expect(collector.logged.contains("database connection made again"))
            _ = await collector.shutDown()
        }
    }
}
