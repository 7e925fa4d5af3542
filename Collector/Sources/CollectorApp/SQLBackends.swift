import CLibPQ
import Foundation
import Logging
import NIOCore
import NIOPosix
import CSQLite3
import Synchronization

/// A value bound to or read from a SQL statement.
enum DBValue: Sendable, Hashable {
    case int(Int64)
    case double(Double)
    case text(String)
    case blob(Data)
    case null
}

/// One result row, by column name.
struct DBRow: Sendable {
    let values: [String: DBValue]

    func int(_ name: String) -> Int64? {
        switch values[name] {
        case .int(let value): return value
        case .double(let value) where value.rounded() == value && abs(value) < 9.0e15: return Int64(value)
        case .text(let text): return Int64(text)
        default: return nil
        }
    }

    func double(_ name: String) -> Double? {
        switch values[name] {
        case .double(let value): return value
        case .int(let value): return Double(value)
        case .text(let text): return Double(text)
        default: return nil
        }
    }

    func string(_ name: String) -> String? {
        switch values[name] {
        case .text(let text): return text
        case .int(let value): return String(value)
        case .double(let value): return String(value)
        default: return nil
        }
    }

    func data(_ name: String) -> Data? {
        if case .blob(let data) = values[name] { return data }
        return nil
    }
}

enum SQLDialect: Sendable { case sqlite, postgres }

/// One statement and its bound values, for `SQLBackend.run(_:)`.
struct SQLStatement: Sendable {
    let sql: String
    let binds: [DBValue]

    init(_ sql: String, _ binds: [DBValue] = []) {
        self.sql = sql
        self.binds = binds
    }
}

/// One database connection. Statements use `?` placeholders (each backend converts them).
/// The store calls one statement (or one `run` of several) at a time.
protocol SQLBackend: Sendable {
    var dialect: SQLDialect { get }
    func query(_ sql: String, _ binds: [DBValue]) async throws -> [DBRow]
    /// Runs `statements` in order and returns each one's rows, stopping at the first failure
    /// (which is thrown; statements after it do not run). PostgreSQL sends them all in one
    /// round trip (libpq pipeline mode), so a statement cannot use an earlier one's result
    /// except through SQL (a subquery reads rows an earlier statement wrote).
    func run(_ statements: [SQLStatement]) async throws -> [[DBRow]]
    func close() async throws
    /// Ends the connection's work for a shutdown whose grace period is over: statements not yet
    /// started are refused and the running one is cancelled, each failing with
    /// `storage.cancelled` (503), so nothing they belonged to commits. Returns once no statement
    /// runs any more, or after a bounded number of attempts.
    func cancelForShutdown() async
}

extension SQLBackend {
    /// Does nothing: a backend whose statements cannot wait without bound (SQLite: a lock wait
    /// ends at the busy timeout) needs no cancellation.
    func cancelForShutdown() async {}
}

/// How long a statement waits for a lock another connection or process holds before it fails
/// with `storage.busy`: SQLite's busy timeout, PostgreSQL's `lock_timeout`. Default 5 seconds.
struct LockTimeout: Sendable, Hashable {
    let milliseconds: Int32

    static let `default` = LockTimeout(seconds: 5)

    /// `seconds` rounded to whole milliseconds, at least 1 ms (0 would mean "never wait" to
    /// SQLite and "wait forever" to PostgreSQL).
    init(seconds: Double) {
        milliseconds = Int32(max(1, min((seconds * 1000).rounded(), Double(Int32.max))))
    }
}

// MARK: SQLite

/// One SQLite connection through the C API. Statements run on the calling thread: in WAL mode
/// with `synchronous=NORMAL` a statement or commit takes microseconds and does not wait for the
/// disk, which is cheaper than any hop to a thread pool. Prepared statements are cached by text
/// (at most `maxCachedStatements`).
// @unchecked Sendable: `handle`, the statement cache and `closed` are used only under `lock`
final class SQLiteBackend: SQLBackend, @unchecked Sendable {
    let dialect = SQLDialect.sqlite
    /// `sqlite3 *`, opened in serialized mode; `lock` also keeps the statement cache to one thread.
    private let handle: OpaquePointer
    private let lock = Mutex(())
    /// A prepared statement and when it was last used (`useCount` at the time).
    private struct CachedStatement {
        let statement: OpaquePointer
        var lastUse: UInt64
    }
    private var statements: [String: CachedStatement] = [:]
    /// The text and statement `execute` used last (a batch runs the same text row after row);
    /// a hit skips hashing the text, and leaves its `lastUse` at the run's first use. Cleared
    /// when that statement is evicted or finalized.
    private var lastUsed: (sql: String, statement: OpaquePointer)?
    /// Statements executed so far: the cache's clock for least-recently-used eviction.
    private var useCount: UInt64 = 0
    private var closed = false
    /// Prepared statements kept at most (each holds its compiled program).
    static let maxCachedStatements = 256
    /// WAL size in pages (4 KiB) that triggers an automatic checkpoint (SQLite's default is 1,000):
    /// the WAL file stays below about 16 MiB plus the frames of one transaction.
    static let walAutocheckpointPages = 4_000
    /// SQLite's SQLITE_TRANSIENT: bound bytes are copied before the call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private init(handle: OpaquePointer) { self.handle = handle }

