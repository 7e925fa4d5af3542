import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

@Suite("Collector SDK configuration")
struct SDKConfigTests {
    static let document: JSONValue = ["rules": [["when": ["os": "iOS"], "guards": ["container": "neutralize", "timer": "off"]]]]

    @Test func publishedDocumentIsServedSignedWithETagAnd304() async throws {
        try await Harness.run { harness in
            let configPath = "/api/\(harness.project.id)/sdk-config?release=app@1.0&os=Linux"
            let auth = ["X-Sentry-Auth": harness.authHeader]
            #expect(try await harness.client.execute(configPath, headers: auth).status == 404)

            let published = try await harness.api("/api/0/projects/\(harness.project.id)/sdk-config", method: "PUT", json: ["document": Self.document])
            #expect(published.status == 201)
            #expect(published.json?["version"]?.intValue == 1)

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
            _ = try await harness.api("/api/0/projects/\(harness.project.id)/sdk-config", method: "PUT", json: ["document": ["rules": []]])
            let changed = try await harness.client.execute(configPath, headers: auth.merging(["If-None-Match": etag]) { $1 })
            #expect(changed.status == 200)
            #expect(changed.headers["etag"] != etag)
        }
    }

    @Test func historyRollbackAndVersionConflicts() async throws {
        try await Harness.run { harness in
            let path = "/api/0/projects/\(harness.project.id)/sdk-config"
            #expect(try await harness.api(path, method: "PUT", json: ["document": Self.document]).status == 201)
            #expect(try await harness.api(path, method: "PUT", json: ["document": ["rules": [["guards": ["zombie": "off"]]]]]).status == 201)
            var response = try await harness.api(path, method: "PUT", json: ["document": ["version": 2, "rules": []]])
            #expect(response.status == 409)
            #expect(response.json?["code"]?.stringValue == "sdk_config.version_conflict")
            response = try await harness.api(path, method: "PUT", json: ["document": ["rules": "no"]])
            #expect(response.status == 400)
            #expect(response.json?["code"]?.stringValue == "sdk_config.invalid")
            response = try await harness.api(path + "/rollback", method: "POST", json: ["version": 1])
            #expect(response.status == 201)
            #expect(response.json?["version"]?.intValue == 3)
            #expect(response.json?["restored_from"]?.intValue == 1)
            #expect(response.json?["document"]?["rules"] == Self.document["rules"])
            response = try await harness.api(path)
            #expect(response.json?.arrayValue?.map { $0["version"]?.intValue } == [3, 2, 1])
            #expect(try await harness.api(path + "/rollback", method: "POST", json: ["version": 42]).status == 404)
        }
    }
}
