import Foundation
import Logging

/// `CollectorStore` over SQL: SQLite (a file, the default) or PostgreSQL.
///
/// One writer connection per process: every write runs under one async lock, so a transaction's
/// statements never interleave with another's. Ingest writes go through `commitIngest`, which
/// stores several requests in one transaction (see `SQLStore+Ingest.swift`). Reads (pages, API
/// reads, ingest's project lookup) run on a `ReadPool` of their own connections and never take
/// the writer's lock: SQLite runs in WAL mode with the writer as the only writer and read-only
/// connections reading their snapshots; PostgreSQL has a connection per reader. A dashboard
/// page or management API read runs whole (its queries and the building of its answer) on one of
/// a second pool's connections, the page connections, whose threads run below ingest's priority
/// (`withPageRead`, `ThreadPriority`). A private in-memory SQLite database (`":memory:"`) has no
/// read pools: its reads share the writer's connection and lock. Several processes may share one PostgreSQL database: an event is stored
/// under a transaction-scoped advisory lock on its project, so concurrent ingest of the same
/// stream stores every event once and keeps counts exact. Times are seconds since 1970.
public final class SQLStore: CollectorStore {
    let backend: any SQLBackend
    /// The read connections (nil: reads use the writer's connection under its lock).
    let readers: ReadPool?
    /// The page connections (`withPageRead`; nil: pages run where they were called, their reads
    /// on `readers`).
    let pageReaders: ReadPool?
    /// The pages' CPU while ingest runs (`PageBudget`).
    let pageBudget = PageBudget()
    private let lock = AsyncLock()
    private let logger: Logger
    /// The database's availability as this store's operations found it (`/health`, `/metrics`).
    public let monitor: StorageMonitor

    /// Opens (creating when missing) the SQLite database at `path`; `":memory:"` opens a private
    /// in-memory database. Call `migrate()` before use. A statement waits up to `lockTimeout`
    /// seconds (default 5) for a lock another process holds, then fails with `storage.busy`.
    /// `readConnections` read-only connections (default `defaultReadConnections`), each with a
    /// thread of its own, serve the reads; `pageConnections` more (default
    /// `defaultPageConnections`; none without read connections), each with a thread of its own at
    /// a lower priority, serve `withPageRead`.
    public static func openSQLite(path: String, logger: Logger, lockTimeout: Double = 5,
                                  readConnections: Int = defaultReadConnections,
                                  pageConnections: Int = defaultPageConnections) async throws -> SQLStore {
        let timeout = LockTimeout(seconds: lockTimeout)
        let writer = try await SQLiteBackend.open(path: path, logger: logger, lockTimeout: timeout)
        guard path != ":memory:", readConnections > 0 else { return SQLStore(backend: writer, readers: nil, logger: logger) }
        var connections: [ReadConnection] = []
        var pages: [ReadConnection] = []
        do {
            for index in 0..<readConnections {
                let reader = try await SQLiteBackend.open(path: path, logger: logger, lockTimeout: timeout, readOnly: true)
                connections.append(ReadConnection(backend: reader, executor: WriterThreadExecutor(name: "sqlite-reader-\(index)")))
            }
            for index in 0..<max(pageConnections, 0) {
                let reader = try await SQLiteBackend.open(path: path, logger: logger, lockTimeout: timeout, readOnly: true)
                pages.append(ReadConnection(backend: reader, executor: WriterThreadExecutor(name: "sqlite-page-\(index)", lowPriority: true)))
            }
        } catch {
            await closeAfterFailedOpen(connections + pages, writer: writer)
            throw error
        }
        return SQLStore(backend: writer, readers: ReadPool(connections), pageReaders: pages.isEmpty ? nil : ReadPool(pages), logger: logger)
    }

    /// Closes what an `open…` opened before one of its connections failed.
    private static func closeAfterFailedOpen(_ connections: [ReadConnection], writer: any SQLBackend) async {
        for connection in connections {
            try? await connection.backend.close()
            connection.executor?.stop()
        }
        try? await writer.close()
    }

    /// Read connections a store opens unless told otherwise: two, so that a slow page leaves
    /// another reader for the next request.
    public static let defaultReadConnections = 2

    /// Page connections a store opens unless told otherwise: two, one per core of the machine the
    /// benchmark runs on. They bound the pages built at once: a further page waits for one of
    /// them (first come, first served) instead of taking more CPU from ingest.
    public static let defaultPageConnections = 2

    /// Connects to PostgreSQL (`postgres://user:password@host:port/database`). Call `migrate()`
    /// before use. A statement waits up to `lockTimeout` seconds (default 5; the session's
    /// `lock_timeout`) for a lock another connection holds, then fails with `storage.busy`;
    /// `migrate()` alone waits without that bound for another collector's migration.
    /// `readConnections` more connections (default `defaultReadConnections`) serve the reads;
    /// `pageConnections` more (default `defaultPageConnections`; none without read connections)
    /// serve `withPageRead`, each with a thread at a lower priority for the page's own work
    /// besides its libpq thread, also at a lower priority. Each reconnects by itself after losing
    /// the server, as the writer does.
    public static func openPostgres(url: String, logger: Logger, lockTimeout: Double = 5,
                                    readConnections: Int = defaultReadConnections,
                                    pageConnections: Int = defaultPageConnections) async throws -> SQLStore {
        let timeout = LockTimeout(seconds: lockTimeout)
        let writer = try await PostgresBackend.connect(url: url, lockTimeout: timeout, logger: logger)
        var connections: [ReadConnection] = []
        var pages: [ReadConnection] = []
        do {
            for _ in 0..<readConnections {
                connections.append(ReadConnection(backend: try await PostgresBackend.connect(url: url, lockTimeout: timeout, logger: logger),
                                                   executor: nil))
            }
            for index in 0..<(readConnections > 0 ? max(pageConnections, 0) : 0) {
                let backend = try await PostgresBackend.connect(url: url, lockTimeout: timeout, logger: logger, lowPriority: true)
                pages.append(ReadConnection(backend: backend, executor: WriterThreadExecutor(name: "postgres-page-\(index)", lowPriority: true)))
            }
        } catch {
            await closeAfterFailedOpen(connections + pages, writer: writer)
            throw error
        }
        return SQLStore(backend: writer, readers: connections.isEmpty ? nil : ReadPool(connections),
                        pageReaders: pages.isEmpty ? nil : ReadPool(pages), logger: logger)
    }

    init(backend: any SQLBackend, readers: ReadPool? = nil, pageReaders: ReadPool? = nil, logger: Logger) {
        self.backend = backend
        self.readers = readers
        self.pageReaders = pageReaders
        self.logger = logger
        self.monitor = StorageMonitor(logger: logger, database: backend.dialect == .sqlite ? "sqlite" : "postgres")
    }

    /// Which database this store writes to ("sqlite" or "postgres").
    public var databaseKind: String { backend.dialect == .sqlite ? "sqlite" : "postgres" }

    public func close() async throws {
        var failure: (any Error)?
        do { try await pageReaders?.close() } catch { failure = error }
        do { try await readers?.close() } catch { failure = failure ?? error }
        try await backend.close()
        if let failure { throw failure }
    }

