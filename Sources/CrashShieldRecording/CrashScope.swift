import CrashShieldBase
import Foundation
package import _CrashShieldCapture

/// What the app tells about the running session, carried into every crash report (its `scope`)
/// and, with the CrashShield module, into every guard incident: the user, tags, named contexts
/// and the app's own breadcrumbs.
///
/// All functions are thread-safe and cheap enough to call from anywhere (each change re-publishes
/// the scope for the crash handler: one copy of at most 32 KiB). The scope lives in memory only;
/// it starts empty in every process and is not cleared by stopping or starting capture.
///
/// Bounds (nothing here ever fails or traps on bad input):
/// - Every key and tag name is cut to `maxKeyBytes` (64) bytes of UTF-8, every value (user
///   fields, tag and context values, breadcrumb data values, categories) to `maxValueBytes`
///   (256) bytes, a breadcrumb message to `maxMessageBytes` (1024) bytes; text is cut before the
///   first Unicode scalar that does not fit whole. An empty key or context name is ignored.
/// - At most `maxTags` (50) tags and `maxContexts` (10) contexts: setting a new one beyond the
///   limit is ignored (replacing an existing one always works). A context keeps its first
///   `maxContextEntries` (20) entries in key order, a breadcrumb's `data` its first
///   `maxBreadcrumbDataEntries` (10).
/// - The last `maxBreadcrumbs` (100) breadcrumbs are kept; adding one more drops the oldest.
/// - A crash report carries at most `maxReportBytes` (32 767) bytes of scope JSON. A larger
///   scope is shrunk to fit, in this order: oldest breadcrumbs first, then contexts, then tags
///   (each from the last in key order); the report then counts what it left out
///   (`droppedBreadcrumbs`, `droppedContexts`, `droppedTags`). The user always fits.
public enum CrashScope {
    /// Breadcrumbs kept (the oldest is dropped when one more is added).
    public static let maxBreadcrumbs = 100
    package static let maxTags = 50
    package static let maxContexts = 10
    package static let maxContextEntries = 20
    package static let maxBreadcrumbDataEntries = 10
    package static let maxKeyBytes = 64
    package static let maxValueBytes = 256
    package static let maxMessageBytes = 1024
    /// Bytes of scope JSON a crash report carries at most.
    package static let maxReportBytes = Int(CSC_SCOPE_JSON_MAX) - 1
    /// Breadcrumbs an incident carries (the most recent ones).
    public static let incidentBreadcrumbs = 10

    /// The person using the app. No field is required; no hardware identifier is ever added.
    public struct User: Codable, Sendable, Hashable {
        /// The app's own id for the user.
        public var id: String?
        /// The user's name.
        public var username: String?
        /// The user's email address.
        public var email: String?
        /// The user's IP address.
        public var ipAddress: String?

        /// A user with the fields given; nil leaves a field unset.
        public init(id: String? = nil, username: String? = nil, email: String? = nil, ipAddress: String? = nil) {
            self.id = id
            self.username = username
            self.email = email
            self.ipAddress = ipAddress
        }

        /// True when no field is set.
        package var isEmpty: Bool { id == nil && username == nil && email == nil && ipAddress == nil }
    }

    /// Something the app did or saw, recorded for the report of a later crash.
    public struct Breadcrumb: Sendable, Hashable {
        /// Wall-clock time the breadcrumb was added (nanosecond precision in reports).
        public var timestamp: Date
        /// What happened.
        public var message: String
        /// A free-form grouping such as "ui.click" or "network"; nil when not given.
        public var category: String?
        /// How severe it was. Default: `.info`.
        public var level: Level
        /// Small key/value details.
        public var data: [String: String]

        package init(timestamp: Date = Date(), message: String, category: String? = nil,
                    level: Level = .info, data: [String: String] = [:]) {
            self.timestamp = timestamp
            self.message = message
            self.category = category
            self.level = level
            self.data = data
        }

        /// Severity of a breadcrumb. A string in reports; a value written by a newer version
        /// decodes unchanged as its `rawValue`.
        public struct Level: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
            public let rawValue: String
            public init(rawValue: String) { self.rawValue = rawValue }
            public var description: String { rawValue }

