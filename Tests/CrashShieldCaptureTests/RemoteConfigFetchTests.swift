import CrashShieldBase
import CrashShieldProtocol
import Crypto
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// The fetcher against a real HTTP server on 127.0.0.1, and the "applied at the next start" rule.
@Suite struct RemoteConfigFetchTests {
    private let key = Curve25519.Signing.PrivateKey()

    private func options(port: UInt16, _ directory: String) throws -> RemoteConfigOptions {
        var options = RemoteConfigOptions(dsn: try DSN("http://publickey@127.0.0.1:\(port)/42"), directory: directory)
        options.publicKey = RemoteConfigPublicKey(key.publicKey)
        options.appVersion = "2.4.1"
        options.os = "Linux"
        options.osVersion = "6.1.0"
        options.arch = "x86_64"
        options.requestTimeout = .seconds(60)
        return options
    }

    private func ok(_ document: RemoteConfigDocument, etag: String, maxAge: Int?, signedWith signer: Curve25519.Signing.PrivateKey?) throws
        -> LoopbackHTTPServer.Reply
    {
        var headers = ["ETag": etag, "Content-Type": "application/json"]
        if let maxAge { headers["Cache-Control"] = "max-age=\(maxAge)" }
        return .respond(status: 200, headers: headers, body: try servedBody(document, signedWith: signer))
    }

    @Test func storesOn200KeepsOn304AndHonoursMaxAge() async throws {
        let directory = temporaryDirectory("rc-fetch")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try LoopbackHTTPServer(fallback: try ok(remoteDocument(7), etag: "\"v7\"", maxAge: 120, signedWith: key))
        defer { server.stop() }
        let options = try options(port: server.port, directory)
        let fetcher = RemoteConfigFetcher(options: options)
        let store = RemoteConfigStore(directory: directory)

        // 200: verified, stored with its ETag; the next fetch is due after max-age.
        let start = Date()
        #expect(await fetcher.fetch(now: start) == .stored(version: 7))
        let first = try #require(server.requests.first)
        #expect(first.method == "GET" && first.version == "HTTP/1.1", "\(first)")
        #expect(first.path == "/api/42/sdk-config?app_version=2.4.1&os=Linux&os_version=6.1.0&arch=x86_64", "\(first.path)")
        #expect(first.headers["if-none-match"] == nil)
        #expect(store.loadDocument()?.version == 7)
        #expect(store.loadDocument()?.etag == "\"v7\"")
        let next = try #require(store.loadState().nextFetchAt)
        #expect(abs(next.timeIntervalSince(start) - 120) < 1)

        // Not due before max-age passed: no request.
        #expect(await fetcher.fetchIfDue(now: start.addingTimeInterval(60)) == .notDue(until: next))
        #expect(server.requests.count == 1)

        // Due: the request carries If-None-Match; 304 keeps the stored document and sets the
        // next fetch from the new max-age.
        server.setFallback(.respond(status: 304, headers: ["ETag": "\"v7\"", "Cache-Control": "max-age=600"]))
        let later = start.addingTimeInterval(121)
        #expect(await fetcher.fetchIfDue(now: later) == .notModified)
        #expect(server.requests.count == 2)
        #expect(server.requests[1].headers["if-none-match"] == "\"v7\"")
        #expect(store.loadDocument()?.version == 7)
        #expect(abs((store.loadState().nextFetchAt ?? .distantPast).timeIntervalSince(later) - 600) < 1)

        // Without max-age the default interval applies.
        server.setFallback(.respond(status: 304))
        let plain304 = await fetcher.fetch(now: later)
        #expect(plain304 == .notModified, "\(plain304)")
        let defaultInterval = Double(options.defaultFetchInterval.components.seconds)
        #expect(abs((store.loadState().nextFetchAt ?? .distantPast).timeIntervalSince(later) - defaultInterval) < 1)
    }

