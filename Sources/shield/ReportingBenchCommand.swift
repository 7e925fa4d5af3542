import CrashShieldCapture
import CrashShieldProtocol
import Foundation

/// `shield bench-reporting [--json] [--runs N]` (also the last part of `shield bench`): the
/// outbox's throughput for incident-sized envelopes (one `event` item of ~1.5 KB): N durable
/// enqueues (temporary file, fsync, rename, directory fsync) into a fresh outbox, timed one by one.
/// Prints the median and worst enqueue and the envelopes per second the median gives.
///
/// Then the start with reporting: `shield reporting-probe` children started alternately without
/// and with reporting configured (nothing pending; the DSN points at a closed loopback port, so
/// the background sends fail fast), median `start_ns` of each and the difference (goal: at most
/// 1 ms more); and the conversion of one real crash report (`shield crash segv`, decoded and
/// symbolicated beforehand) into its envelope, stored durably in an outbox (goal: at most 5 ms),
/// with the symbolication of that report (external tools) as a figure of its own. Last, the cost
/// of one breadcrumb (`breadcrumbCost`).
enum ReportingBenchCommand {
    static func run(json: Bool, runs: Int?) -> Int32 {
        // SHIELD_BENCH_FILTER (BenchFilter) selects parts by their cases' names.
        let outboxStatus = BenchFilter.selects("reporting.outbox_enqueue") ? outboxThroughput(json: json, runs: runs) : 0
        let startStatus = BenchFilter.selects("reporting.start_with_reporting_nothing_pending")
            ? startWithReporting(json: json, runs: max(3, runs ?? 20)) : 0
        let conversionStatus = BenchFilter.selects("reporting.convert_and_enqueue_crash")
            ? convertAndEnqueue(json: json, runs: max(3, runs ?? 20)) : 0
        breadcrumbCost(json: json, runs: max(5, runs ?? 50))
        return outboxStatus != 0 ? outboxStatus : startStatus != 0 ? startStatus : conversionStatus
    }

