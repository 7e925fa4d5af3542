import CrashShieldProtocol
import Foundation

/// The parts of an event that ingest reads: its identity and attributes, the user, the guard
/// tags, and what grouping and naming use (fingerprint, exceptions with their mechanisms and
/// frames, debug images, messages, culprit). Everything else in the event is kept only in the
/// stored payload.
///
/// Two ways to get them, with the same result for every event: `init(_:)` from a parsed tree,
/// and `read(_:)` straight from the event's bytes, which checks the whole document exactly as
/// `StrictJSON.parse(_:rules: .lastKeyWins)` does but builds nothing for the members it does not
/// need (the frames of a stack become small structs instead of dictionaries, and contexts,
/// breadcrumbs, threads or registers are only checked). Both remain because some events exist
/// only as trees (a symbolicated event renamed by `IssueRenamer`, `extract(json:)`), and the tree
/// reading is the reference `EventFactsTests` checks the byte reading against.
///
/// Scalar fields hold what the tree holds at that path: a `String?` field is the member's
/// `stringValue`, a `Bool?` its `boolValue`, a `JSONValue?` the member itself when it is a
/// string, number, boolean or null, `.null` when it is an object or array (whose string,
/// number and boolean are nil too), nil when the member is missing or its parent is not an
/// object. Of a repeated key the last value counts, as in the tree.
struct EventFacts: Equatable, Sendable {
    struct User: Equatable, Sendable {
        var id: JSONValue?
        var email: JSONValue?
        var username: JSONValue?
        var ipAddress: JSONValue?
    }

    struct Mechanism: Equatable, Sendable {
        var type: String?
        var handled: Bool?
        var synthetic: Bool?
        /// `mechanism.data.guard`.
        var dataGuard: String?
    }

    struct Frame: Equatable, Sendable {
        var function: String?
        var rawFunction: String?
        var instructionAddress: JSONValue?
        var imageAddress: JSONValue?
        var package: String?
        var module: String?
        var inApp: Bool?
    }

    /// One entry of the exception list; an entry that is not an object has every field empty.
    struct Exception: Equatable, Sendable {
        var type: String?
        var value: String?
        var mechanism = Mechanism()
        /// `stacktrace.frames`, caller first (empty when missing or not an array).
        var frames: [Frame] = []
    }

    /// One entry of `debug_meta.images`; an entry that is not an object has every field empty.
    struct Image: Equatable, Sendable {
        var imageAddress: JSONValue?
        var imageSize: JSONValue?
        var codeFile: String?
    }

    var eventID: String?
    var level: String?
    var platform: String?
    var release: String?
    var environment: String?
    var timestamp: JSONValue?
    var user = User()
    /// `tags["crashshield.guard"]`.
    var crashShieldGuardTag: String?
    /// `tags["guard"]`.
    var guardTag: String?
    /// The tags named `launch…` or `repair…` (`LaunchTag.of`), stored for the launch-crash page.
    var launchTags: [LaunchTag] = []
    /// `fingerprint` when it is an array (elements as scalars).
    var fingerprint: [JSONValue]?
    /// `exception.values`, or `exception` itself in the older list form; empty otherwise.
    var exceptions: [Exception] = []
    /// `debug_meta.images` (empty when missing or not an array).
    var images: [Image] = []
    var logentryFormatted: String?
    var logentryMessage: String?
    var messageFormatted: String?
    var messageMessage: String?
    /// `message` when it is a string.
    var messageText: String?
    var culprit: String?
    var transaction: String?

    init() {}

