import CrashShieldBase
import CrashShieldGuards
import Foundation

internal import _CrashShieldCapture
internal import _CrashShieldIncidents
internal import _CrashShieldRuntime

extension CrashShieldSDK {
    /// The capture part of `start`: registers the guards' code ranges with the crash handler
    /// (before capture is installed, so every report names the guards among its crashed thread's
    /// frames), installs capture, then uncaught-exception capture and the guard fail-safe, then
    /// launch protection (its repair flow included), then safe mode's guards, then report delivery.
    ///
    /// Fail-safe: when a report from an earlier run has frames inside a guard's code, that guard is
    /// switched off for this run and an incident says so. The crash handler names those guards in
    /// the report (crashed_thread.guard_frames), so this reads them with the C scan and decodes no
    /// report. A report without that key (an older version's) is decoded and its frames mapped
    /// (same binary only: same path and build id), which costs the first JSONDecoder use (~2 ms).
    static func runCaptureSteps(_ options: CaptureOptions, launchProtection: LaunchProtectionOptions?,
                                safeModeGuards: [GuardID], reporting: ReportingOptions? = nil) throws -> LaunchProtection? {
        registerGuardCodeRanges()
        return try CrashCapture.start(options, launchProtection: launchProtection, reporter: ReportingClient.starter(reporting), afterInstall: {
            cs_capture_exceptions_start()
            for guardName in guardsToSwitchOff(CrashCapture.guardFramesFoundAtStart) {
                cs_guard_set_policy(guardName, CS_POLICY_OFF)
                recordFailSafeIncident(guardName)
            }
        }, afterLaunchProtection: { protection in
            if protection?.isSafeMode == true {
                for id in safeModeGuards { try? setPolicy(.off, for: id) }
            }
            publishGuardStates()
        })
    }

    /// Launch protection with the timer method (capture off): a launch that never completed counts
    /// as a crash. Its state lives in `directoryWithoutCapture` (default: the default capture
    /// directory).
    static func startLaunchProtectionWithoutCapture(_ options: LaunchProtectionOptions,
                                                    safeModeGuards: [GuardID], reporting: ReportingClient? = nil) -> LaunchProtection {
        let protection = LaunchProtection.begin(directory: options.directoryWithoutCapture ?? CaptureOptions.defaultDirectory,
                                                options: options, captureEnabled: false,
                                                beforeRepair: reporting.map { client in { client.launchDecided($0) } })
        if protection.isSafeMode {
            for id in safeModeGuards { try? setPolicy(.off, for: id) }
        }
        return protection
    }

    /// Capture (with the fail-safe and uncaught-exception capture) without starting the guards and
    /// without launch protection: what `shield crash` needs to crash with the guards not installed.
    package static func _startCaptureWithoutGuardsForTesting(_ options: CaptureOptions) throws {
        startLock.lock()
        defer { startLock.unlock() }
        _ = try runCaptureSteps(options, launchProtection: nil, safeModeGuards: [])
    }

    /// Gives the crash handler every guard's code range (link-time constants: the handler keeps
    /// the first table it gets), before capture is installed, so every report names the guards
    /// among its crashed thread's frames.
    static func registerGuardCodeRanges() {
        var ranges: [csc_guard_code_range] = []
        for index in 0..<cs_guard_count() {
            var name: UnsafePointer<CChar>?
            var start: UInt = 0, end: UInt = 0
            if cs_guard_code_range_at(index, &name, &start, &end), let name {
                ranges.append(csc_guard_code_range(name: name, start: start, end: end))
            }
        }
        _ = csc_set_guard_code_ranges(ranges, ranges.count)
    }

    /// Guard names to switch off for `reports`: what the handler recorded, read by the start's
    /// scan; for a report the scan cannot tell about, what its decoded form records plus its
    /// frames mapped to guard code.
    static func guardsToSwitchOff(_ reports: [CrashCapture.GuardFramesOfReport]) -> [String] {
        var names: [String] = []
        func add(_ name: String) { if !names.contains(name) { names.append(name) } }
        for item in reports {
            if let scanned = item.scanned {
                scanned.forEach(add)
                continue
            }
            guard let report = item.report else { continue }
            (report.crashedThread?.guardFrames ?? []).forEach(add)
            guardsWithCodeInFrames([report]).forEach(add)
        }
        return names
    }

