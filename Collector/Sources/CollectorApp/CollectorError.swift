import Foundation

/// A failure the collector reports to a client or an operator. `code` is stable across versions
/// (clients and tests match on it); `message` is for people. `status` is the HTTP status the
/// collector answers with when the failure ends a request.
public struct CollectorError: Error, Sendable, Hashable, CustomStringConvertible {
    public let code: String
    public let message: String
    public let status: Int

    public init(code: String, message: String, status: Int) {
        self.code = code
        self.message = message
        self.status = status
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
}
