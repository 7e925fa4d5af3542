import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// Fixed reporting settings shared by the reporting tests and the golden envelopes.
enum ReportingFixture {
    static let dsn = "https://0123456789abcdef0123456789abcdef@sentry.example.com/42"
    static func options(_ edit: (inout ReportingOptions) -> Void = { _ in }) -> ReportingOptions {
        var options = try! ReportingOptions(dsn: dsn, release: "com.example.app@2.4.1+311", dist: "311", environment: "production")
        edit(&options)
        return options
    }
    static let installationID = "7f1c2e3d-4b5a-4697-8877-665544332211"

    static func report(_ edit: (inout CrashReport) -> Void = { _ in }) -> CrashReport {
        var report = try! CrashReport.decode([UInt8](FileManager.default.contents(atPath: schemaDirectory + "/examples/signal-segv.json")!))
        edit(&report)
        return report
    }

    static func incident(count: Int = 1, first: Bool = true) -> IncidentRecord {
        IncidentRecord(
            guardName: "container", policy: "neutralize", className: "NSArray", selector: "objectAtIndex:", isClassMethod: false,
            reason: "index 5 beyond bounds [0 .. 2]",
            frames: [IncidentRecord.Frame(address: 0x5555_5555_1234, imagePath: "/opt/app/bin/App", imageOffset: 0x1234),
                     IncidentRecord.Frame(address: 0x7fff_0000_2000, imagePath: "/lib/x86_64-linux-gnu/libc.so.6", imageOffset: 0x2000)],
            threadID: 4242, isMainThread: true, wallTime: Date(timeIntervalSince1970: 1_795_323_000.25), fingerprint: 0xabcdef0123456789,
            count: count, isFirstOccurrence: first)
    }

    static let incidentConverter = IncidentEventConverter(
        release: "com.example.app@2.4.1+311", dist: "311", environment: "production", executable: "/opt/app/bin/App",
        contexts: SentryEvent.Contexts(os: SentryEvent.OSContext(name: "Linux", version: "6.1.0"), device: SentryEvent.DeviceContext(arch: "x86_64"),
                                       app: SentryEvent.AppContext(appName: "App", appVersion: "2.4.1", appBuild: "311")),
        imageIdentity: { path in
            path == "/opt/app/bin/App" ? ImageIdentity(buildID: "68220ae2c65d65c1b6aaa12fa6765a6ec2f5f434", vmStart: 0, vmSize: 0x8000) : nil
        })
}

@Suite struct ReportingOptionsTests {
    @Test func malformedSettingsAreRefusedWithTheirCode() throws {
        #expect(throws: ReportingConfigurationError.self) { try ReportingOptions(dsn: "not a dsn") }
        do {
            _ = try ReportingOptions(dsn: "ftp://key@host/1")
            Issue.record("an ftp DSN was accepted")
        } catch { #expect(error.code == "reporting.dsn" && error.message.contains("dsn.scheme")) }
        for rate in [-0.1, 1.01, .nan, .infinity] {
            do {
                _ = try ReportingOptions(dsn: ReportingFixture.dsn, incidentSampleRate: rate)
                Issue.record("sample rate \(rate) was accepted")
            } catch { #expect(error.code == "reporting.sample_rate") }
        }
        for release in ["", ".", "..", "a/b", "a\nb", String(repeating: "x", count: 201)] {
            do {
                _ = try ReportingOptions(dsn: ReportingFixture.dsn, release: release)
                Issue.record("release \(release.debugDescription) was accepted")
            } catch { #expect(error.code == "reporting.release") }
        }
        do {
            _ = try ReportingOptions(dsn: ReportingFixture.dsn, environment: "")
            Issue.record("an empty environment was accepted")
        } catch { #expect(error.code == "reporting.environment") }
    }

    @Test func aRefusedChangeKeepsTheOldValue() throws {
        var options = try ReportingOptions(dsn: ReportingFixture.dsn, release: "app@1", incidentSampleRate: 0.5)
        #expect(throws: ReportingConfigurationError.self) { try options.setIncidentSampleRate(2) }
        #expect(options.incidentSampleRate == 0.5)
        #expect(throws: ReportingConfigurationError.self) { try options.setRelease("x/y") }
        #expect(options.release == "app@1")
        try options.setIncidentSampleRate(0)
        #expect(options.incidentSampleRate == 0)
        #expect(options.environment == "production" && options.dsn.projectID == "42")
    }

    @Test func defaultReleaseNamesTheProcessAndVersion() throws {
        let options = try ReportingOptions(dsn: ReportingFixture.dsn)
        #expect(options.effectiveRelease(processName: "App", appVersion: "2.0") == "App@2.0")
        #expect(options.effectiveRelease(processName: nil, appVersion: nil) == "app@unknown")
    }

    @Test func installationIDIsARandomUUIDStoredOnce() throws {
        let directory = temporaryDirectory("install-id")
        let first = try InstallationID.load(directory: directory)
        #expect(UUID(uuidString: first) != nil && first == first.lowercased())
        #expect(try InstallationID.load(directory: directory) == first)
        let other = try InstallationID.load(directory: temporaryDirectory("install-id-other"))
        #expect(other != first)
        // A damaged file is replaced by a new id.
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: directory + "/installation-id"))
        let replaced = try InstallationID.load(directory: directory)
        #expect(replaced != first && UUID(uuidString: replaced) != nil)
        #expect(try InstallationID.load(directory: directory) == replaced)
    }
}

extension ReportingOptionsTests {
    @Test func concurrentFirstLoadsAgreeOnOneID() {
        let directory = temporaryDirectory("install-id-race")
        let ids = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            if let id = try? InstallationID.load(directory: directory) { ids.withLock { $0.append(id) } }
        }
        let values = ids.withLock { $0 }
        #expect(values.count == 8 && Set(values).count == 1)
        #expect(values.first == (try? InstallationID.load(directory: directory)))
    }
}

@Suite struct DebugIdentifierTests {
    /// Relay's documented pair for an x86_64 ELF image (the C implementation's test has it too).
    @Test func elfDebugIDFollowsSentrysTransformation() {
        #expect(DebugIdentifier.fromELFBuildID(hex: "68220ae2c65d65c1b6aaa12fa6765a6ec2f5f434") == "e20a2268-5dc6-c165-b6aa-a12fa6765a6e")
        #expect(DebugIdentifier.fromELFBuildID(hex: "68220AE2C65D65C1B6AAA12FA6765A6EC2F5F434") == "e20a2268-5dc6-c165-b6aa-a12fa6765a6e")
        #expect(DebugIdentifier.fromELFBuildID(hex: "0102030405") == "04030201-0005-0000-0000-000000000000")
        #expect(DebugIdentifier.fromELFBuildID(hex: "") == nil)
        #expect(DebugIdentifier.fromELFBuildID(hex: "abc") == nil)
        #expect(DebugIdentifier.fromELFBuildID(hex: "zz") == nil)
        #expect(DebugIdentifier.fromMachOUUID(hex: "84a04d240e603810a8c090a65e2df61a") == "84a04d24-0e60-3810-a8c0-90a65e2df61a")
        #expect(DebugIdentifier.fromMachOUUID(hex: "84a04d24") == nil)
    }
}

@Suite struct CrashConversionTests {
    let converter = CrashEventConverter(options: ReportingFixture.options())