    /// Guard names whose code appears in the crashed-thread frames of `reports` (frames of this
    /// very binary only: same path and build id as loaded now).
    static func guardsWithCodeInFrames(_ reports: [CrashReport]) -> [String] {
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
    /// Called after every change of a guard's state or policy (start, `setPolicy`, the fail-safe,
    /// safe mode, the test reset). Serialised so that the last publication reads the states after
    /// the last change: a change is followed by its own publication, which reads under the lock.
    static func publishGuardStates() {
        publishLock.lock()
        defer { publishLock.unlock() }
        // Straight from the C registry and the Swift guards' cells, in `status`'s order, without
        // building `status` (its first use instantiates generic metadata the start pays for).
        var json: [UInt8] = [UInt8(ascii: "[")]
        json.reserveCapacity(64 * (cs_guard_count() + swiftGuards.count) + 2)
        func add(_ name: String, _ state: CrashReport.GuardState.State, _ policy: GuardPolicy) {
            if json.count > 1 { json.append(UInt8(ascii: ",")) }
            let reported: CrashReport.GuardState.Policy
            switch policy {
            case .neutralize: reported = .neutralize
            case .reportOnly: reported = .reportOnly
            case .off: reported = .off
            }
            appendGuardState(name: name, state: state.rawValue, policy: reported.rawValue, to: &json)
        }
        for index in 0..<cs_guard_count() {
            let raw = cs_guard_status_at(index)
            let state: CrashReport.GuardState.State
            switch raw.state {
            case CS_GUARD_ACTIVE: state = .active
            case CS_GUARD_CANARY_FAILED: state = .canaryFailed
            case CS_GUARD_INSTALL_FAILED: state = .installFailed
            default: state = .notInstalled
            }
            add(String(cString: raw.name), state, GuardPolicy(raw.policy))
        }
        for (id, cell) in swiftGuards { add(id.rawValue, .active, GuardPolicy(cs_swift_guard_policy(cell))) }
        json.append(UInt8(ascii: "]"))
        json.append(0)
        json.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { csc_set_guard_states_json($0.baseAddress) }
        }
    }

    private static let publishLock = Locked()

    /// The report's "guards" array: what JSONEncoder (sorted keys, slashes unescaped) makes of
    /// `[CrashReport.GuardState]`, written by hand because the first JSONEncoder use and the
    /// reflection of an enum's name cost ~0.7 ms of a start that may add only about 1 ms.
    static func guardStatesJSON(_ states: [(name: String, state: String, policy: String)]) -> String {
        var json: [UInt8] = [UInt8(ascii: "[")]
        for (index, entry) in states.enumerated() {
            if index > 0 { json.append(UInt8(ascii: ",")) }
            appendGuardState(name: entry.name, state: entry.state, policy: entry.policy, to: &json)
        }
        json.append(UInt8(ascii: "]"))
        return String(decoding: json, as: UTF8.self)
    }

    /// One entry of the "guards" array (keys sorted, as JSONEncoder writes them), as UTF-8.
    private static func appendGuardState(name: String, state: String, policy: String, to json: inout [UInt8]) {
        json.append(contentsOf: #"{"name":"#.utf8)
        appendJSONString(name, to: &json)
        json.append(contentsOf: #","policy":"#.utf8)
        appendJSONString(policy, to: &json)
        json.append(contentsOf: #","state":"#.utf8)
        appendJSONString(state, to: &json)
        json.append(UInt8(ascii: "}"))
    }

    /// A JSON string literal as JSONEncoder writes it with `.withoutEscapingSlashes`, as UTF-8.
    private static func appendJSONString(_ text: String, to json: inout [UInt8]) {
        json.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): json.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): json.append(contentsOf: #"\\"#.utf8)
            case 0x08: json.append(contentsOf: #"\b"#.utf8)
            case 0x0C: json.append(contentsOf: #"\f"#.utf8)
            case UInt8(ascii: "\n"): json.append(contentsOf: #"\n"#.utf8)
            case UInt8(ascii: "\r"): json.append(contentsOf: #"\r"#.utf8)
            case UInt8(ascii: "\t"): json.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                json.append(contentsOf: #"\u00"#.utf8)
                json.append(hex[Int(byte >> 4)])
                json.append(hex[Int(byte & 0xF)])
            default: json.append(byte)  // UTF-8 passes through as JSONEncoder writes it
            }
        }
        json.append(UInt8(ascii: "\""))
    }
}
