/// An error told apart by its `code`, which is stable across versions (new codes may be added),
/// with a `message` for people that may change. Every error type of the CrashShield modules is one.
///
/// Conforming types get `description` ("<code>: <message>") and matching by code:
/// `catch CrashShieldError.alreadyStarted` catches every `CrashShieldError` whose code is
/// `alreadyStarted`, whatever its message and details.
public protocol CodedError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The type of `code`: a `StableErrorCode` or a `String`.
    associatedtype Code: Hashable, Sendable, CustomStringConvertible
    /// The kind of error; stable across versions.
    var code: Code { get }
    /// What went wrong, for people; the wording may change between versions.
    var message: String { get }
}

extension CodedError {
    /// "<code>: <message>".
    public var description: String { "\(code): \(message)" }

    /// Matches by code: true when `value` is an error of this type with the code of `pattern`.
    public static func ~= (pattern: Self, value: any Error) -> Bool {
        (value as? Self)?.code == pattern.code
    }
}

/// The kind of a `CodedError`: a stable string (`rawValue`) with a static constant per kind.
/// `description` is the raw value.
public protocol StableErrorCode: Hashable, Sendable, RawRepresentable, CustomStringConvertible where RawValue == String {}

extension StableErrorCode {
    /// The raw value: the stable string.
    public var description: String { rawValue }
}
