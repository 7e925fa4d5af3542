import CrashShieldBase
import Crypto
import Foundation
import Testing

import CrashShieldProtocol

/// A full remote configuration document (one rule), as the collector serves it.
let specExampleDocument = """
{ "version": 7, "issued_at": "2026-11-23T06:00:00Z",
  "rules": [ { "when": { "app_version": ">=2.4.0, <2.5.0", "os": "iOS", "os_version": ">=16" },
               "guards": { "container": "neutralize", "timer": "off", "zombie": "reportOnly" },
               "allow_class_prefixes": ["MY"], "deny_class_prefixes": ["MYLegacy"],
               "zombie_class_prefixes": ["MY"], "incident_sample_rate": 0.25, "capture": true } ] }
"""

private func parse(_ text: String) throws(RemoteConfigError) -> RemoteConfigParseResult {
    try RemoteConfigDocument.parse(Data(text.utf8))
}

/// The rejection of `text`, or nil when it parsed.
private func rejection(_ text: String) -> RemoteConfigError? {
    do {
        _ = try parse(text)
        return nil
    } catch {
        return error
    }
}

@Suite struct RemoteConfigDocumentParserTests {
    @Test func parsesTheSpecExample() throws {
        let result = try parse(specExampleDocument)
        #expect(result.warnings.isEmpty)
        let document = result.document
        #expect(document.version == 7)
        #expect(document.issuedAt == "2026-11-23T06:00:00Z")
        #expect(document.rules.count == 1)
        let rule = try #require(document.rules.first)
        #expect(rule.when.appVersion == (try VersionConstraint(">=2.4.0,<2.5.0")))
        #expect(rule.when.os == "iOS")
        #expect(rule.when.osVersion == (try VersionConstraint(">=16")))
        #expect(rule.when.arch == nil)
        #expect(rule.guards == ["container": .neutralize, "timer": .off, "zombie": .reportOnly])
        #expect(rule.allowClassPrefixes == ["MY"])
        #expect(rule.denyClassPrefixes == ["MYLegacy"])
        #expect(rule.zombieClassPrefixes == ["MY"])
        #expect(rule.incidentSampleRate == 0.25)
        #expect(rule.capture == true)
    }

