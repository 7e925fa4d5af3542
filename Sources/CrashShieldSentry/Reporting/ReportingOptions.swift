import CrashShieldBase
import CrashShieldRecording
import CrashShieldProtocol
import Foundation

/// Where and how crash reports, incidents and sessions are reported to a Sentry-compatible
/// server (Sentry, self-hosted Sentry, GlitchTip, the CrashShield collector).
///
/// Every value is checked when it is set through `init` or a `set...` method: a malformed DSN, a
/// release Sentry would refuse or a sample rate outside 0...1 throws `ReportingConfigurationError`.
public struct ReportingOptions: Sendable {
    /// The project's client key.
    public let dsn: DSN
    /// The app's release, e.g. "com.example.app@2.4.1+311". Default: `"<process name>@<app version>"`
    /// when the app version is known, `"<process name>@unknown"` otherwise (the conversion fills
    /// it in from the report). Sessions need a release, so one is always sent.
    public private(set) var release: String?
    /// The build number, e.g. "311". Default: none.
    public var dist: String?
    /// Default: "production".
    public private(set) var environment: String
    /// The share of incident events that are sent, 0...1. Crashes and sessions are never
    /// sampled. An incident left out is counted in the next client report (reason `sample_rate`).
    ///
    /// Set by the app (`init`'s `incidentSampleRate`, `setIncidentSampleRate`), it stays as set.
    /// Left unset, it is 1 (all), and `CrashShieldSDK.start` replaces it with the
    /// `incident_sample_rate` of the active remote configuration rule when that rule has one.
    public private(set) var incidentSampleRate: Double = 1
    /// True when the app set `incidentSampleRate` in code (a remote configuration rule then
    /// leaves it alone); false while it has its default. Default: false.
    package private(set) var incidentSampleRateIsSetByApp = false
    /// Called with every event before it is stored for sending: return the event (edited, e.g.
    /// with personal data removed) or nil to drop it (counted in the next client report, reason
    /// `before_send`). Runs at the next start for a crash and on the incident delivery thread for
    /// an incident; never in the crash handler. Default: none (events go as converted).
    public var beforeSend: (@Sendable (SentryEvent) -> SentryEvent?)?
    /// Path prefixes of images that are the app's own code (`in_app: true`) in addition to the
    /// executable and the images in its directory. Default: none.
    public var inAppInclude: [String] = []
    /// Path prefixes of images that are never the app's code, in addition to the system library
    /// directories and the Swift runtime. Wins over `inAppInclude`. Default: none.
    public var inAppExclude: [String] = []

    /// When the previous run crashed during launch, the start sends that crash before launch
    /// protection's repair steps and the app go on, waiting at most this long (the envelope stays
    /// in the outbox when the time is up, and goes out in the background). Converting the report
    /// comes before this wait and is not part of it (symbolication runs external tools when they
    /// are installed: a few hundred milliseconds). Default: 2 seconds.
    public var launchCrashFlushTimeout: Duration = .seconds(2)
    /// How long a clean exit (`exit`, `CrashShieldSDK.stop()`, `CrashCapture.stop()`) waits to send
    /// the session's `exited` update and what else is pending; what is left goes at the next
    /// start. Then reporting stops all its background work: the request in flight is cancelled,
    /// nothing more is sent, the remote-configuration fetch is cancelled, and the exit waits at
    /// most 0.5 s more for that work to stop, so none of it runs while the process ends. Nothing
    /// waiting in the outbox is lost by this. Default: 1 second.
    public var exitFlushTimeout: Duration = .seconds(1)
    /// The Ed25519 public key remote configuration documents must be signed with; nil: their
    /// signatures are not checked. The start activates the stored document with it. Default: nil.
    public var remoteConfigPublicKey: RemoteConfigPublicKey?

    /// The SDK's name and version as the server sees them (`sdk`, `User-Agent`, `X-Sentry-Auth`).
    package static let sdk = SentryEvent.SDKInfo(name: "crashshield.swift", version: "0.1.0")

    /// - Parameters:
    ///   - dsn: the project's DSN, `https://<public key>@<host>/<project id>`.
    ///   - release: the app's release; nil for the default described at `release`.
    ///   - dist: the build number; default none.
    ///   - environment: default "production".
    ///   - incidentSampleRate: 0...1, set by the app; nil (the default) leaves it unset: 1, or the
    ///     active remote configuration rule's rate (see `incidentSampleRate`).
    /// - Throws: `ReportingConfigurationError` with code `reporting.dsn` (and the DSN's own reason),
    ///   `reporting.release`, `reporting.environment` or `reporting.sample_rate`.
    public init(dsn: String, release: String? = nil, dist: String? = nil, environment: String = "production",
                incidentSampleRate: Double? = nil) throws(ReportingConfigurationError) {
        let parsed: DSN
        do { parsed = try DSN(dsn) } catch {
            throw ReportingConfigurationError(code: "reporting.dsn", message: "\(error.code): \(error.message)")
        }
        try self.init(dsn: parsed, release: release, dist: dist, environment: environment, incidentSampleRate: incidentSampleRate)
    }

    /// The same with a DSN already parsed.
    public init(dsn: DSN, release: String? = nil, dist: String? = nil, environment: String = "production",
                incidentSampleRate: Double? = nil) throws(ReportingConfigurationError) {
        self.dsn = dsn
        self.dist = dist
        self.environment = "production"
        try setRelease(release)
        try setEnvironment(environment)
        try setIncidentSampleRate(incidentSampleRate)
    }