            /// Detail for debugging.
            public static let debug = Level(rawValue: "debug")
            /// Something that happened (the default).
            public static let info = Level(rawValue: "info")
            /// Something unexpected that did not fail.
            public static let warning = Level(rawValue: "warning")
            /// An error the app handled.
            public static let error = Level(rawValue: "error")
            /// A failure the app could not recover from.
            public static let fatal = Level(rawValue: "fatal")
        }
    }

    /// The scope at one moment: what a crash report or an incident carries.
    public struct Snapshot: Sendable, Hashable {
        /// The user; nil when none is set.
        public var user: User?
        /// Tags by key.
        public var tags: [String: String]
        /// Named groups of key/value pairs ("app", "device", "order", ...).
        public var contexts: [String: [String: String]]
        /// Oldest first.
        public var breadcrumbs: [Breadcrumb]
        /// Breadcrumbs of the scope left out of a crash report so that it fits `maxReportBytes`
        /// (0 in an incident, which carries the `incidentBreadcrumbs` most recent ones).
        package var droppedBreadcrumbs: Int
        /// Contexts left out of a crash report so that it fits (after every breadcrumb).
        package var droppedContexts: Int
        /// Tags left out of a crash report so that it fits (after every context).
        package var droppedTags: Int

        package init(user: User? = nil, tags: [String: String] = [:], contexts: [String: [String: String]] = [:],
                    breadcrumbs: [Breadcrumb] = [], droppedBreadcrumbs: Int = 0, droppedContexts: Int = 0,
                    droppedTags: Int = 0) {
            self.user = user
            self.tags = tags
            self.contexts = contexts
            self.breadcrumbs = breadcrumbs
            self.droppedBreadcrumbs = droppedBreadcrumbs
            self.droppedContexts = droppedContexts
            self.droppedTags = droppedTags
        }

        /// True when there is no user, tag, context or breadcrumb.
        package var isEmpty: Bool { user == nil && tags.isEmpty && contexts.isEmpty && breadcrumbs.isEmpty }
    }

    // MARK: - Changing the scope

    /// Sets the user (nil, or a user with no field set, clears it).
    public static func setUser(_ user: User?) {
        state.change { $0.setUser(user) }
    }

    /// Sets a tag (replacing its value). Ignored when `key` is empty, or when it is new and
    /// `maxTags` tags are set.
    public static func setTag(_ key: String, _ value: String) {
        state.change { $0.setTag(key, value) }
    }

    /// Removes the tag `key`.
    public static func removeTag(_ key: String) {
        state.change { $0.removeTag(key) }
    }

    /// Sets the named context (replacing it whole); nil removes it. Ignored when `name` is empty,
    /// or when it is new and `maxContexts` contexts are set.
    public static func setContext(_ name: String, _ values: [String: String]?) {
        state.change { $0.setContext(name, values) }
    }

    /// Adds a breadcrumb with the current time; when `maxBreadcrumbs` are kept, the oldest goes.
    public static func addBreadcrumb(message: String, category: String? = nil, level: Breadcrumb.Level = .info,
                                     data: [String: String] = [:]) {
        addBreadcrumb(Breadcrumb(message: message, category: category, level: level, data: data))
    }

    /// Adds a breadcrumb as given (bounded like every other); when `maxBreadcrumbs` are kept,
    /// the oldest goes.
    package static func addBreadcrumb(_ breadcrumb: Breadcrumb) {
        state.change { $0.addBreadcrumb(breadcrumb) }
    }

    /// Removes every breadcrumb.
    public static func clearBreadcrumbs() {
        state.change { $0.clearBreadcrumbs() }
    }

    /// Clears user, tags, contexts and breadcrumbs: reports written afterwards have no scope.
    public static func clear() {
        state.change { $0 = ScopeState() }
    }

    // MARK: - Reading the scope

    /// The whole scope now (every breadcrumb kept).
    package static var current: Snapshot { state.read { $0.snapshot(lastBreadcrumbs: maxBreadcrumbs) } }

    /// The scope now with only the `lastBreadcrumbs` most recent breadcrumbs (what incidents carry).
    package static func snapshot(lastBreadcrumbs: Int) -> Snapshot {
        state.read { $0.snapshot(lastBreadcrumbs: max(0, lastBreadcrumbs)) }
    }

    /// The JSON object published for crash reports, as the handler copies it ("" when the scope
    /// is empty). For tests.
    package static var publishedJSONForTesting: String { state.read { String(decoding: $0.composeReportJSON(), as: UTF8.self) } }

    private static let state = LockedScope()
}

