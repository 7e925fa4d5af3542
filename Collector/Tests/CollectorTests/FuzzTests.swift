import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

/// A small deterministic generator (SplitMix64), so a failing input can be reproduced from its seed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("Collector envelope fuzzing")
struct FuzzTests {
    /// Mutations of valid envelopes (bytes flipped, inserted, deleted, truncated, lengths changed)
    /// are each answered 200, 400 or 413, never a server error, and the collector keeps working.
    @Test(arguments: [UInt64(1), 2, 3])
    func mutatedEnvelopesAreAnsweredWithoutServerErrors(seed: UInt64) async throws {
        try await Harness.run { harness in
            var random = SeededGenerator(state: seed)
            let session: Envelope.Item = .json(type: "session", ["sid": "s", "started": "2026-01-01T00:00:00Z", "status": "ok", "attrs": ["release": "r@1"]])
            let attachment = Envelope.Item(type: "attachment", payload: Data("abc\ndef".utf8), header: ["filename": "a.txt"])
            let seeds: [[UInt8]] = [
                Fixtures.envelope(event: Fixtures.exceptionEvent()),
                Fixtures.envelope(event: Fixtures.exceptionEvent(), extra: [session, attachment]),
                Array("{}\n{\"type\":\"event\"}\n{\"message\":\"x\"}".utf8),
            ]
            var statuses: [Int: Int] = [:]
            for round in 0..<120 {
                var bytes = seeds[Int.random(in: 0..<seeds.count, using: &random)]
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    guard !bytes.isEmpty else { break }
                    let position = Int.random(in: 0..<bytes.count, using: &random)
                    switch Int.random(in: 0..<6, using: &random) {
                    case 0: bytes[position] = UInt8.random(in: 0...255, using: &random)
                    case 1: bytes.insert(UInt8.random(in: 0...255, using: &random), at: position)
                    case 2: bytes.remove(at: position)
                    case 3: bytes = Array(bytes.prefix(position))
                    case 4: bytes.insert(contentsOf: Array("\n".utf8), at: position)
                    default: bytes.insert(contentsOf: Array("{\"type\":\"event\",\"length\":999999}\n".utf8), at: position)
                    }
                }
                let response = try await harness.post(body: bytes)
                statuses[response.status, default: 0] += 1
                #expect([200, 400, 413].contains(response.status), "seed \(seed) round \(round): \(response.status) \(response.text)")
            }
            #expect(statuses[400, default: 0] > 0)
            let after = try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent(type: "AfterFuzz")))
            #expect(after.status == 200)
            #expect(try await harness.client.execute("/health").status == 200)
        }
    }
}