    /// A statement that needs a lock another process holds (a concurrent `shield-collector
    /// prune`) waits up to `lockTimeout` on the calling thread, then fails with `storage.busy`.
    /// `readOnly`: a read connection (`SQLStore`'s read pool) to a database that exists and is in
    /// WAL mode already: it never writes, so it reads its snapshot while the writer commits.
    /// - Throws: `database.open` with SQLite's message.
    static func open(path: String, logger: Logger, lockTimeout: LockTimeout = .default, readOnly: Bool = false) async throws -> SQLiteBackend {
        var handle: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_CREATE | SQLITE_OPEN_READWRITE) | SQLITE_OPEN_FULLMUTEX
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let handle { sqlite3_close_v2(handle) }
            throw CollectorError(code: "database.open", message: "SQLite \(path): \(message)", status: 500)
        }
        sqlite3_busy_timeout(handle, lockTimeout.milliseconds)
        let backend = SQLiteBackend(handle: handle)
        if readOnly { return backend }
        do {
            if path != ":memory:" {
                _ = try await backend.query("PRAGMA journal_mode=WAL", [])
                // NORMAL in WAL mode: a commit survives a crash of the process (not of the machine).
                _ = try await backend.query("PRAGMA synchronous=NORMAL", [])
                // A checkpoint copies every page changed since the previous one back into the
                // database file once; every `walAutocheckpointPages` WAL pages (SQLite's default is
                // 1,000) an index page that each commit rewrites is copied back a quarter as often.
                _ = try await backend.query("PRAGMA wal_autocheckpoint=\(Self.walAutocheckpointPages)", [])
            }
            _ = try await backend.query("PRAGMA foreign_keys=ON", [])
        } catch {
            try? await backend.close()
            throw error
        }
        return backend
    }

    func query(_ sql: String, _ binds: [DBValue]) async throws -> [DBRow] {
        try lock.withLock { _ in try execute(sql, binds) }
    }

    /// Prepared statements in the cache now.
    var cachedStatementCount: Int { lock.withLock { _ in statements.count } }

    /// The texts of the cached statements: what this connection ran recently (tests read the
    /// query plans of what the read connections ran).
    var cachedStatementTexts: [String] { lock.withLock { _ in Array(statements.keys) } }

    func run(_ statements: [SQLStatement]) async throws -> [[DBRow]] {
        try lock.withLock { _ in try statements.map { try execute($0.sql, $0.binds) } }
    }

    private func failure(_ what: String) -> CollectorError {
        let code = sqlite3_extended_errcode(handle)
        if code & 0xff == SQLITE_BUSY {
            // The busy timeout passed while another connection held the lock (or SQLite saw
            // that waiting could not help); nothing of the statement's transaction is stored.
            return .storageBusy("SQLite \(what): \(String(cString: sqlite3_errmsg(handle))) (another connection holds the database's write lock)")
        }
        if code & 0xff == SQLITE_FULL || (code & 0xff == SQLITE_IOERR && sqlite3_system_errno(handle) == ENOSPC) {
            // The disk (or `max_page_count`) is full: the statement's transaction is not stored;
            // writes succeed again once space is freed.
            return .storageFull("SQLite \(what): \(String(cString: sqlite3_errmsg(handle)))")
        }
        let unique = code == 2067 || code == 1555  // SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY
        return CollectorError(code: unique ? "storage.unique_violation" : "storage.failed",
                              message: "SQLite \(what): \(String(cString: sqlite3_errmsg(handle)))", status: 500)
    }

    private func execute(_ sql: String, _ binds: [DBValue]) throws -> [DBRow] {
        guard !closed else { throw CollectorError.storage("SQLite: the connection is closed") }
        let statement: OpaquePointer
        useCount += 1
        if let lastUsed, lastUsed.sql == sql {
            statement = lastUsed.statement
        } else if let cached = statements.index(forKey: sql) {
            statement = statements.values[cached].statement
            statements.values[cached].lastUse = useCount
        } else {
            var prepared: OpaquePointer?
            guard sqlite3_prepare_v2(handle, sql, -1, &prepared, nil) == SQLITE_OK, let prepared else { throw failure("prepare") }
            statement = prepared
            if statements.count >= Self.maxCachedStatements, let oldest = statements.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                // Batches make statements whose text varies with their row and list counts; the
                // least recently used one makes room. No cached statement is in use here (`lock`
                // is held and each is reset after use).
                if lastUsed?.statement == oldest.value.statement { lastUsed = nil }
                sqlite3_finalize(oldest.value.statement)
                statements.removeValue(forKey: oldest.key)
            }
            statements[sql] = CachedStatement(statement: prepared, lastUse: useCount)
        }
        lastUsed = (sql, statement)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (offset, value) in binds.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch value {
            case .null: status = sqlite3_bind_null(statement, index)
            case .int(let number): status = sqlite3_bind_int64(statement, index, number)
            case .double(let number): status = sqlite3_bind_double(statement, index, number)
            case .text(let text): status = sqlite3_bind_text(statement, index, text, -1, Self.transient)
            case .blob(let data):
                status = data.withUnsafeBytes { raw in
                    sqlite3_bind_blob(statement, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(data.count), Self.transient)
                }
            }
            guard status == SQLITE_OK else { throw failure("bind") }
        }
        var rows: [DBRow] = []
        let columnCount = sqlite3_column_count(statement)
        let names = (0..<columnCount).map { String(cString: sqlite3_column_name(statement, $0)) }
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { break }
            guard status == SQLITE_ROW else { throw failure("step") }
            var values: [String: DBValue] = [:]
            for column in 0..<columnCount {
                let name = names[Int(column)]
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: values[name] = .int(sqlite3_column_int64(statement, column))
                case SQLITE_FLOAT: values[name] = .double(sqlite3_column_double(statement, column))
                case SQLITE_TEXT: values[name] = .text(String(cString: sqlite3_column_text(statement, column)))
                case SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(statement, column))
                    values[name] = .blob(count == 0 ? Data() : Data(bytes: sqlite3_column_blob(statement, column), count: count))
                default: values[name] = .null
                }
            }
            rows.append(DBRow(values: values))
        }
        return rows
    }

    func close() async throws {
        lock.withLock { _ in
            guard !closed else { return }
            closed = true
            for cached in statements.values { sqlite3_finalize(cached.statement) }
            statements = [:]
            lastUsed = nil
            sqlite3_close_v2(handle)
        }
    }
}

