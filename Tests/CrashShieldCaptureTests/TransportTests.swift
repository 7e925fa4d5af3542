import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// The envelope transport against a loopback HTTP server: each response
/// kind, the outbox and the next send time after it, the request's form, rate limits kept across
/// instances.
@Suite struct TransportTests {
    struct Setup {
        let directory: String
        let outbox: Outbox
        let transport: EnvelopeTransport
    }

    func setup(_ label: String, dsn: String, configure: (inout TransportOptions) -> Void = { _ in }) throws -> Setup {
        let directory = temporaryDirectory("transport-\(label)")
        let outbox = try Outbox(directory: Outbox.directory(forReportDirectory: directory))
        var options = TransportOptions()
        options.requestTimeout = .seconds(5)
        configure(&options)
        return Setup(directory: directory, outbox: outbox, transport: EnvelopeTransport(dsn: try DSN(dsn), outbox: outbox, options: options))
    }

    func eventEnvelope(_ tag: String = "e") -> Envelope {
        Envelope(header: ["event_id": .string(String(repeating: "a", count: 32)), "sent_at": "2000-01-01T00:00:00Z"],
                 items: [.json(type: "event", ["message": .string(tag), "level": "fatal"])])
    }

    func sessionEnvelope() -> Envelope {
        Envelope(header: [:], items: [.json(type: "session", ["sid": "s", "status": "exited", "init": true])])
    }

    /// The envelope a request carried (gunzipped when its encoding says gzip).
    func envelope(of request: LoopbackHTTPServer.Request) throws -> Envelope {
        let body = request.headers["content-encoding"] == "gzip" ? try #require(Gzip.decompress(request.body)) : request.body
        return try Envelope.parse(body)
    }