/// The scope behind a lock. Every change republishes the report JSON while the lock is held, so
/// the crash handler always holds the text of the latest change (never an older one published
/// late by a slower thread). The text is composed from the fragments `ScopeState` keeps
/// serialised into one buffer kept for the next change (no allocation once it has grown), then
/// copied once by the publication.
private final class LockedScope: Sendable {
    /// The scope and the last text composed from it (NUL-terminated).
    private let state = Locked((scope: ScopeState(), text: [UInt8]()))

    func change(_ body: (inout ScopeState) -> Void) {
        state.withLock { state in
            body(&state.scope)
            state.text.removeAll(keepingCapacity: true)
            state.scope.composeReportJSON(into: &state.text)
            state.text.append(0)
            _ = state.text.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { csc_set_scope_json($0.baseAddress) }
            }
        }
    }

    func read<T>(_ body: (ScopeState) -> T) -> T {
        state.withLock { body($0.scope) }
    }
}

/// The scope's values, already bounded, and their JSON fragments (serialised once per change, so
/// adding a breadcrumb costs one breadcrumb's serialisation plus one copy of the whole text).
struct ScopeState {
    private(set) var user: CrashScope.User?
    private(set) var tags: [String: String] = [:]
    private(set) var contexts: [String: [String: String]] = [:]
    /// Oldest first.
    private(set) var breadcrumbs: [CrashScope.Breadcrumb] = []
    /// The JSON object of each of `breadcrumbs`, at the same index. Kept apart so that composing
    /// the report text reads each fragment without copying its breadcrumb.
    private var breadcrumbJSON: [[UInt8]] = []

    private var userJSON: [UInt8]?
    /// Tags and contexts in key order, each as `"key":value`.
    private var tagMembers: [[UInt8]] = []
    private var contextMembers: [[UInt8]] = []

    mutating func setUser(_ new: CrashScope.User?) {
        guard let new, !new.isEmpty else {
            user = nil
            userJSON = nil
            return
        }
        let bounded = CrashScope.User(id: new.id.map(ScopeText.value), username: new.username.map(ScopeText.value),
                                      email: new.email.map(ScopeText.value), ipAddress: new.ipAddress.map(ScopeText.value))
        user = bounded
        var members: [(String, String)] = []
        if let id = bounded.id { members.append(("id", id)) }
        if let username = bounded.username { members.append(("username", username)) }
        if let email = bounded.email { members.append(("email", email)) }
        if let ipAddress = bounded.ipAddress { members.append(("ip_address", ipAddress)) }
        userJSON = ScopeJSON.object(members)
    }

    mutating func setTag(_ key: String, _ value: String) {
        let key = ScopeText.key(key)
        guard !key.isEmpty, tags[key] != nil || tags.count < CrashScope.maxTags else { return }
        tags[key] = ScopeText.value(value)
        tagMembers = ScopeJSON.members(tags) { ScopeJSON.string($0) }
    }

    mutating func removeTag(_ key: String) {
        guard tags.removeValue(forKey: ScopeText.key(key)) != nil else { return }
        tagMembers = ScopeJSON.members(tags) { ScopeJSON.string($0) }
    }

