import CrashShieldProtocol
import Foundation

/// A project: where a DSN's events go. `id` is the number in the DSN's path; `publicKey` is its
/// 32-hex client key.
public struct Project: Sendable, Hashable, Codable {
    public let id: Int64
    public let name: String
    public let publicKey: String
    public let createdAt: Date
    /// Base64 of the Ed25519 public key that signs this project's SDK configuration documents
    /// (the app embeds it to verify them).
    public let configSigningPublicKey: String

    /// The DSN a Sentry SDK is configured with, for a collector reachable at `baseURL`
    /// (for example `http://127.0.0.1:8000`).
    public func dsn(baseURL: String) -> String {
        guard let url = URLComponents(string: baseURL), let scheme = url.scheme, let host = url.host else { return "" }
        let port = url.port.map { ":\($0)" } ?? ""
        let path = url.path.hasSuffix("/") ? String(url.path.dropLast()) : url.path
        return "\(scheme)://\(publicKey)@\(host)\(port)\(path)/\(id)"
    }
}

/// An issue's state. `regressed` is set by the collector when a resolved issue recurs in a
/// release later than the one it was resolved in.
public enum IssueStatus: String, Sendable, Codable, CaseIterable {
    case unresolved, resolved, resolvedInNextRelease = "resolved_in_next_release", ignored, regressed
}

/// A group of events with the same grouping hash.
public struct Issue: Sendable, Hashable, Codable {
    public let id: Int64
    public let projectID: Int64
    public let fingerprintHash: String
    public let groupingAlgorithm: String
    public let title: String
    public let culprit: String
    public let level: String
    public let status: IssueStatus
    /// The release an issue was resolved in: events from this release or older ones do not
    /// reopen it (nil: resolved without a known release).
    public let resolvedInRelease: String?
    public let firstSeen: Date
    public let lastSeen: Date
    public let firstRelease: String?
    public let lastRelease: String?
    public let eventCount: Int64
    public let userCount: Int64
}

/// The facts ingest extracts from one event before storing it.
public struct EventRecord: Sendable {
    public let projectID: Int64
    /// 32 lowercase hex digits.
    public let eventID: String
    /// When the collector received the event (retention counts from it).
    public let received: Date
    /// When the event happened: its own `timestamp`, clamped to `received` at the latest and
    /// `received - maxTimestampAge` at the earliest (`clampedTimestamp`); `received` when it has
    /// none. First/last seen and every chart of events use it.
    public let timestamp: Date
    public let level: String
    public let platform: String?
    public let release: String?
    public let environment: String?
    /// Who was affected (user id, e-mail, user name or IP address), for the issue's user count.
    public let userKey: String?
    public let grouping: GroupingResult
    /// The guard that prevented a crash, when the event is a CrashShield incident (level
    /// `warning`, a handled exception mechanism, and the guard named by a `crashshield.guard` or
    /// `guard` tag, a `crashshield.guard` mechanism's exception type, or `mechanism.data.guard`).
    public let incidentGuard: String?
    /// Its tags named `launch…` or `repair…` (`event_launch_tags`, the launch-crash page).
    let launchTags: [LaunchTag]
    /// The event exactly as received (JSON).
    public let payload: Data

    /// The record of a parsed event (`json`) whose text is `payload`.
    /// - Throws: `event.not_object` or `event.event_id` (400).
    public static func extract(projectID: Int64, payload: Data, json: JSONValue, fallbackEventID: String?, received: Date)
        throws(CollectorError) -> EventRecord
    {
        guard case .object = json else { throw .badRequest("event.not_object", "the event is not a JSON object") }
        return try extract(projectID: projectID, payload: payload, facts: EventFacts(json), fallbackEventID: fallbackEventID, received: received)
    }

    /// The record of the event whose JSON text is `payload`, read without building the whole
    /// document (the same checks and result as parsing it with `StrictJSON.parse(_:rules:
    /// .lastKeyWins)` and extracting).
    /// - Throws: `event.json` (400, with `invalidJSONMessage`) when `payload` is not valid JSON;
    ///   `event.not_object` or `event.event_id` (400).
    static func extract(projectID: Int64, payload: Data, fallbackEventID: String?, received: Date, invalidJSONMessage: String)
        throws(CollectorError) -> EventRecord
    {
        let read: EventFacts?
        do { read = try EventFacts.read(payload) } catch { throw .badRequest("event.json", invalidJSONMessage) }
        guard let facts = read else { throw .badRequest("event.not_object", "the event is not a JSON object") }
        return try extract(projectID: projectID, payload: payload, facts: facts, fallbackEventID: fallbackEventID, received: received)
    }

