import CrashShieldProtocol
import Foundation
import Logging
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// What `shield-collector bench` measured.
public struct IngestBenchmarkReport: Sendable {
    public let database: String
    /// True when the envelopes went over HTTP to a collector started in this process.
    public let overHTTP: Bool
    public let events: Int
    public let concurrency: Int
    public let envelopeBytes: Int
    /// Group commits the ingest needed (events / commits = requests per transaction).
    public let commits: Int64
    public let ingestSeconds: Double
    /// User + system CPU time of this process during the ingest (getrusage), HTTP clients included.
    public let ingestCPUSeconds: Double
    /// Over HTTP: the CPU time of the client threads (their own getrusage), so that
    /// `ingestCPUSeconds - clientCPUSeconds` is what the collector cost. Nil below HTTP.
    public let clientCPUSeconds: Double?
    /// Voluntary context switches of this process's threads during the ingest (a thread waited:
    /// for a socket, a lock, a wake-up from another thread), HTTP clients included.
    public let contextSwitches: Int
    /// Involuntary context switches during the ingest (threads preempted: the machine's load).
    public let preemptions: Int
    /// Over HTTP: the voluntary context switches of the client threads. Nil below HTTP.
    public let clientContextSwitches: Int?
    public let rawInsertSeconds: Double
    /// Seconds the store's single writer spent committing (below HTTP only; nil over HTTP).
    public let writerBusySeconds: Double?
    /// The share of `writerBusySeconds` the writer was on a core (below HTTP on SQLite only).
    public let writerCPUShare: Double?
    public let peakResidentKiB: Int?
    /// /proc/loadavg's 1-minute load average when the benchmark ended (the machine may be shared).
    public let loadAverage: String?

    public var ingestPerSecond: Double { Double(events) / ingestSeconds }
    /// CPU time per event without the HTTP clients' share: what the collector itself cost.
    public var collectorCPUMicrosecondsPerEvent: Double { (ingestCPUSeconds - (clientCPUSeconds ?? 0)) / Double(events) * 1e6 }
    public var rawInsertPerSecond: Double { Double(events) / rawInsertSeconds }

    public var description: String {
        """
        database: \(database)
        events: \(events) crash envelopes with a session each (\(envelopeBytes / events) bytes each on average), \(concurrency) concurrent \(overHTTP ? "HTTP clients (keep-alive connections)" : "ingest tasks")
        ingest (\(overHTTP ? "HTTP POST /api/<project>/envelope/ to a collector in this process: request handling, auth, rate limit, parse, validation, grouping, group-commit storage" : "envelope parse, validation, grouping, group-commit storage; below HTTP")): \(String(format: "%.0f", ingestPerSecond)) events/s (\(String(format: "%.2f", ingestSeconds)) s, \(commits) commits, \(String(format: "%.1f", Double(events) / Double(max(commits, 1)))) requests per commit)
        CPU time of this process during the ingest: \(String(format: "%.2f", ingestCPUSeconds)) s, \(String(format: "%.0f", ingestCPUSeconds / Double(events) * 1e6)) µs per event\(overHTTP ? " (clients included)" : "") (\(String(format: "%.0f", Double(events) / max(ingestCPUSeconds, 1e-9))) events per CPU-second; the database server's CPU not counted)\(clientCPUSeconds.map { clients in "\n  of which the HTTP client threads: \(String(format: "%.2f", clients)) s (\(String(format: "%.0f", clients / Double(events) * 1e6)) µs per event); the collector: \(String(format: "%.0f", collectorCPUMicrosecondsPerEvent)) µs per event" } ?? "")
        voluntary context switches during the ingest: \(contextSwitches) (\(String(format: "%.1f", Double(contextSwitches) / Double(events))) per event)\(clientContextSwitches.map { clients in ", of which the HTTP client threads \(clients) (\(String(format: "%.1f", Double(clients) / Double(events))) per event); the collector \(String(format: "%.1f", Double(contextSwitches - clients) / Double(events))) per event" } ?? ""); preemptions: \(preemptions)
        \(writerBusySeconds.map { busy in "writer (one per store) busy committing: \(String(format: "%.2f", busy)) s, \(String(format: "%.0f", busy / Double(events) * 1e6)) µs per event wall clock (bounds the ingest at \(String(format: "%.0f", Double(events) / max(busy, 1e-9))) events/s)\(writerCPUShare.map { share in ", on a core \(String(format: "%.0f", share * 100)) % of that time: about \(String(format: "%.0f", share * busy / Double(events) * 1e6)) µs CPU per event" } ?? "")\n" } ?? "")raw insert (one row per transaction, one task, same database; half before, half after the ingest): \(String(format: "%.0f", rawInsertPerSecond)) rows/s (\(String(format: "%.2f", rawInsertSeconds)) s)
        ingest / raw insert: \(String(format: "%.2f", ingestPerSecond / rawInsertPerSecond))
        peak resident memory (whole process, including the \(envelopeBytes / 1_048_576) MiB of prepared envelopes): \(peakResidentKiB.map { "\($0 / 1024) MiB" } ?? "unknown")
        load average (1 min) at the end: \(loadAverage ?? "unknown")
        """
    }
}