    mutating func setContext(_ name: String, _ values: [String: String]?) {
        let name = ScopeText.key(name)
        guard !name.isEmpty else { return }
        if let values {
            guard contexts[name] != nil || contexts.count < CrashScope.maxContexts else { return }
            contexts[name] = ScopeText.dictionary(values, limit: CrashScope.maxContextEntries)
        } else {
            guard contexts.removeValue(forKey: name) != nil else { return }
        }
        contextMembers = ScopeJSON.members(contexts) { ScopeJSON.object($0.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }) }
    }

    mutating func addBreadcrumb(_ crumb: CrashScope.Breadcrumb) {
        let bounded = CrashScope.Breadcrumb(
            timestamp: crumb.timestamp, message: ScopeText.bounded(crumb.message, bytes: CrashScope.maxMessageBytes),
            category: crumb.category.map(ScopeText.value), level: CrashScope.Breadcrumb.Level(rawValue: ScopeText.key(crumb.level.rawValue)),
            data: ScopeText.dictionary(crumb.data, limit: CrashScope.maxBreadcrumbDataEntries))
        if breadcrumbs.count >= CrashScope.maxBreadcrumbs {
            let excess = breadcrumbs.count - CrashScope.maxBreadcrumbs + 1
            breadcrumbs.removeFirst(excess)
            breadcrumbJSON.removeFirst(excess)
        }
        breadcrumbJSON.append(ScopeJSON.breadcrumb(bounded))
        breadcrumbs.append(bounded)
    }

    mutating func clearBreadcrumbs() {
        breadcrumbs.removeAll()
        breadcrumbJSON.removeAll()
    }

    func snapshot(lastBreadcrumbs: Int) -> CrashScope.Snapshot {
        CrashScope.Snapshot(user: user, tags: tags, contexts: contexts,
                            breadcrumbs: Array(breadcrumbs.suffix(lastBreadcrumbs)))
    }

    /// The report's "scope" object, at most `CrashScope.maxReportBytes` bytes: oldest breadcrumbs,
    /// then contexts, then tags (the last in key order first) are left out until it fits, and the
    /// object counts them. Empty when the scope is.
    func composeReportJSON() -> [UInt8] {
        var out: [UInt8] = []
        composeReportJSON(into: &out)
        return out
    }

    /// `composeReportJSON()` appended to `out` (nothing when the scope is empty).
    func composeReportJSON(into out: inout [UInt8]) {
        if userJSON == nil && tagMembers.isEmpty && contextMembers.isEmpty && breadcrumbs.isEmpty { return }
        let limit = CrashScope.maxReportBytes
        var tagCount = tagMembers.count
        var contextCount = contextMembers.count
        // The braces, the section keys (`,"tags":{}` ...: 49 bytes) and room for the three
        // counters (`,"dropped_breadcrumbs":100` ...: at most 66 bytes).
        let framing = 2 + 49 + 3 * 32
        func fixedSize() -> Int {
            var size = framing + (userJSON.map { $0.count + 8 } ?? 0)
            size += tagMembers.prefix(tagCount).reduce(0) { $0 + $1.count + 1 }
            size += contextMembers.prefix(contextCount).reduce(0) { $0 + $1.count + 1 }
            return size
        }
        // Contexts and tags go only once every breadcrumb is gone: then no breadcrumb is kept,
        // even where one would fit in what the dropped ones leave.
        let fixedFits = fixedSize() <= limit
        while fixedSize() > limit && contextCount > 0 { contextCount -= 1 }
        while fixedSize() > limit && tagCount > 0 { tagCount -= 1 }
        var room = limit - fixedSize()
        var keptBreadcrumbs = 0
        for json in breadcrumbJSON.reversed() where fixedFits {
            let size = json.count + 1
            guard size <= room else { break }
            room -= size
            keptBreadcrumbs += 1
        }

        out.reserveCapacity(out.count + limit - room + 1)
        var first = true
        func key(_ name: StaticString) {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            out.append(contentsOf: "\":".utf8)
        }
        func join(_ parts: ArraySlice<[UInt8]>, open: UInt8, close: UInt8) {
            out.append(open)
            for index in parts.indices {
                if index > parts.startIndex { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: parts[index])
            }
            out.append(close)
        }
        func count(_ name: StaticString, _ dropped: Int) {
            guard dropped > 0 else { return }
            key(name)
            out.append(contentsOf: String(dropped).utf8)
        }
        out.append(UInt8(ascii: "{"))
        if let userJSON {
            key("user")
            out.append(contentsOf: userJSON)
        }
        if tagCount > 0 {
            key("tags")
            join(tagMembers.prefix(tagCount), open: UInt8(ascii: "{"), close: UInt8(ascii: "}"))
        }
        if contextCount > 0 {
            key("contexts")
            join(contextMembers.prefix(contextCount), open: UInt8(ascii: "{"), close: UInt8(ascii: "}"))
        }
        if keptBreadcrumbs > 0 {
            key("breadcrumbs")
            out.append(UInt8(ascii: "["))
            for index in breadcrumbJSON.count - keptBreadcrumbs..<breadcrumbJSON.count {
                if index > breadcrumbJSON.count - keptBreadcrumbs { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: breadcrumbJSON[index])
            }
            out.append(UInt8(ascii: "]"))
        }
        count("dropped_breadcrumbs", breadcrumbs.count - keptBreadcrumbs)
        count("dropped_contexts", contextMembers.count - contextCount)
        count("dropped_tags", tagMembers.count - tagCount)
        out.append(UInt8(ascii: "}"))
    }
}