// MARK: PostgreSQL

/// A libpq connection with a thread of its own.
///
/// Threading contract: every libpq call (connecting, each statement, each pipeline, closing)
/// runs on `thread`, a one-thread `NIOThreadPool` started by `connect` and shut down by `close`.
/// A libpq call blocks its thread for as long as the server takes, including while a statement
/// waits for a lock another connection holds (an advisory lock of a second collector, a long
/// transaction). On this thread such a wait stalls only this connection, whose callers wait
/// anyway; on a shared pool (`NIOThreadPool.singleton`, one thread per core, which NIO's file
/// I/O also uses) it would stall every other user of the pool.
///
/// One thread suffices: a libpq connection runs one statement at a time (the store serializes
/// its statements), so a second thread would only wait for the first. `connection` and `closed`
/// are touched only on `thread` (and in `deinit`, when no other reference exists), so they need
/// no lock; work submitted to the thread runs in submission order.
///
/// Bounded waits: the connection's `lock_timeout` (set when connecting, default 5 s) ends a
/// statement that waits that long for a lock with `storage.busy`; `withoutLockTimeout` lifts it
/// for start-up work that must wait for another collector (migrations). At shutdown,
/// `cancelForShutdown` refuses statements not yet started and cancels the running one over a
/// separate connection (libpq's `PQcancel`; libpq 15 has no `PQcancelBlocking`), and `close`
/// after it waits at most `abandonAfter` for the thread.
///
/// Lost connections: a statement that finds the connection broken (the server restarted or shut
/// down, SQLSTATE class 08, 57P01–57P03, or libpq reports `CONNECTION_BAD`) fails with
/// `storage.unavailable` (503) and the connection is dropped (leaving pipeline mode with it). The
/// next statement connects again; while that fails, attempts are spaced by a bounded exponential
/// backoff (`reconnectBackoff`) and statements in between fail at once with `storage.unavailable`
/// and a `Retry-After` of the time left. A transaction whose connection was lost is over: until
/// its `ROLLBACK` (answered without the server) or a new `BEGIN`, its statements are refused, so
/// none of them runs outside it on the new connection; its `COMMIT` is refused too (nothing of it
/// committed). A new connection gets the session's `lock_timeout` again; no other session state
/// is kept (statements are not prepared, advisory locks are transaction-scoped).
// @unchecked Sendable: connection state is used only on `thread`, `canceller` under `cancelLock`
final class PostgresBackend: SQLBackend, @unchecked Sendable {
    let dialect = SQLDialect.postgres
    /// `PGconn *`, used only on `thread`; nil after the connection was lost, until it is made again.
    private var connection: OpaquePointer?
    /// The `url` connected to, for reconnecting.
    private let url: String
    /// `PGcancel *` for `connection`, made right after connecting: `PQcancel` with it is safe
    /// from any thread. Read and replaced (after a reconnect) only under `cancelLock`, which
    /// `sendCancel` holds while it uses it, so a cancel in flight never sees it freed.
    private var canceller: OpaquePointer?
    private let cancelLock = Mutex(())
    /// Reconnecting (touched only on `thread`): failed attempts since the connection was lost,
    /// the earliest time of the next one, and whether a transaction was open when it was lost.
    private var reconnectFailures = 0
    private var nextReconnect = ContinuousClock.now
    private var transactionLost = false
    private let logger: Logger?
    /// The connection's own thread (one thread, started before connecting).
    private let thread: NIOThreadPool
    /// The `lock_timeout` set when connecting (nil: the server's setting was kept).
    let lockTimeout: LockTimeout?
    /// Set by `close` (on `thread`); statements after it throw `storage.failed`.
    private var closed = false

