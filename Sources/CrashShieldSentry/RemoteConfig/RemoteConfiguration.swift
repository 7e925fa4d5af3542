import CrashShieldBase
import CrashShieldRecording
import CrashShieldProtocol
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where and how the SDK gets its remote configuration document.
package struct RemoteConfigOptions: Sendable {
    /// The project's DSN: the document is fetched from `dsn.sdkConfigURL`.
    package var dsn: DSN
    /// Where the document is stored: the report directory. Default: `CaptureOptions.defaultDirectory`.
    package var directory: String
    /// When set, only documents signed with the matching Ed25519 private key are used; unsigned
    /// or wrongly signed ones are refused (also a stored one, at start). Default: nil (signatures
    /// are not checked).
    package var publicKey: RemoteConfigPublicKey?
    /// The app's version ("2.4.1"): matched against rules' `app_version` and sent as
    /// `app_version`. Default: nil.
    package var appVersion: String?
    /// The app's release ("com.example.app@2.4.1+311"), sent as `release` for the server's
    /// records; rules never match it. Default: nil (not sent).
    package var release: String?
    /// The operating system's name matched against rules' `os` and sent as `os`.
    /// Default: `RemoteConfigOptions.currentOS` ("iOS", "macOS", "Linux", ...).
    package var os: String = RemoteConfigOptions.currentOS
    /// The operating system's version ("17.2.1"). Default: this system's.
    package var osVersion: String = RemoteConfigOptions.currentOSVersion
    /// The CPU architecture ("arm64", "x86_64"). Default: this build's.
    package var arch: String = RemoteConfigOptions.currentArch
    /// Time to the next fetch when the server sends no `Cache-Control: max-age`. Default: 1 hour.
    package var defaultFetchInterval: Duration = .seconds(3600)
    /// A fetch that takes longer fails (the stored document stays). Default: 30 s.
    package var requestTimeout: Duration = .seconds(30)

    /// Fetches from `dsn` and stores in `directory` (default: `CaptureOptions.defaultDirectory`);
    /// every other setting has the default stated at it.
    package init(dsn: DSN, directory: String = CaptureOptions.defaultDirectory) {
        self.dsn = dsn
        self.directory = directory
    }

    /// The app a document's rules are resolved for.
    package var target: RemoteConfigTarget {
        RemoteConfigTarget(appVersion: appVersion, os: os, osVersion: osVersion, arch: arch)
    }

    /// This build's operating system as rules name it: "iOS", "macOS", "visionOS", "Linux", else "unknown".
    package static var currentOS: String {
        #if os(iOS)
        return "iOS"
        #elseif os(macOS)
        return "macOS"
        #elseif os(visionOS)
        return "visionOS"
        #elseif os(Linux)
        return "Linux"
        #else
        return "unknown"
        #endif
    }

    /// This system's version, "<major>.<minor>.<patch>".
    package static var currentOSVersion: String {
        let version = ProcessInfo.processInfo.operatingSystemVersion
        return "\(version.majorVersion).\(version.minorVersion).\(version.patchVersion)"
    }

    /// This build's CPU architecture: "arm64", "x86_64", "arm", "x86", else "unknown".
    package static var currentArch: String {
        #if arch(arm64)
        return "arm64"
        #elseif arch(x86_64)
        return "x86_64"
        #elseif arch(arm)
        return "arm"
        #elseif arch(i386)
        return "x86"
        #else
        return "unknown"
        #endif
    }
}

/// The remote configuration in effect for this run: the stored document read at start (never
/// one fetched during the run, which takes effect at the next start) and the rule it resolves to.
public final class RemoteConfigActivation: Sendable {
    /// The active document's version; nil when no document is active.
    public let version: Int64?
    /// The first rule of the active document that matches this app, or nil (the app's own
    /// settings stay). Apply it with the CrashShield module's `CrashShieldOptions.applyingRemoteOverrides`.
    package let overrides: RemoteConfigRule?
    /// What the parser ignored in the active document.
    public let warnings: [RemoteConfigWarning]
    /// Why a stored document was not used (bad signature for the configured key, invalid); nil
    /// when one is active or none is stored.
    package let rejection: RemoteConfigError?
    private let fetchDone = DispatchSemaphore(value: 0)
    private let fetchResult = Locked<RemoteConfigFetchOutcome?>(nil)