    /// The facts of a parsed event (nothing when it is not an object).
    init(_ event: JSONValue) {
        func scalar(_ value: JSONValue?) -> JSONValue? {
            switch value {
            case .array?, .object?: return .null
            default: return value
            }
        }
        eventID = event["event_id"]?.stringValue
        level = event["level"]?.stringValue
        platform = event["platform"]?.stringValue
        release = event["release"]?.stringValue
        environment = event["environment"]?.stringValue
        timestamp = scalar(event["timestamp"])
        let user = event["user"]
        self.user = User(id: scalar(user?["id"]), email: scalar(user?["email"]), username: scalar(user?["username"]),
                         ipAddress: scalar(user?["ip_address"]))
        crashShieldGuardTag = event["tags"]?["crashshield.guard"]?.stringValue
        guardTag = event["tags"]?["guard"]?.stringValue
        launchTags = event.objectValue.map { LaunchTag.of(tags: $0["tags"]) } ?? []
        fingerprint = event["fingerprint"]?.arrayValue.map { $0.map { scalar($0) ?? .null } }
        let exceptionList = event["exception"]?["values"]?.arrayValue ?? event["exception"]?.arrayValue ?? []
        exceptions = exceptionList.map { exception in
            let mechanism = exception["mechanism"]
            return Exception(
                type: exception["type"]?.stringValue, value: exception["value"]?.stringValue,
                mechanism: Mechanism(type: mechanism?["type"]?.stringValue, handled: mechanism?["handled"]?.boolValue,
                                     synthetic: mechanism?["synthetic"]?.boolValue, dataGuard: mechanism?["data"]?["guard"]?.stringValue),
                frames: (exception["stacktrace"]?["frames"]?.arrayValue ?? []).map { frame in
                    Frame(function: frame["function"]?.stringValue, rawFunction: frame["raw_function"]?.stringValue,
                          instructionAddress: scalar(frame["instruction_addr"]), imageAddress: scalar(frame["image_addr"]),
                          package: frame["package"]?.stringValue, module: frame["module"]?.stringValue, inApp: frame["in_app"]?.boolValue)
                })
        }
        images = (event["debug_meta"]?["images"]?.arrayValue ?? []).map { image in
            Image(imageAddress: scalar(image["image_addr"]), imageSize: scalar(image["image_size"]), codeFile: image["code_file"]?.stringValue)
        }
        logentryFormatted = event["logentry"]?["formatted"]?.stringValue
        logentryMessage = event["logentry"]?["message"]?.stringValue
        messageFormatted = event["message"]?["formatted"]?.stringValue
        messageMessage = event["message"]?["message"]?.stringValue
        messageText = event["message"]?.stringValue
        culprit = event["culprit"]?.stringValue
        transaction = event["transaction"]?.stringValue
    }

    /// Reads an event's facts from its JSON text. Accepts and refuses exactly what
    /// `StrictJSON.parse(_:rules: .lastKeyWins)` does (same failures); nil when the text is
    /// valid JSON but not an object.
    static func read(_ data: Data) throws(StrictJSON.Failure) -> EventFacts? {
        try StrictJSON.withReader(data, rules: .lastKeyWins) { reader throws(StrictJSON.Failure) -> EventFacts? in
            reader.skipSpace()
            var facts: EventFacts?
            if try reader.peek(depth: 0) == UInt8(ascii: "{") {
                facts = try reader.event(depth: 0)
            } else {
                try reader.skipValue(depth: 0)
            }
            try reader.end()
            return facts
        }
    }
}

// Keys are compared as UTF-8 bytes after unescaping, where the tree compares `String`s (which
// are equal when canonically equivalent): the same for the keys below, which are lowercase ASCII
// letters, `_` and `.` (no other character sequence normalises to them).
//
// Each reader below reads one value at `depth` (checking it as `value(depth:)` does) and returns
// what the tree-based `EventFacts.init(_:)` would take from the same value; a value of another
// kind than expected is read past and gives the empty result.
extension StrictJSON.Reader {
    /// The key as a string when it names a launch tag (`LaunchTag.isLaunchKey`), else nil
    /// (without building a string for keys that cannot: those not starting with `l` or `r`).
    func launchTagName(_ key: Key) -> String? {
        let name: String
        switch key {
        case .input(let range):
            guard let first = range.first.map({ bytes[$0] }), first == UInt8(ascii: "l") || first == UInt8(ascii: "r") else { return nil }
            name = String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        case .decoded(let decoded):
            name = String(decoding: decoded, as: UTF8.self)
        }
        return LaunchTag.isLaunchKey(name) ? name : nil
    }

