import Foundation

/// The package's one strict JSON reader, shared by the SDK (remote configuration, envelope
/// headers) and the collector (everything it ingests): bytes straight to `JSONValue` in one pass,
/// without JSONDecoder, which tries each type in turn for every value (close to a millisecond for
/// a remote configuration document, more than half of the collector's ingest time).
///
/// Strict RFC 8259: one value with only whitespace around it (no byte order mark), no trailing
/// commas, comments, single quotes, NaN or infinities; strings are valid UTF-8 with control
/// characters escaped and surrogates escaped in pairs; numbers without leading zeros, and one that
/// does not fit a finite `Double` is refused. Integers that fit `Int64` are `.int`; a number with
/// a fraction or an exponent, or too large for `Int64`, is `.double` (`3.0` and `1e2` too). No
/// value may be nested deeper than `Rules.maxDepth` levels (the document itself is level 1), so
/// hostile nesting cannot exhaust the stack. `Rules` says whether a repeated key is refused or
/// its last value kept. Everything it accepts, JSONDecoder and JSONSerialization read as the
/// same value.
///
/// `parse` builds the whole tree; `Reader` also reads a document without building what the
/// caller does not need, with the same checks, so both accept and refuse the same bytes.
public enum StrictJSON {
    /// Why a text was refused: a short code (`json.depth`, `json.utf8`, `json.repeated_key`...)
    /// and the byte offset at which reading stopped.
    public struct Failure: Error, Sendable, Hashable {
        /// What was wrong, such as `json.truncated` or `json.number`.
        public let code: String
        /// The offset in the input at which it was found.
        public let offset: Int

        /// A failure `code` at byte `offset`.
        public init(code: String, offset: Int) {
            self.code = code
            self.offset = offset
        }
    }

    /// What a document may contain beyond RFC 8259's grammar, which is checked in full whatever
    /// the rules.
    public struct Rules: Sendable, Hashable {
        /// Refuse an object with the same key twice (keys compared as `String`s). Otherwise the
        /// last value of a repeated key is kept, as serde_json (Sentry's ingestion) keeps it.
        public var refusesRepeatedKeys: Bool
        /// The deepest level a value may be at: the document is level 1, a member or element of
        /// a level-n container is level n + 1.
        public var maxDepth: Int

        /// Rules with the given strictness for repeated keys and nesting limit.
        public init(refusesRepeatedKeys: Bool, maxDepth: Int) {
            self.refusesRepeatedKeys = refusesRepeatedKeys
            self.maxDepth = maxDepth
        }

        /// Documents that must mean one thing to every reader (the remote configuration and its
        /// signed envelope: JSONDecoder keeps a repeated key's first value, serde_json its last,
        /// so a repeated key is refused); at most 256 levels.
        public static let strict = Rules(refusesRepeatedKeys: true, maxDepth: 256)
        /// Documents sent by clients and read as Sentry's ingestion reads them (the collector's
        /// event, session and client-report payloads): a repeated key's last value kept; at most
        /// 256 levels.
        public static let lastKeyWins = Rules(refusesRepeatedKeys: false, maxDepth: 256)
        /// Envelope and item headers: a repeated key's last value kept (see `parseEnvelopeHeader`
        /// for the keys that were repeated); at most 512 levels, as JSONDecoder allowed.
        public static let envelopeHeader = Rules(refusesRepeatedKeys: false, maxDepth: 512)
    }

    /// The JSON document `data` read under `rules`.
    /// - Throws: `Failure` when `data` is not one JSON value or breaks `rules`.
    public static func parse(_ data: Data, rules: Rules) throws(Failure) -> JSONValue {
        try withReader(data, rules: rules) { reader throws(Failure) in try reader.document() }
    }

