import CrashShieldProtocol
import Foundation
import Testing

/// `StrictJSON`, the one strict reader of the SDK and the collector: what it accepts it reads as
/// Foundation does (JSONDecoder and JSONSerialization), what it refuses under each of its rules,
/// and the reading without building (`member`, `Reader`) agreeing with the tree.
@Suite("Strict JSON reader")
struct StrictJSONTests {
    static let allRules: [StrictJSON.Rules] = [.strict, .lastKeyWins, .envelopeHeader]

    @Test func readsWhatFoundationReads() throws {
        let documents = [
            #"{"a":1,"b":-2.5,"c":"x\"y\\z\/\n\t\u00e9\ud83d\udca5","d":[true,false,null,[],{}],"e":2.5,"f":12345678901234}"#,
            #"  [ 0 , -0 , 1.0E-2 , "" ]  "#,
            #"{"ü":"naïve ☃ 💥","k":"mixed é\u0041 after an escape","plain":"ascii only"}"#,
            #"{"event_id":"0123456789abcdef0123456789abcdef","exception":{"values":[{"type":"E","mechanism":{"handled":false},"#
                + #""stacktrace":{"frames":[{"function":"main","instruction_addr":"0x1000","in_app":true}]}}]},"tags":{"guard":"kvo"}}"#,
        ]
        for document in documents {
            let reference = try JSONValue.parse(Data(document.utf8))
            for rules in Self.allRules {
                #expect(try StrictJSON.parse(Data(document.utf8), rules: rules) == reference, "\(document)")
            }
            #expect(try Self.foundation(Data(document.utf8)) == Self.normalised(reference), "\(document)")
        }
        #expect(try StrictJSON.parse(Data(#""\ud83d\udca5""#.utf8), rules: .strict) == .string("\u{1F4A5}"))
        #expect(try StrictJSON.parse(Data("9007199254740993".utf8), rules: .strict) == .int(9_007_199_254_740_993))
        #expect(try StrictJSON.parse(Data("9223372036854775808".utf8), rules: .strict) == .double(9_223_372_036_854_775_808))
        // A fraction or an exponent makes a double (as serde_json reads it); its value may still be integral.
        #expect(try StrictJSON.parse(Data("[1e3, 3.0, -0]".utf8), rules: .strict) == [.double(1000), .double(3), .int(0)])
    }