    /// Sets `release`. Sentry refuses a release that is empty, longer than 200 characters,
    /// contains a newline, tab or "/", or is "." or "..".
    /// - Throws: `ReportingConfigurationError` with code `reporting.release`; `release` is unchanged.
    public mutating func setRelease(_ value: String?) throws(ReportingConfigurationError) {
        if let value {
            guard !value.isEmpty, value.count <= 200, value != ".", value != "..",
                  !value.contains(where: { $0 == "\n" || $0 == "\r" || $0 == "\t" || $0 == "/" }) else {
                throw ReportingConfigurationError(code: "reporting.release",
                    message: "a release is 1...200 characters without newline, tab or '/', and not '.' or '..'")
            }
        }
        release = value
    }

    /// Sets `environment`: 1...64 characters without newline, tab or "/".
    /// - Throws: `ReportingConfigurationError` with code `reporting.environment`; unchanged then.
    public mutating func setEnvironment(_ value: String) throws(ReportingConfigurationError) {
        guard !value.isEmpty, value.count <= 64, !value.contains(where: { $0 == "\n" || $0 == "\r" || $0 == "\t" || $0 == "/" }) else {
            throw ReportingConfigurationError(code: "reporting.environment",
                message: "an environment is 1...64 characters without newline, tab or '/'")
        }
        environment = value
    }

    /// Sets `incidentSampleRate` as the app's own setting (a remote configuration rule no longer
    /// changes it); nil makes it unset again (1, or the remote rule's rate at start).
    /// - Throws: `ReportingConfigurationError` with code `reporting.sample_rate` for a value
    ///   outside 0...1 or NaN; unchanged then.
    public mutating func setIncidentSampleRate(_ value: Double?) throws(ReportingConfigurationError) {
        guard let value else {
            incidentSampleRate = 1
            incidentSampleRateIsSetByApp = false
            return
        }
        guard value.isFinite, (0...1).contains(value) else {
            throw ReportingConfigurationError(code: "reporting.sample_rate", message: "the incident sample rate must be within 0...1, not \(value)")
        }
        incidentSampleRate = value
        incidentSampleRateIsSetByApp = true
    }

    /// Takes `remoteRate` (a remote configuration rule's `incident_sample_rate`) as
    /// `incidentSampleRate` when the app did not set one; no-op when the app did, or for nil or
    /// a value outside 0...1 (the document parser refuses those already).
    package mutating func applyRemoteIncidentSampleRate(_ remoteRate: Double?) {
        guard !incidentSampleRateIsSetByApp, let remoteRate, remoteRate.isFinite, (0...1).contains(remoteRate) else { return }
        incidentSampleRate = remoteRate
    }

    /// The app's version as `release` carries it: the text after the last "@" up to the first
    /// "+" ("2.4.1" for "com.example.app@2.4.1+311"); nil without a release, without "@", or when
    /// that text is empty. A start with reporting takes `CaptureOptions.appVersion` from it when
    /// the app left that unset, so the app declares its version once.
    package var releaseVersion: String? {
        guard let release, let at = release.lastIndex(of: "@") else { return nil }
        let version = release[release.index(after: at)...].prefix { $0 != "+" }
        return version.isEmpty ? nil : String(version)
    }

    /// `release`, or the default for a process named `processName` at `appVersion`.
    package func effectiveRelease(processName: String?, appVersion: String?) -> String {
        release ?? Self.defaultRelease(processName: processName, appVersion: appVersion)
    }

    /// `"<process name>@<app version>"`: "app" without a name, "unknown" without a version, "/"
    /// replaced by "_", at most 200 characters (a release Sentry accepts).
    static func defaultRelease(processName: String?, appVersion: String?) -> String {
        let name = processName?.isEmpty == false ? processName! : "app"
        let version = appVersion?.isEmpty == false ? appVersion! : "unknown"
        return String("\(name)@\(version)".replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "\n", with: " ").prefix(200))
    }
}

/// A reporting setting that was refused. `code` is stable across versions.
public struct ReportingConfigurationError: CodedError {
    /// `reporting.dsn`, `reporting.release`, `reporting.environment`, `reporting.sample_rate`,
    /// `reporting.installation_id`.
    public let code: String
    /// What was refused and why, for people; the wording may change.
    public let message: String
}

/// The installation's id: a random UUID created once and kept in the report directory
/// (`installation-id`). It identifies an installation for "crash-free users", never a person or a
/// device: no hardware id is read, and deleting the directory makes a new one.
package enum InstallationID {
    static let fileName = "installation-id"

    /// The id stored in `directory`, created (and stored) when there is none or the stored one is
    /// not a UUID. Two processes that create it at once agree on one id (the first stored wins).
    /// - Throws: `ReportingConfigurationError` (`reporting.installation_id`) when the directory is
    ///   not writable and holds no id.
    package static func load(directory: String) throws(ReportingConfigurationError) -> String {
        let path = (directory as NSString).appendingPathComponent(fileName)
        if let existing = read(path) { return existing }
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let id = UUID().uuidString.lowercased()
        let temporary = path + ".\(getpid()).\(SentryID.random().prefix(8)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw ReportingConfigurationError(code: "reporting.installation_id", message: "cannot create \(temporary) (errno \(errno))")
        }
        defer { unlink(temporary) }
        let bytes = Array((id + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced else {
            throw ReportingConfigurationError(code: "reporting.installation_id", message: "cannot write \(temporary) (errno \(errno))")
        }
        // link(2) fails when the name exists: a concurrent creator's id stays and is used.
        if link(temporary, path) != 0 {
            if let existing = read(path) { return existing }
            // A file that is not an id (damaged): replace it.
            guard rename(temporary, path) == 0 else {
                throw ReportingConfigurationError(code: "reporting.installation_id", message: "cannot store \(path) (errno \(errno))")
            }
        }
        return id
    }

    private static func read(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let uuid = UUID(uuidString: text) else { return nil }
        return uuid.uuidString.lowercased()
    }
}
