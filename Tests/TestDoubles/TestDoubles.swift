// Sinks that keep what they receive in memory, for the tests and the test probes: no product
// ships them.
import CrashShieldBase
import CrashShieldGuards
import CrashShieldRecording
import Foundation

/// Keeps the most recent incidents in memory (a ring of `capacity`).
package final class InMemoryIncidentSink: IncidentSink {
    private let storage = Locked<[Incident]>([])
    private let capacity: Int

    /// - Parameter capacity: how many incidents to keep; older ones are dropped. Default: 256.
    package init(capacity: Int = 256) { self.capacity = max(1, capacity) }

    package func receive(_ incident: Incident) {
        storage.withLock { storage in
            storage.append(incident)
            if storage.count > capacity { storage.removeFirst(storage.count - capacity) }
        }
    }

    /// The kept incidents, oldest first.
    package var incidents: [Incident] { storage.withLock { $0 } }

    package func removeAll() { storage.withLock { $0.removeAll() } }
}

/// Keeps every received report in memory.
package final class InMemoryCrashReportSink: CrashReportSink {
    private let storage = Locked<[CrashEvent]>([])
    package init() {}
    package func receive(_ report: CrashEvent) throws { storage.withLock { $0.append(report) } }
    /// Every report received so far, in order.
    package var reports: [CrashEvent] { storage.withLock { $0 } }
}
