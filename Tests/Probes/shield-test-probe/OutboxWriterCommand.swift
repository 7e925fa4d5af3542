import CrashShieldSentry
import CrashShieldProtocol
import Foundation

/// `shield-test-probe outbox-writer --dir D [--count N] [--first F]`: enqueues envelopes numbered F, F+1, ...
/// into D's outbox (caps high enough that nothing is dropped), printing `ACK <n>` after each one is
/// durable. The outbox's kill -9 test kills it at random moments. Each envelope has one `event`
/// item whose payload is `{"seq": n, "fill": "..."}` (a length varying with n) and whose header
/// carries `seq` and `fnv1a` (the FNV-1a 64 hash of the payload, hex), so a reader can tell a
/// complete entry from a damaged one.
enum OutboxWriterCommand {
    static func run(directory: String, count: Int?, first: Int) -> Int32 {
        let outbox: Outbox
        do {
            outbox = try Outbox(directory: Outbox.directory(forReportDirectory: directory),
                                limits: Outbox.Limits(maximumCount: 1_000_000, maximumBytes: 1 << 40))
        } catch {
            FileHandle.standardError.write(Data("outbox-writer: \(error)\n".utf8))
            return 2
        }
        var sequence = first
        while count.map({ sequence - first < $0 }) ?? true {
            let fill = String(repeating: "abcdefghijklmnopqrstuvwxyz"[sequence % 26], count: (sequence * 977) % 20_000)
            let payload = JSONValue.object(["seq": .int(Int64(sequence)), "fill": .string(fill)]).jsonData()
            let item = Envelope.Item(type: "event", payload: payload,
                                     header: ["seq": .int(Int64(sequence)), "fnv1a": .string(fnv1a(payload))])
            do {
                try outbox.enqueue(Envelope(header: ["event_id": .string(String(format: "%032x", sequence))], items: [item]))
            } catch {
                FileHandle.standardError.write(Data("outbox-writer: \(error)\n".utf8))
                return 1
            }
            print("ACK \(sequence)")
            fflush(nil)
            sequence += 1
        }
        return 0
    }

    static func fnv1a(_ data: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return String(format: "%016llx", hash)
    }
}

private extension String {
    subscript(_ index: Int) -> Character { self[self.index(startIndex, offsetBy: index)] }
}
