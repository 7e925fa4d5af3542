import Foundation
@_exported import CrashShieldCapture
internal import _CrashShieldCapture
internal import _CrashShieldIncidents
internal import _CrashShieldRuntime

extension CrashShield {
    /// Starts fatal crash capture (signals and uncaught Objective-C exceptions) and launch
    /// protection, then applies the guard fail-safe.
    ///
    /// Call it right after `CrashShield.start(_:)`. Fail-safe (SPEC §2.12): when a report from an
    /// earlier run has frames inside a guard's hook code (same binary: same path and build id),
    /// that guard is switched off with `CrashShield.setPolicy(.off, for:)` for this run and an
    /// incident says so. Safe mode (a repair step) switches off the guards in `safeModeGuards`.
    @discardableResult
    public static func startCapture(_ options: CaptureOptions = CaptureOptions(),
                                    safeModeGuards: [GuardID] = []) throws -> LaunchProtection? {
        let protection = try CrashCapture.start(options)
        cs_capture_exceptions_start()
        for guardName in guardsToSwitchOff(CrashCapture.reportsFoundAtStart) {
            cs_guard_set_policy(guardName, CS_POLICY_OFF)
            recordFailSafeIncident(guardName)
        }
        if protection?.isSafeMode == true {
            for id in safeModeGuards { try? setPolicy(.off, for: id) }
        }
        publishGuardStates()
        return protection
    }

    /// Guard names whose hook code appears in the crashed-thread frames of `reports`.
    static func guardsToSwitchOff(_ reports: [CrashReport]) -> [String] {
        var names: [String] = []
        for report in reports {
            let buildIDs = Dictionary((report.images ?? []).compactMap { image in image.path.map { ($0, image.buildId ?? "") } },
                                      uniquingKeysWith: { first, _ in first })
            for frame in report.crashedThread?.frames ?? [] {
                guard let image = frame.image, let offset = frame.offsetValue else { continue }
                var bias: UInt = 0
                var hex = [CChar](repeating: 0, count: 80)
                guard csc_loaded_image(image, &bias, &hex, hex.count) else { continue }
                let loadedID = String(decoding: hex.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                guard (buildIDs[image] ?? "") == loadedID else { continue }
                if let name = cs_guard_name_for_address(UInt(offset) &+ bias) {
                    let text = String(cString: name)
                    if !names.contains(text) { names.append(text) }
                }
            }
        }
        return names
    }

    private static let failSafeReason: StaticString = "switched off by the fail-safe: a fatal crash report has frames inside this guard"
    private static let failSafeClass: StaticString = "CrashShield"
    private static let failSafeSelector: StaticString = "failSafe"

    private static func recordFailSafeIncident(_ guardName: String) {
        // The incident pipeline keeps only pointers to static strings for guard and reason.
        guard let staticName = (0..<cs_guard_count()).lazy.map({ cs_guard_status_at($0).name })
            .first(where: { $0 != nil && String(cString: $0!) == guardName }) ?? nil else { return }
        // StaticString storage is static and NUL-terminated.
        var site = cs_incident_site()
        site.guard_name = staticName
        site.policy = CS_POLICY_OFF
        site.class_name = UnsafeRawPointer(failSafeClass.utf8Start).assumingMemoryBound(to: CChar.self)
        site.selector_name = UnsafeRawPointer(failSafeSelector.utf8Start).assumingMemoryBound(to: CChar.self)
        site.reason = UnsafeRawPointer(failSafeReason.utf8Start).assumingMemoryBound(to: CChar.self)
        cs_incident_record(&site)
    }

    /// Copies the guard states into the crash handler's buffer so every report lists them.
    static func publishGuardStates() {
        let states = status.map { status -> CrashReport.GuardState in
            let state: String
            switch status.state {
            case .active: state = "active"
            case .canaryFailed: state = "canary_failed"
            case .installFailed: state = "install_failed"
            default: state = "not_installed"
            }
            return CrashReport.GuardState(name: status.id.rawValue, state: state, policy: "\(status.policy)")
        }
        CrashCapture.setGuardStates(states)
    }
}