    /// The JSON document in `bytes` read under `rules`; `bytes` is only read during the call.
    /// - Throws: `Failure` when `bytes` is not one JSON value or breaks `rules`.
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>, rules: Rules) throws(Failure) -> JSONValue {
        var reader = Reader(bytes: bytes, rules: rules)
        return try reader.document()
    }

    /// An envelope or item header read under `Rules.envelopeHeader`, and the keys of its
    /// outermost object that occur more than once (their last value is the one in `value`), so
    /// the caller can refuse a repeat of a field Sentry's ingestion declares. `bytes` is only read
    /// during the call.
    /// - Throws: `Failure` when `bytes` is not one JSON value or is nested too deeply.
    public static func parseEnvelopeHeader(_ bytes: UnsafeBufferPointer<UInt8>) throws(Failure) -> (value: JSONValue, repeatedKeys: Set<String>) {
        var reader = Reader(bytes: bytes, rules: .envelopeHeader)
        let value = try reader.document()
        return (value, reader.repeatedTopLevelKeys)
    }

    /// The value of the top-level member `name` of the JSON object `data`, built as `parse`
    /// builds it, without building the other members (they are read past with the same checks);
    /// nil when `data` is not an object or has no such member. Of a repeated key the last value
    /// counts (unless `rules` refuse repeats).
    /// - Throws: what `parse` throws for the same bytes and rules.
    public static func member(_ name: StaticString, of data: Data, rules: Rules) throws(Failure) -> JSONValue? {
        try withReader(data, rules: rules) { reader throws(Failure) -> JSONValue? in
            reader.skipSpace()
            var found: JSONValue?
            if try reader.peek(depth: 0) == UInt8(ascii: "{") {
                try reader.forEachMember(depth: 0) { reader, key, depth throws(Failure) in
                    if reader.key(key, is: name) { found = try reader.value(depth: depth) } else { try reader.skipValue(depth: depth) }
                }
            } else {
                try reader.skipValue(depth: 0)
            }
            try reader.end()
            return found
        }
    }

    /// Runs `body` with a reader over `data`'s bytes in place (no copy; the reader must not
    /// outlive `body`). `body` reads the document with the reader's methods, usually from
    /// `skipSpace()` to `end()`.
    /// - Throws: what `body` throws.
    @inlinable
    public static func withReader<Result>(_ data: Data, rules: Rules, _ body: (inout Reader) throws(Failure) -> Result) throws(Failure) -> Result {
        let outcome: Swift.Result<Result, Failure> = data.withUnsafeBytes { raw in
            var reader = Reader(bytes: raw.assumingMemoryBound(to: UInt8.self), rules: rules)
            return Swift.Result { () throws(Failure) -> Result in try body(&reader) }
        }
        return try outcome.get()
    }

    /// The tokenizer and tree builder. `value(depth:)` builds a value; the other methods read a
    /// document without building what the caller does not need (`forEachMember`, `skipValue`,
    /// `string(depth:)`...), with exactly the checks `value(depth:)` makes, so a caller that
    /// reads some members and skips the rest accepts and refuses the same bytes as `parse`.
    ///
    /// Each method that takes a `depth` reads one value at that nesting depth (0 for the
    /// document, 1 for its members or elements, ...; a depth of `rules.maxDepth` or more is
    /// refused), with `index` at the value's first byte, and leaves `index` just past the value.
    /// Methods are inlinable, and the small ones called for every key and value always inlined,
    /// so that a reader in another module (the collector's event facts) runs as fast as one in
    /// this module: without `@inline(__always)` they stayed calls into this module, 8% slower.
    public struct Reader {
        /// The document; valid only while the reader is (see `withReader`). Every access is
        /// preceded by an `index < bytes.count` check.
        public let bytes: UnsafeBufferPointer<UInt8>
        /// The offset of the next byte to read.
        public var index = 0
        /// What the document may contain besides the grammar.
        public let rules: Rules
        /// Members of the objects being built (innermost last), so each object's dictionary is
        /// allocated once at its final size instead of growing member by member.
        @usableFromInline var memberStack: [(key: String, value: JSONValue)] = []
        /// Elements of the arrays being built (innermost last), for the same reason.
        @usableFromInline var elementStack: [JSONValue] = []
        /// The keys that occur more than once in the outermost object (when repeats are kept).
        @usableFromInline var repeatedTopLevelKeys: Set<String> = []

        /// A reader at the start of `bytes`, which must stay valid while the reader is used.
        @inlinable
        public init(bytes: UnsafeBufferPointer<UInt8>, rules: Rules) {
            self.bytes = bytes
            self.rules = rules
        }

        /// A failure `code` at the current offset.
        @inlinable
        public func fail(_ code: String) -> Failure { Failure(code: code, offset: index) }

        /// Reads past whitespace (space, tab, line feed, carriage return).
        @inlinable @inline(__always)
        public mutating func skipSpace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
                index += 1
            }
        }

        /// Reads past trailing whitespace and checks that nothing else follows.
        /// - Throws: `json.trailing` when something does.
        @inlinable
        public mutating func end() throws(Failure) {
            skipSpace()
            guard index == bytes.count else { throw fail("json.trailing") }
        }

        /// The whole input as one value, with only whitespace around it.
        @inlinable
        mutating func document() throws(Failure) -> JSONValue {
            skipSpace()
            let value = try value(depth: 0)
            try end()
            return value
        }

        /// The first byte of the value at `index` (`{`, `[` or another), once the checks every
        /// value gets passed (its depth, and that the input does not end before it).
        @inlinable @inline(__always)
        public mutating func peek(depth: Int) throws(Failure) -> UInt8 {
            guard depth < rules.maxDepth else { throw fail("json.depth") }
            guard index < bytes.count else { throw fail("json.truncated") }
            return bytes[index]
        }

        /// Builds the value at `index`.
        @inlinable
        public mutating func value(depth: Int) throws(Failure) -> JSONValue {
            switch try peek(depth: depth) {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default: return try number()
            }
        }

        @inlinable
        mutating func literal(_ word: StaticString) throws(Failure) {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { throw fail("json.literal") }
            let expected = UnsafeBufferPointer(start: word.utf8Start, count: count)
            for offset in 0..<count where bytes[index + offset] != expected[offset] { throw fail("json.literal") }
            index += count
        }

        @inlinable
        mutating func object(depth: Int) throws(Failure) -> JSONValue {
            index += 1
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object([:]) }
            let first = memberStack.count
            defer { memberStack.removeSubrange(first...) }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("json.key") }
                let key = try string()
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("json.colon") }
                index += 1
                skipSpace()
                let member = try value(depth: depth + 1)
                memberStack.append((key, member))
                skipSpace()
                guard index < bytes.count else { throw fail("json.truncated") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") {
                    var members = [String: JSONValue](minimumCapacity: memberStack.count - first)
                    for position in first..<memberStack.count { members[memberStack[position].key] = memberStack[position].value }
                    if members.count < memberStack.count - first { try repeatedKeys(in: first, depth: depth) }
                    index += 1
                    return .object(members)
                }
                throw fail("json.object")
            }
        }

        /// The object being built (its members from `memberStack[first]` on) has a repeated key:
        /// refused, or noted when it is the outermost object.
        @usableFromInline
        mutating func repeatedKeys(in first: Int, depth: Int) throws(Failure) {
            if rules.refusesRepeatedKeys { throw fail("json.repeated_key") }
            guard depth == 0 else { return }
            var seen = Set<String>()
            for position in first..<memberStack.count where !seen.insert(memberStack[position].key).inserted {
                repeatedTopLevelKeys.insert(memberStack[position].key)
            }
        }

        @inlinable
        mutating func array(depth: Int) throws(Failure) -> JSONValue {
            index += 1
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array([]) }
            let first = elementStack.count
            defer { elementStack.removeSubrange(first...) }
            while true {
                skipSpace()
                let element = try value(depth: depth + 1)
                elementStack.append(element)
                skipSpace()
                guard index < bytes.count else { throw fail("json.truncated") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return .array(Array(elementStack[first...]))
                }
                throw fail("json.array")
            }
        }

        @inlinable
        mutating func hex4() throws(Failure) -> UInt32 {
            guard index + 4 <= bytes.count else { throw fail("json.escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt32
                switch byte {
                case 0x30...0x39: digit = UInt32(byte - 0x30)
                case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
                case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
                default: throw fail("json.escape")
                }
                value = value << 4 | digit
                index += 1
            }
            return value
        }

        /// `bytes` as a string when they are valid UTF-8. (`String(validating:)` needs macOS 15 /
        /// iOS 18: decoding repairs invalid UTF-8 with U+FFFD, so equal bytes mean it was valid.)
        @inlinable
        static func utf8<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String? {
            let text = String(decoding: bytes, as: UTF8.self)
            return text.utf8.elementsEqual(bytes) ? text : nil
        }

        /// Reads the string at `index` (its opening quote) and returns its text.
        @inlinable
        public mutating func string() throws(Failure) -> String {
            index += 1  // opening quote
            // Fast path: most strings have no escapes; read them straight from the input (ASCII
            // needs no UTF-8 validation).
            let start = index
            var ascii = true
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
                if byte >= 0x80 { ascii = false }
                index += 1
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                let run = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                if ascii { return String(decoding: run, as: UTF8.self) }
                guard let text = Self.utf8(run) else { throw Failure(code: "json.utf8", offset: start) }
                return text
            }
            // An escape or a control character: the general loop, from what was read so far.
            // Escapes append whole UTF-8 sequences, so `output` is valid exactly when the raw
            // runs between them are.
            var output: [UInt8] = Array(bytes[start..<index])
            while true {
                guard index < bytes.count else { throw fail("json.truncated") }
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") { index += 1; break }
                if byte < 0x20 { throw fail("json.control_character") }
                if byte != UInt8(ascii: "\\") {
                    output.append(byte)
                    index += 1
                    continue
                }
                index += 1
                guard index < bytes.count else { throw fail("json.truncated") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(escape)
                case UInt8(ascii: "b"): output.append(0x08)
                case UInt8(ascii: "f"): output.append(0x0C)
                case UInt8(ascii: "n"): output.append(0x0A)
                case UInt8(ascii: "r"): output.append(0x0D)
                case UInt8(ascii: "t"): output.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        // A high surrogate must be followed by an escaped low surrogate.
                        guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw fail("json.surrogate")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("json.surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw fail("json.surrogate")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw fail("json.escape") }
                    output.append(contentsOf: UTF8.encode(unicode)!)
                default:
                    throw fail("json.escape")
                }
            }
            guard let text = Self.utf8(output) else { throw fail("json.utf8") }
            return text
        }

        @inlinable
        mutating func number() throws(Failure) -> JSONValue {
            let start = index
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            func digits(_ reader: inout Reader) -> Int {
                let from = reader.index
                while reader.index < reader.bytes.count, reader.bytes[reader.index] >= 0x30, reader.bytes[reader.index] <= 0x39 { reader.index += 1 }
                return reader.index - from
            }
            let integerStart = index
            let integerDigits = digits(&self)
            guard integerDigits > 0 else { throw fail("json.value") }
            guard !(integerDigits > 1 && bytes[integerStart] == 0x30) else { throw fail("json.number") }  // no leading zeros
            var isInteger = true
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                isInteger = false
                guard digits(&self) > 0 else { throw fail("json.number") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                isInteger = false
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits(&self) > 0 else { throw fail("json.number") }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            if isInteger, let integer = Int64(text) { return .int(integer) }
            guard let double = Double(text), double.isFinite else { throw fail("json.number") }
            return .double(double)
        }
    }
}

