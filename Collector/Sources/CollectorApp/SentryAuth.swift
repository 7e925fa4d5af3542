import Foundation

/// The client key a Sentry SDK authenticates with, read from (in this order) `X-Sentry-Auth`,
/// `Authorization: Sentry ...`, the `sentry_key` query parameter, or the envelope header's `dsn`.
enum SentryAuth {
    /// The `sentry_key` of a header value such as
    /// `Sentry sentry_version=7, sentry_client=x/1.0, sentry_key=abc`; nil when it has none.
    /// The leading `Sentry` is optional and compared case-insensitively; values may be quoted.
    static func key(fromHeader value: String) -> String? {
        // Every SDK sends ASCII: read its bytes (a fraction of the Character-wise parse's cost,
        // which was ~2 % of a request's CPU). Anything else takes the Character-wise parse.
        let ascii = value.utf8.withContiguousStorageIfAvailable { bytes -> (isASCII: Bool, key: String?) in
            guard !bytes.contains(where: { $0 >= 0x80 }) else { return (false, nil) }
            return (true, asciiKey(bytes))
        }
        if let ascii, ascii.isASCII { return ascii.key }
        return characterKey(fromHeader: value)
    }

    /// `key(fromHeader:)` for an all-ASCII value, on its bytes; for ASCII text it splits, trims
    /// and compares exactly as `characterKey(fromHeader:)` does (ASCII characters are single bytes).
    private static func asciiKey(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var text = trimmed(bytes, 0..<bytes.count)
        if text.count >= 7, equalsLowercased(bytes, text.lowerBound..<(text.lowerBound + 7), "sentry ") {
            text = (text.lowerBound + 7)..<text.upperBound
        }
        for part in split(bytes, text, separator: UInt8(ascii: ","), maxSplits: Int.max) {
            let pair = split(bytes, part, separator: UInt8(ascii: "="), maxSplits: 1)
            guard pair.count == 2 else { continue }
            let name = trimmed(bytes, pair[0])
            var value = trimmed(bytes, pair[1])
            if value.count >= 2, bytes[value.lowerBound] == UInt8(ascii: "\""), bytes[value.upperBound - 1] == UInt8(ascii: "\"") {
                value = (value.lowerBound + 1)..<(value.upperBound - 1)
            }
            if name.count == 10, equalsLowercased(bytes, name, "sentry_key"), !value.isEmpty {
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[value]), as: UTF8.self)
            }
        }
        return nil
    }

    /// `Collection.split(separator:maxSplits:omittingEmptySubsequences: true)` over `range` of
    /// `bytes`, as index ranges (same pieces, same treatment of empty ones and of `maxSplits`).
    private static func split(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, separator: UInt8, maxSplits: Int) -> [Range<Int>] {
        var pieces: [Range<Int>] = []
        var pieceStart = range.lowerBound
        var index = range.lowerBound
        while index < range.upperBound {
            if bytes[index] == separator {
                let appended = index > pieceStart
                if appended { pieces.append(pieceStart..<index) }
                index += 1
                pieceStart = index
                if appended && pieces.count == maxSplits { break }
                continue
            }
            index += 1
        }
        if pieceStart < range.upperBound { pieces.append(pieceStart..<range.upperBound) }
        return pieces
    }

    /// `range` of `bytes` without leading and trailing spaces and tabs.
    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Range<Int> {
        var lower = range.lowerBound
        var upper = range.upperBound
        while lower < upper, bytes[lower] == UInt8(ascii: " ") || bytes[lower] == UInt8(ascii: "\t") { lower += 1 }
        while upper > lower, bytes[upper - 1] == UInt8(ascii: " ") || bytes[upper - 1] == UInt8(ascii: "\t") { upper -= 1 }
        return lower..<upper
    }

    /// Whether `range` of `bytes`, ASCII letters lowercased, is `lowercase` (ASCII).
    private static func equalsLowercased(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ lowercase: StaticString) -> Bool {
        guard range.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        for offset in 0..<range.count {
            var byte = bytes[range.lowerBound + offset]
            if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") { byte += 32 }
            if byte != expected[offset] { return false }
        }
        return true
    }

    /// `key(fromHeader:)` on Characters, for values that are not all ASCII.
    static func characterKey(fromHeader value: String) -> String? {
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
