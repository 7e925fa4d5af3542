@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

/// The document one click publishes, checked the way the SDK reads it (`rule(for:)`).
@Suite("Protection plan")
struct ProtectionPlanTests {
    static func parse(_ value: JSONValue) throws -> RemoteConfigDocument {
        var members = value.objectValue ?? [:]
        members["version"] = .int(1)
        return try RemoteConfigDocument.parse(JSONValue.object(members)).document
    }

    static func target(_ version: String, os: String = "iOS") -> RemoteConfigTarget {
        RemoteConfigTarget(appVersion: version, os: os, osVersion: "17.0", arch: "arm64")
    }

    static let current: JSONValue = ["rules": [
        ["when": ["os": "iOS", "app_version": ">=2.0"], "guards": ["timer": "off"], "incident_sample_rate": 0.5, "future_field": 1],
        ["when": ["app_version": "<3.0"], "guards": ["container": "neutralize", "kvo": "reportOnly"]],
        ["guards": ["zombie": "off"]],
    ]]

    @Test func otherVersionsResolveExactlyAsBefore() throws {
        let before = try Self.parse(Self.current)
        let after = try Self.parse(try ProtectionPlan.document(current: Self.current, guardName: "kvo", policy: .neutralize,
                                                               zombiePrefixes: [], versions: ["2.1"]))
        for version in ["1.0", "2.0", "2.2", "3.5"] {
            for os in ["iOS", "macOS"] {
                #expect(after.rule(for: Self.target(version, os: os)) == before.rule(for: Self.target(version, os: os)), "\(version) \(os)")
            }
        }
    }

    @Test func theProtectedVersionKeepsItsRuleAndGetsTheGuard() throws {
        let before = try Self.parse(Self.current)
        let document = try ProtectionPlan.document(current: Self.current, guardName: "kvo", policy: .neutralize, zombiePrefixes: [], versions: ["2.1"])
        let after = try Self.parse(document)
        for os in ["iOS", "macOS", "Linux"] {
            let old = try #require(before.rule(for: Self.target("2.1", os: os)))
            let new = try #require(after.rule(for: Self.target("2.1", os: os)))
            #expect(new.guards["kvo"] == .neutralize)
            var expected = old.guards
            expected["kvo"] = .neutralize
            #expect(new.guards == expected, "\(os)")
            #expect(new.incidentSampleRate == old.incidentSampleRate)
            #expect(new.when.appVersion?.matches("2.1") == true && new.when.appVersion?.matches("2.2") == false)
        }
        // Unknown fields of a copied rule are kept (a newer SDK may read them).
        #expect(document["rules"]?.arrayValue?.first?["future_field"] == .int(1))
    }

    @Test func aVersionNoRuleMatchedGetsARuleOfItsOwn() throws {
        let narrow: JSONValue = ["rules": [["when": ["app_version": "<1.0"], "guards": ["timer": "off"]]]]
        let after = try Self.parse(try ProtectionPlan.document(current: narrow, guardName: "container", policy: .reportOnly,
                                                               zombiePrefixes: [], versions: ["1.4.2"]))
        #expect(after.rule(for: Self.target("1.4.2"))?.guards == ["container": .reportOnly])
        #expect(after.rule(for: Self.target("0.9"))?.guards == ["timer": .off])
        #expect(after.rule(for: Self.target("1.5")) == nil)
        // No current document at all.
        let fresh = try Self.parse(try ProtectionPlan.document(current: nil, guardName: "selector", policy: .reportOnly,
                                                               zombiePrefixes: [], versions: ["1.0", "1.1"]))
        #expect(fresh.rule(for: Self.target("1.0"))?.guards == ["selector": .reportOnly])
        #expect(fresh.rule(for: Self.target("1.1"))?.guards == ["selector": .reportOnly])
        #expect(fresh.rule(for: Self.target("1.2")) == nil)
    }

    @Test func aPolicyOnlyStrengthensAndProtectingTwiceDoesNotGrowTheDocument() throws {
        let first = try ProtectionPlan.document(current: Self.current, guardName: "container", policy: .reportOnly, zombiePrefixes: [], versions: ["2.1"])
        // Off iOS, rule 2 already neutralises the container guard for <3.0: report-only does not weaken it.
        #expect(try Self.parse(first).rule(for: Self.target("2.1", os: "macOS"))?.guards["container"] == .neutralize)
        #expect(try Self.parse(first).rule(for: Self.target("2.1"))?.guards["container"] == .reportOnly)
        // Apps of 2.1 get report-only at least (iOS: report-only; elsewhere: neutralize).
        #expect(ProtectionPlan.effectivePolicy(of: first, guardName: "container", version: "2.1") == .reportOnly)
        #expect(ProtectionPlan.effectivePolicy(of: first, guardName: "container", version: "2.2") == nil)
        let count = first["rules"]?.arrayValue?.count
        let second = try ProtectionPlan.document(current: first, guardName: "kvo", policy: .neutralize, zombiePrefixes: [], versions: ["2.1"])
        #expect(second["rules"]?.arrayValue?.count == count)
        let resolved = try Self.parse(second).rule(for: Self.target("2.1"))
        #expect(resolved?.guards == ["container": .reportOnly, "kvo": .neutralize, "timer": .off])
        let elsewhere = try Self.parse(second).rule(for: Self.target("2.1", os: "macOS"))
        #expect(elsewhere?.guards == ["container": .neutralize, "kvo": .neutralize])
    }

    @Test func theZombieGuardNamesItsClassPrefixes() throws {
        let current: JSONValue = ["rules": [["zombie_class_prefixes": ["AB"], "guards": ["zombie": "reportOnly"]]]]
        let after = try Self.parse(try ProtectionPlan.document(current: current, guardName: "zombie", policy: .neutralize,
                                                               zombiePrefixes: ["MY"], versions: ["1.0"]))
        let rule = try #require(after.rule(for: Self.target("1.0")))
        #expect(rule.guards["zombie"] == .neutralize)
        #expect(rule.zombieClassPrefixes == ["AB", "MY"])
        #expect(rule.allowClassPrefixes == nil, "the allow list narrows every guard: never set")
        #expect(after.rule(for: Self.target("2.0"))?.zombieClassPrefixes == ["AB"])
    }

    @Test func releasesNameTheirAppVersionAsTheSDKReadsIt() {
        #expect(ProtectionPlan.appVersion(ofRelease: "com.example.app@2.4.1+311") == "2.4.1")
        #expect(ProtectionPlan.appVersion(ofRelease: "e2e-protect@1.0") == "1.0")
        #expect(ProtectionPlan.appVersion(ofRelease: "nightly") == nil)
        #expect(ProtectionPlan.appVersion(ofRelease: "app@latest") == nil)
    }
}
