import CrashShieldBase
import CrashShieldProtocol
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

    /// Under the common preset a guard outside it is off until the document names it; the
    /// document can also narrow or switch off a guard inside it; the app's `policies` still win.
    @Test func theDocumentSwitchesGuardsTheCommonPresetLeftOff() {
        var options = CrashShieldOptions()
        options.preset = .common
        #expect(options.policy(for: .timer) == .off)
        #expect(options.policy(for: .kvc) == .off)
        #expect(options.policy(for: .container) == .neutralize)
        #expect(options.policy(for: GuardID(rawValue: "a-later-guard")) == .off, "a guard the preset does not list")
        options.policies[.zombie] = .off
        let applied = options.applyingRemoteOverrides(rule)
        #expect(applied.policy(for: .timer) == .off, "the document says off")
        #expect(applied.policy(for: .container) == .reportOnly, "the document narrows a preset guard")
        #expect(applied.policy(for: .zombie) == .off, "the app's own policy wins over the document")
        #expect(applied.policy(for: .kvc) == .off, "not named by the document: the preset's off")
        let switchedOn = options.applyingRemoteOverrides(RemoteConfigRule(guards: ["kvc": .reportOnly, "timer": .neutralize]))
        #expect(switchedOn.policy(for: .kvc) == .reportOnly)
        #expect(switchedOn.policy(for: .timer) == .neutralize)
        #expect(switchedOn.policy(for: .string) == .neutralize)
        #expect(CrashShieldOptions().preset == .all)
        #expect(GuardPreset.allCases.allSatisfy { $0.includes(.container) })
    }

    /// Reporting options whose sample rate the app left unset, or set to `appRate`.
    private func reporting(appRate: Double? = nil) throws -> ReportingOptions {
        try ReportingOptions(dsn: "https://key@collector.example.com/42", incidentSampleRate: appRate)
    }

    /// The bug this fixes: the document's `incident_sample_rate` used to be ignored because an
    /// unset app rate (1) looked like one the app set. Unset, the document's rate applies.
    @Test func theDocumentsSampleRateAppliesWhenTheAppSetNone() throws {
        var options = CrashShieldOptions()
        options.reporting = try reporting()
        #expect(options.reporting?.incidentSampleRateIsSetByApp == false)
        #expect(options.reporting?.incidentSampleRate == 1, "unset: every incident")
        let applied = options.applyingRemoteOverrides(rule)
        #expect(applied.reporting?.incidentSampleRate == 0.25)
        #expect(applied.reporting?.incidentSampleRateIsSetByApp == false)
        let withoutRate = options.applyingRemoteOverrides(RemoteConfigRule(guards: ["kvo": .off]))
        #expect(withoutRate.reporting?.incidentSampleRate == 1, "a rule without a rate keeps the default")
    }

    /// Whatever the app sets in code wins, in both orders of setting and applying, also when it
    /// sets the default value 1 explicitly.
    @Test func theAppsSampleRateWinsOverTheDocuments() throws {
        var fromInit = CrashShieldOptions()
        fromInit.reporting = try reporting(appRate: 1)
        #expect(fromInit.reporting?.incidentSampleRateIsSetByApp == true)
        #expect(fromInit.applyingRemoteOverrides(rule).reporting?.incidentSampleRate == 1)

        var fromSetter = CrashShieldOptions()
        fromSetter.reporting = try reporting()
        try fromSetter.reporting?.setIncidentSampleRate(0.5)
        #expect(fromSetter.applyingRemoteOverrides(rule).reporting?.incidentSampleRate == 0.5)

        // The app sets its rate after a document's was applied: the app's stays, and a second
        // application changes nothing.
        var applied = CrashShieldOptions()
        applied.reporting = try reporting()
        applied = applied.applyingRemoteOverrides(rule)
        #expect(applied.reporting?.incidentSampleRate == 0.25)
        try applied.reporting?.setIncidentSampleRate(0.75)
        #expect(applied.applyingRemoteOverrides(rule).reporting?.incidentSampleRate == 0.75)

        // Unsetting it hands it back to the document.
        try applied.reporting?.setIncidentSampleRate(nil)
        #expect(applied.reporting?.incidentSampleRate == 1)
        #expect(applied.applyingRemoteOverrides(rule).reporting?.incidentSampleRate == 0.25)
    }

    /// The app declares its version once, in the release. A start with
    /// reporting `shop@2.4.1+311` and capture's `appVersion` unset matches the rule for app
    /// versions 2.4.x (before: capture's version stayed nil, no rule matched, the timer guard
    /// kept `neutralize`: exit 4); the report version is the release's.
    @Test func theReleaseDeclaresTheVersionRulesMatch() async throws {
        await #expect(processExitsWith: .success) {
            let directory = NSTemporaryDirectory() + "remote-overrides-release-\(getpid())"
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let document = RemoteConfigDocument(version: 4, issuedAt: "2026-11-23T06:00:00Z", rules: [
                RemoteConfigRule(when: RemoteConfigCondition(appVersion: try! VersionConstraint(">=2.4.0, <2.5.0")),
                                 guards: ["timer": .off]),
            ])
            guard (try? RemoteConfigStore(directory: directory).store(
                SignedRemoteConfig(payload: document.jsonData(), signature: nil), document: document, etag: nil)) != nil else { exit(2) }
            var options = CrashShieldOptions()
            options.capture = CaptureOptions(directory: directory)
            options.launchProtection = nil
            options.reporting = try? ReportingOptions(dsn: "http://key@127.0.0.1:9/42", release: "shop@2.4.1+311")
            guard (try? CrashShieldSDK.start(options)) != nil else { exit(3) }
            let timer = CrashShieldSDK.status.first { $0.id == .timer }
            exit(timer?.policy == .off ? 0 : 4)
        }
    }

    @Test func theReleaseVersionIsTheTextBetweenAtAndPlus() throws {
        func version(_ release: String) throws -> String? { try ReportingOptions(dsn: "http://key@127.0.0.1:9/42", release: release).releaseVersion }
        #expect(try version("com.example.app@2.4.1+311") == "2.4.1")
        #expect(try version("shop@1.0") == "1.0")
        #expect(try version("shop@1.0@2.0-beta") == "2.0-beta")
        #expect(try version("no-version") == nil)
        #expect(try version("shop@+311") == nil)
        let reporting = try ReportingOptions(dsn: "http://key@127.0.0.1:9/42", release: "shop@2.4.1+311")
        #expect(CaptureOptions(directory: "/tmp/x").withAppVersion(from: reporting).appVersion == "2.4.1")
        var own = CaptureOptions(directory: "/tmp/x")
        own.appVersion = "9.9"
        #expect(own.withAppVersion(from: reporting).appVersion == "9.9", "a version the app set is kept")
        #expect(CaptureOptions(directory: "/tmp/x").withAppVersion(from: nil).appVersion == nil)
    }

    /// End to end from the stored document: its first rule applies only to the app and OS
    /// versions its `when` matches; an app that matches no rule keeps its default rate.
    @Test func theRateFollowsTheRuleMatchingTheAppAndOSVersion() throws {
        let directory = NSTemporaryDirectory() + "remote-overrides-rate-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let document = RemoteConfigDocument(version: 3, issuedAt: "2026-11-23T06:00:00Z", rules: [
            RemoteConfigRule(when: RemoteConfigCondition(appVersion: try VersionConstraint(">=2.4.0, <2.5.0"),
                                                         osVersion: try VersionConstraint(">=16")),
                             incidentSampleRate: 0.25),
            RemoteConfigRule(when: RemoteConfigCondition(appVersion: try VersionConstraint("<2.4.0")), incidentSampleRate: 0.5),
        ])
        let payload = document.jsonData()
        try RemoteConfigStore(directory: directory).store(SignedRemoteConfig(payload: payload, signature: nil),
                                                          document: document, etag: nil)

        func rate(appVersion: String?, osVersion: String, appRate: Double? = nil) throws -> Double? {
            var remote = RemoteConfigOptions(dsn: try DSN("https://key@collector.example.com/42"), directory: directory)
            remote.appVersion = appVersion
            remote.osVersion = osVersion
            let activation = RemoteConfiguration.load(remote)
            #expect(activation.version == 3 && activation.rejection == nil)
            var options = CrashShieldOptions()
            options.reporting = try reporting(appRate: appRate)
            return options.applyingRemoteOverrides(activation.overrides).reporting?.incidentSampleRate
        }
        #expect(try rate(appVersion: "2.4.1", osVersion: "17.2.1") == 0.25, "the first rule matches app and OS version")
        #expect(try rate(appVersion: "2.4.1", osVersion: "15.7") == 1, "the OS version matches no rule")
        #expect(try rate(appVersion: "2.3.9", osVersion: "15.7") == 0.5, "the second rule matches")
        #expect(try rate(appVersion: "2.5.0", osVersion: "17.0") == 1, "the app version matches no rule")
        #expect(try rate(appVersion: nil, osVersion: "17.0") == 1, "no app version matches no constraint")
        #expect(try rate(appVersion: "2.4.1", osVersion: "17.2.1", appRate: 0.9) == 0.9, "a matching rule, but the app set its own")
    }

    /// `"capture": false` switches capture off when the app never assigned `capture`, also when
    /// it configured fields of the default capture in place; launch protection (then without
    /// capture) keeps its state in the capture directory.
    @Test func theDocumentSwitchesCaptureOffWhenTheAppLeftItAtTheDefault() {
        let defaults = CrashShieldOptions()
        #expect(defaults.capture != nil && defaults.captureIsSetByApp == false, "default: on, not the app's choice")
        let applied = defaults.applyingRemoteOverrides(rule)
        #expect(applied.capture == nil, "capture: false switches the default capture off")
        #expect(applied.captureIsSetByApp == false)
        #expect(applied.launchProtection?.directoryWithoutCapture == CaptureOptions().directory)

        var configured = CrashShieldOptions()
        configured.capture?.directory = "/tmp/app-reports"
        configured.capture?.appVersion = "2.4.1"
        #expect(configured.captureIsSetByApp == false, "changing a field in place is not a choice of on or off")
        #expect(configured.capture?.directory == "/tmp/app-reports" && configured.capture?.appVersion == "2.4.1")
        let configuredApplied = configured.applyingRemoteOverrides(rule)
        #expect(configuredApplied.capture == nil)
        #expect(configuredApplied.launchProtection?.directoryWithoutCapture == "/tmp/app-reports",
                "launch protection stays in the directory capture would have used")

        var ownLaunchDirectory = configured
        ownLaunchDirectory.launchProtection?.directoryWithoutCapture = "/tmp/app-launch"
        #expect(ownLaunchDirectory.applyingRemoteOverrides(rule).launchProtection?.directoryWithoutCapture == "/tmp/app-launch")

        var noLaunchProtection = CrashShieldOptions()
        noLaunchProtection.launchProtection = nil
        let withoutLaunch = noLaunchProtection.applyingRemoteOverrides(rule)
        #expect(withoutLaunch.capture == nil && withoutLaunch.launchProtection == nil)

        // `"capture": true` and a rule without `capture` keep the default: on, unchanged.
        #expect(configured.applyingRemoteOverrides(RemoteConfigRule(capture: true)).capture?.directory == "/tmp/app-reports")
        let leftOut = configured.applyingRemoteOverrides(RemoteConfigRule(guards: ["kvo": .off]))
        #expect(leftOut.capture?.directory == "/tmp/app-reports")
        #expect(leftOut.launchProtection?.directoryWithoutCapture == nil)
    }

    /// An app that assigned `capture` in code keeps it, on or off, whatever the document says.
    @Test func theAppsCaptureChoiceWinsInBothDirections() {
        var on = CrashShieldOptions()
        on.capture = CaptureOptions()  // equal to the default, but assigned: the app's choice
        #expect(on.captureIsSetByApp)
        let onApplied = on.applyingRemoteOverrides(rule)
        #expect(onApplied.capture != nil, "capture: false does not switch off what the app switched on")
        #expect(onApplied.launchProtection?.directoryWithoutCapture == nil)

        var off = CrashShieldOptions()
        off.capture = nil
        #expect(off.captureIsSetByApp)
        #expect(off.applyingRemoteOverrides(RemoteConfigRule(capture: true)).capture == nil,
                "capture: true does not switch on what the app switched off")
        #expect(CrashShieldOptions.guardsOnly.applyingRemoteOverrides(RemoteConfigRule(capture: true)).capture == nil)

        // Assigned after a document's rule was applied: the app's value stays.
        var later = CrashShieldOptions().applyingRemoteOverrides(rule)
        #expect(later.capture == nil)
        later.capture = CaptureOptions(directory: "/tmp/app-reports")
        #expect(later.applyingRemoteOverrides(rule).capture?.directory == "/tmp/app-reports")
    }

    /// End to end from the stored document: `capture: false` applies only to the app and OS
    /// versions its rule's `when` matches.
    @Test func captureFollowsTheRuleMatchingTheAppAndOSVersion() throws {
        let directory = NSTemporaryDirectory() + "remote-overrides-capture-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let document = RemoteConfigDocument(version: 4, issuedAt: "2026-11-23T06:00:00Z", rules: [
            RemoteConfigRule(when: RemoteConfigCondition(appVersion: try VersionConstraint(">=2.4.0, <2.5.0"),
                                                         osVersion: try VersionConstraint(">=16")),
                             capture: false),
        ])
        try RemoteConfigStore(directory: directory).store(SignedRemoteConfig(payload: document.jsonData(), signature: nil),
                                                          document: document, etag: nil)

        func captureIsOn(appVersion: String?, osVersion: String, appSetsCapture: Bool = false) throws -> Bool {
            var remote = RemoteConfigOptions(dsn: try DSN("https://key@collector.example.com/42"), directory: directory)
            remote.appVersion = appVersion
            remote.osVersion = osVersion
            let activation = RemoteConfiguration.load(remote)
            #expect(activation.version == 4 && activation.rejection == nil)
            var options = CrashShieldOptions()
            if appSetsCapture { options.capture = CaptureOptions(directory: directory) } else { options.capture?.appVersion = appVersion }
            return options.applyingRemoteOverrides(activation.overrides).capture != nil
        }
        #expect(try captureIsOn(appVersion: "2.4.1", osVersion: "17.2.1") == false, "the rule matches: off")
        #expect(try captureIsOn(appVersion: "2.4.1", osVersion: "15.7") == true, "the OS version matches no rule")
        #expect(try captureIsOn(appVersion: "2.5.0", osVersion: "17.0") == true, "the app version matches no rule")
        #expect(try captureIsOn(appVersion: nil, osVersion: "17.0") == true, "no app version matches no constraint")
        #expect(try captureIsOn(appVersion: "2.4.1", osVersion: "17.2.1", appSetsCapture: true) == true,
                "a matching rule, but the app switched capture on in code")
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