    /// What one `CrashScope.addBreadcrumb` costs the caller with 100 breadcrumbs kept (each one
    /// added drops the oldest and republishes the scope for the crash handler), for breadcrumbs
    /// of a typical size (~150 bytes of JSON, with a user, tags and contexts set) and for large
    /// ones that keep the scope at its 32 KiB cap (the oldest are left out of the published
    /// text). `runs` batches of 200 additions each; prints the median and the worst batch's cost
    /// per breadcrumb. The scope is cleared afterwards.
    static func breadcrumbCost(json: Bool, runs: Int) {
        let clock = ContinuousClock()
        let batch = 200
        for (name, messageBytes) in [("reporting.breadcrumb_add", 40), ("reporting.breadcrumb_add_full_scope", 400)]
        where BenchFilter.selects(name) {
            CrashScope.clear()
            CrashScope.setUser(CrashScope.User(id: "42", email: "ada@example.com"))
            for index in 0..<5 { CrashScope.setTag("tag\(index)", "value \(index)") }
            CrashScope.setContext("order", ["id": "A-1187", "items": "3"])
            CrashScope.setContext("app", ["build": "311", "locale": "en_GB"])
            let message = String(repeating: "tapped row ", count: messageBytes / 11 + 1).prefix(messageBytes)
            func add(_ index: Int) {
                CrashScope.addBreadcrumb(message: "\(message) \(index)", category: "ui.click", level: .info,
                                         data: ["screen": "checkout", "row": "\(index % 20)"])
            }
            for index in 0..<CrashScope.maxBreadcrumbs { add(index) }  // steady state: every add drops one
            var perBreadcrumb: [UInt64] = []
            for run in 0..<runs {
                let started = clock.now
                for index in 0..<batch { add(run * batch + index) }
                perBreadcrumb.append(nanoseconds(clock.now - started) / UInt64(batch))
            }
            let publishedBytes = CrashScope.publishedJSONForTesting.utf8.count
            perBreadcrumb.sort()
            let median = perBreadcrumb[perBreadcrumb.count / 2], worst = perBreadcrumb.last!
            if json {
                print("{\"case\": \"\(name)\", \"runs\": \(runs * batch), \"median_ns\": \(median), \"max_batch_ns\": \(worst), \"published_bytes\": \(publishedBytes)}")
            } else {
                print("\(name)  \(runs) batches of \(batch)  median \(Double(median) / 1e3) µs  worst batch \(Double(worst) / 1e3) µs per breadcrumb  (\(publishedBytes) bytes of scope published)")
            }
        }
        CrashScope.clear()
    }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let parts = duration.components
        return UInt64(max(0, parts.seconds)) * 1_000_000_000 + UInt64(max(0, parts.attoseconds / 1_000_000_000))
    }

    static func startWithReporting(json: Bool, runs: Int) -> Int32 {
        let base = NSTemporaryDirectory() + "crashshield-bench-reporting-start-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: base) }
        // A port nobody listens on: bind, read the port, close.
        let dsn = "http://0123456789abcdef0123456789abcdef@127.0.0.1:\(closedLoopbackPort())/1"
        var without: [UInt64] = [], with: [UInt64] = []
        for run in 0...runs {
            for reporting in [false, true] {
                let directory = base + (reporting ? "/with" : "/without")
                try? FileManager.default.removeItem(atPath: directory + "/outbox")  // nothing pending
                let arguments = ["reporting-probe", "--dir", directory, "--exit-flush-timeout", "0.05"] + (reporting ? ["--dsn", dsn] : [])
                let result = ChildProcess.run(ChildProcess.currentExecutable, arguments, timeout: .seconds(20))
                guard run > 0, let line = result.output.split(separator: "\n").first(where: { $0.hasPrefix("{") }),
                      let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                      let value = object["start_ns"] as? Int else { continue }
                if reporting { with.append(UInt64(value)) } else { without.append(UInt64(value)) }
            }
        }
        guard !with.isEmpty, !without.isEmpty else {
            print(json ? "{\"case\": \"reporting.start_nothing_pending\", \"error\": \"no samples\"}" : "reporting.start_nothing_pending: no samples")
            return 1
        }
        with.sort()
        without.sort()
        let medianWith = with[with.count / 2], medianWithout = without[without.count / 2]
        let added = Int64(medianWith) - Int64(medianWithout)
        if json {
            print("{\"case\": \"reporting.start_without_reporting\", \"runs\": \(without.count), \"median_ns\": \(medianWithout), \"max_ns\": \(without.last!)}")
            print("{\"case\": \"reporting.start_with_reporting_nothing_pending\", \"runs\": \(with.count), \"median_ns\": \(medianWith), \"max_ns\": \(with.last!), \"added_median_ns\": \(added), \"target_added_ns\": 1000000}")
        } else {
            print("reporting.start_without_reporting  runs \(without.count)  median \(Double(medianWithout) / 1e6) ms  max \(Double(without.last!) / 1e6) ms")
            print("reporting.start_with_reporting_nothing_pending  runs \(with.count)  median \(Double(medianWith) / 1e6) ms  max \(Double(with.last!) / 1e6) ms  added \(Double(added) / 1e6) ms (target <= 1 ms more)")
        }
        return 0
    }

    static func convertAndEnqueue(json: Bool, runs: Int) -> Int32 {
        let directory = NSTemporaryDirectory() + "crashshield-bench-reporting-convert-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = ChildProcess.run(ChildProcess.currentExecutable, ["crash", "segv", "--dir", directory], timeout: .seconds(20))
        guard let loaded = CrashCapture.pendingReports(in: directory, symbolicate: false).first, case .success(let raw) = loaded.result,
              let outbox = try? Outbox(directory: Outbox.directory(forReportDirectory: directory)),
              let options = try? ReportingOptions(dsn: "https://0123456789abcdef0123456789abcdef@example.invalid/1") else {
            print(json ? "{\"case\": \"reporting.convert_and_enqueue_crash\", \"error\": \"no report\"}" : "reporting.convert_and_enqueue_crash: no report")
            return 1
        }
        let clock = ContinuousClock()
        var symbolicated = raw
        let symbolicationStarted = clock.now
        Symbolicator.symbolicate(&symbolicated)
        let symbolication = nanoseconds(clock.now - symbolicationStarted)
        let reporter = EventReporter(options: options, installationID: "00000000-0000-4000-8000-000000000000")
        var samples: [UInt64] = []
        for _ in 0..<runs {
            let started = clock.now
            for envelope in reporter.crashEnvelopes(reports: [symbolicated], sessions: nil) { _ = try? outbox.enqueue(envelope) }
            samples.append(nanoseconds(clock.now - started))
            for entry in outbox.pending() { outbox.remove(entry) }
        }
        samples.sort()
        let median = samples[samples.count / 2], worst = samples.last!
        if json {
            print("{\"case\": \"reporting.convert_and_enqueue_crash\", \"runs\": \(samples.count), \"median_ns\": \(median), \"max_ns\": \(worst), \"target_ns\": 5000000}")
            print("{\"case\": \"reporting.symbolicate_crash\", \"runs\": 1, \"median_ns\": \(symbolication)}")
        } else {
            print("reporting.convert_and_enqueue_crash  runs \(samples.count)  median \(Double(median) / 1e6) ms  max \(Double(worst) / 1e6) ms  (target <= 5 ms; report already symbolicated)")
            print("reporting.symbolicate_crash  once  \(Double(symbolication) / 1e6) ms  (external tools, on the reporting queue)")
        }
        return 0
    }

    /// A loopback port with no listener (bound, then closed).
    static func closedLoopbackPort() -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return UInt16(bigEndian: address.sin_port)
    }

    static func outboxThroughput(json: Bool, runs: Int?) -> Int32 {
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
