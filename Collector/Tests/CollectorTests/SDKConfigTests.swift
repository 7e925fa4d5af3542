@testable import CollectorApp
@testable import CollectorCommandLine
import CrashShieldProtocol
import Foundation
import Testing

@Suite("Collector SDK configuration")
struct SDKConfigTests {
    static let document: JSONValue = ["rules": [["when": ["os": "iOS"], "guards": ["container": "neutralize", "timer": "off"]]]]

    static func configPath(_ harness: Harness) -> String { "/api/0/projects/\(harness.project.id)/sdk-config" }

    @Test func publishedDocumentIsServedSignedWithETagAnd304() async throws {
        try await Harness.run { harness in
            let configPath = "/api/\(harness.project.id)/sdk-config?release=app@1.0&os=Linux"
            let auth = ["X-Sentry-Auth": harness.authHeader]
            #expect(try await harness.client.execute(configPath, headers: auth).status == 404)

            let published = try await harness.api(Self.configPath(harness), method: "PUT", json: ["document": Self.document])
            #expect(published.status == 201)
            #expect(published.json?["version"]?.intValue == 1)
            #expect(published.json?["warnings"]?.arrayValue == [])

            let served = try await harness.client.execute(configPath, headers: auth)
            #expect(served.status == 200)
            #expect(served.headers["cache-control"] == "max-age=300")
            let payload = try #require(served.json?["payload"]?.stringValue.flatMap { Data(base64Encoded: $0) })
            let document = try JSONValue.parse(payload)
            #expect(document["version"]?.intValue == 1)
            #expect(document["rules"]?.arrayValue?.first?["guards"]?["timer"]?.stringValue == "off")
            #expect(document["issued_at"]?.stringValue != nil)
            let signature = try #require(served.json?["signature"]?.stringValue.flatMap { Data(base64Encoded: $0) })
            let publicKey = try #require(Data(base64Encoded: harness.project.configSigningPublicKey))
            #expect(CryptoSupport.ed25519Verify(signature, message: payload, publicKey: publicKey))
            var tampered = payload
            tampered[tampered.startIndex] = UInt8(ascii: "[")
            #expect(!CryptoSupport.ed25519Verify(signature, message: tampered, publicKey: publicKey))

            let etag = try #require(served.headers["etag"])
            let notModified = try await harness.client.execute(configPath, headers: auth.merging(["If-None-Match": etag]) { $1 })
            #expect(notModified.status == 304)
            #expect(notModified.body.isEmpty)
            #expect(notModified.headers["etag"] == etag)
            #expect(try await harness.client.execute(configPath, headers: auth.merging(["If-None-Match": "\"v0-0\""]) { $1 }).status == 200)
            #expect(try await harness.client.execute(configPath).status == 401)
            #expect(try await harness.client.execute(configPath, headers: ["X-Sentry-Auth": "Sentry sentry_key=0123456789abcdef0123456789abcdef"]).status == 403)

            // A new version changes the tag: the old one no longer matches.
            _ = try await harness.api(Self.configPath(harness), method: "PUT", json: ["document": ["rules": []]])
            let changed = try await harness.client.execute(configPath, headers: auth.merging(["If-None-Match": etag]) { $1 })
            #expect(changed.status == 200)
            #expect(changed.headers["etag"] != etag)

            // Every answer is counted by status on /metrics: 200 three times, one 304, 404, 401, 403.
            let metrics = String(decoding: try await harness.client.execute("/metrics").body, as: UTF8.self)
            for (status, count) in [(200, 3), (304, 1), (401, 1), (403, 1), (404, 1)] {
                #expect(metrics.contains("collector_sdk_config_responses_total{status=\"\(status)\"} \(count)\n"), "status \(status)")
            }
        }
    }

