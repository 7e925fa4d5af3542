@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Logging
import Testing

/// Verdicts in the API and on the issue page, the one-click protection (API and dashboard) and
/// auto-protect, on real SDK crash events (`GuardVerdictTests`' fixtures), on the database the
/// suite runs on.
@Suite("Protect")
struct ProtectTests {
    /// A fixture crash as a new event of `release` by `user`, happening now.
    static func crash(_ fixture: String, release: String, user: String) throws -> JSONValue {
        guard case .object(var event) = try GuardVerdictTests.fixture(fixture) else { throw Harness.StartFailure() }
        event["event_id"] = .string(Fixtures.eventID())
        event["timestamp"] = .double(Date().timeIntervalSince1970)
        event["release"] = .string(release)
        event["user"] = ["id": .string(user)]
        return .object(event)
    }

    static func send(_ harness: Harness, _ event: JSONValue) async throws {
        #expect(try await harness.post(body: Fixtures.envelope(event: event)).status == 200)
    }

    /// The issue of `fixture`'s crash (one issue per call site).
    static func issueID(_ harness: Harness, title: String? = nil) async throws -> Int64 {
        let fatal = try await harness.issues().filter { $0["level"]?.stringValue == "fatal" }
        let issue = try #require(title.map { wanted in fatal.first { $0["title"]?.stringValue?.contains(wanted) == true } } ?? fatal.first)
        return try #require(issue["id"]?.intValue)
    }

    @Test func theAPIShowsTheVerdictAndOneCallPublishesTheScopedSwitch() async throws {
        try await Harness.run { harness in
            try await Self.send(harness, try Self.crash("array.objectAtIndex.beyond", release: "shop@2.1.0", user: "u1"))
            try await Self.send(harness, try Self.crash("array.objectAtIndex.beyond", release: "shop@2.2.0+7", user: "u2"))
            let id = try await Self.issueID(harness)
            var response = try await harness.api("/api/0/issues/\(id)/protection")
            #expect(response.status == 200)
            #expect(response.json?["verdict"]?["guard"]?.stringValue == "container")
            #expect(response.json?["verdict"]?["rule"]?.stringValue == "container.misuse")
            let releases = response.json?["releases"]?.arrayValue?.compactMap { $0["app_version"]?.stringValue }.sorted()
            #expect(releases == ["2.1.0", "2.2.0"])

            // A document exists already: its rule stays in force for every other version.
            let config = "/api/0/projects/\(harness.project.id)/sdk-config"
            #expect(try await harness.api(config, method: "PUT", json: ["document": ["rules": [["guards": ["timer": "off"]]]]]).status == 201)
            response = try await harness.api("/api/0/issues/\(id)/protect", method: "POST", json: ["policy": "reportOnly", "releases": ["shop@2.1.0"]])
            #expect(response.status == 201)
            #expect(response.json?["guard"]?.stringValue == "container")
            #expect(response.json?["app_versions"] == ["2.1.0"])
            #expect(response.json?["config"]?["published_by"]?["api_token"]?.stringValue == "initial")
            let reason = response.json?["reason"]?.stringValue ?? ""
            #expect(reason.contains("issue \(id)") && reason.contains("container") && reason.contains("shop@2.1.0"))
            let version = try #require(response.json?["version"]?.intValue)

            // The served document, read as the SDK reads it.
            let served = try await harness.client.execute("/api/\(harness.project.id)/sdk-config",
                                                          headers: ["X-Sentry-Auth": harness.authHeader])
            let payload = try #require(served.json?["payload"]?.stringValue.flatMap { Data(base64Encoded: $0) })
            let document = try RemoteConfigDocument.parse(payload).document
            #expect(document.version == version)
            func rule(_ appVersion: String) -> RemoteConfigRule? {
                document.rule(for: RemoteConfigTarget(appVersion: appVersion, os: "Linux", osVersion: "6.1", arch: "x86_64"))
            }
            #expect(rule("2.1.0")?.guards == ["container": .reportOnly, "timer": .off])
            #expect(rule("2.2.0")?.guards == ["timer": .off], "a release not named keeps its settings")

            // The history names who and why; the protection is listed with its version.
            let history = try await harness.api(config)
            #expect(history.json?.arrayValue?.first?["reason"]?.stringValue == reason)
            let protections = try await harness.api("/api/0/projects/\(harness.project.id)/protections")
            let first = protections.json?.arrayValue?.first
            #expect(first?["protection"]?["guard"]?.stringValue == "container")
            #expect(first?["protection"]?["release"]?.stringValue == "shop@2.1.0")
            #expect(first?["protection"]?["config_version"]?.intValue == version)
            #expect(first?["protection"]?["origin"]?.stringValue == "manual")
            #expect(first?["protection"]?["policy"]?.stringValue == "reportOnly")
            #expect(first?["crashes_before"]?.intValue == 1)
            #expect(first?["crashes_after"]?.intValue == 0)

            // A crash after the switch counts after it; an incident of the guard in the release too.
            try await Self.send(harness, try Self.crash("array.objectAtIndex.beyond", release: "shop@2.1.0", user: "u3"))
            let incident: JSONValue = [
                "event_id": .string(Fixtures.eventID()), "timestamp": .double(Date().timeIntervalSince1970 + 1), "level": "warning",
                "release": "shop@2.1.0", "tags": ["crashshield.guard": "container"],
                "exception": ["values": [["type": "NSRangeException", "value": "index 5 beyond count 3",
                                          "mechanism": ["type": "crashshield.guard", "handled": true]]]],
            ]
            try await Self.send(harness, incident)
            let after = try await harness.api("/api/0/projects/\(harness.project.id)/protections").json?.arrayValue?.first
            #expect(after?["crashes_after"]?.intValue == 1)
            #expect(after?["incidents_after"]?.intValue == 1)
        }
    }

