import CrashShieldBase
import CrashShieldRecording
import CrashShieldProtocol
import Foundation
package import _CrashShieldIncidents

/// What the next start knows about a crash beyond its report.
package struct CrashEventContext: Sendable, Hashable {
    /// Launch crashes in a row, this one included (`LaunchProtection.consecutiveLaunchCrashes`);
    /// nil when launch protection does not run. Sent as tag `launch.consecutive_crashes`.
    package var consecutiveLaunchCrashes: Int?
    /// The repair step launch protection ran at the start of the crashed run; nil when it ran
    /// none. Sent as tag `launch.attempted_repair_step` (`launch.repair_step` names a step that ended a loop).
    package var repairStep: String?
    /// The launch whose crash `consecutiveLaunchCrashes` and `repairStep` describe; nil: every
    /// report. A report of another launch gets neither tag.
    package var launchID: String?
    /// The version of the remote configuration document that was active in the crashed run; nil:
    /// the one the report names, if any. Sent as tag `crashshield.remote_config_version`.
    package var remoteConfigVersion: String?
    package init(consecutiveLaunchCrashes: Int? = nil, remoteConfigVersion: String? = nil, repairStep: String? = nil,
                launchID: String? = nil) {
        self.consecutiveLaunchCrashes = consecutiveLaunchCrashes
        self.repairStep = repairStep
        self.launchID = launchID
        self.remoteConfigVersion = remoteConfigVersion
    }
}