    @Test func acceptedEnvelopeIsRemovedAndTheRequestHasTheProtocolsForm() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let s = try setup("200", dsn: server.dsn)
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.outbox.enqueue(eventEnvelope("hello"))
        let result = s.transport.sendPending()
        #expect(result.outcomes.map(\.kind) == [.delivered])
        #expect(result.stop == nil)
        #expect(result.remaining == 0)
        #expect(s.outbox.pending().isEmpty)
        #expect(s.transport.state.nextAttempt == nil)
        let request = try #require(server.requests.first)
        #expect(request.method == "POST")
        #expect(request.path == "/api/1/envelope/")
        #expect(request.headers["content-type"] == "application/x-sentry-envelope")
        #expect(request.headers["content-encoding"] == "gzip")
        #expect(request.headers["user-agent"] == "crashshield.swift/0.1.0")
        let auth = try #require(request.headers["x-sentry-auth"])
        #expect(auth.hasPrefix("Sentry sentry_version=7"))
        #expect(auth.contains("sentry_key=0123456789abcdef0123456789abcdef"))
        #expect(auth.contains("sentry_client=crashshield.swift/0.1.0"))
        // The gzip body decodes (CRC and length checked) to the envelope, with a fresh sent_at.
        let sent = try envelope(of: request)
        #expect(sent.items.count == 1)
        #expect(sent.items[0].type == "event")
        #expect(try JSONValue.parse(sent.items[0].payload)["message"] == "hello")
        let sentAt = try #require(sent.header["sent_at"]?.stringValue)
        #expect(sentAt != "2000-01-01T00:00:00Z")
        #expect(sentAt.hasPrefix("20") && sentAt.hasSuffix("Z"))
    }

    @Test func uncompressedWhenAskedTo() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let s = try setup("plain", dsn: server.dsn) { $0.compress = false }
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.outbox.enqueue(eventEnvelope())
        _ = s.transport.sendPending()
        let request = try #require(server.requests.first)
        #expect(request.headers["content-encoding"] == nil)
        #expect(try Envelope.parse(request.body).items.map(\.type) == ["event"])
    }

    /// 413: dropped, counted `send_error`; the count rides on the next envelope as a client
    /// report and is forgotten once that one is accepted.
    @Test func tooLargeIsDroppedAndReportedLater() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.respond(status: 413))
        let s = try setup("413", dsn: server.dsn)
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.outbox.enqueue(eventEnvelope())
        let first = s.transport.sendPending()
        #expect(first.outcomes.map(\.kind) == [.dropped(reason: "send_error")])
        #expect(first.outcomes.first?.status == 413)
        #expect(s.outbox.pending().isEmpty)
        #expect(s.transport.state.nextAttempt == nil)
        #expect(s.outbox.pendingDiscards() == [Outbox.DiscardKey(reason: "send_error", category: "error"): 1])

        try s.outbox.enqueue(sessionEnvelope())
        let second = s.transport.sendPending()
        #expect(second.outcomes.map(\.kind) == [.delivered])
        let carried = try envelope(of: server.requests[1])
        #expect(carried.items.map(\.type) == ["session", "client_report"])
        let report = try JSONValue.parse(carried.items[1].payload)
        #expect(report["discarded_events"] == [["reason": "send_error", "category": "error", "quantity": 1]])
        #expect(s.outbox.pendingDiscards().isEmpty)
    }

    /// 429 with `Retry-After: <seconds>`: every category is limited until then (kept in the
    /// directory), the envelope is dropped as `ratelimit_backoff`, and a new one is not sent.
    @Test func retryAfterSecondsLimitsEverything() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.respond(status: 429, headers: ["Retry-After": "120"]))
        let s = try setup("429-seconds", dsn: server.dsn)
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.outbox.enqueue(eventEnvelope())
        let before = Date()
        let result = s.transport.sendPending()
        #expect(result.outcomes.map(\.kind) == [.dropped(reason: "ratelimit_backoff")])
        #expect(s.outbox.pending().isEmpty)
        let until = try #require(s.transport.state.rateLimits.limitedUntil("error"))
        #expect(until >= before.addingTimeInterval(119) && until <= Date().addingTimeInterval(121))
        #expect(s.transport.state.rateLimits.limitedUntil("session") == until)

        try s.outbox.enqueue(sessionEnvelope())
        let next = s.transport.sendPending()
        #expect(server.requests.count == 1)
        #expect(next.outcomes.map(\.kind) == [.dropped(reason: "ratelimit_backoff")])
        #expect(s.outbox.pendingDiscards()[Outbox.DiscardKey(reason: "ratelimit_backoff", category: "error")] == 1)
        #expect(s.outbox.pendingDiscards()[Outbox.DiscardKey(reason: "ratelimit_backoff", category: "session")] == 1)

        // A new outbox and transport on the same directory (the next launch) keep the limit.
        let reopened = try Outbox(directory: s.outbox.directory)
        let relaunched = EnvelopeTransport(dsn: try DSN(server.dsn), outbox: reopened)
        #expect(relaunched.state.rateLimits.limitedUntil("error").map { abs($0.timeIntervalSince(until)) < 0.01 } == true)
        try reopened.enqueue(eventEnvelope())
        _ = relaunched.sendPending()
        #expect(server.requests.count == 1)
        #expect(reopened.pending().isEmpty)
    }

    @Test func retryAfterHTTPDate() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let target = Date().addingTimeInterval(600)
        server.enqueue(.respond(status: 429, headers: ["Retry-After": formatter.string(from: target)]))
        let s = try setup("429-date", dsn: server.dsn)
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.outbox.enqueue(eventEnvelope())
        _ = s.transport.sendPending()
        let until = try #require(s.transport.state.rateLimits.limitedUntil("attachment"))
        #expect(abs(until.timeIntervalSince(target)) < 2)
        #expect(s.outbox.pending().isEmpty)
    }

    /// `X-Sentry-Rate-Limits` naming categories limits only those: a session still goes out,
    /// and a mixed envelope loses its limited items (counted) and keeps the others.
    @Test func sentryRateLimitsWithCategories() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.respond(status: 429, headers: ["X-Sentry-Rate-Limits": "60:error;attachment:organization:quota, 5:transaction:key"]))
        let s = try setup("429-categories", dsn: server.dsn)
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.outbox.enqueue(eventEnvelope())
        _ = s.transport.sendPending()
        let limits = s.transport.state.rateLimits
        #expect(limits.isLimited("error"))
        #expect(limits.isLimited("attachment"))
        #expect(limits.isLimited("transaction"))
        #expect(!limits.isLimited("session"))
        #expect(s.outbox.pending().isEmpty)

        var mixed = eventEnvelope()
        mixed.items += sessionEnvelope().items
        try s.outbox.enqueue(mixed)
        let result = s.transport.sendPending()
        #expect(result.outcomes.map(\.kind) == [.delivered])
        #expect(result.outcomes.first?.itemsDroppedForRateLimits == 1)
        let sent = try envelope(of: server.requests[1])
        #expect(sent.items.map(\.type).contains("session"))
        #expect(!sent.items.map(\.type).contains("event"))
        #expect(s.outbox.pending().isEmpty)
    }

    /// `X-Sentry-Rate-Limits` without categories limits every category; it wins over Retry-After.
    @Test func sentryRateLimitsWithoutCategories() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.respond(status: 429, headers: ["X-Sentry-Rate-Limits": "300::organization", "Retry-After": "5"]))
        let s = try setup("429-all", dsn: server.dsn)
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.outbox.enqueue(eventEnvelope())
        _ = s.transport.sendPending()
        let until = try #require(s.transport.state.rateLimits.limitedUntil("session"))
        #expect(until > Date().addingTimeInterval(290))
        try s.outbox.enqueue(sessionEnvelope())
        _ = s.transport.sendPending()
        #expect(server.requests.count == 1)
    }

    /// 500: kept, and no attempt before a jittered delay in [initial/2, initial]; a pass before
    /// then sends nothing.
    @Test func serverErrorIsRetriedAfterABackoff() throws {
        let server = try LoopbackHTTPServer(fallback: .respond(status: 500))
        defer { server.stop() }
        let s = try setup("500", dsn: server.dsn) { $0.initialRetryDelay = .seconds(40) }
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.outbox.enqueue(eventEnvelope())
        try s.outbox.enqueue(sessionEnvelope())
        let before = Date()
        let result = s.transport.sendPending()
        #expect(result.outcomes.map(\.kind) == [.kept(reason: "500")])
        #expect(result.remaining == 2)
        #expect(s.outbox.pending().count == 2)
        let next = try #require(s.transport.state.nextAttempt)
        #expect(next >= before.addingTimeInterval(20) && next <= Date().addingTimeInterval(40))
        #expect(s.transport.state.consecutiveFailures == 1)
        let again = s.transport.sendPending()
        #expect(again.stop == .retryAfter(until: next))
        #expect(server.requests.count == 1)
    }

    /// The delay doubles with each failure, up to the maximum; after `maximumAttempts` failures
    /// the process gives up and leaves the envelope for the next launch.
    @Test func backoffIsBoundedAndGivesUp() throws {
        let server = try LoopbackHTTPServer(fallback: .respond(status: 503))
        defer { server.stop() }
        let s = try setup("giveup", dsn: server.dsn) {
            $0.initialRetryDelay = .milliseconds(20)
            $0.maximumRetryDelay = .milliseconds(50)
            $0.maximumAttempts = 4
        }
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.outbox.enqueue(eventEnvelope())
        // The failure happens between `start` and `end` of each pass, so the delay d it chose
        // satisfies next − end ≤ d ≤ next − start, whatever the machine's load.
        for round in 0..<3 {
            let start = Date()
            _ = s.transport.sendPending()
            let end = Date()
            let next = try #require(s.transport.state.nextAttempt)
            let full = min(0.050, 0.020 * pow(2, Double(round)))
            #expect(next.timeIntervalSince(end) <= full + 0.001, "round \(round): at most \(full) s")
            #expect(next.timeIntervalSince(start) >= full / 2 - 0.001, "round \(round): at least \(full / 2) s")
            usleep(useconds_t(max(0, next.timeIntervalSinceNow) * 1e6) + 5_000)
        }
        let last = s.transport.sendPending()
        #expect(last.stop == .gaveUp)
        #expect(s.transport.state.gaveUp)
        #expect(s.outbox.pending().count == 1)
        #expect(server.requests.count == 4)
        #expect(s.transport.sendPending().stop == .gaveUp)
        #expect(server.requests.count == 4)
    }

    @Test func hangingServerTimesOut() throws {
        let server = try LoopbackHTTPServer(fallback: .hang)
        defer { server.stop() }
        let s = try setup("hang", dsn: server.dsn) { $0.requestTimeout = .seconds(1) }
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.outbox.enqueue(eventEnvelope())
        let result = s.transport.sendPending()
        #expect(result.outcomes.map(\.kind) == [.kept(reason: "timedOut")])
        #expect(s.outbox.pending().count == 1)
        #expect(s.transport.state.nextAttempt != nil)
    }

    @Test func refusedConnectionKeepsTheEnvelope() throws {
        let port = LoopbackHTTPServer.closedPort()
        let s = try setup("refused", dsn: "http://abc@127.0.0.1:\(port)/1")
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.outbox.enqueue(eventEnvelope())
        let result = s.transport.sendPending()
        #expect(result.outcomes.map(\.kind) == [.kept(reason: "networkFailure")])
        #expect(s.outbox.pending().count == 1)
        #expect(s.transport.state.nextAttempt != nil)
    }

    @Test func connectionClosedWithoutAnswerKeepsTheEnvelope() throws {
        let server = try LoopbackHTTPServer(fallback: .close)
        defer { server.stop() }
        let s = try setup("closed", dsn: server.dsn)
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.outbox.enqueue(eventEnvelope())
        let result = s.transport.sendPending()
        #expect(result.outcomes.map(\.kind) == [.kept(reason: "networkFailure")])
        #expect(s.outbox.pending().count == 1)
    }

    /// Rate limits may come with a 200 too; they are honoured.
    @Test func rateLimitsOnASuccessAreHonoured() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.respond(status: 200, headers: ["X-Sentry-Rate-Limits": "60:session:project"]))
        let s = try setup("200-limits", dsn: server.dsn)
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.outbox.enqueue(eventEnvelope())
        #expect(s.transport.sendPending().outcomes.map(\.kind) == [.delivered])
        #expect(s.transport.state.rateLimits.isLimited("session"))
        #expect(!s.transport.state.rateLimits.isLimited("error"))
    }

    /// flush delivers what is pending; with a hanging server it returns by its deadline and the
    /// envelope stays.
    @Test func flushDeliversOrGivesUpAtItsDeadline() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let s = try setup("flush", dsn: server.dsn)
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.outbox.enqueue(eventEnvelope())
        try s.outbox.enqueue(sessionEnvelope())
        let flushed = s.transport.flush(timeout: .seconds(10))
        #expect(flushed.outcomes.map(\.kind) == [.delivered, .delivered])
        #expect(flushed.remaining == 0)

        server.setFallback(.hang)
        try s.outbox.enqueue(eventEnvelope())
        let cut = s.transport.flush(timeout: .milliseconds(500))
        #expect(cut.remaining == 1)
        #expect(cut.outcomes.allSatisfy { $0.kind != .delivered })
        #expect(s.outbox.pending().count == 1)
    }

    /// A background pass that failed schedules the next one after its delay, which delivers.
    @Test func backgroundSendRetriesAfterAFailure() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.respond(status: 503))
        let s = try setup("background-retry", dsn: server.dsn) { $0.initialRetryDelay = .milliseconds(100) }
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.transport.submit(eventEnvelope())
        let deadline = Date().addingTimeInterval(30)
        while !s.outbox.pending().isEmpty && Date() < deadline { usleep(20_000) }
        #expect(s.outbox.pending().isEmpty)
        #expect(server.requests.count == 2)
        #expect(s.transport.state.consecutiveFailures == 0)
    }

    /// One sender per outbox: while one transport waits for a response, another on the same
    /// directory (as another process would) finds the outbox busy and sends nothing.
    @Test func oneSenderPerOutbox() throws {
        let server = try LoopbackHTTPServer(fallback: .hang)
        defer { server.stop() }
        let first = try setup("one-sender", dsn: server.dsn) { $0.requestTimeout = .seconds(20) }
        defer { try? FileManager.default.removeItem(atPath: first.directory) }
        try first.outbox.enqueue(eventEnvelope())
        let second = EnvelopeTransport(dsn: try DSN(server.dsn), outbox: try Outbox(directory: first.outbox.directory))
        first.transport.sendInBackground()
        let deadline = Date().addingTimeInterval(20)
        while server.requests.isEmpty && Date() < deadline { usleep(10_000) }
        #expect(server.requests.count == 1)
        let result = second.sendPending()
        #expect(result.stop == .busy)
        #expect(result.outcomes.isEmpty)
        #expect(server.requests.count == 1)
        #expect(first.outbox.pending().count == 1)
    }

    /// `close` ends a request in flight at once (the server never answers; the request timeout
    /// is a minute), waits until the pass returned, and keeps the envelope: a later transport on
    /// the same outbox delivers it. The cancelled request is not counted as a failure.
    @Test func closeCancelsTheRequestInFlightAndKeepsTheEnvelope() throws {
        let hanging = try LoopbackHTTPServer(fallback: .hang)
        defer { hanging.stop() }
        let s = try setup("close-in-flight", dsn: hanging.dsn) { $0.requestTimeout = .seconds(60) }
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.transport.submit(eventEnvelope("kept"))
        let deadline = Date().addingTimeInterval(20)
        while hanging.requests.isEmpty && Date() < deadline { usleep(10_000) }
        try #require(hanging.requests.count == 1)

        // The grace is far shorter than the request timeout: true means the pass returned
        // because the request was cancelled, not because it timed out.
        #expect(s.transport.close(grace: .seconds(20)))
        #expect(s.transport.isClosed)
        #expect(s.outbox.pending().count == 1)
        #expect(s.transport.state.consecutiveFailures == 0)
        #expect(s.transport.state.nextAttempt == nil)

        let answering = try LoopbackHTTPServer()
        defer { answering.stop() }
        let next = EnvelopeTransport(dsn: try DSN(answering.dsn), outbox: try Outbox(directory: s.outbox.directory))
        let result = next.sendPending()
        #expect(result.outcomes.map(\.kind) == [.delivered])
        let payloads = try answering.requests.map { String(decoding: try envelope(of: $0).items.first?.payload ?? Data(), as: UTF8.self) }
        #expect(payloads.count == 1 && payloads.first?.contains("\"kept\"") == true, "\(payloads)")
        #expect(s.outbox.pending().isEmpty)
    }

    /// A client that cannot cancel keeps the pass past `close`'s grace (`close` says so: false),
    /// but what its request returns afterwards changes nothing: the accepted envelope stays in
    /// the outbox (for the next launch), its rate limit is not applied, and the pass starts no
    /// further request for the second envelope. Before, the late 200 removed the envelope from
    /// the outbox, during the exit when the close was reporting's end.
    @Test func aRequestThatReturnsAfterCloseChangesNothing() throws {
        let directory = temporaryDirectory("transport-uncancellable")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outbox = try Outbox(directory: Outbox.directory(forReportDirectory: directory))
        try outbox.enqueue(eventEnvelope("first"))
        try outbox.enqueue(eventEnvelope("second"))
        let client = HoldingHTTPClient(cancellable: false, answer: HTTPResponse(status: 200, headers: ["x-sentry-rate-limits": "60::organization"]))
        let transport = EnvelopeTransport(dsn: try DSN("http://0123456789abcdef0123456789abcdef@127.0.0.1:9/1"),
                                          outbox: outbox, httpClient: client)
        final class Box: @unchecked Sendable { var result: SendPassResult? }
        let box = Box()
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            box.result = transport.sendPending()
            finished.signal()
        }
        try #require(client.waitForARequest(timeout: 20))
        #expect(!transport.close(grace: .milliseconds(50)))
        client.release()
        #expect(finished.wait(timeout: .now() + 20) == .success)
        #expect(box.result?.stop == .closed)
        #expect(box.result?.outcomes.map(\.kind) == [.kept(reason: TransportError.Code.cancelled.rawValue)])
        #expect(client.counts.begun == 1)
        #expect(outbox.pending().count == 2)
        #expect(transport.state.consecutiveFailures == 0)
        #expect(!transport.state.rateLimits.isLimited("error", now: Date()))
    }

    /// After `close` no pass starts: not the retry a failure scheduled, not a submit's, not
    /// `sendPending` or `flush` (both stop with `.closed`). A submit still stores the envelope.
    @Test func noPassStartsAfterClose() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.respond(status: 503))
        let s = try setup("close-no-pass", dsn: server.dsn) { $0.initialRetryDelay = .milliseconds(200) }
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.transport.submit(eventEnvelope("first"))
        let deadline = Date().addingTimeInterval(20)
        while s.transport.state.nextAttempt == nil && Date() < deadline { usleep(5_000) }
        try #require(server.requests.count == 1)  // the 503; a retry is now scheduled

        #expect(s.transport.close(grace: .seconds(20)))
        try s.transport.submit(eventEnvelope("second"))
        #expect(s.transport.sendPending().stop == .closed)
        #expect(s.transport.flush(timeout: .seconds(5)).stop == .closed)
        // Well past the retry delay (at most 200 ms): the scheduled retry never ran.
        usleep(800_000)
        #expect(server.requests.count == 1)
        #expect(s.outbox.pending().count == 2)
        #expect(s.transport.close(grace: .zero))  // idempotent
    }

    /// With no pass running, `close` answers true whatever its grace, even zero: the answer is
    /// whether a pass runs, not whether the transport's queue got to a block in time (a zero
    /// grace used to time out on a busy machine, seen at load ~11).
    @Test func closeWithoutARunningPassIsTrueEvenWithZeroGrace() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let s = try setup("close-zero-grace", dsn: server.dsn)
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        // Keep the transport's queue from running a block for a while, as a busy machine does,
        // without a pass: the block only sleeps.
        let blocker = DispatchSemaphore(value: 0)
        s.transport.runOnQueueForTesting { blocker.wait() }
        #expect(s.transport.close(grace: .zero))
        #expect(s.transport.close(grace: .milliseconds(50)))
        blocker.signal()
        #expect(s.transport.close(grace: .seconds(5)))
        #expect(server.requests.isEmpty)
    }

    /// `close` ends `flush`'s wait for a retry delay at once; the flush returns `.closed`.
    @Test func closeEndsAFlushWaitingForARetry() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.respond(status: 503))
        let s = try setup("close-flush", dsn: server.dsn) { $0.initialRetryDelay = .seconds(30) }
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.outbox.enqueue(eventEnvelope())
        final class Box: @unchecked Sendable { var result: SendPassResult? }
        let box = Box()
        let finished = DispatchSemaphore(value: 0)
        // The retry delay is 15–30 s after the 503: a flush of 60 s waits for it.
        Thread.detachNewThread {
            box.result = s.transport.flush(timeout: .seconds(60))
            finished.signal()
        }
        let deadline = Date().addingTimeInterval(20)
        while s.transport.state.nextAttempt == nil && Date() < deadline { usleep(5_000) }
        try #require(server.requests.count == 1)
        #expect(s.transport.close(grace: .seconds(10)))
        #expect(finished.wait(timeout: .now() + 10) == .success)
        #expect(box.result?.stop == .closed)
        #expect(server.requests.count == 1)
        #expect(s.outbox.pending().count == 1)
    }

    /// submit stores, then sends in the background.
    @Test func submitSendsInTheBackground() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let s = try setup("submit", dsn: server.dsn)
        defer { try? FileManager.default.removeItem(atPath: s.directory) }
        try s.transport.submit(eventEnvelope())
        let deadline = Date().addingTimeInterval(20)
        while !s.outbox.pending().isEmpty && Date() < deadline { usleep(20_000) }
        #expect(s.outbox.pending().isEmpty)
        #expect(server.requests.count == 1)
    }
}