    init(version: Int64?, overrides: RemoteConfigRule?, warnings: [RemoteConfigWarning], rejection: RemoteConfigError?) {
        self.version = version
        self.overrides = overrides
        self.warnings = warnings
        self.rejection = rejection
    }

    func finishFetch(_ outcome: RemoteConfigFetchOutcome) {
        fetchResult.withLock { $0 = outcome }
        fetchDone.signal()
    }

    /// Waits for the background fetch `RemoteConfiguration.activate` started.
    /// - Returns: its outcome; nil when it did not finish within `timeout` or none was started.
    package func waitForBackgroundFetch(timeout: Duration) -> RemoteConfigFetchOutcome? {
        if let outcome = fetchResult.withLock({ $0 }) { return outcome }
        // A negative timeout gives a deadline already passed, as any timeout <= 0 does.
        guard fetchDone.wait(timeout: .now() + .nanoseconds(Int(clamping: max(0, timeout.nanoseconds)))) == .success else { return nil }
        fetchDone.signal()
        return fetchResult.withLock { $0 }
    }
}

/// What one fetch did.
package enum RemoteConfigFetchOutcome: Sendable, Equatable {
    /// A new document was verified, parsed and stored; it applies from the next start.
    case stored(version: Int64)
    /// The server answered 304: the stored document stays.
    case notModified
    /// The server's document was refused (invalid, lower version, bad or missing signature); the
    /// stored document stays and the store's state records the error.
    case rejected(RemoteConfigError)
    /// The request failed (network error or timeout: `RemoteConfigFetcher.networkErrorCode`; an
    /// HTTP status other than 200 and 304: `RemoteConfigFetcher.httpStatusCode`); nothing changed.
    case failed(RemoteConfigError)
    /// The previous answer's max-age has not passed yet: no request was made.
    case notDue(until: Date)
}

/// Remote switches: a signed, versioned document of rules fetched from the project's server,
/// stored in the report directory and applied at the next start.
///
/// ```swift
/// var remote = RemoteConfigOptions(dsn: try DSN("https://key@sentry.example.com/42"))
/// remote.publicKey = try RemoteConfigPublicKey(base64: "…")
/// remote.appVersion = "2.4.1"
/// let activation = RemoteConfiguration.activate(remote)   // before CrashShieldSDK.start
/// ```
public enum RemoteConfiguration {
    private static let currentBox = Locked<RemoteConfigActivation?>(nil)

    /// The activation of this process: the first `activate` call's; nil before.
    public static var current: RemoteConfigActivation? { currentBox.withLock { $0 } }

    /// Reads the stored document, verifies it with the configured key, resolves the rule for
    /// this app and makes it `current` (the first call of a process only: the configuration is
    /// fixed for the run), then fetches a newer document in the background when one is due
    /// (never blocking the caller). A document fetched now applies at the next start.
    ///
    /// The background fetch does not run into the process's exit: when the process exits
    /// (`exit`, or `main` returns) or `CrashShieldSDK.stop()` is called, a fetch still running is
    /// cancelled (no request is started any more, the one in flight is cancelled) and waited for,
    /// at most 500 ms. A cancelled fetch stores nothing; a document is only ever replaced whole
    /// (written to a temporary file and renamed), so an exit at any point leaves the previous
    /// document or the new one, and the next start fetches again when it is due.
    @discardableResult
    package static func activate(_ options: RemoteConfigOptions) -> RemoteConfigActivation {
        let activation = activateWithoutFetch(options)
        // Before the fetch's URLSession (see `OpenSSLExit`), then the exit handler, so that
        // OpenSSL's cleanup is never registered after it (and so never runs before it).
        OpenSSLExit.keepThroughExit()
        _ = standaloneExitHandlerRegistration
        let cancellation = fetchInBackground(options, reportingTo: activation)
        standaloneFetches.withLock { $0.append((cancellation, activation)) }
        return activation
    }

    /// The longest `endBackgroundFetches` waits, for all fetches together: 500 ms.
    package static let fetchEndGrace: Duration = .milliseconds(500)

    /// The fetches `activate` started (reporting's own fetch is ended by reporting's end).
    private static let standaloneFetches = Locked<[(cancellation: URLTaskCancellation, activation: RemoteConfigActivation)]>([])

    /// The process that loaded this module: a forked child neither cancels nor waits for the
    /// parent's fetches (it has none of their threads).
    private static let ownerProcess = getpid()

    private static let standaloneExitHandlerRegistration: Void = {
        _ = ownerProcess  // set now, in the process that starts the fetches
        atexit { RemoteConfiguration.endBackgroundFetches() }
    }()

