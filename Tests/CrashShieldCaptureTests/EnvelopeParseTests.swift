import CrashShieldBase
import Foundation
import Testing

import CrashShieldProtocol

/// `Envelope.parse`: item framing and the header edge cases. The headers are read by the package's
/// own JSON reader as Sentry's ingestion (Relay, serde_json) reads them: trailing commas and a
/// byte order mark refused, numbers with a fraction or exponent kept as doubles, a repeated
/// declared field (`event_id`, `type`, `length`, ...) refused and of another repeated key the
/// last value kept. The differential cases check that otherwise it accepts and returns what
/// `JSONValue.parse` (JSONDecoder), the reader it replaced, does.
@Suite struct EnvelopeParseTests {
    private func parse(_ text: String) throws(Envelope.ParseError) -> Envelope {
        try Envelope.parse(Data(text.utf8))
    }

    private func errorCode(_ bytes: [UInt8]) -> String? {
        do {
            _ = try Envelope.parse(Data(bytes))
            return nil
        } catch {
            return error.code
        }
    }

    @Test func lengthPrefixedItemKeepsNewlinesInItsPayload() throws {
        let envelope = try parse("{\"event_id\":\"abc\"}\n{\"type\":\"event\",\"length\":7}\nab\ncd\ne\n{\"type\":\"session\",\"length\":2}\n{}")
        #expect(envelope.header == ["event_id": "abc"])
        #expect(envelope.items.map(\.type) == ["event", "session"])
        #expect(envelope.items.map { String(decoding: $0.payload, as: UTF8.self) } == ["ab\ncd\ne", "{}"])
    }

    @Test func itemWithoutLengthEndsAtTheNextNewlineOrTheEnd() throws {
        let envelope = try parse("{}\n{\"type\":\"a\"}\nfirst\n\n{\"type\":\"b\"}\nlast")
        #expect(envelope.header == [:])
        #expect(envelope.items.map(\.type) == ["a", "b"])
        #expect(envelope.items.map { String(decoding: $0.payload, as: UTF8.self) } == ["first", "last"])
        // An item header at the very end has an empty payload.
        let headerOnly = try parse("{}\n{\"type\":\"c\"}")
        #expect(headerOnly.items.count == 1)
        #expect(headerOnly.items[0].payload.isEmpty)
    }

    @Test func lengthErrorsHaveStableCodes() {
        #expect(errorCode(Array("{}\n{\"type\":\"a\",\"length\":10}\nabc".utf8)) == "envelope.truncated")
        #expect(errorCode(Array("{}\n{\"type\":\"a\",\"length\":2}\nabc\n".utf8)) == "envelope.length")
        #expect(errorCode(Array("{}\n{\"type\":\"a\",\"length\":-1}\nabc\n".utf8)) == "envelope.length")
        #expect(errorCode(Array("{}\n{\"type\":\"a\",\"length\":1.5}\nabc\n".utf8)) == "envelope.length")
        #expect(errorCode(Array("{}\n{\"type\":\"a\",\"length\":\"3\"}\nabc\n".utf8)) == "envelope.length")
        #expect(errorCode([]) == "envelope.empty")
    }

    /// Relay reads `length` as a u32 (serde_json): a whole number written with a fraction or an
    /// exponent, a boolean, or a number past 2^32 − 1 is no length.
    @Test(arguments: ["3.0", "3e0", "0.3e1", "true", "4294967296", "-0.0"])
    func lengthNotWrittenAsAnUnsigned32BitIntegerIsRefused(_ length: String) {
        #expect(errorCode(Array("{}\n{\"type\":\"a\",\"length\":\(length)}\nabc\n".utf8)) == "envelope.length", "\(length)")
    }

    /// `length: null` is no length (Relay's `Option<u32>`): the payload runs to the newline.
    @Test func nullLengthIsAnItemWithoutLength() throws {
        let envelope = try parse("{}\n{\"type\":\"a\",\"length\":null}\nabc\n")
        #expect(envelope.items.map { String(decoding: $0.payload, as: UTF8.self) } == ["abc"])
        // The largest u32 is a length (here beyond the data), one more is not.
        #expect(errorCode(Array("{}\n{\"type\":\"a\",\"length\":4294967295}\nabc\n".utf8)) == "envelope.truncated")
    }

