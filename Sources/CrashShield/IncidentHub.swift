import Foundation
internal import _CrashShieldIncidents

/// Fans incidents out from the C delivery thread to sinks and `AsyncStream` subscribers.
final class IncidentHub: @unchecked Sendable {
    static let shared = IncidentHub()

    private let lock = NSLock()
    private var sinks: [any IncidentSink] = []
    private var streams: [UInt64: AsyncStream<Incident>.Continuation] = [:]
    private var nextStreamID: UInt64 = 0
    private var connected = false

    /// Installs the C callback once; from then on every delivered incident reaches `deliver`.
    func connect() {
        lock.lock()
        defer { lock.unlock() }
        guard !connected else { return }
        connected = true
        cs_incidents_set_callback({ raw, _ in
            guard let raw else { return }
            IncidentHub.shared.deliver(Incident(raw))
        }, nil)
    }

    func add(_ sink: any IncidentSink) {
        lock.lock()
        sinks.append(sink)
        lock.unlock()
        connect()
    }

    func remove(_ sink: any IncidentSink) {
        lock.lock()
        sinks.removeAll { $0 === sink }
        lock.unlock()
    }

    func stream() -> AsyncStream<Incident> {
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