    /// Cancels every fetch `activate` started that is still running and waits for them, at most
    /// `fetchEndGrace` (500 ms) in all. Runs at process exit and from `CrashShieldSDK.stop()`;
    /// cheap when nothing runs. After it returned (unless the grace ran out, which only a fetch
    /// busy writing its document can cause), no thread of the fetch touches URLSession or the
    /// report directory. In a forked child it does nothing.
    package static func endBackgroundFetches() {
        guard getpid() == ownerProcess else { return }
        var fetches: [(cancellation: URLTaskCancellation, activation: RemoteConfigActivation)] = []
        standaloneFetches.withLock { fetches = $0; $0 = [] }
        guard !fetches.isEmpty else { return }
        let graceEnds = ContinuousClock.now + fetchEndGrace
        for fetch in fetches { fetch.cancellation.cancel() }
        for fetch in fetches {
            let left = graceEnds - ContinuousClock.now
            guard left > .zero else { break }
            _ = fetch.activation.waitForBackgroundFetch(timeout: left)
        }
    }

    /// The synchronous half of `activate` (the start's part: no task, no network).
    package static func activateWithoutFetch(_ options: RemoteConfigOptions) -> RemoteConfigActivation {
        let activation = load(options)
        currentBox.withLock { $0 = $0 ?? activation }
        CaptureReporting.register(SentryCaptureBridge())  // capture's reports carry its version
        return activation
    }

    /// The other half: fetches a newer document when one is due, on a background task, and
    /// reports the outcome to `activation.waitForBackgroundFetch`.
    /// - Returns: what cancels the fetch (reporting's end does, so no fetch runs into exit).
    @discardableResult
    package static func fetchInBackground(_ options: RemoteConfigOptions,
                                          reportingTo activation: RemoteConfigActivation) -> URLTaskCancellation {
        OpenSSLExit.keepThroughExit()  // before the fetch's URLSession: see `OpenSSLExit`
        let fetcher = RemoteConfigFetcher(options: options)
        let cancellation = URLTaskCancellation()
        Task.detached(priority: .background) {
            activation.finishFetch(await fetcher.fetchIfDue(cancellation: cancellation))
        }
        return cancellation
    }

    /// What `activate` would make current, without side effects: the stored document of
    /// `options.directory`, verified and resolved. No fetch.
    package static func load(_ options: RemoteConfigOptions) -> RemoteConfigActivation {
        let store = RemoteConfigStore(directory: options.directory)
        guard let stored = store.loadDocument() else {
            return RemoteConfigActivation(version: nil, overrides: nil, warnings: [], rejection: nil)
        }
        do {
            let parsed = try stored.envelope.document(publicKey: options.publicKey)
            return RemoteConfigActivation(version: parsed.document.version, overrides: parsed.document.rule(for: options.target),
                                          warnings: parsed.warnings, rejection: nil)
        } catch {
            return RemoteConfigActivation(version: nil, overrides: nil, warnings: [], rejection: error)
        }
    }
}