    @Test func theServeOptionSetsTheMaxAgeTheDocumentIsServedWith() async throws {
        #expect(try IngestQueueOptionsTests.serve([]).makeConfiguration(environment: [:]).sdkConfigMaxAge == 300)
        let configuration = try IngestQueueOptionsTests.serve(["--sdk-config-max-age", "0"]).makeConfiguration(environment: [:])
        #expect(configuration.sdkConfigMaxAge == 0)
        #expect(IngestQueueOptionsTests.refusal(["--sdk-config-max-age=-1"])?.contains("--sdk-config-max-age must be 0 or more seconds (got -1)") == true)
        try await Harness.run({ $0.sdkConfigMaxAge = configuration.sdkConfigMaxAge }) { harness in
            _ = try await harness.api(Self.configPath(harness), method: "PUT", json: ["document": Self.document])
            let served = try await harness.client.execute("/api/\(harness.project.id)/sdk-config", headers: ["X-Sentry-Auth": harness.authHeader])
            #expect(served.status == 200 && served.headers["cache-control"] == "max-age=0")
        }
    }

    @Test func historyRollbackAndVersionConflicts() async throws {
        try await Harness.run { harness in
            let path = Self.configPath(harness)
            #expect(try await harness.api(path, method: "PUT", json: ["document": Self.document]).status == 201)
            #expect(try await harness.api(path, method: "PUT", json: ["document": ["rules": [["guards": ["zombie": "off"]]]]]).status == 201)
            var response = try await harness.api(path, method: "PUT", json: ["document": ["version": 2, "rules": []]])
            #expect(response.status == 409)
            #expect(response.json?["code"]?.stringValue == "sdk_config.version_conflict")
            response = try await harness.api(path, method: "PUT", json: ["nothing": 1])
            #expect(response.status == 400)
            #expect(response.json?["code"]?.stringValue == "sdk_config.invalid")
            // A version the document names is used when it is above the newest.
            response = try await harness.api(path, method: "PUT", json: ["document": ["version": 10, "rules": []]])
            #expect(response.status == 201)
            #expect(response.json?["version"]?.intValue == 10)
            response = try await harness.api(path + "/rollback", method: "POST", json: ["version": 1])
            #expect(response.status == 201)
            #expect(response.json?["version"]?.intValue == 11)
            #expect(response.json?["restored_from"]?.intValue == 1)
            #expect(response.json?["document"]?["rules"] == Self.document["rules"])
            response = try await harness.api(path)
            #expect(response.json?.arrayValue?.map { $0["version"]?.intValue } == [11, 10, 2, 1])
            #expect(try await harness.api(path + "/rollback", method: "POST", json: ["version": 42]).status == 404)
        }
    }

    // MARK: Who published

    /// The `published_by` member of a version in the API's JSON.
    static func publisher(account: String?, token: String?) -> JSONValue {
        ["account": account.map { .string($0) } ?? .null, "api_token": token.map { .string($0) } ?? .null]
    }

    /// The history row of version `version` on the dashboard's configuration page.
    static func historyRow(_ version: Int, in page: String) -> String? {
        AccountPagesTests.match("(?s)(<tr><td class=\"num\">v\(version)</td>.*?</tr>)", in: page)
    }