    static func extract(projectID: Int64, payload: Data, facts json: EventFacts, fallbackEventID: String?, received: Date)
        throws(CollectorError) -> EventRecord
    {
        let rawID = json.eventID ?? fallbackEventID ?? UUID().uuidString
        guard let eventID = SentryAuth.normalizedKey(rawID) else {
            throw .badRequest("event.event_id", "event_id must be 32 hexadecimal digits (dashes allowed)")
        }
        let level = json.level?.lowercased() ?? "error"
        let user = json.user
        let userKey = [user.id, user.email, user.username, user.ipAddress]
            .lazy.compactMap { $0?.stringValue ?? $0?.intValue.map(String.init) }.first { !$0.isEmpty }
        let exceptions = json.exceptions
        let handled = exceptions.contains { $0.mechanism.handled == true }
        // CrashShield's SDK tags its incidents `crashshield.guard` and names the guard as the
        // exception type of a `crashshield.guard` mechanism; other senders may use a `guard` tag
        // or `mechanism.data.guard`.
        let guardName = json.crashShieldGuardTag
            ?? json.guardTag
            ?? exceptions.lazy.compactMap { exception in
                exception.mechanism.type == "crashshield.guard" ? exception.type : nil
            }.first
            ?? exceptions.lazy.compactMap { $0.mechanism.dataGuard }.first
        return EventRecord(
            projectID: projectID, eventID: eventID, received: received,
            timestamp: clampedTimestamp(timestamp(json.timestamp), received: received),
            level: level,
            platform: json.platform,
            release: nonEmpty(json.release),
            environment: nonEmpty(json.environment),
            userKey: userKey,
            grouping: Grouping.group(json),
            incidentGuard: level == "warning" && handled ? guardName : nil,
            launchTags: json.launchTags,
            payload: payload)
    }

    /// How far before its arrival an event's own timestamp may lie: 90 days. An older one is
    /// stored as `received - maxTimestampAge` (a batch sent long after it was captured keeps its
    /// order, and stays within any retention period of 90 days or more).
    public static let maxTimestampAge: TimeInterval = 90 * 86_400

    /// An event's time as stored: `timestamp` bounded by `received` (never in the future of its
    /// arrival, whatever the device's clock said) and `received - maxTimestampAge`; `received`
    /// when the event has no (readable) timestamp.
    public static func clampedTimestamp(_ timestamp: Date?, received: Date) -> Date {
        guard let timestamp, timestamp.timeIntervalSince1970.isFinite else { return received }
        return min(received, max(timestamp, received.addingTimeInterval(-maxTimestampAge)))
    }

    /// An RFC 3339 string or seconds since 1970 (Sentry accepts both).
    static func timestamp(_ value: JSONValue?) -> Date? {
        if let seconds = value?.doubleValue { return Date(timeIntervalSince1970: seconds) }
        guard let text = value?.stringValue else { return nil }
        return parseRFC3339(text)
    }

    /// `YYYY-MM-DDTHH:MM:SS[.fraction][Z|±HH:MM]` (a missing zone is UTC, as Sentry reads it;
    /// `t`, `z` and a space for `T` are accepted). Nil for anything else or an impossible date.
    static func parseRFC3339(_ text: String) -> Date? {
        // Read over the string's UTF-8 in place (no array of its bytes).
        var text = text
        return text.withUTF8 { parseRFC3339(bytes: $0) }
    }

