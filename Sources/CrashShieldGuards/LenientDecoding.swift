import CrashShieldBase
package import _CrashShieldIncidents

// Lenient decoding: the Swift face of the NSNull crash. A JSON `null`, a missing key,
// a value of the wrong type or an invalid value in a field marked lenient decodes to a declared
// default and records one incident (guard "decoding") naming the model type and the coding path,
// instead of failing the whole document. Well-formed input decodes exactly as with plain Codable,
// and fields that are not marked stay strict.
//
//     struct User: Codable {
//         let id: Int                                 // strict: a bad id still fails the document
//         @Lenient var name: String                   // "" when null, missing or not a string
//         @Lenient var tags: [String]                 // []
//         @Lenient var nickname: String?              // nil; null and a missing key are legal here
//         @LenientWith<UnknownStatus> var status: Status
//     }
//     enum UnknownStatus: LenientDefaultProvider { static let defaultValue = Status.unknown }
//
// Why the default is declared by type: a synthesized `init(from:)` never sees a property's
// initial value (`@Lenient var name = "x"` would be ignored while decoding), so the default comes
// from `LenientDefaultValue` (the type's natural empty value) or from a `LenientDefaultProvider`.
//
// Policies (`GuardID.decoding`): neutralize (default) uses the default and records; reportOnly
// records, then throws the error plain Codable would throw; off is plain Codable, no incident.

/// A type with a natural value to fall back on: "" for strings, 0, false, empty collections, nil.
public protocol LenientDefaultValue {
    /// The value a lenient field decodes to when its JSON value is missing, null or of another type.
    static var lenientDefault: Self { get }
}

/// Supplies the fallback for `@LenientWith<Provider>` when the type's natural default is not the
/// right one (an enum's `.unknown` case, a `true` flag...).
public protocol LenientDefaultProvider {
    /// The type of the field.
    associatedtype Value: Decodable
    /// The value the field decodes to when its JSON value does not fit.
    static var defaultValue: Value { get }
}

/// A field that decodes to `Value.lenientDefault` instead of failing the document when its JSON
/// value is null, missing, of the wrong type or invalid, and records an incident (guard
/// `.decoding`). A well-formed value decodes as with plain Codable.
@propertyWrapper
public struct Lenient<Value: Decodable & LenientDefaultValue>: Decodable {
    /// The decoded value, or `Value.lenientDefault` when the JSON value did not fit.
    public var wrappedValue: Value

    /// A field holding `wrappedValue`.
    public init(wrappedValue: Value) { self.wrappedValue = wrappedValue }

    /// Used outside keyed containers (an array of lenient values): the element's own decoder.
    public init(from decoder: any Decoder) throws {
        wrappedValue = try LenientDecodingEngine.decodeSingle(Value.self, default: Value.lenientDefault, from: decoder)
    }
}

/// A field that decodes to `Provider.defaultValue` instead of failing the document when its JSON
/// value is null, missing, of the wrong type or invalid, and records an incident (guard
/// `.decoding`). A well-formed value decodes as with plain Codable.
@propertyWrapper
public struct LenientWith<Provider: LenientDefaultProvider>: Decodable {
    /// The decoded value, or `Provider.defaultValue` when the JSON value did not fit.
    public var wrappedValue: Provider.Value

    /// A field holding `wrappedValue`.
    public init(wrappedValue: Provider.Value) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        wrappedValue = try LenientDecodingEngine.decodeSingle(
            Provider.Value.self, default: Provider.defaultValue, from: decoder)
    }
}

extension Lenient: Encodable where Value: Encodable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(wrappedValue)
    }
}

extension LenientWith: Encodable where Provider.Value: Encodable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(wrappedValue)
    }
}

extension KeyedEncodingContainer {
    /// A nil optional is left out, as plain Codable's `encodeIfPresent` does.
    public mutating func encode<Value: Encodable>(_ value: Lenient<Value>, forKey key: Key) throws {
        if let optional = value.wrappedValue as? any LenientOptionalMarker, optional.isNil { return }
        try encode(value.wrappedValue, forKey: key)
    }

    /// The same for `@LenientWith` properties: a nil optional is left out.
    public mutating func encode<Provider>(_ value: LenientWith<Provider>, forKey key: Key) throws
    where Provider.Value: Encodable {
        if let optional = value.wrappedValue as? any LenientOptionalMarker, optional.isNil { return }
        try encode(value.wrappedValue, forKey: key)
    }
}

extension Lenient: Equatable where Value: Equatable {}
extension Lenient: Hashable where Value: Hashable {}
extension Lenient: Sendable where Value: Sendable {}
extension LenientWith: Equatable where Provider.Value: Equatable {}
extension LenientWith: Hashable where Provider.Value: Hashable {}
extension LenientWith: Sendable where Provider.Value: Sendable {}