    @Test func whatCannotBeProtectedIsRefusedWithItsReason() async throws {
        try await Harness.run { harness in
            try await Self.send(harness, try Self.crash("crash-segv", release: "shop@1.0", user: "u1"))
            let segv = try await Self.issueID(harness)
            var response = try await harness.api("/api/0/issues/\(segv)/protection")
            #expect(response.status == 200)
            #expect(response.json?["verdict"] == .null)
            response = try await harness.api("/api/0/issues/\(segv)/protect", method: "POST", json: [:])
            #expect(response.status == 422)
            #expect(response.json?["code"]?.stringValue == "protect.no_verdict")

            try await Self.send(harness, try Self.crash("selector.missingObject.instance", release: "nightly", user: "u1"))
            let selector = try await Self.issueID(harness, title: "NSInvalidArgumentException")
            response = try await harness.api("/api/0/issues/\(selector)/protect", method: "POST", json: ["policy": "neutralize"])
            #expect(response.status == 422)
            #expect(response.json?["code"]?.stringValue == "protect.no_release")
            response = try await harness.api("/api/0/issues/\(selector)/protect", method: "POST", json: ["policy": "off"])
            #expect(response.status == 400)
            #expect(response.json?["code"]?.stringValue == "protect.policy")
            response = try await harness.api("/api/0/issues/\(selector)/protect", method: "POST", json: ["releases": ["other@1.0"]])
            #expect(response.status == 400)
            #expect(response.json?["code"]?.stringValue == "protect.release")
            #expect(try await harness.api("/api/0/issues/999999/protect", method: "POST", json: [:]).status == 404)

            // The zombie guard acts on the classes named: none on this stack, so they must be given.
            try await Self.send(harness, try Self.crash("zombie.message.object", release: "shop@1.0", user: "u1"))
            let zombie = try #require(try await harness.issues().compactMap { $0["id"]?.intValue }.first { $0 != segv && $0 != selector },
                                      "a message to a freed object is an issue of its own")
            response = try await harness.api("/api/0/issues/\(zombie)/protect", method: "POST", json: [:])
            #expect(response.status == 422)
            #expect(response.json?["code"]?.stringValue == "protect.needs_class_prefix")
            #expect(try await harness.client.execute("/api/0/issues/\(selector)/protect", method: "POST").status == 401)
            #expect(try await harness.api("/api/0/projects/\(harness.project.id)/sdk-config").json?.arrayValue?.isEmpty == true,
                    "nothing was published")
            response = try await harness.api("/api/0/issues/\(zombie)/protect", method: "POST", json: ["class_prefixes": ["CS"]])
            #expect(response.status == 201)
            let rule = response.json?["config"]?["document"]?["rules"]?.arrayValue?.first
            #expect(rule?["guards"]?["zombie"]?.stringValue == "reportOnly")
            #expect(rule?["zombie_class_prefixes"] == ["CS"])
        }
    }

    @Test func theIssuePageSaysWhichGuardAndOneClickPublishes() async throws {
        try await Harness.run({ $0.adminPassword = DashboardTests.adminPassword }) { harness in
            try await Self.send(harness, try Self.crash("kvo.removeObserverContext.neverAdded", release: "shop@3.0", user: "u1"))
            let id = try await Self.issueID(harness)
            let browser = Browser(baseURL: harness.client.baseURL)
            #expect(try await browser.logIn().status == 303)
            let page = try await browser.get("/issues/\(id)")
            #expect(page.status == 200)
            #expect(page.text.contains("data-verdict=\"kvo\""))
            #expect(page.text.contains("data-protect=\"reportOnly\"") && page.text.contains("data-protect=\"neutralize\""))
            let csrf = try #require(Browser.csrfToken(in: page))
            #expect(try await browser.post("/issues/\(id)/protect", form: [("policy", "neutralize"), ("csrf_token", "wrong")]).status == 403)
            let posted = try await browser.post("/issues/\(id)/protect", form: [("policy", "neutralize"), ("csrf_token", csrf)])
            #expect(posted.status == 303)
            let history = try await harness.api("/api/0/projects/\(harness.project.id)/sdk-config").json?.arrayValue ?? []
            #expect(history.count == 1)
            #expect(history.first?["published_by"]?["account"]?.stringValue == "admin")
            #expect(history.first?["published_by"]?["api_token"] == .null)
            let rules = history.first?["document"]?["rules"]?.arrayValue
            #expect(rules?.first?["guards"]?["kvo"]?.stringValue == "neutralize")
            #expect(rules?.first?["when"]?["app_version"]?.stringValue == "=3.0")
            let after = try await browser.get("/issues/\(id)")
            #expect(after.text.contains("data-protections"))
            let prevented = try await browser.get("/projects/\(harness.project.id)/prevented")
            #expect(prevented.text.contains("data-crashes-before>1<"))
            let config = try await browser.get("/projects/\(harness.project.id)/config")
            #expect(config.text.contains("data-reason"))
        }
    }

    @Test func autoProtectPublishesOnceWhenACrashReachesTheThreshold() async throws {
        try await Harness.run({ $0.autoProtectInterval = 0.2 }) { harness in
            let settings = "/api/0/projects/\(harness.project.id)/auto-protect"
            var response = try await harness.api(settings)
            #expect(response.json?["enabled"] == .bool(false), "off by default")
            #expect(response.json?["users"]?.intValue == ProtectService.defaultAutoProtectUsers)
            #expect(try await harness.api(settings, method: "PUT", json: ["enabled": true, "users": 0]).status == 400)
            response = try await harness.api(settings, method: "PUT", json: ["enabled": true, "users": 2])
            #expect(response.json?["enabled"] == .bool(true) && response.json?["users"]?.intValue == 2)

            let config = "/api/0/projects/\(harness.project.id)/sdk-config"
            // One user, twice: below the threshold. A crash no guard covers, from two users: no switch.
            try await Self.send(harness, try Self.crash("string.substringFromIndex.beyond", release: "shop@4.0", user: "u1"))
            try await Self.send(harness, try Self.crash("string.substringFromIndex.beyond", release: "shop@4.0", user: "u1"))
            try await Self.send(harness, try Self.crash("crash-segv", release: "shop@4.0", user: "u1"))
            try await Self.send(harness, try Self.crash("crash-segv", release: "shop@4.0", user: "u2"))
            try await Task.sleep(for: .seconds(1))
            #expect(try await harness.api(config).json?.arrayValue?.isEmpty == true)
            // A second user: published, report-only, by auto-protect, with the reason.
            try await Self.send(harness, try Self.crash("string.substringFromIndex.beyond", release: "shop@4.0", user: "u2"))
            var history: [JSONValue] = []
            for _ in 0..<50 where history.isEmpty {
                try await Task.sleep(for: .milliseconds(200))
                history = try await harness.api(config).json?.arrayValue ?? []
            }
            #expect(history.count == 1)
            #expect(history.first?["published_by"]?["automation"]?.stringValue == "auto-protect")
            #expect(history.first?["reason"]?.stringValue?.contains("reached 2 users in release shop@4.0") == true)
            #expect(history.first?["document"]?["rules"]?.arrayValue?.first?["guards"]?["string"]?.stringValue == "reportOnly")
            // More users and passes: never published twice for the issue and release.
            try await Self.send(harness, try Self.crash("string.substringFromIndex.beyond", release: "shop@4.0", user: "u3"))
            try await Task.sleep(for: .seconds(1))
            #expect(try await harness.api(config).json?.arrayValue?.count == 1)
            let protections = try await harness.api("/api/0/projects/\(harness.project.id)/protections").json?.arrayValue ?? []
            #expect(protections.count == 1 && protections.first?["protection"]?["origin"]?.stringValue == "auto")
        }
    }

    /// Two collectors on one database (two stores here, each with its own connections) run their
    /// passes at once: the claim lets one publish.
    @Test func twoStoresRunningAutoProtectAtOncePublishOnce() async throws {
        let fresh = try await TestDatabase.fresh()
        do {
            try await Self.racingPasses(fresh)
        } catch {
            await fresh.drop()
            throw error
        }
        await fresh.drop()
    }

    static func racingPasses(_ fresh: TestDatabase.Fresh) async throws {
        try await Harness.run(configuration: {
            var configuration = CollectorConfiguration(database: fresh.database, dataDirectory: NSTemporaryDirectory())
            configuration.initialAPIToken = Harness.token
            configuration.port = 0
            configuration.autoProtectInterval = 3600
            return configuration
        }()) { harness in
            for user in ["a", "b"] {
                try await Self.send(harness, try Self.crash("nsnull.length.null", release: "shop@5.0", user: user))
            }
            #expect(try await harness.api("/api/0/projects/\(harness.project.id)/auto-protect", method: "PUT",
                                          json: ["enabled": true, "users": 2]).status == 200)
            var quiet = Logger(label: "protect-tests")
            quiet.logLevel = .critical
            let logger = quiet
            let stores: [SQLStore] = try await [Self.open(fresh.database, logger), Self.open(fresh.database, logger)]
            let published = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for store in stores {
                    group.addTask {
                        try await ProtectService(store: store, sdkConfig: SDKConfigService(store: store, maxAge: 0)).autoProtect(logger: logger)
                    }
                }
                return try await group.reduce([], +)
            }
            for store in stores { try await store.close() }
            #expect(published.count == 1)
            #expect(try await harness.api("/api/0/projects/\(harness.project.id)/sdk-config").json?.arrayValue?.count == 1)
        }
    }

    static func open(_ database: CollectorConfiguration.Database, _ logger: Logger) async throws -> SQLStore {
        switch database {
        case .sqlite(let path): return try await SQLStore.openSQLite(path: path, logger: logger, lockTimeout: 5)
        case .postgres(let url): return try await SQLStore.openPostgres(url: url, logger: logger, lockTimeout: 5)
        }
    }
}
