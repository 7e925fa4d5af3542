import CrashShieldBase
import Foundation
import Testing
@testable import CrashShield
import CrashShieldRecording
import CrashShieldSentry
import CrashShieldProtocol

/// The process-wide scope through `CrashShieldSDK`, and incidents carrying it.
/// Under the serialized `RuntimeTests`: the scope is one per process and incidents read it.
extension RuntimeTests {
    @Suite struct IncidentScope {
        @Test func incidentCarriesTheScopeOfItsDelivery() throws {
            CrashScope.clear()
            defer { CrashScope.clear() }
            CrashScope.setUser(CrashScope.User(id: "7", email: "seven@example.com"))
            CrashScope.setTag("environment", "test")
            CrashScope.setContext("order", ["id": "A-1"])
            for index in 0..<15 { CrashScope.addBreadcrumb(message: "step \(index)", category: "flow", level: .debug) }
            var options = CrashShieldOptions()
            options.countUpdateInterval = .seconds(3600)
            let incidents = try collectIncidents {
                try withGuards(options) {
                    #expect(runScenario("array.objectAtIndex.beyond") == .neutral)
                    CrashShieldSDK.flushIncidents()
                }
            }
            let incident = try #require(incidents.first)
            #expect(incident.scope.user == CrashScope.User(id: "7", email: "seven@example.com"))
            #expect(incident.scope.tags == ["environment": "test"])
            #expect(incident.scope.contexts == ["order": ["id": "A-1"]])
            // The most recent breadcrumbs only, oldest first.
            #expect(incident.scope.breadcrumbs.map(\.message) == (5..<15).map { "step \($0)" })
            #expect(incident.scope.breadcrumbs.allSatisfy { $0.category == "flow" && $0.level == .debug })
        }

        /// The incident's event carries the app's scope: the app's user (not the
        /// installation id), its tags beside CrashShield's, its contexts and its breadcrumbs.
        /// Before: user.id was the installation id, no app tag, context or breadcrumb.
        @Test func incidentEventCarriesTheAppsScope() throws {
            CrashScope.clear()
            defer { CrashScope.clear() }
            CrashScope.setUser(CrashScope.User(id: "user-42", email: "ada@example.com"))
            CrashScope.setTag("checkout_flow", "v2")
            CrashScope.setContext("order", ["id": "A-1", "items": "3"])
            CrashScope.setContext("app", ["screen": "cart"])
            CrashScope.addBreadcrumb(message: "opened cart", category: "ui")
            CrashScope.addBreadcrumb(message: "tapped pay", category: "ui.click", level: .warning)
            var options = CrashShieldOptions()
            options.countUpdateInterval = .seconds(3600)
            let incidents = try collectIncidents {
                try withGuards(options) {
                    #expect(runScenario("array.objectAtIndex.beyond") == .neutral)
                    CrashShieldSDK.flushIncidents()
                }
            }
            let record = try #require(incidents.first).reportingRecord
            let reporting = try ReportingOptions(dsn: "https://0123456789abcdef0123456789abcdef@127.0.0.1:9/1", release: "tests@1")
            let reporter = EventReporter(options: reporting, installationID: "7f1c2e3d-4b5a-4697-8877-665544332211")
            let envelope = try #require(reporter.incidentEnvelope(record, converter: reporter.incidentConverter(appVersion: "1.0")))
            let event = try #require(try Envelope.parse(envelope.serialized()).event())
            #expect(event.user == SentryEvent.User(id: "user-42", email: "ada@example.com"))
            #expect(event.tags?["checkout_flow"] == "v2")
            #expect(event.tags?["crashshield.guard"] == "container", "CrashShield's own tags stay: \(event.tags ?? [:])")
            #expect(event.contexts?.named?["order"] == ["id": "A-1", "items": "3"])
            // The app's "app" context joins the SDK's: both its entry and the SDK's fields.
            #expect(event.contexts?.named?["app"] == ["screen": "cart"] && event.contexts?.app?.appVersion == "1.0")
            #expect(event.breadcrumbs?.values.map(\.message) == ["opened cart", "tapped pay"])
            #expect(event.breadcrumbs?.values.map(\.category) == ["ui", "ui.click"])
            #expect(event.breadcrumbs?.values.last?.level == .warning)
            // Without a user, the installation id stands in, as before.
            CrashScope.setUser(nil)
            var anonymous = record
            anonymous.scope?.user = nil
            anonymous.fingerprint ^= 1
            let second = try #require(reporter.incidentEnvelope(anonymous, converter: reporter.incidentConverter()))
            #expect(try Envelope.parse(second.serialized()).event()?.user == SentryEvent.User(id: "7f1c2e3d-4b5a-4697-8877-665544332211"))
            if let out = ProcessInfo.processInfo.environment["CRASHSHIELD_INTEROP_DIR"] {
                try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
                try envelope.serialized().write(to: URL(fileURLWithPath: out + "/live-incident-scope.envelope"))
            }
        }