/// The bounds of scope text.
enum ScopeText {
    static func key(_ text: String) -> String { bounded(text, bytes: CrashScope.maxKeyBytes) }
    static func value(_ text: String) -> String { bounded(text, bytes: CrashScope.maxValueBytes) }

    /// `text` cut before the first Unicode scalar that does not fit whole in `bytes` bytes of UTF-8.
    static func bounded(_ text: String, bytes: Int) -> String {
        guard text.utf8.count > bytes else { return text }
        var used = 0
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let size = UTF8.width(scalar)
            guard used + size <= bytes else { break }
            used += size
            scalars.append(scalar)
        }
        return String(scalars)
    }

    /// Keys and values bounded, empty keys left out, the first `limit` entries in key order kept
    /// (two keys equal after the cut: the one first in key order wins).
    static func dictionary(_ values: [String: String], limit: Int) -> [String: String] {
        var result: [String: String] = [:]
        for (key, value) in values.sorted(by: { $0.key < $1.key }) {
            guard result.count < limit else { break }
            let key = self.key(key)
            guard !key.isEmpty, result[key] == nil else { continue }
            result[key] = self.value(value)
        }
        return result
    }
}

/// JSON text of the scope, byte for byte what the crash handler copies: keys in order, strings
/// escaped as JSON requires (quote, backslash, control characters), other text as UTF-8.
enum ScopeJSON {
    static func string(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        append(string: text, to: &out)
        return out
    }