/// Fetches the document from `dsn.sdkConfigURL` and stores it when it passes validation.
package struct RemoteConfigFetcher: Sendable {
    /// The request failed before an HTTP answer (connection refused, timeout, DNS).
    package static let networkErrorCode = "remote_config.network"
    /// The server answered with a status other than 200 and 304.
    package static let httpStatusCode = "remote_config.http_status"
    /// The fetch was cancelled (`URLTaskCancellation.cancel`) before an answer.
    package static let cancelledCode = "remote_config.cancelled"

    package let options: RemoteConfigOptions
    package var store: RemoteConfigStore { RemoteConfigStore(directory: options.directory) }

    package init(options: RemoteConfigOptions) { self.options = options }

    /// The request: GET `sdkConfigURL?app_version=[&release=]&os=&os_version=&arch=` with
    /// `If-None-Match` when a document with an ETag is stored.
    package func request() -> URLRequest {
        var components = URLComponents(url: options.dsn.sdkConfigURL, resolvingAgainstBaseURL: false)!
        components.queryItems = [URLQueryItem(name: "app_version", value: options.appVersion ?? "")]
            + (options.release.map { [URLQueryItem(name: "release", value: $0)] } ?? []) + [
            URLQueryItem(name: "os", value: options.os),
            URLQueryItem(name: "os_version", value: options.osVersion),
            URLQueryItem(name: "arch", value: options.arch),
        ]
        var request = URLRequest(url: components.url!)
        request.httpMethod = "GET"
        request.cachePolicy = .reloadIgnoringLocalCacheData
        request.timeoutInterval = options.requestTimeout.seconds
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.setValue(options.dsn.authHeader(client: "crashshield.swift/1.0.0"), forHTTPHeaderField: "X-Sentry-Auth")
        if let etag = store.loadDocument()?.etag { request.setValue(etag, forHTTPHeaderField: "If-None-Match") }
        return request
    }

    /// Fetches unless the stored next-fetch time lies ahead.
    package func fetchIfDue(now: Date = Date(), cancellation: URLTaskCancellation? = nil) async -> RemoteConfigFetchOutcome {
        if let next = store.loadState().nextFetchAt, next > now { return .notDue(until: next) }
        return await fetch(now: now, cancellation: cancellation)
    }

    /// Fetches now and handles the answer: 200 → verify, parse, store (or refuse and record why);
    /// 304 → keep; both set the next fetch time from `Cache-Control: max-age` (or the default
    /// interval). Failures change nothing, so the next start tries again. Once `cancellation` is
    /// cancelled no session is created and a request in flight is cancelled: the outcome is
    /// `.failed` with `cancelledCode`, and nothing is stored.
    package func fetch(now: Date = Date(), cancellation: URLTaskCancellation? = nil) async -> RemoteConfigFetchOutcome {
        let cancelled = RemoteConfigFetchOutcome.failed(RemoteConfigError(code: Self.cancelledCode, path: "$",
                                                                           message: "the fetch was cancelled"))
        if cancellation?.isCancelled == true { return cancelled }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let request = request()
        let answer: (Data?, URLResponse?, (any Error)?) = await withCheckedContinuation { continuation in
            let task = session.dataTask(with: request) { data, response, error in
                continuation.resume(returning: (data, response, error))
            }
            cancellation?.register(task)  // cancels it at once when cancelled meanwhile
            task.resume()
        }
        if cancellation?.isCancelled == true { return cancelled }
        guard let response = answer.1 as? HTTPURLResponse, answer.2 == nil else {
            return .failed(RemoteConfigError(code: Self.networkErrorCode, path: "$",
                                             message: answer.2.map { "\($0)" } ?? "no HTTP response"))
        }
        return handle(status: response.statusCode, body: answer.0 ?? Data(),
                      etag: response.value(forHTTPHeaderField: "ETag"),
                      cacheControl: response.value(forHTTPHeaderField: "Cache-Control"), now: now)
    }

    /// Handles one answer (split from `fetch` so that it is testable without a network).
    package func handle(status: Int, body: Data, etag: String?, cacheControl: String?, now: Date) -> RemoteConfigFetchOutcome {
        let store = self.store
        var state = store.loadState()
        guard status == 200 || status == 304 else {
            return .failed(RemoteConfigError(code: Self.httpStatusCode, path: "$", message: "HTTP \(status)"))
        }
        let interval = Self.maxAge(cacheControl).map(Double.init)
            ?? Double(options.defaultFetchInterval.components.seconds)
        state.nextFetchAt = now.addingTimeInterval(interval)
        let outcome: RemoteConfigFetchOutcome
        if status == 304 {
            outcome = .notModified
        } else {
            do {
                let envelope = try SignedRemoteConfig.decode(body)
                let parsed = try envelope.document(publicKey: options.publicKey)
                try store.store(envelope, document: parsed.document, etag: etag)
                state.lastRejection = nil
                outcome = .stored(version: parsed.document.version)
            } catch {
                state.lastRejection = error
                outcome = .rejected(error)
            }
        }
        store.saveState(state)
        return outcome
    }

    /// The `max-age` directive of a `Cache-Control` value, in seconds; nil when absent or malformed.
    package static func maxAge(_ cacheControl: String?) -> Int? {
        guard let cacheControl else { return nil }
        for directive in cacheControl.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, parts[0].lowercased() == "max-age",
               let seconds = Int(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))), seconds >= 0 {
                return seconds
            }
        }
        return nil
    }
}

/// The Ed25519 public key that verifies the remote configuration's signature
/// (`ReportingOptions.remoteConfigPublicKey`): `RemoteConfigPublicKey(base64:)` takes the key the
/// collector shows.
public typealias RemoteConfigPublicKey = CrashShieldProtocol.RemoteConfigPublicKey