    @Test func aSignalCrashIsAFatalSyntheticSignalHandlerException() throws {
        let report = ReportingFixture.report()
        let event = converter.event(from: report)
        #expect(event.level == .fatal && event.platform == "native")
        #expect(event.release == "com.example.app@2.4.1+311" && event.dist == "311" && event.environment == "production")
        #expect(event.timestamp == SentryTimestamp.rfc3339(nanosecondsSince1970: report.timestampNs!))
        let exception = try #require(event.exception?.values.first)
        #expect(event.exception?.values.count == 1)
        #expect(exception.type == "SIGSEGV")
        #expect(exception.value?.contains("SEGV_MAPERR") == true && exception.value?.contains("0x0") == true)
        let mechanism = try #require(exception.mechanism)
        #expect(mechanism.type == "signalhandler" && mechanism.handled == false && mechanism.synthetic == true)
        #expect(mechanism.meta?.signal == SentryEvent.Mechanism.Signal(number: 11, code: 1, name: "SIGSEGV", codeName: "SEGV_MAPERR"))
        #expect(mechanism.data?["classification"] == "bad_access")
        #expect(exception.threadID == report.crash?.threadId)
        #expect(event.threads?.values == [SentryEvent.Thread(id: report.crash!.threadId!, name: "shield", crashed: true, current: true, main: true)])
        #expect(exception.stacktrace?.registers?["rip"] == report.registers?["rip"])
        #expect(event.tags?["launch.phase"] == "running")
        #expect(event.tags?["crashshield.guard.swift"] == "active/neutralize")
        #expect(event.contexts?.device?.arch == "x86_64" && event.contexts?.os?.name == "Linux")
        #expect(event.contexts?.os?.version == report.os?.release)
    }

    @Test func framesGoCallerToCalleeWithImagesAndInApp() throws {
        let report = ReportingFixture.report()
        let frames = try #require(converter.event(from: report).exception?.values.first?.stacktrace?.frames)
        let reportFrames = try #require(report.crashedThread?.frames)
        #expect(frames.count == reportFrames.count)
        // The report is innermost first; Sentry wants the crashing frame last.
        #expect(frames.last?.instructionAddr == reportFrames.first?.address)
        #expect(frames.first?.instructionAddr == reportFrames.last?.address)
        let executable = try #require(report.process?.executable)
        for frame in frames {
            #expect(frame.inApp == (frame.package == executable))
            #expect(frame.imageAddr != nil)
        }
        #expect(frames.contains { $0.package == "/lib/x86_64-linux-gnu/libc.so.6" && $0.inApp == false })
    }

