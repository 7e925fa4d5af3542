import CrashShieldRecording
import CrashShieldSentry
import CrashShieldProtocol
import Foundation
import CrashShieldBase

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
///
/// The splits: `reporting.start_reporting_parts` runs reporting's own steps of the start one by
/// one in fresh children (`startParts`): what stays on the start's thread and what the reporting
/// queue does once the start returned. `reporting.convert_crash_parts`: the conversion's medians
/// split into building the event, encoding the envelope and the durable enqueue, and the first
/// conversion of the process (the one a start does: cold caches) on its own.
enum ReportingBenchCommand {
    static func run(json: Bool, runs: Int?) -> Int32 {
        if let parts = ProcessInfo.processInfo.environment[startPartsVariable] { return startPartsChild(parts) }
        // SHIELD_BENCH_FILTER (BenchFilter) selects parts by their cases' names.
        let outboxStatus = BenchFilter.selects("reporting.outbox_enqueue") ? outboxThroughput(json: json, runs: runs) : 0
        let startStatus = BenchFilter.selects("reporting.start_with_reporting_nothing_pending")
            ? startWithReporting(json: json, runs: max(3, runs ?? 20)) : 0
        let partsStatus = BenchFilter.selects("reporting.start_reporting_parts")
            ? startParts(json: json, runs: max(3, runs ?? 20)) : 0
        let classesStatus = BenchFilter.selects("reporting.first_start_app_classes")
            ? firstStartWithAppClasses(json: json, runs: max(3, runs.map { $0 / 4 } ?? 5)) : 0
        let conversionStatus = BenchFilter.selects("reporting.convert_and_enqueue_crash")
            ? convertAndEnqueue(json: json, runs: max(3, runs ?? 20)) : 0
        breadcrumbCost(json: json, runs: max(5, runs ?? 50))
        return [outboxStatus, startStatus, partsStatus, classesStatus, conversionStatus].first { $0 != 0 } ?? 0
    }

    /// The first start of a process (`--objc-used-before`) with 0 and with 10,000 app classes
    /// registered before it, in children started alternately (`runs` each): what an app's one start
    /// pays for the classes it has, once-per-process work included (the system classes' list, each
    /// CS_CLASS site's first lookup). `shield bench`'s "guards start" figures are starts in a
    /// process that started the guards before. 50,000 classes are left out here: registering them
    /// takes GNU libobjc about a minute (each registration walks every class).
    static func firstStartWithAppClasses(json: Bool, runs: Int) -> Int32 {
        let base = NSTemporaryDirectory() + "crashshield-bench-reporting-classes-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: base) }
        let counts = [0, 10_000]
        let guardSteps = ["guards", "guards: owner discovery", "guards: hooks", "guards: dispatch-table writes (part of hooks)",
                          "guards: canaries"]
        var totals: [Int: [UInt64]] = [:], steps: [Int: [String: [UInt64]]] = [:]
        for run in 0...runs {
            for count in counts {
                let directory = base + "/\(count)"
                let arguments = ["reporting-probe", "--dir", directory, "--exit-flush-timeout", "0.05", "--stay-ms", "40",
                                 "--objc-used-before", "--app-classes", "\(count)"]
                guard let start = probeStart(arguments, timeout: .seconds(120)), run > 0 else { continue }
                totals[count, default: []].append(start.total)
                for (name, nanoseconds) in start.steps where guardSteps.contains(name) {
                    steps[count, default: [:]][name, default: []].append(nanoseconds)
                }
            }
        }
        func median(_ values: [UInt64]?) -> UInt64? {
            guard let sorted = values?.sorted(), !sorted.isEmpty else { return nil }
            return sorted[sorted.count / 2]
        }
        guard let start0 = median(totals[0]), let start10k = median(totals[10_000]) else {
            print(json ? "{\"case\": \"reporting.first_start_app_classes\", \"error\": \"no samples\"}"
                       : "reporting.first_start_app_classes: no samples")
            return 1
        }
        let parts = guardSteps.map { name -> (String, UInt64, UInt64) in
            (name, median(steps[0]?[name]) ?? 0, median(steps[10_000]?[name]) ?? 0)
        }
        if json {
            let fields = parts.map { "\"\($0.0)\": [\($0.1), \($0.2)]" }.joined(separator: ", ")
            print("{\"case\": \"reporting.first_start_app_classes\", \"runs\": \(runs), \"app_classes\": [0, 10000], "
                + "\"median_ns\": [\(start0), \(start10k)], \"steps_median_ns\": {\(fields)}}")
        } else {
            print(String(format: "reporting.first_start_app_classes  runs %d  one-call start, first of its process: %.3f ms, "
                + "+10000 app classes %.3f ms (%+.1f%%)", runs, Double(start0) / 1e6, Double(start10k) / 1e6,
                100 * (Double(start10k) - Double(start0)) / Double(start0)))
            for (name, zero, tenThousand) in parts {
                print("    \(name)  " + String(format: "%.3f ms, +10000 %.3f ms", Double(zero) / 1e6, Double(tenThousand) / 1e6))
            }
        }
        return 0
    }

