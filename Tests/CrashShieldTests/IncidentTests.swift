import CrashShieldTestDoubles
import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing
@testable import CrashShield
import _CrashShieldScenarios
import _CrashShieldIncidents

extension RuntimeTests {
    @Suite struct Incidents {
        @Test func firstOccurrenceIsDeliveredInFullAndRepeatsAreCounted() throws {
            var options = CrashShieldOptions()
            options.countUpdateInterval = .seconds(3600)
            let incidents = try collectIncidents {
                try withGuards(options) {
                    for _ in 0..<5 { #expect(runScenario("array.objectAtIndex.beyond") == .neutral) }
                    #expect(CrashShieldSDK.statistics.recorded == 5)
                    #expect(CrashShieldSDK.statistics.fingerprints == 1)
                    CrashShieldSDK.flushIncidents()
                }
            }
            #expect(incidents.count == 1)
            let incident = try #require(incidents.first)
            #expect(incident.kind == .firstOccurrence)
            #expect(incident.guardID == .container)
            #expect(incident.policy == .neutralize)
            #expect(incident.selector == "objectAtIndex:")
            #expect(!incident.isClassMethod)
            #expect(incident.reason == "index 5 beyond count 2")
            #expect(incident.count == 1)
            #expect(incident.methodName.hasPrefix("-["))
            #expect(!incident.frames.isEmpty && incident.frames.count <= 32)
            #expect(incident.fingerprint != 0)
            // The first frame is the call site in the scenario code, which is not a system image.
            #expect(incident.frames.first?.imagePath.isEmpty == false)
        }

        @Test func countUpdatesAreRateLimited() throws {
            var options = CrashShieldOptions()
            options.countUpdateInterval = .zero
            let incidents = try collectIncidents {
                try withGuards(options) {
                    for _ in 0..<3 { _ = runScenario("array.objectAtIndex.beyond") }
                    CrashShieldSDK.flushIncidents()
                }
            }
            #expect(incidents.map(\.kind) == [.firstOccurrence, .countUpdate, .countUpdate])
            #expect(incidents.map(\.count) == [1, 2, 3])
        }

        /// The monotonic time is a Duration on one clock: later incidents never have an earlier time,
        /// and the time between the first and last is below the time the test took on the same clock.
        @Test func monotonicTimesAreOrderedDurations() throws {
            var options = CrashShieldOptions()
            options.countUpdateInterval = .zero
            var before = timespec(), after = timespec()
            let incidents = try collectIncidents {
                try withGuards(options) {
                    clock_gettime(CLOCK_MONOTONIC, &before)
                    for _ in 0..<3 { _ = runScenario("array.objectAtIndex.beyond") }
                    clock_gettime(CLOCK_MONOTONIC, &after)
                    CrashShieldSDK.flushIncidents()
                }
            }
            let times = incidents.map(\.monotonicTime)
            #expect(times.count == 3)
            #expect(times == times.sorted())
            let start = Duration.seconds(before.tv_sec) + .nanoseconds(before.tv_nsec)
            let end = Duration.seconds(after.tv_sec) + .nanoseconds(after.tv_nsec)
            #expect(times.allSatisfy { $0 >= start && $0 <= end }, "\(times) outside \(start)...\(end)")
        }

        @Test func incidentStreamReceivesIncidents() async throws {
            CrashShieldSDK._resetForTesting()
            try CrashShieldSDK.start(.guardsOnly)
            defer { CrashShieldSDK._resetForTesting() }
            let stream = CrashShieldSDK.incidents
            _ = runScenario("string.characterAtIndex.beyond")
            // The first incident, or nil when none arrives within 10 s (never hang the suite).
            let incident = await withTaskGroup(of: Incident?.self) { group in
                group.addTask {
                    var iterator = stream.makeAsyncIterator()
                    return await iterator.next()
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(10))
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
            #expect(incident?.guardID == .string)
            #expect(incident?.selector == "characterAtIndex:")
            #expect(incident?.reason == "index 9 beyond length 3")
        }

        @Test func closureSinkIsCalled() throws {
            let box = InMemoryIncidentSink()
            let sink = CrashShieldSDK.onIncident { box.receive($0) }
            defer { CrashShieldSDK.removeSink(sink) }
            try withGuards {
                _ = runScenario("array.objectAtIndex.beyond")
                CrashShieldSDK.flushIncidents()
            }
            #expect(box.incidents.count == 1)
        }

        @Test func inMemorySinkKeepsTheNewest() {
            let sink = InMemoryIncidentSink(capacity: 2)
            let incidents = try? collectIncidents {
                try withGuards {
                    _ = runScenario("array.objectAtIndex.beyond")
                    _ = runScenario("string.characterAtIndex.beyond")
                    CrashShieldSDK.flushIncidents()
                }
            }
            for incident in incidents ?? [] { sink.receive(incident) }
            sink.receive(incidents![0])
            #expect(sink.incidents.count == 2)
            #expect(sink.incidents.last == incidents![0])
        }

        @Test func reasonTemplateFormatting() {
            #expect(Incident.format(template: "index {} beyond count {}", args: [5, 2]) == "index 5 beyond count 2")
            #expect(Incident.format(template: "range {} {}", args: [UInt64(Int64.max), UInt64.max]) == "range NSNotFound -1")
            #expect(Incident.format(template: "nil key", args: []) == "nil key")
        }

        @Test func breadcrumbsMirrorRecentIncidents() throws {
            try withGuards {
                _ = runScenario("array.objectAtIndex.beyond")
                _ = runScenario("string.characterAtIndex.beyond")
                var crumbs = [cs_breadcrumb](repeating: cs_breadcrumb(), count: Int(CS_BREADCRUMB_CAPACITY))
                let copied = cs_breadcrumbs_copy(&crumbs, crumbs.count)
                #expect(copied == 2)
                #expect(String(cString: crumbs[0].guard_name) == "container")
                #expect(String(cString: crumbs[1].guard_name) == "string")
                #expect(crumbs[0].sequence < crumbs[1].sequence)
            }
        }
    }
}

import Logging

/// Captures what a Logger writes (swift-log's LogHandler seam).
final class CapturingLogHandler: LogHandler, @unchecked Sendable {
    struct Entry {
        let level: Logger.Level
        let message: String
        let metadata: Logger.Metadata
    }
    final class Store: Sendable {
        private let locked = Locked<[Entry]>([])
        var entries: [Entry] { locked.withLock { $0 } }
        func append(_ entry: Entry) { locked.withLock { $0.append(entry) } }
    }
    let store: Store
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    init(store: Store) { self.store = store }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        store.append(Entry(level: event.level, message: "\(event.message)", metadata: event.metadata ?? [:]))
    }
}

extension RuntimeTests.Incidents {
    @Test func loggingSinkLogsEveryIncidentWithMetadata() throws {
        let store = CapturingLogHandler.Store()
        let logger = Logger(label: "test") { _ in CapturingLogHandler(store: store) }
        let sink = LoggingIncidentSink(logger: logger, level: .error)
        CrashShieldSDK.addSink(sink)
        defer { CrashShieldSDK.removeSink(sink) }
        try withGuards {
            _ = runScenario("array.objectAtIndex.beyond")
            CrashShieldSDK.flushIncidents()
        }
        #expect(store.entries.count == 1)
        let entry = try #require(store.entries.first)
        #expect(entry.level == .error)
        #expect(entry.message.hasSuffix(" objectAtIndex:]: index 5 beyond count 2"))
        #expect(entry.metadata["guard"] == "container")
        #expect(entry.metadata["policy"] == "neutralize")
        #expect(entry.metadata["count"] == "1")
    }

    @Test func incidentNamesTheThreadThatMadeTheMisuse() throws {
        let workerThreadID = Locked<UInt64>(0)
        let incidents = try collectIncidents {
            try withGuards {
                let done = DispatchSemaphore(value: 0)
                let worker = Thread {
                    workerThreadID.withLock { $0 = cs_current_thread_id() }
                    _ = runScenario("array.objectAtIndex.beyond")
                    done.signal()
                }
                worker.start()
                done.wait()
                CrashShieldSDK.flushIncidents()
            }
        }
        #expect(incidents.count == 1)
        #expect(incidents.first?.threadID == workerThreadID.withLock { $0 })
        #expect(incidents.first?.threadID != cs_current_thread_id())
        #expect(incidents.first?.isMainThread == false)
    }
}
