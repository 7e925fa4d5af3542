// Sinks that keep what they receive in memory, for the tests and the test probes: no product
// ships them.
import CrashShieldGuards
import CrashShieldRecording
import Foundation

/// Keeps the most recent incidents in memory (a ring of `capacity`).
package final class InMemoryIncidentSink: IncidentSink, @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Incident] = []
    private let capacity: Int

    /// - Parameter capacity: how many incidents to keep; older ones are dropped. Default: 256.
    package init(capacity: Int = 256) { self.capacity = max(1, capacity) }

    package func receive(_ incident: Incident) {
        lock.lock()
        defer { lock.unlock() }
        storage.append(incident)
        if storage.count > capacity { storage.removeFirst(storage.count - capacity) }
    }

    /// The kept incidents, oldest first.
    package var incidents: [Incident] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }

    package func removeAll() {
        lock.lock()
        defer { lock.unlock() }
        storage.removeAll()
    }
}

/// Keeps every received report in memory.
package final class InMemoryCrashReportSink: CrashReportSink, @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [CrashEvent] = []
    package init() {}
    package func receive(_ report: CrashEvent) throws {
        lock.lock()
        defer { lock.unlock() }
        storage.append(report)
    }
    /// Every report received so far, in order.
    package var reports: [CrashEvent] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
}