    /// Set in a `startParts` child: "<report directory>|<DSN>".
    static let startPartsVariable = "SHIELD_BENCH_REPORTING_START_PARTS"

    /// Reporting's steps of a start, each timed, in children of their own (first use in a process,
    /// as in an app's start), nothing pending: on the start's thread the remote configuration's
    /// activation (stored document read, rule resolved), the client's creation and installation,
    /// and the hand-off of launch protection's decision (wall-clock each, and the thread's CPU
    /// time for the three: `start_thread_cpu_ns`); then, once the start has returned, the
    /// reporting queue's setup (installation id, outbox, session, transport, the session's first
    /// update stored, sending and the remote configuration fetch started). Medians of `runs`
    /// children after one discarded warm-up.
    static func startParts(json: Bool, runs: Int) -> Int32 {
        let directory = NSTemporaryDirectory() + "crashshield-bench-reporting-parts-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let dsn = "http://0123456789abcdef0123456789abcdef@127.0.0.1:\(closedLoopbackPort())/1"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let names = ["remote_config_ns", "client_ns", "hand_off_ns", "queue_setup_ns", "start_thread_cpu_ns"]
        var samples: [String: [UInt64]] = [:]
        setenv(startPartsVariable, "\(directory)|\(dsn)", 1)
        defer { unsetenv(startPartsVariable) }
        for run in 0...runs {
            try? FileManager.default.removeItem(atPath: directory + "/outbox")  // nothing pending
            let result = ChildProcess.run(ChildProcess.currentExecutable, ["bench-reporting"], timeout: .seconds(20))
            guard run > 0, let line = result.output.split(separator: "\n").first(where: { $0.hasPrefix("{") }),
                  let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { continue }
            for name in names { if let value = object[name] as? Int { samples[name, default: []].append(UInt64(value)) } }
        }
        guard names.allSatisfy({ samples[$0]?.isEmpty == false }) else {
            print(json ? "{\"case\": \"reporting.start_reporting_parts\", \"error\": \"no samples\"}" : "reporting.start_reporting_parts: no samples")
            return 1
        }
        let medians = names.map { name -> UInt64 in let sorted = samples[name]!.sorted(); return sorted[sorted.count / 2] }
        let onStartThread = medians[0] + medians[1] + medians[2]
        if json {
            let fields = zip(names, medians).map { "\"\($0)\": \($1)" }.joined(separator: ", ")
            print("{\"case\": \"reporting.start_reporting_parts\", \"runs\": \(samples[names[0]]!.count), \(fields), \"start_thread_ns\": \(onStartThread)}")
        } else {
            func ms(_ value: UInt64) -> String { "\(Double(value) / 1e6) ms" }
            print("reporting.start_reporting_parts  runs \(samples[names[0]]!.count)  on the start's thread \(ms(onStartThread)) (its CPU time \(ms(medians[4]))): remote config \(ms(medians[0])), client \(ms(medians[1])), hand-off \(ms(medians[2]))  |  reporting queue after the start: \(ms(medians[3]))")
        }
        return 0
    }

    /// CPU time of the calling thread (not counting time spent waiting for a CPU: steadier than
    /// wall-clock time on a loaded machine).
    static func threadCPUNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// The `startParts` child: the steps as `CrashCapture.start` takes them, each timed; prints one
    /// JSON line. A clean exit then ends the client (flush of at most 50 ms).
    static func startPartsChild(_ setting: String) -> Int32 {
        let parts = setting.split(separator: "|", maxSplits: 1).map(String.init)
        guard parts.count == 2, var options = try? ReportingOptions(dsn: parts[1], release: "bench@1.0") else {
            print("{\"error\": \"bad \(startPartsVariable)\"}")
            return 2
        }
        options.exitFlushTimeout = .milliseconds(50)
        let directory = parts[0]
        let clock = ContinuousClock()
        let cpuBegan = threadCPUNanoseconds()
        let began = clock.now
        ReportingClient.activateRemoteConfiguration(options, directory: directory, appVersion: "1.0")
        let activated = clock.now
        let client = ReportingClient(options: options, directory: directory, appName: "bench", appVersion: "1.0")
        _ = ReportingClient.install(client)
        let created = clock.now
        client.launchDecided(nil)
        let handedOff = clock.now
        let cpuOnStartThread = threadCPUNanoseconds() - cpuBegan
        client.beginWork()
        let idle = client.waitUntilIdle(timeout: .seconds(10))
        let setUp = clock.now
        guard idle else {
            print("{\"error\": \"reporting queue not idle after 10 s\"}")
            return 1
        }
        print("{\"remote_config_ns\": \(nanoseconds(activated - began)), \"client_ns\": \(nanoseconds(created - activated)), \"hand_off_ns\": \(nanoseconds(handedOff - created)), \"queue_setup_ns\": \(nanoseconds(setUp - handedOff)), \"start_thread_cpu_ns\": \(cpuOnStartThread)}")
        fflush(nil)
        return 0
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
        UInt64(max(0, duration.nanoseconds))
    }

