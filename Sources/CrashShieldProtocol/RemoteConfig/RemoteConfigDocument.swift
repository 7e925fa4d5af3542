import CrashShieldBase
import Foundation

/// The remote configuration document: versioned rules that switch guards and capture settings
/// for chosen app versions, operating systems and architectures, served by the collector and
/// read by the SDK.
///
/// ```json
/// { "version": 7, "issued_at": "2026-11-23T06:00:00Z",
///   "rules": [ { "when": { "app_version": ">=2.4.0, <2.5.0", "os": "iOS", "os_version": ">=16" },
///                "guards": { "container": "neutralize", "timer": "off", "zombie": "reportOnly" },
///                "allow_class_prefixes": ["MY"], "deny_class_prefixes": ["MYLegacy"],
///                "zombie_class_prefixes": ["MY"], "incident_sample_rate": 0.25, "capture": true } ] }
/// ```
///
/// Parsing is strict about the fields it knows (see `parse(_:)`) and tolerant of the rest:
/// unknown fields and unknown guard names are ignored and reported as warnings, so an older SDK
/// reads a newer document.
public struct RemoteConfigDocument: Sendable, Hashable {
    /// Increases with every published document; the SDK never replaces a stored document with
    /// one of a lower version. A non-negative integer.
    public var version: Int64
    /// When the document was published: RFC 3339 text ("2026-11-23T06:00:00Z"), kept as given.
    /// nil when the document has none.
    public var issuedAt: String?
    /// Tried in order; the first whose `when` matches the app applies (`rule(for:)`).
    public var rules: [RemoteConfigRule]

    public init(version: Int64, issuedAt: String? = nil, rules: [RemoteConfigRule] = []) {
        self.version = version
        self.issuedAt = issuedAt
        self.rules = rules
    }

    /// Guard names a document may switch (those of CrashShield's `GuardID`s). Other names are
    /// ignored with a warning.
    public static let knownGuardNames: Set<String> = [
        "container", "string", "swift", "selector", "nsnull", "kvc", "decoding", "kvo", "notification",
        "timer", "zombie", "mainthread",
    ]

    /// The first rule whose condition matches `target`, or nil (then the app keeps its own
    /// settings).
    public func rule(for target: RemoteConfigTarget) -> RemoteConfigRule? {
        rules.first { $0.when.matches(target) }
    }
}

/// The app a rule is resolved for: its version, operating system and architecture.
public struct RemoteConfigTarget: Sendable, Hashable {
    /// The app's version ("2.4.1"); nil when unknown (then no rule with an `app_version` matches).
    public var appVersion: String?
    /// The operating system's name as the SDK reports it ("iOS", "macOS", "Linux").
    public var os: String?
    /// The operating system's version ("17.2.1").
    public var osVersion: String?
    /// The CPU architecture ("arm64", "x86_64").
    public var arch: String?

    public init(appVersion: String?, os: String?, osVersion: String?, arch: String?) {
        self.appVersion = appVersion
        self.os = os
        self.osVersion = osVersion
        self.arch = arch
    }
}

/// When a rule applies. Every field left out matches any app; an empty condition matches every app.
public struct RemoteConfigCondition: Sendable, Hashable {
    /// Constraint on the app's version (">=2.4.0, <2.5.0").
    public var appVersion: VersionConstraint?
    /// The operating system's name, compared without regard to case ("iOS" matches "ios").
    public var os: String?
    /// Constraint on the operating system's version.
    public var osVersion: VersionConstraint?
    /// The architecture, compared without regard to case.
    public var arch: String?

    public init(appVersion: VersionConstraint? = nil, os: String? = nil, osVersion: VersionConstraint? = nil, arch: String? = nil) {
        self.appVersion = appVersion
        self.os = os
        self.osVersion = osVersion
        self.arch = arch
    }

