import CrashShieldBase
import Foundation
package import _CrashShieldCapture
package import _CrashShieldCxxTerminate
package import _CrashShieldIncidents

/// Configuration of fatal crash capture: `CrashShieldOptions.capture` (CrashShield) or the first
/// argument of `CrashCapture.start(_:launchProtection:)` (the capture-only product).
public struct CaptureOptions: Sendable {
    /// Where reports and the launch-protection state live. Created if missing.
    /// Default (`defaultDirectory`): on Apple platforms `<Caches>/crashshield/<bundle identifier>`
    /// (the app's own Caches directory; the executable's name when there is no bundle
    /// identifier); elsewhere `$XDG_CACHE_HOME/crashshield/<executable>` (or `~/.cache/...`).
    public var directory: String
    /// Written into reports. Default: the executable's name.
    public var appName: String?
    /// The app's version ("2.4.1"): written into reports; launch protection uses it to tell an
    /// app update; remote configuration rules match it. Default: nil, which a start fills in from
    /// `ReportingOptions.releaseVersion` when reporting is on, else (Apple) from the main bundle's
    /// `CFBundleShortVersionString` (`withAppVersion(from:)`).
    public var appVersion: String?
    /// Capture SIGPIPE too, unless the app ignores it (SIG_IGN is always honoured). Default: true.
    public var captureSIGPIPE = true
    /// Opt-in recovery: a background thread that hits a fatal signal is recorded and parked
    /// forever; the rest of the process keeps running. The main thread always crashes normally.
    /// Parking a thread that holds a lock can stall others that need it. Default: false.
    public var recoverBackgroundThreads = false
    /// A crash handler still running after this long is ended by SIGALRM (so a stuck handler
    /// never hangs the app; the process then dies of SIGALRM). The handler's timer counts whole
    /// seconds: the duration is rounded up to a whole second, and anything under one second
    /// (zero and negative included) means one second. Default: 5 seconds.
    public var handlerWatchdog: Duration = .seconds(5)
    /// Receive the reports of earlier runs at start. Default: empty (reports stay on disk).
    public var reportSinks: [any CrashReportSink] = []
    /// Symbolicate reports before handing them to sinks and sending them, and the in-app frames of
    /// incident and handled events before sending them (dladdr, then llvm-symbolizer/addr2line on
    /// the image file, on the reporting queue; each frame once per process). Default: true.
    public var symbolicate = true
    /// Deliver earlier reports before `start` returns instead of on a background thread. Default: false.
    public var deliverSynchronously = false
    /// The remote configuration document version written into every report of this run.
    /// Default: nil, which means the version of `RemoteConfiguration.current` (the document
    /// `RemoteConfiguration.activate` made active before this start), or none.
    package var remoteConfigVersion: Int64?
    /// App-hang detection: the thread that calls the start (an app's main thread) not answering
    /// for this long is an app hang, reported with that thread's stack when it ends, or at the
    /// next start when the process did not survive it (a fatal hang). It answers through a timer
    /// on its run loop; a thread that runs another loop calls `CrashCapture.appHangHeartbeat()`
    /// (docs/CAPTURE.md, "App hangs and exits without a report"). At least 10 ms. nil: off.
    /// Default: 2 seconds.
    public var appHangTimeout: Duration? = .seconds(2)

    /// Options for the report directory `directory`, every other option at its default.
    public init(directory: String = CaptureOptions.defaultDirectory) { self.directory = directory }

    /// The default report directory: "CrashShield" in the app's caches directory (Apple), or in the temporary directory.
    public static var defaultDirectory: String {
        let executable = (CommandLine.arguments.first.map { ($0 as NSString).lastPathComponent }) ?? "app"
        #if canImport(Darwin)
        // An app's container has no XDG variables and its HOME is the container itself; reports
        // are discardable data that must survive relaunches, which is what Caches is for.
        return appleDefaultDirectory(
            caches: FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first?.path,
            bundleIdentifier: Bundle.main.bundleIdentifier, executable: executable)
        #else
        let environment = Foundation.ProcessInfo.processInfo.environment
        let base = environment["XDG_CACHE_HOME"] ?? ((environment["HOME"] ?? NSTemporaryDirectory()) + "/.cache")
        return "\(base)/crashshield/\(executable)"
        #endif
    }