    public func cancelForShutdown() async {
        await backend.cancelForShutdown()
        await readers?.cancelForShutdown()
        await pageReaders?.cancelForShutdown()
    }

    // MARK: Helpers

    /// The read connection the current task's `read` or `withPageRead` body runs on (nil outside one).
    @TaskLocal static var readConnection: ReadConnection?

    /// Runs `sql` on the current `read` body's connection, else on the writer's.
    func query(_ sql: String, _ binds: [DBValue] = []) async throws -> [DBRow] {
        try await (Self.readConnection?.backend ?? backend).query(sql, binds)
    }

    /// Runs `body`, whose statements only read, on a read connection (its `query` calls go there),
    /// never waiting for the writer's lock; without a read pool, under the writer's lock. Observed
    /// by the monitor like any operation (a success ends `unavailable`). A read that fails with
    /// `storage.unavailable` (its connection was lost) runs once more. Inside another `read`
    /// body it runs on that body's connection (so nested reads never wait for a second one).
    func read<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        if Self.readConnection != nil { return try await body() }
        guard let readers else { return try await serialized(body) }
        return try await monitor.observe(write: false) { try await onConnection(of: readers, body) }
    }

    /// Runs `body`, a dashboard page or a management API read (its queries and the building of
    /// its answer), whole on one of the page connections' threads, which run below ingest's
    /// priority (`ThreadPriority`); its reads use that connection. When every page connection is
    /// lent, it waits for one (first come, first served), so pages built at once never outnumber
    /// them. A write inside `body` leaves the page thread for the writer (`serialized`).
    /// Without page connections (an in-memory database), `body` runs where it was called. As for
    /// `read`, the monitor observes the page as one read (a connection lost and the page run once
    /// more counts as no failure), and a body that fails with `storage.unavailable` runs once more.
    /// A write in `body` is observed by itself; were its failure to end the page, the page would
    /// count it again (no page lets a write's failure through: an API read logs a failure to
    /// record its token's use). While ingest runs, a page first waits out the pause the previous
    /// pages' CPU time earned (`PageBudget`).
    public func withPageRead<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        if Self.readConnection != nil { return try await body() }
        guard let pageReaders else { return try await body() }
        await pageBudget.waitTurn()
        return try await monitor.observe(write: false) { try await onConnection(of: pageReaders) { try await pageBudget.measure(body) } }
    }

    /// `read`'s and `withPageRead`'s work: `body` on a connection of `pool`, once more when it
    /// fails with `storage.unavailable`.
    private func onConnection<T: Sendable>(of pool: ReadPool, _ body: () async throws -> T) async throws -> T {
        try await pool.withConnection { connection in
            try await Self.$readConnection.withValue(connection) {
                do {
                    return try await body()
                } catch let error as CollectorError where error.code == "storage.unavailable" {
                    // The connection was lost (the server restarted or ended it) and dropped:
                    // a read changes nothing, so it runs once more, on a new connection when the
                    // server answers again (else it fails at once, with Retry-After).
                    logger.notice("read retried after its connection was lost", metadata: ["error": "\(error.message)"])
                    return try await body()
                }
            }
        }
    }

    /// Runs `body` under the store's lock; `write`: its success means a write committed (see
    /// `StorageMonitor`). Called inside a `read` or `withPageRead` body (an API read records its
    /// token's use), it runs outside it: on the writer's connection, not the read one, and on the
    /// global pool, not a page thread, so the writer's lock is never held at a page's priority.
    func serialized<T: Sendable>(write: Bool = false, _ body: () async throws -> T) async throws -> T {
        if Self.readConnection != nil { return try await Self.outsideRead { try await serialized(write: write, body) } }
        return try await monitor.observe(write: write) { try await lock.withLock(body) }
    }

    /// Runs `body` with no read connection, on the global concurrent executor (see `serialized`).
    private static func outsideRead<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await $readConnection.withValue(nil) {
            try await withTaskExecutorPreference(globalConcurrentExecutor) { try await body() }
        }
    }

    /// Runs `body` in a transaction under the store's lock (a write: see `StorageMonitor`);
    /// outside a read body, as `serialized` is.
    func transaction<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        if Self.readConnection != nil { return try await Self.outsideRead { try await transaction(body) } }
        return try await monitor.observe(write: true) {
            try await lock.withLock {
                _ = try await query(backend.dialect == .sqlite ? "BEGIN IMMEDIATE" : "BEGIN")
                do {
                    let result = try await body()
                    _ = try await query("COMMIT")
                    return result
                } catch {
                    _ = try? await query("ROLLBACK")
                    throw error
                }
            }
        }
    }

    /// Bytes the health check writes while the disk was last seen full: about one event batch's
    /// worth, random so that PostgreSQL cannot compress it away.
    static let storageProbeBytes = 64 * 1024

    /// The storage state, checked now: a read on the writer's connection and one on a read
    /// connection when the last state was `ok` or `unavailable` (on PostgreSQL each reconnects
    /// when its connection was lost and the backoff allows); when it was
    /// `full`, a committed write of `storageProbeBytes` into `storage_probe`, deleted again, so
    /// `/health` sees space come back without waiting for ingest. A failure that is neither
    /// `unavailable` nor `full` is reported as `unavailable`.
    public func checkStorage() async -> StorageState {
        do {
            if monitor.current == .full {
                let data = Data((0..<Self.storageProbeBytes).map { _ in UInt8.random(in: 0...255) })
                try await transaction {
                    _ = try await query("DELETE FROM storage_probe")
                    _ = try await query("INSERT INTO storage_probe (id, data) VALUES (1, ?)", [.blob(data)])
                }
                try await transaction { _ = try await query("DELETE FROM storage_probe") }
            } else {
                _ = try await serialized { try await query("SELECT version FROM schema_migrations LIMIT 1") }
            }
            // The read connections too (on PostgreSQL one that lost the server reconnects here).
            if readers != nil { _ = try await read { try await query("SELECT version FROM schema_migrations LIMIT 1") } }
        } catch {
            logger.error("health check failed", metadata: ["error": "\(error)"])
            let state = monitor.current
            return state == .ok ? .unavailable : state
        }
        return monitor.current
    }

    static func text(_ value: String?) -> DBValue { value.map { .text($0) } ?? .null }
    static func time(_ date: Date) -> DBValue { .double(date.timeIntervalSince1970) }
    private static func blob(_ data: Data) -> DBValue { .blob(data) }
    static func int(_ value: Int64) -> DBValue { .int(value) }
    static func int(_ value: Int) -> DBValue { .int(Int64(value)) }

    // MARK: Migrations

    /// Schema versions in order; a migration is never edited once released, only followed by a new one.
    static let migrations: [(version: Int, statements: [String])] = [
        (1, [
            """
            CREATE TABLE projects (
                id {serial}, name TEXT NOT NULL, public_key TEXT NOT NULL UNIQUE,
                config_signing_key {blob} NOT NULL, created_at {real} NOT NULL)
            """,
            """
            CREATE TABLE issues (
                id {serial}, project_id {int} NOT NULL REFERENCES projects(id),
                fingerprint_hash TEXT NOT NULL, grouping_algorithm TEXT NOT NULL, title TEXT NOT NULL,
                culprit TEXT NOT NULL, level TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'unresolved',
                resolved_in_release TEXT, first_seen {real} NOT NULL, last_seen {real} NOT NULL,
                first_release TEXT, last_release TEXT, event_count {int} NOT NULL DEFAULT 0,
                user_count {int} NOT NULL DEFAULT 0, UNIQUE (project_id, fingerprint_hash))
            """,
            """
            CREATE TABLE events (
                id {serial}, project_id {int} NOT NULL REFERENCES projects(id),
                event_id TEXT NOT NULL, issue_id {int} NOT NULL REFERENCES issues(id), received {real} NOT NULL,
                timestamp {real} NOT NULL, level TEXT NOT NULL, platform TEXT, release TEXT, environment TEXT,
                user_key TEXT, incident_guard TEXT, payload {blob} NOT NULL,
                payload_encoding TEXT NOT NULL DEFAULT 'identity', UNIQUE (project_id, event_id))
            """,
            "CREATE INDEX events_issue ON events (issue_id, received)",
            "CREATE INDEX events_received ON events (received)",
            """
            CREATE VIEW incidents AS
                SELECT project_id, event_id, issue_id, incident_guard AS guard_name, release, received
                FROM events WHERE incident_guard IS NOT NULL
            """,
            """
            CREATE TABLE issue_users (
                issue_id {int} NOT NULL REFERENCES issues(id), user_key TEXT NOT NULL,
                PRIMARY KEY (issue_id, user_key)){without_rowid}
            """,
            """
            CREATE TABLE issue_releases (
                issue_id {int} NOT NULL REFERENCES issues(id), release TEXT NOT NULL,
                event_count {int} NOT NULL, first_seen {real} NOT NULL, last_seen {real} NOT NULL,
                PRIMARY KEY (issue_id, release)){without_rowid}
            """,
            """
            CREATE TABLE sessions (
                project_id {int} NOT NULL REFERENCES projects(id), sid TEXT NOT NULL, distinct_id TEXT,
                seq {int} NOT NULL, started {real} NOT NULL, last_update {real} NOT NULL, status TEXT NOT NULL,
                errors {int} NOT NULL, release TEXT NOT NULL, environment TEXT, received {real} NOT NULL,
                PRIMARY KEY (project_id, sid))
            """,
            """
            CREATE TABLE session_aggregates (
                project_id {int} NOT NULL REFERENCES projects(id), release TEXT NOT NULL,
                environment TEXT NOT NULL, bucket {real} NOT NULL, exited {int} NOT NULL,
                errored {int} NOT NULL, abnormal {int} NOT NULL, crashed {int} NOT NULL,
                PRIMARY KEY (project_id, release, environment, bucket))
            """,
            """
            CREATE TABLE attachments (
                id {serial}, project_id {int} NOT NULL REFERENCES projects(id),
                event_id TEXT, filename TEXT NOT NULL, content_type TEXT, attachment_type TEXT,
                size {int} NOT NULL, data {blob} NOT NULL, received {real} NOT NULL)
            """,
            """
            CREATE TABLE client_reports (
                project_id {int} NOT NULL REFERENCES projects(id), reason TEXT NOT NULL, category TEXT NOT NULL,
                quantity {int} NOT NULL, last_received {real} NOT NULL,
                PRIMARY KEY (project_id, reason, category))
            """,
            """
            CREATE TABLE sdk_configs (
                project_id {int} NOT NULL REFERENCES projects(id), version {int} NOT NULL,
                document {blob} NOT NULL, signature TEXT, created_at {real} NOT NULL, restored_from {int},
                PRIMARY KEY (project_id, version))
            """,
            """
            CREATE TABLE accounts (
                id {serial}, email TEXT NOT NULL UNIQUE, password_hash TEXT NOT NULL,
                is_admin {int} NOT NULL DEFAULT 0, created_at {real} NOT NULL)
            """,
            """
            CREATE TABLE api_tokens (
                token_hash TEXT PRIMARY KEY, name TEXT NOT NULL, account_id {int} REFERENCES accounts(id),
                created_at {real} NOT NULL)
            """,
        ]),
        (2, [
            """
            CREATE TABLE web_sessions (
                token_hash TEXT PRIMARY KEY, account_id {int} NOT NULL REFERENCES accounts(id),
                csrf_token TEXT NOT NULL, expires_at {real} NOT NULL)
            """,
        ]),
        (3, [
            // Dashboard logins as `AccountStore` keeps them (with their creation time); replaces
            // version 2's `web_sessions`, which no release used. IF NOT EXISTS: development
            // databases of the dashboard branch already have `login_sessions` (same columns).
            "DROP TABLE web_sessions",
            """
            CREATE TABLE IF NOT EXISTS login_sessions (
                token_hash TEXT PRIMARY KEY, account_id {int} NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                csrf_token TEXT NOT NULL, created_at {real} NOT NULL, expires_at {real} NOT NULL)
            """,
            "CREATE INDEX IF NOT EXISTS login_sessions_expires ON login_sessions (expires_at)",
        ]),
        (4, [
            // When the API last accepted each token, for the dashboard's token list (AccountStore).
            "ALTER TABLE api_tokens ADD COLUMN last_used_at {real}",
        ]),
        (5, [
            // Who published each SDK configuration version (SDKConfigPublisher): the account's
            // login name and, through the API, the token's name. Text, not references, so the
            // history outlives removed accounts and tokens; NULL for earlier versions.
            "ALTER TABLE sdk_configs ADD COLUMN published_by_account TEXT",
            "ALTER TABLE sdk_configs ADD COLUMN published_by_token TEXT",
        ]),
        (6, [
            // A row the health check writes and deletes again while the disk was last seen full
            // (`checkStorage`), to see space come back without waiting for ingest. Empty otherwise.
            "CREATE TABLE storage_probe (id {int} PRIMARY KEY, data {blob} NOT NULL)",
        ]),
        (7, [
            // Event time is the event's own timestamp clamped to its arrival (never later) and to
            // `EventRecord.maxTimestampAge` (90 days) before it; issue and release first/last
            // seen follow it (kept where retention already deleted the events).
            """
            UPDATE events SET timestamp = CASE WHEN timestamp > received THEN received ELSE received - 7776000 END
            WHERE timestamp > received OR timestamp < received - 7776000
            """,
            """
            CREATE TABLE migration7_times (
                issue_id {int} NOT NULL, release TEXT NOT NULL, first_ts {real} NOT NULL, last_ts {real} NOT NULL,
                PRIMARY KEY (issue_id, release))
            """,
            """
            INSERT INTO migration7_times (issue_id, release, first_ts, last_ts)
                SELECT issue_id, coalesce(release, ''), min(timestamp), max(timestamp) FROM events GROUP BY issue_id, coalesce(release, '')
            """,
            """
            UPDATE issues SET
                first_seen = (SELECT CASE WHEN min(t.first_ts) < issues.first_seen THEN min(t.first_ts) ELSE issues.first_seen END
                              FROM migration7_times t WHERE t.issue_id = issues.id),
                last_seen = (SELECT coalesce(max(t.last_ts), issues.last_seen) FROM migration7_times t WHERE t.issue_id = issues.id)
            """,
            """
            UPDATE issue_releases SET
                first_seen = (SELECT CASE WHEN min(t.first_ts) < issue_releases.first_seen THEN min(t.first_ts)
                                  ELSE issue_releases.first_seen END
                              FROM migration7_times t WHERE t.issue_id = issue_releases.issue_id AND t.release = issue_releases.release),
                last_seen = (SELECT coalesce(max(t.last_ts), issue_releases.last_seen) FROM migration7_times t
                             WHERE t.issue_id = issue_releases.issue_id AND t.release = issue_releases.release)
            """,
            "DROP TABLE migration7_times",
            // Prevented crashes by event time (the prevented-crashes page).
            "DROP VIEW incidents",
            """
            CREATE VIEW incidents AS
                SELECT project_id, event_id, issue_id, incident_guard AS guard_name, release, received, timestamp
                FROM events WHERE incident_guard IS NOT NULL
            """,
            "CREATE INDEX events_incident_time ON events (project_id, timestamp) WHERE incident_guard IS NOT NULL",
            // Events per issue and UTC day (days since 1970), by event time: the issue list's sparklines.
            """
            CREATE TABLE issue_days (
                issue_id {int} NOT NULL REFERENCES issues(id), day {int} NOT NULL, events {int} NOT NULL,
                PRIMARY KEY (issue_id, day)){without_rowid}
            """,
            """
            INSERT INTO issue_days (issue_id, day, events)
                SELECT issue_id, CAST({floor}(timestamp / 86400) AS {int}), count(*) FROM events
                GROUP BY issue_id, CAST({floor}(timestamp / 86400) AS {int})
            """,
            // The environments and guards (`facet` 'environment' or 'guard') of an issue's events:
            // the issue list's filters.
            """
            CREATE TABLE issue_facets (
                issue_id {int} NOT NULL REFERENCES issues(id), facet TEXT NOT NULL, value TEXT NOT NULL,
                PRIMARY KEY (issue_id, facet, value)){without_rowid}
            """,
            "CREATE INDEX issue_facets_value ON issue_facets (facet, value)",
            "INSERT INTO issue_facets (issue_id, facet, value) SELECT DISTINCT issue_id, 'environment', environment FROM events WHERE environment IS NOT NULL",
            "INSERT INTO issue_facets (issue_id, facet, value) SELECT DISTINCT issue_id, 'guard', incident_guard FROM events WHERE incident_guard IS NOT NULL",
            // The issue list's orders, each ending with the id (the keyset's tie-break).
            "CREATE INDEX issues_last_seen ON issues (project_id, last_seen, id)",
            "CREATE INDEX issues_first_seen ON issues (project_id, first_seen, id)",
            "CREATE INDEX issues_events ON issues (project_id, event_count, id)",
            "CREATE INDEX issues_users ON issues (project_id, user_count, id)",
        ]),
        (8, [
            // An event's attachments, listed on the issue page (`eventAttachments`).
            "CREATE INDEX IF NOT EXISTS attachments_event ON attachments (project_id, event_id)",
        ]),
        (9, [
            // Indexes for what the dashboard and the API read, so that each page reads the rows
            // it shows rather than a project's whole history (tests: QueryPlanTests).
            // A project's newest events (launch-crash page, `recentEvents`).
            "CREATE INDEX events_project_received ON events (project_id, received)",
            // Prevented crashes only (the `incidents` view): counts and last times by guard and
            // release, read from this index without the events themselves (the last days' rows by
            // event time use migration 7's events_incident_time).
            """
            CREATE INDEX events_incidents ON events (project_id, incident_guard, release, timestamp)
                WHERE incident_guard IS NOT NULL
            """,
            // Open-issue counts by status (issue lists by last seen use migration 7's issues_last_seen).
            "CREATE INDEX issues_project_status ON issues (project_id, status)",
            // Release health: the last days' sessions and aggregates.
            "CREATE INDEX sessions_project_started ON sessions (project_id, started)",
            "CREATE INDEX session_aggregates_project_bucket ON session_aggregates (project_id, bucket)",
        ]),
        (10, [
            // Release health read from small summaries instead of every session: sessions by
            // release and UTC day (`day`: days since 1970) with their crashed, abnormal and errored
            // counts; the users of each release and day, and of each release overall, with
            // whether one of their sessions crashed. Triggers on `sessions` keep them as ingest
            // inserts and updates sessions (a session's release and start never change); retention
            // (`deleteData`) keeps the totals, as it keeps issue counts. Filled from the sessions
            // stored before.
            """
            CREATE TABLE release_days (
                project_id {int} NOT NULL, release TEXT NOT NULL, day {int} NOT NULL, sessions {int} NOT NULL,
                crashed {int} NOT NULL, abnormal {int} NOT NULL, errored {int} NOT NULL,
                PRIMARY KEY (project_id, release, day))
            """,
            """
            CREATE TABLE release_day_users (
                project_id {int} NOT NULL, release TEXT NOT NULL, day {int} NOT NULL, distinct_id TEXT NOT NULL,
                crashed {int} NOT NULL, PRIMARY KEY (project_id, release, day, distinct_id)){without_rowid}
            """,
            "CREATE INDEX release_day_users_day ON release_day_users (project_id, day)",
            """
            CREATE TABLE release_users (
                project_id {int} NOT NULL, release TEXT NOT NULL, distinct_id TEXT NOT NULL, crashed {int} NOT NULL,
                PRIMARY KEY (project_id, release, distinct_id)){without_rowid}
            """,
            """
            INSERT INTO release_days (project_id, release, day, sessions, crashed, abnormal, errored)
            SELECT project_id, release, {day}, count(*), sum({crashed}), sum({abnormal}), sum({errored})
            FROM sessions GROUP BY project_id, release, {day}
            """,
            """
            INSERT INTO release_day_users (project_id, release, day, distinct_id, crashed)
            SELECT project_id, release, {day}, distinct_id, max({crashed})
            FROM sessions WHERE distinct_id IS NOT NULL GROUP BY project_id, release, {day}, distinct_id
            """,
            """
            INSERT INTO release_users (project_id, release, distinct_id, crashed)
            SELECT project_id, release, distinct_id, max({crashed})
            FROM sessions WHERE distinct_id IS NOT NULL GROUP BY project_id, release, distinct_id
            """,
            """
            {sqlite-only}CREATE TRIGGER sessions_health_insert AFTER INSERT ON sessions BEGIN
                INSERT INTO release_days (project_id, release, day, sessions, crashed, abnormal, errored)
                VALUES (NEW.project_id, NEW.release, CAST(NEW.started / 86400 AS INTEGER), 1, NEW.status = 'crashed',
                    NEW.status = 'abnormal', NEW.status NOT IN ('crashed', 'abnormal') AND (NEW.errors > 0 OR NEW.status = 'errored'))
                ON CONFLICT (project_id, release, day) DO UPDATE SET sessions = sessions + 1, crashed = crashed + excluded.crashed,
                    abnormal = abnormal + excluded.abnormal, errored = errored + excluded.errored;
                INSERT INTO release_day_users (project_id, release, day, distinct_id, crashed)
                SELECT NEW.project_id, NEW.release, CAST(NEW.started / 86400 AS INTEGER), NEW.distinct_id, NEW.status = 'crashed'
                WHERE NEW.distinct_id IS NOT NULL
                ON CONFLICT (project_id, release, day, distinct_id) DO UPDATE SET crashed = max(crashed, excluded.crashed);
                INSERT INTO release_users (project_id, release, distinct_id, crashed)
                SELECT NEW.project_id, NEW.release, NEW.distinct_id, NEW.status = 'crashed' WHERE NEW.distinct_id IS NOT NULL
                ON CONFLICT (project_id, release, distinct_id) DO UPDATE SET crashed = max(crashed, excluded.crashed);
            END
            """,
            """
            {sqlite-only}CREATE TRIGGER sessions_health_update AFTER UPDATE ON sessions BEGIN
                UPDATE release_days SET
                    crashed = crashed - (OLD.status = 'crashed') + (NEW.status = 'crashed'),
                    abnormal = abnormal - (OLD.status = 'abnormal') + (NEW.status = 'abnormal'),
                    errored = errored - (OLD.status NOT IN ('crashed', 'abnormal') AND (OLD.errors > 0 OR OLD.status = 'errored'))
                        + (NEW.status NOT IN ('crashed', 'abnormal') AND (NEW.errors > 0 OR NEW.status = 'errored'))
                WHERE project_id = OLD.project_id AND release = OLD.release AND day = CAST(OLD.started / 86400 AS INTEGER);
                INSERT INTO release_day_users (project_id, release, day, distinct_id, crashed)
                SELECT NEW.project_id, NEW.release, CAST(NEW.started / 86400 AS INTEGER), NEW.distinct_id, NEW.status = 'crashed'
                WHERE NEW.distinct_id IS NOT NULL
                ON CONFLICT (project_id, release, day, distinct_id) DO UPDATE SET crashed = max(crashed, excluded.crashed);
                INSERT INTO release_users (project_id, release, distinct_id, crashed)
                SELECT NEW.project_id, NEW.release, NEW.distinct_id, NEW.status = 'crashed' WHERE NEW.distinct_id IS NOT NULL
                ON CONFLICT (project_id, release, distinct_id) DO UPDATE SET crashed = max(crashed, excluded.crashed);
            END
            """,
            """
            {postgres-only}CREATE FUNCTION sessions_health() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE
                v_day BIGINT := floor(NEW.started / 86400);
                v_crashed BIGINT := CASE WHEN NEW.status = 'crashed' THEN 1 ELSE 0 END;
                v_abnormal BIGINT := CASE WHEN NEW.status = 'abnormal' THEN 1 ELSE 0 END;
                v_errored BIGINT := CASE WHEN NEW.status NOT IN ('crashed', 'abnormal') AND (NEW.errors > 0 OR NEW.status = 'errored') THEN 1 ELSE 0 END;
            BEGIN
                IF TG_OP = 'INSERT' THEN
                    INSERT INTO release_days AS r (project_id, release, day, sessions, crashed, abnormal, errored)
                    VALUES (NEW.project_id, NEW.release, v_day, 1, v_crashed, v_abnormal, v_errored)
                    ON CONFLICT (project_id, release, day) DO UPDATE SET sessions = r.sessions + 1, crashed = r.crashed + excluded.crashed,
                        abnormal = r.abnormal + excluded.abnormal, errored = r.errored + excluded.errored;
                ELSE
                    UPDATE release_days AS r SET
                        crashed = r.crashed - (CASE WHEN OLD.status = 'crashed' THEN 1 ELSE 0 END) + v_crashed,
                        abnormal = r.abnormal - (CASE WHEN OLD.status = 'abnormal' THEN 1 ELSE 0 END) + v_abnormal,
                        errored = r.errored - (CASE WHEN OLD.status NOT IN ('crashed', 'abnormal') AND (OLD.errors > 0 OR OLD.status = 'errored')
                            THEN 1 ELSE 0 END) + v_errored
                    WHERE r.project_id = OLD.project_id AND r.release = OLD.release AND r.day = floor(OLD.started / 86400);
                END IF;
                IF NEW.distinct_id IS NOT NULL THEN
                    INSERT INTO release_day_users AS u (project_id, release, day, distinct_id, crashed)
                    VALUES (NEW.project_id, NEW.release, v_day, NEW.distinct_id, v_crashed)
                    ON CONFLICT (project_id, release, day, distinct_id) DO UPDATE SET crashed = GREATEST(u.crashed, excluded.crashed);
                    INSERT INTO release_users AS u (project_id, release, distinct_id, crashed)
                    VALUES (NEW.project_id, NEW.release, NEW.distinct_id, v_crashed)
                    ON CONFLICT (project_id, release, distinct_id) DO UPDATE SET crashed = GREATEST(u.crashed, excluded.crashed);
                END IF;
                RETURN NULL;
            END
            $$
            """,
            "{postgres-only}CREATE TRIGGER sessions_health AFTER INSERT OR UPDATE ON sessions FOR EACH ROW EXECUTE FUNCTION sessions_health()",
        ]),
        (11, [
            // Protections (GuardVerdicts, ProtectService): why a configuration version was
            // published (`reason`; the one-click protection and auto-protect write it), and the
            // automation that published it (`published_by_automation`, "auto-protect").
            "ALTER TABLE sdk_configs ADD COLUMN reason TEXT",
            "ALTER TABLE sdk_configs ADD COLUMN published_by_automation TEXT",
            // Auto-protect's threshold in users per release; NULL: auto-protect is off.
            "ALTER TABLE projects ADD COLUMN auto_protect_users {int}",
            // One row per guard switched on for an issue's release: `origin` 'manual' (the
            // one-click protection) or 'auto'; at most one 'auto' row per issue and release, so
            // two collectors on one database never publish twice for it.
            """
            CREATE TABLE protections (
                id {serial}, project_id {int} NOT NULL REFERENCES projects(id), issue_id {int} NOT NULL REFERENCES issues(id),
                release TEXT NOT NULL, guard_name TEXT NOT NULL, policy TEXT NOT NULL, origin TEXT NOT NULL,
                class_prefix TEXT, config_version {int}, created_at {real} NOT NULL)
            """,
            "CREATE UNIQUE INDEX protections_auto ON protections (issue_id, release) WHERE origin = 'auto'",
            "CREATE INDEX protections_project ON protections (project_id, created_at)",
        ]),
        (12, DebugFileSchema.statements),
        (13, [
            // Launch tags (`LaunchTag`: tags named `launch…` or `repair…`), one row per tag of an
            // event, written at ingest; the launch-crash page reads the rows of a project's newest
            // events (`launchSummary`) instead of parsing their payloads. `position`: the tag's
            // place among the event's launch tags. Filled for existing events by
            // `backfillLaunchTags` (each project's newest `LaunchSummary.window` events, all the
            // page reads). Deleted with their events by retention.
            """
            CREATE TABLE event_launch_tags (
                event_row {int} NOT NULL, position {int} NOT NULL, project_id {int} NOT NULL, received {real} NOT NULL,
                release TEXT, tag_key TEXT NOT NULL, tag_value TEXT NOT NULL, PRIMARY KEY (event_row, position))
            """,
            "CREATE INDEX event_launch_tags_project ON event_launch_tags (project_id, received, event_row)",
        ]),
    ]

    /// Work a migration does in Swift after its statements, in its transaction.
    static let migrationSteps: [Int: @Sendable (SQLStore) async throws -> Void] = [
        13: { try await $0.backfillLaunchTags() },
    ]

    /// `statement` for `dialect`: its placeholders replaced (column types; `{floor}(x)` rounds a
    /// non-negative x down in a CAST to an integer, as SQLite's CAST truncates and PostgreSQL's
    /// rounds; `{day}`, a session's
    /// UTC day from `started`; `{crashed}`, `{abnormal}`, `{errored}`, 1 or 0 by a session's
    /// status and errors as release health counts them). A statement that begins with
    /// `{sqlite-only}` or `{postgres-only}` is for that database alone: nil for the other.
    static func typed(_ statement: String, for dialect: SQLDialect) -> String? {
        var text = Substring(statement)
        for (marker, only) in [("{sqlite-only}", SQLDialect.sqlite), ("{postgres-only}", .postgres)] where text.hasPrefix(marker) {
            guard dialect == only else { return nil }
            text = text.dropFirst(marker.count)
        }
        let errored = "CASE WHEN status NOT IN ('crashed', 'abnormal') AND (errors > 0 OR status = 'errored') THEN 1 ELSE 0 END"
        let types: [String: String] = (dialect == .sqlite
            ? ["{serial}": "INTEGER PRIMARY KEY AUTOINCREMENT", "{int}": "INTEGER", "{real}": "REAL", "{blob}": "BLOB", "{without_rowid}": " WITHOUT ROWID",
               "{day}": "CAST(started / 86400 AS INTEGER)",
               "{floor}": ""]
            : ["{serial}": "BIGSERIAL PRIMARY KEY", "{int}": "BIGINT", "{real}": "DOUBLE PRECISION", "{blob}": "BYTEA", "{without_rowid}": "",
               "{day}": "CAST(floor(started / 86400) AS BIGINT)",
               "{floor}": "floor"])
            .merging(["{crashed}": "CASE WHEN status = 'crashed' THEN 1 ELSE 0 END",
                      "{abnormal}": "CASE WHEN status = 'abnormal' THEN 1 ELSE 0 END", "{errored}": errored]) { first, _ in first }
        return types.reduce(String(text)) { $0.replacingOccurrences(of: $1.key, with: $1.value) }
    }

    /// Key of the PostgreSQL advisory lock that keeps two collectors from migrating at once.
    static let migrationLockKey: Int64 = 0x4353_4d49_4752  // "CSMIGR"

    public func migrate() async throws {
        try await serialized {
            guard let postgres = backend as? PostgresBackend else { return try await applyMigrations(postgres: false) }
            // Another collector's migration takes as long as it takes: no lock timeout here.
            try await postgres.withoutLockTimeout {
                _ = try await query("SELECT pg_advisory_lock(?)", [.int(Self.migrationLockKey)])
                do {
                    try await applyMigrations(postgres: true)
                } catch {
                    _ = try? await query("SELECT pg_advisory_unlock(?)", [.int(Self.migrationLockKey)])
                    throw error
                }
                _ = try await query("SELECT pg_advisory_unlock(?)", [.int(Self.migrationLockKey)])
            }
        }
    }

    private func applyMigrations(postgres: Bool) async throws {
        _ = try await query(Self.typed("CREATE TABLE IF NOT EXISTS schema_migrations (version {int} PRIMARY KEY, applied_at {real} NOT NULL)", for: backend.dialect)!)
        let applied = Set(try await query("SELECT version FROM schema_migrations").compactMap { $0.int("version") })
        for migration in Self.migrations where !applied.contains(Int64(migration.version)) {
            _ = try await query(postgres ? "BEGIN" : "BEGIN IMMEDIATE")
            do {
                for statement in migration.statements {
                    guard let sql = Self.typed(statement, for: backend.dialect) else { continue }
                    _ = try await query(sql)
                }
                if let step = Self.migrationSteps[migration.version] { try await step(self) }
                _ = try await query("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                                    [Self.int(migration.version), Self.time(Date())])
                _ = try await query("COMMIT")
                logger.info("migration applied", metadata: ["version": "\(migration.version)", "database": "\(databaseKind)"])
            } catch {
                _ = try? await query("ROLLBACK")
                throw error
            }
        }
    }

    public func appliedMigrations() async throws -> [Int] {
        try await read {
            try await query("SELECT version FROM schema_migrations ORDER BY version").compactMap { $0.int("version").map { Int($0) } }
        }
    }

    // MARK: Projects

    private static func project(_ row: DBRow) -> Project? {
        guard let id = row.int("id"), let name = row.string("name"),
              let key = row.string("public_key"), let created = row.double("created_at"),
              let signing = row.data("config_signing_key"),
              let publicKey = try? CryptoSupport.ed25519PublicKey(privateKey: signing)
        else { return nil }
        return Project(id: Int64(id), name: name, publicKey: key, createdAt: Date(timeIntervalSince1970: created),
                       configSigningPublicKey: publicKey.base64EncodedString())
    }

    public func createProject(name: String) async throws -> Project {
        let key = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let signing = CryptoSupport.newEd25519PrivateKey()
        return try await serialized {
            let rows = try await query(
                "INSERT INTO projects (name, public_key, config_signing_key, created_at) VALUES (?, ?, ?, ?) RETURNING *",
                [.text(name), .text(key), Self.blob(signing), Self.time(Date())])
            guard let row = rows.first, let project = Self.project(row) else { throw CollectorError.storage("project insert returned no row") }
            return project
        }
    }

    public func projects() async throws -> [Project] {
        try await read { try await query("SELECT * FROM projects ORDER BY id").compactMap(Self.project) }
    }

    public func project(id: Int64) async throws -> Project? {
        try await read { try await query("SELECT * FROM projects WHERE id = ?", [Self.int(id)]).first.flatMap(Self.project) }
    }

    public func configSigningKey(projectID: Int64) async throws -> Data? {
        try await read {
            try await query("SELECT config_signing_key FROM projects WHERE id = ?", [Self.int(projectID)])
                .first?.data("config_signing_key")
        }
    }

    // MARK: Events and issues

    /// Whether an event in `release` reopens an issue resolved in `resolvedIn`.
    /// `resolved`: unless the event's release is older than the one resolved in.
    /// `resolved_in_next_release`: only when the event's release is newer.
    static func regresses(status: IssueStatus, resolvedIn: String?, eventRelease: String?) -> Bool {
        switch status {
        case .resolved:
            guard let resolvedIn, let eventRelease else { return true }
            return ReleaseOrder.compare(eventRelease, resolvedIn) != .orderedAscending
        case .resolvedInNextRelease:
            guard let resolvedIn else { return true }
            guard let eventRelease else { return false }
            return ReleaseOrder.isNewer(eventRelease, than: resolvedIn)
        case .unresolved, .ignored, .regressed:
            return false
        }
    }

    public func insertEvent(_ event: EventRecord) async throws -> EventInsertOutcome {
        let outcomes = try await commitIngest([IngestWrite(projectID: event.projectID, event: event, received: event.received)])
        guard let outcome = outcomes.first?.event else { throw CollectorError.storage("the event's write had no outcome") }
        return outcome
    }

    static func issue(_ row: DBRow) -> Issue? {
        guard let id = row.int("id"), let project = row.int("project_id"),
              let hash = row.string("fingerprint_hash"), let first = row.double("first_seen"),
              let last = row.double("last_seen")
        else { return nil }
        return Issue(
            id: Int64(id), projectID: Int64(project), fingerprintHash: hash,
            groupingAlgorithm: row.string("grouping_algorithm") ?? "",
            title: row.string("title") ?? "", culprit: row.string("culprit") ?? "",
            level: row.string("level") ?? "error",
            status: IssueStatus(rawValue: row.string("status") ?? "") ?? .unresolved,
            resolvedInRelease: row.string("resolved_in_release"),
            firstSeen: Date(timeIntervalSince1970: first), lastSeen: Date(timeIntervalSince1970: last),
            firstRelease: row.string("first_release"), lastRelease: row.string("last_release"),
            eventCount: Int64(row.int("event_count") ?? 0), userCount: Int64(row.int("user_count") ?? 0))
    }

    public func issues(projectID: Int64) async throws -> [Issue] {
        try await read {
            try await query("SELECT * FROM issues WHERE project_id = ? ORDER BY last_seen DESC", [Self.int(projectID)]).compactMap(Self.issue)
        }
    }

    public func issue(id: Int64) async throws -> Issue? {
        try await read { try await query("SELECT * FROM issues WHERE id = ?", [Self.int(id)]).first.flatMap(Self.issue) }
    }

    public func setIssueStatus(id: Int64, _ status: IssueStatus) async throws -> Issue? {
        try await transaction {
            let resolving = status == .resolved || status == .resolvedInNextRelease
            _ = try await query(
                "UPDATE issues SET status = ?, resolved_in_release = CASE WHEN ? = 1 THEN last_release ELSE NULL END WHERE id = ?",
                [.text(status.rawValue), Self.int(resolving ? 1 : 0), Self.int(id)])
            return try await query("SELECT * FROM issues WHERE id = ?", [Self.int(id)]).first.flatMap(Self.issue)
        }
    }

    public func events(issueID: Int64, limit: Int) async throws -> [EventSummary] {
        try await read {
            try await query(
                """
                SELECT event_id, issue_id, received, timestamp, level, release, environment, platform FROM events
                WHERE issue_id = ? ORDER BY received DESC, id DESC LIMIT ?
                """, [Self.int(issueID), Self.int(limit)]
            ).compactMap { row in
                guard let id = row.string("event_id"), let issue = row.int("issue_id"),
                      let received = row.double("received"), let timestamp = row.double("timestamp")
                else { return nil }
                return EventSummary(eventID: id, issueID: Int64(issue), received: Date(timeIntervalSince1970: received),
                                    timestamp: Date(timeIntervalSince1970: timestamp), level: row.string("level") ?? "",
                                    release: row.string("release"), environment: row.string("environment"),
                                    platform: row.string("platform"))
            }
        }
    }

    public func eventPayload(projectID: Int64, eventID: String) async throws -> Data? {
        try await read {
            try await query("SELECT payload FROM events WHERE project_id = ? AND event_id = ?", [Self.int(projectID), .text(eventID)])
                .first?.data("payload")
        }
    }

    // MARK: Sessions, attachments, client reports

    public func recordSession(projectID: Int64, _ update: SessionUpdate) async throws {
        var write = IngestWrite(projectID: projectID)
        write.sessions = [update]
        _ = try await commitIngest([write])
    }

    public func recordSessionAggregates(projectID: Int64, _ aggregates: [SessionAggregate]) async throws {
        var write = IngestWrite(projectID: projectID)
        write.sessionAggregates = aggregates
        _ = try await commitIngest([write])
    }

    public func storeAttachment(projectID: Int64, eventID: String?, filename: String, contentType: String?,
                                attachmentType: String?, data: Data, received: Date) async throws {
        var write = IngestWrite(projectID: projectID, received: received)
        write.attachments = [AttachmentRecord(eventID: eventID, filename: filename, contentType: contentType,
                                              attachmentType: attachmentType, data: data)]
        _ = try await commitIngest([write])
    }

    public func recordClientReport(projectID: Int64, _ discarded: [DiscardedCount], received: Date) async throws {
        var write = IngestWrite(projectID: projectID, received: received)
        write.discarded = discarded
        _ = try await commitIngest([write])
    }

    public func attachmentCount(projectID: Int64) async throws -> Int64 {
        try await read {
            Int64(try await query("SELECT count(*) AS n FROM attachments WHERE project_id = ?", [Self.int(projectID)]).first?.int("n") ?? 0)
        }
    }

    public func discardedTotal(projectID: Int64) async throws -> Int64 {
        try await read {
            Int64(try await query("SELECT coalesce(sum(quantity), 0) AS n FROM client_reports WHERE project_id = ?",
                                  [Self.int(projectID)]).first?.int("n") ?? 0)
        }
    }

    public func releaseHealth(projectID: Int64) async throws -> [ReleaseHealth] {
        try await read {
            let project = Self.int(projectID)
            var byRelease: [String: ReleaseHealth] = [:]
            // The summaries that the triggers on `sessions` keep (migration 8).
            for row in try await query(
                """
                SELECT release, sum(sessions) AS sessions, sum(crashed) AS crashed, sum(abnormal) AS abnormal, sum(errored) AS errored
                FROM release_days WHERE project_id = ? GROUP BY release
                """, [project])
            {
                guard let release = row.string("release") else { continue }
                func n(_ key: String) -> Int64 { row.int(key) ?? 0 }
                byRelease[release] = ReleaseHealth(release: release, sessions: n("sessions"), crashedSessions: n("crashed"),
                                                   abnormalSessions: n("abnormal"), erroredSessions: n("errored"), users: 0, crashedUsers: 0)
            }
            for row in try await query(
                "SELECT release, count(*) AS users, sum(crashed) AS crashed_users FROM release_users WHERE project_id = ? GROUP BY release",
                [project])
            {
                guard let release = row.string("release"), let base = byRelease[release] else { continue }
                byRelease[release] = ReleaseHealth(release: release, sessions: base.sessions, crashedSessions: base.crashedSessions,
                                                   abnormalSessions: base.abnormalSessions, erroredSessions: base.erroredSessions,
                                                   users: row.int("users") ?? 0, crashedUsers: row.int("crashed_users") ?? 0)
            }
            for row in try await query(
                """
                SELECT release, sum(exited + errored + abnormal + crashed) AS sessions, sum(crashed) AS crashed,
                    sum(abnormal) AS abnormal, sum(errored) AS errored
                FROM session_aggregates WHERE project_id = ? GROUP BY release
                """, [project])
            {
                guard let release = row.string("release") else { continue }
                func n(_ key: String) -> Int64 { row.int(key) ?? 0 }
                let base = byRelease[release]
                byRelease[release] = ReleaseHealth(
                    release: release, sessions: (base?.sessions ?? 0) + n("sessions"),
                    crashedSessions: (base?.crashedSessions ?? 0) + n("crashed"),
                    abnormalSessions: (base?.abnormalSessions ?? 0) + n("abnormal"),
                    erroredSessions: (base?.erroredSessions ?? 0) + n("errored"),
                    users: base?.users ?? 0, crashedUsers: base?.crashedUsers ?? 0)
            }
            return byRelease.values.sorted { ReleaseOrder.isNewer($0.release, than: $1.release) }
        }
    }

    public func incidents(projectID: Int64) async throws -> [IncidentCount] {
        try await read {
            try await query(
                """
                SELECT guard_name, release, count(*) AS n, max(timestamp) AS last_seen FROM incidents
                WHERE project_id = ? GROUP BY guard_name, release ORDER BY n DESC, guard_name
                """, [Self.int(projectID)]
            ).compactMap { row in
                guard let name = row.string("guard_name"), let last = row.double("last_seen") else { return nil }
                return IncidentCount(guardName: name, release: row.string("release"),
                                     count: Int64(row.int("n") ?? 0), lastSeen: Date(timeIntervalSince1970: last))
            }
        }
    }

    // MARK: SDK configuration

    private static func sdkConfig(_ row: DBRow) -> SDKConfigVersion? {
        guard let project = row.int("project_id"), let version = row.int("version"),
              let document = row.data("document"), let created = row.double("created_at")
        else { return nil }
        let account = row.string("published_by_account"), token = row.string("published_by_token")
        let automation = row.string("published_by_automation")
        return SDKConfigVersion(projectID: Int64(project), version: Int64(version), document: document,
                                signature: row.string("signature"), createdAt: Date(timeIntervalSince1970: created),
                                restoredFrom: row.int("restored_from"),
                                publishedBy: account == nil && token == nil && automation == nil
                                    ? nil : SDKConfigPublisher(account: account, apiToken: token, automation: automation),
                                reason: row.string("reason"))
    }

    public func insertSDKConfig(_ config: SDKConfigVersion) async throws {
        try await transaction {
            let newest = try await query("SELECT max(version) AS v FROM sdk_configs WHERE project_id = ?", [Self.int(config.projectID)])
                .first?.int("v")
            if let newest, Int64(newest) >= config.version {
                throw CollectorError.conflict("sdk_config.version_conflict", "version \(config.version) is not above the stored version \(newest)")
            }
            _ = try await query(
                """
                INSERT INTO sdk_configs (project_id, version, document, signature, created_at, restored_from,
                    published_by_account, published_by_token, published_by_automation, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [Self.int(config.projectID), Self.int(config.version), Self.blob(config.document), Self.text(config.signature),
                 Self.time(config.createdAt), config.restoredFrom.map { Self.int($0) } ?? .null,
                 Self.text(config.publishedBy?.account), Self.text(config.publishedBy?.apiToken),
                 Self.text(config.publishedBy?.automation), Self.text(config.reason)])
        }
    }

    public func activeSDKConfig(projectID: Int64) async throws -> SDKConfigVersion? {
        try await read {
            try await query("SELECT * FROM sdk_configs WHERE project_id = ? ORDER BY version DESC LIMIT 1", [Self.int(projectID)])
                .first.flatMap(Self.sdkConfig)
        }
    }

    public func sdkConfigHistory(projectID: Int64) async throws -> [SDKConfigVersion] {
        try await read {
            try await query("SELECT * FROM sdk_configs WHERE project_id = ? ORDER BY version DESC", [Self.int(projectID)])
                .compactMap(Self.sdkConfig)
        }
    }

    public func sdkConfig(projectID: Int64, version: Int64) async throws -> SDKConfigVersion? {
        try await read {
            try await query("SELECT * FROM sdk_configs WHERE project_id = ? AND version = ?", [Self.int(projectID), Self.int(version)])
                .first.flatMap(Self.sdkConfig)
        }
    }

    // MARK: API tokens

    public func insertAPIToken(name: String, tokenHash: String, created: Date) async throws {
        try await serialized {
            _ = try await query("INSERT INTO api_tokens (token_hash, name, created_at) VALUES (?, ?, ?)",
                                [.text(tokenHash), .text(name), Self.time(created)])
        }
    }

    public func apiTokenExists(tokenHash: String) async throws -> Bool {
        try await read { !(try await query("SELECT 1 FROM api_tokens WHERE token_hash = ?", [.text(tokenHash)]).isEmpty) }
    }

    public func apiTokenCount() async throws -> Int64 {
        try await read { Int64(try await query("SELECT count(*) AS n FROM api_tokens").first?.int("n") ?? 0) }
    }

    // MARK: Benchmark

    /// The database's own insert rate for comparison: `rows` rows (an id and `payload`) into a
    /// scratch table, one transaction per row, like one event per ingest request. The table is
    /// dropped afterwards.
    func rawInsertBenchmark(rows: Int, payload: Data) async throws {
        _ = try await serialized { try await query(Self.typed("CREATE TABLE bench_raw (id {int} PRIMARY KEY, payload {blob} NOT NULL)", for: backend.dialect)!) }
        for row in 0..<rows {
            _ = try await transaction { try await query("INSERT INTO bench_raw (id, payload) VALUES (?, ?)", [Self.int(row), .blob(payload)]) }
        }
        _ = try await serialized { try await query("DROP TABLE bench_raw") }
    }

    // MARK: Retention

    public func deleteData(receivedBefore cutoff: Date) async throws -> Int64 {
        try await transaction {
            let time = Self.time(cutoff)
            let deleted = try await query("DELETE FROM events WHERE received < ? RETURNING 1 AS gone", [time]).count
            _ = try await query("DELETE FROM event_launch_tags WHERE received < ?", [time])
            _ = try await query("DELETE FROM attachments WHERE received < ?", [time])
            _ = try await query("DELETE FROM sessions WHERE received < ?", [time])
            _ = try await query("DELETE FROM issue_days WHERE day < ?", [Self.int(Self.day(cutoff))])
            _ = try await query("DELETE FROM release_day_users WHERE day < ?", [Self.int(Int64((cutoff.timeIntervalSince1970 / 86_400).rounded(.down)))])
            return Int64(deleted)
        }
    }
}
