import Foundation
import Testing

@testable import CrashShield

/// What the app sets in code wins over the remote configuration document; the document fills in
/// only what the app left alone.
@Suite struct RemoteOverridesTests {
    private let rule = RemoteConfigRule(
        guards: ["timer": .off, "container": .reportOnly, "zombie": .neutralize],
        allowClassPrefixes: ["MY"], denyClassPrefixes: ["MYLegacy"], zombieClassPrefixes: ["MYZ"],
        incidentSampleRate: 0.25, capture: false)

    @Test func theDocumentFillsInWhatTheAppLeftAlone() {
        let applied = CrashShieldOptions().applyingRemoteOverrides(rule)
        #expect(applied.policies == [.timer: .off, .container: .reportOnly, .zombie: .neutralize])
        #expect(applied.policy(for: .timer) == .off)
        #expect(applied.policy(for: .string) == .neutralize, "guards the document does not name keep the default")
        #expect(applied.allowedClassPrefixes == ["MY"])
        #expect(applied.deniedClassPrefixes == ["MYLegacy"])
        #expect(applied.zombieClassPrefixes == ["MYZ"])
    }

    @Test func whatTheAppSetsInCodeWins() {
        var options = CrashShieldOptions()
        options.policies = [.timer: .neutralize]
        options.allowedClassPrefixes = ["APP"]
        options.deniedClassPrefixes = ["APPOld"]
        options.zombieClassPrefixes = ["APPZ"]
        let applied = options.applyingRemoteOverrides(rule)
        #expect(applied.policy(for: .timer) == .neutralize, "the app's own policy for the guard")
        #expect(applied.policy(for: .container) == .reportOnly, "a guard the app did not list takes the document's")
        #expect(applied.allowedClassPrefixes == ["APP"])
        #expect(applied.deniedClassPrefixes == ["APPOld"])
        #expect(applied.zombieClassPrefixes == ["APPZ"])
        // Settings the document does not touch stay as the app set them.
        #expect(applied.defaultPolicy == options.defaultPolicy)
        #expect(applied.zombieMaxCount == options.zombieMaxCount)
    }

    @Test func aFieldLeftOutOfTheDocumentKeepsTheAppsSetting() {
        var options = CrashShieldOptions()
        options.defaultPolicy = .reportOnly
        let applied = options.applyingRemoteOverrides(RemoteConfigRule(guards: ["kvo": .off]))
        #expect(applied.policies == [.kvo: .off])
        #expect(applied.policy(for: .container) == .reportOnly)
        #expect(applied.allowedClassPrefixes.isEmpty)
        #expect(applied.zombieClassPrefixes.isEmpty)
        #expect(options.applyingRemoteOverrides(nil).policies.isEmpty, "no active document: unchanged")
    }

    @Test func sampleRateAndCaptureFollowTheSameRule() {
        #expect(rule.incidentSampleRate(appSetting: nil) == 0.25)
        #expect(rule.incidentSampleRate(appSetting: 1.0) == 1.0)
        #expect(RemoteConfigRule().incidentSampleRate(appSetting: nil) == nil)
        #expect(rule.captureEnabled(appSetting: nil) == false, "capture: false switches capture off")
        #expect(rule.captureEnabled(appSetting: true) == true, "unless the app switched it on in code")
        #expect(RemoteConfigRule().captureEnabled(appSetting: nil) == true, "left out: the default")
        #expect(RemoteConfigRule(capture: true).captureEnabled(appSetting: false) == false)
    }
}
