import CrashShieldBase
import CrashShieldRecording
import CrashShieldSentry
import CrashShieldProtocol
import Foundation
import Testing
@testable import CrashShield
import _CrashShieldScenarios

extension RuntimeTests {
    /// A real guard incident, mapped to reporting's record and converted to an event envelope.
    @Suite struct IncidentReporting {
        @Test func aGuardIncidentBecomesAWarningEventWithItsFingerprint() throws {
            var options = CrashShieldOptions()
            options.countUpdateInterval = .seconds(3600)
            let incidents = try collectIncidents {
                try withGuards(options) {
                    #expect(runScenario("array.objectAtIndex.beyond") == .neutral)
                    CrashShieldSDK.flushIncidents()
                }
            }
            let incident = try #require(incidents.first)
            let record = incident.reportingRecord
            #expect(record.guardName == "container" && record.policy == "neutralize" && record.selector == "objectAtIndex:")
            #expect(record.reason == incident.reason && record.fingerprint == incident.fingerprint && record.isFirstOccurrence)
            #expect(record.frames.map(\.address) == incident.frames.map { UInt64($0.address) })

            let reporting = try ReportingOptions(dsn: "https://0123456789abcdef0123456789abcdef@127.0.0.1:9/1", release: "tests@1")
            let reporter = EventReporter(options: reporting, installationID: "7f1c2e3d-4b5a-4697-8877-665544332211")
            let converter = reporter.incidentConverter(appVersion: "1.0")
            let envelope = try #require(reporter.incidentEnvelope(record, converter: converter))
            let event = try #require(try Envelope.parse(envelope.serialized()).event())
            #expect(event.level == .warning && event.release == "tests@1")
            let exception = try #require(event.exception?.values.first)
            #expect(exception.type == "container" && exception.value == incident.reason && exception.mechanism?.handled == true)
            #expect(event.fingerprint == ["crashshield.incident", "container", record.fingerprintHex])
            // Caller → callee: the call site (the first return address) is the last frame.
            #expect(exception.stacktrace?.frames.last?.instructionAddr == "0x" + String(record.frames[0].address, radix: 16))
            #expect(event.contexts?.os?.name == "Linux" && event.contexts?.app?.appVersion == "1.0")
            // debug_meta from the image files: at least the image of the scenario code (the call site).
            #expect(event.debugMeta?.images.isEmpty == false)
            #expect(event.debugMeta?.images.allSatisfy { $0.debugID != nil && $0.codeID != nil } == true)
            if let out = ProcessInfo.processInfo.environment["CRASHSHIELD_INTEROP_DIR"] {
                try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
                try envelope.serialized().write(to: URL(fileURLWithPath: out + "/live-incident.envelope"))
            }
            // The same fingerprint again, below ten occurrences: no second event.
            var repeated = record
            repeated.count = 4
            repeated.isFirstOccurrence = false
            #expect(reporter.incidentEnvelope(repeated, converter: converter) == nil)
        }
    }
}