    private struct WorkState {
        /// Set by `cancelForShutdown`: statements not yet started are refused from then on.
        var refusing = false
        /// Statements (or pipelines) submitted and not yet finished.
        var pending = 0
        /// When `close` stops waiting for the thread (`abandonAfter` after the cancelling began).
        var abandonAt: ContinuousClock.Instant?
    }
    private let work = Mutex(WorkState())

    /// Threads in a connection's pool: one, since a connection runs one statement at a time.
    static let threadsPerConnection = 1
    /// How long `cancelForShutdown` keeps sending cancel requests while a statement still runs
    /// (a cancel that reaches the server between two statements does nothing, so it is resent).
    static let abandonAfter: Duration = .seconds(5)
    static let cancelRetryInterval: Duration = .milliseconds(200)

    /// The wait before reconnect attempt `n + 1` after `n` failed ones (n ≥ 1): 0.25 s doubling
    /// up to 5 s. The first attempt, right after the loss, does not wait.
    static func reconnectBackoff(failures: Int) -> Duration {
        let milliseconds = 250 * (1 << min(max(failures - 1, 0), 5))
        return .milliseconds(min(milliseconds, 5_000))
    }

    private init(connection: OpaquePointer, url: String, thread: NIOThreadPool, lockTimeout: LockTimeout?, logger: Logger?) {
        self.connection = connection
        self.url = url
        self.canceller = PQgetCancel(connection)
        self.thread = thread
        self.lockTimeout = lockTimeout
        self.logger = logger
    }

    /// A new connection to `url` with the session's `lock_timeout` set (on the calling thread).
    /// - Throws: `database.connect` (500) with libpq's message.
    private static func open(url: String, lockTimeout: LockTimeout?) throws -> OpaquePointer {
        // connect_timeout before dbname: a value in `url` still wins (expand_dbname).
        let keywords = ["connect_timeout", "dbname"]
        let values = ["10", url]
        let connection: OpaquePointer? = keywords.withCStrings { keywordPointers in
            values.withCStrings { valuePointers in PQconnectdbParams(keywordPointers, valuePointers, 1) }
        }
        guard let connection else {
            throw CollectorError(code: "database.connect", message: "libpq could not allocate a connection", status: 500)
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(connection)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(connection)
            throw CollectorError(code: "database.connect", message: "PostgreSQL: \(message)", status: 500)
        }
        if let lockTimeout {
            let result = PQexec(connection, Self.lockTimeoutStatement(lockTimeout))
            defer { PQclear(result) }
            guard PQresultStatus(result) == PGRES_COMMAND_OK else {
                let message = String(cString: PQerrorMessage(connection)).trimmingCharacters(in: .whitespacesAndNewlines)
                PQfinish(connection)
                throw CollectorError(code: "database.connect", message: "PostgreSQL: setting lock_timeout: \(message)", status: 500)
            }
        }
        return connection
    }

    /// Connects on a new thread of the connection's own (see the type's threading contract) and
    /// sets the session's `lock_timeout` to `lockTimeout` (nil keeps the server's setting).
    /// With `lowPriority` the connection's thread runs below the default priority
    /// (`ThreadPriority`; the page connections of `SQLStore`: decoding a page's rows is its work).
    /// - Throws: `database.connect` with libpq's message when the server refuses or is
    ///   unreachable, or refuses the setting; the thread is shut down again.
    static func connect(url: String, lockTimeout: LockTimeout? = .default, logger: Logger? = nil,
                        lowPriority: Bool = false) async throws -> PostgresBackend {
        let thread = NIOThreadPool(numberOfThreads: threadsPerConnection)
        thread.start()
        do {
            return try await perform(on: thread) {
                if lowPriority { ThreadPriority.lowerCurrentThreadForReads() }
                return PostgresBackend(connection: try Self.open(url: url, lockTimeout: lockTimeout), url: url, thread: thread,
                                lockTimeout: lockTimeout, logger: logger)
            }
        } catch {
            try? await thread.shutdownGracefully()
            throw error
        }
    }

    static func lockTimeoutStatement(_ timeout: LockTimeout) -> String { "SET lock_timeout = '\(timeout.milliseconds)ms'" }

