import ArgumentParser
import CLibPQ
@testable import CollectorApp
@testable import CollectorCommandLine
import CrashShieldProtocol
import Foundation
import Testing

/// The ingest queue limits set from `shield-collector serve`'s options and from
/// `CollectorConfiguration`: parsed, validated, and applied by the collector they configure.
@Suite("Collector ingest queue options")
struct IngestQueueOptionsTests {
    /// `shield-collector <arguments>` parsed as the executable parses it (validation included).
    static func serve(_ arguments: [String]) throws -> Serve {
        let command = try ShieldCollector.parseAsRoot(["serve"] + arguments)
        return try #require(command as? Serve)
    }

    /// The message `shield-collector` prints for arguments it refuses, nil when it accepts them.
    static func refusal(_ arguments: [String]) -> String? {
        do {
            _ = try ShieldCollector.parseAsRoot(["serve"] + arguments)
            return nil
        } catch {
            return ShieldCollector.message(for: error)
        }
    }

    @Test func theServeOptionsSetTheQueueLimitsAndDefaultToTheBuiltInOnes() throws {
        let defaults = try Self.serve([]).makeConfiguration(environment: [:]).ingestQueue
        #expect(defaults.maxDepth == 2_000 && defaults.maxBytes == 64 * 1024 * 1024)
        #expect(defaults == IngestQueueLimits())
        let set = try Self.serve(["--ingest-queue-requests", "5", "--ingest-queue-bytes", "4096"]).makeConfiguration(environment: [:])
        #expect(set.ingestQueue.maxDepth == 5)
        #expect(set.ingestQueue.maxBytes == 4096)
        #expect(set.ingestQueue.maxBatch == IngestQueueLimits().maxBatch)
    }

    @Test func nonPositiveQueueLimitsAreRefusedWithTheOptionNamed() {
        #expect(Self.refusal(["--ingest-queue-requests", "0"])?.contains("--ingest-queue-requests must be a positive number of requests (got 0)") == true)
        #expect(Self.refusal(["--ingest-queue-requests=-3"])?.contains("--ingest-queue-requests must be a positive number of requests (got -3)") == true)
        #expect(Self.refusal(["--ingest-queue-bytes", "0"])?.contains("--ingest-queue-bytes must be a positive number of bytes (got 0)") == true)
        #expect(Self.refusal(["--ingest-queue-bytes=-1"])?.contains("--ingest-queue-bytes must be a positive number of bytes (got -1)") == true)
        // Not a number at all: ArgumentParser's own message names the option.
        #expect(Self.refusal(["--ingest-queue-bytes", "lots"])?.contains("ingest-queue-bytes") == true)
        #expect(Self.refusal(["--ingest-queue-requests", "1", "--ingest-queue-bytes", "1"]) == nil)
    }

    @Test func aConfigurationWithANonPositiveQueueLimitIsRefusedBeforeTheDatabaseOpens() async throws {
        let path = NSTemporaryDirectory() + "collector-config-\(UUID().uuidString).sqlite"
        for (setting, change) in [("ingestQueue.maxDepth", { (limits: inout IngestQueueLimits) in limits.maxDepth = 0 }),
                                  ("ingestQueue.maxBytes", { $0.maxBytes = -1 }),
                                  ("ingestQueue.maxBatch", { $0.maxBatch = 0 })] {
            var configuration = CollectorConfiguration(database: .sqlite(path: path), dataDirectory: NSTemporaryDirectory())
            change(&configuration.ingestQueue)
            do {
                try configuration.validate()
                Issue.record("\(setting) below 1 was accepted")
            } catch let error as CollectorConfigurationError {
                #expect(error.setting == setting)
                #expect(error.code == "configuration.invalid_value")
            }
            await #expect(throws: CollectorConfigurationError.self) { _ = try await buildApplication(configuration) }
            #expect(!FileManager.default.fileExists(atPath: path))
        }
        var valid = CollectorConfiguration(database: .sqlite(path: path), dataDirectory: NSTemporaryDirectory())
        valid.ingestQueue = IngestQueueLimits(maxDepth: 1, maxBytes: 1, maxBatch: 1)
        try valid.validate()
    }

    /// Holds the database's write lock from a connection of its own, so the collector's group
    /// commit waits: SQLite's `BEGIN IMMEDIATE` (the collector's connection waits up to its 5 s
    /// busy timeout), PostgreSQL's advisory lock on the project that ingest takes per transaction.
    /// Taking and releasing never wait, so they run synchronously on the test's thread.
    final class WriteBlocker {
        private let sqlite: SQLStore?
        private let postgres: OpaquePointer?
        private let project: Int64

