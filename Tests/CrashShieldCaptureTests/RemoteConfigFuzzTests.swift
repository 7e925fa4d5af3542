import CrashShieldBase
import Foundation
import Testing

import CrashShieldProtocol

/// The parser under mutated input: byte flips, truncations, deleted and repeated spans, and
/// structural mutations (a value swapped for one of another type, a key removed or added).
/// It must never crash, and every document it accepts must serialise and parse back equal.
@Suite struct RemoteConfigFuzzTests {
    private static let seeds: [String] = [
        specExampleDocument,
        #"{"version": 0}"#,
        """
        {"version": 12, "issued_at": "2026-01-02T03:04:05.678+01:00", "rules": [
          {"when": {"app_version": "!=1.0, >0.9-beta.1", "arch": "x86_64"}, "guards": {"kvo": "off", "selector": "reportOnly"}},
          {"when": {}, "incident_sample_rate": 1, "capture": false, "deny_class_prefixes": ["NS", "UI"]},
          {"guards": {"mainthread": "neutralize", "future_guard": "off"}, "extra": {"nested": [1, 2, {"x": null}]}}]}
        """,
    ]

    /// A JSON value of a randomly chosen type (the replacement in a type swap).
    private static func randomValue(_ random: inout SplitMix64) -> JSONValue {
        switch Int.random(in: 0..<11, using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .int(Int64.random(in: -3...20, using: &random))
        case 3: return .double(Double.random(in: -2...2, using: &random))
        case 4: return .string(["", "off", "neutralize", "reportOnly", ">=1.2", "=2, <3", "iOS", "2026-11-23T06:00:00Z", "x"]
            .randomElement(using: &random)!)
        case 5: return .array([])
        case 6: return .array([.string("MY"), .int(1)])
        case 7: return .array([.string("MY")])
        case 8: return .object([:])
        case 9: return .object(["when": .object([:])])
        default: return .double(Double.random(in: 0...1, using: &random))
        }
    }

    /// `value` with one randomly chosen node replaced, removed or extended.
    private static func mutate(_ value: JSONValue, _ random: inout SplitMix64, depth: Int = 0) -> JSONValue {
        let descend = depth < 6 && Int.random(in: 0..<3, using: &random) > 0
        switch value {
        case .object(var members) where !members.isEmpty:
            let key = members.keys.sorted().randomElement(using: &random)!
            if descend {
                members[key] = mutate(members[key]!, &random, depth: depth + 1)
            } else {
                switch Int.random(in: 0..<3, using: &random) {
                case 0: members[key] = nil
                case 1: members["unknown_\(Int.random(in: 0..<3, using: &random))"] = randomValue(&random)
                default: members[key] = randomValue(&random)
                }
            }
            return .object(members)
        case .array(var items) where !items.isEmpty:
            let index = Int.random(in: 0..<items.count, using: &random)
            if descend {
                items[index] = mutate(items[index], &random, depth: depth + 1)
            } else if Bool.random(using: &random) {
                items.remove(at: index)
            } else {
                items.insert(randomValue(&random), at: index)
            }
            return .array(items)
        default:
            return randomValue(&random)
        }
    }