    /// `handlerWatchdog` as the handler's timer takes it: whole seconds, rounded up, at least 1
    /// (and at most `UInt32.max`).
    static func watchdogSeconds(_ limit: Duration) -> UInt32 {
        let (seconds, attoseconds) = limit.components
        guard seconds >= 0 else { return 1 }
        let roundedUp = attoseconds > 0 && seconds < .max ? seconds + 1 : seconds
        return UInt32(clamping: max(1, roundedUp))
    }

    /// The Apple default, from its parts: `<caches>/crashshield/<bundle identifier or executable>`;
    /// without a Caches directory, the temporary directory stands in. Platform-neutral so that the
    /// Linux tests check the composition; only Apple platforms call it for the default.
    static func appleDefaultDirectory(caches: String?, bundleIdentifier: String?, executable: String) -> String {
        let base = caches.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
            ?? (NSTemporaryDirectory() as NSString).standardizingPath
        let name = bundleIdentifier.flatMap { $0.isEmpty ? nil : $0 } ?? executable
        return "\(base)/crashshield/\(name)"
    }
}

/// An error thrown when crash capture cannot start (`CrashCapture.start`).
///
/// Check the kind with `code`, which is stable across versions (new codes may be added):
/// `catch let error as CrashCaptureError where error.code == .directoryUnavailable`, or match a
/// value without details directly: `catch CrashCaptureError.alreadyStarted`. `message` is for
/// people and may change; `path` names the directory for `directoryUnavailable`.
public struct CrashCaptureError: CodedError {
    /// The kind of error; `rawValue` is a stable string (the Swift name, e.g. "alreadyStarted").
    public struct Code: StableErrorCode {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Capture is installed already (by an earlier start, or through the C API); the first
        /// configuration stays in effect.
        public static let alreadyStarted = Code(rawValue: "alreadyStarted")
        /// The report directory does not exist and could not be created, or cannot be opened.
        public static let directoryUnavailable = Code(rawValue: "directoryUnavailable")
        /// The signal handlers could not be installed.
        public static let installFailed = Code(rawValue: "installFailed")
        /// Capture has no crash handler for this platform (it has one for Linux and Apple platforms).
        public static let unsupportedPlatform = Code(rawValue: "unsupportedPlatform")
    }

    public let code: Code
    /// What went wrong, for people; the wording may change between versions.
    public let message: String
    /// The report directory (`directoryUnavailable`); nil for the other codes.
    public let path: String?

    package init(code: Code, message: String, path: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
    }

    /// Capture is installed already; the first configuration stays in effect.
    public static let alreadyStarted = CrashCaptureError(
        code: .alreadyStarted, message: "crash capture is installed already; the first configuration stays in effect")
    /// The signal handlers could not be installed.
    public static let installFailed = CrashCaptureError(
        code: .installFailed, message: "the crash signal handlers could not be installed")
    /// Capture has no crash handler for this platform.
    public static let unsupportedPlatform = CrashCaptureError(
        code: .unsupportedPlatform, message: "crash capture has no handler for this platform")
    /// The report directory `path` does not exist and could not be created, or cannot be opened.
    public static func directoryUnavailable(_ path: String) -> CrashCaptureError {
        CrashCaptureError(
            code: .directoryUnavailable, message: "the report directory \(path) could not be created or opened",
            path: path)
    }
}

/// Fatal crash capture: signals (SEGV, BUS, ILL, FPE, ABRT, TRAP, SYS, and PIPE unless ignored)
/// and, with the CrashShield module, uncaught Objective-C exceptions. A report is written from the
/// dying process by an async-signal-safe handler (C), then the signal goes on to the handler
/// installed before (the Swift runtime's backtracer among them) or the default action, so the
/// process still dies with its original signal. Reports are read at the next start.
public enum CrashCapture {
    private static let lock = Locked()
    // these five are read and written only under `lock`
    nonisolated(unsafe) private static var startedDirectory: String?
    nonisolated(unsafe) private static var earlierReports: [PendingReport] = []
    nonisolated(unsafe) private static var protection: LaunchProtection?
    nonisolated(unsafe) private static var recordedLastRun: LastRun?
    nonisolated(unsafe) private static var droppedAtStart = 0