        init(_ database: CollectorConfiguration.Database, project: Int64) async throws {
            self.project = project
            switch database {
            case .sqlite:
                let store = try await TestDatabase.open(database)
                _ = try await store.query("BEGIN IMMEDIATE")
                sqlite = store
                postgres = nil
            case .postgres(let url):
                sqlite = nil
                postgres = PQconnectdb(url)
                do { try Self.execute(postgres, "SELECT pg_advisory_lock(\(project))") } catch {
                    PQfinish(postgres)
                    throw error
                }
            }
        }

        private static func execute(_ connection: OpaquePointer?, _ sql: String) throws {
            struct PostgresFailure: Error { let message: String }
            guard let connection, PQstatus(connection) == CONNECTION_OK else {
                throw PostgresFailure(message: connection.map { String(cString: PQerrorMessage($0)) } ?? "no connection")
            }
            let result = PQexec(connection, sql)
            defer { PQclear(result) }
            guard PQresultStatus(result) == PGRES_TUPLES_OK else { throw PostgresFailure(message: String(cString: PQerrorMessage(connection))) }
        }

        func release() async throws {
            if let sqlite {
                _ = try await sqlite.query("ROLLBACK")
                try await sqlite.close()
            }
            if let postgres {
                defer { PQfinish(postgres) }
                try Self.execute(postgres, "SELECT pg_advisory_unlock(\(project))")
            }
        }
    }

    /// `serve --ingest-queue-requests 1`: while one request waits for the database, the next is
    /// refused with 503 `ingest.queue_full` and `Retry-After: 1`; the waiting one is stored once the
    /// database is free, and the queue accepts again.
    @Test func aOneRequestQueueFromTheCommandLineRefusesTheSecondWith503() async throws {
        let fresh = try await TestDatabase.fresh()
        let databaseArgument: String
        switch fresh.database {
        case .sqlite(let path): databaseArgument = path
        case .postgres(let url): databaseArgument = url
        }
        let serve = try Self.serve(["--database", databaseArgument, "--data-dir", NSTemporaryDirectory(), "--port", "0",
                                    "--ingest-queue-requests", "1"])
        let configuration = serve.makeConfiguration(environment: [
            "SHIELD_COLLECTOR_API_TOKEN": Harness.token, "SHIELD_COLLECTOR_ADMIN_PASSWORD": Harness.adminPassword,
        ])
        #expect(configuration.ingestQueue.maxDepth == 1)
        do {
            try await Harness.run(configuration: configuration) { harness in
                let first = Fixtures.exceptionEvent(type: "FirstError")
                let refused = Fixtures.exceptionEvent(type: "RefusedError")
                let third = Fixtures.exceptionEvent(type: "ThirdError")
                let blocker = try await WriteBlocker(fresh.database, project: harness.project.id)
                let waiting = Task { try await harness.post(body: Fixtures.envelope(event: first)) }
                let full: TestResponse
                do {
                    // The first request is in the writer (queued or committing) once the gauge shows it.
                    var depth = ""
                    for _ in 0..<400 {
                        depth = try await harness.client.execute("/metrics").text
                        if depth.contains("collector_ingest_queue_depth 1") { break }
                        try await Task.sleep(for: .milliseconds(10))
                    }
                    #expect(depth.contains("collector_ingest_queue_depth 1"))
                    full = try await harness.post(body: Fixtures.envelope(event: refused))
                } catch {
                    try? await blocker.release()
                    throw error
                }
                try await blocker.release()
                #expect(full.status == 503)
                #expect(full.json?["code"]?.stringValue == "ingest.queue_full")
                #expect(full.headers["retry-after"] == "1")
                let stored = try await waiting.value
                #expect(stored.status == 200)
                #expect(stored.json?["id"]?.stringValue == first["event_id"]?.stringValue)
                #expect(try await harness.post(body: Fixtures.envelope(event: third)).status == 200)
                let titles = Set(try await harness.issues().compactMap { $0["title"]?.stringValue?.split(separator: ":").first.map(String.init) })
                #expect(titles == ["FirstError", "ThirdError"])
            }
        } catch {
            await fresh.drop()
            throw error
        }
        await fresh.drop()
    }
}
