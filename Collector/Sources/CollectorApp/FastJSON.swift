import CrashShieldProtocol
import Foundation

/// A JSON reader for the ingest path: bytes straight to `JSONValue` in one pass. (Decoding
/// `JSONValue` through `JSONDecoder` tries each type in turn and was more than half of the
/// collector's ingest time.) Strict RFC 8259: one value, no trailing commas, no comments, strings
/// must be valid UTF-8, control characters escaped; nesting deeper than `maxDepth` is refused
/// instead of exhausting the stack.
enum FastJSON {
    static let maxDepth = 256

    struct Failure: Error, Sendable, Hashable {
        let code: String
        let offset: Int
    }

    static func parse(_ data: Data) throws(Failure) -> JSONValue {
        try withReader(data) { reader throws(Failure) in
            reader.skipSpace()
            let value = try reader.value(depth: 0)
            reader.skipSpace()
            guard reader.index == reader.bytes.count else { throw Failure(code: "json.trailing", offset: reader.index) }
            return value
        }
    }

    /// Runs `body` with a reader over `data`'s bytes in place (no copy; the reader must not
    /// outlive `body`).
    static func withReader<Result>(_ data: Data, _ body: (inout Reader) throws(Failure) -> Result) throws(Failure) -> Result {
        let outcome: Swift.Result<Result, Failure> = data.withUnsafeBytes { raw in
            var reader = Reader(bytes: raw.assumingMemoryBound(to: UInt8.self))
            return Swift.Result { () throws(Failure) -> Result in try body(&reader) }
        }
        return try outcome.get()
    }

    /// The tokenizer and tree builder; `EventFacts.read` drives the same tokenizer to read
    /// only the parts of an event ingest needs, so both accept and refuse exactly the same input.
    struct Reader {
        /// The document; valid only while the reader is (see `withReader`). Unchecked indexing in
        /// release builds: every access is preceded by an `index < bytes.count` check.
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func skipSpace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
                index += 1
            }
        }

        func fail(_ code: String) -> Failure { Failure(code: code, offset: index) }

        mutating func value(depth: Int) throws(Failure) -> JSONValue {
            guard depth < FastJSON.maxDepth else { throw fail("json.depth") }
            guard index < bytes.count else { throw fail("json.truncated") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default: return try number()
            }
        }

        mutating func literal(_ word: StaticString) throws(Failure) {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { throw fail("json.literal") }
            let expected = UnsafeBufferPointer(start: word.utf8Start, count: count)
            for offset in 0..<count where bytes[index + offset] != expected[offset] { throw fail("json.literal") }
            index += count
        }

        /// Members of the objects being read (innermost last), so each object's dictionary is
        /// allocated once at its final size instead of growing member by member.
        var memberStack: [(key: String, value: JSONValue)] = []
        /// Elements of the arrays being read (innermost last), for the same reason.
        var elementStack: [JSONValue] = []

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
                    index += 1
                    // A repeated key keeps its last value.
                    var members = [String: JSONValue](minimumCapacity: memberStack.count - first)
                    for position in first..<memberStack.count { members[memberStack[position].key] = memberStack[position].value }
                    return .object(members)
                }
                throw fail("json.object")
            }
        }

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

        mutating func string() throws(Failure) -> String {
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
                let end = index
                index += 1
                if ascii { return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self) }
                guard let text = String(validating: bytes[start..<end], as: UTF8.self) else { throw Failure(code: "json.utf8", offset: start) }
                return text
            }
            // An escape or a control character: the general loop, from what was read so far.
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
                    output.append(contentsOf: Array(String(Character(unicode)).utf8))
                default:
                    throw fail("json.escape")
                }
            }
            guard let text = String(validating: output, as: UTF8.self) else { throw fail("json.utf8") }
            return text
        }

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
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if isInteger, let integer = Int64(text) { return .int(integer) }
            guard let double = Double(text), double.isFinite else { throw fail("json.number") }
            return .double(double)
        }
    }
}

// Reading without building: the same grammar and checks as `value(depth:)` and its helpers
// (every string is still checked for UTF-8 and escapes, every number for syntax and finiteness,
// nesting for `maxDepth`), but nothing is allocated for what is only read past.
extension FastJSON.Reader {
    /// An object key's UTF-8 bytes: a range of the input when the key has no escapes and is
    /// ASCII (the common case, read without allocating), else the decoded key.
    enum Key {
        case input(Range<Int>)
        case decoded([UInt8])
    }