    @Test func aMinimalDocumentHasNoRules() throws {
        let result = try parse(#"{"version": 0}"#)
        #expect(result.document == RemoteConfigDocument(version: 0))
    }

    /// Every invalid value of a known field rejects the whole document with the value's path.
    @Test(arguments: [
        (#"{"rules": []}"#, RemoteConfigError.missingFieldCode, "$.version"),
        (#"{"version": -1}"#, RemoteConfigError.invalidValueCode, "$.version"),
        (#"{"version": "7"}"#, RemoteConfigError.invalidValueCode, "$.version"),
        (#"{"version": 7.5}"#, RemoteConfigError.invalidValueCode, "$.version"),
        (#"{"version": null}"#, RemoteConfigError.invalidValueCode, "$.version"),
        (#"{"version": 1, "issued_at": "yesterday"}"#, RemoteConfigError.invalidValueCode, "$.issued_at"),
        (#"{"version": 1, "issued_at": 1700000000}"#, RemoteConfigError.invalidValueCode, "$.issued_at"),
        (#"{"version": 1, "rules": {}}"#, RemoteConfigError.invalidValueCode, "$.rules"),
        (#"{"version": 1, "rules": [1]}"#, RemoteConfigError.invalidValueCode, "$.rules[0]"),
        (#"{"version": 1, "rules": [{}, {"when": []}]}"#, RemoteConfigError.invalidValueCode, "$.rules[1].when"),
        (#"{"version": 1, "rules": [{"when": {"app_version": ">=2.4.0, <"}}]}"#, RemoteConfigError.invalidConstraintCode, "$.rules[0].when.app_version"),
        (#"{"version": 1, "rules": [{"when": {"app_version": "~>2.4"}}]}"#, RemoteConfigError.invalidConstraintCode, "$.rules[0].when.app_version"),
        (#"{"version": 1, "rules": [{"when": {"os_version": ">=16,,<17"}}]}"#, RemoteConfigError.invalidConstraintCode, "$.rules[0].when.os_version"),
        (#"{"version": 1, "rules": [{"when": {"os_version": 16}}]}"#, RemoteConfigError.invalidValueCode, "$.rules[0].when.os_version"),
        (#"{"version": 1, "rules": [{"when": {"os": ""}}]}"#, RemoteConfigError.invalidValueCode, "$.rules[0].when.os"),
        (#"{"version": 1, "rules": [{"when": {"arch": true}}]}"#, RemoteConfigError.invalidValueCode, "$.rules[0].when.arch"),
        (#"{"version": 1, "rules": [{"guards": []}]}"#, RemoteConfigError.invalidValueCode, "$.rules[0].guards"),
        (#"{"version": 1, "rules": [{"guards": {"timer": "disabled"}}]}"#, RemoteConfigError.invalidValueCode, "$.rules[0].guards.timer"),
        (#"{"version": 1, "rules": [{"guards": {"timer": null}}]}"#, RemoteConfigError.invalidValueCode, "$.rules[0].guards.timer"),
        (#"{"version": 1, "rules": [{"allow_class_prefixes": "MY"}]}"#, RemoteConfigError.invalidValueCode, "$.rules[0].allow_class_prefixes"),
        (#"{"version": 1, "rules": [{"deny_class_prefixes": ["A", 2]}]}"#, RemoteConfigError.invalidValueCode, "$.rules[0].deny_class_prefixes[1]"),
        (#"{"version": 1, "rules": [{"zombie_class_prefixes": [""]}]}"#, RemoteConfigError.invalidValueCode, "$.rules[0].zombie_class_prefixes[0]"),
        (#"{"version": 1, "rules": [{"incident_sample_rate": 1.5}]}"#, RemoteConfigError.invalidValueCode, "$.rules[0].incident_sample_rate"),
        (#"{"version": 1, "rules": [{"incident_sample_rate": -0.1}]}"#, RemoteConfigError.invalidValueCode, "$.rules[0].incident_sample_rate"),
        (#"{"version": 1, "rules": [{"incident_sample_rate": "0.5"}]}"#, RemoteConfigError.invalidValueCode, "$.rules[0].incident_sample_rate"),
        (#"{"version": 1, "rules": [{"capture": "false"}]}"#, RemoteConfigError.invalidValueCode, "$.rules[0].capture"),
        (#"{"version": 1, "rules": [{"capture": 0}]}"#, RemoteConfigError.invalidValueCode, "$.rules[0].capture"),
        (#"[1, 2]"#, RemoteConfigError.invalidJSONCode, "$"),
        (#"{"version": 1"#, RemoteConfigError.invalidJSONCode, "$"),
    ])
    func rejectsAnInvalidValueNamingItsPath(text: String, code: String, path: String) {
        let error = rejection(text)
        #expect(error?.code == code, "\(text): \(String(describing: error))")
        #expect(error?.path == path, "\(text): \(String(describing: error))")
    }

    @Test(arguments: ["2026-11-23T06:00:00Z", "2026-11-23t06:00:00z", "2026-11-23T06:00:00.123456+05:30",
                      "2024-02-29T23:59:60-00:00", "1999-12-31T00:00:00+14:00"])
    func acceptsRFC3339Timestamps(text: String) throws {
        #expect(try parse(#"{"version": 1, "issued_at": "\#(text)"}"#).document.issuedAt == text)
    }

    @Test(arguments: ["2026-11-23", "2026-11-23T06:00:00", "2026-11-23 06:00:00Z", "2026-13-01T00:00:00Z",
                      "2025-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-11-23T24:00:00Z", "2026-11-23T06:60:00Z",
                      "2026-11-23T06:00:61Z", "2026-11-23T06:00:00.Z", "2026-11-23T06:00:00+0530", "2026-11-23T06:00:00Z ",
                      "26-11-23T06:00:00Z", "2026-11-23T06:00:00+24:00", ""])
    func rejectsOtherTimestamps(text: String) {
        #expect(rejection(#"{"version": 1, "issued_at": "\#(text)"}"#)?.path == "$.issued_at", "\(text)")
    }

    /// What the strict JSON reader refuses (JSONDecoder would take the first two).
    @Test(arguments: [#"{"version": 1,}"#, #"{"version": 1, "version": 2}"#, #"{"version": 1} x"#, #"{"version": 01}"#,
                      #"{"version": 1e999}"#, #"{"version": NaN}"#, "{\"version\": 1, \"rules\": [\"a\u{01}\"]}",
                      #"{"version": 1, "rules": ["\ud800"]}"#, #"{'version': 1}"#, #"{"version": 1 /* c */}"#,
                      String(repeating: "[", count: 300) + String(repeating: "]", count: 300)])
    func refusesWhatIsNotStrictJSON(text: String) {
        #expect(rejection(text)?.code == RemoteConfigError.invalidJSONCode, "\(text)")
    }

    @Test func readsEscapesAndNumbers() throws {
        let value = try JSONValue.parseStrict(Data(#" {"a": "\u00e9\ud83d\ude00\n\"\/", "b": [-0, 12, -3.5e2, 1E+2, 9223372036854775807, 9223372036854775808]} "#.utf8))
        #expect(value["a"] == .string("é😀\n\"/"))
        #expect(value["b"] == [.int(0), .int(12), .double(-350), .double(100), .int(Int64.max), .double(9223372036854775808.0)])
    }

    @Test func warnsAboutUnknownFieldsAndGuardsAndIgnoresThem() throws {
        let result = try parse("""
            {"version": 3, "channel": "beta",
             "rules": [{"when": {"os": "Linux", "device": "pixel"}, "priority": 2,
                        "guards": {"timer": "off", "teleport": "off", "warp": 17}}]}
            """)
        let warnings = Set(result.warnings.map { "\($0.code) \($0.path)" })
        #expect(warnings == [
            "remote_config.unknown_field $.channel",
            "remote_config.unknown_field $.rules[0].priority",
            "remote_config.unknown_field $.rules[0].when.device",
            "remote_config.unknown_guard $.rules[0].guards.teleport",
            "remote_config.unknown_guard $.rules[0].guards.warp",
        ])
        #expect(result.document.rules.first?.guards == ["timer": .off])
        #expect(result.document.rules.first?.when == RemoteConfigCondition(os: "Linux"))
    }

    @Test func serialisedDocumentsParseBackEqual() throws {
        let document = try parse(specExampleDocument).document
        let again = try RemoteConfigDocument.parse(document.jsonData())
        #expect(again.document == document)
        #expect(again.warnings.isEmpty)
    }
}

@Suite struct VersionConstraintTests {
    @Test(arguments: [
        (">=2.4.0, <2.5.0", "2.4.0", true), (">=2.4.0, <2.5.0", "2.4.9", true), (">=2.4.0, <2.5.0", "2.5.0", false),
        (">=2.4.0, <2.5.0", "2.3.99", false), (">=2.4.0,<2.5.0", "2.4", true), ("=2.4", "2.4.0", true),
        ("=2.4.0", "2.4.0.0", true), ("2.4", "2.4.0", true), ("=2.4", "2.4.1", false), (">2.4", "2.4.0", false),
        (">2.4", "2.4.0.1", true), ("<2", "1.99.99", true), ("<2", "2", false), ("<=2", "2.0.0", true),
        ("<=2", "2.0.1", false), ("!=3.1", "3.1.0", false), ("!=3.1", "3.1.1", true), (">=16", "17.2.1", true),
        (">=16", "15.8", false), (" >= 1.2 , != 1.3 , < 2 ", "1.4", true), (" >= 1.2 , != 1.3 , < 2 ", "1.3.0", false),
        ("=10", "9", false), (">=10", "9.99", false), (">9", "10", true),
        // Pre-releases sort before their release; build metadata is ignored.
        (">=2.5.0", "2.5.0-beta", false), ("<2.5.0", "2.5.0-beta", true), (">=2.5.0-0", "2.5.0-beta", true),
        (">2.5.0-beta.2", "2.5.0-beta.10", true), (">2.5.0-beta", "2.5.0-alpha", false), ("<2.5.0-beta", "2.5.0-beta.1", false),
        ("<2.5.0-rc", "2.5.0-1", true), ("=2.5.0", "2.5.0+build.77", true),
        // An app version that is not a dotted numeric version matches nothing.
        (">=0", "two", false), ("!=1", "1.x", false), (">=0", "", false),
    ])
    func matches(constraint: String, version: String, expected: Bool) throws {
        #expect(try VersionConstraint(constraint).matches(version) == expected, "\(version) against \(constraint)")
    }

    @Test(arguments: ["", " ", ">=", ">=1,", ",<2", "~1.2", "1..2", "1.2.", ".1", "v1.2", ">= 1.2 2", "=>1", "1.2-", "1.2+", "1.2-beta..1", "-1"])
    func rejectsBadSyntax(text: String) {
        #expect(throws: VersionConstraint.SyntaxError.self, "\"\(text)\"") { try VersionConstraint(text) }
    }
}

@Suite struct RemoteConfigRuleSelectionTests {
    private let document = RemoteConfigDocument(version: 1, rules: [
        RemoteConfigRule(when: RemoteConfigCondition(appVersion: try! VersionConstraint(">=2.4, <2.5"), os: "iOS"),
                         guards: ["timer": .off]),
        RemoteConfigRule(when: RemoteConfigCondition(os: "ios", osVersion: try! VersionConstraint("<16")), guards: ["kvo": .off]),
        RemoteConfigRule(when: RemoteConfigCondition(arch: "ARM64"), capture: false),
        RemoteConfigRule(when: RemoteConfigCondition(os: "Linux"), incidentSampleRate: 0.5),
    ])

    @Test func theFirstMatchingRuleApplies() {
        let ios = RemoteConfigTarget(appVersion: "2.4.3", os: "iOS", osVersion: "15.1", arch: "arm64")
        #expect(document.rule(for: ios)?.guards == ["timer": .off], "the first of three that match")
        var older = ios
        older.appVersion = "2.3.0"
        #expect(document.rule(for: older)?.guards == ["kvo": .off], "os compared without regard to case")
        older.osVersion = "16.0"
        #expect(document.rule(for: older)?.capture == false, "arch compared without regard to case")
        let linux = RemoteConfigTarget(appVersion: "1.0", os: "Linux", osVersion: "6.1", arch: "x86_64")
        #expect(document.rule(for: linux)?.incidentSampleRate == 0.5)
        let other = RemoteConfigTarget(appVersion: "1.0", os: "macOS", osVersion: "14.0", arch: "x86_64")
        #expect(document.rule(for: other) == nil, "no rule: the app keeps its own settings")
    }

    @Test func aConditionOnAnUnknownValueDoesNotMatch() {
        let unknownVersion = RemoteConfigTarget(appVersion: nil, os: "iOS", osVersion: nil, arch: nil)
        #expect(document.rule(for: unknownVersion) == nil)
        #expect(RemoteConfigCondition().matches(unknownVersion), "an empty condition matches every app")
    }
}

@Suite struct RemoteConfigSignatureTests {
    private let payload = Data(specExampleDocument.utf8)

    @Test func aValidSignatureIsAccepted() throws {
        let key = Curve25519.Signing.PrivateKey()
        let served = try SignedRemoteConfig(signing: payload, with: key).jsonData()
        let envelope = try SignedRemoteConfig.decode(served)
        let result = try envelope.document(publicKey: RemoteConfigPublicKey(key.publicKey))
        #expect(result.document.version == 7)
        // The key as the collector shows it (base64 of the raw 32 bytes) works the same.
        let fromText = try RemoteConfigPublicKey(base64: key.publicKey.rawRepresentation.base64EncodedString())
        #expect(try envelope.verifiedPayload(publicKey: fromText) == payload)
    }

    @Test func aTamperedPayloadIsRejected() throws {
        let key = Curve25519.Signing.PrivateKey()
        let signed = try SignedRemoteConfig(signing: payload, with: key)
        let tampered = Data(specExampleDocument.replacingOccurrences(of: "\"version\": 7", with: "\"version\": 8").utf8)
        #expect(tampered != payload)
        let envelope = SignedRemoteConfig(payload: tampered, signature: signed.signature)
        let error = try #require(throws: RemoteConfigError.self) {
            try envelope.document(publicKey: RemoteConfigPublicKey(key.publicKey))
        }
        #expect(error.code == RemoteConfigError.badSignatureCode)
        #expect(try SignedRemoteConfig(payload: payload, signature: signed.signature)
            .verifiedPayload(publicKey: RemoteConfigPublicKey(key.publicKey)) == payload)
    }

    @Test func aSignatureByAnotherKeyIsRejected() throws {
        let signed = try SignedRemoteConfig(signing: payload, with: Curve25519.Signing.PrivateKey())
        let trusted = RemoteConfigPublicKey(Curve25519.Signing.PrivateKey().publicKey)
        let error = try #require(throws: RemoteConfigError.self) { try signed.verifiedPayload(publicKey: trusted) }
        #expect(error.code == RemoteConfigError.badSignatureCode)
    }

    @Test func aMissingSignatureIsRejectedWhenAKeyIsConfigured() throws {
        let unsigned = try SignedRemoteConfig.decode(SignedRemoteConfig(payload: payload, signature: nil).jsonData())
        #expect(unsigned.signature == nil)
        let trusted = RemoteConfigPublicKey(Curve25519.Signing.PrivateKey().publicKey)
        let error = try #require(throws: RemoteConfigError.self) { try unsigned.verifiedPayload(publicKey: trusted) }
        #expect(error.code == RemoteConfigError.missingSignatureCode)
    }

    @Test func withoutAKeyUnsignedDocumentsAreAccepted() throws {
        let unsigned = SignedRemoteConfig(payload: payload, signature: nil)
        #expect(try unsigned.document(publicKey: nil).document.version == 7)
    }

    @Test(arguments: [#"{"payload": 7}"#, #"{"signature": "AAAA"}"#, #"{"payload": "not base64!"}"#,
                      #"{"payload": "e30=", "signature": 12}"#, "[]", "payload"])
    func aMalformedEnvelopeIsRejected(body: String) {
        let error = #expect(throws: RemoteConfigError.self) { try SignedRemoteConfig.decode(Data(body.utf8)) }
        #expect(error?.code == RemoteConfigError.invalidEnvelopeCode)
    }

    @Test(arguments: ["", "AAAA", "not base64", Data(repeating: 1, count: 33).base64EncodedString()])
    func aMalformedPublicKeyIsRejected(text: String) {
        let error = #expect(throws: RemoteConfigError.self) { try RemoteConfigPublicKey(base64: text) }
        #expect(error?.code == RemoteConfigError.invalidKeyCode)
    }
}
