import Foundation
import Testing

import CrashShieldProtocol

/// `Envelope.parse`: item framing and the header edge cases. The headers are read by the package's
/// own JSON reader; the differential cases check it accepts and returns exactly what
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

    @Test func wholeNumberLengthWrittenWithAFractionIsALength() throws {
        let envelope = try parse("{}\n{\"type\":\"a\",\"length\":3.0}\nabc\n")
        #expect(envelope.items.first.map { String(decoding: $0.payload, as: UTF8.self) } == "abc")
        #expect(envelope.items.first?.header["length"] == .int(3))
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

    @Test func repeatedKeyKeepsTheFirstValueAsBefore() throws {
        let envelope = try parse(#"{"event_id":"first","event_id":"second"}"# + "\n" + #"{"type":"a","length":1,"length":5}"# + "\nx\n")
        #expect(envelope.header["event_id"] == "first")
        #expect(envelope.items.first?.payload == Data("x".utf8))
    }

    @Test func leniencesOfTheFormerReaderAreKept() throws {
        let envelope = try parse("\u{FEFF}{\"a\":[1,],\"b\":1e2,}\r\n")
        #expect(envelope.header == ["a": [1], "b": 100])
    }

    /// The one known difference from JSONDecoder: a number of magnitude 2^53 or more written
    /// with a fraction or exponent is the nearest Double (JSONDecoder gave an integer for some
    /// spellings and a Double for others).
    @Test func largeNumberWithAFractionIsTheNearestDouble() throws {
        let envelope = try parse(#"{"a":1.23456789012345678e17,"b":123456789012345678901e-3,"c":9007199254740992.0}"# + "\n")
        #expect(envelope.header == ["a": .double(1.23456789012345678e17), "b": .double(123456789012345678.901),
                                    "c": .double(9007199254740992)])
    }

    /// Header texts on which the old and the new reader must agree: accepted or not, and the value.
    @Test func headersReadAsJSONDecoderReadsThem() throws {
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
        var accepted = 0
        for text in texts {
            let old = try? JSONValue.parse(Data(text.utf8))
            let oldHeader = old?.objectValue
            let new = try? Envelope.parse(Data((text + "\n").utf8)).header
            #expect(new == oldHeader, "header \(text.debugDescription)")
            if oldHeader != nil { accepted += 1 }
        }
        // The generated cases must exercise acceptance, not only refusal.
        #expect(accepted > 300)
    }
}