    /// True when every field given matches `target`; a field given for a target value that is nil
    /// (or not a version) does not match.
    public func matches(_ target: RemoteConfigTarget) -> Bool {
        if let appVersion, !(target.appVersion.map(appVersion.matches) ?? false) { return false }
        if let os, target.os?.lowercased() != os.lowercased() { return false }
        if let osVersion, !(target.osVersion.map(osVersion.matches) ?? false) { return false }
        if let arch, target.arch?.lowercased() != arch.lowercased() { return false }
        return true
    }
}

/// A guard's policy as a document names it.
public enum RemoteGuardPolicy: String, Sendable, Hashable, CaseIterable {
    case neutralize
    case reportOnly
    case off
}

/// One rule: a condition and the settings it overrides. A field that is nil (left out of the
/// document) keeps the app's own setting.
public struct RemoteConfigRule: Sendable, Hashable {
    public var when: RemoteConfigCondition
    /// Policies by guard name (known names only: `RemoteConfigDocument.knownGuardNames`).
    public var guards: [String: RemoteGuardPolicy]
    public var allowClassPrefixes: [String]?
    public var denyClassPrefixes: [String]?
    public var zombieClassPrefixes: [String]?
    /// Fraction of incidents reported, 0...1.
    public var incidentSampleRate: Double?
    /// false switches fatal crash capture off for the launch when the app left
    /// `CrashShieldOptions.capture` unassigned (capture's default is on); true keeps that default.
    /// Capture the app assigned in code (on or off) stays as the app set it.
    public var capture: Bool?

    public init(when: RemoteConfigCondition = RemoteConfigCondition(), guards: [String: RemoteGuardPolicy] = [:],
                allowClassPrefixes: [String]? = nil, denyClassPrefixes: [String]? = nil,
                zombieClassPrefixes: [String]? = nil, incidentSampleRate: Double? = nil, capture: Bool? = nil) {
        self.when = when
        self.guards = guards
        self.allowClassPrefixes = allowClassPrefixes
        self.denyClassPrefixes = denyClassPrefixes
        self.zombieClassPrefixes = zombieClassPrefixes
        self.incidentSampleRate = incidentSampleRate
        self.capture = capture
    }
}

/// Why a remote configuration document (or its signed envelope) was rejected as a whole.
/// `code` is stable across versions; `path` names the offending value ("$.rules[0].guards.timer",
/// "$" for the whole document).
public struct RemoteConfigError: CodedError {
    public let code: String
    public let path: String
    public let message: String

    public init(code: String, path: String, message: String) {
        self.code = code
        self.path = path
        self.message = message
    }

    public var description: String { "\(code) at \(path): \(message)" }

    /// The text is not JSON, or its top level is not an object.
    public static let invalidJSONCode = "remote_config.invalid_json"
    /// A required field is missing (`version`).
    public static let missingFieldCode = "remote_config.missing_field"
    /// A known field has a value of the wrong type or out of range.
    public static let invalidValueCode = "remote_config.invalid_value"
    /// A version constraint (`app_version`, `os_version`) does not parse.
    public static let invalidConstraintCode = "remote_config.invalid_constraint"
    /// The signed envelope is not `{"payload": base64, "signature": base64?}`.
    public static let invalidEnvelopeCode = "remote_config.invalid_envelope"
    /// A public key is configured and the envelope has no signature.
    public static let missingSignatureCode = "remote_config.missing_signature"
    /// The signature does not verify with the configured public key.
    public static let badSignatureCode = "remote_config.bad_signature"
    /// A public or private key is not a raw 32-byte Ed25519 key (base64).
    public static let invalidKeyCode = "remote_config.invalid_key"
}

/// Something a parser ignored: an unknown field or guard name, at `path`. `code` is stable.
public struct RemoteConfigWarning: Sendable, Hashable, CustomStringConvertible {
    public let code: String
    public let path: String
    public var description: String { "\(code) at \(path)" }

