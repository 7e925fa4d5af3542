import CrashShieldBase
/// Makes a JSON text that was cut short (or damaged) valid again by cutting it at the last
/// complete value and closing the open containers.
/// Kept beside `StrictJSON` (which refuses such text): a crash report can be cut off mid-write.
///
/// Contract: for any byte array, `repair` either returns nil (no complete prefix of an object or
/// array) or bytes that are valid JSON. A valid input is returned unchanged with
/// `truncated == false`. Never traps, whatever the input (fuzzed in CrashReportParserTests).
package enum TolerantJSON {
    package struct Result: Sendable {
        package let bytes: [UInt8]
        /// True when the input had to be cut.
        package let truncated: Bool
    }

    package static func repair(_ input: [UInt8]) -> Result? {
        var parser = Parser(input: input)
        if parser.parseDocument() { return Result(bytes: input, truncated: false) }
        guard let safe = parser.safePoint else { return nil }
        var output = Array(input[0..<safe.end])
        output.append(contentsOf: safe.closers.reversed())
        return Result(bytes: output, truncated: true)
    }

    private struct Parser {
        struct SafePoint {
            var end: Int
            var closers: [UInt8]
        }
        enum Failure: Error { case stop }

        let input: [UInt8]
        var position = 0
        var closers: [UInt8] = []
        var safePoint: SafePoint?
        var depth = 0

        init(input: [UInt8]) { self.input = input }

        mutating func parseDocument() -> Bool {
            do {
                skipSpace()
                guard position < input.count, input[position] == UInt8(ascii: "{") || input[position] == UInt8(ascii: "[") else {
                    return false
                }
                try parseValue()
                skipSpace()
                return position == input.count
            } catch {
                return false
            }
        }

        mutating func markSafe() { safePoint = SafePoint(end: position, closers: closers) }

        mutating func skipSpace() {
            while position < input.count, [0x20, 0x0a, 0x0d, 0x09].contains(input[position]) { position += 1 }
        }

        mutating func expect(_ byte: UInt8) throws {
            skipSpace()
            guard position < input.count, input[position] == byte else { throw Failure.stop }
            position += 1
        }

        mutating func parseValue() throws {
            skipSpace()
            guard position < input.count else { throw Failure.stop }
            switch input[position] {
            case UInt8(ascii: "{"): try parseContainer(close: UInt8(ascii: "}"), isObject: true)
            case UInt8(ascii: "["): try parseContainer(close: UInt8(ascii: "]"), isObject: false)
            case UInt8(ascii: "\""): try parseString()
            case UInt8(ascii: "t"): try parseLiteral("true")
            case UInt8(ascii: "f"): try parseLiteral("false")
            case UInt8(ascii: "n"): try parseLiteral("null")
            default: try parseNumber()
            }
        }

        mutating func parseContainer(close: UInt8, isObject: Bool) throws {
            depth += 1
            guard depth < 512 else { throw Failure.stop }
            position += 1
            closers.append(close)
            markSafe()
            skipSpace()
            if position < input.count, input[position] == close {
                position += 1
                closers.removeLast()
                depth -= 1
                return
            }
            while true {
                if isObject {
                    skipSpace()
                    guard position < input.count, input[position] == UInt8(ascii: "\"") else { throw Failure.stop }
                    try parseString()
                    try expect(UInt8(ascii: ":"))
                }
                try parseValue()
                markSafe()
                skipSpace()
                guard position < input.count else { throw Failure.stop }
                if input[position] == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                if input[position] == close {
                    position += 1
                    closers.removeLast()
                    depth -= 1
                    return
                }
                throw Failure.stop
            }
        }

        mutating func parseString() throws {
            position += 1
            while position < input.count {
                let byte = input[position]
                if byte == UInt8(ascii: "\"") {
                    position += 1
                    return
                }
                if byte < 0x20 { throw Failure.stop }
                if byte >= 0x80 {
                    position += try utf8SequenceLength(at: position)
                    continue
                }
                if byte == UInt8(ascii: "\\") {
                    guard position + 1 < input.count else { throw Failure.stop }
                    let escaped = input[position + 1]
                    if escaped == UInt8(ascii: "u") {
                        let unit = try hexUnit(at: position + 2)
                        position += 6
                        if unit >= 0xDC00 && unit <= 0xDFFF { throw Failure.stop } // lone low surrogate
                        if unit >= 0xD800 && unit <= 0xDBFF {
                            // A high surrogate must be followed by an escaped low surrogate.
                            guard position + 1 < input.count, input[position] == UInt8(ascii: "\\"),
                                  input[position + 1] == UInt8(ascii: "u") else { throw Failure.stop }
                            let low = try hexUnit(at: position + 2)
                            guard low >= 0xDC00 && low <= 0xDFFF else { throw Failure.stop }
                            position += 6
                        }
                        continue
                    }
                    guard "\"\\/bfnrt".utf8.contains(escaped) else { throw Failure.stop }
                    position += 2
                    continue
                }
                position += 1
            }
            throw Failure.stop
        }

        func hexUnit(at start: Int) throws -> UInt32 {
            guard start + 4 <= input.count else { throw Failure.stop }
            var value: UInt32 = 0
            for byte in input[start..<(start + 4)] {
                guard isHexDigit(byte), let digit = UInt32(String(UnicodeScalar(byte)), radix: 16) else { throw Failure.stop }
                value = value << 4 | digit
            }
            return value
        }

        /// Length of the well-formed UTF-8 sequence starting at `start` (a byte >= 0x80), or stop.
        func utf8SequenceLength(at start: Int) throws -> Int {
            let lead = input[start]
            let length: Int
            let minimum: UInt32
            switch lead {
            case 0xC2...0xDF: (length, minimum) = (2, 0x80)
            case 0xE0...0xEF: (length, minimum) = (3, 0x800)
            case 0xF0...0xF4: (length, minimum) = (4, 0x10000)
            default: throw Failure.stop
            }
            guard start + length <= input.count else { throw Failure.stop }
            var scalar = UInt32(lead) & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07)
            for byte in input[(start + 1)..<(start + length)] {
                guard byte & 0xC0 == 0x80 else { throw Failure.stop }
                scalar = scalar << 6 | UInt32(byte & 0x3F)
            }
            guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else { throw Failure.stop }
            return length
        }

        func isHexDigit(_ byte: UInt8) -> Bool {
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
        }

        mutating func parseLiteral(_ word: String) throws {
            for byte in word.utf8 {
                guard position < input.count, input[position] == byte else { throw Failure.stop }
                position += 1
            }
        }

        mutating func parseNumber() throws {
            let start = position
            if position < input.count, input[position] == UInt8(ascii: "-") { position += 1 }
            var digits = 0
            let firstDigit = position
            while position < input.count, input[position] >= 0x30, input[position] <= 0x39 {
                position += 1
                digits += 1
            }
            guard digits > 0, !(digits > 1 && input[firstDigit] == UInt8(ascii: "0")) else { throw Failure.stop }
            if position < input.count, input[position] == UInt8(ascii: ".") {
                position += 1
                var fraction = 0
                while position < input.count, input[position] >= 0x30, input[position] <= 0x39 {
                    position += 1
                    fraction += 1
                }
                guard fraction > 0 else { throw Failure.stop }
            }
            if position < input.count, input[position] == UInt8(ascii: "e") || input[position] == UInt8(ascii: "E") {
                position += 1
                if position < input.count, input[position] == UInt8(ascii: "+") || input[position] == UInt8(ascii: "-") { position += 1 }
                var exponent = 0
                while position < input.count, input[position] >= 0x30, input[position] <= 0x39 {
                    position += 1
                    exponent += 1
                }
                guard exponent > 0 else { throw Failure.stop }
            }
            // A number that runs to the end of the input may itself be cut short: not complete.
            if position == input.count, start < position { throw Failure.stop }
            // Out of range for a double (1e999): readers reject it, so it counts as damage.
            let text = String(decoding: input[start..<position], as: UTF8.self)
            guard let value = Double(text), value.isFinite else { throw Failure.stop }
        }
    }
}