    @Test func aBadSignatureOrALowerVersionOrAnInvalidDocumentKeepsTheStoredOne() async throws {
        let directory = temporaryDirectory("rc-fetch-bad")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try LoopbackHTTPServer(fallback: try ok(remoteDocument(7), etag: "\"v7\"", maxAge: 0, signedWith: key))
        defer { server.stop() }
        let fetcher = RemoteConfigFetcher(options: try options(port: server.port, directory))
        let store = RemoteConfigStore(directory: directory)
        #expect(await fetcher.fetch() == .stored(version: 7))

        let invalid = Data(#"{"version": 9, "rules": [{"guards": {"timer": "sometimes"}}]}"#.utf8)
        let cases: [(LoopbackHTTPServer.Reply, String)] = [
            (try ok(remoteDocument(8), etag: "\"v8\"", maxAge: 0, signedWith: Curve25519.Signing.PrivateKey()), RemoteConfigError.badSignatureCode),
            (try ok(remoteDocument(8), etag: "\"v8\"", maxAge: 0, signedWith: nil), RemoteConfigError.missingSignatureCode),
            (try ok(remoteDocument(6), etag: "\"v6\"", maxAge: 0, signedWith: key), RemoteConfigStore.olderVersionCode),
            (.respond(status: 200, body: try SignedRemoteConfig(signing: invalid, with: key).jsonData()), RemoteConfigError.invalidValueCode),
            (.respond(status: 200, body: Data("<html>".utf8)), RemoteConfigError.invalidEnvelopeCode),
        ]
        for (response, code) in cases {
            server.setFallback(response)
            let outcome = await fetcher.fetch()
            guard case .rejected(let error) = outcome else {
                Issue.record("expected a rejection with \(code), got \(outcome)")
                continue
            }
            #expect(error.code == code)
            #expect(store.loadState().lastRejection?.code == code, "the reason is recorded")
            #expect(store.loadDocument()?.version == 7, "the stored document stays")
            #expect(store.loadDocument()?.etag == "\"v7\"")
        }

        // A server error changes nothing.
        server.setFallback(.respond(status: 500))
        let failed = await fetcher.fetch()
        guard case .failed(let error) = failed else { Issue.record("\(failed)"); return }
        #expect(error.code == RemoteConfigFetcher.httpStatusCode)
        #expect(store.loadDocument()?.version == 7)
    }

    @Test func aRefusedConnectionFailsWithoutChangingAnything() async throws {
        let directory = temporaryDirectory("rc-fetch-refused")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fetcher = RemoteConfigFetcher(options: try options(port: LoopbackHTTPServer.closedPort(), directory))
        let outcome = await fetcher.fetch()
        guard case .failed(let error) = outcome else { Issue.record("\(outcome)"); return }
        #expect(error.code == RemoteConfigFetcher.networkErrorCode)
        #expect(RemoteConfigStore(directory: directory).loadState().nextFetchAt == nil, "the next start tries again")
    }

    /// A document fetched during a run does not change that run's configuration; the next start
    /// (the next `load`) uses it.
    @Test func aFetchedDocumentAppliesAtTheNextStartOnly() async throws {
        let directory = temporaryDirectory("rc-fetch-next-start")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try LoopbackHTTPServer(fallback: try ok(remoteDocument(8, policy: .reportOnly), etag: "\"v8\"", maxAge: 60, signedWith: key))
        defer { server.stop() }
        let options = try options(port: server.port, directory)
        try storeDocument(remoteDocument(7), in: directory, signedWith: key)

        let thisRun = RemoteConfiguration.load(options)
        #expect(thisRun.version == 7)
        #expect(await RemoteConfigFetcher(options: options).fetchIfDue() == .stored(version: 8))
        #expect(thisRun.version == 7)
        #expect(thisRun.overrides?.guards == ["timer": .off])
        let nextRun = RemoteConfiguration.load(options)
        #expect(nextRun.version == 8)
        #expect(nextRun.overrides?.guards == ["timer": .reportOnly])
    }

    /// The timer guard's policy in `report`; nil unless the guard is active (a guard whose canary
    /// failed is off whatever the document says).
    private func timerPolicy(_ report: CrashReport) -> CrashReport.GuardState.Policy? {
        report.guards?.first { $0.name == "timer" && $0.state == .active }?.policy
    }

    /// End to end in child processes (`shield crash --guards`): the run that fetches v8 still
    /// crashes with v7 active and its report says so (version, and the guard policy v7 sets);
    /// the next run's report names v8 and its policy.
    @Test func aCrashReportNamesTheActiveVersion() throws {
        let directory = temporaryDirectory("rc-crash-version")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try LoopbackHTTPServer(fallback: try ok(remoteDocument(8, policy: .reportOnly), etag: "\"v8\"", maxAge: 0, signedWith: key))
        defer { server.stop() }
        try storeDocument(remoteDocument(7, policy: .off), in: directory, signedWith: key)
        let arguments = ["crash", "segv", "--dir", directory, "--guards",
                         "--remote-config-dsn", "http://publickey@127.0.0.1:\(server.port)/42",
                         "--remote-config-key", key.publicKey.rawRepresentation.base64EncodedString()]

        let first = try runChild(Built.shield, arguments)
        #expect(first.termination == .signaled(SIGSEGV))
        #expect(first.output.contains("REMOTE-CONFIG active=7 fetch=stored(version: 8)"), "\(first.output)")
        let firstReports = loadReports(directory, symbolicate: false)
        #expect(firstReports.map(\.remoteConfigVersion) == [7])
        #expect(firstReports.map(timerPolicy) == [.off], "CrashShieldSDK.start applied v7's guard policy")
        for report in firstReports { try? FileManager.default.removeItem(atPath: try #require(report.file)) }

        let second = try runChild(Built.shield, arguments)
        #expect(second.termination == .signaled(SIGSEGV))
        #expect(second.output.contains("REMOTE-CONFIG active=8"), "\(second.output)")
        let secondReports = loadReports(directory, symbolicate: false)
        #expect(secondReports.map(\.remoteConfigVersion) == [8])
        #expect(secondReports.map(timerPolicy) == [.reportOnly])

        // Without an active document the field is null.
        let plain = temporaryDirectory("rc-crash-no-version")
        defer { try? FileManager.default.removeItem(atPath: plain) }
        #expect(try runChild(Built.shield, ["crash", "segv", "--dir", plain, "--guards"]).termination == .signaled(SIGSEGV))
        let report = try #require(loadReports(plain, symbolicate: false).first)
        #expect(report.remoteConfigVersion == nil)
        #expect(timerPolicy(report) == .neutralize)
        let text = try String(contentsOfFile: try #require(report.file), encoding: .utf8)
        #expect(text.contains("\"remote_config_version\":null"))
    }

    /// With the remote document: a signed document that sets the container guard
    /// report-only; the app's out-of-bounds read throws and ends the run. The report names the
    /// report-only guard (not a crash in the guard), and the next run, under the same document,
    /// still has the guard active and report-only (before: the fail-safe switched it off).
    @Test func aReportOnlyCrashUnderTheRemoteDocumentKeepsItsPolicy() throws {
        let directory = temporaryDirectory("rc-report-only-crash")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let document = remoteDocument(9, guardName: "container", policy: .reportOnly)
        let server = try LoopbackHTTPServer(fallback: try ok(document, etag: "\"v9\"", maxAge: 3600, signedWith: key))
        defer { server.stop() }
        try storeDocument(document, in: directory, signedWith: key)
        let arguments = ["crash", "array-beyond", "--dir", directory, "--guards",
                         "--remote-config-dsn", "http://publickey@127.0.0.1:\(server.port)/42",
                         "--remote-config-key", key.publicKey.rawRepresentation.base64EncodedString()]
        func containerPolicy(_ report: CrashReport) -> CrashReport.GuardState.Policy? {
            report.guards?.first { $0.name == "container" && $0.state == .active }?.policy
        }
        // The second run starts with the first run's report pending (what the fail-safe reads).
        var seen: Set<String> = []
        for run in 1...2 {
            let result = try runChild(Built.shield, arguments)
            #expect(result.termination != .timedOut && result.termination != .exited(0), "run \(run): \(result.output)")
            let reports = loadReports(directory, symbolicate: false).filter { !seen.contains($0.file ?? "") }
            #expect(reports.count == 1, "run \(run)")
            let report = try #require(reports.first)
            seen.insert(report.file ?? "")
            #expect(report.remoteConfigVersion == 9)
            #expect(containerPolicy(report) == .reportOnly, "run \(run): \(report.guards ?? [])")
            #expect(report.exception?.reportOnlyGuard == "container" && report.crashedThread?.guardFrames == [])
        }
    }
}