    mutating func event(depth: Int) throws(StrictJSON.Failure) -> EventFacts {
        var facts = EventFacts()
        try forEachMember(depth: depth) { reader, key, depth throws(StrictJSON.Failure) in
            switch true {
            case reader.key(key, is: "exception"): facts.exceptions = try reader.exceptionList(depth: depth)
            case reader.key(key, is: "event_id"): facts.eventID = try reader.string(depth: depth)
            case reader.key(key, is: "level"): facts.level = try reader.string(depth: depth)
            case reader.key(key, is: "platform"): facts.platform = try reader.string(depth: depth)
            case reader.key(key, is: "release"): facts.release = try reader.string(depth: depth)
            case reader.key(key, is: "environment"): facts.environment = try reader.string(depth: depth)
            case reader.key(key, is: "timestamp"): facts.timestamp = try reader.scalar(depth: depth)
            case reader.key(key, is: "user"): facts.user = try reader.user(depth: depth)
            case reader.key(key, is: "tags"):
                (facts.crashShieldGuardTag, facts.guardTag, facts.launchTags) = (nil, nil, [])
                // The list form (`[[key, value], ...]`) is rare: built and read as the tree is.
                if try reader.peek(depth: depth) == UInt8(ascii: "[") {
                    facts.launchTags = LaunchTag.of(tags: try reader.value(depth: depth))
                    return
                }
                var launch: [String: JSONValue] = [:]
                try reader.forEachMemberOfObject(depth: depth) { reader, key, depth throws(StrictJSON.Failure) in
                    if reader.key(key, is: "crashshield.guard") {
                        facts.crashShieldGuardTag = try reader.string(depth: depth)
                    } else if reader.key(key, is: "guard") {
                        facts.guardTag = try reader.string(depth: depth)
                    } else if let name = reader.launchTagName(key) {
                        launch[name] = try reader.scalar(depth: depth)
                    } else {
                        try reader.skipValue(depth: depth)
                    }
                }
                if !launch.isEmpty { facts.launchTags = LaunchTag.of(tags: .object(launch)) }
            case reader.key(key, is: "fingerprint"):
                guard try reader.peek(depth: depth) == UInt8(ascii: "[") else { facts.fingerprint = nil; try reader.skipValue(depth: depth); return }
                var entries: [JSONValue] = []
                try reader.forEachElement(depth: depth) { reader, depth throws(StrictJSON.Failure) in entries.append(try reader.scalar(depth: depth)) }
                facts.fingerprint = entries
            case reader.key(key, is: "debug_meta"):
                facts.images = []
                try reader.forEachMemberOfObject(depth: depth) { reader, key, depth throws(StrictJSON.Failure) in
                    guard reader.key(key, is: "images") else { try reader.skipValue(depth: depth); return }
                    facts.images = try reader.images(depth: depth)
                }
            case reader.key(key, is: "logentry"):
                (facts.logentryFormatted, facts.logentryMessage) = (nil, nil)
                try reader.forEachMemberOfObject(depth: depth) { reader, key, depth throws(StrictJSON.Failure) in
                    if reader.key(key, is: "formatted") {
                        facts.logentryFormatted = try reader.string(depth: depth)
                    } else if reader.key(key, is: "message") {
                        facts.logentryMessage = try reader.string(depth: depth)
                    } else {
                        try reader.skipValue(depth: depth)
                    }
                }
            case reader.key(key, is: "message"):
                (facts.messageFormatted, facts.messageMessage, facts.messageText) = (nil, nil, nil)
                guard try reader.peek(depth: depth) == UInt8(ascii: "{") else { facts.messageText = try reader.string(depth: depth); return }
                try reader.forEachMember(depth: depth) { reader, key, depth throws(StrictJSON.Failure) in
                    if reader.key(key, is: "formatted") {
                        facts.messageFormatted = try reader.string(depth: depth)
                    } else if reader.key(key, is: "message") {
                        facts.messageMessage = try reader.string(depth: depth)
                    } else {
                        try reader.skipValue(depth: depth)
                    }
                }
            case reader.key(key, is: "culprit"): facts.culprit = try reader.string(depth: depth)
            case reader.key(key, is: "transaction"): facts.transaction = try reader.string(depth: depth)
            default: try reader.skipValue(depth: depth)
            }
        }
        return facts
    }

    mutating func user(depth: Int) throws(StrictJSON.Failure) -> EventFacts.User {
        var user = EventFacts.User()
        try forEachMemberOfObject(depth: depth) { reader, key, depth throws(StrictJSON.Failure) in
            switch true {
            case reader.key(key, is: "id"): user.id = try reader.scalar(depth: depth)
            case reader.key(key, is: "email"): user.email = try reader.scalar(depth: depth)
            case reader.key(key, is: "username"): user.username = try reader.scalar(depth: depth)
            case reader.key(key, is: "ip_address"): user.ipAddress = try reader.scalar(depth: depth)
            default: try reader.skipValue(depth: depth)
            }
        }
        return user
    }

