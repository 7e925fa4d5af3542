import CrashShieldBase
import Foundation

/// What capture's start knows when it makes a reporting client: the options, the reports of
/// earlier runs found at start, and the previous run's record.
package struct CaptureStartFacts {
    package let options: CaptureOptions
    package let pending: [PendingReport]
    package let previousRun: PreviousRunRecord?
}

/// A reporting client as capture's start drives it (CrashShieldSentry's `ReportingClient`):
/// launch protection's decision reaches it before any repair step, then its queued work starts.
package protocol CaptureStartReporter: AnyObject {
    /// Launch protection decided how the previous run ended (nil: it does not run).
    func launchDecided(_ decision: LaunchDecision?)
    /// Lets the client's queued work run; called as the start returns.
    func beginWork()
}

/// The calls recording makes into the Sentry client without depending on it. CrashShieldSentry
/// registers its bridge when it activates a remote configuration or installs a reporting client;
/// before that, there is nothing to call.
package protocol CaptureReportingBridge: Sendable {
    /// The version of the active remote configuration, written into this run's reports.
    func remoteConfigVersion() -> Int64?
    /// Capture stops: end the reporting client and the background fetches.
    func stop()
    /// Launch protection's repair step ended a launch loop in `directory`.
    func launchLoopEnded(directory: String, step: String, consecutiveLaunchCrashes: Int, stepFailed: Bool, launchID: String)
}

/// Where recording finds the Sentry client's bridge.
package enum CaptureReporting {
    private static let box = Locked<(any CaptureReportingBridge)?>(nil)

    /// The registered bridge; nil until CrashShieldSentry registers one.
    package static var bridge: (any CaptureReportingBridge)? { box.withLock { $0 } }

    /// Registers the Sentry client's bridge (idempotent: the last registration wins).
    package static func register(_ bridge: any CaptureReportingBridge) { box.withLock { $0 = bridge } }
}
