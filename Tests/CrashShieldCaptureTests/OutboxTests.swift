import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// The outbox: durable, ordered, capped with counted drops, no `sent_at`,
/// and nothing lost or corrupt when its writer is killed with SIGKILL at random moments.
@Suite struct OutboxTests {
    func envelope(_ number: Int, filler: Int = 10) -> Envelope {
        Envelope(header: ["event_id": .string(String(format: "%032x", number)), "sent_at": "2026-01-01T00:00:00Z"],
                 items: [.json(type: "event", ["n": .int(Int64(number)), "fill": .string(String(repeating: "x", count: filler))])])
    }

    func number(_ envelope: Envelope) throws -> Int64? {
        try JSONValue.parse(envelope.items[0].payload)["n"]?.intValue
    }

    @Test func entriesAreListedOldestFirstWithoutSentAt() throws {
        let directory = temporaryDirectory("outbox-order")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outbox = try Outbox(directory: directory)
        for index in 0..<5 { try outbox.enqueue(envelope(index)) }
        let entries = outbox.pending()
        #expect(try entries.map { try number(outbox.load($0)) } == [0, 1, 2, 3, 4])
        for entry in entries {
            #expect(try outbox.load(entry).header["sent_at"] == nil)
            #expect(try !String(decoding: Data(contentsOf: URL(fileURLWithPath: entry.path)), as: UTF8.self).contains("sent_at"))
        }
        outbox.remove(entries[1])
        #expect(try outbox.pending().map { try number(outbox.load($0)) } == [0, 2, 3, 4])
        // Another instance on the same directory (the next launch) sees the same entries.
        #expect(try Outbox(directory: directory).pending().map(\.name) == outbox.pending().map(\.name))
    }

    @Test func countCapDropsTheOldestAndCountsThem() throws {
        let directory = temporaryDirectory("outbox-count-cap")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outbox = try Outbox(directory: directory, limits: Outbox.Limits(maximumCount: 3))
        for index in 0..<5 { try outbox.enqueue(envelope(index)) }
        #expect(try outbox.pending().map { try number(outbox.load($0)) } == [2, 3, 4])
        #expect(outbox.pendingDiscards() == [Outbox.DiscardKey(reason: "cache_overflow", category: "error"): 2])
        // The counts are kept on disk.
        #expect(try Outbox(directory: directory).pendingDiscards() == outbox.pendingDiscards())
    }

    @Test func byteCapDropsTheOldestAndRefusesAnEnvelopeLargerThanTheCap() throws {
        let directory = temporaryDirectory("outbox-byte-cap")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outbox = try Outbox(directory: directory, limits: Outbox.Limits(maximumCount: 100, maximumBytes: 3000))
        for index in 0..<4 { try outbox.enqueue(envelope(index, filler: 900)) }
        let entries = outbox.pending()
        #expect(entries.reduce(0) { $0 + $1.byteCount } <= 3000)
        #expect(try entries.map { try number(outbox.load($0)) } == [1, 2, 3])
        #expect(throws: OutboxError.self) { try outbox.enqueue(envelope(9, filler: 5000)) }
        do {
            try outbox.enqueue(envelope(9, filler: 5000))
        } catch OutboxError.tooLarge {
            // matched by code
        } catch {
            Issue.record("unexpected error \(error)")
        }
        #expect(outbox.pending().count == 3)
        #expect(outbox.pendingDiscards()[Outbox.DiscardKey(reason: "cache_overflow", category: "error")] == 3)
    }

    @Test func envelopeWithoutItemsIsRefused() throws {
        let directory = temporaryDirectory("outbox-empty")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outbox = try Outbox(directory: directory)
        do {
            try outbox.enqueue(Envelope(header: ["event_id": "x"], items: []))
            Issue.record("an envelope without items was stored")
        } catch {
            #expect(error.code == .empty)
        }
        #expect(outbox.pending().isEmpty)
    }

    @Test func temporaryFilesAreIgnoredAndThoseOfDeadWritersRemoved() throws {
        let directory = temporaryDirectory("outbox-temporary")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outbox = try Outbox(directory: directory)
        try outbox.enqueue(envelope(1))
        // A half-written file of a writer that no longer runs.
        let deadPid = Int32.max - 7  // above pid_max: no such process
        let orphan = "\(directory)/.tmp-\(deadPid)-1"
        try Data("{\"event_id\":\"abc\"}\n{\"type\":\"ev".utf8).write(to: URL(fileURLWithPath: orphan))
        #expect(outbox.pending().count == 1)
        _ = try Outbox(directory: directory)
        #expect(!FileManager.default.fileExists(atPath: orphan))
        #expect(outbox.pending().count == 1)
    }