    /// Runs `body` with this connection's lock timeout lifted (`lock_timeout = 0`: waits as long
    /// as the lock is held), then sets it again, also when `body` throws. For start-up work that
    /// must wait for another collector, such as its migration; shutdown cancellation still ends it.
    func withoutLockTimeout<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        _ = try await query("SET lock_timeout = 0", [])
        let restore = lockTimeout.map(Self.lockTimeoutStatement) ?? "RESET lock_timeout"
        do {
            let result = try await body()
            _ = try await query(restore, [])
            return result
        } catch {
            _ = try? await query(restore, [])
            throw error
        }
    }

    /// `?` placeholders become `$1`, `$2`, ... (the statements have no `?` inside string literals).
    static func numbered(_ sql: String) -> String {
        var output = ""
        var index = 0
        for character in sql {
            if character == "?" {
                index += 1
                output += "$\(index)"
            } else {
                output.append(character)
            }
        }
        return output
    }

    func query(_ sql: String, _ binds: [DBValue]) async throws -> [DBRow] {
        let statement = Self.numbered(sql)
        return try await onConnectionThread { try self.execute(statement, binds) }
    }

    func run(_ statements: [SQLStatement]) async throws -> [[DBRow]] {
        if statements.count == 1 { return [try await query(statements[0].sql, statements[0].binds)] }
        let numbered = statements.map { SQLStatement(Self.numbered($0.sql), $0.binds) }
        return try await onConnectionThread { try self.pipeline(numbered) }
    }

    private static let refusedAtShutdown = CollectorError.storageCancelled(
        "PostgreSQL: the collector is shutting down and its grace period is over; the statement was not run")

    /// Runs a statement's `body` on the connection's thread (see `perform(on:_:)`), counted in
    /// `pending`. Once `cancelForShutdown` has begun, it is refused with `storage.cancelled`,
    /// also when it was submitted before but has not started.
    private func onConnectionThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let admitted = work.withLock { state -> Bool in
            guard !state.refusing else { return false }
            state.pending += 1
            return true
        }
        guard admitted else { throw Self.refusedAtShutdown }
        defer { work.withLock { $0.pending -= 1 } }
        return try await Self.perform(on: thread) {
            if self.work.withLock({ $0.refusing }) { throw Self.refusedAtShutdown }
            return try body()
        }
    }

    /// Refuses statements from now on and cancels the running one (see `SQLBackend`): sends a
    /// cancel request every `cancelRetryInterval` while a statement admitted before is still
    /// pending, for at most `abandonAfter`. The cancelled statement fails with
    /// `storage.cancelled` (SQLSTATE 57014); its transaction is not committed.
    func cancelForShutdown() async {
        let deadline = ContinuousClock.now + Self.abandonAfter
        work.withLock {
            $0.refusing = true
            if $0.abandonAt == nil { $0.abandonAt = deadline }
        }
        while work.withLock({ $0.pending }) > 0 && ContinuousClock.now < deadline {
            await sendCancel()
            try? await Task.sleep(for: Self.cancelRetryInterval)
        }
    }

    /// One `PQcancel` (it opens a connection of its own to the server, so it blocks for a round
    /// trip), on a Dispatch thread rather than `thread`, which the statement holds.
    private func sendCancel() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                self.cancelLock.withLock { _ in
                    guard let canceller = self.canceller else { return }
                    var message = [CChar](repeating: 0, count: 256)
                    _ = PQcancel(canceller, &message, Int32(message.count))
                }
                continuation.resume()
            }
        }
    }

    // MARK: Lost connections

    /// What a failure says about the connection: temporary unavailability (the connection is to be
    /// dropped and made again), a full disk, or neither.
    enum FailureKind: Equatable { case connectionLost, diskFull, other }

    /// Classifies a failure by its SQLSTATE (empty when libpq made the error itself) and whether
    /// libpq considers the connection broken.
    static func failureKind(sqlState: String, connectionBad: Bool) -> FailureKind {
        if connectionBad { return .connectionLost }
        switch sqlState {
        case "53100": return .diskFull  // disk_full
        case "57P01", "57P02", "57P03": return .connectionLost  // admin_shutdown, crash_shutdown, cannot_connect_now
        case "53300": return .connectionLost  // too_many_connections: try again later
        default: return sqlState.hasPrefix("08") ? .connectionLost : .other  // connection_exception
        }
    }

    /// The connection to run the next statement on (on `thread`): the current one, or a new one
    /// when it was lost and the backoff allows an attempt now.
    /// - Throws: `storage.unavailable` when there is none.
    private func liveConnection() throws -> OpaquePointer {
        if let connection { return connection }
        let now = ContinuousClock.now
        if now < nextReconnect {
            throw CollectorError.storageUnavailable("PostgreSQL: no connection to the server; reconnecting",
                                                    retryAfter: Self.wholeSeconds(nextReconnect - now))
        }
        do {
            let connection = try Self.open(url: url, lockTimeout: lockTimeout)
            self.connection = connection
            cancelLock.withLock { _ in
                if let canceller { PQfreeCancel(canceller) }
                canceller = PQgetCancel(connection)
            }
            logger?.notice("database connection made again", metadata: ["database": "postgres", "failed_attempts": "\(reconnectFailures)"])
            reconnectFailures = 0
            return connection
        } catch {
            reconnectFailures += 1
            let wait = Self.reconnectBackoff(failures: reconnectFailures)
            nextReconnect = now + wait
            let reason = (error as? CollectorError)?.message ?? "\(error)"
            throw CollectorError.storageUnavailable("PostgreSQL: reconnecting failed (\(reason)); next attempt in \(wait)",
                                                    retryAfter: Self.wholeSeconds(wait))
        }
    }

    private static func wholeSeconds(_ duration: Duration) -> Int {
        let components = duration.components
        return Int(components.seconds) + (components.attoseconds > 0 ? 1 : 0)
    }

    /// Drops `connection` after it was found broken (on `thread`); the next statement connects
    /// again at once. `inTransaction`: a transaction was open on it before the failed call (a
    /// call that fails while beginning one needs nothing more: its caller sees the failure before
    /// any statement of the transaction).
    private func dropConnection(_ connection: OpaquePointer, inTransaction: Bool, reason: String) {
        PQfinish(connection)
        self.connection = nil
        transactionLost = transactionLost || inTransaction
        reconnectFailures = 0
        nextReconnect = ContinuousClock.now
        logger?.error("database connection lost", metadata: ["database": "postgres", "error": "\(reason)"])
    }

    /// Refuses or answers statements of a transaction whose connection was lost (see the type's
    /// documentation); returns true when `firstSQL` was answered without the server (`ROLLBACK`).
    private func settleLostTransaction(firstSQL: String) throws -> Bool {
        guard transactionLost else { return false }
        if firstSQL == "ROLLBACK" {
            transactionLost = false
            return true
        }
        if firstSQL.hasPrefix("BEGIN") {
            transactionLost = false
            return false
        }
        if firstSQL == "COMMIT" { transactionLost = false }
        throw CollectorError.storageUnavailable("PostgreSQL: the connection was lost during the transaction; nothing of it was committed")
    }

    /// The error for a failed call on `connection`, dropping the connection when it is broken.
    private func failed(_ connection: OpaquePointer, sqlState: String, message: String, startedInTransaction: Bool) -> CollectorError {
        let bad = PQstatus(connection) == CONNECTION_BAD
        switch Self.failureKind(sqlState: sqlState, connectionBad: bad) {
        case .connectionLost:
            dropConnection(connection, inTransaction: startedInTransaction, reason: message)
            return .storageUnavailable("PostgreSQL\(sqlState.isEmpty ? "" : " " + sqlState): \(message)")
        case .diskFull:
            return .storageFull("PostgreSQL \(sqlState): \(message)")
        case .other:
            return Self.errorForState(sqlState, message: message)
        }
    }

    /// Runs `body` on `thread` and returns its result. Work runs in submission order, and once
    /// submitted it runs even when the calling task is cancelled: skipping a statement would
    /// leave a transaction half done (a `COMMIT` or `ROLLBACK` never sent). After `close` has
    /// stopped the thread this throws `storage.failed` ("the connection is closed").
    private static func perform<T: Sendable>(on thread: NIOThreadPool, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
            thread.submit { state in
                guard case .active = state else {
                    continuation.resume(throwing: CollectorError.storage("PostgreSQL: the connection is closed"))
                    return
                }
                continuation.resume(with: Result(catching: body))
            }
        }
    }

    /// Calls `body` with libpq's parameter arrays for `binds`: text parameters, except blobs,
    /// which go in binary (format 1) so no escaping is needed.
    private static func withParameters<T>(
        _ binds: [DBValue],
        _ body: (_ values: UnsafePointer<UnsafePointer<CChar>?>?, _ lengths: [Int32], _ formats: [Int32]) -> T
    ) -> T {
        var buffers: [UnsafeMutablePointer<CChar>?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        defer { for buffer in buffers { free(buffer) } }
        for value in binds {
            switch value {
            case .null:
                buffers.append(nil); lengths.append(0); formats.append(0)
            case .int(let number):
                buffers.append(strdup(String(number))); lengths.append(0); formats.append(0)
            case .double(let number):
                buffers.append(strdup(number.isFinite ? "\(number)" : "0")); lengths.append(0); formats.append(0)
            case .text(let text):
                buffers.append(strdup(text)); lengths.append(0); formats.append(0)
            case .blob(let data):
                let memory = malloc(max(data.count, 1))!.assumingMemoryBound(to: CChar.self)
                data.withUnsafeBytes { raw in
                    if let base = raw.baseAddress { memcpy(memory, base, data.count) }
                }
                buffers.append(memory); lengths.append(Int32(data.count)); formats.append(1)
            }
        }
        if binds.isEmpty { return body(nil, lengths, formats) }
        return buffers.withUnsafeBufferPointer { values in
            values.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: values.count) { pointers in
                body(pointers, lengths, formats)
            }
        }
    }

    private func execute(_ sql: String, _ binds: [DBValue]) throws -> [DBRow] {
        guard !closed else { throw CollectorError.storage("PostgreSQL: the connection is closed") }
        if try settleLostTransaction(firstSQL: sql) { return [] }
        let connection = try liveConnection()
        let inTransaction = PQtransactionStatus(connection) != PQTRANS_IDLE
        let result: OpaquePointer? = Self.withParameters(binds) { values, lengths, formats in
            PQexecParams(connection, sql, Int32(binds.count), nil, values, lengths, formats, 0)
        }
        guard let result else {
            throw failed(connection, sqlState: "", message: Self.message(connection), startedInTransaction: inTransaction)
        }
        defer { PQclear(result) }
        if let (state, message) = Self.failureFields(result) {
            throw failed(connection, sqlState: state, message: message, startedInTransaction: inTransaction)
        }
        return Self.rows(result)
    }

    private static func message(_ connection: OpaquePointer) -> String {
        String(cString: PQerrorMessage(connection)).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Sends every statement, then one sync, then reads the results: one round trip for all.
    /// After a failing statement the server skips the rest up to the sync (their results are
    /// `PGRES_PIPELINE_ABORTED`); the first failure is thrown once every result has been read,
    /// so the connection is back out of pipeline mode either way.
    private func pipeline(_ statements: [SQLStatement]) throws -> [[DBRow]] {
        guard !closed else { throw CollectorError.storage("PostgreSQL: the connection is closed") }
        let firstSQL = statements.first?.sql ?? ""
        if try settleLostTransaction(firstSQL: firstSQL) {
            // A lone ROLLBACK of a lost transaction; anything after it runs as usual.
            return [[]] + (statements.count > 1 ? try pipeline(Array(statements.dropFirst())) : [])
        }
        let connection = try liveConnection()
        let inTransaction = PQtransactionStatus(connection) != PQTRANS_IDLE
        /// A failure of the pipeline protocol itself: the connection is broken, or in a state that
        /// is not known (possibly still in pipeline mode), so it is dropped and made again; its
        /// transaction, if any, is lost.
        func broken(_ what: String) -> CollectorError {
            let message = what + ": " + Self.message(connection)
            dropConnection(connection, inTransaction: inTransaction, reason: message)
            return .storageUnavailable("PostgreSQL: \(message)")
        }
        guard PQenterPipelineMode(connection) == 1 else { throw broken("cannot enter pipeline mode") }
        var firstFailure: (state: String, message: String)?
        var sent = 0
        for statement in statements {
            let accepted = Self.withParameters(statement.binds) { values, lengths, formats in
                PQsendQueryParams(connection, statement.sql, Int32(statement.binds.count), nil, values, lengths, formats, 0)
            }
            guard accepted == 1 else {
                firstFailure = ("", "sending a statement failed: " + Self.message(connection))
                break
            }
            sent += 1
        }
        guard PQpipelineSync(connection) == 1 else {
            // The connection is broken; nothing more can be read from it.
            throw broken(firstFailure?.message ?? "pipeline sync failed")
        }
        var results: [[DBRow]] = []
        results.reserveCapacity(sent)
        for _ in 0..<sent {
            var rows: [DBRow] = []
            // Each statement's results end with a NULL.
            while let result = PQgetResult(connection) {
                defer { PQclear(result) }
                if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                    if firstFailure == nil { firstFailure = ("", "a pipelined statement was skipped") }
                } else if let failure = Self.failureFields(result) {
                    if firstFailure == nil { firstFailure = failure }
                } else {
                    rows += Self.rows(result)
                }
            }
            results.append(rows)
        }
        // Then the sync's own result.
        while let result = PQgetResult(connection) {
            let status = PQresultStatus(result)
            PQclear(result)
            if status == PGRES_PIPELINE_SYNC { break }
        }
        if PQexitPipelineMode(connection) != 1 {
            // Results are left unread (the connection broke while reading them): drop it, or every
            // later statement would fail with "not allowed in pipeline mode".
            let reason = firstFailure.map { "\($0.state) \($0.message)" } ?? "cannot leave pipeline mode"
            throw broken(reason)
        }
        if let firstFailure {
            throw failed(connection, sqlState: firstFailure.state, message: firstFailure.message, startedInTransaction: inTransaction)
        }
        return results
    }

    /// The SQLSTATE (empty when libpq made the error) and message of a failed result, or nil.
    private static func failureFields(_ result: OpaquePointer) -> (state: String, message: String)? {
        let status = PQresultStatus(result)
        guard status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK else { return nil }
        let message = String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines)
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
        return (state, message)
    }

    /// The error for a failure with SQLSTATE `state` on a connection that still works (unique
    /// violations as `storage.unique_violation`).
    static func errorForState(_ state: String, message: String) -> CollectorError {
        switch state {
        case "55P03", "40P01":  // lock_not_available (lock_timeout), deadlock_detected
            return .storageBusy("PostgreSQL \(state): \(message)")
        case "57014":  // query_canceled: the collector's shutdown, or the server's statement_timeout
            return .storageCancelled("PostgreSQL \(state): \(message)")
        default:
            return CollectorError(code: state == "23505" ? "storage.unique_violation" : "storage.failed",
                                  message: "PostgreSQL \(state): \(message)", status: 500)
        }
    }

    private static func rows(_ result: OpaquePointer) -> [DBRow] {
        var rows: [DBRow] = []
        let fieldCount = PQnfields(result)
        let names = (0..<fieldCount).map { String(cString: PQfname(result, $0)) }
        for row in 0..<PQntuples(result) {
            var values: [String: DBValue] = [:]
            for field in 0..<fieldCount {
                let name = names[Int(field)]
                if PQgetisnull(result, row, field) == 1 {
                    values[name] = .null
                    continue
                }
                let type = PQftype(result, field)
                if type == 17 {  // bytea: decoded from libpq's buffer, without a String of its hex first
                    values[name] = .blob(Self.decodeByteaHex(PQgetvalue(result, row, field), length: Int(PQgetlength(result, row, field))))
                    continue
                }
                let text = String(cString: PQgetvalue(result, row, field))
                switch type {
                case 20, 21, 23: values[name] = Int64(text).map(DBValue.int) ?? .text(text)  // int8, int2, int4
                case 700, 701: values[name] = Double(text).map(DBValue.double) ?? .text(text)  // float4, float8
                case 1700: values[name] = Int64(text).map(DBValue.int) ?? Double(text).map(DBValue.double) ?? .text(text)  // numeric
                case 16: values[name] = .int(text == "t" ? 1 : 0)  // bool
                default: values[name] = .text(text)
                }
            }
            rows.append(DBRow(values: values))
        }
        return rows
    }

    /// bytea in text output, `length` bytes at `bytes`: `\x` followed by hex digits. Page reads
    /// fetch thousands of payloads, so this writes straight into the result's storage.
    static func decodeByteaHex(_ bytes: UnsafePointer<CChar>, length: Int) -> Data {
        let start = length >= 2 && bytes[0] == 0x5C && bytes[1] == 0x78 ? 2 : 0
        let count = (length - start) / 2
        guard count > 0 else { return Data() }
        var data = Data(count: count)
        data.withUnsafeMutableBytes { (output: UnsafeMutableRawBufferPointer) in
            let out = output.bindMemory(to: UInt8.self)
            bytes.withMemoryRebound(to: UInt8.self, capacity: length) { input in
                var index = start
                for offset in 0..<count {
                    out[offset] = Self.hexNibble(input[index]) << 4 | Self.hexNibble(input[index + 1])
                    index += 2
                }
            }
        }
        return data
    }

    private static func hexNibble(_ c: UInt8) -> UInt8 {
        switch c {
        case 0x30...0x39: return c &- 0x30
        case 0x61...0x66: return c &- 0x61 &+ 10
        case 0x41...0x46: return c &- 0x41 &+ 10
        default: return 0
        }
    }

    /// Closes the connection after the statements already submitted, then stops its thread.
    /// A second `close` does nothing. Once `cancelForShutdown` has been cancelling for
    /// `abandonAfter` (whether `close` began before or after it) and a statement still holds
    /// the thread (the server did not act on the cancel, or cannot be reached), it throws
    /// `storage.close_abandoned` instead of waiting on, leaving the connection and its blocked
    /// thread to the process's exit.
    func close() async throws {
        let closing = Task { () -> Bool in
            (try? await Self.perform(on: self.thread) { () -> Bool in
                guard !self.closed else { return false }
                self.closed = true
                if let connection = self.connection { PQfinish(connection) }
                self.connection = nil
                return true
            }) ?? false
        }
        let (outcome, continuation) = AsyncStream<Bool?>.makeStream()
        Task { continuation.yield(await closing.value) }
        let watchdog = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(100))
                if let abandonAt = work.withLock({ $0.abandonAt }), ContinuousClock.now >= abandonAt {
                    continuation.yield(nil)
                    return
                }
            }
        }
        var iterator = outcome.makeAsyncIterator()
        let closedNow = await iterator.next() ?? nil
        continuation.finish()
        watchdog.cancel()
        guard let closedNow else {
            throw CollectorError(code: "storage.close_abandoned",
                                 message: "PostgreSQL: a cancelled statement still ran \(Self.abandonAfter) after the cancelling began; the connection was left open",
                                 status: 500)
        }
        if closedNow { try await thread.shutdownGracefully() }
    }

    /// A backend dropped without `close` (a failing test, an error path) still frees its
    /// connection and thread, so neither leaks and NIO's check that pools are shut down holds.
    deinit {
        if let canceller { PQfreeCancel(canceller) }
        if !closed {
            if let connection { PQfinish(connection) }
            thread.shutdownGracefully { _ in }
        }
    }
}

extension Array where Element == String {
    /// Calls `body` with a NULL-terminated array of C strings copied from the elements (libpq's
    /// `keywords`/`values` arrays).
    func withCStrings<R>(_ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies: [UnsafeMutablePointer<CChar>?] = map { strdup($0) } + [nil]
        defer { for copy in copies { free(copy) } }
        return copies.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) { body($0) }
        }
    }
}