    public static let unknownFieldCode = "remote_config.unknown_field"
    public static let unknownGuardCode = "remote_config.unknown_guard"
}

/// A parsed document and what the parser ignored.
public struct RemoteConfigParseResult: Sendable, Hashable {
    public let document: RemoteConfigDocument
    public let warnings: [RemoteConfigWarning]
}

// MARK: - Parsing

extension RemoteConfigDocument {
    /// Parses the JSON text of a document.
    ///
    /// Rules: `version` is required, an integer ≥ 0. `issued_at`, when present, is an RFC 3339
    /// date-time string. `rules`, when present, is an array of objects; in a rule, `when` is an
    /// object whose `app_version` and `os_version` are version constraints and `os` and `arch`
    /// non-empty strings; `guards` is an object of guard name → "neutralize" | "reportOnly" |
    /// "off"; the three prefix lists are arrays of non-empty strings; `incident_sample_rate` is a
    /// number in 0...1; `capture` is a boolean. `null` is not a value: a known field set to null
    /// is invalid. Unknown fields and unknown guard names are ignored and returned as warnings.
    /// - Throws: `RemoteConfigError` for the first invalid value, naming its path; the document
    ///   is rejected as a whole.
    public static func parse(_ data: Data) throws(RemoteConfigError) -> RemoteConfigParseResult {
        let root: JSONValue
        do {
            root = try StrictJSON.parse(data, rules: .strict)
        } catch {
            throw RemoteConfigError(code: RemoteConfigError.invalidJSONCode, path: "$", message: "not JSON")
        }
        return try parse(root)
    }

    /// Parses an already decoded document (see `parse(_: Data)`).
    public static func parse(_ root: JSONValue) throws(RemoteConfigError) -> RemoteConfigParseResult {
        var parser = Parser()
        let document = try parser.document(root)
        return RemoteConfigParseResult(document: document, warnings: parser.warnings)
    }
}

private struct Parser {
    var warnings: [RemoteConfigWarning] = []

    func invalid(_ path: String, _ message: String) -> RemoteConfigError {
        RemoteConfigError(code: RemoteConfigError.invalidValueCode, path: path, message: message)
    }

    mutating func object(_ value: JSONValue, at path: String, known: Set<String>) throws(RemoteConfigError) -> [String: JSONValue] {
        guard let members = value.objectValue else { throw invalid(path, "expected an object") }
        for key in members.keys.sorted() where !known.contains(key) {
            warnings.append(RemoteConfigWarning(code: RemoteConfigWarning.unknownFieldCode, path: "\(path).\(key)"))
        }
        return members
    }

    mutating func document(_ root: JSONValue) throws(RemoteConfigError) -> RemoteConfigDocument {
        guard root.objectValue != nil else {
            throw RemoteConfigError(code: RemoteConfigError.invalidJSONCode, path: "$", message: "the document is not a JSON object")
        }
        let members = try object(root, at: "$", known: ["version", "issued_at", "rules"])
        guard let versionValue = members["version"] else {
            throw RemoteConfigError(code: RemoteConfigError.missingFieldCode, path: "$.version", message: "a document needs a version")
        }
        guard let version = integer(versionValue), version >= 0 else {
            throw invalid("$.version", "expected an integer ≥ 0")
        }
        var issuedAt: String?
        if let value = members["issued_at"] {
            guard let text = value.stringValue, RemoteConfigDocument.isRFC3339(text) else {
                throw invalid("$.issued_at", "expected an RFC 3339 date-time string")
            }
            issuedAt = text
        }
        var rules: [RemoteConfigRule] = []
        if let value = members["rules"] {
            guard let items = value.arrayValue else { throw invalid("$.rules", "expected an array") }
            for (index, item) in items.enumerated() {
                rules.append(try rule(item, at: "$.rules[\(index)]"))
            }
        }
        return RemoteConfigDocument(version: version, issuedAt: issuedAt, rules: rules)
    }