    @Test func everyImageWithABuildIDIsADebugImage() throws {
        let report = ReportingFixture.report()
        let images = try #require(converter.event(from: report).debugMeta?.images)
        #expect(images.count == report.images?.filter { $0.buildId != nil }.count)
        let first = try #require(images.first)
        #expect(first.type == "elf" && first.codeFile == report.images?.first?.path)
        #expect(first.codeID == "2ec53299102c3fd8bd4581463240b353136911ae")
        #expect(first.debugID == "9932c52e-2c10-d83f-bd45-81463240b353")
        #expect(first.imageAddr == "0x557a2ab5b000" && first.imageSize == 0x21c190 && first.arch == "x86_64")
        // An image without a build id cannot be matched: it is left out, not sent without debug_id.
        let stripped = ReportingFixture.report { $0.images?[0].buildId = nil }
        #expect(converter.event(from: stripped).debugMeta?.images.count == images.count - 1)
    }

    /// Handled events (an error, a message) carry the given scope, the caller's
    /// frames and go through `beforeSend`, which may edit or drop them (counted `before_send`).
    /// With CRASHSHIELD_INTEROP_DIR set they are exported for scripts/check-sentry-interop.sh.
    @Test func handledEventsCarryScopeAndGoThroughBeforeSend() throws {
        let frames = [IncidentRecord.Frame(address: 0x401234, imagePath: "/opt/app/bin/App", imageOffset: 0x1234)]
        let scope = CrashScope.Snapshot(user: CrashScope.User(id: "user-42"), tags: ["checkout_flow": "v2"])
        let converter = IncidentEventConverter(release: "app@1", dist: nil, environment: "test", executable: "/opt/app/bin/App")
        let reporter = EventReporter(options: ReportingFixture.options(), installationID: ReportingFixture.installationID)
        let errorEnvelope = try #require(reporter.handledEnvelope(
            .error(type: "App.CheckoutError", description: "declined(code: 7)"), level: .error, frames: frames, threadID: 9,
            isMainThread: true, eventID: SentryID.random(), converter: converter, scope: scope))
        let error = try #require(try Envelope.parse(errorEnvelope.serialized()).event())
        let exception = try #require(error.exception?.values.first)
        #expect(exception.type == "App.CheckoutError" && exception.value == "declined(code: 7)")
        #expect(exception.mechanism == SentryEvent.Mechanism(type: "generic", handled: true))
        #expect(exception.stacktrace?.frames.last?.inApp == true && exception.stacktrace?.frames.last?.instructionAddr == "0x401234")
        #expect(error.user?.id == "user-42" && error.tags?["checkout_flow"] == "v2" && error.level == .error)
        let messageEnvelope = try #require(reporter.handledEnvelope(
            .message("cart emptied"), level: .warning, frames: frames, threadID: 9, isMainThread: true,
            eventID: SentryID.random(), converter: converter, scope: scope))
        let message = try #require(try Envelope.parse(messageEnvelope.serialized()).event())
        #expect(message.logentry?.formatted == "cart emptied" && message.exception == nil && message.level == .warning)
        #expect(message.threads?.values.first?.stacktrace?.frames.count == 1)
        if let out = ProcessInfo.processInfo.environment["CRASHSHIELD_INTEROP_DIR"] {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            try errorEnvelope.serialized().write(to: URL(fileURLWithPath: out + "/live-handled-error.envelope"))
            try messageEnvelope.serialized().write(to: URL(fileURLWithPath: out + "/live-handled-message.envelope"))
        }
        // beforeSend edits or drops handled events like every other event.
        let dropping = EventReporter(options: ReportingFixture.options { $0.beforeSend = { $0.level == .warning ? nil : $0 } },
                                     installationID: ReportingFixture.installationID)
        #expect(dropping.handledEnvelope(.message("dropped"), level: .warning, frames: frames, threadID: 9, isMainThread: true,
                                         eventID: SentryID.random(), converter: converter, scope: nil) == nil)
        #expect(dropping.handledEnvelope(.message("kept"), level: .info, frames: frames, threadID: 9, isMainThread: true,
                                         eventID: SentryID.random(), converter: converter, scope: nil) != nil)
        let report = try #require(dropping.clientReportEnvelope())
        #expect(String(decoding: report.serialized(), as: UTF8.self).contains("before_send"))
    }

    @Test func anObjectiveCExceptionKeepsItsNameAndReason() throws {
        let report = try CrashReport.decode([UInt8](FileManager.default.contents(atPath: schemaDirectory + "/examples/objc-exception.json")!))
        let exception = try #require(converter.event(from: report).exception?.values.first)
        #expect(exception.type == "CrashShieldTestException" && exception.value == "raised on purpose by shield crash objc-exception")
        #expect(exception.mechanism?.type == "nsexception" && exception.mechanism?.handled == false && exception.mechanism?.synthetic == nil)
        #expect(exception.mechanism?.meta?.signal == SentryEvent.Mechanism.Signal(number: SIGABRT, code: 0, name: "SIGABRT"))
        // The frames are return addresses: no registers, every address is adjusted by the server.
        #expect(exception.stacktrace?.registers == nil && exception.stacktrace?.instructionAddrAdjustment == "all")
    }

    @Test func aSwiftTrapIsNamedAsSuch() throws {
        let report = ReportingFixture.report {
            $0.classification = .swiftTrap
            $0.crash?.signal = SIGILL
            $0.crash?.signalName = "SIGILL"
            $0.crash?.codeName = "ILL_ILLOPN"
        }
        let exception = try #require(converter.event(from: report).exception?.values.first)
        #expect(exception.type == "Swift runtime trap" && exception.value?.hasPrefix("Swift runtime failure") == true)
        #expect(exception.mechanism?.meta?.signal?.name == "SIGILL" && exception.mechanism?.synthetic == true)
    }

    @Test func incidentsBeforeTheCrashAreBreadcrumbsAndTagsCarryLaunchState() throws {
        let report = ReportingFixture.report {
            $0.incidents = [CrashReport.RecentIncident(sequence: 1, guard: "container", class: "NSArray", selector: "objectAtIndex:",
                                                       classMethod: false, reason: "index 5 beyond bounds", count: 3, monotonicNs: 99)]
            $0.launchPhase = .launching
            $0.crashedThread?.guardFrames = ["container"]
        }
        let event = converter.event(from: report, context: CrashEventContext(consecutiveLaunchCrashes: 2, remoteConfigVersion: "17"))
        let crumb = try #require(event.breadcrumbs?.values.first)
        #expect(crumb.message == "-[NSArray objectAtIndex:]: index 5 beyond bounds" && crumb.level == .warning)
        #expect(crumb.category == "crashshield.incident" && crumb.data?["count"] == 3 && crumb.data?["guard"] == "container")
        #expect(event.tags?["launch.phase"] == "launching")
        #expect(event.tags?["launch.consecutive_crashes"] == "2")
        #expect(event.tags?["crashshield.crash_in_guard"] == "container")
        #expect(event.tags?["crashshield.remote_config_version"] == "17")
        #expect(converter.event(from: report).tags?["crashshield.remote_config_version"] == nil)
        #expect(event.tags?["launch.attempted_repair_step"] == nil)
        // A crash names the step its run attempted; `launch.repair_step` (a step that ended a
        // loop, as the collector reads it) is only on the loop's end event.
        let repaired = converter.event(from: report, context: CrashEventContext(consecutiveLaunchCrashes: 3, repairStep: "clear-caches",
                                                                               launchID: report.launchId))
        #expect(repaired.tags?["launch.attempted_repair_step"] == "clear-caches" && repaired.tags?["launch.consecutive_crashes"] == "3")
        #expect(repaired.tags?["launch.repair_step"] == nil)
        // The context describes one launch: a report of another launch gets neither tag.
        let other = converter.event(from: report, context: CrashEventContext(consecutiveLaunchCrashes: 3, repairStep: "clear-caches",
                                                                            launchID: "another-launch"))
        #expect(other.tags?["launch.attempted_repair_step"] == nil && other.tags?["launch.consecutive_crashes"] == nil)
        #expect(other.tags?["launch.phase"] == "launching")
    }

    @Test func aSignalFromAnotherProcessNamesItsSender() throws {
        func value(sender: Int32) -> String? {
            converter.event(from: ReportingFixture.report {
                $0.crash?.signal = SIGTERM
                $0.crash?.signalName = "SIGTERM"
                $0.crash?.codeName = "SI_USER"
                $0.crash?.senderPid = sender
            }).exception?.values.first?.value
        }
        let own = try #require(ReportingFixture.report().process?.pid)
        #expect(value(sender: 4321)?.contains("sent by pid 4321") == true)
        #expect(value(sender: own)?.contains("sent by") == false)
    }

    @Test func theSameReportGivesTheSameEventID() {
        let a = converter.event(from: ReportingFixture.report())
        let b = converter.event(from: ReportingFixture.report())
        let c = converter.event(from: ReportingFixture.report { $0.id = "report-1-2-3" })
        #expect(a.eventID == b.eventID && a.eventID != c.eventID)
        #expect(a.eventID.count == 32 && a.eventID.allSatisfy { $0.isHexDigit && !$0.isUppercase })
    }

    @Test func aReportCutShortStillConverts() throws {
        let minimal = try CrashReport.decode([UInt8](FileManager.default.contents(atPath: schemaDirectory + "/examples/minimal-handler-crash.json")!))
        let event = converter.event(from: minimal)
        #expect(event.exception?.values.first?.mechanism?.type == "signalhandler")
        #expect(event.exception?.values.first?.stacktrace == nil)
        #expect(event.extra?["crashshield.minimal"] == true)
        // A prefix of a report (no crash section at all).
        let cut = try CrashReport.decode(Array(#"{"schema":"crashshield.crash-report","version":1,"id":"r-1","kind":"signal","timestamp_ns":5"#.utf8))
        let cutEvent = converter.event(from: cut)
        #expect(cutEvent.exception?.values.first?.type == "unknown signal" && cutEvent.extra?["crashshield.truncated"] == true)
    }

    @Test func inAppSeparatesTheAppFromSystemLibrariesAndRuntimes() {
        let classifier = InAppClassifier(include: ["/opt/plugins/"], exclude: ["/opt/app/bin/libvendor"])
        let executable = "/opt/app/bin/App"
        #expect(classifier.isInApp(imagePath: executable, executable: executable))
        #expect(classifier.isInApp(imagePath: "/opt/app/bin/libAppCore.so", executable: executable))
        #expect(classifier.isInApp(imagePath: "/opt/plugins/p.so", executable: executable))
        #expect(!classifier.isInApp(imagePath: "/opt/app/bin/libvendor.so", executable: executable))
        #expect(!classifier.isInApp(imagePath: "/opt/app/bin/libswiftCore.so", executable: executable))
        #expect(!classifier.isInApp(imagePath: "/lib/x86_64-linux-gnu/libc.so.6", executable: executable))
        #expect(!classifier.isInApp(imagePath: "/usr/lib/swift/libswiftCore.dylib", executable: executable))
        #expect(!classifier.isInApp(imagePath: "/System/Library/Frameworks/Foundation.framework/Foundation", executable: executable))
        #expect(!classifier.isInApp(imagePath: "/opt/other/lib.so", executable: executable))
    }

    @Test func eventsRoundTripThroughJSON() throws {
        let event = converter.event(from: ReportingFixture.report())
        #expect(try SentryEvent.decode(event.jsonData()) == event)
        let json = try #require(try JSONSerialization.jsonObject(with: event.jsonData()) as? [String: Any])
        #expect(json["event_id"] as? String == event.eventID && json["debug_meta"] != nil && json["eventID"] == nil)
    }
}

@Suite struct IncidentReportingTests {
    @Test func anIncidentIsAHandledWarningWithItsOwnFingerprint() throws {
        let event = ReportingFixture.incidentConverter.event(from: ReportingFixture.incident(), occurrences: 1, processInstance: "p")
        #expect(event.level == .warning)
        let exception = try #require(event.exception?.values.first)
        #expect(exception.type == "container" && exception.value == "index 5 beyond bounds [0 .. 2]")
        #expect(exception.mechanism?.type == "crashshield.guard" && exception.mechanism?.handled == true)
        #expect(event.fingerprint == ["crashshield.incident", "container", "abcdef0123456789"])
        let frames = try #require(exception.stacktrace?.frames)
        #expect(frames.map(\.instructionAddr) == ["0x7fff00002000", "0x555555551234"])
        #expect(frames.map(\.inApp) == [false, true] && frames.last?.imageAddr == "0x555555550000")
        #expect(event.extra?["crashshield.occurrences"] == 1)
        // Only the image whose identity is known is listed.
        #expect(event.debugMeta?.images == [SentryEvent.DebugImage(
            type: "elf", codeFile: "/opt/app/bin/App", imageAddr: "0x555555550000", imageSize: 0x8000,
            codeID: "68220ae2c65d65c1b6aaa12fa6765a6ec2f5f434", debugID: "e20a2268-5dc6-c165-b6aa-a12fa6765a6e", arch: "x86_64")])
    }

    /// The identity read from an image file is the one the crash handler records from memory.
    @Test func imageIdentityFromTheFileMatchesTheLoadedImage() throws {
        let report = try #require(loadReports(crashOnce()).first)
        let executable = try #require(report.process?.executable)
        let loaded = try #require(report.images?.first { $0.path == executable })
        let identity = try #require(ImageIdentity.readELF(path: executable))
        #expect(identity.buildID == loaded.buildId)
        let base = try #require(loaded.base.flatMap { UInt64(hex: $0) })
        let image = try #require(identity.debugImage(path: executable, base: base, arch: "x86_64"))
        #expect(image.imageAddr == loaded.start && UInt64(hex: loaded.size!)! <= image.imageSize)
        #expect(ImageIdentity.readELF(path: "/nonexistent") == nil)
        #expect(ImageIdentity.readELF(path: schemaDirectory + "/crash-report.schema.json") == nil)
    }

    func crashOnce() throws -> String {
        let directory = temporaryDirectory("identity")
        _ = try runChild(Built.shield, ["crash", "segv", "--dir", directory])
        return directory
    }

    @Test func repeatsAreAggregatedByPowersOfTen() {
        let aggregator = IncidentAggregator()
        var reported: [Int] = []
        for count: Int in [1, 2, 5, 9, 10, 11, 57, 99, 100, 150, 999, 1000, 1001] {
            if let occurrences = aggregator.occurrencesToReport(ReportingFixture.incident(count: count, first: count == 1)) {
                reported.append(occurrences)
            }
        }
        #expect(reported == [1, 10, 100, 1000])
        // Another fingerprint is counted on its own; a count update seen first is reported once.
        var other = ReportingFixture.incident(count: 37, first: false)
        other.fingerprint = 1
        #expect(aggregator.occurrencesToReport(other) == 37)
        other.count = 60
        #expect(aggregator.occurrencesToReport(other) == nil)
    }

    @Test func samplingAndBeforeSendDropAndCount() throws {
        let dropAll = EventReporter(options: ReportingFixture.options { try! $0.setIncidentSampleRate(0.25) },
                                    installationID: ReportingFixture.installationID, random: { 0.5 })
        #expect(dropAll.incidentEnvelope(ReportingFixture.incident(), converter: ReportingFixture.incidentConverter) == nil)
        let keep = EventReporter(options: ReportingFixture.options { try! $0.setIncidentSampleRate(0.25) },
                                 installationID: ReportingFixture.installationID, random: { 0.1 })
        #expect(keep.incidentEnvelope(ReportingFixture.incident(), converter: ReportingFixture.incidentConverter) != nil)
        let redacting = EventReporter(options: ReportingFixture.options {
            $0.beforeSend = { event in
                guard event.level != .fatal else { return nil }
                var edited = event
                edited.exception?.values[0].value = "[redacted]"
                return edited
            }
        }, installationID: ReportingFixture.installationID)
        let envelope = try #require(redacting.incidentEnvelope(ReportingFixture.incident(), converter: ReportingFixture.incidentConverter))
        #expect(try envelope.event()?.exception?.values.first?.value == "[redacted]")
        #expect(redacting.crashEnvelopes(reports: [ReportingFixture.report()], sessions: nil).isEmpty)

        let report = try #require(dropAll.discards.takeClientReport(now: Date(timeIntervalSince1970: 0)))
        #expect(report.discardedEvents == [ClientReport.DiscardedEvents(reason: "sample_rate", category: "error", quantity: 1)])
        #expect(dropAll.discards.takeClientReport() == nil)
        #expect(redacting.discards.takeClientReport()?.discardedEvents == [ClientReport.DiscardedEvents(reason: "before_send", category: "error", quantity: 1)])
        #expect(keep.clientReportEnvelope() == nil)
    }
}

