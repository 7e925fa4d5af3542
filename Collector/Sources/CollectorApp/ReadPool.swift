import Synchronization

/// One read connection of a `ReadPool`: its backend, and on SQLite the thread its statements run
/// on (a SQLite statement runs on its caller's thread; a page's query may take milliseconds, which
/// must not hold one of the global pool's threads that the request handlers use). PostgreSQL's
/// backend has a thread of its own already.
final class ReadConnection: Sendable {
    let backend: any SQLBackend
    let executor: WriterThreadExecutor?

    init(backend: any SQLBackend, executor: WriterThreadExecutor?) {
        self.backend = backend
        self.executor = executor
    }

    /// A connection dropped without `ReadPool.close` (a store never closed) still ends its thread.
    deinit { executor?.stop() }

    /// Runs `body` on the connection's thread (SQLite) or where it was called (PostgreSQL).
    func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        guard let executor else { return try await body() }
        return try await withTaskExecutorPreference(executor) { try await body() }
    }
}

/// The read connections of a `SQLStore`, separate from its writer: a read never takes the
/// writer's lock, so a dashboard page or API read does not wait for a group commit, and a commit
/// does not wait for a page. SQLite in WAL mode lets each read connection read its snapshot while
/// the writer commits; on PostgreSQL each is a connection of its own (with reconnecting as
/// `PostgresBackend` documents).
///
/// Contract: `withConnection` lends one idle connection to its body, which alone uses it until
/// it returns; when every connection is lent, callers wait first come, first served. `close`
/// closes every connection (after the bodies running on them) and stops their threads.
final class ReadPool: Sendable {
    private struct State {
        var idle: [ReadConnection]
        var waiters: [CheckedContinuation<ReadConnection, Never>] = []
    }
    let connections: [ReadConnection]
    private let state: Mutex<State>

    init(_ connections: [ReadConnection]) {
        precondition(!connections.isEmpty, "a read pool needs a connection")
        self.connections = connections
        self.state = Mutex(State(idle: connections))
    }

    /// Runs `body` with a connection of its own (see the type's contract).
    func withConnection<T: Sendable>(_ body: (ReadConnection) async throws -> T) async throws -> T {
        let connection = await acquire()
        defer { release(connection) }
        return try await connection.run { try await body(connection) }
    }

    private func acquire() async -> ReadConnection {
        await withCheckedContinuation { (continuation: CheckedContinuation<ReadConnection, Never>) in
            let idle = state.withLock { state -> ReadConnection? in
                if let connection = state.idle.popLast() { return connection }
                state.waiters.append(continuation)
                return nil
            }
            if let idle { continuation.resume(returning: idle) }
        }
    }

    private func release(_ connection: ReadConnection) {
        let waiter = state.withLock { state -> CheckedContinuation<ReadConnection, Never>? in
            if state.waiters.isEmpty {
                state.idle.append(connection)
                return nil
            }
            return state.waiters.removeFirst()  // the connection passes to the next waiter
        }
        waiter?.resume(returning: connection)
    }

    func cancelForShutdown() async {
        for connection in connections { await connection.backend.cancelForShutdown() }
    }

    /// Closes every connection; the first failure is thrown once all were tried.
    func close() async throws {
        var failure: (any Error)?
        for connection in connections {
            do { try await connection.backend.close() } catch { failure = failure ?? error }
            connection.executor?.stop()
        }
        if let failure { throw failure }
    }
}
