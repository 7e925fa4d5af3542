import CLibPQ
@testable import CollectorApp
import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// The collector's blocking work stays off shared threads: a PostgreSQL statement waiting for a
/// lock blocks only its own connection's thread (not `NIOThreadPool.singleton`, not Swift's
/// cooperative pool), and the password KDF runs on threads of its own.
@Suite("Blocking work off shared threads")
struct BlockingWorkTests {
    /// How long a probe may take before it counts as stalled. A hang detector, not a timing: a
    /// probe that is not stalled answers in milliseconds; a stalled one would wait until the
    /// test releases its locks, which it does only after every probe has answered or timed out.
    static let stallLimit: Duration = .seconds(20)

    /// The value of `body` if it returns within `limit`, nil if it has not by then (it keeps
    /// running unawaited, so a stalled probe cannot hang the test).
    static func result<T: Sendable>(within limit: Duration = stallLimit, of body: @escaping @Sendable () async throws -> T) async -> Result<T, any Error>? {
        let (stream, continuation) = AsyncStream<Result<T, any Error>?>.makeStream()
        Task {
            do { continuation.yield(.success(try await body())) } catch { continuation.yield(.failure(error)) }
        }
        Task {
            try? await Task.sleep(for: limit)
            continuation.yield(nil)
        }
        var iterator = stream.makeAsyncIterator()
        let first = await iterator.next() ?? nil
        continuation.finish()
        return first
    }

    /// A libpq connection of the test's own, to hold locks the collector then waits for. Its
    /// statements never wait (taking an advisory lock nobody holds, reading `pg_locks`), so they
    /// run synchronously on the test's thread.
    final class LockHolder: @unchecked Sendable {
        struct Failure: Error { let message: String }
        private let connection: OpaquePointer

        init(url: String) throws {
            guard let connection = PQconnectdb(url) else { throw Failure(message: "libpq could not allocate a connection") }
            guard PQstatus(connection) == CONNECTION_OK else {
                defer { PQfinish(connection) }
                throw Failure(message: String(cString: PQerrorMessage(connection)))
            }
            self.connection = connection
        }

        /// The first column of the first row, as text.
        @discardableResult
        func value(_ sql: String) throws -> String? {
            let result = PQexec(connection, sql)
            defer { PQclear(result) }
            guard PQresultStatus(result) == PGRES_TUPLES_OK else { throw Failure(message: String(cString: PQerrorMessage(connection))) }
            guard PQntuples(result) > 0, PQnfields(result) > 0 else { return nil }
            return String(cString: PQgetvalue(result, 0, 0))
        }

        /// Advisory locks of this database that some connection is waiting for.
        func waitingAdvisoryLocks() throws -> Int {
            Int(try value("""
                SELECT count(*) FROM pg_locks
                WHERE locktype = 'advisory' AND NOT granted
                  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                """) ?? "") ?? -1
        }

        deinit { PQfinish(connection) }
    }

    static func configuration(_ database: CollectorConfiguration.Database) -> CollectorConfiguration {
        var configuration = CollectorConfiguration(database: database, dataDirectory: NSTemporaryDirectory())
        configuration.initialAPIToken = Harness.token
        configuration.adminPassword = Harness.adminPassword
        configuration.port = 0
        return configuration
    }

    /// A flag set once, read from any thread.
    final class Flag: Sendable {
        private let state = Atomic<Bool>(false)
        func set() { state.store(true, ordering: .sequentiallyConsistent) }
        var isSet: Bool { state.load(ordering: .sequentiallyConsistent) }
    }