@Suite struct LaunchLoopEndedEventTests {
    /// The end of a launch-crash loop: an info message naming the step, tagged as the collector's
    /// launch page reads it, grouped per step, one id per launch; `beforeSend` applies.
    @Test func theLoopsEndNamesTheRepairStep() throws {
        let reporter = EventReporter(options: ReportingFixture.options(), installationID: ReportingFixture.installationID)
        let envelope = try #require(reporter.launchLoopEndedEnvelope(
            repairStep: "clear-caches", consecutiveLaunchCrashes: 3, stepFailed: false, launchID: "launch-7",
            converter: ReportingFixture.incidentConverter, now: Date(timeIntervalSince1970: 1_795_323_000)))
        let event = try #require(try envelope.event())
        #expect(event.level == .info && event.exception == nil)
        #expect(event.logentry?.formatted == "Launch completed after repair step clear-caches ended a loop of 3 launch crashes in a row")
        #expect(event.tags == ["launch.phase": "running", "launch.repair_step": "clear-caches", "launch.consecutive_crashes": "3"])
        #expect(event.fingerprint == ["crashshield.launch-loop-ended", "clear-caches"])
        #expect(event.release == "com.example.app@2.4.1+311" && event.environment == "production" && event.dist == "311")
        #expect(event.user?.id == ReportingFixture.installationID && event.contexts?.app?.appName == "App")
        #expect(event.extra?["crashshield.repair_step_failed"] == false && event.extra?["crashshield.launch_id"] == "launch-7")
        let again = try #require(reporter.launchLoopEndedEnvelope(
            repairStep: "clear-caches", consecutiveLaunchCrashes: 3, stepFailed: true, launchID: "launch-7",
            converter: ReportingFixture.incidentConverter))
        let repeated = try #require(try again.event())
        #expect(repeated.eventID == event.eventID)
        #expect(repeated.logentry?.formatted.contains("(the step failed or timed out)") == true)
        #expect(repeated.extra?["crashshield.repair_step_failed"] == true)
        // The message survives encoding as Sentry's `logentry`.
        let json = try JSONValue.parse(try #require(envelope.items.first { $0.type == "event" }).payload)
        #expect(json["logentry"]?["formatted"] == .string(event.logentry!.formatted))
        // scripts/check-sentry-interop.sh runs Relay's normalization over it.
        if let out = ProcessInfo.processInfo.environment["CRASHSHIELD_INTEROP_DIR"] {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            try envelope.serialized().write(to: URL(fileURLWithPath: out + "/live-launch-loop-ended.envelope"))
        }

        let dropping = EventReporter(options: ReportingFixture.options { $0.beforeSend = { _ in nil } },
                                     installationID: ReportingFixture.installationID)
        #expect(dropping.launchLoopEndedEnvelope(repairStep: "s", consecutiveLaunchCrashes: 2, stepFailed: false, launchID: "l",
                                                 converter: ReportingFixture.incidentConverter) == nil)
        #expect(dropping.discards.takeClientReport()?.discardedEvents == [ClientReport.DiscardedEvents(reason: "before_send", category: "error", quantity: 1)])
    }
}

