import Foundation

/// A failure the collector reports to a client or an operator. `code` is stable across versions
/// (clients and tests match on it); `message` is for people. `status` is the HTTP status the
/// collector answers with when the failure ends a request; `retryAfter`, when set, is sent as
/// `Retry-After` (seconds) with that answer: the request was acceptable and nothing of it was
/// stored, so the client should send it again later.
///
/// Storage failures a client should retry (HTTP 503):
/// - `storage.busy`: a statement waited longer than the lock timeout for a lock another
///   connection or process held (a concurrent `shield-collector prune`, another collector's
///   commit, a long transaction); `Retry-After: 1`.
/// - `storage.cancelled`: the statement was cancelled (the collector is shutting down and its
///   grace period is over, or the database server cancelled it), or was not run because the
///   collector is shutting down; `Retry-After: 5`.
/// - `storage.unavailable`: the database cannot be reached (PostgreSQL: the connection was lost,
///   the server is shutting down, starting up or refusing connections); the collector reconnects
///   with bounded exponential backoff. `Retry-After`: until its next attempt, 1 to 5 s.
/// - `storage.full`: the database's disk is full (SQLite `SQLITE_FULL`, PostgreSQL 53100
///   `disk_full`); writes resume by themselves once space is freed. `Retry-After: 30`. 503, not
///   507 (WebDAV's Insufficient Storage): SDKs and proxies know to retry a 503 with `Retry-After`.
/// Both are logged at `error` and put `/health` in state `unavailable` or `full` (503).
public struct CollectorError: Error, Sendable, Hashable, CustomStringConvertible {
    public let code: String
    public let message: String
    public let status: Int
    /// Seconds a client should wait before sending the request again, or nil.
    public let retryAfter: Int?

    public init(code: String, message: String, status: Int, retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.retryAfter = retryAfter
    }

    public var description: String { "\(code): \(message)" }

    static func badRequest(_ code: String, _ message: String) -> CollectorError { .init(code: code, message: message, status: 400) }
    static func unauthorized(_ code: String, _ message: String) -> CollectorError { .init(code: code, message: message, status: 401) }
    static func forbidden(_ code: String, _ message: String) -> CollectorError { .init(code: code, message: message, status: 403) }
    static func notFound(_ code: String, _ message: String) -> CollectorError { .init(code: code, message: message, status: 404) }
    static func conflict(_ code: String, _ message: String) -> CollectorError { .init(code: code, message: message, status: 409) }
    static func tooLarge(_ code: String, _ message: String) -> CollectorError { .init(code: code, message: message, status: 413) }
    static func unsupportedMediaType(_ code: String, _ message: String) -> CollectorError { .init(code: code, message: message, status: 415) }
    static func storage(_ message: String) -> CollectorError { .init(code: "storage.failed", message: message, status: 500) }
    /// `storage.busy`, 503, `Retry-After: 1`: a lock wait passed the lock timeout.
    static func storageBusy(_ message: String) -> CollectorError {
        .init(code: "storage.busy", message: message, status: 503, retryAfter: 1)
    }
    /// `storage.cancelled`, 503, `Retry-After: 5`: cancelled or refused at shutdown.
    static func storageCancelled(_ message: String) -> CollectorError {
        .init(code: "storage.cancelled", message: message, status: 503, retryAfter: 5)
    }
    /// `storage.unavailable`, 503: the database cannot be reached; retry after `retryAfter` seconds.
    static func storageUnavailable(_ message: String, retryAfter: Int = 1) -> CollectorError {
        .init(code: "storage.unavailable", message: message, status: 503, retryAfter: max(1, retryAfter))
    }
    /// `storage.full`, 503, `Retry-After: 30`: the database's disk is full.
    static func storageFull(_ message: String) -> CollectorError {
        .init(code: "storage.full", message: message, status: 503, retryAfter: 30)
    }
}