@Suite struct RateLimitParsingTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func groupsCategoriesAndScopes() {
        var limits = RateLimits()
        limits.update(status: 200, retryAfter: nil, sentryRateLimits: "60:error;default:organization, 2700::key:quota:custom, bad, -1:session:key", now: now)
        #expect(limits.limitedUntil("error", now: now) == now.addingTimeInterval(2700))
        #expect(limits.limitedUntil("session", now: now) == now.addingTimeInterval(2700))
        #expect(limits.deadlines["error"] == now.addingTimeInterval(60))
        #expect(limits.deadlines[""] == now.addingTimeInterval(2700))
        #expect(limits.deadlines["session"] == nil)
    }

    @Test func retryAfterForms() {
        #expect(RateLimits.retryAfterSeconds("30", now: now) == 30)
        #expect(RateLimits.retryAfterSeconds("1.5", now: now) == 1.5)
        #expect(RateLimits.retryAfterSeconds("Fri, 15 Jan 2027 08:10:00 GMT", now: now) == 600)  // now is 08:00:00 that day
        #expect(RateLimits.retryAfterSeconds("Thu, 01 Jan 1970 00:00:00 GMT", now: now) == 0)
        #expect(RateLimits.retryAfterSeconds("soon", now: now) == nil)
        #expect(RateLimits.retryAfterSeconds("-5", now: now) == nil)
        var limits = RateLimits()
        limits.update(status: 429, retryAfter: nil, sentryRateLimits: nil, now: now)
        #expect(limits.limitedUntil("error", now: now) == now.addingTimeInterval(RateLimits.defaultRetryAfter))
        var unlimited = RateLimits()
        unlimited.update(status: 500, retryAfter: "30", sentryRateLimits: nil, now: now)
        #expect(unlimited.deadlines.isEmpty)
    }

    @Test func deadlinesOnlyMoveLaterAndExpire() {
        var limits = RateLimits()
        limits.update(status: 429, retryAfter: "100", sentryRateLimits: nil, now: now)
        limits.update(status: 429, retryAfter: "10", sentryRateLimits: nil, now: now)
        #expect(limits.limitedUntil("error", now: now) == now.addingTimeInterval(100))
        #expect(!limits.isLimited("error", now: now.addingTimeInterval(101)))
    }

    @Test func categoriesOfItemTypes() {
        #expect(DataCategory.of(itemType: "event") == "error")
        #expect(DataCategory.of(itemType: "session") == "session")
        #expect(DataCategory.of(itemType: "sessions") == "session")
        #expect(DataCategory.of(itemType: "client_report") == "internal")
        #expect(DataCategory.of(itemType: "attachment") == "attachment")
        #expect(DataCategory.of(itemType: "something_new") == "default")
    }

    @Test func gzipRoundTripAndDamageIsDetected() throws {
        let text = Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 * 7 % 251) })
        let compressed = try Gzip.compress(text)
        #expect(compressed.prefix(2) == Data([0x1f, 0x8b]))
        #expect(Gzip.decompress(compressed) == text)
        var damaged = compressed
        damaged[damaged.count - 6] ^= 0xff  // inside the CRC-32
        #expect(Gzip.decompress(damaged) == nil)
        #expect(Gzip.decompress(compressed.prefix(compressed.count - 3)) == nil)
    }
}