    /// Two collectors on one PostgreSQL database, one of them waiting in an ingest commit for
    /// the project's advisory lock, others (one per thread of NIO's shared blocking pool, less
    /// one) waiting in `migrate()` for the migration lock, both locks held by another
    /// connection. Meanwhile work on `NIOThreadPool.singleton`, a new connection to the same
    /// database, and `/health` and a dashboard page of a collector on SQLite all answer; once
    /// the locks are released the waiting commit and migrations finish and the event is stored.
    /// (With libpq calls on the shared pool, the waiting statements fill it and the first two
    /// probes stall.)
    @Test(.enabled(if: TestDatabase.isPostgres, "needs COLLECTOR_TEST_POSTGRES_URL"))
    func statementsWaitingForPostgresLocksStallNeitherNIOsSharedPoolNorOtherRequests() async throws {
        let postgres = try await TestDatabase.fresh()
        guard case .postgres(let url) = postgres.database else { Issue.record("not a PostgreSQL database"); return }
        let sqlitePath = NSTemporaryDirectory() + "collector_blocking_\(UUID().uuidString).sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: sqlitePath + suffix) } }
        // Waiting statements needed to fill NIO's shared pool: the commit plus this many migrations.
        let sharedPoolThreads = NIOSingletons.blockingPoolThreadCountSuggestion
        do {
            // The commit waits for the lock while the probes run, however long they take here.
            var waitsLong = Self.configuration(postgres.database)
            waitsLong.lockTimeout = 3600
            try await Harness.run(configuration: waitsLong) { onPostgres in
                try await Harness.run(configuration: Self.configuration(.sqlite(path: sqlitePath))) { onSQLite in
                    // Second collectors' stores on the same database, connected before anything waits.
                    var migrating: [SQLStore] = []
                    for _ in 1..<max(sharedPoolThreads, 2) { migrating.append(try await TestDatabase.open(postgres.database)) }
                    let holder = try LockHolder(url: url)
                    try holder.value("SELECT pg_advisory_lock(\(onPostgres.project.id))")
                    try holder.value("SELECT pg_advisory_lock(\(SQLStore.migrationLockKey))")

                    let event = Fixtures.exceptionEvent(type: "WaitedForTheLockError")
                    let ingest = Task { try await onPostgres.post(body: Fixtures.envelope(event: event)) }
                    let migrations = migrating.map { store in Task { try await store.migrate() } }

                    // Every one of them is waiting for a lock before anything is probed.
                    var waiting = try holder.waitingAdvisoryLocks()
                    let deadline = ContinuousClock.now + Self.stallLimit
                    while waiting < 1 + migrating.count && ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(20))
                        waiting = try holder.waitingAdvisoryLocks()
                    }
                    #expect(waiting == 1 + migrating.count)

                    async let sharedPool = Self.result { try await NIOThreadPool.singleton.runIfActive { 42 } }
                    async let newConnection = Self.result { () -> [Int] in
                        let store = try await TestDatabase.open(postgres.database)
                        do {
                            let applied = try await store.appliedMigrations()
                            try await store.close()
                            return applied
                        } catch {
                            try? await store.close()
                            throw error
                        }
                    }
                    async let health = Self.result { try await onSQLite.client.execute("/health").status }
                    async let loginPage = Self.result { try await onSQLite.client.execute("/login").status }

                    let sharedPoolAnswer = try #require(await sharedPool, "NIOThreadPool.singleton stalled").get()
                    #expect(sharedPoolAnswer == 42)
                    let applied = try #require(await newConnection, "a new PostgreSQL connection stalled").get()
                    #expect(applied == SQLStore.migrations.map(\.version))
                    #expect(try #require(await health, "/health on SQLite stalled").get() == 200)
                    #expect(try #require(await loginPage, "the login page on SQLite stalled").get() == 200)
                    // The commit was still waiting while the probes answered.
                    #expect(try holder.waitingAdvisoryLocks() >= 1)

                    try holder.value("SELECT pg_advisory_unlock_all()")
                    let response = try await ingest.value
                    #expect(response.status == 200)
                    for migration in migrations { try await migration.value }
                    for store in migrating { try await store.close() }
                    let issues = try await onPostgres.issues()
                    #expect(issues.count == 1)
                    #expect(issues.first?["title"]?.stringValue?.contains("WaitedForTheLockError") == true)
                }
            }
        } catch {
            await postgres.drop()
            throw error
        }
        await postgres.drop()
    }

    /// A backend after `close` refuses statements with `storage.failed` instead of waiting, and a
    /// second `close` does nothing.
    @Test(.enabled(if: TestDatabase.isPostgres, "needs COLLECTOR_TEST_POSTGRES_URL"))
    func aClosedPostgresConnectionRefusesStatements() async throws {
        let backend = try await PostgresBackend.connect(url: try #require(TestDatabase.postgresURL))
        #expect(try await backend.query("SELECT 1 AS one", []).first?.int("one") == 1)
        try await backend.close()
        try await backend.close()
        await #expect { _ = try await backend.query("SELECT 1", []) } throws: { error in
            (error as? CollectorError)?.code == "storage.failed"
        }
    }

    /// A login's key derivation runs on the KDF threads: while a test job holds all of them,
    /// logins (one per core) stay pending and the store and the cooperative pool keep
    /// answering; released, the logins complete (refused: the account's stored hash is a decoy
    /// no password matches). Logins deriving on the cooperative pool instead would take every
    /// thread of it, so the probes could only answer once some login had finished.
    @Test func loginsWaitForTheKDFThreadsNotOnTheCooperativePool() async throws {
        try await TestDatabase.withStore { store in
            // A costly hash (about ten logins' worth), so a login deriving on the cooperative
            // pool would hold its thread for a while.
            _ = try await store.createAccount(name: "slow", passwordHash: PasswordHasher.decoy(iterations: 2_000_000),
                                              isAdmin: false, created: Date())
            let service = AccountService(store: store)
            let held = DispatchSemaphore(value: 0)
            let started = DispatchSemaphore(value: 0)
            for _ in 0..<PasswordHasher.kdfThreadCount {
                PasswordHasher.kdfThreads.submit { _ in
                    started.signal()
                    held.wait()
                }
            }
            for _ in 0..<PasswordHasher.kdfThreadCount { started.wait() }
            let finished = Flag()
            let logins = (0..<ProcessInfo.processInfo.activeProcessorCount).map { _ in
                Task {
                    defer { finished.set() }
                    _ = try await service.login(name: "slow", password: "anything")
                }
            }
            let cooperative = await Self.result { await Task.detached { 7 }.value }
            #expect(try #require(cooperative, "the cooperative pool stalled").get() == 7)
            let accounts = await Self.result { try await store.accountCount() }
            #expect(try #require(accounts, "the store stalled").get() == 1)
            #expect(!finished.isSet, "a login finished while every KDF thread was held")
            for _ in 0..<PasswordHasher.kdfThreadCount { held.signal() }
            for login in logins {
                await #expect(throws: LoginFailure(code: "login.invalid", retryAfter: nil)) { try await login.value }
            }
        }
    }
}
