import CLibPQ
@testable import CollectorApp
@testable import CollectorCommandLine
import CSQLite3
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// Waits on the database are bounded: a statement waiting for a lock another connection or
/// process holds fails after the lock timeout with 503 `storage.busy` (SQLite and PostgreSQL),
/// and a graceful shutdown cancels PostgreSQL statements still stuck after its grace period,
/// answering their requests with 503 `storage.cancelled`. Nothing of a refused request is stored.
@Suite("Bounded database waits and shutdown")
struct ShutdownAndLockWaitTests {
    typealias LockHolder = BlockingWorkTests.LockHolder

    /// A hang detector, not a timing (see `BlockingWorkTests.stallLimit`).
    static let stallLimit = BlockingWorkTests.stallLimit

    /// Keeps the messages logged through it (at `info` and above), to see what the collector did.
    struct RecordingLogHandler: LogHandler {
        final class Messages: Sendable {
            private let messages = Mutex<[String]>([])
            func append(_ message: String) { messages.withLock { $0.append(message) } }
            func contains(_ message: String) -> Bool { messages.withLock { $0.contains(message) } }
        }
        let messages: Messages
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
                 file: String, function: String, line: UInt) {
            messages.append(message.description)
        }
    }

    /// A collector run by the test, which starts its graceful shutdown when it wants to.
    struct RunningCollector {
        let harness: Harness
        let metrics: @Sendable () async throws -> String
        /// What the collector logged.
        let logged: RecordingLogHandler.Messages
        private let services: ServiceGroup
        let run: Task<Void, any Error>

        static func start(_ configuration: CollectorConfiguration) async throws -> RunningCollector {
            let logged = RecordingLogHandler.Messages()
            let logger = Logger(label: "collector-tests") { _ in RecordingLogHandler(messages: logged) }
            let (readyStream, readyContinuation) = AsyncStream<CollectorReady>.makeStream()
            let app = try await buildApplication(configuration, logger: logger) { ready in readyContinuation.yield(ready) }
            let services = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
            let run = Task { try await services.run() }
            var iterator = readyStream.makeAsyncIterator()
            guard let ready = await iterator.next() else { throw Harness.StartFailure() }
            let client = TestClient(baseURL: ready.url)
            let projects = try await client.execute("/api/0/projects", headers: ["Authorization": "Bearer \(Harness.token)"])
            let project = try #require(try Harness.decoder().decode([Harness.ProjectInfo].self, from: projects.body).first)
            return RunningCollector(harness: Harness(client: client, project: project),
                                    metrics: { try await client.execute("/metrics").text }, logged: logged, services: services, run: run)
        }

        /// Starts the graceful shutdown (what SIGTERM does) and returns once the collector has
        /// stopped, or nil if it has not within `stallLimit`.
        func shutDown() async -> Result<Void, any Error>? {
            await services.triggerGracefulShutdown()
            return await BlockingWorkTests.result(within: ShutdownAndLockWaitTests.stallLimit) { try await run.value }
        }

        /// True once the grace period of the collector's graceful shutdown has begun.
        var gracePeriodBegan: Bool { logged.contains(ShutdownGracePeriod.beginMessage) }
    }

    static func configuration(_ database: CollectorConfiguration.Database, lockTimeout: Double, gracePeriod: Double = 10) -> CollectorConfiguration {
        var configuration = BlockingWorkTests.configuration(database)
        configuration.lockTimeout = lockTimeout
        configuration.shutdownGracePeriod = gracePeriod
        return configuration
    }

    /// Waits (up to `stallLimit`) until `holder` sees a connection waiting for an advisory lock.
    static func waitUntilWaiting(_ holder: LockHolder) async throws {
        let deadline = ContinuousClock.now + stallLimit
        while try holder.waitingAdvisoryLocks() < 1 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try holder.waitingAdvisoryLocks() >= 1, "the ingest commit never waited for the lock")
    }

    static func storedEvents(_ holder: LockHolder) throws -> Int { Int(try holder.value("SELECT count(*) FROM events") ?? "") ?? -1 }

    /// Runs `body` with a new PostgreSQL database and its URL, dropped afterwards.
    static func withPostgres(_ body: (CollectorConfiguration.Database, String) async throws -> Void) async throws {
        let postgres = try await TestDatabase.fresh()
        guard case .postgres(let url) = postgres.database else {
            Issue.record("not a PostgreSQL database")
            return
        }
        do {
            try await body(postgres.database, url)
        } catch {
            await postgres.drop()
            throw error
        }
        await postgres.drop()
    }

    /// The graceful shutdown of a collector whose ingest commit waits for a lock that is never
    /// released: once the grace period is over the statement is cancelled, the request is
    /// answered 503 `storage.cancelled` with `Retry-After`, the collector stops, and the event
    /// is not stored. (Before: `close` waited for the statement, so the shutdown never ended.)
    @Test(.enabled(if: TestDatabase.isPostgres, "needs COLLECTOR_TEST_POSTGRES_URL"))
    func shutdownCancelsAStatementStuckOnALockAfterTheGracePeriod() async throws {
        try await Self.withPostgres { database, url in
            // A lock timeout far beyond the test, so only the shutdown can end the wait.
            let collector = try await RunningCollector.start(Self.configuration(database, lockTimeout: 3600, gracePeriod: 0.5))
            let holder = try LockHolder(url: url)
            try holder.value("SELECT pg_advisory_lock(\(collector.harness.project.id))")
            let ingest = Task { try await collector.harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent(type: "StuckAtShutdownError"))) }
            try await Self.waitUntilWaiting(holder)

            let stopped = try #require(await collector.shutDown(), "the collector did not stop after its grace period")
            try stopped.get()
            let response = try await ingest.value
            #expect(response.status == 503)
            #expect(response.json?["code"]?.stringValue == "storage.cancelled")
            #expect(response.headers["retry-after"] == "5")
            #expect(try Self.storedEvents(holder) == 0)
            // The lock is still held: the collector gave up waiting, it did not get the lock.
            try holder.value("SELECT pg_advisory_unlock_all()")
            #expect(try Self.storedEvents(holder) == 0)
        }
    }

    /// Within the grace period a waiting request may still finish: the lock is released after
    /// the shutdown's grace period began, and the request is answered 200 and its event stored.
    @Test(.enabled(if: TestDatabase.isPostgres, "needs COLLECTOR_TEST_POSTGRES_URL"))
    func aRequestWhoseLockFreesWithinTheGracePeriodCompletes() async throws {
        try await Self.withPostgres { database, url in
            let collector = try await RunningCollector.start(Self.configuration(database, lockTimeout: 3600, gracePeriod: 120))
            let holder = try LockHolder(url: url)
            try holder.value("SELECT pg_advisory_lock(\(collector.harness.project.id))")
            let ingest = Task { try await collector.harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent(type: "FinishedInGraceError"))) }
            try await Self.waitUntilWaiting(holder)

            async let stopped = collector.shutDown()
            let deadline = ContinuousClock.now + Self.stallLimit
            while !collector.gracePeriodBegan && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(collector.gracePeriodBegan, "the graceful shutdown did not begin")
            #expect(try holder.waitingAdvisoryLocks() >= 1, "the commit stopped waiting before the lock was released")
            try holder.value("SELECT pg_advisory_unlock_all()")

            let response = try await ingest.value
            #expect(response.status == 200)
            try #require(await stopped, "the collector did not stop once its last request finished").get()
            #expect(try Self.storedEvents(holder) == 1)
        }
    }

    /// During normal operation a commit waiting longer than the lock timeout for another
    /// connection's lock fails with 503 `storage.busy` and `Retry-After: 1`, counted in the
    /// metrics; nothing is stored, and the same envelope is stored once the lock is free.
    @Test(.enabled(if: TestDatabase.isPostgres, "needs COLLECTOR_TEST_POSTGRES_URL"))
    func aPostgresLockWaitPastTheLockTimeoutIsAnsweredBusy() async throws {
        try await Self.withPostgres { database, url in
            let collector = try await RunningCollector.start(Self.configuration(database, lockTimeout: 0.2))
            let holder = try LockHolder(url: url)
            try holder.value("SELECT pg_advisory_lock(\(collector.harness.project.id))")
            let envelope = Fixtures.envelope(event: Fixtures.exceptionEvent(type: "LockTimeoutError"))
            let refused = try await collector.harness.post(body: envelope)
            #expect(refused.status == 503)
            #expect(refused.json?["code"]?.stringValue == "storage.busy")
            #expect(refused.headers["retry-after"] == "1")
            let metrics = try await collector.metrics()
            #expect(metrics.contains("collector_storage_unavailable_total{code=\"storage.busy\"} 1"))
            #expect(metrics.contains("collector_rejected_requests_total{reason=\"storage.busy\"} 1"))
            #expect(try Self.storedEvents(holder) == 0)

            try holder.value("SELECT pg_advisory_unlock_all()")
            #expect(try await collector.harness.post(body: envelope).status == 200)
            #expect(try Self.storedEvents(holder) == 1)
            try #require(await collector.shutDown(), "the collector did not stop").get()
        }
    }

    /// `migrate()` waits for another collector's migration however long it takes: the lock
    /// timeout does not apply to it (the migration lock is held longer than the timeout here).
    @Test(.enabled(if: TestDatabase.isPostgres, "needs COLLECTOR_TEST_POSTGRES_URL"))
    func migrationWaitsForAnotherCollectorsMigrationBeyondTheLockTimeout() async throws {
        try await Self.withPostgres { _, url in
            let store = try await SQLStore.openPostgres(url: url, logger: Logger(label: "collector-tests"), lockTimeout: 0.05)
            let holder = try LockHolder(url: url)
            try holder.value("SELECT pg_advisory_lock(\(SQLStore.migrationLockKey))")
            let migration = Task { try await store.migrate() }
            try await Self.waitUntilWaiting(holder)
            // Held well past the 50 ms lock timeout before it is released.
            try holder.value("SELECT pg_sleep(0.5)::text")
            try holder.value("SELECT pg_advisory_unlock_all()::text")
            try await migration.value
            #expect(try await store.appliedMigrations() == SQLStore.migrations.map(\.version))
            // The lock timeout applies again after the migration.
            #expect(try await store.query("SHOW lock_timeout").first?.string("lock_timeout") == "50ms")
            try await store.close()
        }
    }

    /// `cancelForShutdown` cancels a running statement (`storage.cancelled`), refuses statements
    /// after it with the same error, and the connection still closes.
    @Test(.enabled(if: TestDatabase.isPostgres, "needs COLLECTOR_TEST_POSTGRES_URL"))
    func cancelForShutdownCancelsTheRunningStatementAndRefusesLaterOnes() async throws {
        let backend = try await PostgresBackend.connect(url: try #require(TestDatabase.postgresURL))
        let sleeping = Task { try await backend.query("SELECT pg_sleep(3600)", []) }
        let holder = try LockHolder(url: try #require(TestDatabase.postgresURL))
        let deadline = ContinuousClock.now + Self.stallLimit
        while try holder.value("SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(3600)' AND state = 'active'") != "1"
                && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let cancelled = try #require(await BlockingWorkTests.result { await backend.cancelForShutdown() }, "cancelling hung")
        _ = try cancelled.get()
        await #expect { _ = try await sleeping.value } throws: { error in
            (error as? CollectorError)?.code == "storage.cancelled" && (error as? CollectorError)?.status == 503
        }
        await #expect { _ = try await backend.query("SELECT 1", []) } throws: { error in
            (error as? CollectorError)?.code == "storage.cancelled"
        }
        try await backend.close()
    }

    /// SQLite: while another connection (another process, such as `shield-collector prune`)
    /// holds the write lock (`BEGIN IMMEDIATE`) longer than the lock timeout, ingest is answered
    /// 503 `storage.busy` with `Retry-After: 1`, counted in the metrics, and nothing is stored;
    /// once the lock is released the same envelope is stored.
    @Test func aSQLiteWriteLockHeldPastTheLockTimeoutIsAnsweredBusy() async throws {
        let path = NSTemporaryDirectory() + "collector_busy_\(UUID().uuidString).sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        try await Harness.run(configuration: Self.configuration(.sqlite(path: path), lockTimeout: 0.2)) { harness in
            var other: OpaquePointer?
            #expect(sqlite3_open_v2(path, &other, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK)
            defer { sqlite3_close_v2(other) }
            #expect(sqlite3_exec(other, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK)

            let envelope = Fixtures.envelope(event: Fixtures.exceptionEvent(type: "WriteLockedError"))
            let refused = try await harness.post(body: envelope)
            #expect(refused.status == 503)
            #expect(refused.json?["code"]?.stringValue == "storage.busy")
            #expect(refused.headers["retry-after"] == "1")
            let metrics = try await harness.client.execute("/metrics").text
            #expect(metrics.contains("collector_storage_unavailable_total{code=\"storage.busy\"} 1"))
            #expect(metrics.contains("collector_rejected_requests_total{reason=\"storage.busy\"} 1"))

            #expect(sqlite3_exec(other, "COMMIT", nil, nil, nil) == SQLITE_OK)
            #expect(try await harness.issues().isEmpty)
            #expect(try await harness.post(body: envelope).status == 200)
            #expect(try await harness.issues().count == 1)
        }
    }

    /// SQLite: a dashboard form and the management API refused because another connection holds
    /// the write lock past the lock timeout are answered 503 `storage.busy` with `Retry-After: 1`,
    /// as ingest is (the dashboard's HTML error page too), and counted in the metrics; nothing
    /// changes, and the same requests succeed once the lock is released.
    @Test func dashboardAndAPIAnswersToABusyDatabaseCarryRetryAfter() async throws {
        let path = NSTemporaryDirectory() + "collector_busy_pages_\(UUID().uuidString).sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        try await Harness.run(configuration: Self.configuration(.sqlite(path: path), lockTimeout: 0.2)) { harness in
            #expect(try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent(type: "BusyPageError"))).status == 200)
            let browser = Browser(baseURL: harness.client.baseURL)
            #expect(try await browser.logIn().status == 303)
            let csrf = try #require(Browser.csrfToken(in: try await browser.get("/issues/1")))

            var other: OpaquePointer?
            #expect(sqlite3_open_v2(path, &other, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK)
            defer { sqlite3_close_v2(other) }
            #expect(sqlite3_exec(other, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK)

            let page = try await browser.post("/issues/1/status", form: [("status", "resolved"), ("csrf_token", csrf)])
            #expect(page.status == 503)
            #expect(page.headers["retry-after"] == "1")
            #expect(page.headers["content-type"]?.hasPrefix("text/html") == true)
            #expect(page.text.contains("storage.busy"))
            let api = try await harness.api("/api/0/issues/1", method: "PUT", json: ["status": "ignored"])
            #expect(api.status == 503)
            #expect(api.json?["code"]?.stringValue == "storage.busy")
            #expect(api.headers["retry-after"] == "1")
            let metrics = try await harness.client.execute("/metrics").text
            #expect(metrics.contains("collector_storage_unavailable_total{code=\"storage.busy\"} 2"), "\(metrics)")

            #expect(sqlite3_exec(other, "COMMIT", nil, nil, nil) == SQLITE_OK)
            #expect(try await harness.api("/api/0/issues/1").json?["status"]?.stringValue == "unresolved")
            #expect(try await browser.post("/issues/1/status", form: [("status", "resolved"), ("csrf_token", csrf)]).status == 303)
            #expect(try await harness.api("/api/0/issues/1", method: "PUT", json: ["status": "ignored"]).status == 200)
        }
    }

    /// `serve --lock-timeout` and `--shutdown-grace-period` set the configuration (defaults 5 and
    /// 10 s); values the configuration would refuse are refused with the option named.
    @Test func theServeOptionsSetTheLockTimeoutAndTheGracePeriod() throws {
        let defaults = try IngestQueueOptionsTests.serve([]).makeConfiguration(environment: [:])
        #expect(defaults.lockTimeout == 5 && defaults.shutdownGracePeriod == 10)
        let set = try IngestQueueOptionsTests.serve(["--lock-timeout", "0.25", "--shutdown-grace-period", "0"])
            .makeConfiguration(environment: [:])
        #expect(set.lockTimeout == 0.25 && set.shutdownGracePeriod == 0)
        try set.validate()
        #expect(IngestQueueOptionsTests.refusal(["--lock-timeout", "0"])?.contains("--lock-timeout must be between 0.001 and 86400 seconds") == true)
        #expect(IngestQueueOptionsTests.refusal(["--shutdown-grace-period=-1"])?.contains("--shutdown-grace-period must be 0 or more seconds") == true)
    }

    /// Lock timeouts outside 0.001...86,400 s and negative grace periods are refused before
    /// anything is opened.
    @Test func invalidLockTimeoutsAndGracePeriodsAreRefused() async throws {
        for (lockTimeout, grace, setting) in [(0.0, 1.0, "lockTimeout"), (Double.nan, 1.0, "lockTimeout"),
                                              (100_000.0, 1.0, "lockTimeout"), (5.0, -1.0, "shutdownGracePeriod"),
                                              (5.0, Double.infinity, "shutdownGracePeriod")] {
            let configuration = Self.configuration(.sqlite(path: ":memory:"), lockTimeout: lockTimeout, gracePeriod: grace)
            #expect { try configuration.validate() } throws: { error in (error as? CollectorConfigurationError)?.setting == setting }
        }
        try Self.configuration(.sqlite(path: ":memory:"), lockTimeout: 0.001, gracePeriod: 0).validate()
    }
}