extension KeyedDecodingContainer {
    /// Chosen by synthesized `init(from:)` for `@Lenient` properties (more specific than the
    /// generic `decode(_:forKey:)`), so a missing key reaches the wrapper too.
    public func decode<Value>(_ type: Lenient<Value>.Type, forKey key: Key) throws -> Lenient<Value> {
        Lenient(wrappedValue: try LenientDecodingEngine.decode(Value.self, default: Value.lenientDefault, in: self, forKey: key))
    }

    /// The same for `@LenientWith` properties.
    public func decode<Provider>(_ type: LenientWith<Provider>.Type, forKey key: Key) throws -> LenientWith<Provider> {
        LenientWith(
            wrappedValue: try LenientDecodingEngine.decode(
                Provider.Value.self, default: Provider.defaultValue, in: self, forKey: key))
    }
}

// MARK: - Defaults

extension String: LenientDefaultValue {
    /// The empty string: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: String { "" }
}
extension Bool: LenientDefaultValue {
    /// False: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: Bool { false }
}
extension Int: LenientDefaultValue {
    /// Zero: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: Int { 0 }
}
extension Int8: LenientDefaultValue {
    /// Zero: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: Int8 { 0 }
}
extension Int16: LenientDefaultValue {
    /// Zero: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: Int16 { 0 }
}
extension Int32: LenientDefaultValue {
    /// Zero: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: Int32 { 0 }
}
extension Int64: LenientDefaultValue {
    /// Zero: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: Int64 { 0 }
}
extension UInt: LenientDefaultValue {
    /// Zero: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: UInt { 0 }
}
extension UInt8: LenientDefaultValue {
    /// Zero: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: UInt8 { 0 }
}
extension UInt16: LenientDefaultValue {
    /// Zero: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: UInt16 { 0 }
}
extension UInt32: LenientDefaultValue {
    /// Zero: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: UInt32 { 0 }
}
extension UInt64: LenientDefaultValue {
    /// Zero: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: UInt64 { 0 }
}
extension Double: LenientDefaultValue {
    /// Zero: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: Double { 0 }
}
extension Float: LenientDefaultValue {
    /// Zero: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: Float { 0 }
}
extension Array: LenientDefaultValue {
    /// The empty array: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: Array { [] }
}
extension Set: LenientDefaultValue {
    /// The empty set: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: Set { [] }
}
extension Dictionary: LenientDefaultValue {
    /// The empty dictionary: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: Dictionary { [:] }
}
extension Optional: LenientDefaultValue {
    /// Nil: what a lenient field of this type decodes to when its value does not fit.
    public static var lenientDefault: Optional { nil }
}

// MARK: - Engine

/// What went wrong with one lenient field.
enum LenientFailure: Equatable {
    case null, missingKey, typeMismatch, invalidValue

    init(_ error: DecodingError) {
        switch error {
        case .valueNotFound: self = .null
        case .keyNotFound: self = .missingKey
        case .typeMismatch: self = .typeMismatch
        case .dataCorrupted: self = .invalidValue
        @unknown default: self = .invalidValue
        }
    }
}

/// Optional fields accept null and a missing key as plain Codable does (decodeIfPresent).
private protocol LenientOptionalMarker { var isNil: Bool { get } }
extension Optional: LenientOptionalMarker {
    fileprivate var isNil: Bool { self == nil }
}
private protocol LenientArrayMarker {}
extension Array: LenientArrayMarker {}
extension Set: LenientArrayMarker {}
private protocol LenientDictionaryMarker {}
extension Dictionary: LenientDictionaryMarker {}

