import CrashShieldBase
import CrashShieldGuards
import CrashShieldRecording
import CrashShieldSentry
import CrashShieldProtocol
import Foundation

/// How a resolved remote configuration rule combines with what the app sets in code: **the app
/// wins**. A rule's field that is nil (left out of the document) changes nothing.
///
/// "Set by the app" is read from the options themselves, without a separate record:
/// - guard policies: a guard listed in `policies` is the app's; the document's policy applies to
///   the other guards (it takes precedence over `defaultPolicy`, which is only the fallback);
/// - `allowedClassPrefixes`, `deniedClassPrefixes`, `zombieClassPrefixes`: an empty list means
///   the app set none (empty is also the default), so the document's list applies;
/// - the incident sample rate (`reporting.incidentSampleRate`): the document's rate applies
///   unless the app set one in code (`ReportingOptions.incidentSampleRateIsSetByApp`);
/// - capture (`capture`): the app's choice when it assigned `capture` in code
///   (`captureIsSetByApp`: nil is "off", a `CaptureOptions` value is "on", whatever the document
///   says); left unassigned, `"capture": false` switches capture off for the launch (and launch
///   protection, without capture, keeps its state in the capture directory unless the app set
///   `directoryWithoutCapture`), while `"capture": true` keeps the default, on.
extension CrashShieldOptions {
    /// These options with `overrides` applied where the app left a setting alone (see above).
    /// nil overrides return the options unchanged.
    package func applyingRemoteOverrides(_ overrides: RemoteConfigRule?) -> CrashShieldOptions {
        guard let overrides else { return self }
        var result = self
        for (name, remotePolicy) in overrides.guards {
            let id = GuardID(rawValue: name)
            guard result.policies[id] == nil else { continue }
            switch remotePolicy {
            case .neutralize: result.policies[id] = .neutralize
            case .reportOnly: result.policies[id] = .reportOnly
            case .off: result.policies[id] = .off
            }
        }
        if result.allowedClassPrefixes.isEmpty, let prefixes = overrides.allowClassPrefixes {
            result.allowedClassPrefixes = prefixes
        }
        if result.deniedClassPrefixes.isEmpty, let prefixes = overrides.denyClassPrefixes {
            result.deniedClassPrefixes = prefixes
        }
        if result.zombieClassPrefixes.isEmpty, let prefixes = overrides.zombieClassPrefixes {
            result.zombieClassPrefixes = prefixes
        }
        result.reporting?.applyRemoteIncidentSampleRate(overrides.incidentSampleRate)
        result.applyRemoteCapture(overrides.capture)
        return result
    }
}

extension RemoteConfigRule {
    /// The incident sample rate to use: the app's when it set one in code, else the document's,
    /// else nil (the SDK's default applies).
    package func incidentSampleRate(appSetting: Double?) -> Double? { appSetting ?? incidentSampleRate }

    /// Whether fatal crash capture runs: the app's choice when it made one in code, else the
    /// document's `capture`, else `defaultValue`. `CrashShieldOptions.applyingRemoteOverrides`
    /// decides the same way, with `capture != nil` as the app's choice when `captureIsSetByApp`.
    package func captureEnabled(appSetting: Bool?, defaultValue: Bool = true) -> Bool {
        appSetting ?? capture ?? defaultValue
    }
}

extension CrashShieldSDK {
    /// `options` with the overrides of this run's remote configuration
    /// (`RemoteConfiguration.current`, activated before `start`) applied; unchanged when none.
    static func optionsWithRemoteOverrides(_ options: CrashShieldOptions) -> CrashShieldOptions {
        options.applyingRemoteOverrides(RemoteConfiguration.current?.overrides)
    }
}