    @Test func discardCountsAddAndSubtract() throws {
        let directory = temporaryDirectory("outbox-discards")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outbox = try Outbox(directory: directory)
        let error = Outbox.DiscardKey(reason: "send_error", category: "error")
        let session = Outbox.DiscardKey(reason: "ratelimit_backoff", category: "session")
        outbox.recordDiscards([(error, 2), (session, 1), (error, 1)])
        #expect(outbox.pendingDiscards() == [error: 3, session: 1])
        outbox.subtractDiscards([error: 3])
        #expect(outbox.pendingDiscards() == [session: 1])
        let item = Outbox.clientReportItem(outbox.pendingDiscards())
        #expect(item.type == "client_report")
        #expect(try JSONValue.parse(item.payload)["discarded_events"] == [["reason": "ratelimit_backoff", "category": "session", "quantity": 1]])
    }

    /// A writer child (`shield-test-probe outbox-writer`) is killed with SIGKILL at random moments, 25 times,
    /// each time continuing in the same outbox. Every envelope the writer acknowledged before the
    /// kill is present, and every entry is complete and intact (its payload's hash matches): lost
    /// and corrupt are both 0.
    @Test func killedWriterLosesNothingAndLeavesNothingCorrupt() throws {
        let directory = temporaryDirectory("outbox-kill9")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var generator = SystemRandomNumberGenerator()
        var acknowledged = Set<Int64>()
        for round in 0..<25 {
            // Each round numbers its envelopes from round × 1,000,000.
            let child = try Child(Built.testProbe, ["outbox-writer", "--dir", directory, "--first", "\(round * 1_000_000)"])
            // The first acknowledgement shows the writer is running; then a random moment.
            #expect(child.waitForOutput(containing: "ACK ", timeout: 30), "round \(round): the writer never wrote")
            usleep(UInt32.random(in: 0...40_000, using: &generator))
            kill(child.process.processIdentifier, SIGKILL)
            let result = child.wait(timeout: 30)
            #expect(result.termination == .signaled(SIGKILL), "round \(round): \(result.termination)")
            let numbers = result.output.split(separator: "\n").compactMap { line -> Int64? in
                line.hasPrefix("ACK ") ? Int64(line.dropFirst(4)) : nil
            }
            acknowledged.formUnion(numbers)
        }
        let outbox = try Outbox(directory: Outbox.directory(forReportDirectory: directory),
                                limits: Outbox.Limits(maximumCount: 1_000_000, maximumBytes: 1 << 40))
        var corrupt: [String] = []
        var present = Set<Int64>()
        for entry in outbox.pending() {
            guard let envelope = try? outbox.load(entry), envelope.items.count == 1,
                  let sequence = envelope.items[0].header["seq"]?.intValue,
                  envelope.items[0].header["fnv1a"]?.stringValue == OutboxWriterHash.fnv1a(envelope.items[0].payload),
                  try JSONValue.parse(envelope.items[0].payload)["seq"]?.intValue == sequence else {
                corrupt.append(entry.name)
                continue
            }
            present.insert(sequence)
        }
        let lost = acknowledged.subtracting(present)
        #expect(acknowledged.count >= 25)
        #expect(lost.isEmpty, "acknowledged \(acknowledged.count), lost \(lost.count): \(lost.sorted().prefix(10))")
        #expect(corrupt.isEmpty, "corrupt: \(corrupt)")
        // No temporary file survives the next open (the writers are dead).
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: outbox.directory).filter { $0.hasPrefix(".tmp-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }
}

/// The same FNV-1a 64 as `shield-test-probe outbox-writer` (an independent copy, so a change there shows here).
enum OutboxWriterHash {
    static func fnv1a(_ data: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return String(format: "%016llx", hash)
    }
}

/// How the outbox makes its directory (mkdir/chmod when only the last component is missing,
/// FileManager when parents are missing too): the same result either way.
@Suite struct OutboxDirectoryTests {
    func mode(_ path: String) -> mode_t {
        var status = stat()
        guard stat(path, &status) == 0 else { return 0 }
        return status.st_mode & 0o777
    }

    @Test func aMissingDirectoryIsCreatedPrivateWithOrWithoutParents() throws {
        let base = temporaryDirectory("outbox-mkdir")
        defer { try? FileManager.default.removeItem(atPath: base) }
        let direct = base + "/outbox"
        _ = try Outbox(directory: direct)
        #expect(mode(direct) == 0o700)
        let nested = base + "/a/b/outbox"
        _ = try Outbox(directory: nested)
        #expect(mode(nested) == 0o700)
        // An existing directory is used as it is (FileManager never changed its mode either).
        let existing = base + "/existing"
        #expect(mkdir(existing, 0o755) == 0)
        #expect(chmod(existing, 0o755) == 0)
        _ = try Outbox(directory: existing)
        #expect(mode(existing) == 0o755)
    }

    @Test func aFileInTheWayIsRefused() throws {
        let base = temporaryDirectory("outbox-file")
        defer { try? FileManager.default.removeItem(atPath: base) }
        let file = base + "/outbox"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        var code: OutboxError.Code?
        do { _ = try Outbox(directory: file) } catch { code = error.code }
        #expect(code == .directoryUnavailable)
        #expect(FileManager.default.contents(atPath: file) == Data("x".utf8))
    }
}