    /// `exception`: `{"values": [...]}` (the last `values` counts; empty unless it is an array)
    /// or, in the older form, the list itself.
    mutating func exceptionList(depth: Int) throws(StrictJSON.Failure) -> [EventFacts.Exception] {
        switch try peek(depth: depth) {
        case UInt8(ascii: "{"):
            var values: [EventFacts.Exception] = []
            try forEachMember(depth: depth) { reader, key, depth throws(StrictJSON.Failure) in
                guard reader.key(key, is: "values") else { try reader.skipValue(depth: depth); return }
                if try reader.peek(depth: depth) == UInt8(ascii: "[") {
                    values = try reader.exceptions(depth: depth)
                } else {
                    values = []
                    try reader.skipValue(depth: depth)
                }
            }
            return values
        case UInt8(ascii: "["):
            return try exceptions(depth: depth)
        default:
            try skipValue(depth: depth)
            return []
        }
    }

    mutating func exceptions(depth: Int) throws(StrictJSON.Failure) -> [EventFacts.Exception] {
        var list: [EventFacts.Exception] = []
        try forEachElement(depth: depth) { reader, depth throws(StrictJSON.Failure) in list.append(try reader.exception(depth: depth)) }
        return list
    }

    mutating func exception(depth: Int) throws(StrictJSON.Failure) -> EventFacts.Exception {
        var exception = EventFacts.Exception()
        try forEachMemberOfObject(depth: depth) { reader, key, depth throws(StrictJSON.Failure) in
            switch true {
            case reader.key(key, is: "type"): exception.type = try reader.string(depth: depth)
            case reader.key(key, is: "value"): exception.value = try reader.string(depth: depth)
            case reader.key(key, is: "mechanism"): exception.mechanism = try reader.mechanism(depth: depth)
            case reader.key(key, is: "stacktrace"):
                exception.frames = []
                try reader.forEachMemberOfObject(depth: depth) { reader, key, depth throws(StrictJSON.Failure) in
                    guard reader.key(key, is: "frames") else { try reader.skipValue(depth: depth); return }
                    exception.frames = try reader.frames(depth: depth)
                }
            default: try reader.skipValue(depth: depth)
            }
        }
        return exception
    }

    mutating func mechanism(depth: Int) throws(StrictJSON.Failure) -> EventFacts.Mechanism {
        var mechanism = EventFacts.Mechanism()
        try forEachMemberOfObject(depth: depth) { reader, key, depth throws(StrictJSON.Failure) in
            switch true {
            case reader.key(key, is: "type"): mechanism.type = try reader.string(depth: depth)
            case reader.key(key, is: "handled"): mechanism.handled = try reader.bool(depth: depth)
            case reader.key(key, is: "synthetic"): mechanism.synthetic = try reader.bool(depth: depth)
            case reader.key(key, is: "data"):
                mechanism.dataGuard = nil
                try reader.forEachMemberOfObject(depth: depth) { reader, key, depth throws(StrictJSON.Failure) in
                    guard reader.key(key, is: "guard") else { try reader.skipValue(depth: depth); return }
                    mechanism.dataGuard = try reader.string(depth: depth)
                }
            default: try reader.skipValue(depth: depth)
            }
        }
        return mechanism
    }

    /// `stacktrace.frames`: empty unless an array.
    mutating func frames(depth: Int) throws(StrictJSON.Failure) -> [EventFacts.Frame] {
        try objects(depth: depth, empty: EventFacts.Frame()) { frame, reader, key, depth throws(StrictJSON.Failure) in
            switch true {
            case reader.key(key, is: "function"): frame.function = try reader.string(depth: depth)
            case reader.key(key, is: "in_app"): frame.inApp = try reader.bool(depth: depth)
            case reader.key(key, is: "instruction_addr"): frame.instructionAddress = try reader.scalar(depth: depth)
            case reader.key(key, is: "package"): frame.package = try reader.string(depth: depth)
            case reader.key(key, is: "raw_function"): frame.rawFunction = try reader.string(depth: depth)
            case reader.key(key, is: "image_addr"): frame.imageAddress = try reader.scalar(depth: depth)
            case reader.key(key, is: "module"): frame.module = try reader.string(depth: depth)
            default: try reader.skipValue(depth: depth)
            }
        }
    }

    /// `debug_meta.images`: empty unless an array.
    mutating func images(depth: Int) throws(StrictJSON.Failure) -> [EventFacts.Image] {
        try objects(depth: depth, empty: EventFacts.Image()) { image, reader, key, depth throws(StrictJSON.Failure) in
            switch true {
            case reader.key(key, is: "image_addr"): image.imageAddress = try reader.scalar(depth: depth)
            case reader.key(key, is: "image_size"): image.imageSize = try reader.scalar(depth: depth)
            case reader.key(key, is: "code_file"): image.codeFile = try reader.string(depth: depth)
            default: try reader.skipValue(depth: depth)
            }
        }
    }
}
