import CrashShieldBase
import CrashShieldRecording
import Foundation

extension RepairStep {
    /// Discards the remote configuration document CrashShield stored in its directory (the app's
    /// own settings apply from the next start, and that document's version is never applied
    /// again), then deletes `paths`: the app's own cached remote-configuration files, if any
    /// (entries inside the SDK's directory are left alone). Id "reset-remote-config".
    public static func resetRemoteConfiguration(_ paths: [String] = []) -> RepairStep {
        .run(id: "reset-remote-config") { context in
            RemoteConfigStore(directory: context.directory).discard()
            for path in paths where !context.touchesSDKState(path) { try? FileManager.default.removeItem(atPath: path) }
        }
    }
}

extension CaptureOptions {
    /// These options with `appVersion` filled in when the app left it nil: the version part of
    /// `reporting.release` (`ReportingOptions.releaseVersion`), else, on Apple platforms, the main
    /// bundle's `CFBundleShortVersionString`. A version the app set is never replaced.
    package func withAppVersion(from reporting: ReportingOptions?) -> CaptureOptions {
        guard appVersion == nil, let version = reporting?.releaseVersion else { return withBundleVersion() }
        var filled = self
        filled.appVersion = version
        return filled
    }
}

extension CrashCapture {
    /// `start(_:launchProtection:)`, reporting to a Sentry-compatible server: crash reports,
    /// sessions and (with the CrashShield module) incidents go to that server from the report
    /// directory `options.directory`. The stored remote configuration is activated first (its
    /// version goes into this run's reports) and a newer one fetched in the background; the
    /// reports of earlier runs are converted and sent off the calling thread — except a crash
    /// during the previous launch, which is sent before launch protection's repair steps run,
    /// waiting at most `reporting.launchCrashFlushTimeout`. A clean exit and `stop()` send the
    /// session's end. With `reporting` nil this is `start(_:launchProtection:)`.
    @discardableResult
    public static func start(_ options: CaptureOptions = CaptureOptions(),
                             launchProtection: LaunchProtectionOptions? = LaunchProtectionOptions(),
                             reporting: ReportingOptions?) throws -> LaunchProtection? {
        let options = options.withAppVersion(from: reporting)
        if let reporting {
            try validate(options)
            ReportingClient.activateRemoteConfiguration(reporting, directory: options.directory, appVersion: options.appVersion)
        }
        return try start(options, launchProtection: launchProtection, reporter: ReportingClient.starter(reporting),
                         afterInstall: {}, afterLaunchProtection: { _ in })
    }
}

/// The Sentry client's side of `CaptureReportingBridge`.
struct SentryCaptureBridge: CaptureReportingBridge {
    func remoteConfigVersion() -> Int64? { RemoteConfiguration.current?.version }

    func stop() {
        ReportingClient.stopCurrent()
        RemoteConfiguration.endBackgroundFetches()
    }

    func launchLoopEnded(directory: String, step: String, consecutiveLaunchCrashes: Int, stepFailed: Bool, launchID: String) {
        guard let client = ReportingClient.current, client.directory == directory else { return }
        client.launchLoopEnded(step: step, consecutiveLaunchCrashes: consecutiveLaunchCrashes, stepFailed: stepFailed,
                               launchID: launchID)
    }
}

extension ReportingClient: CaptureStartReporter {
    /// What capture's start calls to make this process's client (nil without `reporting`): the
    /// client for the start's directory and earlier reports, installed as the process's client.
    package static func starter(_ reporting: ReportingOptions?) -> ((CaptureStartFacts) -> (any CaptureStartReporter)?)? {
        guard let reporting else { return nil }
        CaptureReporting.register(SentryCaptureBridge())
        return { facts in
            let options = facts.options
            let client = ReportingClient(
                options: reporting, directory: options.directory,
                appName: options.appName ?? CommandLine.arguments.first.map { ($0 as NSString).lastPathComponent },
                appVersion: options.appVersion, symbolicate: options.symbolicate,
                removeConvertedReports: options.reportSinks.isEmpty, pendingAtStart: facts.pending, previousRun: facts.previousRun)
            return ReportingClient.install(client) ? client : nil
        }
    }
}
