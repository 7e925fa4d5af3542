import CrashShieldBase
import Foundation
import Logging

/// Receives delivered incidents. Called on CrashShield's delivery thread, one incident at a time
/// (never concurrently with itself), never on the thread that made the misuse.
public protocol IncidentSink: AnyObject, Sendable {
    /// Called for every delivered incident, in order, on the delivery thread; must not block for long.
    func receive(_ incident: Incident)
}

/// Calls a closure for every incident.
package final class ClosureIncidentSink: IncidentSink {
    private let body: @Sendable (Incident) -> Void
    package init(_ body: @escaping @Sendable (Incident) -> Void) { self.body = body }
    package func receive(_ incident: Incident) { body(incident) }
}

/// Logs every incident through swift-log, with the incident's fields as metadata.
public final class LoggingIncidentSink: IncidentSink {
    private let logger: Logger
    private let level: Logger.Level

    /// - Parameters:
    ///   - logger: where to log. Default: a logger labelled "CrashShield".
    ///   - level: the level for every incident. Default: `.warning`.
    public init(logger: Logger = Logger(label: "CrashShield"), level: Logger.Level = .warning) {
        self.logger = logger
        self.level = level
    }

    /// Logs `incident` at the sink's level.
    public func receive(_ incident: Incident) {
        logger.log(
            level: level,
            "\(incident.methodName): \(incident.reason)",
            metadata: [
                "guard": "\(incident.guardID)",
                "policy": "\(incident.policy)",
                "count": "\(incident.count)",
                "fingerprint": "\(String(incident.fingerprint, radix: 16))",
                "thread": "\(incident.threadID)\(incident.isMainThread ? " (main)" : "")",
            ])
    }
}