/// Realistic crash envelopes: native crashes with 30-frame stacks, registers, a debug image,
/// contexts and tags, spread over 50 distinct stacks, 20 releases and 500 users.
func benchmarkEnvelopes(count: Int) -> [Data] {
    (0..<count).map { index in
        let eventID = String(format: "%016llx%016llx", UInt64(index) &* 0x9E37_79B9_7F4A_7C15, UInt64(index))
        let frames: [JSONValue] = (0..<30).map { depth in
            ["function": .string(depth < 25 ? "App.Module\(index % 50).function\(depth)" : "libc_start_main"),
             "instruction_addr": .string(String(format: "0x%llx", 0x5555_0000_0000 + UInt64(depth * 64 + index % 50))),
             "in_app": .bool(depth < 25), "package": "/usr/bin/app"]
        }
        let event: JSONValue = [
            "event_id": .string(eventID), "timestamp": .double(Date().timeIntervalSince1970), "platform": "native", "level": "fatal",
            "release": .string("app@2.\(index % 20).0"), "environment": "production", "user": ["id": .string("user-\(index % 500)")],
            "exception": ["values": [[
                "type": "SIGSEGV", "value": "Segmentation fault",
                "mechanism": ["type": "signalhandler", "handled": false, "synthetic": true, "meta": ["signal": ["number": 11, "name": "SIGSEGV"]]],
                "stacktrace": ["frames": .array(frames), "registers": ["rip": "0x555500001234", "rsp": "0x7ffd00001000", "rbp": "0x7ffd00001040"]],
            ]]],
            "threads": ["values": [["id": 1, "crashed": true, "main": true, "name": "main"]]],
            "debug_meta": ["images": [["type": "elf", "code_file": "/usr/bin/app", "image_addr": "0x555500000000", "image_size": 1_048_576,
                                       "debug_id": "4f3c1b2a-0000-0000-0000-000000000000", "arch": "x86_64"]]],
            "contexts": ["os": ["name": "Linux", "version": "6.1"], "device": ["arch": "x86_64"]],
            "tags": ["crash_loop": "false"],
        ]
        let session: JSONValue = ["sid": .string(eventID), "did": .string("user-\(index % 500)"), "init": true,
                                  "started": "2026-11-26T00:00:00Z", "status": "crashed", "errors": 1, "attrs": ["release": .string("app@2.\(index % 20).0")]]
        return Envelope(header: ["event_id": .string(eventID)], items: [.json(type: "event", event), .json(type: "session", session)]).serialized()
    }
}