    private static func parseRFC3339(bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        var index = 0
        func number(_ digits: Int) -> Int? {
            guard index + digits <= bytes.count else { return nil }
            var value = 0
            for _ in 0..<digits {
                let byte = bytes[index]
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
                index += 1
            }
            return value
        }
        /// Reads one byte that is one of `characters` (ASCII).
        func expect(oneOf characters: StaticString) -> Bool {
            guard index < bytes.count else { return false }
            let accepted = UnsafeBufferPointer(start: characters.utf8Start, count: characters.utf8CodeUnitCount)
            guard accepted.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect(oneOf: "-"), let month = number(2), expect(oneOf: "-"), let day = number(2),
              expect(oneOf: "Tt "), let hour = number(2), expect(oneOf: ":"), let minute = number(2), expect(oneOf: ":"), let second = number(2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var fraction = 0.0
        if index < bytes.count, bytes[index] == 46 {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, bytes[index] >= 48 && bytes[index] <= 57 {
                fraction += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        var offsetSeconds = 0
        if index < bytes.count {
            if bytes[index] == 90 || bytes[index] == 122 {
                index += 1
            } else if bytes[index] == 43 || bytes[index] == 45 {
                let sign = bytes[index] == 45 ? -1 : 1
                index += 1
                guard let hours = number(2) else { return nil }
                _ = expect(oneOf: ":")
                guard let minutes = number(2), hours < 24, minutes < 60 else { return nil }
                offsetSeconds = sign * (hours * 3600 + minutes * 60)
            }
        }
        guard index == bytes.count else { return nil }
        // Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = Double(days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds) + fraction
        return Date(timeIntervalSince1970: seconds)
    }

    static func nonEmpty(_ text: String?) -> String? { (text?.isEmpty ?? true) ? nil : text }
}

/// What storing an event did.
public enum EventInsertOutcome: Sendable, Hashable {
    /// Stored and grouped into `issueID`; `regressed` when it reopened a resolved issue.
    case stored(issueID: Int64, newIssue: Bool, regressed: Bool)
    /// An event with this id was already stored for the project; nothing changed.
    case duplicate
}

/// One session update (`session` item) as the SDK sent it.
public struct SessionUpdate: Sendable, Hashable {
    public let sessionID: String
    public let distinctID: String?
    public let sequence: Int64
    public let started: Date
    public let timestamp: Date
    public let status: String
    public let errors: Int64
    public let release: String
    public let environment: String?

    static let statuses: Set<String> = ["ok", "exited", "crashed", "abnormal", "errored"]
    static let terminal: Set<String> = ["exited", "crashed", "abnormal"]

    /// The members of a session payload that `parse` reads, each as the parsed tree holds it:
    /// a `String?` is the member's `stringValue`, a `JSONValue?` the member itself when it is a
    /// scalar, `.null` when it is an object or array, nil when missing. Of a repeated key the last
    /// value counts, as in the tree.
    struct Fields: Equatable, Sendable {
        var sid: String?
        var did: JSONValue?
        var seq: JSONValue?
        var started: JSONValue?
        var timestamp: JSONValue?
        var status: String?
        var errors: JSONValue?
        /// `attrs.release`.
        var release: String?
        /// `attrs.environment`.
        var environment: String?

        init() {}

        /// The fields of a parsed payload (all nil when it is not an object).
        init(_ json: JSONValue) {
            func scalar(_ value: JSONValue?) -> JSONValue? {
                switch value {
                case .array?, .object?: return .null
                default: return value
                }
            }
            sid = json["sid"]?.stringValue
            did = scalar(json["did"])
            seq = scalar(json["seq"])
            started = scalar(json["started"])
            timestamp = scalar(json["timestamp"])
            status = json["status"]?.stringValue
            errors = scalar(json["errors"])
            release = json["attrs"]?["release"]?.stringValue
            environment = json["attrs"]?["environment"]?.stringValue
        }

        /// Reads the fields straight from a payload's JSON text, accepting and refusing exactly
        /// what `StrictJSON.parse(_:rules: .lastKeyWins)` does (same failures) and giving what
        /// `init(_:)` gives for the parsed tree, without building the tree.
        static func read(_ payload: Data) throws(StrictJSON.Failure) -> Fields {
            try StrictJSON.withReader(payload, rules: .lastKeyWins) { reader throws(StrictJSON.Failure) -> Fields in
                reader.skipSpace()
                var fields = Fields()
                if try reader.peek(depth: 0) == UInt8(ascii: "{") {
                    fields = try reader.sessionFields(depth: 0)
                } else {
                    try reader.skipValue(depth: 0)
                }
                try reader.end()
                return fields
            }
        }
    }

    /// Reads a parsed `session` item payload.
    /// - Throws: `session.invalid` (400) when `sid`, `started` or `attrs.release` is missing.
    static func parse(_ json: JSONValue, received: Date) throws(CollectorError) -> SessionUpdate {
        try parse(Fields(json), received: received)
    }

    /// Reads a `session` item payload from its JSON text (the same result as parsing it with
    /// `StrictJSON` and calling `parse(_:received:)`).
    /// - Throws: `session.json` (400) when `payload` is not valid JSON; as `parse(_:received:)`.
    static func read(_ payload: Data, received: Date) throws(CollectorError) -> SessionUpdate {
        let fields: Fields
        do { fields = try Fields.read(payload) } catch { throw .badRequest("session.json", "a session item is not valid JSON") }
        return try parse(fields, received: received)
    }

    static func parse(_ json: Fields, received: Date) throws(CollectorError) -> SessionUpdate {
        guard let sid = json.sid, !sid.isEmpty,
              let startedText = json.started, let started = EventRecord.timestamp(startedText),
              let release = json.release, !release.isEmpty
        else { throw .badRequest("session.invalid", "a session needs sid, started and attrs.release") }
        let status = json.status ?? "ok"
        guard statuses.contains(status) else { throw .badRequest("session.status", "unknown session status") }
        return SessionUpdate(
            sessionID: sid, distinctID: json.did?.stringValue ?? json.did?.intValue.map(String.init),
            sequence: json.seq?.intValue ?? 0, started: started,
            timestamp: EventRecord.timestamp(json.timestamp) ?? received,
            status: status, errors: json.errors?.intValue ?? 0,
            release: release, environment: json.environment)
    }
}

extension StrictJSON.Reader {
    /// A session payload's object at `index` (checked as `value(depth:)` does), read into
    /// `SessionUpdate.Fields` as `Fields.init(_:)` would read its tree.
    mutating func sessionFields(depth: Int) throws(StrictJSON.Failure) -> SessionUpdate.Fields {
        var fields = SessionUpdate.Fields()
        try forEachMember(depth: depth) { reader, key, depth throws(StrictJSON.Failure) in
            switch true {
            case reader.key(key, is: "sid"): fields.sid = try reader.string(depth: depth)
            case reader.key(key, is: "did"): fields.did = try reader.scalar(depth: depth)
            case reader.key(key, is: "seq"): fields.seq = try reader.scalar(depth: depth)
            case reader.key(key, is: "started"): fields.started = try reader.scalar(depth: depth)
            case reader.key(key, is: "timestamp"): fields.timestamp = try reader.scalar(depth: depth)
            case reader.key(key, is: "status"): fields.status = try reader.string(depth: depth)
            case reader.key(key, is: "errors"): fields.errors = try reader.scalar(depth: depth)
            case reader.key(key, is: "attrs"):
                // The last `attrs` counts as a whole, as in the tree.
                (fields.release, fields.environment) = (nil, nil)
                try reader.forEachMemberOfObject(depth: depth) { reader, key, depth throws(StrictJSON.Failure) in
                    if reader.key(key, is: "release") {
                        fields.release = try reader.string(depth: depth)
                    } else if reader.key(key, is: "environment") {
                        fields.environment = try reader.string(depth: depth)
                    } else {
                        try reader.skipValue(depth: depth)
                    }
                }
            default: try reader.skipValue(depth: depth)
            }
        }
        return fields
    }
}

/// Counts from a `sessions` item (pre-aggregated by the SDK).
public struct SessionAggregate: Sendable, Hashable {
    public let release: String
    public let environment: String?
    public let started: Date
    public let exited: Int64
    public let errored: Int64
    public let abnormal: Int64
    public let crashed: Int64

    static func parse(_ json: JSONValue) throws(CollectorError) -> [SessionAggregate] {
        guard let release = json["attrs"]?["release"]?.stringValue, !release.isEmpty,
              let groups = json["aggregates"]?.arrayValue
        else { throw .badRequest("sessions.invalid", "session aggregates need attrs.release and aggregates") }
        return groups.compactMap { group in
            guard let started = EventRecord.timestamp(group["started"]) else { return nil }
            func count(_ key: String) -> Int64 { max(0, group[key]?.intValue ?? 0) }
            return SessionAggregate(
                release: release, environment: json["attrs"]?["environment"]?.stringValue, started: started,
                exited: count("exited"), errored: count("errored"), abnormal: count("abnormal"), crashed: count("crashed"))
        }
    }
}

/// Crash-free rates of one release.
public struct ReleaseHealth: Sendable, Hashable, Codable {
    public let release: String
    public let sessions: Int64
    public let crashedSessions: Int64
    public let abnormalSessions: Int64
    public let erroredSessions: Int64
    public let users: Int64
    public let crashedUsers: Int64

    /// Sessions that did not crash, 0...1 (1 with no sessions).
    public var crashFreeSessionRate: Double { sessions == 0 ? 1 : Double(sessions - crashedSessions) / Double(sessions) }
    /// Users none of whose sessions crashed, 0...1 (1 with no users).
    public var crashFreeUserRate: Double { users == 0 ? 1 : Double(users - crashedUsers) / Double(users) }
}

/// Prevented crashes of one guard in one release.
public struct IncidentCount: Sendable, Hashable, Codable {
    public let guardName: String
    public let release: String?
    public let count: Int64
    public let lastSeen: Date
}

/// A stored event without its payload.
public struct EventSummary: Sendable, Hashable, Codable {
    public let eventID: String
    public let issueID: Int64
    public let received: Date
    public let timestamp: Date
    public let level: String
    public let release: String?
    public let environment: String?
    public let platform: String?
}

/// One version of a project's SDK configuration document.
public struct SDKConfigVersion: Sendable, Hashable, Codable {
    public let projectID: Int64
    public let version: Int64
    /// The document's bytes exactly as served (compact JSON).
    public let document: Data
    /// Base64 Ed25519 signature of `document`, by the project's signing key.
    public let signature: String?
    public let createdAt: Date
    /// For a rollback, the version whose content this one re-issues.
    public let restoredFrom: Int64?
    /// Who published this version (for a rollback: who rolled back); nil for versions stored
    /// before the collector recorded it (schema version 5).
    public let publishedBy: SDKConfigPublisher?
    /// Why it was published, when something other than an edit published it (a protection:
    /// "protect issue 12: container reportOnly for app@1.0"); nil for an edit or a rollback.
    public let reason: String?

    public init(projectID: Int64, version: Int64, document: Data, signature: String?, createdAt: Date,
                restoredFrom: Int64?, publishedBy: SDKConfigPublisher?, reason: String? = nil) {
        self.reason = reason
        self.projectID = projectID
        self.version = version
        self.document = document
        self.signature = signature
        self.createdAt = createdAt
        self.restoredFrom = restoredFrom
        self.publishedBy = publishedBy
    }
}

/// Who published a version of a project's SDK configuration: a dashboard account, or an API
/// token and the account that owns it. Names are stored as text, so the history still names an
/// account or token after it is removed.
public struct SDKConfigPublisher: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The login name of the dashboard account that published, or of the account owning the API
    /// token; nil for a token no account owns (the `initial` token made on first start).
    public let account: String?
    /// The API token's name when published through the API; nil when published from the dashboard.
    public let apiToken: String?
    /// The collector's own automation that published ("auto-protect"); nil for a person.
    public let automation: String?

    public init(account: String?, apiToken: String?, automation: String? = nil) {
        self.account = account
        self.apiToken = apiToken
        self.automation = automation
    }

    /// Published by the collector's auto-protect (`AutoProtect`).
    public static let autoProtect = SDKConfigPublisher(account: nil, apiToken: nil, automation: "auto-protect")

    /// Published from the dashboard by the account named `name`.
    public static func account(_ name: String) -> SDKConfigPublisher { .init(account: name, apiToken: nil) }

    /// Published through the API with the token named `name`, owned by `owner` (nil: no account).
    public static func apiToken(_ name: String, owner: String?) -> SDKConfigPublisher { .init(account: owner, apiToken: name) }

    /// For people: `alice`, `alice (API token "deploy")`, `API token "initial"`.
    public var description: String {
        if let automation { return "\(automation) (the collector)" }
        switch (account, apiToken) {
        case (let account?, let token?): return "\(account) (API token \"\(token)\")"
        case (nil, let token?): return "API token \"\(token)\""
        case (let account?, nil): return account
        case (nil, nil): return "unknown"
        }
    }
}

/// Client reports: what an SDK dropped and why.
public struct DiscardedCount: Sendable, Hashable {
    public let reason: String
    public let category: String
    public let quantity: Int64
}
