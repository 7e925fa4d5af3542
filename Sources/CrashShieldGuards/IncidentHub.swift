import CrashShieldBase
import Foundation
package import _CrashShieldIncidents

/// Fans incidents out from the C delivery thread to sinks and `AsyncStream` subscribers.
///
/// Forks: `lock` is a plain pthread mutex that fork handlers hold across `fork()` (registered
/// after the C pipeline's, so they take this lock before the queue's, the order `connect` takes
/// them in), so a child never inherits it held by the parent's delivery thread; the child's
/// sinks and streams are the parent's (its own delivery thread calls them, see cs_incidents.h).
// @unchecked Sendable: every mutable stored property is read and written only under `lock`
final package class IncidentHub: @unchecked Sendable {
    static package let shared = IncidentHub()

    private let lock = Locked()
    private var sinks: [any IncidentSink] = []
    private var streams: [UInt64: AsyncStream<Incident>.Continuation] = [:]
    private var nextStreamID: UInt64 = 0
    private var connected = false

    /// Installs the C callback once; from then on every delivered incident reaches `deliver`.
    /// `startingThread` false leaves the delivery thread to `startDeliveryThread()` or to the
    /// first incident (the start creates it after returning).
    package func connect(startingThread: Bool = true) {
        lock.lock()
        defer { lock.unlock() }
        guard !connected else { return }
        connected = true
        let callback: cs_incident_callback = { raw, _ in
            guard let raw else { return }
            IncidentHub.shared.deliver(Incident(raw))
        }
        if startingThread {
            cs_incidents_set_callback(callback, nil)
        } else {
            cs_incidents_set_callback_without_thread(callback, nil)
        }
        pthread_atfork(
            { IncidentHub.shared.lock.lock() },
            { IncidentHub.shared.lock.unlock() },
            { IncidentHub.shared.lock.reinitializeInForkedChild() })
    }

    /// Starts the delivery thread if `connect(startingThread: false)` left it unstarted.
    package func startDeliveryThread() { cs_incidents_start_delivery_thread() }

    package func add(_ sink: any IncidentSink) {
        lock.lock()
        sinks.append(sink)
        lock.unlock()
        connect()
    }

    package func remove(_ sink: any IncidentSink) {
        lock.lock()
        sinks.removeAll { $0 === sink }
        lock.unlock()
    }

    package func stream() -> AsyncStream<Incident> {
        connect()
        let (stream, continuation) = AsyncStream<Incident>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        lock.lock()
        let id = nextStreamID
        nextStreamID += 1
        streams[id] = continuation
        lock.unlock()
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.lock.lock()
            self.streams[id] = nil
            self.lock.unlock()
        }
        return stream
    }

    private func deliver(_ incident: Incident) {
        lock.lock()
        let currentSinks = sinks
        let currentStreams = Array(streams.values)
        lock.unlock()
        for sink in currentSinks { sink.receive(incident) }
        for continuation in currentStreams { continuation.yield(incident) }
    }
}
