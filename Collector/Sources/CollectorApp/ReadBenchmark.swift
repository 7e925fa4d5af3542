import CrashShieldProtocol
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// One page's render times in `shield-collector bench --fill`.
public struct PageTiming: Sendable {
    public let name: String
    public let path: String
    public let loads: Int
    public let medianMilliseconds: Double
    public let p95Milliseconds: Double
    public let bytes: Int
}

/// What `shield-collector bench --fill N` measured: the pages' render times on a database of N
/// events, and the ingest rate over HTTP alone and while one user reloads the heaviest page.
public struct ReadBenchmarkReport: Sendable {
    public let database: String
    /// Events stored when the pages were measured.
    public let storedEvents: Int
    /// Events this run added to reach the fill target, and the seconds it took (0: none added).
    public let filledEvents: Int
    public let fillSeconds: Double
    public let pages: [PageTiming]
    public let ingestEvents: Int
    public let concurrency: Int
    public let ingestAlonePerSecond: Double
    public let ingestWhileReadingPerSecond: Double
    /// The page the reader reloaded (the slowest by median), its loads during the ingest and their times.
    public let readerPage: String
    public let readerLoads: Int
    public let readerMedianMilliseconds: Double
    public let readerP95Milliseconds: Double
    public let loadAverage: String?

    /// The share of the ingest rate lost while the user reads, in percent (negative: none lost).
    public var lossPercent: Double { (1 - ingestWhileReadingPerSecond / ingestAlonePerSecond) * 100 }

