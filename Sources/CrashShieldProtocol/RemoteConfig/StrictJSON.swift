import Foundation

/// A small RFC 8259 JSON reader for the remote configuration document, its signed envelope and
/// the SDK's stored copy, which are read at every start: `JSONValue.parse` (JSONDecoder) costs
/// close to a millisecond for one document because every value tries several types in turn.
///
/// Strict: UTF-8 only, no trailing commas, comments, NaN or infinities (a number that does not fit
/// a finite `Double` is refused), unescaped control characters or unpaired surrogates, no
/// repeated key in an object, nothing but whitespace after the value, at most 256 levels of
/// nesting. Integers that fit `Int64` are `.int`, other numbers `.double`. Everything it accepts,
/// JSONDecoder reads the same way (JSONDecoder also accepts trailing commas and repeated keys).
///
/// `Dialect.envelopeHeader` reads envelope and item headers the way Sentry's ingestion (Relay,
/// serde_json) reads them where it matters for framing and identity: trailing commas and a byte
/// order mark refused, numbers written with a fraction or exponent kept as `.double`, a repeated
/// key's last value kept (`parseEnvelopeHeader` also names the repeated top-level keys, which
/// `Envelope.parse` refuses for the fields Relay declares).
struct StrictJSON {
    struct Failure: Error {}

    /// Which text is accepted, and how numbers map to `JSONValue`.
    enum Dialect {
        /// RFC 8259 only, as described on the type.
        case strict
        /// Envelope and item headers. As `strict`, except:
        /// - a repeated key is accepted and its **last** value kept, as serde_json keeps it in an
        ///   untyped object (Relay reads the headers' undeclared keys that way; a repeat of a
        ///   field Relay declares is refused by `Envelope.parse`, from the keys
        ///   `parseEnvelopeHeader` reports);
        /// - nesting up to 512 levels (kept from JSONDecoder, the reader before this one).
        /// As serde_json (and so Relay, which answers 400): a trailing comma in an object or array
        /// is refused ("trailing comma"), a UTF-8 byte order mark before the value is refused
        /// ("expected value"; JSONDecoder skipped it), and a number written with a fraction or an
        /// exponent is `.double` even when whole (`3.0`, `1e2`; JSONDecoder gave `.int`), so a
        /// `length` of `3.0` is not a length.
        case envelopeHeader
    }

    /// The text being read; valid only during the static `parse` call that made the reader.
    private let bytes: UnsafeBufferPointer<UInt8>
    private let dialect: Dialect
    private var index = 0
    private var depth = 0
    /// `envelopeHeader`: the keys that occur more than once in the outermost object.
    private var repeatedTopLevelKeys: Set<String> = []

    static func parse(_ data: Data) throws(Failure) -> JSONValue {
        // Read in place: no copy of the document.
        let result: Result<JSONValue, Failure> = data.withUnsafeBytes { raw in
            Result { () throws(Failure) -> JSONValue in try parse(raw.assumingMemoryBound(to: UInt8.self), dialect: .strict) }
        }
        return try result.get()
    }