/// Turns an on-disk crash report into a Sentry event, at the next start (never in the handler).
///
/// The mapping (docs/REPORTING.md has it in full): `level: fatal`; one exception whose mechanism
/// is `signalhandler` (signal meta, `synthetic: true`) for a signal, `nsexception` (name and
/// reason) for an uncaught Objective-C exception or `cpp_exception` (type and what(), signal
/// meta SIGABRT) for an uncaught C++ exception; the crashed thread's frames caller → callee;
/// registers; the crashed thread in `threads`; every image with a build id in `debug_meta`;
/// contexts; release, dist, environment; the report's recent incidents as breadcrumbs; tags for
/// the launch phase, launch-crash count, guard states and the classification.
package struct CrashEventConverter: Sendable {
    package var release: String?
    package var dist: String?
    package var environment: String
    package var inApp: InAppClassifier

    package init(options: ReportingOptions) {
        self.init(release: options.release, dist: options.dist, environment: options.environment,
                  inApp: InAppClassifier(include: options.inAppInclude, exclude: options.inAppExclude))
    }

    /// - Parameters:
    ///   - release: nil: `"<process name>@<app version>"` from the report.
    package init(release: String?, dist: String?, environment: String, inApp: InAppClassifier = InAppClassifier()) {
        self.release = release
        self.dist = dist
        self.environment = environment
        self.inApp = inApp
    }

    /// The release an event from `report` carries.
    package func release(for report: CrashReport) -> String {
        if let release { return release }
        let name = report.process?.name ?? report.process?.executable.map { ($0 as NSString).lastPathComponent }
        return ReportingOptions.defaultRelease(processName: name, appVersion: report.process?.appVersion)
    }

    /// The event for `report`. Its id is derived from the report's id, so the same report always
    /// gives the same event id (a server that deduplicates keeps one copy of a re-sent crash).
    package func event(from report: CrashReport, context: CrashEventContext = CrashEventContext()) -> SentryEvent {
        let classification = report.classification ?? report.classify()
        let isApple = report.os?.sysname == "Darwin"
        var event = SentryEvent(
            eventID: SentryID.derived(from: "crashshield.crash-report:" + report.id),
            timestamp: SentryTimestamp.rfc3339(nanosecondsSince1970: report.timestampNs ?? 0),
            platform: isApple ? "cocoa" : "native")
        event.level = .fatal
        event.logger = "crashshield"
        event.release = release(for: report)
        event.dist = dist
        event.environment = environment
        event.sdk = ReportingOptions.sdk

        let executable = report.process?.executable
        let imagesByPath = Dictionary((report.images ?? []).compactMap { image in image.path.map { ($0, image) } },
                                      uniquingKeysWith: { first, _ in first })
        let threadID = report.crash?.threadId

        // The exception and its mechanism.
        var exception: SentryEvent.ExceptionValue
        let frames = (report.crashedThread?.frames ?? []).compactMap { frame in
            self.frame(frame, imagesByPath: imagesByPath, executable: executable)
        }
        let firstFrameIsPC = report.crashedThread?.firstFrameIsPc ?? (report.kind != .objcException)
        var stacktrace = frames.isEmpty ? nil : SentryEvent.Stacktrace(
            frames: frames.reversed(),
            instructionAddrAdjustment: firstFrameIsPC ? nil : "all")
        if report.kind == .objcException {
            exception = SentryEvent.ExceptionValue(
                type: nonEmpty(report.exception?.name) ?? "NSException",
                value: nonEmpty(report.exception?.reason),
                mechanism: SentryEvent.Mechanism(
                    type: "nsexception", handled: false,
                    // After the report the process ends with SIGABRT, on GNUstep as on Apple.
                    meta: SentryEvent.Mechanism.Meta(signal: SentryEvent.Mechanism.Signal(number: SIGABRT, code: 0, name: "SIGABRT"))))
        } else {
            let crash = report.crash
            let signalName = nonEmpty(crash?.signalName) ?? crash?.signal.map { "signal \($0)" } ?? "unknown signal"
            var data: [String: JSONValue] = ["classification": .string(classification.rawValue)]
            if let fault = crash?.faultAddress { data["fault_address"] = .string(fault) }
            if let trap = crash?.trapInstruction { data["trap_instruction"] = .string(trap.rawValue) }
            if let sender = crash?.senderPid { data["sender_pid"] = .int(Int64(sender)) }
            if crash?.recovered == true { data["recovered"] = true }
            if let handlerCrash = report.handlerCrash {
                data["handler_crash_signal"] = .string(handlerCrash.signalName ?? "\(handlerCrash.signal ?? 0)")
            }
            let runtimeMessage = nonEmpty(crash?.runtimeMessage?.trimmingCharacters(in: .whitespacesAndNewlines))
            if let runtimeMessage { data["runtime_message"] = .string(runtimeMessage) }
            // An uncaught C++ exception: its type and what() (the terminate handler noted them
            // before the abort the report records), as Sentry's native SDK reports one.
            let cxx = classification == .cppException ? report.exception : nil
            exception = SentryEvent.ExceptionValue(
                type: cxx.map { nonEmpty($0.name) ?? "std::terminate" } ?? (classification == .swiftTrap ? "Swift runtime trap" : signalName),
                value: cxx.map { nonEmpty($0.reason) ?? "uncaught exception" }
                    ?? runtimeMessage ?? Self.describe(classification, crash: crash, signalName: signalName, ownPID: report.process?.pid),
                mechanism: SentryEvent.Mechanism(
                    type: cxx == nil ? "signalhandler" : "cpp_exception", handled: false, synthetic: cxx == nil ? true : nil, data: data,
                    meta: crash?.signal.map {
                        SentryEvent.Mechanism.Meta(signal: SentryEvent.Mechanism.Signal(
                            number: $0, code: crash?.code, name: crash?.signalName, codeName: crash?.codeName))
                    }))
            if let registers = report.registers, !registers.isEmpty, stacktrace != nil, firstFrameIsPC {
                stacktrace?.registers = registers
            }
        }
        exception.stacktrace = stacktrace
        exception.threadID = threadID
        event.exception = SentryEvent.Values([exception])

        // The crashed thread (the report records no other thread's stack).
        if let threadID {
            event.threads = SentryEvent.Values([SentryEvent.Thread(
                id: threadID, name: nonEmpty(report.crash?.threadName), crashed: true, current: true, main: report.crash?.mainThread)])
        }

        // Images.
        let arch = Self.sentryArch(report.os?.machine)
        let images = (report.images ?? []).compactMap { Self.debugImage($0, arch: arch, isApple: isApple) }
        if !images.isEmpty { event.debugMeta = SentryEvent.DebugMeta(images: images) }

        // Contexts.
        event.contexts = SentryEvent.Contexts(
            os: report.os.map { os in
                isApple
                    ? SentryEvent.OSContext(name: "Darwin", version: os.release, kernelVersion: os.version)
                    : SentryEvent.OSContext(name: os.sysname ?? "Linux", version: os.release, kernelVersion: os.version)
            },
            device: arch.map { SentryEvent.DeviceContext(arch: $0) },
            app: SentryEvent.AppContext(appName: nonEmpty(report.process?.name), appVersion: nonEmpty(report.process?.appVersion), appBuild: dist))

        // Breadcrumbs: the guard incidents before the crash, oldest first. Incidents carry a
        // monotonic time only, so each breadcrumb is stamped with the crash's time; their order is
        // the order they happened in.
        if let incidents = report.incidents, !incidents.isEmpty {
            event.breadcrumbs = SentryEvent.Values(incidents.map { incident in
                var data: [String: JSONValue] = [:]
                if let guardName = incident.guard { data["guard"] = .string(guardName) }
                if let count = incident.count { data["count"] = .int(Int64(clamping: count)) }
                if let monotonic = incident.monotonicNs { data["monotonic_ns"] = .int(Int64(clamping: monotonic)) }
                if let policy = incident.policy { data["policy"] = .string(policy) }
                let method = incident.class.map { "\(incident.classMethod == true ? "+" : "-")[\($0) \(incident.selector ?? "?")]" }
                let message = [method, incident.reason].compactMap { $0 }.joined(separator: ": ")
                return SentryEvent.Breadcrumb(
                    timestamp: event.timestamp, type: "default", category: "crashshield.incident", level: .warning,
                    message: message.isEmpty ? nil : message, data: data.isEmpty ? nil : data)
            })
        }

        // Tags and extra.
        var tags: [String: String] = ["crashshield.kind": (report.kind ?? .signal).rawValue,
                                      "crashshield.classification": classification.rawValue]
        // The collector's dashboard reads the three `launch.*` names.
        if let phase = report.launchPhase { tags["launch.phase"] = phase.rawValue }
        let sameLaunch = context.launchID == nil || context.launchID == report.launchId
        if sameLaunch, let consecutive = context.consecutiveLaunchCrashes { tags["launch.consecutive_crashes"] = String(consecutive) }
        // `launch.repair_step` is the step that ended a loop (sent when the launch completed:
        // `EventReporter.launchLoopEndedEnvelope`); a crash names the step its run attempted.
        if sameLaunch, let step = context.repairStep, !step.isEmpty { tags["launch.attempted_repair_step"] = String(step.prefix(200)) }
        if let version = context.remoteConfigVersion ?? report.remoteConfigVersion.map(String.init), !version.isEmpty {
            tags["crashshield.remote_config_version"] = String(version.prefix(200))
        }
        for state in report.guards ?? [] {
            guard let name = state.name, !name.isEmpty else { continue }
            let value = [state.state?.rawValue, state.policy?.rawValue].compactMap { $0 }.joined(separator: "/")
            tags[String("crashshield.guard.\(name)".prefix(200))] = String(value.prefix(200))
        }
        if let guardName = nonEmpty(report.exception?.reportOnlyGuard) {
            tags["crashshield.report_only_guard"] = String(guardName.prefix(200))
        }
        if let guardFrames = report.crashedThread?.guardFrames, !guardFrames.isEmpty {
            tags["crashshield.crash_in_guard"] = String(guardFrames.joined(separator: ",").prefix(200))
        }
        event.tags = tags
        var extra: [String: JSONValue] = ["crashshield.report_id": .string(report.id)]
        if let unwinder = report.crashedThread?.unwinder { extra["crashshield.unwinder"] = .string(unwinder.rawValue) }
        if let uptime = report.uptimeNs { extra["crashshield.uptime_ns"] = .int(Int64(clamping: uptime)) }
        if let launchID = report.launchId { extra["crashshield.launch_id"] = .string(launchID) }
        if let memory = report.process?.memory {
            var figures: [String: JSONValue] = [:]
            if let value = memory.residentBytes { figures["resident_bytes"] = .int(Int64(clamping: value)) }
            if let value = memory.peakResidentBytes { figures["peak_resident_bytes"] = .int(Int64(clamping: value)) }
            if let value = memory.footprintBytes { figures["footprint_bytes"] = .int(Int64(clamping: value)) }
            if let value = memory.memoryWarnings { figures["memory_warnings"] = .int(Int64(value)) }
            if let value = memory.sampledNs { figures["sampled"] = .string(SentryTimestamp.rfc3339(Date(timeIntervalSince1970: Double(value) / 1e9))) }
            extra["crashshield.memory"] = .object(figures)
        }
        if report.minimal == true { extra["crashshield.minimal"] = true }
        if !report.isComplete { extra["crashshield.truncated"] = true }
        if let others = report.otherCrashingThreads, others > 0 { extra["crashshield.other_crashing_threads"] = .int(Int64(others)) }
        event.extra = extra
        return event
    }

    func frame(_ frame: CrashReport.Frame, imagesByPath: [String: CrashReport.Image], executable: String?) -> SentryEvent.Frame? {
        guard let address = frame.addressValue else { return nil }
        var result = SentryEvent.Frame(instructionAddr: Self.hex(address), function: nonEmpty(frame.function), package: nonEmpty(frame.image))
        if let image = frame.image {
            // CrashShield's own code (linked into the app's executable) is never the app's.
            result.inApp = frame.sdk != true && inApp.isInApp(imagePath: image, executable: executable)
            if let start = imagesByPath[image]?.start.flatMap({ UInt64(hex: $0) }) { result.imageAddr = Self.hex(start) }
        }
        result.filename = nonEmpty(frame.file)
        result.lineno = frame.line
        return result
    }

    /// A `debug_meta` image; nil without a usable address, size or identifier (a server cannot
    /// match such an image to a debug file, and Sentry refuses an image without `debug_id`).
    static func debugImage(_ image: CrashReport.Image, arch: String?, isApple: Bool) -> SentryEvent.DebugImage? {
        guard let start = image.start.flatMap({ UInt64(hex: $0) }), let size = image.size.flatMap({ UInt64(hex: $0) }), size > 0,
              let buildID = image.buildId?.lowercased(), let debugID = isApple ? DebugIdentifier.fromMachOUUID(hex: buildID)
                : DebugIdentifier.fromELFBuildID(hex: buildID)
        else { return nil }
        let base = image.base.flatMap { UInt64(hex: $0) } ?? start
        return SentryEvent.DebugImage(
            type: isApple ? "macho" : "elf", codeFile: image.path, imageAddr: hex(start),
            imageVmaddr: start > base ? hex(start - base) : nil, imageSize: size,
            codeID: isApple ? nil : buildID, debugID: debugID, arch: arch)
    }

    static func describe(_ classification: CrashReport.Classification, crash: CrashReport.Crash?, signalName: String, ownPID: Int32?) -> String {
        let what: String
        switch classification {
        case .swiftTrap: what = "Swift runtime failure (a precondition, bounds, unwrap or overflow check)"
        case .abort: what = "abort"
        case .trap: what = "trap instruction"
        case .stackOverflow: what = "stack overflow"
        case .badAccess: what = "bad memory access"
        case .arithmetic: what = "arithmetic fault"
        case .brokenPipe: what = "write to a broken pipe"
        case .badSystemCall: what = "bad system call"
        default: what = "fatal signal"
        }
        var details = [signalName]
        if let code = crash?.codeName, !code.isEmpty { details.append(code) }
        if let fault = crash?.faultAddress, classification == .badAccess || classification == .stackOverflow {
            details.append("at \(fault)")
        }
        // A signal the process sent itself (abort, raise) names no sender.
        if let sender = crash?.senderPid, sender != ownPID { details.append("sent by pid \(sender)") }
        return "\(what) (\(details.joined(separator: " ")))"
    }

    /// Sentry's architecture names: "x86_64", "x86", "arm64", "arm".
    static func sentryArch(_ machine: String?) -> String? {
        guard let machine, !machine.isEmpty else { return nil }
        switch machine {
        case "aarch64", "arm64", "arm64e": return "arm64"
        case "i386", "i486", "i586", "i686": return "x86"
        case "x86_64", "amd64": return "x86_64"
        default: return machine.hasPrefix("armv") ? "arm" : machine
        }
    }

    static func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }
}