    public var description: String {
        func ms(_ value: Double) -> String { String(format: value < 10 ? "%.1f" : "%.0f", value) }
        var lines = ["database: \(database), \(storedEvents) events stored"]
        if filledEvents > 0 {
            lines.append("filled: \(filledEvents) events in \(String(format: "%.0f", fillSeconds)) s (\(String(format: "%.0f", Double(filledEvents) / max(fillSeconds, 1e-9))) events/s, in process, group commit)")
        }
        lines.append("page render times over HTTP (a logged-in session, \(pages.first?.loads ?? 0) loads each after one warm-up): median / p95")
        for page in pages {
            lines.append("  \(page.name.padding(toLength: 26, withPad: " ", startingAt: 0)) \(ms(page.medianMilliseconds).leftPadded(6)) / \(ms(page.p95Milliseconds).leftPadded(6)) ms  (\(page.bytes / 1024) KiB)  \(page.path)")
        }
        lines.append("ingest while a user reads (\(ingestEvents) crash envelopes each, \(concurrency) HTTP clients):")
        lines.append("  alone: \(String(format: "%.0f", ingestAlonePerSecond)) events/s")
        lines.append("  with one user reloading \(readerPage): \(String(format: "%.0f", ingestWhileReadingPerSecond)) events/s (\(readerLoads) loads, median \(ms(readerMedianMilliseconds)) ms, p95 \(ms(readerP95Milliseconds)) ms)")
        lines.append("  loss: \(String(format: "%.1f", lossPercent)) %")
        lines.append("load average (1 min) at the end: \(loadAverage ?? "unknown")")
        return lines.joined(separator: "\n")
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}

/// The fill's crash envelopes: over `total` events received across the last 90 days (oldest
/// first), 200 distinct stacks, 20 releases in order of time, 5,000 users; every 20th event a
/// prevented crash (8 guards), every 20th a launch crash (`launch.*` tags, some ending a loop with
/// a repair step); each with its session (crashed, or exited for a prevented crash) and every
/// second one with an exited session of another launch.
func fillEnvelope(index: Int, total: Int, now: Date) -> (envelope: Data, received: Date) {
    let age = Double(total - 1 - index) / Double(max(total, 1)) * 90 * 86_400
    let received = now.addingTimeInterval(-age)
    let eventID = String(format: "%016llx%016llx", UInt64(index) &* 0x9E37_79B9_7F4A_7C15 | 1, UInt64(index) | 0x1000_0000_0000)
    let release = "app@3.\(index * 20 / max(total, 1)).0"
    let user = "user-\(index % 5_000)"
    let stack = index % 200
    let incident = index % 20 == 0
    let launch = index % 20 == 1
    let frames: [JSONValue] = (0..<30).map { depth in
        ["function": .string(depth < 25 ? "App.Module\(stack).function\(depth)" : "libc_start_main"),
         "instruction_addr": .string(String(format: "0x%llx", 0x5555_0000_0000 + UInt64(depth * 64 + stack))),
         "in_app": .bool(depth < 25), "package": "/usr/bin/app"]
    }
    var tags: [String: JSONValue] = ["device.class": "phone"]
    let exception: JSONValue
    if incident {
        let guardName = ["container", "nil-insert", "kvo", "timer", "selector", "range", "main-thread", "zombie"][index / 20 % 8]
        tags["crashshield.guard"] = .string(guardName)
        exception = ["values": [["type": "NSRangeException", "value": "index 3 beyond bounds",
                                 "mechanism": ["type": "crashshield.guard", "handled": true],
                                 "stacktrace": ["frames": .array(Array(frames.prefix(12)))]]]]
    } else {
        if launch {
            tags["launch.phase"] = "launching"
            tags["launch.consecutive_crashes"] = .string(String(1 + index / 20 % 4))
            if index / 20 % 7 == 0 { tags["launch.repair_step"] = .string(["reset-caches", "safe-mode", "clear-config"][index / 140 % 3]) }
        }
        exception = ["values": [[
            "type": "SIGSEGV", "value": "Segmentation fault",
            "mechanism": ["type": "signalhandler", "handled": false, "synthetic": true, "meta": ["signal": ["number": 11, "name": "SIGSEGV"]]],
            "stacktrace": ["frames": .array(frames), "registers": ["rip": "0x555500001234", "rsp": "0x7ffd00001000", "rbp": "0x7ffd00001040"]],
        ]]]
    }
    let event: JSONValue = [
        "event_id": .string(eventID), "timestamp": .double(received.timeIntervalSince1970), "platform": "native",
        "level": incident ? "warning" : "fatal", "release": .string(release), "environment": "production", "user": ["id": .string(user)],
        "exception": exception,
        "threads": ["values": [["id": 1, "crashed": true, "main": true, "name": "main"]]],
        "debug_meta": ["images": [["type": "elf", "code_file": "/usr/bin/app", "image_addr": "0x555500000000", "image_size": 1_048_576,
                                   "debug_id": "4f3c1b2a-0000-0000-0000-000000000000", "arch": "x86_64"]]],
        "contexts": ["os": ["name": "Linux", "version": "6.1"], "device": ["arch": "x86_64"]],
        "tags": .object(tags),
    ]
    let started = JSONValue.double(received.timeIntervalSince1970 - 30)
    var items: [Envelope.Item] = [
        .json(type: "event", event),
        .json(type: "session", ["sid": .string(eventID), "did": .string(user), "init": true, "started": started,
                                "status": incident ? "exited" : "crashed", "errors": 1, "attrs": ["release": .string(release)]]),
    ]
    if index % 2 == 0 {
        items.append(.json(type: "session", ["sid": .string(eventID + "-next"), "did": .string(user), "init": true, "started": started,
                                             "status": "exited", "errors": 0, "attrs": ["release": .string(release)]]))
    }
    return (Envelope(header: ["event_id": .string(eventID)], items: items).serialized(), received)
}

/// The read benchmark (`shield-collector bench --fill N`): fills `database` (kept) up to
/// `fillTo` events in process (`fillEnvelope`; nothing added when it holds that many already),
/// starts a collector on it over HTTP, measures each dashboard page and API read `loads` times
/// with a logged-in session (after one warm-up load), then ingests `ingestEvents` envelopes from
/// `concurrency` clients alone and again while one client reloads the slowest page in a loop.
///
/// `clientsExecutable`: when set, the ingest clients run in a process of their own, this
/// executable run as `shield-collector bench-clients` (`runBenchmarkClients`), instead of as
/// threads of the collector's process; the reader stays in process.
public func runReadBenchmark(database: CollectorConfiguration.Database, fillTo: Int, ingestEvents: Int, concurrency: Int = 8,
                             loads: Int = 5, clientsExecutable: String? = nil, logger: Logger) async throws -> ReadBenchmarkReport {
    let clock = ContinuousClock()
    // 1. Fill, and prepare a login session and an API token for the reads.
    let store = try await openBenchmarkStore(database, logger: logger)
    try await store.migrate()
    let existing = try await store.projects().first
    let project = if let existing { existing } else { try await store.createProject(name: "bench") }
    let stored = Int(try await store.query("SELECT count(*) AS n FROM events").first?.int("n") ?? 0)
    var filled = 0
    var fillSeconds = 0.0
    if stored < fillTo {
        let ingest = IngestService(store: store, limits: IngestLimits(), metrics: CollectorMetrics(), logger: logger)
        let now = Date()
        let start = clock.now
        let workers = 64
        let progress = SharedCount()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    for index in stride(from: stored + worker, to: fillTo, by: workers) {
                        let (envelope, received) = fillEnvelope(index: index, total: fillTo, now: now)
                        _ = try await ingest.ingestEnvelope(try Envelope.parse(envelope), project: project, received: received)
                        let done = progress.value.add(1, ordering: .relaxed).newValue
                        if done % 100_000 == 0 { FileHandle.standardError.write(Data("filled \(done) of \(fillTo - stored)\n".utf8)) }
                    }
                }
            }
            try await group.waitForAll()
        }
        filled = fillTo - stored
        fillSeconds = seconds(clock.now - start)
    }
    let sessionToken = CryptoSupport.hex(CryptoSupport.randomBytes(32))
    let apiToken = "bench-" + CryptoSupport.hex(CryptoSupport.randomBytes(16))
    let existingReader = try await store.account(name: "bench-reader")
    let reader = if let existingReader { existingReader } else {
        try await store.createAccount(name: "bench-reader", passwordHash: "!", isAdmin: true, created: Date())
    }
    try await store.insertLoginSession(tokenHash: AccountService.tokenHash(sessionToken), accountID: reader.id,
                                       csrfToken: CryptoSupport.hex(CryptoSupport.randomBytes(16)), created: Date(), expires: Date().addingTimeInterval(86_400))
    try await store.insertAPIToken(name: "bench-\(UUID().uuidString)", tokenHash: APIAuth.hash(apiToken), created: Date())
    let storedNow = Int(try await store.query("SELECT count(*) AS n FROM events").first?.int("n") ?? 0)
    let issue = try await store.issues(projectID: project.id).max { $0.eventCount < $1.eventCount }
    try await store.close()

    // 2. A collector on the database, over HTTP.
    var configuration = CollectorConfiguration(database: database, dataDirectory: NSTemporaryDirectory())
    configuration.port = 0
    configuration.rateLimitPerSecond = 1e12
    configuration.rateLimitBurst = Int.max / 2
    configuration.adminPassword = "benchmark-" + UUID().uuidString
    let (readyStream, readyContinuation) = AsyncStream<CollectorReady>.makeStream()
    let app = try await buildApplication(configuration, logger: logger) { ready in readyContinuation.yield(ready) }
    let services = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await services.run() }
        do {
            var iterator = readyStream.makeAsyncIterator()
            guard let ready = await iterator.next(), let port = URLComponents(string: ready.listeningURL)?.port else {
                throw CollectorError.storage("the benchmark's collector did not start")
            }
            let p = project.id
            var paths: [(String, String)] = [
                ("projects", "/projects"), ("issues (open)", "/projects/\(p)"), ("issues (all)", "/projects/\(p)?status=all"),
                ("release health", "/projects/\(p)/health"), ("prevented crashes", "/projects/\(p)/prevented"),
                ("launch crashes", "/projects/\(p)/launch"), ("remote configuration", "/projects/\(p)/config"),
                ("settings", "/projects/\(p)/settings"),
                ("API issues", "/api/0/projects/\(p)/issues"), ("API release health", "/api/0/projects/\(p)/release-health"),
                ("API incidents", "/api/0/projects/\(p)/incidents"), ("API stats", "/api/0/projects/\(p)/stats"),
            ]
            if let issue {
                paths.insert(("issue (\(issue.eventCount) events)", "/issues/\(issue.id)"), at: 3)
                paths.append(("API issue events", "/api/0/issues/\(issue.id)/events"))
            }
            let headers = "Host: 127.0.0.1\r\nCookie: \(AccountService.sessionCookieName)=\(sessionToken)\r\nAuthorization: Bearer \(apiToken)\r\n"
            let request: @Sendable (String) -> [UInt8] = { path in Array("GET \(path) HTTP/1.1\r\n\(headers)\r\n".utf8) }

            // 3. Page times, one page after another.
            let measured = paths
            let pages = try await onThread { () -> [PageTiming] in
                let connection = try BlockingHTTPConnection(port: port)
                defer { connection.close() }
                return try measured.map { name, path in
                    var times: [Double] = []
                    var bytes = 0
                    for load in 0...max(1, loads) {
                        let started = ContinuousClock.now
                        let (status, body) = try connection.exchangeKeepingBody(request(path))
                        let elapsed = seconds(ContinuousClock.now - started) * 1000
                        guard status == 200 else { throw CollectorError.storage("\(path) answered \(status): \(connection.text(body))") }
                        bytes = body.count
                        if load > 0 { times.append(elapsed) }
                    }
                    return PageTiming(name: name, path: path, loads: times.count, medianMilliseconds: percentile(times, 0.5),
                                      p95Milliseconds: percentile(times, 0.95), bytes: bytes)
                }
            }
            let heaviest = pages.max { $0.medianMilliseconds < $1.medianMilliseconds }!

            // 4. Ingest alone, then with one user reloading the heaviest page.
            guard let dsnText = ready.firstProjectDSN else { throw CollectorError.storage("the benchmark's collector has no project") }
            let dsn = try DSN(dsnText)
            // New event ids each run (an event's id is made from its index), above any fill's
            // indices and apart from other runs' (milliseconds since 1970, times 1,000), in the present.
            let base = Int(Date().timeIntervalSince1970 * 1_000) * 1_000
            let workers = max(1, concurrency)
            let stop = SharedCount()
            @Sendable func reader() -> Task<[Double], Error> {
                Task {
                    try await onThread { () -> [Double] in
                        let connection = try BlockingHTTPConnection(port: port)
                        defer { connection.close() }
                        var times: [Double] = []
                        repeat {
                            let started = ContinuousClock.now
                            let (status, body) = try connection.exchangeKeepingBody(request(heaviest.path))
                            guard status == 200 else { throw CollectorError.storage("\(heaviest.path) answered \(status): \(connection.text(body))") }
                            times.append(seconds(ContinuousClock.now - started) * 1000)
                        } while !(stop.value.load(ordering: .relaxed) > 0)
                        return times
                    }
                }
            }
            let readerTask = Mutex<Task<[Double], Error>?>(nil)
            let startReader: @Sendable () -> Void = {
                readerTask.withLock { $0 = reader() }
            }
            // One ingest phase: the clients' rate; `ready` runs once their envelopes are built,
            // just before they send.
            func ingest(offset: Int, ready: @escaping @Sendable () -> Void) async throws -> Double {
                if let clientsExecutable {
                    return try await runClientsProcess(executable: clientsExecutable, port: port, dsn: dsnText, base: base + offset,
                                                       events: ingestEvents, concurrency: workers, ready: ready)
                }
                let requests = benchmarkRequests(dsn: dsn, base: base + offset, events: ingestEvents)
                ready()
                return try await sendBenchmarkRequests(port: port, requests: requests, concurrency: workers)
            }
            let alone = try await ingest(offset: 0) {}
            let withReader: Double
            do {
                withReader = try await ingest(offset: ingestEvents, ready: startReader)
            } catch {
                stop.value.store(1, ordering: .relaxed)
                _ = try? await readerTask.withLock({ $0 })?.value
                throw error
            }
            stop.value.store(1, ordering: .relaxed)
            guard let readerTask = readerTask.withLock({ $0 }) else { throw CollectorError.storage("the reader never started") }
            let times = try await readerTask.value
            await services.triggerGracefulShutdown()
            try await group.waitForAll()
            let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init)
            return ReadBenchmarkReport(
                database: database.kind, storedEvents: storedNow, filledEvents: filled, fillSeconds: fillSeconds, pages: pages,
                ingestEvents: ingestEvents, concurrency: workers, ingestAlonePerSecond: alone, ingestWhileReadingPerSecond: withReader,
                readerPage: "\(heaviest.name) (\(heaviest.path))", readerLoads: times.count,
                readerMedianMilliseconds: percentile(times, 0.5), readerP95Milliseconds: percentile(times, 0.95), loadAverage: load)
        } catch {
            await services.triggerGracefulShutdown()
            throw error
        }
    }
}