    /// `bytes` as one document of `dialect`; `bytes` is only read during the call.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>, dialect: Dialect) throws(Failure) -> JSONValue {
        var reader = StrictJSON(bytes: bytes, dialect: dialect)
        return try reader.document()
    }

    /// An envelope or item header (`Dialect.envelopeHeader`), and the keys of its outermost
    /// object that occur more than once (their last value is the one in `value`). `bytes` is only
    /// read during the call.
    static func parseEnvelopeHeader(_ bytes: UnsafeBufferPointer<UInt8>) throws(Failure) -> (value: JSONValue, repeatedKeys: Set<String>) {
        var reader = StrictJSON(bytes: bytes, dialect: .envelopeHeader)
        let value = try reader.document()
        return (value, reader.repeatedTopLevelKeys)
    }

    /// The whole input as one value, with only whitespace around it.
    private mutating func document() throws(Failure) -> JSONValue {
        skipWhitespace()
        let value = try value()
        skipWhitespace()
        guard index == bytes.count else { throw Failure() }
        return value
    }

    private init(bytes: UnsafeBufferPointer<UInt8>, dialect: Dialect) {
        self.bytes = bytes
        self.dialect = dialect
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func literal(_ text: StaticString, _ value: JSONValue) throws(Failure) -> JSONValue {
        let count = text.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw Failure() }
        for offset in 0..<count where bytes[index + offset] != text.utf8Start[offset] { throw Failure() }
        index += count
        return value
    }

    private mutating func value() throws(Failure) -> JSONValue {
        guard index < bytes.count else { throw Failure() }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        default: return try number()
        }
    }

    /// Enters the object or array whose opening bracket is at `index`: true when an element
    /// follows, false when `close` follows at once (consumed, and the container left).
    private mutating func enterContainer(closedBy close: UInt8) throws(Failure) -> Bool {
        depth += 1
        guard depth <= (dialect == .strict ? 256 : 512) else { throw Failure() }
        index += 1
        skipWhitespace()
        guard index < bytes.count && bytes[index] == close else { return true }
        index += 1
        depth -= 1
        return false
    }

    /// After an element: true when a comma follows (consumed: another element comes), false when
    /// `close` follows (consumed, and the container left); anything else is refused.
    private mutating func continueContainer(closedBy close: UInt8) throws(Failure) -> Bool {
        skipWhitespace()
        guard index < bytes.count else { throw Failure() }
        if bytes[index] == UInt8(ascii: ",") {
            index += 1
            skipWhitespace()
            // A comma must be followed by another element in both dialects: a trailing comma fails
            // where the element (a key, or a value) is read.
            return true
        }
        guard bytes[index] == close else { throw Failure() }
        index += 1
        depth -= 1
        return false
    }

    private mutating func object() throws(Failure) -> JSONValue {
        var members: [String: JSONValue] = [:]
        var more = try enterContainer(closedBy: UInt8(ascii: "}"))
        while more {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw Failure() }
            let key = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw Failure() }
            index += 1
            skipWhitespace()
            // A repeated key is refused when strict: two readers of one signed document must not
            // see two different values (JSONDecoder keeps the first, serde_json the last). An
            // envelope header keeps the last, as Sentry's ingestion does.
            let member = try value()
            if members.updateValue(member, forKey: key) != nil {
                if dialect == .strict { throw Failure() }
                if depth == 1 { repeatedTopLevelKeys.insert(key) }
            }
            more = try continueContainer(closedBy: UInt8(ascii: "}"))
        }
        return .object(members)
    }

    private mutating func array() throws(Failure) -> JSONValue {
        var items: [JSONValue] = []
        var more = try enterContainer(closedBy: UInt8(ascii: "]"))
        while more {
            items.append(try value())
            more = try continueContainer(closedBy: UInt8(ascii: "]"))
        }
        return .array(items)
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw Failure() }
        var value: UInt32 = 0
        for byte in bytes[index..<index + 4] {
            let digit: UInt8
            switch byte {
            case 0x30...0x39: digit = byte - 0x30
            case 0x41...0x46: digit = byte - 0x41 + 10
            case 0x61...0x66: digit = byte - 0x61 + 10
            default: throw Failure()
            }
            value = value << 4 | UInt32(digit)
        }
        index += 4
        return value
    }

    private mutating func string() throws(Failure) -> String {
        index += 1 // the opening quote
        // Most strings have no escape: up to the closing quote they are one run of the input,
        // decoded at once (ASCII needs no UTF-8 check). Anything else goes to the loop below.
        let contentStart = index
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "\""), ascii {
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[contentStart..<index]), as: UTF8.self)
            index += 1
            return text
        }
        index = contentStart
        var scalars = String.UnicodeScalarView()
        var runStart = index
        func flushRun(_ end: Int) throws(Failure) {
            guard runStart < end else { return }
            // String(decoding:) repairs invalid UTF-8 with U+FFFD, which changes the bytes: equal
            // bytes mean the run was valid. (String(validating:) needs macOS 15 / iOS 18.)
            let run = UnsafeBufferPointer(rebasing: bytes[runStart..<end])
            let text = String(decoding: run, as: UTF8.self)
            guard text.utf8.elementsEqual(run) else { throw Failure() }
            scalars.append(contentsOf: text.unicodeScalars)
        }
        while true {
            guard index < bytes.count else { throw Failure() }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                try flushRun(index)
                index += 1
                return String(scalars)
            }
            guard byte >= 0x20 else { throw Failure() }
            if byte != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            try flushRun(index)
            index += 1
            guard index < bytes.count else { throw Failure() }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var code = try hex4()
                if (0xD800...0xDBFF).contains(code) {
                    guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                    else { throw Failure() }
                    index += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw Failure() }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(code) else { throw Failure() }
                scalars.append(scalar)
            default:
                throw Failure()
            }
            runStart = index
        }
    }

    private mutating func number() throws(Failure) -> JSONValue {
        let start = index
        func digits() -> Int {
            let first = index
            while index < bytes.count && bytes[index] >= 0x30 && bytes[index] <= 0x39 { index += 1 }
            return index - first
        }
        if index < bytes.count && bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { throw Failure() }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            guard digits() > 0 else { throw Failure() }
        }
        var integral = true
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            index += 1
            integral = false
            guard digits() > 0 else { throw Failure() }
        }
        if index < bytes.count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
            index += 1
            integral = false
            if index < bytes.count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) { index += 1 }
            guard digits() > 0 else { throw Failure() }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if integral, let value = Int64(text) { return .int(value) }
        guard let value = Double(text), value.isFinite else { throw Failure() }
        return .double(value)
    }
}