    /// An integral JSON number (a double with no fraction counts), nil otherwise.
    func integer(_ value: JSONValue) -> Int64? {
        switch value {
        case .int(let number): return number
        case .double(let number) where number.isFinite && number.rounded() == number && abs(number) < 9.0e15: return Int64(number)
        default: return nil
        }
    }

    mutating func rule(_ value: JSONValue, at path: String) throws(RemoteConfigError) -> RemoteConfigRule {
        let members = try object(value, at: path, known: [
            "when", "guards", "allow_class_prefixes", "deny_class_prefixes", "zombie_class_prefixes",
            "incident_sample_rate", "capture",
        ])
        var rule = RemoteConfigRule()
        if let when = members["when"] { rule.when = try condition(when, at: "\(path).when") }
        if let guards = members["guards"] {
            guard let entries = guards.objectValue else { throw invalid("\(path).guards", "expected an object") }
            for name in entries.keys.sorted() {
                let entryPath = "\(path).guards.\(name)"
                guard RemoteConfigDocument.knownGuardNames.contains(name) else {
                    warnings.append(RemoteConfigWarning(code: RemoteConfigWarning.unknownGuardCode, path: entryPath))
                    continue
                }
                guard let text = entries[name]?.stringValue, let policy = RemoteGuardPolicy(rawValue: text) else {
                    throw invalid(entryPath, "expected \"neutralize\", \"reportOnly\" or \"off\"")
                }
                rule.guards[name] = policy
            }
        }
        rule.allowClassPrefixes = try prefixes(members["allow_class_prefixes"], at: "\(path).allow_class_prefixes")
        rule.denyClassPrefixes = try prefixes(members["deny_class_prefixes"], at: "\(path).deny_class_prefixes")
        rule.zombieClassPrefixes = try prefixes(members["zombie_class_prefixes"], at: "\(path).zombie_class_prefixes")
        if let rate = members["incident_sample_rate"] {
            guard let number = rate.doubleValue, number.isFinite, (0...1).contains(number) else {
                throw invalid("\(path).incident_sample_rate", "expected a number from 0 to 1")
            }
            rule.incidentSampleRate = number
        }
        if let capture = members["capture"] {
            guard let flag = capture.boolValue else { throw invalid("\(path).capture", "expected true or false") }
            rule.capture = flag
        }
        return rule
    }

    mutating func condition(_ value: JSONValue, at path: String) throws(RemoteConfigError) -> RemoteConfigCondition {
        let members = try object(value, at: path, known: ["app_version", "os", "os_version", "arch"])
        var condition = RemoteConfigCondition()
        condition.appVersion = try constraint(members["app_version"], at: "\(path).app_version")
        condition.osVersion = try constraint(members["os_version"], at: "\(path).os_version")
        condition.os = try name(members["os"], at: "\(path).os")
        condition.arch = try name(members["arch"], at: "\(path).arch")
        return condition
    }

    func constraint(_ value: JSONValue?, at path: String) throws(RemoteConfigError) -> VersionConstraint? {
        guard let value else { return nil }
        guard let text = value.stringValue else { throw invalid(path, "expected a version constraint string") }
        do {
            return try VersionConstraint(text)
        } catch {
            throw RemoteConfigError(code: RemoteConfigError.invalidConstraintCode, path: path, message: error.message)
        }
    }

    func name(_ value: JSONValue?, at path: String) throws(RemoteConfigError) -> String? {
        guard let value else { return nil }
        guard let text = value.stringValue, !text.isEmpty else { throw invalid(path, "expected a non-empty string") }
        return text
    }

    func prefixes(_ value: JSONValue?, at path: String) throws(RemoteConfigError) -> [String]? {
        guard let value else { return nil }
        guard let items = value.arrayValue else { throw invalid(path, "expected an array of strings") }
        var result: [String] = []
        for (index, item) in items.enumerated() {
            guard let text = item.stringValue, !text.isEmpty else { throw invalid("\(path)[\(index)]", "expected a non-empty string") }
            result.append(text)
        }
        return result
    }
}