/// Ingests `events` crash envelopes into `database` (a new SQLite file, or an empty PostgreSQL
/// database) from `concurrency` clients, each sending its next envelope once the previous one is
/// acknowledged; inserts as many raw rows, one per transaction, into a scratch table of the same
/// database (half before the ingest, half after), and reports both rates.
///
/// - Parameter overHTTP: false: the clients are tasks calling the same `IngestService` (and its
///   group-commit writer) the HTTP routes use, so HTTP itself is not measured. True: a collector
///   is started in this process on 127.0.0.1 (rate limit off) and the clients are threads POSTing
///   to it over keep-alive connections (they share the machine's cores with the collector).
public func runIngestBenchmark(database: CollectorConfiguration.Database, events: Int, concurrency: Int = 8,
                               overHTTP: Bool = false, logger: Logger) async throws -> IngestBenchmarkReport {
    let envelopes = benchmarkEnvelopes(count: events)
    let workers = max(1, concurrency)
    let clock = ContinuousClock()
    // The raw insert rate is measured in two halves, before and after the ingest, so that a
    // change in the shared machine's load affects both measurements alike.
    let rawBefore = events / 2
    var rawSeconds = try await rawInsertSeconds(database, rows: rawBefore, payload: envelopes[0], logger: logger)
    let ingestSeconds: Double
    let commits: Int64
    var writerBusySeconds: Double?
    var writerCPUShare: Double?
    let usage: ResourceUsage
    var clients: ResourceUsage?
    if overHTTP {
        let measured = try await benchmarkOverHTTP(database: database, envelopes: envelopes, workers: workers, logger: logger)
        (ingestSeconds, commits, usage, clients) = (measured.seconds, measured.commits, measured.process, measured.clients)
    } else {
        let store = try await openBenchmarkStore(database, logger: logger)
        try await store.migrate()
        let project = try await store.createProject(name: "bench")
        let metrics = CollectorMetrics()
        let ingest = IngestService(store: store, limits: IngestLimits(), metrics: metrics, logger: logger)
        let usageBefore = ResourceUsage.process()
        let ingestStart = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    for index in stride(from: worker, to: envelopes.count, by: workers) {
                        let envelope = try Envelope.parse(envelopes[index])
                        _ = try await ingest.ingestEnvelope(envelope, project: project)
                    }
                }
            }
            try await group.waitForAll()
        }
        ingestSeconds = seconds(clock.now - ingestStart)
        usage = ResourceUsage.process() - usageBefore
        commits = metrics.commitCount
        writerBusySeconds = ingest.writer.busySeconds
        // Only SQLite runs its statements on the writer's thread, where its CPU time can be read.
        if case .sqlite = database { writerCPUShare = ingest.writer.cpuShareOfBusyTime }
        try await store.close()
    }


    rawSeconds += try await rawInsertSeconds(database, rows: events - rawBefore, payload: envelopes[0], logger: logger)
    let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init)
    return IngestBenchmarkReport(database: database.kind, overHTTP: overHTTP, events: events, concurrency: workers,
                                 envelopeBytes: envelopes.reduce(0) { $0 + $1.count }, commits: commits,
                                 ingestSeconds: ingestSeconds, ingestCPUSeconds: usage.cpuSeconds, clientCPUSeconds: clients?.cpuSeconds,
                                 contextSwitches: usage.contextSwitches, preemptions: usage.preemptions, clientContextSwitches: clients?.contextSwitches, rawInsertSeconds: rawSeconds,
                                 writerBusySeconds: writerBusySeconds, writerCPUShare: writerCPUShare, peakResidentKiB: peakResidentKiB(),
                                 loadAverage: load)
}

/// Seconds to insert `rows` raw rows into a scratch table of `database`, one per transaction.
private func rawInsertSeconds(_ database: CollectorConfiguration.Database, rows: Int, payload: Data, logger: Logger) async throws -> Double {
    guard rows > 0 else { return 0 }
    let store = try await openBenchmarkStore(database, logger: logger)
    let clock = ContinuousClock()
    let start = clock.now
    try await store.rawInsertBenchmark(rows: rows, payload: payload)
    let elapsed = seconds(clock.now - start)
    try await store.close()
    return elapsed
}

