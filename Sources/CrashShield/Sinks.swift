import Foundation
import Logging
internal import _CrashShieldSupport

/// Receives delivered incidents. Called on CrashShield's delivery thread, one incident at a time
/// (never concurrently with itself), never on the thread that made the misuse.
public protocol IncidentSink: AnyObject, Sendable {
    func receive(_ incident: Incident)
}

/// Calls a closure for every incident.
public final class ClosureIncidentSink: IncidentSink {
    private let body: @Sendable (Incident) -> Void
    public init(_ body: @escaping @Sendable (Incident) -> Void) { self.body = body }
    public func receive(_ incident: Incident) { body(incident) }
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

/// Keeps the most recent incidents in memory (a ring of `capacity`).
public final class InMemoryIncidentSink: IncidentSink {
    private let storage = Locked<[Incident]>([])
    private let capacity: Int

    /// - Parameter capacity: how many incidents to keep; older ones are dropped. Default: 256.
    public init(capacity: Int = 256) { self.capacity = max(1, capacity) }

    public func receive(_ incident: Incident) {
        storage.withLock { storage in
            storage.append(incident)
            if storage.count > capacity { storage.removeFirst(storage.count - capacity) }
        }
    }

    /// The kept incidents, oldest first.
    public var incidents: [Incident] { storage.withLock { $0 } }

    public func removeAll() { storage.withLock { $0.removeAll() } }
}