// Reading without building: the same grammar and checks as `value(depth:)` (every string is
// still checked for UTF-8 and escapes, every number for syntax and finiteness, nesting for
// `maxDepth`, repeated keys when the rules refuse them), but nothing is allocated for what is
// only read past.
extension StrictJSON.Reader {
    /// An object key's UTF-8 bytes: a range of the input when the key has no escapes and is
    /// ASCII (the common case, read without allocating), else the decoded key.
    public enum Key {
        /// The key is `bytes[range]` as it stands in the input.
        case input(Range<Int>)
        /// The key's UTF-8 bytes once its escapes were decoded.
        case decoded([UInt8])
    }

    /// Reads a key (`index` at its opening quote) with the checks of `string()`.
    @inlinable @inline(__always)
    public mutating func key() throws(StrictJSON.Failure) -> Key {
        let quote = index
        index += 1
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { index += 1; return .input(start..<(index - 1)) }
            if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { break }
            index += 1
        }
        // Escapes, control characters, non-ASCII or a missing quote: `string()` decides.
        index = quote
        return .decoded(Array(try string().utf8))
    }

    /// The key as a `String`.
    @inlinable
    public func text(of key: Key) -> String {
        switch key {
        case .input(let range): String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        case .decoded(let decoded): String(decoding: decoded, as: UTF8.self)
        }
    }

    /// Whether `key` is `name`, compared as UTF-8 bytes (as `String` equality compares them for
    /// names that no other character sequence normalises to, such as lowercase ASCII names).
    @inlinable @inline(__always)
    public func key(_ key: Key, is name: StaticString) -> Bool {
        let count = name.utf8CodeUnitCount
        let expected = UnsafeBufferPointer(start: name.utf8Start, count: count)
        switch key {
        case .input(let range):
            guard range.count == count else { return false }
            var offset = 0
            while offset < count {
                if bytes[range.lowerBound + offset] != expected[offset] { return false }
                offset += 1
            }
            return true
        case .decoded(let decoded):
            return decoded.elementsEqual(expected)
        }
    }

    /// Reads past the value at `index`, accepting and refusing what `value(depth:)` does.
    @inlinable
    public mutating func skipValue(depth: Int) throws(StrictJSON.Failure) {
        switch try peek(depth: depth) {
        case UInt8(ascii: "{"): try forEachMember(depth: depth) { reader, _, memberDepth throws(StrictJSON.Failure) in try reader.skipValue(depth: memberDepth) }
        case UInt8(ascii: "["): try forEachElement(depth: depth) { reader, elementDepth throws(StrictJSON.Failure) in try reader.skipValue(depth: elementDepth) }
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: _ = try number()
        }
    }

    /// Reads past a string (`index` at its opening quote) with the checks of `string()`.
    @inlinable
    public mutating func skipString() throws(StrictJSON.Failure) {
        let quote = index
        index += 1
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { index += 1; return }
            if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { break }
            index += 1
        }
        index = quote
        _ = try string()
    }

    /// Reads the object at `index` (which must be `{`; see `peek`), calling `member` with each
    /// key and the depth of its value; `member` must read the value. Same grammar as
    /// `value(depth:)`. A repeated key calls `member` again (so a reader that assigns per key
    /// keeps the last value, as the tree does), or is refused when the rules refuse repeats.
    @inlinable
    public mutating func forEachMember(depth: Int, _ member: (inout Self, Key, Int) throws(StrictJSON.Failure) -> Void) throws(StrictJSON.Failure) {
        index += 1
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return }
        var seen = Set<String>()
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("json.key") }
            let name = try key()
            if rules.refusesRepeatedKeys, !seen.insert(text(of: name)).inserted { throw fail("json.repeated_key") }
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("json.colon") }
            index += 1
            skipSpace()
            try member(&self, name, depth + 1)
            skipSpace()
            guard index < bytes.count else { throw fail("json.truncated") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return }
            throw fail("json.object")
        }
    }

    /// `forEachMember` when the value at `index` is an object; any other value is read past and
    /// no member is read (as looking a key up in a tree finds nothing in a non-object).
    @inlinable
    public mutating func forEachMemberOfObject(depth: Int, _ member: (inout Self, Key, Int) throws(StrictJSON.Failure) -> Void) throws(StrictJSON.Failure) {
        guard try peek(depth: depth) == UInt8(ascii: "{") else { try skipValue(depth: depth); return }
        try forEachMember(depth: depth, member)
    }

    /// Reads the array at `index` (which must be `[`; see `peek`), calling `element` with the
    /// depth of each element; `element` must read it. Same grammar as `value(depth:)`.
    @inlinable
    public mutating func forEachElement(depth: Int, _ element: (inout Self, Int) throws(StrictJSON.Failure) -> Void) throws(StrictJSON.Failure) {
        index += 1
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return }
        while true {
            skipSpace()
            try element(&self, depth + 1)
            skipSpace()
            guard index < bytes.count else { throw fail("json.truncated") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return }
            throw fail("json.array")
        }
    }

    /// The array at `index` read into one `Element` per element: each starts as `empty` and
    /// `member` fills it from the element's members (an element that is not an object stays
    /// `empty`). Any value other than an array gives none.
    @inlinable
    public mutating func objects<Element>(depth: Int, empty: Element,
                                          _ member: (inout Element, inout Self, Key, Int) throws(StrictJSON.Failure) -> Void) throws(StrictJSON.Failure) -> [Element] {
        guard try peek(depth: depth) == UInt8(ascii: "[") else { try skipValue(depth: depth); return [] }
        var elements: [Element] = []
        try forEachElement(depth: depth) { reader, depth throws(StrictJSON.Failure) in
            var element = empty
            try reader.forEachMemberOfObject(depth: depth) { reader, key, depth throws(StrictJSON.Failure) in
                try member(&element, &reader, key, depth)
            }
            elements.append(element)
        }
        return elements
    }

    /// A scalar value (string, number, boolean, null) as `value(depth:)` builds it; an object or
    /// array is read past and returned as `.null` (for callers that only ask a scalar for its
    /// string, number or boolean, which an object or array does not have either).
    @inlinable
    public mutating func scalar(depth: Int) throws(StrictJSON.Failure) -> JSONValue {
        let first = try peek(depth: depth)
        if first == UInt8(ascii: "{") || first == UInt8(ascii: "[") {
            try skipValue(depth: depth)
            return .null
        }
        return try value(depth: depth)
    }

    /// The value's text when it is a string (nil for anything else, which is read past).
    @inlinable
    public mutating func string(depth: Int) throws(StrictJSON.Failure) -> String? {
        if try peek(depth: depth) == UInt8(ascii: "\"") { return try string() }
        try skipValue(depth: depth)
        return nil
    }

    /// The value when it is `true` or `false` (nil for anything else, which is read past).
    @inlinable
    public mutating func bool(depth: Int) throws(StrictJSON.Failure) -> Bool? {
        try scalar(depth: depth).boolValue
    }
}