    /// Appends `text` as a JSON string: runs that need no escape are copied whole.
    static func append(string text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            out.reserveCapacity(out.count + bytes.count + 1)
            var runStart = 0
            for index in 0..<bytes.count {
                let byte = bytes[index]
                guard byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                if byte < 0x20 {
                    // \u00XY: X is 0 or 1 below 0x20.
                    let low = byte & 15
                    out.append(contentsOf: "\\u00".utf8)
                    out.append(UInt8(ascii: "0") + (byte >> 4))
                    out.append(low < 10 ? UInt8(ascii: "0") + low : UInt8(ascii: "a") + low - 10)
                } else {
                    out.append(UInt8(ascii: "\\"))
                    out.append(byte)
                }
                runStart = index + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
        out.append(UInt8(ascii: "\""))
    }

    static func object(_ members: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        append(object: members, to: &out)
        return out
    }

    static func append(object members: [(String, String)], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        for (index, (key, value)) in members.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            append(string: key, to: &out)
            out.append(UInt8(ascii: ":"))
            append(string: value, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// `"key":value` for each entry, in key order.
    static func members<Value>(_ dictionary: [String: Value], value: (Value) -> [UInt8]) -> [[UInt8]] {
        dictionary.sorted { $0.key < $1.key }.map { string($0.key) + [UInt8(ascii: ":")] + value($0.value) }
    }

    static func breadcrumb(_ crumb: CrashScope.Breadcrumb) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(96 + crumb.message.utf8.count)
        out.append(contentsOf: "{\"timestamp_ns\":".utf8)
        out.append(contentsOf: String(crumb.timestampNanoseconds).utf8)
        out.append(contentsOf: ",\"level\":".utf8)
        append(string: crumb.level.rawValue, to: &out)
        if let category = crumb.category {
            out.append(contentsOf: ",\"category\":".utf8)
            append(string: category, to: &out)
        }
        out.append(contentsOf: ",\"message\":".utf8)
        append(string: crumb.message, to: &out)
        if !crumb.data.isEmpty {
            out.append(contentsOf: ",\"data\":".utf8)
            append(object: crumb.data.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }
}

// MARK: - Reading a scope back (crash reports)

extension CrashScope.User {
    enum CodingKeys: String, CodingKey { case id, username, email, ipAddress }

    /// Tolerant: a field of the wrong type reads as nil.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try? container.decodeIfPresent(String.self, forKey: .id)
        username = try? container.decodeIfPresent(String.self, forKey: .username)
        email = try? container.decodeIfPresent(String.self, forKey: .email)
        ipAddress = try? container.decodeIfPresent(String.self, forKey: .ipAddress)
    }
}

extension CrashScope.Breadcrumb {
    /// `timestamp` as the report writes it: nanoseconds since 1970, 0 for an earlier time.
    var timestampNanoseconds: UInt64 {
        let seconds = timestamp.timeIntervalSince1970
        return seconds > 0 ? UInt64(min(seconds * 1e9, Double(UInt64.max / 2))) : 0
    }
}

extension CrashScope.Breadcrumb: Codable {
    enum CodingKeys: String, CodingKey { case timestampNs, level, category, message, data }

    /// Tolerant: a missing or mistyped field reads as its default (time 0, message "", level info).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let nanoseconds = (try? container.decodeIfPresent(UInt64.self, forKey: .timestampNs)) ?? 0
        timestamp = Date(timeIntervalSince1970: Double(nanoseconds) / 1e9)
        level = (try? container.decodeIfPresent(Level.self, forKey: .level)) ?? .info
        category = try? container.decodeIfPresent(String.self, forKey: .category)
        message = (try? container.decodeIfPresent(String.self, forKey: .message)) ?? ""
        data = (try? container.decodeIfPresent([String: String].self, forKey: .data)) ?? [:]
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(timestampNanoseconds, forKey: .timestampNs)
        try container.encode(level, forKey: .level)
        try container.encodeIfPresent(category, forKey: .category)
        try container.encode(message, forKey: .message)
        if !data.isEmpty { try container.encode(data, forKey: .data) }
    }
}

extension CrashScope.Snapshot: Codable {
    enum CodingKeys: String, CodingKey {
        case user, tags, contexts, breadcrumbs, droppedBreadcrumbs, droppedContexts, droppedTags
    }

    /// Tolerant: a section that does not decode (a value of the wrong type) reads as empty, a
    /// breadcrumb that does not decode is left out; the report around it still loads.
    public init(from decoder: any Decoder) throws {
        guard let container = try? decoder.container(keyedBy: CodingKeys.self) else {
            self.init()
            return
        }
        let user = try? container.decodeIfPresent(CrashScope.User.self, forKey: .user)
        let crumbs = (try? container.decodeIfPresent([Tolerant<CrashScope.Breadcrumb>].self, forKey: .breadcrumbs)) ?? []
        self.init(
            user: user.flatMap { $0.isEmpty ? nil : $0 },
            tags: (try? container.decodeIfPresent([String: String].self, forKey: .tags)) ?? [:],
            contexts: (try? container.decodeIfPresent([String: [String: String]].self, forKey: .contexts)) ?? [:],
            breadcrumbs: crumbs.compactMap(\.value),
            droppedBreadcrumbs: (try? container.decodeIfPresent(Int.self, forKey: .droppedBreadcrumbs)) ?? 0,
            droppedContexts: (try? container.decodeIfPresent(Int.self, forKey: .droppedContexts)) ?? 0,
            droppedTags: (try? container.decodeIfPresent(Int.self, forKey: .droppedTags)) ?? 0)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(user, forKey: .user)
        if !tags.isEmpty { try container.encode(tags, forKey: .tags) }
        if !contexts.isEmpty { try container.encode(contexts, forKey: .contexts) }
        if !breadcrumbs.isEmpty { try container.encode(breadcrumbs, forKey: .breadcrumbs) }
        if droppedBreadcrumbs > 0 { try container.encode(droppedBreadcrumbs, forKey: .droppedBreadcrumbs) }
        if droppedContexts > 0 { try container.encode(droppedContexts, forKey: .droppedContexts) }
        if droppedTags > 0 { try container.encode(droppedTags, forKey: .droppedTags) }
    }
}

/// An element that decodes to nil instead of failing the array around it.
private struct Tolerant<Value: Decodable>: Decodable {
    let value: Value?
    init(from decoder: any Decoder) throws { value = try? Value(from: decoder) }
}
