import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// The report format: golden examples (Schema/examples) against the schema and the model, and
/// the tolerant parser under truncation and fuzzing.
@Suite struct ReportParserTests {
    static let examples: [String] = {
        let directory = schemaDirectory + "/examples"
        return ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
            .map { "\(directory)/\($0)" }
    }()

    static func bytes(_ path: String) throws -> [UInt8] {
        [UInt8](try #require(FileManager.default.contents(atPath: path)))
    }

    @Test func goldenExamplesExist() {
        #expect(Self.examples.count >= 4)
    }

    @Test(arguments: examples)
    func goldenExampleDecodes(_ path: String) throws {
        let report = try CrashReport.decode(try Self.bytes(path))
        #expect(report.schema == "crashshield.crash-report")
        #expect(report.version == 1)
        #expect(report.isComplete)
        #expect(report.id.hasPrefix("report-"))
        #expect(report.classification != nil)
    }

    /// Every key used by an example is declared in the schema (the schema stays honest).
    @Test(arguments: examples)
    func goldenExampleKeysAreInTheSchema(_ path: String) throws {
        let schema = try JSONSerialization.jsonObject(with: Data(try Self.bytes(schemaDirectory + "/crash-report.schema.json"))) as! [String: Any]
        let example = try JSONSerialization.jsonObject(with: Data(try Self.bytes(path))) as! [String: Any]
        let properties = schema["properties"] as! [String: Any]
        for (key, value) in example {
            let declared = try #require(properties[key] as? [String: Any], "undeclared key \(key)")
            if let object = value as? [String: Any], let nested = declared["properties"] as? [String: Any] {
                for nestedKey in object.keys { #expect(nested[nestedKey] != nil, "undeclared key \(key).\(nestedKey)") }
            }
        }
    }

    @Test func exampleClassifications() throws {
        let byName = Dictionary(uniqueKeysWithValues: try Self.examples.map {
            (($0 as NSString).lastPathComponent, try CrashReport.decode(try Self.bytes($0)))
        })
        #expect(byName["signal-segv.json"]?.classification == .badAccess)
        #expect(byName["objc-exception.json"]?.classification == .objcException)
        #expect(byName["minimal-handler-crash.json"]?.minimal == true)
        #expect(byName["recovered-thread.json"]?.crash?.recovered == true)
        // The Swift trap is a trap instruction in libswiftCore: a Swift trap even unsymbolicated.
        #expect(byName["swift-trap-index.json"]?.classification == .swiftTrap)
    }

    /// A report cut at any byte still loads as soon as its id is complete, with the fields
    /// that were complete, and `isComplete` false.
    @Test func everyTruncationLoads() throws {
        let full = try Self.bytes(schemaDirectory + "/examples/signal-segv.json")
        let text = String(decoding: full, as: UTF8.self)
        let idEnd = try #require(text.range(of: "\"kind\""))
        let minimum = text.utf8.distance(from: text.startIndex, to: idEnd.lowerBound)
        var loaded = 0
        for length in stride(from: minimum, to: full.count - 2, by: 7) {
            let report = try CrashReport.decode(Array(full[0..<length]))
            #expect(!report.isComplete)
            #expect(report.id.hasPrefix("report-"))
            loaded += 1
        }
        #expect(loaded > 100)
        let prefixWithFrames = Array(full[0..<(full.count * 2 / 3)])
        let partial = try CrashReport.decode(prefixWithFrames)
        #expect(partial.crash?.signal == SIGSEGV)
        #expect((partial.crashedThread?.frames?.count ?? 0) > 0)
    }

    /// Seeded fuzzing: random truncations, byte flips, insertions and deletions never trap; the
    /// parser either returns a report or throws CrashReportError. Repaired output is valid JSON.
    @Test func fuzzedReportsNeverTrap() throws {
        var generator = SplitMix64(seed: 0x5eed_c0de)
        let corpus = try Self.examples.map { try Self.bytes($0) }
        var decoded = 0, rejected = 0
        for round in 0..<3000 {
            var bytes = corpus[round % corpus.count]
            let edits = Int(generator.next() % 8)
            for _ in 0..<edits {
                guard !bytes.isEmpty else { break }
                let at = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 4 {
                case 0: bytes[at] = UInt8(truncatingIfNeeded: generator.next())
                case 1: bytes.remove(at: at)
                case 2:
                    let tokens = Array("{}[]\",:0e-\\u\u{e9}".utf8)
                    bytes.insert(tokens[Int(generator.next() % UInt64(tokens.count))], at: at)
                default: bytes = Array(bytes[0..<at])
                }
            }
            if let repaired = TolerantJSON.repair(bytes) {
                let valid = (try? JSONSerialization.jsonObject(with: Data(repaired.bytes))) != nil
                #expect(valid, "round \(round): \(String(decoding: repaired.bytes, as: UTF8.self).prefix(3000))")
            }
            do {
                _ = try CrashReport.decode(bytes)
                decoded += 1
            } catch is CrashReportError {
                rejected += 1
            }
        }
        // Both outcomes occur, so the corpus really exercises the parser's error paths too.
        #expect(decoded > 0)
        #expect(rejected > 0)
    }

    @Test func repairClosesOpenContainers() throws {
        let cases: [(String, String?)] = [
            ("{\"a\":1,\"b\":[1,2", "{\"a\":1,\"b\":[1]}"),
            ("{\"a\":1,\"b\":[1,2 ", "{\"a\":1,\"b\":[1,2]}"),
            ("{\"a\":\"\\ud800\"}", "{}"),
            ("{\"a\":01}", "{}"),
            ("{\"a\":{\"b\":\"x", "{\"a\":{}}"),
            ("{\"a\":12", "{}"),
            ("{\"a\":true}", "{\"a\":true}"),
            ("{\"a\":\"\\u00", "{}"),
            ("garbage", nil),
            ("", nil),
        ]
        for (input, expected) in cases {
            let repaired = TolerantJSON.repair(Array(input.utf8)).map { String(decoding: $0.bytes, as: UTF8.self) }
            #expect(repaired == expected, "input \(input)")
        }
    }
}

/// A small deterministic generator so fuzz failures reproduce.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