private func nonEmpty(_ text: String?) -> String? { text?.isEmpty == false ? text : nil }

/// Decides `in_app`: the app's own code or a system library / runtime.
///
/// In-app: the executable, images in the executable's directory (a SwiftPM or app-bundle layout)
/// and images under an `include` prefix. Not in-app (wins): the system library directories
/// (`/lib`, `/lib64`, `/usr/lib`, `/usr/lib64`, `/usr/libexec`, `/System`, `/Library/Apple`, a
/// simulator's runtime root), the Swift toolchain's runtime (`libswift*`, Foundation, dispatch,
/// BlocksRuntime, ICU, the XCTest and Testing libraries), the kernel's vDSO, and `exclude` prefixes.
/// Anything else is not in-app.
package struct InAppClassifier: Sendable, Hashable {
    package var include: [String]
    package var exclude: [String]
    package init(include: [String] = [], exclude: [String] = []) {
        self.include = include
        self.exclude = exclude
    }

    static let systemPrefixes = ["/lib/", "/lib32/", "/lib64/", "/usr/lib/", "/usr/lib32/", "/usr/lib64/", "/usr/libexec/",
                                 "/System/", "/Library/Apple/", "/usr/local/lib/swift/"]
    static let runtimeNamePrefixes = ["libswift", "libFoundation", "lib_Foundation", "libdispatch", "libBlocksRuntime",
                                      "libXCTest", "libTesting", "lib_Testing", "libicu", "linux-vdso", "linux-gate", "ld-linux"]

    package func isInApp(imagePath path: String, executable: String?) -> Bool {
        if exclude.contains(where: { path.hasPrefix($0) }) { return false }
        let name = (path as NSString).lastPathComponent
        if Self.systemPrefixes.contains(where: { path.hasPrefix($0) }) || path.contains("/RuntimeRoot/")
            || path.contains("/usr/lib/swift/") || Self.runtimeNamePrefixes.contains(where: { name.hasPrefix($0) }) {
            return false
        }
        if include.contains(where: { path.hasPrefix($0) }) { return true }
        guard let executable, !executable.isEmpty else { return false }
        if path == executable { return true }
        let directory = (executable as NSString).deletingLastPathComponent
        return !directory.isEmpty && (path as NSString).deletingLastPathComponent == directory
    }
}