    /// Reads a key (`index` at its opening quote) with the checks of `string()`.
    mutating func key() throws(FastJSON.Failure) -> Key {
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

    /// Whether `key` is `name` (compared as UTF-8 bytes, as `String` equality of the decoded
    /// key would for these ASCII names).
    func key(_ key: Key, is name: StaticString) -> Bool {
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

    /// Reads past one value at nesting `depth`, accepting and refusing what `value(depth:)` does.
    mutating func skipValue(depth: Int) throws(FastJSON.Failure) {
        guard depth < FastJSON.maxDepth else { throw fail("json.depth") }
        guard index < bytes.count else { throw fail("json.truncated") }
        switch bytes[index] {
        case UInt8(ascii: "{"): try forEachMember(depth: depth) { reader, _, memberDepth throws(FastJSON.Failure) in try reader.skipValue(depth: memberDepth) }
        case UInt8(ascii: "["): try forEachElement(depth: depth) { reader, elementDepth throws(FastJSON.Failure) in try reader.skipValue(depth: elementDepth) }
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: _ = try number()
        }
    }

    /// Reads past a string (`index` at its opening quote) with the checks of `string()`.
    mutating func skipString() throws(FastJSON.Failure) {
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

    /// Reads the object at `index` (which must be `{`), calling `member` with each key and the
    /// depth of its value; `member` must read the value. Same grammar as `object(depth:)`; a
    /// repeated key calls `member` again, so a reader that assigns per key keeps the last value,
    /// as the tree does.
    mutating func forEachMember(depth: Int, _ member: (inout Self, Key, Int) throws(FastJSON.Failure) -> Void) throws(FastJSON.Failure) {
        index += 1
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("json.key") }
            let name = try key()
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

    /// `forEachMember` when the value at `index` is an object; any other value is skipped and no
    /// member is read (as looking a key up in a tree finds nothing in a non-object).
    mutating func forEachMemberOfObject(depth: Int, _ member: (inout Self, Key, Int) throws(FastJSON.Failure) -> Void) throws(FastJSON.Failure) {
        guard try peek(depth: depth) == UInt8(ascii: "{") else { try skipValue(depth: depth); return }
        try forEachMember(depth: depth, member)
    }

    /// The array at `index` read into one `Element` per element: each starts as `empty` and
    /// `member` fills it from the element's members (an element that is not an object stays
    /// `empty`). Any value other than an array gives none.
    mutating func objects<Element>(depth: Int, empty: Element,
                                   _ member: (inout Element, inout Self, Key, Int) throws(FastJSON.Failure) -> Void) throws(FastJSON.Failure) -> [Element] {
        guard try peek(depth: depth) == UInt8(ascii: "[") else { try skipValue(depth: depth); return [] }
        var elements: [Element] = []
        try forEachElement(depth: depth) { reader, depth throws(FastJSON.Failure) in
            var element = empty
            try reader.forEachMemberOfObject(depth: depth) { reader, key, depth throws(FastJSON.Failure) in
                try member(&element, &reader, key, depth)
            }
            elements.append(element)
        }
        return elements
    }

    /// Reads the array at `index` (which must be `[`), calling `element` with the depth of each
    /// element; `element` must read it. Same grammar as `array(depth:)`.
    mutating func forEachElement(depth: Int, _ element: (inout Self, Int) throws(FastJSON.Failure) -> Void) throws(FastJSON.Failure) {
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

    /// What is at `index` once the checks of `value(depth:)` passed: `{`, `[` or another byte.
    mutating func peek(depth: Int) throws(FastJSON.Failure) -> UInt8 {
        guard depth < FastJSON.maxDepth else { throw fail("json.depth") }
        guard index < bytes.count else { throw fail("json.truncated") }
        return bytes[index]
    }

    /// A scalar value (string, number, boolean, null) as the tree reads it; an object or array
    /// is read past and returned as `.null` (callers only ask scalars for their string, number
    /// or boolean, which an object or array does not have either).
    mutating func scalar(depth: Int) throws(FastJSON.Failure) -> JSONValue {
        let first = try peek(depth: depth)
        if first == UInt8(ascii: "{") || first == UInt8(ascii: "[") {
            try skipValue(depth: depth)
            return .null
        }
        return try value(depth: depth)
    }

    /// The value's text when it is a string (nil for anything else, which is read past).
    mutating func string(depth: Int) throws(FastJSON.Failure) -> String? {
        if try peek(depth: depth) == UInt8(ascii: "\"") { return try string() }
        try skipValue(depth: depth)
        return nil
    }

    /// The value when it is `true` or `false` (nil for anything else, which is read past).
    mutating func bool(depth: Int) throws(FastJSON.Failure) -> Bool? {
        try scalar(depth: depth).boolValue
    }
}

extension FastJSON {
    /// The value of the top-level member `name` of the JSON object `data` (the last one when
    /// repeated), built as `parse` builds it, without building the other members (they are read
    /// past with the same checks); nil when `data` is not an object or has no such member.
    /// - Throws: what `parse` throws for the same bytes.
    static func member(_ name: StaticString, of data: Data) throws(Failure) -> JSONValue? {
        try withReader(data) { reader throws(Failure) -> JSONValue? in
            reader.skipSpace()
            var found: JSONValue?
            if try reader.peek(depth: 0) == UInt8(ascii: "{") {
                try reader.forEachMember(depth: 0) { reader, key, depth throws(Failure) in
                    if reader.key(key, is: name) { found = try reader.value(depth: depth) } else { try reader.skipValue(depth: depth) }
                }
            } else {
                try reader.skipValue(depth: 0)
            }
            reader.skipSpace()
            guard reader.index == reader.bytes.count else { throw Failure(code: "json.trailing", offset: reader.index) }
            return found
        }
    }
}
