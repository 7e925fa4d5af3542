import Foundation
import Testing
@_spi(Testing) @testable import CrashShield
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
                    #expect(CrashShield.statistics.recorded == 5)
                    #expect(CrashShield.statistics.fingerprints == 1)
                    CrashShield.flushIncidents()
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
                    CrashShield.flushIncidents()
                }
            }
            #expect(incidents.map(\.kind) == [.firstOccurrence, .countUpdate, .countUpdate])
            #expect(incidents.map(\.count) == [1, 2, 3])
        }

        @Test func incidentStreamReceivesIncidents() async throws {
            CrashShield._resetForTesting()
            try CrashShield.start()
            defer { CrashShield._resetForTesting() }
            let stream = CrashShield.incidents
            _ = runScenario("string.characterAtIndex.beyond")
            var iterator = stream.makeAsyncIterator()
            let incident = await iterator.next()
            #expect(incident?.guardID == .string)
            #expect(incident?.selector == "characterAtIndex:")
            #expect(incident?.reason == "index 9 beyond length 3")
        }

        @Test func closureSinkIsCalled() throws {
            let box = InMemoryIncidentSink()
            let sink = CrashShield.onIncident { box.receive($0) }
            defer { CrashShield.removeSink(sink) }
            try withGuards {
                _ = runScenario("array.objectAtIndex.beyond")
                CrashShield.flushIncidents()
            }
            #expect(box.incidents.count == 1)
        }

        @Test func inMemorySinkKeepsTheNewest() {
            let sink = InMemoryIncidentSink(capacity: 2)
            let incidents = try? collectIncidents {
                try withGuards {
                    _ = runScenario("array.objectAtIndex.beyond")
                    _ = runScenario("string.characterAtIndex.beyond")
                    CrashShield.flushIncidents()
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