/// Sentry's debug identifiers (the key a server uses to find an image's debug file).
package enum DebugIdentifier {
    /// ELF: the first 16 bytes of the GNU build id (zero-padded when shorter) read as a GUID in
    /// this machine's byte order, lowercase and hyphenated: on a little-endian machine build id
    /// `68220ae2c65d65c1b6aaa12f...` gives `e20a2268-5dc6-c165-b6aa-a12fa6765a6e`. Nil for text that
    /// is not an even number of hex digits, or empty.
    package static func fromELFBuildID(hex: String) -> String? {
        guard let bytes = bytes(hex: hex), !bytes.isEmpty else { return nil }
        var text = [CChar](repeating: 0, count: Int(CS_DEBUG_ID_TEXT_SIZE))
        guard cs_debug_id_from_elf_build_id(bytes, bytes.count, &text) else { return nil }
        return string(text)
    }

    /// Mach-O: the 16-byte LC_UUID as is, lowercase and hyphenated. Nil unless `hex` is 32 hex digits.
    package static func fromMachOUUID(hex: String) -> String? {
        guard let bytes = bytes(hex: hex.replacingOccurrences(of: "-", with: "")), bytes.count == 16 else { return nil }
        var text = [CChar](repeating: 0, count: Int(CS_DEBUG_ID_TEXT_SIZE))
        cs_debug_id_from_uuid(bytes, &text)
        return string(text)
    }

    private static func string(_ text: [CChar]) -> String {
        String(decoding: text.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