    @Test func unknownKeysAreKeptWithTheirValues() throws {
        let envelope = try parse(#"{"dsn":"x","custom":{"n":[1,2.5,null,true]}}"# + "\n" + #"{"type":"weird","extra":"y","length":0}"# + "\n\n")
        #expect(envelope.header["custom"] == ["n": [1, 2.5, nil, true]])
        #expect(envelope.items.first?.type == "weird")
        #expect(envelope.items.first?.header["extra"] == "y")
        #expect(envelope.items.first?.payload.isEmpty == true)
    }

    @Test(arguments: ["[]", "\"text\"", "1", "null", "true", "{", "{\"a\":1}x", "{\"a\" 1}", ""])
    func headerThatIsNotAnObjectIsRefused(_ header: String) {
        #expect(errorCode(Array((header + "\n{\"type\":\"a\",\"length\":0}\n").utf8)) == "envelope.header")
        // As an item header; an empty line there is a tolerated blank line between items.
        #expect(errorCode(Array(("{}\n" + header + "\n").utf8)) == (header.isEmpty ? nil : "envelope.header"))
    }

    @Test func invalidUTF8InAHeaderIsRefused() {
        let bad: [UInt8] = Array(#"{"a":""#.utf8) + [0xC3, 0x28] + Array("\"}\n".utf8)
        #expect(errorCode(bad) == "envelope.header")
        #expect(errorCode(Array("{}\n".utf8) + bad) == "envelope.header")
        // Unpaired surrogate escapes and raw control characters are refused as well.
        #expect(errorCode(Array(#"{"a":"\ud800"}"#.utf8)) == "envelope.header")
        #expect(errorCode(Array("{\"a\":\"x\ty\"}".utf8)) == "envelope.header")
        // Invalid UTF-8 in a payload is the payload's business.
        #expect(errorCode(Array("{}\n{\"type\":\"a\",\"length\":1}\n".utf8) + [0xFF]) == nil)
    }

    @Test func repeatedUndeclaredKeyKeepsTheLastValueAsSentrysIngestionDoes() throws {
        let envelope = try parse(#"{"event_id":"e","x":"first","x":"second","n":{"a":1,"a":2}}"# + "\n"
                                 + #"{"type":"a","length":5,"extra":1,"extra":2,"o":{"length":1,"length":2}}"# + "\nabcde\n")
        #expect(envelope.header == ["event_id": "e", "x": "second", "n": ["a": 2]])
        #expect(envelope.items.first?.payload == Data("abcde".utf8))
        #expect(envelope.items.first?.header["extra"] == .int(2))
        #expect(envelope.items.first?.header["o"] == ["length": 2])
    }

    /// A field Relay declares, given twice in one header, is refused as serde refuses it
    /// ("duplicate field"), in the envelope header and in item headers alike.
    @Test(arguments: [
        #"{"event_id":"a","event_id":"b"}"# + "\n{\"type\":\"x\",\"length\":0}\n\n",
        #"{"dsn":"a","sdk":{},"dsn":"a"}"# + "\n",
        #"{"sent_at":"2026-01-01T00:00:00Z","sent_at":"2026-01-02T00:00:00Z"}"# + "\n",
        "{}\n" + #"{"type":"event","length":1,"length":5}"# + "\nabcde\n",
        "{}\n" + #"{"type":"event","type":"attachment","length":0}"# + "\n\n",
        "{}\n" + #"{"type":"attachment","filename":"a","filename":"b","length":0}"# + "\n\n",
    ])
    func repeatedDeclaredFieldIsRefused(_ text: String) {
        #expect(errorCode(Array(text.utf8)) == "envelope.duplicate_field", "\(text.debugDescription)")
    }

    @Test(arguments: [#"{"a":1,}"#, #"{"a":[1,]}"#, #"{"a":{"b":1,}}"#, #"{"a":[1, ] }"#, "{\"a\":1,\t}", #"{"a":[[],],"b":2}"#])
    func trailingCommaMakesAHeaderInvalid(_ header: String) {
        #expect(errorCode(Array((header + "\n{\"type\":\"a\",\"length\":0}\n").utf8)) == "envelope.header")
        #expect(errorCode(Array(("{}\n" + header.replacingOccurrences(of: #"{"a""#, with: #"{"type":"x","a""#) + "\n").utf8))
                == "envelope.header")
    }

    /// serde_json does not skip a byte order mark ("expected value"), so Relay refuses it before
    /// the envelope header and before an item header.
    @Test func byteOrderMarkBeforeAHeaderIsRefused() {
        #expect(errorCode(Array("\u{FEFF}{\"a\":[1]}\n".utf8)) == "envelope.header")
        #expect(errorCode(Array("{}\n\u{FEFF}{\"type\":\"a\",\"length\":0}\n\n".utf8)) == "envelope.header")
    }

    /// As serde_json keeps them: a number written with a fraction or an exponent is a double.
    @Test func numbersWithAFractionOrExponentStayDoubles() throws {
        let envelope = try parse("{\"a\":[1],\"b\":1e2,\"c\":3.0,\"d\":-0}\n")
        #expect(envelope.header == ["a": [1], "b": .double(100), "c": .double(3), "d": .int(0)])
    }

    /// The one known difference from JSONDecoder: a number of magnitude 2^53 or more written
    /// with a fraction or exponent is the nearest Double (JSONDecoder gave an integer for some
    /// spellings and a Double for others).
    @Test func largeNumberWithAFractionIsTheNearestDouble() throws {
        let envelope = try parse(#"{"a":1.23456789012345678e17,"b":123456789012345678901e-3,"c":9007199254740992.0}"# + "\n")
        #expect(envelope.header == ["a": .double(1.23456789012345678e17), "b": .double(123456789012345678.901),
                                    "c": .double(9007199254740992)])
    }

    /// Header texts on which the old and the new reader must agree, accepted or not and the value,
    /// except where the new one follows Sentry's ingestion: a text with a trailing comma is
    /// refused, one with a repeated key is accepted (its values are checked above), and a whole
    /// number written with a fraction or exponent is a double where JSONDecoder gave an integer
    /// (compared after mapping such doubles back).
    @Test func headersReadAsJSONDecoderReadsThemExceptTrailingCommasAndRepeatedKeys() throws {
        var texts = [
            #"{"a":1.0,"b":1e2,"c":-0,"d":1.5,"e":99999999999999999999,"f":-9223372036854775808}"#,
            #"{"a":"\u00e9\ud83d\ude00\/\\\"\b\f\n\r\t"}"#, #"{"a":01}"#, #"{"a":NaN}"#, #"{"a":1E400}"#,
            #"{"a":-}"#, #"{"a":1.}"#, #"{"a":.5}"#, #"{"a":+1}"#, #"{,}"#, #"{"a":[,]}"#, #"{"a":1,,}"#,
            #" { "a" : [ true , false , null ] } "#, #"{"a":tru}"#, #"{"a":"\x"}"#, #"{"a":"\u12"}"#,
            #"{"":0}"#, #"{"a":{"b":{"c":{}}}}"#, #"{"a":1e-400}"#, #"{"a":2.9999999999999999999,"b":1.5e1,"c":-0.0,"d":9.3e18,"e":-9007199254740991.0}"#,
        ]
        var generator = SplitMix64(seed: 0x5EED_E57E)
        let fragments = [
            "{", "}", "[", "]", ":", ",", " ", "\"k\"", "\"v\"", "\"\\u00e9\"", "1", "-2", "1.0", "2.5e3",
            "1e2", "0", "true", "false", "null", "\"a\\\"b\"", "\r", "\t",
        ]
        for _ in 0..<3000 {
            var text = ""
            for _ in 0..<Int.random(in: 1...12, using: &generator) {
                text += fragments.randomElement(using: &generator)!
            }
            texts.append(text)
            texts.append("{" + text + "}")
            texts.append("{\"k\":" + text + "}")
        }
        // Well-formed objects with, now and then, a trailing comma or a repeated key.
        func value(_ depth: Int) -> String {
            switch Int.random(in: 0...(depth < 3 ? 5 : 3), using: &generator) {
            case 0: return ["1", "-2.5", "1e2", "0"].randomElement(using: &generator)!
            case 1: return ["\"v\"", "\"\\u00e9\""].randomElement(using: &generator)!
            case 2: return ["true", "null"].randomElement(using: &generator)!
            case 3: return "\"w\""
            case 4: return container(depth + 1, object: false)
            default: return container(depth + 1, object: true)
            }
        }
        func container(_ depth: Int, object: Bool) -> String {
            let elements = (0..<Int.random(in: 0...3, using: &generator)).map { _ in
                object ? "\"\(["a", "b", "c"].randomElement(using: &generator)!)\":" + value(depth) : value(depth)
            }
            let trailing = !elements.isEmpty && Int.random(in: 0..<6, using: &generator) == 0 ? ", " : ""
            return (object ? "{" : "[") + elements.joined(separator: ",") + trailing + (object ? "}" : "]")
        }
        for _ in 0..<2000 { texts.append(container(0, object: true)) }

        var accepted = 0, trailingCommas = 0, repeatedKeys = 0
        for text in texts {
            let old = try? JSONValue.parse(Data(text.utf8))
            let oldHeader = old?.objectValue
            let new = (try? Envelope.parse(Data((text + "\n").utf8)).header)?.mapValues(Self.wholeDoublesAsIntegers)
            let shape = oldHeader == nil ? nil : Self.shape(of: text)
            if shape?.trailingComma == true {
                trailingCommas += 1
                #expect(new == nil, "trailing comma in \(text.debugDescription)")
            } else if shape?.repeatedKey == true {
                repeatedKeys += 1
                #expect(new != nil, "repeated key in \(text.debugDescription)")
            } else {
                #expect(new == oldHeader, "header \(text.debugDescription)")
                if oldHeader != nil { accepted += 1 }
            }
        }
        // The generated cases must exercise acceptance and both differences, not only refusal.
        #expect(accepted > 300)
        #expect(trailingCommas > 50)
        #expect(repeatedKeys > 20)
    }

    /// `value` with every double that JSONDecoder would have read as an integer (a whole number
    /// below 2^53 in magnitude) turned into that integer.
    private static func wholeDoublesAsIntegers(_ value: JSONValue) -> JSONValue {
        switch value {
        case .double(let number) where abs(number) < 9_007_199_254_740_992:
            return Int64(exactly: number).map(JSONValue.int) ?? value
        case .array(let items): return .array(items.map(wholeDoublesAsIntegers))
        case .object(let members): return .object(members.mapValues(wholeDoublesAsIntegers))
        default: return value
        }
    }

    /// Whether `text`, which JSONDecoder accepted, has a comma right before a closing bracket or
    /// a key repeated in one object (keys compared as written, escapes included).
    private static func shape(of text: String) -> (trailingComma: Bool, repeatedKey: Bool) {
        var trailingComma = false, repeatedKey = false
        // One frame per open container: its keys so far (nil for an array) and whether a key comes next.
        var frames: [(keys: Set<String>?, keyNext: Bool)] = []
        var previous: Character = " "
        var characters = Array(text)
        characters.removeAll { $0 == "\u{FEFF}" }
        var index = 0
        while index < characters.count {
            let character = characters[index]
            switch character {
            case "\"":
                var end = index + 1
                while characters[end] != "\"" { end += characters[end] == "\\" ? 2 : 1 }
                let token = String(characters[index...end])
                if let top = frames.last, top.keys != nil, top.keyNext {
                    if frames[frames.count - 1].keys!.insert(token).inserted == false { repeatedKey = true }
                    frames[frames.count - 1].keyNext = false
                }
                index = end
            case "{": frames.append((keys: [], keyNext: true))
            case "[": frames.append((keys: nil, keyNext: false))
            case "}", "]":
                if previous == "," { trailingComma = true }
                frames.removeLast()
            case ",": if frames.last?.keys != nil { frames[frames.count - 1].keyNext = true }
            default: break
            }
            if !character.isWhitespace { previous = character }
            index += 1
        }
        return (trailingComma, repeatedKey)
    }
}

