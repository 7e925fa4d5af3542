import CrashShieldCapture
import CrashShieldProtocol
import Foundation

/// `shield bench-reporting [--json] [--runs N]` (also the last part of `shield bench`): the
/// outbox's throughput for incident-sized envelopes (one `event` item of ~1.5 KB): N durable
/// enqueues (temporary file, fsync, rename, directory fsync) into a fresh outbox, timed one by one.
/// Prints the median and worst enqueue and the envelopes per second the median gives.
enum ReportingBenchCommand {
    static func run(json: Bool, runs: Int?) -> Int32 {
        let count = max(10, runs.map { $0 * 10 } ?? 200)
        let directory = NSTemporaryDirectory() + "crashshield-bench-outbox-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outbox: Outbox
        do {
            outbox = try Outbox(directory: directory, limits: Outbox.Limits(maximumCount: count + 1, maximumBytes: 1 << 30))
        } catch {
            print(json ? "{\"case\": \"reporting.outbox_enqueue\", \"error\": \"\(error.code.rawValue)\"}" : "reporting.outbox_enqueue: \(error)")
            return 1
        }
        let event: JSONValue = [
            "level": "warning", "platform": "native", "logger": "crashshield",
            "exception": ["values": [["type": "container", "value": .string(String(repeating: "index 7 beyond bounds [0 .. 3] ", count: 20)),
                                      "mechanism": ["type": "crashshield.guard", "handled": true]]]],
            "fingerprint": ["container", "objectAtIndex:", "NSArray"],
            "tags": ["guard": "container", "policy": "neutralize"],
        ]
        let clock = ContinuousClock()
        var samples: [UInt64] = []
        samples.reserveCapacity(count)
        for index in 0..<count {
            let envelope = Envelope(header: ["event_id": .string(String(format: "%032x", index))],
                                    items: [.json(type: "event", event)])
            let started = clock.now
            do {
                try outbox.enqueue(envelope)
            } catch {
                print(json ? "{\"case\": \"reporting.outbox_enqueue\", \"error\": \"\(error.code.rawValue)\"}" : "reporting.outbox_enqueue: \(error)")
                return 1
            }
            let elapsed = (clock.now - started).components
            samples.append(UInt64(elapsed.seconds) * 1_000_000_000 + UInt64(elapsed.attoseconds / 1_000_000_000))
        }
        samples.sort()
        let median = samples[samples.count / 2], worst = samples.last!
        let perSecond = median > 0 ? 1e9 / Double(median) : 0
        if json {
            print("{\"case\": \"reporting.outbox_enqueue\", \"runs\": \(samples.count), \"median_ns\": \(median), \"max_ns\": \(worst), \"envelopes_per_second\": \(Int(perSecond))}")
        } else {
            print("reporting.outbox_enqueue  runs \(samples.count)  median \(Double(median) / 1e6) ms  max \(Double(worst) / 1e6) ms  (\(Int(perSecond)) envelopes/s, durable)")
        }
        return 0
    }
}