    /// Installs capture, then (unless `launchProtection` is nil) runs launch protection — including
    /// the repair flow when the app is in a crash loop, before this returns — and hands the reports
    /// of earlier runs to `options.reportSinks`. The one start of the capture-only product; apps
    /// that use the CrashShield module call `CrashShieldSDK.start(_:)` instead, which does this too.
    ///
    /// With `launchProtection` nil the SDK still records in its directory how each run ended (the
    /// "launch-state" file), so `lastRun` works; no launch crash starts a repair.
    ///
    /// A rejected call changes nothing: the capture options, report directory, launch protection
    /// and report sinks of the first start stay in effect, and the rejected call's sinks receive
    /// nothing.
    /// - Returns: the launch protection of this run, or nil when it is off.
    /// - Throws: `CrashCaptureError.alreadyStarted` when capture is installed already (by an
    ///   earlier call, or through the C API); `.directoryUnavailable` when the directory cannot
    ///   be created; `.installFailed` / `.unsupportedPlatform` when the handlers cannot be installed.
    ///
    /// `CrashShieldSentry` adds `start(_:launchProtection:reporting:)`, which also reports to a
    /// Sentry-compatible server.
    @discardableResult
    public static func start(_ options: CaptureOptions = CaptureOptions(),
                             launchProtection: LaunchProtectionOptions? = LaunchProtectionOptions()) throws -> LaunchProtection? {
        try start(options.withBundleVersion(), launchProtection: launchProtection, afterInstall: {},
                  afterLaunchProtection: { _ in })
    }

    /// Throws what `start` would throw before it installs anything: `alreadyStarted`, or
    /// `directoryUnavailable` when the directory is missing and cannot be created (creating it is
    /// the only effect). Lets the CrashShield module validate every part before it acts.
    package static func validate(_ options: CaptureOptions) throws {
        lock.lock()
        defer { lock.unlock() }
        guard startedDirectory == nil, !csc_is_installed() else { throw CrashCaptureError.alreadyStarted }
        try createDirectoryIfMissing(options.directory)
    }