    /// `bytes` with a byte-level mutation.
    private static func mutate(bytes: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        var bytes = bytes
        guard !bytes.isEmpty else { return [UInt8.random(in: 0...255, using: &random)] }
        let position = Int.random(in: 0..<bytes.count, using: &random)
        switch Int.random(in: 0..<5, using: &random) {
        case 0:
            bytes[position] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &random)
        case 1:
            bytes.removeSubrange(position...)
        case 2:
            let end = min(bytes.count, position + Int.random(in: 1...8, using: &random))
            bytes.removeSubrange(position..<end)
        case 3:
            let end = min(bytes.count, position + Int.random(in: 1...16, using: &random))
            bytes.insert(contentsOf: bytes[position..<end], at: position)
        default:
            let tokens = ["{", "}", "[", "]", ",", ":", "\"", "null", "-", "1e400", "\\u0000", "\u{FF}"]
            bytes.insert(contentsOf: Array(tokens.randomElement(using: &random)!.utf8), at: position)
        }
        return bytes
    }

    /// Numbers as doubles (JSONDecoder reads "1.0" as an integer, the strict reader as a double).
    private static func normalised(_ value: JSONValue) -> JSONValue {
        switch value {
        case .int(let number): return .double(Double(number))
        case .array(let items): return .array(items.map(normalised))
        case .object(let members): return .object(members.mapValues(normalised))
        default: return value
        }
    }

    @Test func mutatedDocumentsNeverCrashAndAcceptedOnesRoundTrip() throws {
        var random = SplitMix64(seed: 0x5EED_2026_1126)
        let parsedSeeds = try Self.seeds.map { try JSONValue.parse(Data($0.utf8)) }
        var accepted = 0, rejected = 0, strictAccepted = 0
        let cases = 6000
        for index in 0..<cases {
            let seed = Self.seeds[index % Self.seeds.count]
            let input: Data
            if index % 2 == 0 {
                var bytes = Array(seed.utf8)
                for _ in 0..<Int.random(in: 1...3, using: &random) { bytes = Self.mutate(bytes: bytes, &random) }
                input = Data(bytes)
            } else {
                var value = parsedSeeds[index % Self.seeds.count]
                for _ in 0..<Int.random(in: 1...3, using: &random) { value = Self.mutate(value, &random) }
                input = value.jsonData()
            }
            // What the strict reader the parser uses accepts, JSONDecoder (JSONValue.parse) reads
            // as the same value. (The converse does not hold: JSONDecoder also takes trailing
            // commas and repeated keys, which the strict reader refuses.)
            if let strict = try? JSONValue.parseStrict(input) {
                strictAccepted += 1
                let reference = try? JSONValue.parse(input)
                #expect(reference.map(Self.normalised) == Self.normalised(strict),
                        "case \(index): \(String(decoding: input, as: UTF8.self))")
            }
            let result: RemoteConfigParseResult
            do {
                result = try RemoteConfigDocument.parse(input)
            } catch {
                rejected += 1
                #expect(error.code.hasPrefix("remote_config."), "case \(index): \(error)")
                #expect(error.path.hasPrefix("$"), "case \(index): \(error)")
                continue
            }
            accepted += 1
            let reserialised = result.document.jsonData()
            let again = try RemoteConfigDocument.parse(reserialised)
            #expect(again.document == result.document,
                    "case \(index): \(String(decoding: input, as: UTF8.self)) → \(String(decoding: reserialised, as: UTF8.self))")
            #expect(again.warnings.isEmpty, "the serialiser writes only known fields (case \(index))")
        }
        // Both paths were exercised (a fuzzer that only produces garbage, or nothing but valid
        // documents, would prove little).
        #expect(accepted > cases / 20, "accepted \(accepted) of \(cases)")
        #expect(rejected > cases / 20, "rejected \(rejected) of \(cases)")
        #expect(strictAccepted >= accepted)
    }

    /// Version constraints and versions from random text: parsing never crashes, an accepted
    /// constraint parses back equal from its text, versions are totally ordered and the
    /// operators are complements (">=" is not "<", ">" is not "<=", "=" is not "!=").
    @Test func randomConstraintTextNeverCrashesAndAcceptedOnesAreConsistent() throws {
        var random = SplitMix64(seed: 0xC0_25_7A_1E)
        let alphabet = Array(">=<!, .0123456789-+abz")
        var accepted = 0, rejected = 0
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...14, using: &random)
            let text = String((0..<length).map { _ in alphabet.randomElement(using: &random)! })
            let candidate = String((0..<Int.random(in: 1...7, using: &random)).map { _ in Array("0123456789.-ab").randomElement(using: &random)! })
            guard let constraint = try? VersionConstraint(text) else {
                rejected += 1
                continue
            }
            accepted += 1
            #expect(try VersionConstraint(constraint.text) == constraint, "\(text)")
            guard let version = DottedVersion(candidate) else {
                #expect(!constraint.matches(candidate), "\(candidate) is not a version, so nothing matches it")
                continue
            }
            // The order is total and the operators are complements of each other.
            let bound = constraint.clauses[0].version
            #expect([version < bound, version == bound, bound < version].filter { $0 }.count == 1, "\(version) vs \(bound)")
            func holds(_ op: VersionConstraint.Operator) -> Bool { VersionConstraint.Clause(op: op, version: bound).matches(version) }
            #expect(holds(.greaterOrEqual) != holds(.less), "\(version) vs \(bound)")
            #expect(holds(.greater) != holds(.lessOrEqual), "\(version) vs \(bound)")
            #expect(holds(.equal) != holds(.notEqual), "\(version) vs \(bound)")
        }
        #expect(accepted > 500, "accepted \(accepted)")
        #expect(rejected > 500, "rejected \(rejected)")
    }
}
