@testable import CollectorApp
import Foundation
import Logging
import Testing

/// `shield-collector bench --http` end to end on a few envelopes: its HTTP client reads every
/// answer, every event is stored, and the report splits the clients' share from the process's.
/// (Rates are not checked: timings belong to the benchmark's output, not to assertions.)
@Suite("Ingest benchmark over HTTP")
struct BenchmarkTests {
    @Test func everyEnvelopeIsAcknowledgedAndStoredAndTheClientsAreMeasuredApart() async throws {
        let fresh = try await TestDatabase.fresh()
        do {
            var logger = Logger(label: "benchmark-tests")
            logger.logLevel = .warning
            let events = 60
            let report = try await runIngestBenchmark(database: fresh.database, events: events, concurrency: 4, overHTTP: true, logger: logger)
            #expect(report.events == events)
            #expect(report.overHTTP)
            // The commit count comes from the collector's /metrics, read with the same client.
            #expect(report.commits >= 1 && report.commits <= Int64(events))
            let clientCPU = try #require(report.clientCPUSeconds)
            let clientSwitches = try #require(report.clientContextSwitches)
            #expect(clientCPU >= 0 && clientCPU <= report.ingestCPUSeconds)
            // Each client waits in recv for each of its answers at least once.
            #expect(clientSwitches >= 1 && clientSwitches <= report.contextSwitches)

            let store = try await TestDatabase.open(fresh.database)
            do {
                let project = try #require(try await store.projects().first)
                let stored = try await store.issues(projectID: project.id).reduce(Int64(0)) { $0 + $1.eventCount }
                #expect(stored == Int64(events))
            } catch {
                try? await store.close()
                throw error
            }
            try await store.close()
        } catch {
            await fresh.drop()
            throw error
        }
        await fresh.drop()
    }

    /// `shield-collector bench --fill` end to end on a few events: the database is filled to the
    /// target (and reused, not filled again, by a second run), every page and API read answers
    /// 200 with a logged-in session, and both ingest runs store every envelope.
    @Test func theReadBenchmarkFillsOnceTimesEveryPageAndIngestsWhileReading() async throws {
        let fresh = try await TestDatabase.fresh()
        do {
            var logger = Logger(label: "benchmark-tests")
            logger.logLevel = .warning
            let first = try await runReadBenchmark(database: fresh.database, fillTo: 120, ingestEvents: 40, concurrency: 4, loads: 1, logger: logger)
            #expect(first.filledEvents == 120)
            #expect(first.storedEvents == 120)
            let names = first.pages.map(\.name)
            for page in ["projects", "issues (open)", "release health", "prevented crashes", "launch crashes", "API release health"] {
                #expect(names.contains(page), "\(page) not measured: \(names)")
            }
            #expect(names.contains { $0.hasPrefix("issue (") })
            #expect(first.pages.allSatisfy { $0.loads == 1 && $0.bytes > 0 })
            #expect(first.readerLoads >= 1)
            #expect(first.description.contains("loss:"))

            // The second run with its ingest clients in a process of their own (`bench-clients`
            // of the shield-collector built next to the tests).
            let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
                .appendingPathComponent("shield-collector").path
            #expect(FileManager.default.isExecutableFile(atPath: executable), "\(executable)")
            let second = try await runReadBenchmark(database: fresh.database, fillTo: 120, ingestEvents: 40, concurrency: 4, loads: 1,
                                                    clientsExecutable: executable, logger: logger)
            #expect(second.filledEvents == 0)
            #expect(second.storedEvents == 120 + 2 * 40)
            #expect(second.readerLoads >= 1)
            let store = try await TestDatabase.open(fresh.database)
            #expect(try await store.query("SELECT count(*) AS n FROM events").first?.int("n") == 120 + 4 * 40)
            try await store.close()
        } catch {
            await fresh.drop()
            throw error
        }
        await fresh.drop()
    }
}