/// The read benchmark's ingest requests: `events` crash envelopes (`fillEnvelope`, indices from
/// `base`, received now) as HTTP requests to `dsn`'s project.
func benchmarkRequests(dsn: DSN, base: Int, events: Int) -> [[UInt8]] {
    let head = "POST /api/\(dsn.projectID)/envelope/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + "X-Sentry-Auth: Sentry sentry_version=7, sentry_client=shield-bench/1, sentry_key=\(dsn.publicKey)\r\n"
        + "Content-Type: application/x-sentry-envelope\r\n"
    return (0..<events).map { index in
        let (envelope, _) = fillEnvelope(index: base + index, total: base + index + 1, now: Date())
        return Array((head + "Content-Length: \(envelope.count)\r\n\r\n").utf8) + [UInt8](envelope)
    }
}

/// Sends `requests` from `concurrency` clients (threads, keep-alive connections, each waiting
/// for its answer before sending the next); the rate in requests per second.
func sendBenchmarkRequests(port: Int, requests: [[UInt8]], concurrency: Int) async throws -> Double {
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { clients in
        for worker in 0..<concurrency {
            clients.addTask {
                try await onThread {
                    let connection = try BlockingHTTPConnection(port: port)
                    defer { connection.close() }
                    for index in stride(from: worker, to: requests.count, by: concurrency) {
                        let (status, body) = try connection.exchangeKeepingBody(requests[index])
                        guard status == 200 else { throw CollectorError.storage("ingest answered \(status): \(connection.text(body))") }
                    }
                }
            }
        }
        try await clients.waitForAll()
    }
    return Double(requests.count) / seconds(ContinuousClock.now - start)
}