extension JSONValue {
    /// Parses JSON text strictly (RFC 8259, UTF-8) and fast: what the remote configuration
    /// reads at start uses this instead of `parse(_:)` (JSONDecoder), which costs close to a
    /// millisecond per document. Integers that fit `Int64` are `.int`, other numbers `.double`.
    /// - Throws: `RemoteConfigError` "remote_config.invalid_json" at path "$".
    package static func parseStrict(_ data: Data) throws(RemoteConfigError) -> JSONValue {
        do {
            return try StrictJSON.parse(data, rules: .strict)
        } catch {
            throw RemoteConfigError(code: RemoteConfigError.invalidJSONCode, path: "$", message: "not JSON")
        }
    }
}

extension RemoteConfigDocument {
    /// RFC 3339 date-time: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)` ('T' and 'Z' in
    /// either case), with month, day (for the month, leap years included), hour, minute, second
    /// (60 allowed for a leap second) and offset in range. Checked by hand: a date formatter
    /// costs milliseconds to create, and this runs at every start.
    static func isRFC3339(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ digits: Int) -> Int? {
            guard index + digits <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<index + digits] {
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            index += digits
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
              expect("Tt"), let hour = number(2), expect(":"), let minute = number(2), expect(":"), let second = number(2)
        else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let monthDays = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...12).contains(month), (1...monthDays[month - 1]).contains(day), hour < 24, minute < 60, second <= 60
        else { return false }
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            while index < bytes.count && bytes[index] >= 0x30 && bytes[index] <= 0x39 { index += 1 }
            guard index > start else { return false }
        }
        if expect("Zz") { return index == bytes.count }
        guard expect("+-"), let offsetHour = number(2), expect(":"), let offsetMinute = number(2) else { return false }
        return offsetHour < 24 && offsetMinute < 60 && index == bytes.count
    }
}

// MARK: - Serialising

extension RemoteConfigDocument {
    /// The document as a JSON value with the field names `parse` reads; nil fields are left out.
    /// `parse(jsonValue)` gives back an equal document.
    public var jsonValue: JSONValue {
        var members: [String: JSONValue] = ["version": .int(version)]
        if let issuedAt { members["issued_at"] = .string(issuedAt) }
        members["rules"] = .array(rules.map(\.jsonValue))
        return .object(members)
    }

    /// Compact JSON text of `jsonValue` (sorted keys): the payload to sign and serve.
    public func jsonData() -> Data { jsonValue.jsonData() }
}

extension RemoteConfigRule {
    public var jsonValue: JSONValue {
        var members: [String: JSONValue] = [:]
        var when: [String: JSONValue] = [:]
        if let constraint = self.when.appVersion { when["app_version"] = .string(constraint.text) }
        if let os = self.when.os { when["os"] = .string(os) }
        if let constraint = self.when.osVersion { when["os_version"] = .string(constraint.text) }
        if let arch = self.when.arch { when["arch"] = .string(arch) }
        members["when"] = .object(when)
        if !guards.isEmpty { members["guards"] = .object(guards.mapValues { .string($0.rawValue) }) }
        if let allowClassPrefixes { members["allow_class_prefixes"] = .array(allowClassPrefixes.map(JSONValue.string)) }
        if let denyClassPrefixes { members["deny_class_prefixes"] = .array(denyClassPrefixes.map(JSONValue.string)) }
        if let zombieClassPrefixes { members["zombie_class_prefixes"] = .array(zombieClassPrefixes.map(JSONValue.string)) }
        if let incidentSampleRate { members["incident_sample_rate"] = .double(incidentSampleRate) }
        if let capture { members["capture"] = .bool(capture) }
        return .object(members)
    }
}