extension CollectorConfiguration.Database {
    var kind: String {
        switch self {
        case .sqlite: return "sqlite"
        case .postgres: return "postgres"
        }
    }
}

func openBenchmarkStore(_ database: CollectorConfiguration.Database, logger: Logger) async throws -> SQLStore {
    switch database {
    case .sqlite(let path): return try await SQLStore.openSQLite(path: path, logger: logger)
    case .postgres(let url): return try await SQLStore.openPostgres(url: url, logger: logger)
    }
}

/// Starts a collector on `database` (127.0.0.1, a free port, no rate limit), POSTs every envelope
/// from `workers` threads over keep-alive connections, reads the group commits from `/metrics`
/// and stops the collector. Returns the seconds the envelopes took, the commits, the process's
/// resource usage meanwhile and the client threads' share of it.
private func benchmarkOverHTTP(database: CollectorConfiguration.Database, envelopes: [Data], workers: Int, logger: Logger)
    async throws -> (seconds: Double, commits: Int64, process: ResourceUsage, clients: ResourceUsage) {
    var configuration = CollectorConfiguration(database: database, dataDirectory: NSTemporaryDirectory())
    configuration.port = 0
    configuration.rateLimitPerSecond = 1e12
    configuration.rateLimitBurst = Int.max / 2
    configuration.adminPassword = "benchmark-" + UUID().uuidString
    configuration.initialAPIToken = "benchmark-" + UUID().uuidString
    let (readyStream, readyContinuation) = AsyncStream<CollectorReady>.makeStream()
    let app = try await buildApplication(configuration, logger: logger) { ready in readyContinuation.yield(ready) }
    let services = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await services.run() }
        do {
            var iterator = readyStream.makeAsyncIterator()
            guard let ready = await iterator.next(), let dsnText = ready.firstProjectDSN,
                  let port = URLComponents(string: ready.url)?.port
            else { throw CollectorError.storage("the benchmark's collector did not start") }
            let dsn = try DSN(dsnText)
            let head = "POST /api/\(dsn.projectID)/envelope/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "X-Sentry-Auth: Sentry sentry_version=7, sentry_client=shield-bench/1, sentry_key=\(dsn.publicKey)\r\n"
                + "Content-Type: application/x-sentry-envelope\r\n"
            let requests = envelopes.map { Array((head + "Content-Length: \($0.count)\r\n\r\n").utf8) + [UInt8]($0) }
            let clock = ContinuousClock()
            let usageBefore = ResourceUsage.process()
            let start = clock.now
            let clientUsage = try await withThrowingTaskGroup(of: ResourceUsage.self) { clients in
                for worker in 0..<workers {
                    clients.addTask {
                        try await onThread {
                            let threadBefore = ResourceUsage.thread()
                            let connection = try BlockingHTTPConnection(port: port)
                            defer { connection.close() }
                            for index in stride(from: worker, to: requests.count, by: workers) {
                                let (status, body) = try connection.exchangeKeepingBody(requests[index])
                                guard status == 200 else {
                                    throw CollectorError.storage("the collector answered \(status): \(connection.text(body))")
                                }
                            }
                            return ResourceUsage.thread() - threadBefore
                        }
                    }
                }
                return try await clients.reduce(.zero, +)
            }
            let elapsed = seconds(clock.now - start)
            let usage = ResourceUsage.process() - usageBefore
            let metricsText = try await onThread { () -> String in
                let connection = try BlockingHTTPConnection(port: port)
                defer { connection.close() }
                return String(decoding: try connection.exchange(Array("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)).1, as: UTF8.self)
            }
            let commits = metricsText.split(separator: "\n").first { $0.hasPrefix("collector_ingest_commits_total ") }
                .flatMap { Int64($0.split(separator: " ").last ?? "") } ?? 0
            await services.triggerGracefulShutdown()
            try await group.waitForAll()
            return (elapsed, commits, usage, clientUsage)
        } catch {
            await services.triggerGracefulShutdown()
            throw error
        }
    }
}

/// Runs blocking `work` on a thread of its own.
func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// One keep-alive HTTP/1.1 connection to 127.0.0.1 with blocking POSIX calls: the benchmark's
/// client (answers must carry `Content-Length`, as the collector's do).
///
/// It is a load generator, so it costs as little as it can: one receive buffer reused for every
/// answer (grown only when an answer does not fit), the header end searched for only in bytes
/// not searched before, and only the status line and `Content-Length` read from the head.
final class BlockingHTTPConnection {
    private let socketFD: Int32
    /// Received bytes; `buffer[consumed..<filled]` are not yet part of a returned answer.
    private var buffer = [UInt8](repeating: 0, count: 16_384)
    private var consumed = 0
    private var filled = 0

    init(port: Int) throws {
        socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { throw CollectorError.storage("socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(socketFD)
            throw CollectorError.storage("connect() to 127.0.0.1:\(port) failed: errno \(errno)")
        }
        var one: Int32 = 1
        setsockopt(socketFD, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    func close() { Glibc.close(socketFD) }

    /// Sends one request and reads its response: (status, body).
    func exchange(_ request: [UInt8]) throws -> (Int, [UInt8]) {
        let (status, bodyRange) = try exchangeKeepingBody(request)
        return (status, Array(buffer[bodyRange]))
    }

    /// Sends one request and reads its response without copying the body: the status, and where
    /// the body lies in the receive buffer (valid until the next exchange).
    func exchangeKeepingBody(_ request: [UInt8]) throws -> (status: Int, body: Range<Int>) {
        try request.withUnsafeBytes { bytes in
            var sent = 0
            while sent < bytes.count {
                let count = send(socketFD, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
                guard count > 0 else { throw CollectorError.storage("send() failed: errno \(errno)") }
                sent += count
            }
        }
        // Unread bytes of an earlier answer (none with this client) move to the front, so that
        // indices stay valid while this answer arrives.
        if consumed > 0 {
            if consumed < filled {
                buffer.withUnsafeMutableBytes { bytes in
                    _ = memmove(bytes.baseAddress!, bytes.baseAddress! + consumed, filled - consumed)
                }
            }
            filled -= consumed
            consumed = 0
        }
        // Find CR LF CR LF, scanning each received byte once.
        var scanned = 0
        var headerEnd: Int?
        while headerEnd == nil {
            headerEnd = buffer.withUnsafeBufferPointer { bytes -> Int? in
                var index = max(scanned, 3)
                while index < filled {
                    if bytes[index] == 10, bytes[index - 1] == 13, bytes[index - 2] == 10, bytes[index - 3] == 13 { return index + 1 }
                    index += 1
                }
                return nil
            }
            if headerEnd == nil {
                scanned = filled
                try receive()
            }
        }
        let head = 0..<headerEnd!
        guard let status = Self.status(buffer[head]) else {
            throw CollectorError.storage("malformed response: \(String(decoding: buffer[head], as: UTF8.self))")
        }
        guard let length = Self.contentLength(buffer[head]) else {
            throw CollectorError.storage("response without Content-Length: \(String(decoding: buffer[head], as: UTF8.self))")
        }
        let bodyStart = headerEnd!
        while filled < bodyStart + length { try receive() }
        consumed = bodyStart + length
        return (status, bodyStart..<(bodyStart + length))
    }

    /// The received bytes in `range` (a body returned by `exchangeKeepingBody`) as text.
    func text(_ range: Range<Int>) -> String { String(decoding: buffer[range], as: UTF8.self) }

    /// The three digits after "HTTP/1.x " in the status line.
    private static func status(_ head: ArraySlice<UInt8>) -> Int? {
        let start = head.startIndex + 9
        guard head.count >= 12, head[start - 1] == 32 else { return nil }
        var value = 0
        for byte in head[start..<(start + 3)] {
            guard (48...57).contains(byte) else { return nil }
            value = value * 10 + Int(byte - 48)
        }
        return value
    }

    /// The value of the `Content-Length` header (case-insensitive name), if present.
    private static func contentLength(_ head: ArraySlice<UInt8>) -> Int? {
        let name = Array("content-length:".utf8)
        var lineStart = head.startIndex
        while lineStart < head.endIndex {
            let lineEnd = head[lineStart...].firstIndex(of: 13) ?? head.endIndex
            if lineEnd - lineStart > name.count,
               zip(head[lineStart..<(lineStart + name.count)], name).allSatisfy({ ((65...90).contains($0) ? $0 | 0x20 : $0) == $1 }) {
                var value = 0
                var digits = 0
                for byte in head[(lineStart + name.count)..<lineEnd] where byte != 32 && byte != 9 {
                    guard (48...57).contains(byte) else { return nil }
                    value = value * 10 + Int(byte - 48)
                    digits += 1
                }
                return digits > 0 ? value : nil
            }
            lineStart = lineEnd + 2
        }
        return nil
    }

    /// Receives into the buffer's free tail, growing the buffer only when it is full of one
    /// unfinished answer.
    private func receive() throws {
        if filled == buffer.count { buffer.append(contentsOf: repeatElement(0, count: buffer.count)) }
        let count = buffer.withUnsafeMutableBytes { recv(socketFD, $0.baseAddress! + filled, $0.count - filled, 0) }
        guard count > 0 else { throw CollectorError.storage("the connection closed (recv: \(count), errno \(errno))") }
        filled += count
    }
}

/// User + system CPU time and context switches, from getrusage.
struct ResourceUsage: Sendable {
    var cpuSeconds: Double
    /// Voluntary: the thread blocked (socket, lock, waiting to be woken).
    var contextSwitches: Int
    /// Involuntary: the thread was preempted.
    var preemptions: Int

    /// What this process (all its threads) has used so far.
    static func process() -> ResourceUsage { read(RUSAGE_SELF) }

    /// What the calling thread has used so far (Linux's RUSAGE_THREAD, 1; Glibc's module does not export the name).
    static func thread() -> ResourceUsage { read(__rusage_who(rawValue: 1)) }

    private static func read(_ who: __rusage_who) -> ResourceUsage {
        var usage = rusage()
        guard getrusage(__rusage_who_t(who.rawValue), &usage) == 0 else { return .zero }
        func value(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return ResourceUsage(cpuSeconds: value(usage.ru_utime) + value(usage.ru_stime),
                             contextSwitches: usage.ru_nvcsw, preemptions: usage.ru_nivcsw)
    }

    static let zero = ResourceUsage(cpuSeconds: 0, contextSwitches: 0, preemptions: 0)

    static func + (lhs: ResourceUsage, rhs: ResourceUsage) -> ResourceUsage {
        ResourceUsage(cpuSeconds: lhs.cpuSeconds + rhs.cpuSeconds, contextSwitches: lhs.contextSwitches + rhs.contextSwitches,
                      preemptions: lhs.preemptions + rhs.preemptions)
    }

    static func - (lhs: ResourceUsage, rhs: ResourceUsage) -> ResourceUsage {
        ResourceUsage(cpuSeconds: lhs.cpuSeconds - rhs.cpuSeconds, contextSwitches: lhs.contextSwitches - rhs.contextSwitches,
                      preemptions: lhs.preemptions - rhs.preemptions)
    }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// VmHWM from /proc/self/status (Linux), in KiB.
func peakResidentKiB() -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }
    return nil
}