    private static func createDirectoryIfMissing(_ directory: String) throws {
        if isDirectory(directory) { return }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw CrashCaptureError.directoryUnavailable(directory)
        }
    }

    /// `start` with two hooks for the CrashShield module: `afterInstall` runs once the handlers are
    /// installed, before launch protection (uncaught-exception capture, the guard fail-safe);
    /// `afterLaunchProtection` runs after launch protection (and its repair flow), before the
    /// reports are delivered (safe mode's guards).
    /// With `reporter`, a reporting client is made once the handlers are installed, and launch
    /// protection hands it its decision before any repair step.
    package static func start(_ options: CaptureOptions, launchProtection launchOptions: LaunchProtectionOptions?,
                              reporter makeReporter: ((CaptureStartFacts) -> (any CaptureStartReporter)?)? = nil,
                              afterInstall: () -> Void,
                              afterLaunchProtection: (LaunchProtection?) -> Void) throws -> LaunchProtection? {
        let store = CrashReportStore(directory: options.directory)
        let launchID = makeLaunchID()
        let reports: [PendingReport]
        let dropped: Int
        do {
            // Install under the lock; run launch protection (which may run repair steps that call
            // back into this type) and delivery outside it.
            lock.lock()
            defer { lock.unlock() }
            guard startedDirectory == nil, !csc_is_installed() else { throw CrashCaptureError.alreadyStarted }
            try createDirectoryIfMissing(options.directory)
            (reports, dropped) = store.scanIfAny()
            let result: csc_install_result = options.directory.withCString { directory in
                launchID.withCString { launch in
                    withOptionalCString(options.appName) { appName in
                        withOptionalCString(options.appVersion) { appVersion in
                            var config = csc_config()
                            config.directory = directory
                            config.app_name = appName
                            config.app_version = appVersion
                            config.launch_id = launch
                            config.capture_sigpipe = options.captureSIGPIPE
                            config.recover_background_threads = options.recoverBackgroundThreads
                            config.watchdog_seconds = CaptureOptions.watchdogSeconds(options.handlerWatchdog)
                            if let version = options.remoteConfigVersion ?? CaptureReporting.bridge?.remoteConfigVersion(),
                               version >= 0 {
                                config.has_remote_config_version = true
                                config.remote_config_version = version
                            }
                            return csc_install(&config)
                        }
                    }
                }
            }
            switch result {
            case CSC_INSTALL_OK:
                // An uncaught C++ exception's type and what() into the report of its abort.
                _ = csc_cxx_install_terminate_handler()
            case CSC_INSTALL_NO_DIRECTORY: throw CrashCaptureError.directoryUnavailable(options.directory)
            case CSC_INSTALL_UNSUPPORTED: throw CrashCaptureError.unsupportedPlatform
            default: throw CrashCaptureError.installFailed
            }
            startedDirectory = options.directory
            earlierReports = reports
            droppedAtStart = dropped
        }
        // The previous run's record, read before this run's replaces it.
        let previousRun = PreviousRunRecord.read(directory: options.directory)
        RunWatch.start(directory: options.directory, launchID: launchID, appVersion: options.appVersion,
                       appHangTimeout: options.appHangTimeout)
        let reportingClient = makeReporter?(CaptureStartFacts(options: options, pending: reports, previousRun: previousRun))
        afterInstall()

        // Launch protection, or (off) only the record of how this run ends, for `lastRun`.
        // Reporting gets its decision before any repair step (a launch crash is sent there).
        let launch = LaunchProtection.begin(
            directory: options.directory, options: launchOptions ?? .recordOnly, launchID: launchID,
            appVersion: options.appVersion, captureEnabled: true, pending: reports,
            beforeRepair: reportingClient.map { client in { client.launchDecided($0) } })
        reportingClient?.launchDecided(nil)  // no-op when launch protection decided already
        if launchOptions == nil { launch.launchCompleted() }
        let started = launchOptions == nil ? nil : launch
        lock.lock()
        protection = started
        recordedLastRun = launch.lastRun
        lock.unlock()
        afterLaunchProtection(started)

        if !options.reportSinks.isEmpty {
            let sinks = options.reportSinks
            let symbolicate = options.symbolicate
            if options.deliverSynchronously {
                store.deliver(to: sinks, symbolicate: symbolicate)
            } else {
                let thread = Thread {
                    csc_thread_prepare()
                    store.deliver(to: sinks, symbolicate: symbolicate)
                }
                thread.name = "CrashShield.reports"
                thread.start()
            }
        }
        // Reporting's queued setup and conversion run from here on, off the start's CPU time.
        reportingClient?.beginWork()
        return started
    }

    /// Uninstalls the signal handlers and puts back the ones installed before `start` (the
    /// process's previous handlers, or the default action), so a crash from now on is not
    /// captured. Launch protection's record of this launch stays (a clean exit is still marked at
    /// exit). `lastRun` and `reportsFoundAtStart` are forgotten. A report delivery already under
    /// way finishes. After `stop`, `start` may be called again. No-op when not started.
    ///
    /// An uncaught Objective-C exception handler installed by the CrashShield module stays in
    /// place (the runtime has one slot and no way to tell whether another was set since), but it
    /// writes nothing while capture is stopped.
    ///
    /// Reporting started with it ends: the session's `exited` update and what is pending are
    /// sent, waiting at most `ReportingOptions.exitFlushTimeout`. A background fetch of
    /// `RemoteConfiguration.activate` that is still running is cancelled and waited for, at most
    /// 500 ms (it stores nothing).
    public static func stop() {
        CaptureReporting.bridge?.stop()
        lock.lock()
        defer { lock.unlock() }
        guard startedDirectory != nil || csc_is_installed() else { return }
        RunWatch.stop()
        csc_uninstall()
        startedDirectory = nil
        earlierReports = []
        droppedAtStart = 0
        protection = nil
        recordedLastRun = nil
    }

    /// How the previous run ended, as found at `start` (nil before `start` and after `stop`).
    /// Works with launch protection off too (the SDK records each run's end in its directory).
    public static var lastRun: LastRun? {
        lock.lock()
        defer { lock.unlock() }
        return recordedLastRun
    }

    /// True when `lastRun` says the previous run crashed (false before `start`).
    package static var crashedLastRun: Bool { lastRun?.outcome == .crashed }

    /// True between a successful `start` and `stop`.
    public static var isEnabled: Bool { csc_is_installed() }

    /// True while the crash handlers are installed (by `start` or the C API).
    public static var isInstalled: Bool { csc_is_installed() }

    /// The report directory given to `start`.
    public static var directory: String? {
        lock.lock()
        defer { lock.unlock() }
        return startedDirectory
    }

    /// Reports of earlier runs found at `start` (decoded, not symbolicated), also those that
    /// sinks have since accepted and deleted. Decoded on the first read, from the bytes read at
    /// start (the start itself only scans them in C).
    public static var reportsFoundAtStart: [CrashEvent] {
        lock.lock()
        let pending = earlierReports
        lock.unlock()
        return pending.compactMap(\.report).map(CrashEvent.init)
    }

    /// What a report found at start says about guard code among its crashed thread's frames, for
    /// the guard fail-safe (a crash in a guard's code turns it off) in the CrashShield module.
    package struct GuardFramesOfReport {
        /// The guard names the crash handler found in the crashed thread's frames
        /// (crashed_thread.guard_frames), read by the start's C scan; [] for a report without
        /// crashed-thread frames. nil when the scan cannot tell: a report without the key (written
        /// by an older version, or without the guards' code registered) or with a value the scan
        /// leaves to the decoder. Then the caller needs `report`.
        package let scanned: [String]?
        let source: PendingReport
        /// The full decode (the first JSONDecoder use in a process costs ~2 ms).
        package var report: CrashReport? { source.report }
    }

    /// How many reports of earlier runs `start` deleted unread to keep the directory bounded: the
    /// oldest beyond the newest 30, and those older than 30 days except the newest (an app whose
    /// reports are never delivered would otherwise make every start read all of them). 0 before
    /// `start` and after `stop`. The directory's running total is in its "dropped-reports" file.
    package static var reportsDroppedAtStart: Int {
        lock.lock()
        defer { lock.unlock() }
        return droppedAtStart
    }

    /// `GuardFramesOfReport` of every report found at start, oldest first.
    package static var guardFramesFoundAtStart: [GuardFramesOfReport] {
        lock.lock()
        let pending = earlierReports
        lock.unlock()
        return pending.map { GuardFramesOfReport(scanned: $0.scannedGuardFrames, source: $0) }
    }

    /// Launch protection of this run (nil when off or before `start`).
    public static var launchProtection: LaunchProtection? {
        lock.lock()
        defer { lock.unlock() }
        return protection
    }

    /// Gives the calling thread its own alternate signal stack so a stack overflow on it is
    /// captured. `start` does this for the thread that calls it; other threads opt in (a
    /// thread without an alternate stack that overflows dies without a report).
    @discardableResult
    package static func prepareCurrentThread() -> Bool { csc_thread_prepare() }

    /// Re-reads the list of loaded images (call after loading a plug-in with dlopen).
    package static func refreshImages() { csc_refresh_images() }

    /// Guard states copied into every report (the CrashShield module keeps this current).
    package static func setGuardStates(_ states: [CrashReport.GuardState]) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(states), let text = String(data: data, encoding: .utf8) else { return }
        csc_set_guard_states_json(text)
    }

    /// True once this process wrote a crash report (an uncaught exception on GNUstep, then exit).
    package static var reportWrittenThisRun: Bool { csc_report_written() }

    /// Loads the pending reports of `directory` (symbolicated unless told otherwise) without
    /// deleting them. Unreadable files are returned as failures.
    package static func pendingReports(in directory: String, symbolicate: Bool = true) -> [CrashReportStore.Loaded] {
        CrashReportStore(directory: directory).load(symbolicate: symbolicate)
    }
}

extension CrashCapture {
    /// How many of the reports found at start were fully decoded so far, of how many.
    package static var _reportsFoundAtStartDecodedForTesting: (decoded: Int, count: Int) {
        lock.lock()
        let pending = earlierReports
        lock.unlock()
        return (pending.filter(\.isDecoded).count, pending.count)
    }
}

/// stat(2) instead of FileManager on the start path (a start may add only about 1 ms).
func isDirectory(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
}

func withOptionalCString<R>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}

extension CaptureOptions {
    /// These options with `appVersion` filled in when the app left it nil: on Apple platforms, the
    /// main bundle's `CFBundleShortVersionString`. A version the app set is never replaced.
    package func withBundleVersion() -> CaptureOptions {
        guard appVersion == nil else { return self }
        var filled = self
        filled.appVersion = Self.bundleVersion
        return filled
    }

    /// The main bundle's `CFBundleShortVersionString` (Apple platforms; nil elsewhere).
    static var bundleVersion: String? {
        #if canImport(Darwin)
        return Bundle.main.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String
        #else
        return nil
        #endif
    }
}