@Suite struct SessionTrackerTests {
    static let t0 = Date(timeIntervalSince1970: 1_795_323_000)

    @Test func aCleanExitEndsTheSessionExitedOnce() throws {
        let directory = temporaryDirectory("session-exit")
        let tracker = try SessionTracker(directory: directory, release: "app@1", environment: "production", installationID: "did", now: Self.t0)
        let initial = try #require(tracker.initialUpdate())
        #expect(initial.isInitial && initial.status == .ok && initial.did == "did" && initial.attrs.release == "app@1")
        #expect(tracker.initialUpdate() == nil)
        tracker.recordError()
        let exited = try #require(tracker.end(.exited, now: Self.t0.addingTimeInterval(12.5)))
        #expect(exited.status == .exited && !exited.isInitial && exited.duration == 12.5 && exited.errors == 1 && exited.sid == initial.sid)
        #expect(tracker.end(.exited) == nil)
        // The next launch finds nothing to close.
        let next = try SessionTracker(directory: directory, release: "app@1", environment: nil, installationID: "did", now: Self.t0.addingTimeInterval(60))
        #expect(next.previous == nil && next.closePrevious(crash: nil) == nil)
        #expect(next.current.sid != initial.sid)
    }

    @Test func aRunThatVanishedIsAbnormalAtTheNextStart() throws {
        let directory = temporaryDirectory("session-abnormal")
        let first = try SessionTracker(directory: directory, release: "app@1", environment: nil, installationID: "did", now: Self.t0)
        _ = first.initialUpdate()
        // No end: the process was killed.
        let next = try SessionTracker(directory: directory, release: "app@1", environment: nil, installationID: "did", now: Self.t0.addingTimeInterval(30))
        #expect(next.previous?.sid == first.current.sid)
        let abnormal = try #require(next.closePrevious(crash: nil))
        #expect(abnormal.status == .abnormal && !abnormal.isInitial && abnormal.duration == nil && abnormal.sid == first.current.sid)
        #expect(next.closePrevious(crash: nil) == nil)
    }