    /// Runs one `shield reporting-probe` child with `arguments` and reads its start: `start_ns` and
    /// the steps in their order (`CrashShieldSDK._lastStartSteps`); nil when the child printed none.
    static func probeStart(_ arguments: [String], timeout: Duration) -> (total: UInt64, steps: [(String, UInt64)])? {
        let result = ChildProcess.run(ChildProcess.currentExecutable, arguments, timeout: timeout)
        guard let line = result.output.split(separator: "\n").first(where: { $0.hasPrefix("{") }),
              let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let value = object["start_ns"] as? Int else { return nil }
        var steps: [(String, UInt64)] = []
        for case let step as [Any] in object["steps"] as? [Any] ?? [] {
            guard step.count == 2, let name = step[0] as? String, let nanoseconds = step[1] as? Int else { continue }
            steps.append((name, UInt64(nanoseconds)))
        }
        return (UInt64(value), steps)
    }

    static func startWithReporting(json: Bool, runs: Int) -> Int32 {
        let base = NSTemporaryDirectory() + "crashshield-bench-reporting-start-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: base) }
        // A port nobody listens on: bind, read the port, close.
        let dsn = "http://0123456789abcdef0123456789abcdef@127.0.0.1:\(closedLoopbackPort())/1"
        // Each start in a new process: without reporting, with reporting (nothing pending), and
        // without reporting in a process that used Objective-C before (as an app has by then).
        enum Variant: CaseIterable { case without, with, objcUsedBefore }
        var totals: [Variant: [UInt64]] = [:]
        var stepNames: [Variant: [String]] = [:], stepSamples: [Variant: [String: [UInt64]]] = [:]
        for run in 0...runs {
            for variant in Variant.allCases {
                let directory = base + "/\(variant)"
                try? FileManager.default.removeItem(atPath: directory + "/outbox")  // nothing pending
                // Each child lives past the watchdog's first tick, so the next start reads a run
                // record and a launch state, as every launch of an app but its first does.
                let arguments = ["reporting-probe", "--dir", directory, "--exit-flush-timeout", "0.05", "--stay-ms", "40"]
                    + (variant == .with ? ["--dsn", dsn] : []) + (variant == .objcUsedBefore ? ["--objc-used-before"] : [])
                guard let start = probeStart(arguments, timeout: .seconds(20)), run > 0 else { continue }
                totals[variant, default: []].append(start.total)
                for (name, nanoseconds) in start.steps {
                    if stepSamples[variant, default: [:]][name] == nil { stepNames[variant, default: []].append(name) }
                    stepSamples[variant, default: [:]][name, default: []].append(nanoseconds)
                }
            }
        }
        guard let with = totals[.with]?.sorted(), let without = totals[.without]?.sorted(),
              let warm = totals[.objcUsedBefore]?.sorted(), !with.isEmpty, !without.isEmpty, !warm.isEmpty else {
            print(json ? "{\"case\": \"reporting.start_nothing_pending\", \"error\": \"no samples\"}" : "reporting.start_nothing_pending: no samples")
            return 1
        }
        let medianWith = with[with.count / 2], medianWithout = without[without.count / 2], medianWarm = warm[warm.count / 2]
        let added = Int64(medianWith) - Int64(medianWithout)
        if json {
            print("{\"case\": \"reporting.start_without_reporting\", \"runs\": \(without.count), \"median_ns\": \(medianWithout), \"max_ns\": \(without.last!)}")
            print("{\"case\": \"reporting.start_with_reporting_nothing_pending\", \"runs\": \(with.count), \"median_ns\": \(medianWith), \"max_ns\": \(with.last!), \"added_median_ns\": \(added), \"target_added_ns\": 1000000}")
            print("{\"case\": \"reporting.start_without_reporting_objc_used_before\", \"runs\": \(warm.count), \"median_ns\": \(medianWarm), \"max_ns\": \(warm.last!), \"target_ns\": 3000000}")
        } else {
            print("reporting.start_without_reporting  runs \(without.count)  median \(Double(medianWithout) / 1e6) ms  max \(Double(without.last!) / 1e6) ms")
            print("reporting.start_with_reporting_nothing_pending  runs \(with.count)  median \(Double(medianWith) / 1e6) ms  max \(Double(with.last!) / 1e6) ms  added \(Double(added) / 1e6) ms (target <= 1 ms more)")
            print("reporting.start_without_reporting_objc_used_before  runs \(warm.count)  median \(Double(medianWarm) / 1e6) ms  max \(Double(warm.last!) / 1e6) ms  (target <= 3 ms)")
        }
        // Where each start spends its time: the median of each step over the runs.
        for (variant, label) in [(Variant.without, "reporting.start_steps"), (.objcUsedBefore, "reporting.start_steps_objc_used_before")] {
            let medians = stepNames[variant, default: []].map { name -> (String, UInt64) in
                let sorted = stepSamples[variant, default: [:]][name, default: []].sorted()
                return (name, sorted[sorted.count / 2])
            }
            if json {
                let fields = medians.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ")
                print("{\"case\": \"\(label)\", \"median_ns\": {\(fields)}}")
            } else {
                print("\(label) (median per step; indented: parts of the line above):")
                for (name, median) in medians {
                    print("    \(name.hasPrefix("guards: ") ? "  " : "")\(name)  \(String(format: "%.3f", Double(median) / 1e6)) ms")
                }
            }
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
        // The split, the steps `crashEnvelopes` and the enqueue take: the event, its envelope
        // (JSON encoding), the durable enqueue. The first run above was the process's first
        // conversion (what a start pays: cold type metadata and conformance caches).
        let converter = CrashEventConverter(options: options)
        var eventNs: [UInt64] = [], encodeNs: [UInt64] = [], enqueueNs: [UInt64] = []
        for _ in 0..<runs {
            let started = clock.now
            var event = converter.event(from: symbolicated)
            event.user = SentryEvent.User(id: reporter.installationID)
            let converted = clock.now
            guard let envelope = try? Envelope.event(event, sdk: ReportingOptions.sdk, dsn: options.dsn) else { continue }
            let encoded = clock.now
            _ = try? outbox.enqueue(envelope)
            let stored = clock.now
            eventNs.append(nanoseconds(converted - started))
            encodeNs.append(nanoseconds(encoded - converted))
            enqueueNs.append(nanoseconds(stored - encoded))
            for entry in outbox.pending() { outbox.remove(entry) }
        }
        let first = samples[0]
        samples.sort()
        let median = samples[samples.count / 2], worst = samples.last!
        func medianOf(_ values: [UInt64]) -> UInt64 { values.isEmpty ? 0 : values.sorted()[values.count / 2] }
        let (eventMedian, encodeMedian, enqueueMedian) = (medianOf(eventNs), medianOf(encodeNs), medianOf(enqueueNs))
        if json {
            print("{\"case\": \"reporting.convert_and_enqueue_crash\", \"runs\": \(samples.count), \"median_ns\": \(median), \"max_ns\": \(worst), \"first_ns\": \(first), \"target_ns\": 5000000}")
            print("{\"case\": \"reporting.convert_crash_parts\", \"runs\": \(eventNs.count), \"event_ns\": \(eventMedian), \"encode_ns\": \(encodeMedian), \"enqueue_ns\": \(enqueueMedian)}")
            print("{\"case\": \"reporting.symbolicate_crash\", \"runs\": 1, \"median_ns\": \(symbolication)}")
        } else {
            func ms(_ value: UInt64) -> String { "\(Double(value) / 1e6) ms" }
            print("reporting.convert_and_enqueue_crash  runs \(samples.count)  median \(ms(median))  max \(ms(worst))  first of the process \(ms(first))  (target <= 5 ms; report already symbolicated)")
            print("reporting.convert_crash_parts  runs \(eventNs.count)  medians: event \(ms(eventMedian)), envelope encoding \(ms(encodeMedian)), durable enqueue \(ms(enqueueMedian))")
            print("reporting.symbolicate_crash  once  \(ms(symbolication))  (external tools, on the reporting queue)")
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
            samples.append(UInt64((clock.now - started).nanoseconds))
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
