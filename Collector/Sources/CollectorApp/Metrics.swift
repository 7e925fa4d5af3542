import Synchronization

/// The collector's counters, rendered in Prometheus' text exposition format at `/metrics`.
public final class CollectorMetrics: Sendable {
    private struct State {
        var ingestedItems: [String: Int64] = [:]
        var rejected: [String: Int64] = [:]
        var rateLimited: Int64 = 0
        var inFlight: Int64 = 0
        var duplicates: Int64 = 0
        var queueDepth: Int64 = 0
        var commits: Int64 = 0
        var committedWrites: Int64 = 0
        var sdkConfigResponses: [Int: Int64] = [:]
        var storageUnavailable: [String: Int64] = [:]
        var openConnections: Int64 = 0
        var closedConnections: [String: Int64] = [:]
        var discarded: [DiscardKey: Int64] = [:]
    }
    private struct DiscardKey: Hashable, Comparable {
        let reason: String
        let category: String
        static func < (a: DiscardKey, b: DiscardKey) -> Bool { (a.reason, a.category) < (b.reason, b.category) }
    }
    private let state = Mutex(State())
    /// The store's availability monitor, when its store has one (`observeStorage`).
    private let storage = Mutex<StorageMonitor?>(nil)

    public init() {}

    /// Renders `monitor`'s failure counts and state with the other metrics.
    func observeStorage(_ monitor: StorageMonitor) { storage.withLock { $0 = monitor } }

    /// An item of `type` (event, session, attachment, ...) accepted and stored.
    func ingested(_ type: String) { state.withLock { $0.ingestedItems[type, default: 0] += 1 } }
    /// A request refused; `reason` is the refusal's error code.
    func rejected(_ reason: String) { state.withLock { $0.rejected[reason, default: 0] += 1 } }
    /// Envelope items the collector dropped while storing the rest of their envelope (an event
    /// over the event limit: `too_large`, `error`), as Sentry's outcomes name them.
    func discarded(reason: String, category: String, quantity: Int64 = 1) {
        state.withLock { $0.discarded[DiscardKey(reason: reason, category: category), default: 0] += quantity }
    }
    func rateLimited() { state.withLock { $0.rateLimited += 1 } }
    func duplicate() { state.withLock { $0.duplicates += 1 } }
    func beginRequest() { state.withLock { $0.inFlight += 1 } }
    func endRequest() { state.withLock { $0.inFlight -= 1 } }
    /// Ingest requests in the write queue (waiting for or in a group commit).
    func setQueueDepth(_ depth: Int) { state.withLock { $0.queueDepth = Int64(depth) } }
    /// A request answered 503 because of the database; `code` is `storage.busy` (a lock wait
    /// passed the lock timeout), `storage.cancelled` (cancelled or refused at shutdown),
    /// `storage.unavailable` (the database cannot be reached) or `storage.full` (disk full).
    func storageUnavailable(_ code: String) { state.withLock { $0.storageUnavailable[code, default: 0] += 1 } }
    /// One group commit of `writes` ingest requests.
    func committed(writes: Int) {
        state.withLock {
            $0.commits += 1
            $0.committedWrites += Int64(writes)
        }
    }

    /// One answer of `GET /api/<project>/sdk-config` with HTTP status `status` (200: a document,
    /// 304: the client's ETag is current, 4xx: refused or none published).
    func sdkConfigAnswered(status: Int) { state.withLock { $0.sdkConfigResponses[status, default: 0] += 1 } }

    /// HTTP connections open now (admitted by the connection caps).
    func setOpenConnections(_ count: Int) { state.withLock { $0.openConnections = Int64(count) } }
    /// A connection refused by a cap (`over_total`, `over_per_address`) or closed by a timeout
    /// (`header_timeout`, `idle_timeout`, `body_timeout`: a request body without a byte for the idle timeout).
    func connectionClosed(_ reason: String) { state.withLock { $0.closedConnections[reason, default: 0] += 1 } }

