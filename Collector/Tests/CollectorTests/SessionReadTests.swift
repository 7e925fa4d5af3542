@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

/// Ingest reads a `session` item straight from its bytes (`SessionUpdate.read`) instead of
/// building the tree (`StrictJSON.parse`) and reading it (`SessionUpdate.parse`). Both must refuse
/// the same payloads with the same error and agree on every field of the update otherwise; these
/// tests compare them on hand-written edge cases and on random mutations of a valid session.
@Suite("Collector session reading")
struct SessionReadTests {
    static let received = Date(timeIntervalSince1970: 1_800_000_000)

    /// The outcome through the tree, with the same error for invalid JSON as ingest gives.
    static func viaTree(_ data: Data) -> Result<CollectorApp.SessionUpdate, CollectorError> {
        guard let json = try? StrictJSON.parse(data, rules: .lastKeyWins) else {
            return .failure(.badRequest("session.json", "a session item is not valid JSON"))
        }
        return Result { () throws(CollectorError) -> CollectorApp.SessionUpdate in try CollectorApp.SessionUpdate.parse(json, received: received) }
    }

    static func direct(_ data: Data) -> Result<CollectorApp.SessionUpdate, CollectorError> {
        Result { () throws(CollectorError) -> CollectorApp.SessionUpdate in try CollectorApp.SessionUpdate.read(data, received: received) }
    }

    static let valid = #"{"sid":"0f3c","did":"user-1","init":true,"seq":3,"started":"2026-11-26T00:00:00Z","timestamp":1800000100.5,"status":"crashed","errors":2,"attrs":{"release":"app@1.0","environment":"prod"}}"#

    @Test("the direct reader gives the tree's update or error on edge cases")
    func edgeCases() {
        let cases = [
            Self.valid,
            #"{"sid":"a","started":"2026-11-26T00:00:00Z","attrs":{"release":"r"}}"#,
            // Repeated keys: the last value counts, also for a whole `attrs`.
            #"{"sid":"a","sid":"b","started":1,"attrs":{"release":"r","environment":"e"},"attrs":{"release":"s"}}"#,
            #"{"sid":"a","started":1,"attrs":{"release":"r"},"attrs":[1]}"#,
            #"{"sid":"a","started":1,"attrs":{"release":"r","release":"t"},"status":"ok","status":"exited"}"#,
            // Members of other kinds than read.
            #"{"sid":"a","started":{"x":1},"attrs":{"release":"r"}}"#,
            #"{"sid":7,"started":1,"attrs":{"release":"r"}}"#,
            #"{"sid":"a","did":42,"seq":4.0,"errors":1e1,"started":1,"timestamp":"2026-11-26T00:01:00+01:00","attrs":{"release":"r"}}"#,
            #"{"sid":"a","did":[1],"seq":"3","errors":{"n":1},"started":1,"timestamp":[],"attrs":{"release":"r"}}"#,
            #"{"sid":"a","started":1,"status":"weird","attrs":{"release":"r"}}"#,
            #"{"sid":"a","started":1,"status":null,"attrs":{"release":"r","environment":null}}"#,
            #"{"sid":"","started":1,"attrs":{"release":"r"}}"#,
            #"{"s\u0069d":"a","started":1,"attrs":{"rel\u0065ase":"r"}}"#,
            // Not an object, or not JSON.
            #"["sid"]"#, #""sid""#, "null", "", " ", #"{"sid":"a",}"#, #"{"sid":"a"} x"#, #"{"sid":"a"#,
            "{\"sid\":\"\u{1}\"}", #"{"sid":"\ud800"}"#, " \n" + #"{ "sid" : "a" , "started" : 1 , "attrs" : { "release" : "r" } }"# + "\t",
        ]
        for text in cases {
            let data = Data(text.utf8)
            #expect(Self.direct(data) == Self.viaTree(data), "\(text)")
        }
        // A sanity check that the comparison compares something: the valid session is read.
        #expect((try? Self.direct(Data(Self.valid.utf8)).get())?.status == "crashed")
    }

    @Test("the direct reader gives the tree's update or error on mutated sessions")
    func mutations() {
        var random = SystemRandomNumberGenerator()
        let base = Array(Self.valid.utf8)
        let alphabet = Array(#"{}[]",:\ 0123456789.eE-+tfnul"abc"#.utf8) + [0x80, 0xC3, 0xA9, 0x01]
        for _ in 0..<3000 {
            var bytes = base
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let position = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[position] = alphabet.randomElement(using: &random)!
                case 1: bytes.remove(at: position)
                default: bytes.insert(alphabet.randomElement(using: &random)!, at: position)
                }
                if bytes.isEmpty { break }
            }
            let data = Data(bytes)
            #expect(Self.direct(data) == Self.viaTree(data), "\(String(decoding: bytes, as: UTF8.self))")
        }
    }
}
