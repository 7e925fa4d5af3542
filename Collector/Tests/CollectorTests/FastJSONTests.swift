@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

@Suite("Collector JSON reader")
struct FastJSONTests {
    @Test func readsWhatFoundationReads() throws {
        let documents = [
            #"{"a":1,"b":-2.5,"c":"x\"y\\z\/\n\t\u00e9\ud83d\udca5","d":[true,false,null,[],{}],"e":2.5,"f":12345678901234}"#,
            #"  [ 0 , -0 , 1.0E-2 , "" ]  "#,
            #"{"ü":"naïve ☃ 💥","k":"mixed é\u0041 after an escape","plain":"ascii only"}"#,
            Fixtures.exceptionEvent().jsonData().description.isEmpty ? "" : String(decoding: Fixtures.exceptionEvent().jsonData(), as: UTF8.self),
        ]
        for document in documents {
            let fast = try FastJSON.parse(Data(document.utf8))
            let foundation = try JSONValue.parse(Data(document.utf8))
            #expect(fast == foundation, "\(document)")
        }
        #expect(try FastJSON.parse(Data(#""\ud83d\udca5""#.utf8)) == .string("\u{1F4A5}"))
        #expect(try FastJSON.parse(Data("9007199254740993".utf8)) == .int(9_007_199_254_740_993))
        #expect(try FastJSON.parse(Data("1e3".utf8)).intValue == 1000)  // an exponent makes a double; its value is still integral
    }

    @Test func refusesWhatIsNotJSON() {
        let bad: [[UInt8]] = [
            [], Array("{".utf8), Array("[1,]".utf8), Array("{\"a\" 1}".utf8), Array("01".utf8), Array("1.".utf8), Array("tru".utf8),
            Array("\"\\x\"".utf8), Array("\"\\ud800\"".utf8), Array("\"a\nb\"".utf8), [0x22, 0xFF, 0x22], Array("1 2".utf8),
            Array("// c\n1".utf8), Array(String(repeating: "[", count: 300).utf8) + Array(String(repeating: "]", count: 300).utf8),
        ]
        for bytes in bad {
            #expect(throws: FastJSON.Failure.self, "\(String(decoding: bytes, as: UTF8.self))") { try FastJSON.parse(Data(bytes)) }
        }
    }

    /// `member` (the launch-crash page reads only each event's tags with it) gives what the
    /// whole tree gives for that member, and refuses what `parse` refuses.
    @Test func oneMemberIsReadAsTheTreeReadsIt() throws {
        let documents = [
            #"{"event_id": "a", "tags": {"launch.phase": "launching", "n": 3}, "x": [1, {"tags": 2}]}"#,
            #"  {"tags": [["a", "b"], ["c", 1]], "tags": {"last": "wins"}}  "#,
            #"{"other": {"tags": {"nested": "not top-level"}}}"#,
            #"[{"tags": {"a": "b"}}]"#,
            #"{"tags": null}"#,
        ]
        for text in documents {
            let data = Data(text.utf8)
            let tree = try FastJSON.parse(data)
            let expected: JSONValue? = if case .object(let members) = tree { members["tags"] } else { nil }
            #expect(try FastJSON.member("tags", of: data) == expected, "\(text)")
        }
        for invalid in [#"{"tags": {"a": }}"#, #"{"tags": {"a": "b"}} trailing"#, #"{"x": [1, 2}"#] {
            #expect(throws: FastJSON.Failure.self) { try FastJSON.parse(Data(invalid.utf8)) }
            #expect(throws: FastJSON.Failure.self) { try FastJSON.member("tags", of: Data(invalid.utf8)) }
        }
    }
}