    @Test func aCrashWithoutAReportStillEndsTheSessionCrashed() throws {
        let directory = temporaryDirectory("session-lost-report")
        let first = try SessionTracker(directory: directory, release: "app@1", environment: nil, installationID: "did", now: Self.t0)
        let next = try SessionTracker(directory: directory, release: "app@1", environment: nil, installationID: "did", now: Self.t0.addingTimeInterval(9))
        let reporter = EventReporter(options: ReportingFixture.options(), installationID: "did")
        let envelopes = reporter.crashEnvelopes(reports: [], sessions: next, previousRunCrashedWithoutReport: true)
        #expect(envelopes.count == 1 && envelopes.first?.items.map(\.type) == ["session"])
        let session = try JSONDecoder().decode(SessionUpdate.self, from: try #require(envelopes.first?.items.first?.payload))
        #expect(session.status == .crashed && session.errors == 1 && session.sid == first.current.sid && session.isInitial)
    }

    @Test func aCrashOfThePreviousLaunchGoesWithItsEvent() throws {
        let directory = temporaryDirectory("session-crash")
        let report = ReportingFixture.report()
        let crashTime = Date(timeIntervalSince1970: Double(report.timestampNs!) / 1e9)
        _ = try SessionTracker(directory: directory, release: "app@1", environment: nil, installationID: "did",
                               launchID: report.launchId, now: crashTime.addingTimeInterval(-3))
        let next = try SessionTracker(directory: directory, release: "app@1", environment: nil, installationID: "did", now: crashTime.addingTimeInterval(5))
        let reporter = EventReporter(options: ReportingFixture.options(), installationID: "did")
        let older = ReportingFixture.report { $0.id = "older"; $0.launchId = "another"; $0.timestampNs = 1 }
        let envelopes = reporter.crashEnvelopes(reports: [report, older], sessions: next)
        #expect(envelopes.count == 2)
        #expect(envelopes[0].items.map(\.type) == ["event"])
        #expect(envelopes[1].items.map(\.type) == ["event", "session"])
        let session = try JSONDecoder().decode(SessionUpdate.self, from: envelopes[1].items[1].payload)
        #expect(session.status == .crashed && session.errors == 1 && session.isInitial)
        #expect(session.timestamp == SentryTimestamp.rfc3339(nanosecondsSince1970: report.timestampNs!))
        #expect(envelopes[1].header["event_id"]?.stringValue == (try envelopes[1].event()?.eventID))
        #expect(next.previous == nil)
    }

    /// A launch that crashed before its session was first stored: its report carries one update
    /// that starts and ends the session `crashed` (started at crash time minus uptime), the same
    /// sid each time the report is converted; a report of another launch gets none.
    @Test func aLaunchThatCrashedBeforeItsSessionWasStoredGetsOneCrashedUpdate() throws {
        let directory = temporaryDirectory("session-unrecorded")
        let report = ReportingFixture.report { $0.uptimeNs = 2_000_000_000 }
        let crashTime = Date(timeIntervalSince1970: Double(report.timestampNs!) / 1e9)
        let next = try SessionTracker(directory: directory, release: "app@1", environment: "staging", installationID: "did",
                                      now: crashTime.addingTimeInterval(5))
        let reporter = EventReporter(options: ReportingFixture.options(), installationID: "did")
        let envelopes = reporter.crashEnvelopes(reports: [report], sessions: next, previousLaunchID: report.launchId)
        #expect(envelopes.count == 1 && envelopes.first?.items.map(\.type) == ["event", "session"])
        let session = try JSONDecoder().decode(SessionUpdate.self, from: try #require(envelopes.first?.items.last?.payload))
        #expect(session.status == .crashed && session.isInitial && session.errors == 1 && session.duration == 2)
        #expect(session.timestamp == SentryTimestamp.rfc3339(nanosecondsSince1970: report.timestampNs!))
        #expect(session.started == SentryTimestamp.rfc3339(nanosecondsSince1970: report.timestampNs! - 2_000_000_000))
        #expect(session.did == "did" && session.attrs.release == "app@1" && session.attrs.environment == "staging")
        #expect(session.sid != next.current.sid && UUID(uuidString: session.sid) != nil)
        let again = reporter.crashEnvelopes(reports: [report], sessions: next, previousLaunchID: report.launchId)
        let repeated = try JSONDecoder().decode(SessionUpdate.self, from: try #require(again.first?.items.last?.payload))
        #expect(repeated.sid == session.sid)
        let other = reporter.crashEnvelopes(reports: [report], sessions: next, previousLaunchID: "another-launch")
        #expect(other.first?.items.map(\.type) == ["event"])
    }

    @Test func envelopesNeverCarrySentAt() throws {
        let reporter = EventReporter(options: ReportingFixture.options(), installationID: "did")
        let envelopes = reporter.crashEnvelopes(reports: [ReportingFixture.report()], sessions: nil)
        let envelope = try #require(envelopes.first)
        #expect(envelope.header["sent_at"] == nil)
        #expect(envelope.header["dsn"]?.stringValue == ReportingFixture.dsn)
        #expect(envelope.header["sdk"]?["name"] == "crashshield.swift")
    }

    @Test func timestampsAreRFC3339UTC() {
        #expect(SentryTimestamp.rfc3339(nanosecondsSince1970: 0) == "1970-01-01T00:00:00.000000Z")
        #expect(SentryTimestamp.rfc3339(nanosecondsSince1970: 1_795_323_053_102_148_242) == "2026-11-22T04:50:53.102148Z")
        #expect(SentryTimestamp.rfc3339(nanosecondsSince1970: 951_782_400_000_000_000) == "2000-02-29T00:00:00.000000Z")
        #expect(SentryTimestamp.rfc3339(Date(timeIntervalSince1970: 86_399.5)) == "1970-01-01T23:59:59.500000Z")
    }
}

/// The reporting queue runs nothing before `beginWork` (the start calls it as it returns), so
/// reporting's setup never competes with the start.
@Suite struct ReportingQueueTests {
    /// Answers every request with 200 and counts them.
    final class AcceptingHTTPClient: EnvelopeHTTPClient, @unchecked Sendable {
        private let lock = Locked()
        private var posts = 0
        var count: Int { lock.lock(); defer { lock.unlock() }; return posts }
        func post(_ url: URL, headers: [String: String], body: Data, timeout: Duration) throws(TransportError) -> HTTPResponse {
            lock.lock()
            defer { lock.unlock() }
            if cancelled { throw TransportError.cancelled }
            posts += 1
            return HTTPResponse(status: 200, headers: [:])
        }
        private var cancelled = false
        func cancelAll() {
            lock.lock()
            cancelled = true
            lock.unlock()
        }
    }

    @Test func theSetupWaitsForBeginWork() throws {
        let directory = temporaryDirectory("reporting-begin-work")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = try ReportingOptions(dsn: "http://0123456789abcdef0123456789abcdef@127.0.0.1:9/1")
        options.exitFlushTimeout = .milliseconds(200)
        let http = AcceptingHTTPClient()
        let client = ReportingClient(options: options, directory: directory, appName: "queue-test", appVersion: "1.0",
                                     httpClient: http)
        client.launchDecided(nil)
        client.submitIncident(ReportingFixture.incident())
        // Queued, not run: no session, no outbox, nothing sent.
        #expect(!FileManager.default.fileExists(atPath: directory + "/session.json"))
        #expect(!FileManager.default.fileExists(atPath: Outbox.directory(forReportDirectory: directory)))
        #expect(http.count == 0)

        client.beginWork()
        client.beginWork()  // idempotent
        #expect(client.waitUntilIdle(timeout: .seconds(30)))
        #expect(FileManager.default.fileExists(atPath: directory + "/session.json"))
        #expect(FileManager.default.fileExists(atPath: Outbox.directory(forReportDirectory: directory)))
        client.end()
    }

    @Test func endRunsWhatWasQueuedWithoutBeginWork() throws {
        let directory = temporaryDirectory("reporting-end-first")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = try ReportingOptions(dsn: "http://0123456789abcdef0123456789abcdef@127.0.0.1:9/1")
        options.exitFlushTimeout = .seconds(10)
        let client = ReportingClient(options: options, directory: directory, appName: "queue-test", appVersion: "1.0",
                                     httpClient: AcceptingHTTPClient())
        client.launchDecided(nil)
        client.end()  // activates the queue: the setup runs and the session ends `exited`
        let data = try #require(FileManager.default.contents(atPath: directory + "/session.json"))
        #expect(String(decoding: data, as: UTF8.self).contains("exited"))
    }

    @Test func processInstanceIdsAre32LowercaseHexDigits() {
        let first = EventReporter.randomProcessInstance(), second = EventReporter.randomProcessInstance()
        #expect(first.count == 32)
        #expect(first.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(first != second)
    }
}
