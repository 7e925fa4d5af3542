import Foundation

/// The client key a Sentry SDK authenticates with, read from (in this order) `X-Sentry-Auth`,
/// `Authorization: Sentry ...`, the `sentry_key` query parameter, or the envelope header's `dsn`.
enum SentryAuth {
    /// The `sentry_key` of a header value such as
    /// `Sentry sentry_version=7, sentry_client=x/1.0, sentry_key=abc`; nil when it has none.
    /// The leading `Sentry` is optional and compared case-insensitively; values may be quoted.
    static func key(fromHeader value: String) -> String? {
        var text = trimmed(Substring(value))
        if text.utf8.count >= 7, text.prefix(7).lowercased() == "sentry " { text = text.dropFirst(7) }
        for part in text.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            let name = trimmed(pair[0])
            var value = trimmed(pair[1])
            if value.utf8.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = value.dropFirst().dropLast() }
            if name.utf8.count == 10, name.lowercased() == "sentry_key", !value.isEmpty { return String(value) }
        }
        return nil
    }

    /// `text` without leading and trailing spaces and tabs (HTTP's optional whitespace).
    private static func trimmed(_ text: Substring) -> Substring {
        var result = text
        while let first = result.first, first == " " || first == "\t" { result = result.dropFirst() }
        while let last = result.last, last == " " || last == "\t" { result = result.dropLast() }
        return result
    }

    /// `key` in the shape the collector issues, 32 lowercase hexadecimal digits (a UUID without
    /// dashes, so the same DSN also works with GlitchTip), or nil when it is not 32 ASCII hex
    /// digits. Dashes are tolerated and ignored; uppercase digits are lowercased.
    static func normalizedKey(_ key: String) -> String? {
        var digits: [UInt8] = []
        digits.reserveCapacity(32)
        for byte in key.utf8 {
            switch byte {
            case UInt8(ascii: "-"): continue
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): digits.append(byte)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digits.append(byte + 32)  // to lowercase
            default: return nil
            }
            if digits.count > 32 { return nil }
        }
        guard digits.count == 32 else { return nil }
        return String(decoding: digits, as: UTF8.self)
    }
}