    @Test func historyRecordsWhoPublishedOrRolledBackEachVersion() async throws {
        try await DashboardTests.run { harness, admin in
            let path = Self.configPath(harness)
            // v1 through the API with the first-start token, which no account owns.
            var response = try await harness.api(path, method: "PUT", json: ["document": Self.document])
            #expect(response.status == 201)
            #expect(response.json?["published_by"] == Self.publisher(account: nil, token: "initial"))

            // An account "alice" with an API token "deploy" of her own.
            #expect(try await AccountPagesTests.logIn(admin).status == 303)
            let adminCSRF = try #require(Browser.csrfToken(in: try await admin.get("/accounts")))
            let added = try await admin.post("/accounts", form: [("name", "alice"), ("password", ""), ("csrf_token", adminCSRF)])
            let password = try #require(AccountPagesTests.match("id=\"new-password\">([0-9a-f]{36})<", in: added.text))
            let alice = Browser(baseURL: admin.baseURL)
            #expect(try await AccountPagesTests.logIn(alice, name: "alice", password: password).status == 303)
            let aliceCSRF = try #require(Browser.csrfToken(in: try await alice.get("/account")))
            let created = try await alice.post("/account/tokens", form: [("name", "deploy"), ("csrf_token", aliceCSRF)])
            let aliceToken = try #require(AccountPagesTests.match("id=\"new-token\">(csc_[0-9a-f]{64})<", in: created.text))
            let asAlice = ["Authorization": "Bearer \(aliceToken)", "Content-Type": "application/json"]

            // v2 through the API with alice's token.
            response = try await harness.client.execute(path, method: "PUT", headers: asAlice,
                                                        body: JSONValue.object(["document": ["rules": []]]).jsonData())
            #expect(response.status == 201)
            #expect(response.json?["published_by"] == Self.publisher(account: "alice", token: "deploy"))
            // v3 from the dashboard by admin; v4 a rollback to v1 from the dashboard by alice.
            #expect(try await admin.post("/projects/\(harness.project.id)/config",
                                         form: [("csrf_token", adminCSRF), ("document", "{\"rules\": [{\"guards\": {\"kvo\": \"off\"}}]}")]).status == 303)
            #expect(try await alice.post("/projects/\(harness.project.id)/config/rollback",
                                         form: [("csrf_token", aliceCSRF), ("version", "1")]).status == 303)
            // v5 a rollback to v2 through the API with alice's token.
            response = try await harness.client.execute(path + "/rollback", method: "POST", headers: asAlice,
                                                        body: JSONValue.object(["version": 2]).jsonData())
            #expect(response.status == 201)
            #expect(response.json?["restored_from"]?.intValue == 2)

            let expected: [(version: Int64, publisher: JSONValue, restoredFrom: Int64?)] = [
                (5, Self.publisher(account: "alice", token: "deploy"), 2),
                (4, Self.publisher(account: "alice", token: nil), 1),
                (3, Self.publisher(account: "admin", token: nil), nil),
                (2, Self.publisher(account: "alice", token: "deploy"), nil),
                (1, Self.publisher(account: nil, token: "initial"), nil),
            ]
            func checkHistory() async throws {
                let history = try await harness.api(path).json?.arrayValue ?? []
                #expect(history.map { $0["version"]?.intValue } == expected.map(\.version))
                #expect(history.map { $0["published_by"] } == expected.map(\.publisher))
                #expect(history.map { $0["restored_from"]?.intValue } == expected.map(\.restoredFrom))
            }
            try await checkHistory()

            // The dashboard's history names them (escaped as text).
            let page = try await admin.get("/projects/\(harness.project.id)/config")
            #expect(page.status == 200 && page.text.contains("<th>By</th>"))
            let names: [Int: String] = [5: "alice (API token &quot;deploy&quot;)", 4: "alice", 3: "admin",
                                        2: "alice (API token &quot;deploy&quot;)", 1: "API token &quot;initial&quot;"]
            for (version, name) in names {
                let row = Self.historyRow(version, in: page.text)
                #expect(row?.contains("<span data-published-by>\(name)</span>") == true, "v\(version): \(row ?? "no row")")
            }
            #expect(Self.historyRow(4, in: page.text)?.contains("rollback to v1") == true)

            // Removing alice (and so her token) keeps her name in the history.
            let accounts = try await admin.get("/accounts").text
            let aliceID = try #require(AccountPagesTests.match("action=\"/accounts/([0-9]+)/delete\"", in: accounts))
            #expect(try await admin.post("/accounts/\(aliceID)/delete", form: [("csrf_token", adminCSRF)]).status == 303)
            #expect(try await harness.client.execute(path, headers: asAlice).status == 401)
            try await checkHistory()
        }
    }

    /// A database whose versions were published before schema version 5 keeps them; they read as
    /// "not recorded" (API: no `published_by`), and new versions record their publisher.
    @Test func versionsFromBeforeMigrationFiveReadAsNotRecorded() async throws {
        try await TestDatabase.withStore(migrated: false) { store in
            // The schema as version 4 left it, with a version published then.
            let dialect = store.backend.dialect
            _ = try await store.query(SQLStore.typed("CREATE TABLE schema_migrations (version {int} PRIMARY KEY, applied_at {real} NOT NULL)", for: dialect)!)
            for migration in SQLStore.migrations where migration.version <= 4 {
                for statement in migration.statements { _ = try await store.query(SQLStore.typed(statement, for: dialect)!) }
                _ = try await store.query("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", [.int(Int64(migration.version)), .double(0)])
            }
            let project = try await store.createProject(name: "old")
            _ = try await store.query("INSERT INTO sdk_configs (project_id, version, document, signature, created_at) VALUES (?, 1, ?, NULL, 0)",
                                      [.int(project.id), .blob(Data("{\"rules\":[],\"version\":1}".utf8))])

            try await store.migrate()
            #expect(try await store.appliedMigrations() == SQLStore.migrations.map(\.version))
            let old = try #require(try await store.sdkConfig(projectID: project.id, version: 1))
            #expect(old.publishedBy == nil)
            #expect(SDKConfigView(old).publishedBy == nil)
            let service = SDKConfigService(store: store, maxAge: 60)
            let next = try await service.rollback(projectID: project.id, to: 1, by: .apiToken("ci", owner: "bob"))
            #expect(try await store.sdkConfig(projectID: project.id, version: next.version)?.publishedBy == SDKConfigPublisher(account: "bob", apiToken: "ci"))
            #expect(try await store.sdkConfigHistory(projectID: project.id).map(\.publishedBy) == [.apiToken("ci", owner: "bob"), nil])
        }
    }

    // MARK: Validation with the SDK's model

    /// Documents the SDK's parser refuses, the path it names and its code.
    static let refused: [(document: JSONValue, path: String, sdkCode: String)] = [
        (["rules": [["guards": ["timer": "log"]]]], "$.rules[0].guards.timer", RemoteConfigError.invalidValueCode),
        (["rules": [["guards": ["container": "neutralize"]], ["guards": ["kvo": "Off"]]]], "$.rules[1].guards.kvo", RemoteConfigError.invalidValueCode),
        (["rules": [["when": ["app_version": ">=two"]]]], "$.rules[0].when.app_version", RemoteConfigError.invalidConstraintCode),
        (["rules": [["when": ["os_version": ">=16,"]]]], "$.rules[0].when.os_version", RemoteConfigError.invalidConstraintCode),
        (["rules": [["when": ["os": ""]]]], "$.rules[0].when.os", RemoteConfigError.invalidValueCode),
        (["rules": [["when": ["arch": nil]]]], "$.rules[0].when.arch", RemoteConfigError.invalidValueCode),
        (["rules": [["incident_sample_rate": 1.5]]], "$.rules[0].incident_sample_rate", RemoteConfigError.invalidValueCode),
        (["rules": [["incident_sample_rate": -0.1]]], "$.rules[0].incident_sample_rate", RemoteConfigError.invalidValueCode),
        (["rules": [["capture": "yes"]]], "$.rules[0].capture", RemoteConfigError.invalidValueCode),
        (["rules": [["allow_class_prefixes": ["MY", ""]]]], "$.rules[0].allow_class_prefixes[1]", RemoteConfigError.invalidValueCode),
        (["rules": [["zombie_class_prefixes": "MY"]]], "$.rules[0].zombie_class_prefixes", RemoteConfigError.invalidValueCode),
        (["rules": [["guards": ["timer", "off"]]]], "$.rules[0].guards", RemoteConfigError.invalidValueCode),
        (["rules": ["not an object"]], "$.rules[0]", RemoteConfigError.invalidValueCode),
        (["rules": "no"], "$.rules", RemoteConfigError.invalidValueCode),
        (["version": -1], "$.version", RemoteConfigError.invalidValueCode),
        (["version": "7"], "$.version", RemoteConfigError.invalidValueCode),
        ([["rules": []]], "$", RemoteConfigError.invalidJSONCode),
    ]

    @Test func documentsTheSDKWouldRefuseAreNotPublishedAndTheErrorNamesThePath() async throws {
        try await Harness.run { harness in
            let path = Self.configPath(harness)
            for (document, expectedPath, sdkCode) in Self.refused {
                let response = try await harness.api(path, method: "PUT", json: ["document": document])
                #expect(response.status == 422, "\(document)")
                #expect(response.json?["code"]?.stringValue == "sdk_config.rejected", "\(document)")
                #expect(response.json?["path"]?.stringValue == expectedPath, "\(document)")
                #expect(response.json?["sdk_code"]?.stringValue == sdkCode, "\(document)")
                #expect(response.json?["detail"]?.stringValue?.hasPrefix(expectedPath + ": ") == true, "\(response.text)")
                // The SDK's parser refuses the same document (with a version, as served).
                var complete = document
                if case .object(var members) = document, members["version"] == nil {
                    members["version"] = 1
                    complete = .object(members)
                }
                #expect(throws: RemoteConfigError.self, "\(document)") { try RemoteConfigDocument.parse(complete.jsonData()) }
            }
            // Nothing was stored: the history is empty and the SDK is served nothing.
            #expect(try await harness.api(path).json?.arrayValue == [])
            #expect(try await harness.client.execute("/api/\(harness.project.id)/sdk-config", headers: ["X-Sentry-Auth": harness.authHeader]).status == 404)
        }
    }

    /// Unknown fields and guard names: the SDK ignores them (a newer SDK may know them), so the
    /// collector publishes them unchanged and lists them as warnings.
    @Test func unknownFieldsAndGuardNamesArePublishedAsTheSDKIgnoresThem() async throws {
        try await Harness.run { harness in
            let document: JSONValue = ["future_switch": true,
                                       "rules": [["guards": ["timer": "off", "teleport": "maybe"], "when": ["os": "iOS", "moon_phase": "full"]]]]
            let response = try await harness.api(Self.configPath(harness), method: "PUT", json: ["document": document])
            #expect(response.status == 201)
            let warnings = response.json?["warnings"]?.arrayValue?.compactMap { warning in
                warning["code"]?.stringValue.flatMap { code in warning["path"]?.stringValue.map { "\(code) \($0)" } }
            }
            #expect(Set(warnings ?? []) == ["remote_config.unknown_field $.future_switch", "remote_config.unknown_guard $.rules[0].guards.teleport",
                                            "remote_config.unknown_field $.rules[0].when.moon_phase"])
            let served = try await harness.client.execute("/api/\(harness.project.id)/sdk-config", headers: ["X-Sentry-Auth": harness.authHeader])
            let parsed = try SignedRemoteConfig.decode(served.body).document(publicKey: nil)
            #expect(parsed.document.rules.first?.guards == ["timer": .off])
            #expect(parsed.warnings.count == 3)
            let payload = try JSONValue.parse(try SignedRemoteConfig.decode(served.body).payload)
            #expect(payload["future_switch"] == true)
            #expect(payload["rules"]?.arrayValue?.first?["guards"]?["teleport"]?.stringValue == "maybe")
        }
    }

    // MARK: Interoperation with the SDK's reader

    /// What the SDK does with a 200 answer (`RemoteConfigFetcher.handle`): decode the envelope,
    /// verify the signature with the app's public key (swift-crypto), parse the payload, and
    /// store it only when its version is not lower than the stored one.
    struct SDKReader {
        let publicKey: RemoteConfigPublicKey
        var stored: RemoteConfigDocument?
        var etag: String?

        mutating func accept(status: Int, body: Data, etag: String?) throws -> RemoteConfigDocument? {
            if status == 304 { return nil }
            #expect(status == 200)
            let parsed = try SignedRemoteConfig.decode(body).document(publicKey: publicKey)
            if let stored { #expect(parsed.document.version >= stored.version, "the SDK refuses a lower version") }
            #expect(parsed.warnings.isEmpty)
            stored = parsed.document
            self.etag = etag
            return parsed.document
        }
    }

    @Test func theServedDocumentVerifiesAndParsesAsTheSDKReadsIt() async throws {
        try await Harness.run { harness in
            let rule = RemoteConfigRule(
                when: RemoteConfigCondition(appVersion: try VersionConstraint(">=2.4.0, <2.5.0"), os: "iOS",
                                            osVersion: try VersionConstraint(">=16"), arch: "arm64"),
                guards: ["container": .neutralize, "timer": .off, "zombie": .reportOnly],
                allowClassPrefixes: ["MY"], denyClassPrefixes: ["MYLegacy"], zombieClassPrefixes: ["MY"],
                incidentSampleRate: 0.25, capture: true)
            let catchAll = RemoteConfigRule(guards: ["swift": .reportOnly], incidentSampleRate: 1)
            let path = Self.configPath(harness)
            #expect(try await harness.api(path, method: "PUT", json: ["document": ["rules": [rule.jsonValue, catchAll.jsonValue]]]).status == 201)

            let servedPath = "/api/\(harness.project.id)/sdk-config?release=2.4.1&os=iOS&os_version=17.2&arch=arm64"
            let auth = ["X-Sentry-Auth": harness.authHeader]
            // Signed by the collector with OpenSSL, verified here with swift-crypto.
            var sdk = SDKReader(publicKey: try RemoteConfigPublicKey(base64: harness.project.configSigningPublicKey))
            var answer = try await harness.client.execute(servedPath, headers: auth)
            let first = try #require(try sdk.accept(status: answer.status, body: answer.body, etag: answer.headers["etag"]))
            #expect(first.version == 1)
            #expect(first.issuedAt != nil)
            #expect(first.rules == [rule, catchAll])
            let app = RemoteConfigTarget(appVersion: "2.4.1", os: "iOS", osVersion: "17.2", arch: "arm64")
            #expect(first.rule(for: app) == rule)
            #expect(first.rule(for: RemoteConfigTarget(appVersion: "2.5.0", os: "iOS", osVersion: "17.2", arch: "arm64")) == catchAll)

            // A key the app does not trust (another project's) and altered bytes are refused.
            let other = try await harness.api("/api/0/projects", method: "POST", json: ["name": "other"])
            let otherKey = try RemoteConfigPublicKey(base64: try #require(other.json?["config_signing_public_key"]?.stringValue))
            let envelope = try SignedRemoteConfig.decode(answer.body)
            do {
                _ = try envelope.document(publicKey: otherKey)
                Issue.record("another project's key verified the signature")
            } catch let error as RemoteConfigError {
                #expect(error.code == RemoteConfigError.badSignatureCode)
            }
            var altered = envelope.payload
            altered[altered.index(altered.startIndex, offsetBy: 2)] ^= 0x01
            do {
                _ = try SignedRemoteConfig(payload: altered, signature: envelope.signature).document(publicKey: sdk.publicKey)
                Issue.record("an altered payload verified")
            } catch let error as RemoteConfigError {
                #expect(error.code == RemoteConfigError.badSignatureCode)
            }

            // The SDK's next fetch sends the stored ETag: 304, nothing to parse.
            answer = try await harness.client.execute(servedPath, headers: auth.merging(["If-None-Match": try #require(sdk.etag)]) { $1 })
            #expect(answer.status == 304)
            #expect(try sdk.accept(status: answer.status, body: answer.body, etag: answer.headers["etag"]) == nil)

            // A new version, then a rollback to the first: re-issued as version 3, which the SDK
            // (holding version 2) accepts, with version 1's rules.
            #expect(try await harness.api(path, method: "PUT", json: ["document": ["rules": [catchAll.jsonValue]]]).status == 201)
            answer = try await harness.client.execute(servedPath, headers: auth.merging(["If-None-Match": try #require(sdk.etag)]) { $1 })
            #expect(try sdk.accept(status: answer.status, body: answer.body, etag: answer.headers["etag"])?.version == 2)
            #expect(try await harness.api(path + "/rollback", method: "POST", json: ["version": 1]).status == 201)
            answer = try await harness.client.execute(servedPath, headers: auth.merging(["If-None-Match": try #require(sdk.etag)]) { $1 })
            let restored = try #require(try sdk.accept(status: answer.status, body: answer.body, etag: answer.headers["etag"]))
            #expect(restored.version == 3)
            #expect(restored.rules == first.rules)
            #expect(restored.issuedAt != nil)
        }
    }

    // MARK: The dashboard's editor

    @Test func theEditorRefusesWhatTheSDKWouldRefuseAndKeepsTheText() async throws {
        try await DashboardTests.run { harness, browser in
            #expect(try await browser.logIn().status == 303)
            let page = try await browser.get("/projects/1/config")
            let csrf = try #require(Browser.csrfToken(in: page))

            let wrongPolicy = "{\"rules\": [{\"guards\": {\"timer\": \"log\"}}]}"
            var response = try await browser.post("/projects/1/config", form: [("csrf_token", csrf), ("document", wrongPolicy)])
            #expect(response.status == 422)
            #expect(response.text.contains("<code>$.rules[0].guards.timer</code>"))
            #expect(response.text.contains("{&quot;rules&quot;: [{&quot;guards&quot;: {&quot;timer&quot;: &quot;log&quot;}}]}</textarea>"))

            let badConstraint = "{\"rules\": [{\"when\": {\"app_version\": \"~>2.4\"}}]}"
            response = try await browser.post("/projects/1/config", form: [("csrf_token", csrf), ("document", badConstraint)])
            #expect(response.status == 422)
            #expect(response.text.contains("<code>$.rules[0].when.app_version</code>"))
            #expect(response.text.contains("data-rejection=\"remote_config.invalid_constraint\""))

            // Text that is not JSON as the SDK reads it: a syntax error (with its place) and a repeated key.
            response = try await browser.post("/projects/1/config", form: [("csrf_token", csrf), ("document", "{\n  \"rules\": [,]\n}")])
            #expect(response.status == 400)
            #expect(response.text.contains("line 2, column"))
            response = try await browser.post("/projects/1/config", form: [("csrf_token", csrf), ("document", "{\"rules\": [], \"rules\": []}")])
            #expect(response.status == 400)
            #expect(response.text.contains("a key appears twice"))
            #expect(try await harness.api("/api/0/projects/1/sdk-config").json?.arrayValue == [])

            // An unknown guard is published and listed as ignored.
            response = try await browser.post("/projects/1/config", form: [("csrf_token", csrf), ("document", "{\"rules\": [{\"guards\": {\"teleport\": \"off\"}}]}")])
            #expect(response.status == 303)
            let after = try await browser.get("/projects/1/config").text
            #expect(after.contains("Served now: <b>v1</b>"))
            #expect(after.contains("Ignored by this SDK version:<ul><li><code>$.rules[0].guards.teleport</code> (unknown guard)"))
        }
    }

    @Test func theReferenceNextToTheEditorComesFromTheSDKModel() async throws {
        try await DashboardTests.run { _, browser in
            #expect(try await browser.logIn().status == 303)
            let page = try await browser.get("/projects/1/config").text
            for name in RemoteConfigDocument.knownGuardNames { #expect(page.contains("<code data-guard>\(name)</code>"), "\(name)") }
            for policy in RemoteGuardPolicy.allCases { #expect(page.contains("<code data-policy>\(policy.rawValue)</code>"), "\(policy)") }
            #expect(page.components(separatedBy: "data-guard>").count - 1 == RemoteConfigDocument.knownGuardNames.count)
            // The example is a document the SDK reads without warnings, with every field of a rule.
            var example = DashboardRoutes.exampleDocument.jsonValue.objectValue ?? [:]
            example["version"] = 1
            let parsed = try RemoteConfigDocument.parse(JSONValue.object(example).jsonData())
            #expect(parsed.warnings.isEmpty)
            let rule = try #require(parsed.document.rules.first)
            #expect(rule.when.appVersion != nil && rule.when.osVersion != nil && rule.when.os != nil && rule.when.arch != nil)
            #expect(Set(rule.guards.values) == Set(RemoteGuardPolicy.allCases))
            #expect(rule.allowClassPrefixes != nil && rule.denyClassPrefixes != nil && rule.zombieClassPrefixes != nil)
            #expect(rule.incidentSampleRate != nil && rule.capture != nil)
            #expect(page.contains("&quot;incident_sample_rate&quot; : 0.25"))

            let prevented = try await browser.get("/projects/1/prevented").text
            #expect(prevented.contains("<code>crashshield.guard</code>") && prevented.contains("<code>mechanism.data.guard</code>"))
        }
    }
}
