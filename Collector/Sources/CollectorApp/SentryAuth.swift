import Foundation

/// The client key a Sentry SDK authenticates with, read from (in this order) `X-Sentry-Auth`,
/// `Authorization: Sentry ...`, the `sentry_key` query parameter, or the envelope header's `dsn`.
enum SentryAuth {
    /// The `sentry_key` of a header value such as
    /// `Sentry sentry_version=7, sentry_client=x/1.0, sentry_key=abc`; nil when it has none.
    /// The leading `Sentry` is optional and compared case-insensitively; values may be quoted.
    static func key(fromHeader value: String) -> String? {
        var text = Substring(value.trimmingCharacters(in: .whitespaces))
        if text.lowercased().hasPrefix("sentry ") { text = text.dropFirst(7) }
        for part in text.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            let name = pair[0].trimmingCharacters(in: .whitespaces).lowercased()
            var value = pair[1].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            if name == "sentry_key", !value.isEmpty { return value }
        }
        return nil
    }

    /// Whether `key` has the shape the collector issues: 32 hexadecimal digits (a UUID without
    /// dashes, so the same DSN also works with GlitchTip). Dashes are tolerated and ignored.
    static func normalizedKey(_ key: String) -> String? {
        let compact = key.replacingOccurrences(of: "-", with: "").lowercased()
        guard compact.count == 32, compact.allSatisfy({ $0.isHexDigit }) else { return nil }
        return compact
    }
}