    /// Current value of a counter, for tests and the health page.
    public func ingestedCount(_ type: String) -> Int64 { state.withLock { $0.ingestedItems[type] ?? 0 } }
    public func rejectedCount(_ reason: String) -> Int64 { state.withLock { $0.rejected[reason] ?? 0 } }
    /// Items dropped by the collector with this outcome reason and category so far.
    public func discardedCount(reason: String, category: String) -> Int64 {
        state.withLock { $0.discarded[DiscardKey(reason: reason, category: category)] ?? 0 }
    }
    public var rateLimitedCount: Int64 { state.withLock { $0.rateLimited } }
    /// Answers of `GET /api/<project>/sdk-config` with this HTTP status so far.
    public func sdkConfigResponseCount(status: Int) -> Int64 { state.withLock { $0.sdkConfigResponses[status] ?? 0 } }
    /// Requests answered 503 with the storage error `code` (any route).
    public func storageUnavailableCount(_ code: String) -> Int64 { state.withLock { $0.storageUnavailable[code] ?? 0 } }
    /// Group commits so far, and the ingest requests they stored.
    public var commitCount: Int64 { state.withLock { $0.commits } }
    public var committedRequestCount: Int64 { state.withLock { $0.committedWrites } }
    /// Connections refused or closed for `reason` so far; connections open now.
    public func closedConnectionCount(_ reason: String) -> Int64 { state.withLock { $0.closedConnections[reason] ?? 0 } }
    public var openConnectionCount: Int64 { state.withLock { $0.openConnections } }

    /// Prometheus text format (version 0.0.4).
    public func render() -> String {
        let snapshot = state.withLock { $0 }
        var lines: [String] = []
        /// One metric family: its HELP and TYPE lines, then one sample per `(labels, value)`.
        func family(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: Int64)]) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
            for sample in samples { lines.append("\(name)\(sample.labels) \(sample.value)") }
        }
        /// Samples of a family labelled `label`, in the label values' order.
        func labelled<Key: Comparable>(_ label: String, _ counts: [Key: Int64], _ text: (Key) -> String) -> [(labels: String, value: Int64)] {
            counts.sorted { $0.key < $1.key }.map { ("{\(label)=\"\(text($0.key))\"}", $0.value) }
        }
        family("collector_ingested_items_total", "counter", "Envelope items (and store events) accepted and stored, by item type.",
               labelled("type", snapshot.ingestedItems, escape))
        family("collector_rejected_requests_total", "counter", "Ingest requests refused, by error code.",
               labelled("reason", snapshot.rejected, escape))
        family("collector_discarded_items_total", "counter",
               "Envelope items dropped by the collector while the rest of the envelope was stored, by outcome reason and data category (too_large, error: an event over the event limit).",
               snapshot.discarded.sorted { $0.key < $1.key }.map { ("{reason=\"\(escape($0.key.reason))\",category=\"\(escape($0.key.category))\"}", $0.value) })
        family("collector_rate_limited_total", "counter", "Ingest requests answered with 429.", [("", snapshot.rateLimited)])
        family("collector_duplicate_events_total", "counter", "Events whose event_id was already stored (not stored again).",
               [("", snapshot.duplicates)])
        family("collector_ingest_in_flight_requests", "gauge", "Ingest requests being received, parsed or stored right now.",
               [("", snapshot.inFlight)])
        family("collector_ingest_queue_depth", "gauge", "Ingest requests in the write queue: waiting for or inside a group commit.",
               [("", snapshot.queueDepth)])
        family("collector_ingest_commits_total", "counter", "Group commits (transactions storing one or more ingest requests).",
               [("", snapshot.commits)])
        family("collector_ingest_committed_requests_total", "counter", "Ingest requests stored by group commits.",
               [("", snapshot.committedWrites)])
        family("collector_sdk_config_responses_total", "counter",
               "Answers of GET /api/<project>/sdk-config, by HTTP status (304: the app's copy is current).",
               labelled("status", snapshot.sdkConfigResponses) { String($0) })
        family("collector_storage_unavailable_total", "counter",
               "Requests answered 503 because of the database, by error code: storage.busy (a lock wait passed the lock timeout), storage.cancelled (shutdown), storage.unavailable (cannot reach the database), storage.full (disk full).",
               labelled("code", snapshot.storageUnavailable, escape))
        if let monitor = storage.withLock({ $0 }) {
            family("collector_storage_failures_total", "counter",
                   "Failed database operations, by kind: unavailable (cannot reach the database), full (disk full), busy (lock timeout), cancelled (shutdown), failed (other).",
                   labelled("kind", monitor.failureCounts, escape))
            let current = monitor.current
            family("collector_storage_state", "gauge", "The storage state /health reports: 1 for the current state, 0 for the others.",
                   StorageState.allCases.map { ("{state=\"\($0.rawValue)\"}", $0 == current ? 1 : 0) })
        }
        family("collector_connections_open", "gauge", "HTTP connections open now.", [("", snapshot.openConnections)])
        family("collector_connections_closed_total", "counter",
               "HTTP connections refused at once by a cap (over_total, over_per_address) or closed by a timeout (header_timeout, idle_timeout, body_timeout), by reason.",
               labelled("reason", snapshot.closedConnections, escape))
        return lines.joined(separator: "\n") + "\n"
    }

    private func escape(_ label: String) -> String {
        label.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
