import CrashShieldProtocol
import Foundation
import Logging

/// What `shield-collector bench` measured.
public struct IngestBenchmarkReport: Sendable {
    public let database: String
    public let events: Int
    public let envelopeBytes: Int
    public let ingestSeconds: Double
    public let rawInsertSeconds: Double
    public let peakResidentKiB: Int?

    public var ingestPerSecond: Double { Double(events) / ingestSeconds }
    public var rawInsertPerSecond: Double { Double(events) / rawInsertSeconds }

    public var description: String {
        """
        database: \(database)
        events: \(events) crash envelopes (\(envelopeBytes / events) bytes each on average), 8 concurrent ingest tasks
        ingest (parse, group, store; no HTTP): \(String(format: "%.0f", ingestPerSecond)) events/s (\(String(format: "%.2f", ingestSeconds)) s)
        raw insert (one row per transaction, same database): \(String(format: "%.0f", rawInsertPerSecond)) rows/s (\(String(format: "%.2f", rawInsertSeconds)) s)
        ingest / raw insert: \(String(format: "%.2f", ingestPerSecond / rawInsertPerSecond))
        peak resident memory: \(peakResidentKiB.map { "\($0 / 1024) MiB" } ?? "unknown")
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
/// database) with 8 concurrent tasks, then inserts as many raw rows, one per transaction, into a
/// scratch table of the same database, and reports both rates.
public func runIngestBenchmark(database: CollectorConfiguration.Database, events: Int, logger: Logger) async throws -> IngestBenchmarkReport {
    let store: SQLStore
    switch database {
    case .sqlite(let path): store = try await SQLStore.openSQLite(path: path, logger: logger)
    case .postgres(let url): store = try await SQLStore.openPostgres(url: url, logger: logger)
    }
    try await store.migrate()
    let project = try await store.createProject(name: "bench")
    let envelopes = benchmarkEnvelopes(count: events)
    let ingest = IngestService(store: store, limits: IngestLimits(), metrics: CollectorMetrics(), logger: logger)

    let clock = ContinuousClock()
    let ingestStart = clock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        let workers = 8
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
    let ingestSeconds = seconds(clock.now - ingestStart)

    let payload = envelopes[0]
    let rawStart = clock.now
    try await store.rawInsertBenchmark(rows: events, payload: payload)
    let rawSeconds = seconds(clock.now - rawStart)
    try await store.close()
    return IngestBenchmarkReport(database: store.databaseKind, events: events, envelopeBytes: envelopes.reduce(0) { $0 + $1.count },
                                 ingestSeconds: ingestSeconds, rawInsertSeconds: rawSeconds, peakResidentKiB: peakResidentKiB())
}

private func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// VmHWM from /proc/self/status (Linux), in KiB.
private func peakResidentKiB() -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }
    return nil
}