/// `shield-collector bench-clients`: the read benchmark's ingest clients in a process of their
/// own. Builds the envelopes, prints `ready`, sends them, prints `rate <requests per second>`.
public func runBenchmarkClients(port: Int, dsn: String, base: Int, events: Int, concurrency: Int) async throws {
    let requests = benchmarkRequests(dsn: try DSN(dsn), base: base, events: events)
    FileHandle.standardOutput.write(Data("ready\n".utf8))
    let rate = try await sendBenchmarkRequests(port: port, requests: requests, concurrency: max(1, concurrency))
    FileHandle.standardOutput.write(Data("rate \(rate)\n".utf8))
}

/// Runs `executable bench-clients ...` and returns the rate it printed; `ready` runs when it
/// printed `ready`.
private func runClientsProcess(executable: String, port: Int, dsn: String, base: Int, events: Int, concurrency: Int,
                               ready: @escaping @Sendable () -> Void) async throws -> Double {
    try await onThread {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["bench-clients", "--port", String(port), "--dsn", dsn, "--base", String(base),
                             "--events", String(events), "--concurrency", String(concurrency)]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var text = ""
        var rate: Double?
        while true {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
            while let newline = text.firstIndex(of: "\n") {
                let line = String(text[..<newline])
                text = String(text[text.index(after: newline)...])
                if line == "ready" { ready() }
                if line.hasPrefix("rate ") { rate = Double(line.dropFirst(5)) }
            }
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0, let rate else {
            throw CollectorError.storage("the clients' process ended with status \(process.terminationStatus)")
        }
        return rate
    }
}

/// A counter shared between tasks and threads.
private final class SharedCount: Sendable {
    let value = Atomic<Int>(0)
}

/// The `fraction` percentile of `values` (nearest rank; 0 when empty).
func percentile(_ values: [Double], _ fraction: Double) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(max(rank, 0), sorted.count - 1)]
}
