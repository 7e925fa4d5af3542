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
        let bytes = [UInt8](data)
        var reader = Reader(bytes: bytes)
        reader.skipSpace()
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.index == bytes.count else { throw Failure(code: "json.trailing", offset: reader.index) }
        return value
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

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
                if ascii { return bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[start..<end]), as: UTF8.self) } }
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