    /// Not JSON under any rules (the union of what the collector's and the remote
    /// configuration's readers refused before they became this one).
    @Test func refusesWhatIsNotJSON() {
        let bad: [[UInt8]] = [
            [], Array("{".utf8), Array("[1,]".utf8), Array(#"{"a":1,}"#.utf8), Array("{\"a\" 1}".utf8), Array("01".utf8),
            Array("-01".utf8), Array("-".utf8), Array("+1".utf8), Array(".5".utf8), Array("1.".utf8), Array("1.e3".utf8),
            Array("1e".utf8), Array("1e999".utf8), Array("-1e999".utf8), Array("NaN".utf8), Array("Infinity".utf8), Array("tru".utf8),
            Array("nul".utf8), Array("\"\\x\"".utf8), Array("\"\\u12\"".utf8), Array("\"\\ud800\"".utf8), Array("\"\\udc00\"".utf8),
            Array("\"\\ud800\\u0041\"".utf8), Array("\"\\ud800x\"".utf8), Array("\"a\nb\"".utf8), Array("\"a\u{0}b\"".utf8),
            [0x22, 0xFF, 0x22], [0x22, 0xC3, 0x28, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xC3, 0x22],
            [0x22, 0x5C, 0x6E, 0xA9, 0x22], Array("\"abc".utf8), Array("1 2".utf8), Array("{} {}".utf8),
            Array("// c\n1".utf8), Array("[1 /* c */]".utf8), Array("{'a': 1}".utf8), Array("{a: 1}".utf8),
            [0xEF, 0xBB, 0xBF] + Array("{}".utf8), Array("\u{A0}1".utf8), Array("[1;2]".utf8), Array("{\"a\":1 \"b\":2}".utf8),
            Array(String(repeating: "[", count: 600).utf8) + Array(String(repeating: "]", count: 600).utf8),
        ]
        for bytes in bad {
            for rules in Self.allRules {
                #expect(throws: StrictJSON.Failure.self, "\(String(decoding: bytes, as: UTF8.self))") {
                    try StrictJSON.parse(Data(bytes), rules: rules)
                }
                #expect(throws: StrictJSON.Failure.self, "\(String(decoding: bytes, as: UTF8.self))") {
                    try StrictJSON.member("a", of: Data(bytes), rules: rules)
                }
            }
        }
    }

    /// No value deeper than `maxDepth` levels, the document being level 1: so `maxDepth` nested
    /// empty arrays pass, and a scalar inside them does not.
    @Test(arguments: [StrictJSON.Rules.strict, .lastKeyWins, .envelopeHeader])
    func nestingIsLimited(rules: StrictJSON.Rules) throws {
        func nested(_ levels: Int, _ inner: String = "") -> Data {
            Data((String(repeating: "[", count: levels) + inner + String(repeating: "]", count: levels)).utf8)
        }
        let limit = rules.maxDepth
        #expect((try? StrictJSON.parse(nested(limit), rules: rules)) != nil)
        #expect((try? StrictJSON.parse(nested(limit - 1, "1"), rules: rules)) != nil)
        #expect(throws: StrictJSON.Failure(code: "json.depth", offset: limit)) { try StrictJSON.parse(nested(limit + 1), rules: rules) }
        #expect(throws: StrictJSON.Failure(code: "json.depth", offset: limit)) { try StrictJSON.parse(nested(limit, "1"), rules: rules) }
        // Read past (not built) by `member`, with the same limit.
        let wrapped = Data(#"{"x":"#.utf8) + nested(limit) + Data("}".utf8)
        #expect(throws: StrictJSON.Failure.self) { try StrictJSON.member("a", of: wrapped, rules: rules) }
        #expect(throws: StrictJSON.Failure.self) { try StrictJSON.parse(wrapped, rules: rules) }
        let fits = Data(#"{"x":"#.utf8) + nested(limit - 1) + Data("}".utf8)
        #expect(try StrictJSON.member("a", of: fits, rules: rules) == nil)
    }

    @Test func repeatedKeysFollowTheRules() throws {
        let documents = [#"{"a": 1, "a": 2}"#, #"{"x": [{"b": 1, "c": 0, "b": 2}]}"#, #"{"\u0061": 1, "a": 2}"#,
                         "{\"\u{E9}\": 1, \"e\u{301}\": 2}"]  // canonically equivalent keys are the same `String`
        for document in documents {
            #expect(throws: StrictJSON.Failure.self, "\(document)") { try StrictJSON.parse(Data(document.utf8), rules: .strict) }
            #expect(throws: StrictJSON.Failure.self, "\(document)") { try StrictJSON.member("z", of: Data(document.utf8), rules: .strict) }
        }
        #expect(try StrictJSON.parse(Data(#"{"a": 1, "b": {"c": 0, "c": 3}, "a": 2}"#.utf8), rules: .lastKeyWins)
                == ["a": 2, "b": ["c": 3]])
        #expect(try StrictJSON.member("a", of: Data(#"{"a": 1, "a": 2}"#.utf8), rules: .lastKeyWins) == 2)

        let header = Data(#"{"type": "event", "length": 1, "x": {"y": 1, "y": 2}, "length": 2, "type": "session"}"#.utf8)
        let parsed = try header.withUnsafeBytes { raw in
            try StrictJSON.parseEnvelopeHeader(raw.assumingMemoryBound(to: UInt8.self))
        }
        #expect(parsed.value == ["type": "session", "length": 2, "x": ["y": 2]])
        #expect(parsed.repeatedKeys == ["type", "length"])  // only the outermost object's
    }

    /// `member` (the collector reads only an event's tags with it) gives what the whole tree
    /// gives for that member, and refuses what `parse` refuses.
    @Test func oneMemberIsReadAsTheTreeReadsIt() throws {
        let documents = [
            #"{"event_id": "a", "tags": {"launch.phase": "launching", "n": 3}, "x": [1, {"tags": 2}]}"#,
            #"  {"tags": [["a", "b"], ["c", 1]], "tags": {"last": "wins"}}  "#,
            #"{"other": {"tags": {"nested": "not top-level"}}}"#,
            #"[{"tags": {"a": "b"}}]"#,
            #"{"tags": null}"#,
            #"{"\u0074ags": "escaped key"}"#,
        ]
        for text in documents {
            let data = Data(text.utf8)
            let tree = try StrictJSON.parse(data, rules: .lastKeyWins)
            let expected: JSONValue? = if case .object(let members) = tree { members["tags"] } else { nil }
            #expect(try StrictJSON.member("tags", of: data, rules: .lastKeyWins) == expected, "\(text)")
        }
        for invalid in [#"{"tags": {"a": }}"#, #"{"tags": {"a": "b"}} trailing"#, #"{"x": [1, 2}"#, #"{"x": "\ud800"}"#] {
            #expect(throws: StrictJSON.Failure.self) { try StrictJSON.parse(Data(invalid.utf8), rules: .lastKeyWins) }
            #expect(throws: StrictJSON.Failure.self) { try StrictJSON.member("tags", of: Data(invalid.utf8), rules: .lastKeyWins) }
        }
    }

    // MARK: - Against Foundation's JSONSerialization

    /// A JSON value compared loosely enough for two readers: numbers as `Double` (`1` and `1.0`
    /// are one number to JSONSerialization) and equal within a relative 1e-15 (JSONSerialization
    /// on Linux can be a unit in the last place off for a 17-digit decimal, which the reader and
    /// JSONDecoder round correctly), objects as dictionaries.
    indirect enum Normal: Equatable {
        case null, bool(Bool), number(Double), string(String), array([Normal]), object([String: Normal])

        static func == (left: Normal, right: Normal) -> Bool {
            switch (left, right) {
            case (.null, .null): true
            case (.bool(let left), .bool(let right)): left == right
            case (.number(let left), .number(let right)): left == right || abs(left - right) <= abs(left) * 1e-15
            case (.string(let left), .string(let right)): left == right
            case (.array(let left), .array(let right)): left == right
            case (.object(let left), .object(let right)): left == right
            default: false
            }
        }
    }

    static func normalised(_ value: JSONValue) -> Normal {
        switch value {
        case .null: .null
        case .bool(let value): .bool(value)
        case .int(let value): .number(Double(value))
        case .double(let value): .number(value)
        case .string(let value): .string(value)
        case .array(let values): .array(values.map(normalised))
        case .object(let members): .object(members.mapValues(normalised))
        }
    }

    /// What JSONSerialization reads from `data`, or nil when it refuses it.
    static func foundation(_ data: Data) throws -> Normal? {
        guard let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else { return nil }
        func convert(_ any: Any) throws -> Normal {
            switch any {
            case is NSNull: return .null
            case let text as String: return .string(text)
            case let array as [Any]: return .array(try array.map(convert))
            case let object as [String: Any]: return .object(try object.mapValues(convert))
            case let number as NSNumber:
                // A boolean is an NSNumber of a char (`NSNumber as? Bool` also succeeds for 0 and 1).
                return String(cString: number.objCType) == "c" ? .bool(number.boolValue) : .number(number.doubleValue)
            default:
                Issue.record("unexpected \(type(of: any)) from JSONSerialization")
                return .null
            }
        }
        return try convert(object)
    }

    /// Writes random values as JSON text with random whitespace, escapes and number spellings.
    struct Writer {
        var random: SplitMix64
        var text = ""

        mutating func space() {
            for _ in 0..<Int.random(in: 0...2, using: &random) { text += [" ", "\n", "\t", "\r"].randomElement(using: &random)! }
        }

        mutating func string() {
            text += "\""
            for _ in 0..<Int.random(in: 0...8, using: &random) {
                switch Int.random(in: 0..<10, using: &random) {
                case 0: text += ["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"].randomElement(using: &random)!
                case 1: text += String(format: "\\u%04x", UInt32.random(in: 0...0xD7FF, using: &random))
                case 2: text += "\\ud83d\\ude00"
                case 3: text += ["é", "☃", "💥", "\u{301}", "\u{FFFF}"].randomElement(using: &random)!
                default:
                    let byte = UInt8.random(in: 0x20...0x7E, using: &random)
                    text += byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") ? "a" : String(UnicodeScalar(byte))
                }
            }
            text += "\""
        }

        mutating func number() {
            switch Int.random(in: 0..<6, using: &random) {
            case 0: text += String(Int64.random(in: Int64.min...Int64.max, using: &random))
            case 1: text += String(Int.random(in: -1000...1000, using: &random))
            case 2: text += String(Double.random(in: -1e6...1e6, using: &random))
            case 3: text += "\(Int.random(in: 1...9, using: &random)).\(Int.random(in: 0...999, using: &random))e\(["", "+", "-"].randomElement(using: &random)!)\(Int.random(in: 0...300, using: &random))"
            case 4: text += ["0", "-0", "0.0", "1E2", "-0.5e-3", "123456789012345678901234567890"].randomElement(using: &random)!
            default: text += String(Double.random(in: -1...1, using: &random) * 1e-300)
            }
        }

        mutating func value(depth: Int) {
            space()
            switch Int.random(in: 0..<(depth > 4 ? 6 : 8), using: &random) {
            case 0: text += "null"
            case 1: text += Bool.random(using: &random) ? "true" : "false"
            case 2, 3: number()
            case 4, 5: string()
            case 6:
                text += "["
                let count = Int.random(in: 0...4, using: &random)
                for index in 0..<count {
                    if index > 0 { text += "," }
                    value(depth: depth + 1)
                }
                space()
                text += "]"
            default:
                text += "{"
                let keys = Set((0..<Int.random(in: 0...4, using: &random)).map { _ in "k\(Int.random(in: 0...20, using: &random))" })
                for (index, key) in keys.enumerated() {
                    if index > 0 { text += "," }
                    space()
                    text += "\"\(key)\""
                    space()
                    text += ":"
                    value(depth: depth + 1)
                }
                space()
                text += "}"
            }
            space()
        }
    }

    /// On generated valid documents the reader and JSONSerialization read the same value; on
    /// random mutations of them, whatever the reader accepts JSONSerialization accepts and reads
    /// the same way (the converse does not hold: JSONSerialization also takes a byte order mark,
    /// and keeps a value of a repeated key).
    @Test(arguments: [UInt64(1), 2, 3])
    func agreesWithJSONSerialization(seed: UInt64) throws {
        var writer = Writer(random: SplitMix64(seed: seed))
        var mutatedAccepted = 0
        for round in 0..<300 {
            writer.text = ""
            writer.value(depth: 0)
            let bytes = Array(writer.text.utf8)
            let strict = try StrictJSON.parse(Data(bytes), rules: .strict)
            #expect(try Self.foundation(Data(bytes)) == Self.normalised(strict), "seed \(seed) round \(round): \(writer.text)")
            #expect(Self.normalised(try JSONValue.parse(Data(bytes))) == Self.normalised(strict), "\(writer.text)")

            var mutated = bytes
            for _ in 0..<Int.random(in: 1...2, using: &writer.random) where !mutated.isEmpty {
                let position = Int.random(in: 0..<mutated.count, using: &writer.random)
                switch Int.random(in: 0..<4, using: &writer.random) {
                case 0: mutated[position] = UInt8.random(in: 0...255, using: &writer.random)
                case 1: mutated.insert(Array("{}[],:\"\\ 0e-.tfnu".utf8).randomElement(using: &writer.random)!, at: position)
                case 2: mutated.remove(at: position)
                default: mutated = Array(mutated.prefix(position))
                }
            }
            for rules in Self.allRules {
                guard let accepted = try? StrictJSON.parse(Data(mutated), rules: rules) else { continue }
                if rules == .strict {
                    mutatedAccepted += 1
                    #expect(try Self.foundation(Data(mutated)) == Self.normalised(accepted),
                            "seed \(seed) round \(round) mutated: \(String(decoding: mutated, as: UTF8.self))")
                }
            }
        }
        #expect(mutatedAccepted > 10, "only \(mutatedAccepted) mutated documents were valid JSON")
    }
}
