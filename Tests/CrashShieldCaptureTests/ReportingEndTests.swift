import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// `ReportingClient.end` (exit, `stop`) in-process: it stops the running send pass before it
/// returns, starts none afterwards, and leaves what was not sent for the next client.
@Suite struct ReportingEndTests {
    func options(exitFlush: Duration) throws -> ReportingOptions {
        var options = try ReportingOptions(dsn: "http://0123456789abcdef0123456789abcdef@127.0.0.1:9/1")
        options.exitFlushTimeout = exitFlush
        return options
    }

    func pending(_ directory: String) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: Outbox.directory(forReportDirectory: directory))) ?? [])
            .filter { $0.hasSuffix(".envelope") }.count
    }

    /// `stop()` then `start()`: the first client's pass, held in its request, has returned when
    /// `end` returns, no pass starts afterwards, and its three envelopes (session start, incident,
    /// session end) stay in the outbox; the next client on the same directory sends them.
    @Test func endStopsTheRunningPassAndTheNextClientSendsWhatWasLeft() throws {
        let directory = temporaryDirectory("reporting-end-pass")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let holding = HoldingHTTPClient(cancellable: true)
        let first = ReportingClient(options: try options(exitFlush: .milliseconds(200)), directory: directory,
                                    appName: "end-test", appVersion: "1.0", httpClient: holding)
        first.launchDecided(nil)
        first.beginWork()
        first.submitIncident(ReportingFixture.incident())
        #expect(first.waitUntilIdle(timeout: .seconds(30)))
        try #require(holding.waitForARequest(timeout: 30))

        first.end()
        let atEnd = holding.counts
        #expect(atEnd.begun == atEnd.returned, "a request was still running when end returned")
        usleep(300_000)
        #expect(holding.counts.begun == atEnd.begun, "a request began after end")
        #expect(pending(directory) == 3)

        let accepting = ReportingQueueTests.AcceptingHTTPClient()
        let second = ReportingClient(options: try options(exitFlush: .seconds(10)), directory: directory,
                                     appName: "end-test", appVersion: "1.0", httpClient: accepting)
        second.launchDecided(nil)
        second.beginWork()
        #expect(second.waitUntilIdle(timeout: .seconds(30)))
        let deadline = Date().addingTimeInterval(30)
        while pending(directory) > 0 && Date() < deadline { usleep(20_000) }
        #expect(pending(directory) == 0)
        #expect(accepting.count == 4)  // the first client's three and the second's session start
        second.end()
    }

    /// With no time to send (`exitFlushTimeout` 0; the queue has not run when `end` begins),
    /// `end` still lets the setup and the session's `exited` update be stored within its grace,
    /// no request is running when it returns (the transport, set up during the grace, is closed
    /// at once or by `end`), and both envelopes wait in the outbox for the next launch.
    @Test func withNoTimeToSendTheSessionStillEndsAndBothEnvelopesWait() throws {
        let directory = temporaryDirectory("reporting-end-late-setup")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let holding = HoldingHTTPClient(cancellable: true)
        let client = ReportingClient(options: try options(exitFlush: .zero), directory: directory,
                                     appName: "end-test", appVersion: "1.0", httpClient: holding)
        client.launchDecided(nil)
        client.end()
        let atEnd = holding.counts
        #expect(atEnd.begun == atEnd.returned, "a request was still running when end returned")
        #expect(client.waitUntilIdle(timeout: .seconds(30)))
        usleep(300_000)
        #expect(holding.counts.begun == atEnd.begun, "a request began after end")
        let session = try #require(FileManager.default.contents(atPath: directory + "/session.json"))
        #expect(String(decoding: session, as: UTF8.self).contains("exited"))
        #expect(pending(directory) == 2)
    }
}
