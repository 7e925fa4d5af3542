import Foundation
import Testing
@testable import CrashShield

/// Issue 13 item 7: the process-wide scope through `CrashShieldSDK`, and incidents carrying it.
/// Under the serialized `RuntimeTests`: the scope is one per process and incidents read it.
extension RuntimeTests {
    @Suite struct IncidentScope {
        @Test func incidentCarriesTheScopeOfItsDelivery() throws {
            CrashShieldSDK.clearScope()
            defer { CrashShieldSDK.clearScope() }
            CrashShieldSDK.setUser(CrashScope.User(id: "7", email: "seven@example.com"))
            CrashShieldSDK.setTag("environment", "test")
            CrashShieldSDK.setContext("order", ["id": "A-1"])
            for index in 0..<15 { CrashShieldSDK.addBreadcrumb(message: "step \(index)", category: "flow", level: .debug) }
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

        @Test func incidentWithoutScopeCarriesAnEmptyOne() throws {
            CrashShieldSDK.clearScope()
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
            CrashShieldSDK.clearScope()
            defer { CrashShieldSDK.clearScope() }
            #expect(CrashScope.publishedJSONForTesting.isEmpty)
            CrashShieldSDK.setUser(CrashScope.User(username: "ada"))
            CrashShieldSDK.setTag("a", "1")
            CrashShieldSDK.setTag("b", "2")
            CrashShieldSDK.removeTag("a")
            CrashShieldSDK.setContext("app", ["screen": "home"])
            CrashShieldSDK.addBreadcrumb(message: "hello", data: ["k": "v"])
            let scope = CrashScope.current
            #expect(scope.user?.username == "ada")
            #expect(scope.tags == ["b": "2"])
            #expect(scope.contexts["app"] == ["screen": "home"])
            #expect(scope.breadcrumbs.map(\.message) == ["hello"])
            #expect(scope.breadcrumbs.first?.level == .info)
            let published = try #require(try JSONSerialization.jsonObject(with: Data(CrashScope.publishedJSONForTesting.utf8)) as? [String: Any])
            #expect(published["tags"] as? [String: String] == ["b": "2"])
            CrashShieldSDK.clearBreadcrumbs()
            #expect(CrashScope.current.breadcrumbs.isEmpty)
            CrashShieldSDK.setUser(nil)
            #expect(CrashScope.current.user == nil)
            CrashShieldSDK.clearScope()
            #expect(CrashScope.current.isEmpty)
            #expect(CrashScope.publishedJSONForTesting.isEmpty)
        }

        /// Many threads changing the scope at once: no crash, every bound holds, and the text
        /// published for the handler stays strict JSON.
        @Test func concurrentChangesKeepTheScopeBoundedAndValid() async throws {
            CrashShieldSDK.clearScope()
            defer { CrashShieldSDK.clearScope() }
            await withTaskGroup(of: Void.self) { group in
                for thread in 0..<8 {
                    group.addTask {
                        for step in 0..<300 {
                            CrashShieldSDK.setTag("t\(thread)-\(step % 20)", "\(step)")
                            CrashShieldSDK.addBreadcrumb(message: "\(thread) \(step)")
                            CrashShieldSDK.setContext("c\(thread)", ["step": "\(step)"])
                            if step % 25 == 0 { CrashShieldSDK.setUser(CrashScope.User(id: "\(thread)")) }
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
