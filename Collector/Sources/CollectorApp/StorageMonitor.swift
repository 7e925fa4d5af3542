import Logging
import Synchronization

/// The storage state `/health` reports: `ok`; `unavailable` (the database cannot be reached:
/// `storage.unavailable`); `full` (its disk is full: `storage.full`). Not `ok` answers 503.
public enum StorageState: String, Sendable, CaseIterable {
    case ok, unavailable, full
}

/// What a store has seen of its database's availability (`SQLStore` observes every operation):
/// the state `/health` reports and the failures `/metrics` counts by kind.
///
/// The state follows the last outcome: a `storage.unavailable` failure makes it `unavailable`, a
/// `storage.full` one `full`; any success ends `unavailable` (the database answers again), only
/// a committed write ends `full` (reads still work on a full disk). Changes of state are logged
/// (`error` when entering `unavailable` or `full`, `notice` when back to `ok`).
public final class StorageMonitor: Sendable {
    private struct State {
        var current: StorageState = .ok
        var failures: [String: Int64] = [:]
    }
    private let state = Mutex(State())
    private let logger: Logger
    private let database: String

    init(logger: Logger, database: String) {
        self.logger = logger
        self.database = database
    }

    /// The state as last observed.
    public var current: StorageState { state.withLock { $0.current } }

    /// Failed database operations of `kind` so far (`unavailable`, `full`, `busy`, `cancelled`, `failed`).
    public func failureCount(_ kind: String) -> Int64 { state.withLock { $0.failures[kind] ?? 0 } }
    var failureCounts: [String: Int64] { state.withLock { $0.failures } }

    /// Runs `body` (one store operation) and records its outcome. `write`: its success means the
    /// database committed a write.
    func observe<T>(write: Bool, _ body: () async throws -> T) async throws -> T {
        let result: T
        do { result = try await body() } catch {
            failed(error)
            throw error
        }
        succeeded(write: write)
        return result
    }

    func succeeded(write: Bool) {
        let previous = state.withLock { state -> StorageState? in
            guard state.current == .unavailable || (state.current == .full && write) else { return nil }
            defer { state.current = .ok }
            return state.current
        }
        if let previous {
            logger.notice("storage available again", metadata: ["database": "\(database)", "was": "\(previous.rawValue)"])
        }
    }

    /// The kind a failure is counted as, or nil for errors that are not storage failures.
    static func kind(of error: any Error) -> String? {
        guard let failure = error as? CollectorError else { return nil }
        switch failure.code {
        case "storage.unavailable": return "unavailable"
        case "storage.full": return "full"
        case "storage.busy": return "busy"
        case "storage.cancelled": return "cancelled"
        case "storage.failed": return "failed"
        default: return nil
        }
    }

    func failed(_ error: any Error) {
        guard let kind = Self.kind(of: error) else { return }
        let entered = state.withLock { state -> StorageState? in
            state.failures[kind, default: 0] += 1
            let next: StorageState? = kind == "unavailable" ? .unavailable : kind == "full" ? .full : nil
            guard let next, next != state.current else { return nil }
            state.current = next
            return next
        }
        if let entered {
            logger.error("storage \(entered.rawValue)", metadata: ["database": "\(database)", "error": "\(error)"])
        }
    }
}
