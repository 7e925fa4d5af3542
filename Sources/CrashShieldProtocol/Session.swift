import Foundation

/// A release-health session update (envelope item type "session").
///
/// One session per launch. `init` is true on the first update the server gets for `sid`;
/// `exited`, `crashed` and `abnormal` are final: no update follows them.
public struct SessionUpdate: Codable, Sendable, Hashable {
    /// The session's id: a UUID, lowercase, hyphenated.
    public var sid: String
    /// The installation's id (random, never a hardware id): "users" on the dashboard.
    public var did: String?
    /// `init`: true on the first update of this session.
    public var isInitial: Bool
    /// RFC 3339 UTC: when the session began.
    public var started: String
    /// RFC 3339 UTC: when this update was made (for a final update: when the session ended).
    public var timestamp: String
    public var status: Status
    /// Errors (handled or not) seen in the session; a crashed session has at least 1.
    public var errors: Int
    /// Seconds from `started` to the end; absent when unknown (`abnormal`).
    public var duration: Double?
    public var attrs: Attributes

    public init(sid: String, did: String?, isInitial: Bool, started: String, timestamp: String, status: Status,
                errors: Int, duration: Double?, attrs: Attributes) {
        self.sid = sid
        self.did = did
        self.isInitial = isInitial
        self.started = started
        self.timestamp = timestamp
        self.status = status
        self.errors = errors
        self.duration = duration
        self.attrs = attrs
    }

    enum CodingKeys: String, CodingKey {
        case sid, did, isInitial = "init", started, timestamp, status, errors, duration, attrs
    }

    public enum Status: String, Codable, Sendable, Hashable {
        /// Running (the first update of a session, or an update while it runs).
        case ok
        /// Ended normally.
        case exited
        /// Ended by a crash.
        case crashed
        /// Ended in an unknown way: the process vanished without a clean exit or a crash report
        /// (`kill -9`, power loss, the system ending it).
        case abnormal

        /// True for the statuses after which no update may follow.
        public var isFinal: Bool { self != .ok }
    }

    public struct Attributes: Codable, Sendable, Hashable {
        /// Required by the server.
        public var release: String
        public var environment: String?
        public init(release: String, environment: String?) {
            self.release = release
            self.environment = environment
        }
    }

    /// Compact JSON with sorted keys: the session item's payload.
    public func jsonData() throws -> Data { try SentryEvent.encoder.encode(self) }
}

/// What the SDK dropped without sending (envelope item type "client_report"), so the server can
/// tell lost data from no data.
public struct ClientReport: Codable, Sendable, Hashable {
    /// RFC 3339 UTC.
    public var timestamp: String
    public var discardedEvents: [DiscardedEvents]

    public init(timestamp: String, discardedEvents: [DiscardedEvents]) {
        self.timestamp = timestamp
        self.discardedEvents = discardedEvents
    }

    enum CodingKeys: String, CodingKey { case timestamp, discardedEvents = "discarded_events" }

    /// How many items of one category were dropped for one reason.
    public struct DiscardedEvents: Codable, Sendable, Hashable {
        /// Sentry's discard reasons: "sample_rate", "before_send", "queue_overflow",
        /// "cache_overflow", "ratelimit_backoff", "network_error", "send_error", ...
        public var reason: String
        /// Sentry's data categories: "error" (events), "session", ...
        public var category: String
        public var quantity: Int
        public init(reason: String, category: String, quantity: Int) {
            self.reason = reason
            self.category = category
            self.quantity = quantity
        }
    }

    public func jsonData() throws -> Data { try SentryEvent.encoder.encode(self) }
}

/// Event and session ids.
public enum SentryID {
    /// A new random id: 32 lowercase hex digits.
    public static func random() -> String {
        UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    }

    /// An id that depends only on `text`: converting the same crash report twice gives the same
    /// event id, so a server that deduplicates by event id keeps one. Not a cryptographic hash.
    public static func derived(from text: String) -> String {
        // Two FNV-1a 64-bit hashes with different offsets, then SplitMix64 finalisation.
        func fnv(_ seed: UInt64) -> UInt64 {
            var hash = seed
            for byte in text.utf8 {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01b3
            }
            hash ^= hash >> 30
            hash = hash &* 0xbf58_476d_1ce4_e5b9
            hash ^= hash >> 27
            hash = hash &* 0x94d0_49bb_1331_11eb
            return hash ^ (hash >> 31)
        }
        func hex(_ value: UInt64) -> String {
            let text = String(value, radix: 16)
            return String(repeating: "0", count: 16 - text.count) + text
        }
        return hex(fnv(0xcbf2_9ce4_8422_2325)) + hex(fnv(0x6c62_272e_07bb_0142))
    }

    /// `id` (32 hex digits) as a hyphenated UUID, as session ids are written.
    public static func hyphenated(_ id: String) -> String {
        let chars = Array(id)
        guard chars.count == 32 else { return id }
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(chars[$0]) }.joined(separator: "-")
    }
}

extension Envelope {
    /// The envelope for one event, optionally with the session update that belongs to it (a
    /// crash and its `crashed` session travel together, as Sentry asks).
    ///
    /// Header: `event_id`, `dsn` (when given), `sdk`. Never `sent_at`: a transport may add it at
    /// the moment of sending; an envelope stored on disk must not carry it.
    public static func event(_ event: SentryEvent, session: SessionUpdate? = nil, sdk: SentryEvent.SDKInfo, dsn: DSN?) throws -> Envelope {
        var items = [Item(type: "event", payload: try event.jsonData())]
        if let session { items.append(Item(type: "session", payload: try session.jsonData())) }
        return Envelope(header: header(eventID: event.eventID, sdk: sdk, dsn: dsn), items: items)
    }

    /// The envelope for session updates alone.
    public static func sessions(_ updates: [SessionUpdate], sdk: SentryEvent.SDKInfo, dsn: DSN?) throws -> Envelope {
        Envelope(header: header(eventID: nil, sdk: sdk, dsn: dsn),
                 items: try updates.map { Item(type: "session", payload: try $0.jsonData()) })
    }

    /// The envelope for a client report.
    public static func clientReport(_ report: ClientReport, sdk: SentryEvent.SDKInfo, dsn: DSN?) throws -> Envelope {
        Envelope(header: header(eventID: nil, sdk: sdk, dsn: dsn), items: [Item(type: "client_report", payload: try report.jsonData())])
    }

    static func header(eventID: String?, sdk: SentryEvent.SDKInfo, dsn: DSN?) -> [String: JSONValue] {
        var header: [String: JSONValue] = ["sdk": ["name": .string(sdk.name), "version": .string(sdk.version)]]
        if let eventID { header["event_id"] = .string(eventID) }
        if let dsn { header["dsn"] = .string(dsn.description) }
        return header
    }

    /// The event of the first "event" item, if any.
    public func event() throws -> SentryEvent? {
        guard let item = items.first(where: { $0.type == "event" }) else { return nil }
        return try SentryEvent.decode(item.payload)
    }
}