package enum LenientDecodingEngine {
    static let guardName: StaticString = "decoding"

    static func decode<T: Decodable, K: CodingKey>(
        _ type: T.Type, default fallback: @autoclosure () -> T, in container: KeyedDecodingContainer<K>, forKey key: K
    ) throws -> T {
        let isOptional = T.self is any LenientOptionalMarker.Type
        guard container.contains(key) else {
            if isOptional { return fallback() }
            let error = DecodingError.keyNotFound(
                key, .init(codingPath: container.codingPath, debugDescription: "No value for the lenient key."))
            return try recover(
                .missingKey, error: error, type: T.self, model: modelName(K.self),
                path: container.codingPath + [key], fallback: fallback)
        }
        do {
            if isOptional, try container.decodeNil(forKey: key) { return fallback() }
            return try container.decode(T.self, forKey: key)
        } catch let error as DecodingError {
            return try recover(
                LenientFailure(error), error: error, type: T.self, model: modelName(K.self),
                path: container.codingPath + [key], fallback: fallback)
        }
    }

    static func decodeSingle<T: Decodable>(_ type: T.Type, default fallback: @autoclosure () -> T, from decoder: any Decoder)
        throws -> T
    {
        do {
            return try T(from: decoder)
        } catch let error as DecodingError {
            let path = decoder.codingPath
            let model = path.isEmpty ? String(describing: T.self) : "\(String(describing: T.self)) element"
            return try recover(LenientFailure(error), error: error, type: T.self, model: model, path: path, fallback: fallback)
        }
    }

    /// Applies the policy: the default plus an incident, the original error plus an incident, or
    /// the original error alone.
    private static func recover<T>(
        _ failure: LenientFailure, error: DecodingError, type: T.Type, model: String, path: [any CodingKey],
        fallback: () -> T
    ) throws -> T {
        let policy = cs_swift_guard_policy(CS_SWIFT_GUARD_DECODING)
        if policy == CS_POLICY_OFF { throw error }
        record(model: model, path: pathString(path), reason: reason(failure, for: T.self), policy: policy)
        if policy == CS_POLICY_REPORT_ONLY { throw error }
        return fallback()
    }

    private static func record(model: String, path: String, reason: StaticString, policy: cs_policy) {
        // The incident pipeline copies the class and selector names during the call; the guard
        // name and the reason must outlive it, so both are static string literals.
        model.withCString { className in
            path.withCString { selectorName in
                var site = cs_incident_site()
                site.guard_name = staticCString(guardName)
                site.policy = policy
                site.class_name = className
                site.selector_name = selectorName
                site.is_class_method = false
                site.reason = staticCString(reason)
                site.arg_count = 0
                site.caller = nil
                cs_incident_record(&site)
            }
        }
    }

    private static func staticCString(_ string: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(string.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// "order.items[2].name": keys joined with dots, array positions in brackets.
    static package func pathString(_ path: [any CodingKey]) -> String {
        var result = ""
        for key in path {
            if let index = key.intValue, key.stringValue.isEmpty || key.stringValue.hasPrefix("Index ") {
                result += "[\(index)]"
            } else {
                if !result.isEmpty { result += "." }
                result += key.stringValue
            }
        }
        return result
    }

    /// The model type owning a keyed container: the type that declares its CodingKeys
    /// ("App.User.CodingKeys" → "User"); other key types are named as they are.
    static func modelName<K: CodingKey>(_ keyType: K.Type) -> String {
        // Private types (synthesized CodingKeys are private) may carry an "(unknown context at
        // $...)" component; it names no type.
        var components = String(reflecting: keyType).split(separator: ".").map(String.init)
            .filter { !$0.hasPrefix("(") }
        if components.count >= 2, components.last == "CodingKeys" { components.removeLast() }
        if components.count >= 2 { components.removeFirst() }  // the module
        return components.joined(separator: ".")
    }

    private enum Expected { case string, integer, number, bool, array, object, value }

    private static func expected<T>(_ type: T.Type) -> Expected {
        if T.self == String.self || T.self == String?.self { return .string }
        if T.self == Bool.self || T.self == Bool?.self { return .bool }
        if T.self is any BinaryInteger.Type { return .integer }
        if T.self is any BinaryFloatingPoint.Type { return .number }
        if T.self is any LenientArrayMarker.Type { return .array }
        if T.self is any LenientDictionaryMarker.Type { return .object }
        return .value
    }

    /// Static reason texts (the incident pipeline stores the pointer, never a copy).
    static func reason<T>(_ failure: LenientFailure, for type: T.Type) -> StaticString {
        switch (failure, expected(type)) {
        case (.null, .string): return "null where String expected: default used"
        case (.null, .integer): return "null where an integer expected: default used"
        case (.null, .number): return "null where a number expected: default used"
        case (.null, .bool): return "null where Bool expected: default used"
        case (.null, .array): return "null where an array expected: default used"
        case (.null, .object): return "null where an object expected: default used"
        case (.null, .value): return "null where a value expected: default used"
        case (.missingKey, .string): return "missing key where String expected: default used"
        case (.missingKey, .integer): return "missing key where an integer expected: default used"
        case (.missingKey, .number): return "missing key where a number expected: default used"
        case (.missingKey, .bool): return "missing key where Bool expected: default used"
        case (.missingKey, .array): return "missing key where an array expected: default used"
        case (.missingKey, .object): return "missing key where an object expected: default used"
        case (.missingKey, .value): return "missing key where a value expected: default used"
        case (.typeMismatch, .string): return "wrong type where String expected: default used"
        case (.typeMismatch, .integer): return "wrong type where an integer expected: default used"
        case (.typeMismatch, .number): return "wrong type where a number expected: default used"
        case (.typeMismatch, .bool): return "wrong type where Bool expected: default used"
        case (.typeMismatch, .array): return "wrong type where an array expected: default used"
        case (.typeMismatch, .object): return "wrong type where an object expected: default used"
        case (.typeMismatch, .value): return "wrong type where a value expected: default used"
        case (.invalidValue, .string): return "invalid value where String expected: default used"
        case (.invalidValue, .integer): return "invalid value where an integer expected: default used"
        case (.invalidValue, .number): return "invalid value where a number expected: default used"
        case (.invalidValue, .bool): return "invalid value where Bool expected: default used"
        case (.invalidValue, .array): return "invalid value where an array expected: default used"
        case (.invalidValue, .object): return "invalid value where an object expected: default used"
        case (.invalidValue, .value): return "invalid value where a value expected: default used"
        }
    }
}