        @Test func incidentWithoutScopeCarriesAnEmptyOne() throws {
            CrashScope.clear()
            let incidents = try collectIncidents {
                try withGuards {
                    _ = runScenario("array.objectAtIndex.beyond")
                    CrashShieldSDK.flushIncidents()
                }
            }
            let incident = try #require(incidents.first)
            #expect(incident.scope.isEmpty)
        }

        /// The forwarders change the one process-wide scope, and the crash handler's text follows
        /// every change.
        @Test func sdkForwardersChangeTheProcessWideScope() throws {
            CrashScope.clear()
            defer { CrashScope.clear() }
            #expect(CrashScope.publishedJSONForTesting.isEmpty)
            CrashScope.setUser(CrashScope.User(username: "ada"))
            CrashScope.setTag("a", "1")
            CrashScope.setTag("b", "2")
            CrashScope.removeTag("a")
            CrashScope.setContext("app", ["screen": "home"])
            CrashScope.addBreadcrumb(message: "hello", data: ["k": "v"])
            let scope = CrashScope.current
            #expect(scope.user?.username == "ada")
            #expect(scope.tags == ["b": "2"])
            #expect(scope.contexts["app"] == ["screen": "home"])
            #expect(scope.breadcrumbs.map(\.message) == ["hello"])
            #expect(scope.breadcrumbs.first?.level == .info)
            let published = try #require(try JSONSerialization.jsonObject(with: Data(CrashScope.publishedJSONForTesting.utf8)) as? [String: Any])
            #expect(published["tags"] as? [String: String] == ["b": "2"])
            CrashScope.clearBreadcrumbs()
            #expect(CrashScope.current.breadcrumbs.isEmpty)
            CrashScope.setUser(nil)
            #expect(CrashScope.current.user == nil)
            CrashScope.clear()
            #expect(CrashScope.current.isEmpty)
            #expect(CrashScope.publishedJSONForTesting.isEmpty)
        }

        /// Many threads changing the scope at once: no crash, every bound holds, and the text
        /// published for the handler stays strict JSON.
        @Test func concurrentChangesKeepTheScopeBoundedAndValid() async throws {
            CrashScope.clear()
            defer { CrashScope.clear() }
            await withTaskGroup(of: Void.self) { group in
                for thread in 0..<8 {
                    group.addTask {
                        for step in 0..<300 {
                            CrashScope.setTag("t\(thread)-\(step % 20)", "\(step)")
                            CrashScope.addBreadcrumb(message: "\(thread) \(step)")
                            CrashScope.setContext("c\(thread)", ["step": "\(step)"])
                            if step % 25 == 0 { CrashScope.setUser(CrashScope.User(id: "\(thread)")) }
                        }
                    }
                }
            }
            let scope = CrashScope.current
            #expect(scope.tags.count == CrashScope.maxTags)
            #expect(scope.contexts.count == 8)
            #expect(scope.breadcrumbs.count == CrashScope.maxBreadcrumbs)
            let text = CrashScope.publishedJSONForTesting
            #expect(text.utf8.count <= CrashScope.maxReportBytes)
            #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8))) is [String: Any])
        }
    }
}
