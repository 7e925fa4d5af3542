import CrashShieldBase
import CrashShieldRecording
import CrashShieldProtocol
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Why one HTTP exchange failed before a response arrived: a stable `code` and a `message`.
package struct TransportError: CodedError {
    /// The kind of error; `rawValue` is a stable string (the Swift name, e.g. "timedOut").
    package struct Code: StableErrorCode {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }

        /// No complete response within the request timeout (or what was left of a flush's).
        package static let timedOut = Code(rawValue: "timedOut")
        /// No response: connection refused or reset, DNS, TLS, or the connection closed early.
        package static let networkFailure = Code(rawValue: "networkFailure")
        /// The client was cancelled (`EnvelopeHTTPClient.cancelAll`, called by
        /// `EnvelopeTransport.close`) before or while the request ran; not a failure of the server.
        package static let cancelled = Code(rawValue: "cancelled")
    }

    /// The kind of error (stable).
    package let code: Code
    /// What went wrong, for people; the wording may change between versions.
    package let message: String

    /// An error of `code` with `message`.
    package init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// No complete response within the request timeout.
    package static let timedOut = TransportError(code: .timedOut, message: "no response within the request timeout")
    /// No response (refused, reset, closed early, DNS, TLS).
    package static let networkFailure = TransportError(code: .networkFailure, message: "no response")
    /// The client was cancelled before or while the request ran.
    package static let cancelled = TransportError(code: .cancelled, message: "the transport was closed")
}

/// A response's status and headers (names lowercased).
package struct HTTPResponse: Sendable, Hashable {
    /// The status code (200, 413, 429, ...).
    package let status: Int
    /// Header values by lowercased name.
    package let headers: [String: String]
    /// A response; header names are lowercased (the first of names that differ only in case wins).
    package init(status: Int, headers: [String: String]) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
    }
}

/// Sends one HTTP POST and waits for its response; called on the transport's own queue, one
/// request at a time. `URLSessionEnvelopeClient` is the default; the test seams supply others
/// (the protocol is not public: an app cannot supply a client).
///
/// The end-of-process contract: `cancelAll` has no default, so every client states how its
/// request in flight ends when the transport is closed. A client that cannot cancel (its
/// `cancelAll` does nothing) keeps the transport's thread until its own request timeout, but
/// what such a request returns after `EnvelopeTransport.close` changes nothing: the transport
/// neither removes nor rewrites the envelope (it stays for the next launch) nor records
/// failures or limits, and starts no further request.
package protocol EnvelopeHTTPClient: Sendable {
    /// POSTs `body` with `headers` to `url` and returns the response (any status), or throws
    /// `TransportError` when none arrived within `timeout`.
    func post(_ url: URL, headers: [String: String], body: Data, timeout: Duration) throws(TransportError) -> HTTPResponse

    /// Ends the request in progress, if any, and every later one, at once with
    /// `TransportError.cancelled`, from any thread. Idempotent; a cancelled client stays
    /// cancelled. After it returns, `post` makes no new request, and a `post` that is running
    /// returns as soon as the request is torn down. No default (see the protocol).
    func cancelAll()
}

/// A cancel switch for URLSession work that runs one task at a time (the envelope client's
/// requests, the remote-configuration fetch): after `cancel`, the owner creates no session or
/// task, and the registered task is cancelled. Thread-safe; `cancel` is idempotent and final.
package final class URLTaskCancellation: Sendable {
    private let state = Locked((cancelled: false, task: URLSessionTask?.none))

    package init() {}

    /// True once `cancel` was called.
    package var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Cancels the registered task, if any, and every later one.
    package func cancel() {
        let running = state.withLock { state in
            state.cancelled = true
            return state.task
        }
        running?.cancel()
    }

    /// `task` is the one running now; it is cancelled at once when `cancel` came first.
    package func register(_ task: URLSessionTask) {
        let cancelNow = state.withLock { state in
            state.task = task
            return state.cancelled
        }
        if cancelNow { task.cancel() }
    }

    /// The registered task has completed.
    package func unregister() { state.withLock { $0.task = nil } }
}

/// `EnvelopeHTTPClient` over URLSession (FoundationNetworking on Linux): http and https, an
/// ephemeral session (no cookies, no cache). The session is created by `init` (never lazily by a
/// request: a request can run on a background thread while the process exits, and URLSession's
/// initialiser crashes on a half torn-down process). `cancelAll` cancels the task in flight and
/// waits for URLSession to hand it back before `post` returns, so after a cancelled `post`
/// returned, no task of this client is running.
// @unchecked Sendable: only immutable properties (URLSession is thread-safe)
package final class URLSessionEnvelopeClient: EnvelopeHTTPClient, @unchecked Sendable {
    private let session: URLSession
    /// Set by `cancelAll`; holds the task `post` waits for (one request at a time).
    private let cancellation = URLTaskCancellation()

    /// A client with its own ephemeral session (one connection per host).
    package init() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 1
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        session = URLSession(configuration: configuration)
    }

    deinit { session.finishTasksAndInvalidate() }

    // @unchecked Sendable: written by the task's completion before it signals `finished`, read after
    private final class Outcome: @unchecked Sendable {
        var result: Result<HTTPResponse, TransportError>?
    }

    /// POSTs with URLSession; bounded by `timeout` plus one second even if URLSession's own
    /// timeout does not fire. Throws `timedOut`, `networkFailure`, or `cancelled` (after
    /// `cancelAll`: no request is made, or the running one is cancelled).
    package func post(_ url: URL, headers: [String: String], body: Data, timeout: Duration) throws(TransportError) -> HTTPResponse {
        let seconds = max(0.05, timeout.seconds)
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: seconds)
        request.httpMethod = "POST"
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        let outcome = Outcome()
        let finished = DispatchSemaphore(value: 0)
        let task = session.dataTask(with: request) { _, response, error in
            if let http = response as? HTTPURLResponse {
                var fields: [String: String] = [:]
                for (key, value) in http.allHeaderFields { fields[String(describing: key).lowercased()] = String(describing: value) }
                outcome.result = .success(HTTPResponse(status: http.statusCode, headers: fields))
            } else {
                let urlError = error as? URLError
                let code: TransportError.Code = urlError?.code == .timedOut ? .timedOut : .networkFailure
                outcome.result = .failure(TransportError(code: code, message: error.map { "\($0.localizedDescription)" } ?? "no response"))
            }
            finished.signal()
        }
        if cancellation.isCancelled { throw TransportError.cancelled }
        cancellation.register(task)
        defer { cancellation.unregister() }
        task.resume()
        // URLSession's own timeout normally fires first; this bound holds even if it does not.
        if finished.wait(timeout: .now() + seconds + 1) == .timedOut {
            task.cancel()
            throw TransportError(code: .timedOut, message: "no response within \(seconds) s")
        }
        if cancellation.isCancelled, case .failure = outcome.result { throw TransportError.cancelled }
        switch outcome.result {
        case .success(let response): return response
        case .failure(let error): throw error
        case nil: throw TransportError.networkFailure
        }
    }

    /// Cancels the task in flight (URLSession then completes it with an error, which `post`
    /// reports as `cancelled`) and makes every later `post` throw `cancelled` without a request.
    package func cancelAll() { cancellation.cancel() }
}

/// Settings of `EnvelopeTransport`.
package struct TransportOptions: Sendable {
    /// `sentry_client` and `User-Agent`. Default "crashshield.swift/0.1.0".
    package var client: String = "crashshield.swift/0.1.0"
    /// Longest wait for one response. Default 15 s.
    package var requestTimeout: Duration = .seconds(15)
    /// Wait after the first failed attempt (network error, timeout, 5xx, 408); doubled after each
    /// further consecutive failure up to `maximumRetryDelay`, each wait multiplied by a random
    /// factor in 0.5...1 (jitter). Default 2 s.
    package var initialRetryDelay: Duration = .seconds(2)
    /// The longest wait between attempts before jitter. Default 5 min.
    package var maximumRetryDelay: Duration = .seconds(300)
    /// Consecutive failed attempts after which this process stops sending; the envelopes stay in
    /// the outbox for the next launch. Default 6.
    package var maximumAttempts: Int = 6
    /// gzip request bodies (`Content-Encoding: gzip`). Default true.
    package var compress: Bool = true

    /// The defaults above.
    package init() {}
}

/// What happened to one outbox entry during a send pass.
package struct EntryOutcome: Sendable, Hashable {
    /// What happened.
    package enum Kind: Sendable, Hashable {
        /// 2xx: removed from the outbox.
        case delivered
        /// Removed without being delivered; `reason` is the client-report reason
        /// (`send_error` for 413 and other 4xx, `ratelimit_backoff`, `internal_sdk_error` for an unreadable file).
        case dropped(reason: String)
        /// Kept in the outbox for a later attempt (`reason` says why: the HTTP status, or a
        /// `TransportError` code such as "timedOut" or "networkFailure").
        case kept(reason: String)
    }
    /// The entry's file name (`Outbox.Entry.name`).
    package let entry: String
    /// What happened to it.
    package let kind: Kind
    /// The HTTP status, when a response arrived.
    package let status: Int?
    /// Items removed from the envelope before sending because their category was rate limited.
    package let itemsDroppedForRateLimits: Int
}

/// The result of `EnvelopeTransport.sendPending` or `flush`.
package struct SendPassResult: Sendable {
    /// Why the pass stopped before looking at every entry; nil when it went through them all.
    package enum Stop: Sendable, Hashable {
        /// A failed attempt: no sending before `until` (a new pass before then stops at once).
        case retryAfter(until: Date)
        /// `maximumAttempts` consecutive failures: nothing more is sent by this process.
        case gaveUp
        /// Another transport (this process or another) is sending from the same outbox.
        case busy
        /// The pass's deadline passed.
        case deadline
        /// The transport was closed (`EnvelopeTransport.close`): what was not sent stays in the
        /// outbox for the next launch.
        case closed
    }
    /// One outcome per entry the pass looked at, oldest first.
    package var outcomes: [EntryOutcome] = []
    /// Why the pass stopped early; nil when it looked at every entry.
    package var stop: Stop?
    /// Entries left in the outbox when the pass ended.
    package var remaining: Int = 0
}

/// Sends the envelopes of an `Outbox` to a Sentry-compatible server (`POST <dsn.envelopeURL>`).
///
/// - One request at a time, on the transport's own serial queue (never the caller's), and across
///   processes one sender per outbox (a `flock` on `<outbox>/.send-lock`).
/// - Oldest envelope first. Each is sent with `sent_at` set to the send time, `X-Sentry-Auth`,
///   `User-Agent`, `Content-Type: application/x-sentry-envelope` and, by default, a gzip body.
/// - Responses: 2xx → delivered and removed. 413 → removed, counted `send_error`. 429 → the
///   limits of `Retry-After` (seconds or an HTTP date; 60 s when absent) or
///   `X-Sentry-Rate-Limits` (per category, which wins when present, and is honoured on any
///   status) are stored in `<outbox>/ratelimits.json` and honoured across launches: items of a
///   limited category are removed from envelopes before sending and counted
///   `ratelimit_backoff` (an envelope left with no item is removed). 408 and 5xx, network errors
///   and timeouts → kept, retried after an exponential, jittered, bounded delay, and after
///   `maximumAttempts` consecutive failures left for the next launch. Any other status → removed,
///   counted `send_error`.
/// - Discard counts (`Outbox.pendingDiscards`) ride along as a `client_report` item and are
///   forgotten once an envelope carrying them is accepted.
/// - `close(grace:)` ends sending for good (reporting's end at exit and at `stop`): no pass
///   starts afterwards, a running pass stops before its next request and its request in flight
///   is cancelled, and `close` waits (at most `grace`) until the pass returned, so no thread of
///   the transport touches the outbox, the HTTP client or Foundation while the process exits.
///   An envelope is removed from the outbox only after its response arrived, so what was not
///   sent stays on disk for the next launch (an envelope whose request was cancelled may have
///   reached the server: it is sent again with the same event id, and the server keeps one).
// @unchecked Sendable: state under `lock`, `runningPasses` under `closing`; sends under `sendLock`
package final class EnvelopeTransport: @unchecked Sendable {
    /// Where envelopes go (`dsn.envelopeURL`) and the key they are sent with.
    package let dsn: DSN
    /// The envelopes waiting to be sent.
    package let outbox: Outbox
    /// Timeouts, retry delays, compression, client name.
    package let options: TransportOptions
    private let client: any EnvelopeHTTPClient
    private let queue = DispatchQueue(label: "crashshield.transport", qos: .utility)
    private let sendLock: FileLock
    private let rateLimitStore: RateLimitStore

    private let lock = Locked()
    private var limits: RateLimits
    private var consecutiveFailures = 0
    private var nextAttempt: Date?
    private var gaveUp = false
    /// The background pass waiting to run (`scheduleBackgroundPass`); cancelled by `close`.
    private var scheduledPass: DispatchWorkItem?
    /// Set once by `close`: no pass starts, a running one stops before its next request.
    private var closed = false
    /// Passes inside `runPass` now (0 or 1: passes run on `queue`); guarded by `closing`, which
    /// `runPass` signals when one ends. `close` waits on it, so its answer is whether a pass runs,
    /// not how soon `queue` gets to a block.
    private var runningPasses = 0
    /// Wakes `flush`'s wait for a retry delay when the transport is closed, and `close`'s wait
    /// when a pass ends.
    private let closing = NSCondition()

    /// - Parameter httpClient: how requests are made; nil uses `URLSessionEnvelopeClient`.
    package init(dsn: DSN, outbox: Outbox, options: TransportOptions = TransportOptions(),
                httpClient: (any EnvelopeHTTPClient)? = nil) {
        self.dsn = dsn
        self.outbox = outbox
        self.options = options
        self.client = httpClient ?? URLSessionEnvelopeClient()
        self.sendLock = FileLock(path: outbox.directory + "/.send-lock")
        self.rateLimitStore = RateLimitStore(path: outbox.directory + "/ratelimits.json")
        self.limits = rateLimitStore.load()
    }

    /// A snapshot of the transport's state.
    package struct State: Sendable {
        /// Envelopes in the outbox.
        package let pending: Int
        /// No attempt before this time (set after a failed attempt); nil when sending may happen now.
        package let nextAttempt: Date?
        /// Failed attempts in a row (reset by any response other than 408 and 5xx).
        package let consecutiveFailures: Int
        /// True after `maximumAttempts` consecutive failures: this process sends nothing more.
        package let gaveUp: Bool
        /// The rate limits in force (also those stored by an earlier launch).
        package let rateLimits: RateLimits
    }

    /// The transport's state now.
    package var state: State {
        lock.lock()
        defer { lock.unlock() }
        return State(pending: outbox.pending().count, nextAttempt: nextAttempt, consecutiveFailures: consecutiveFailures,
                     gaveUp: gaveUp, rateLimits: limits)
    }

    /// Stores `envelope` in the outbox (durably, on the caller's thread) and starts a background
    /// send pass (none after `close`: the envelope then waits for the next launch).
    /// - Throws: what `Outbox.enqueue` throws.
    package func submit(_ envelope: Envelope) throws(OutboxError) {
        try outbox.enqueue(envelope)
        scheduleBackgroundPass(after: 0)
    }

    /// Starts a background send pass of what the outbox holds (a no-op while one is scheduled,
    /// and after `close`).
    package func sendInBackground() { scheduleBackgroundPass(after: 0) }

    /// True once `close` was called.
    package var isClosed: Bool {
        lock.lock()
        defer { lock.unlock() }
        return closed
    }

    /// Ends sending for good, from any thread; idempotent. At once: later passes (background,
    /// `sendPending`, `flush`) do nothing and stop with `.closed`, a scheduled background pass or
    /// retry is cancelled, the HTTP client is cancelled (`EnvelopeHTTPClient.cancelAll`: the
    /// request in flight ends), and `flush`'s wait for a retry delay ends. Then waits at most
    /// `grace` until a pass that was running has returned (it stops before its next request and
    /// records nothing for the cancelled one but "kept").
    ///
    /// Nothing is removed from the outbox by closing: what was not sent stays for the next
    /// launch. Submitting after `close` still stores the envelope durably.
    /// - Returns: true when no pass runs any more; false when one still ran after `grace` (an
    ///   HTTP client whose `cancelAll` cannot end its request, which has not timed out yet; what
    ///   that request returns later changes nothing).
    @discardableResult
    package func close(grace: Duration) -> Bool {
        lock.lock()
        closed = true
        let pending = scheduledPass
        scheduledPass = nil
        lock.unlock()
        pending?.cancel()
        client.cancelAll()
        // Wake `flush`'s wait for a retry delay, then wait for a pass still inside `runPass`.
        let deadline = Date().addingTimeInterval(Double(max(.zero, grace).nanoseconds) / 1e9)
        closing.lock()
        defer { closing.unlock() }
        closing.broadcast()
        while runningPasses > 0, closing.wait(until: deadline) {}
        return runningPasses == 0
    }

    /// Test seam: runs `work` on the transport's queue (asynchronously), as a pass would run, so a
    /// test can keep the queue busy without a pass.
    package func runOnQueueForTesting(_ work: @escaping @Sendable () -> Void) { queue.async(execute: work) }

    /// Sends what the outbox holds, on the transport's queue, and waits for it. Stops at the first
    /// failed attempt, and at once while a retry delay from an earlier failure runs.
    /// - Parameter progress: called after each entry, on the transport's queue.
    package func sendPending(progress: (@Sendable (EntryOutcome) -> Void)? = nil) -> SendPassResult {
        queue.sync { runPass(deadline: nil, progress: progress) }
    }

    /// Sends what the outbox holds and waits at most `timeout` (never call it from a `progress`
    /// callback, which runs on the transport's queue): for each entry, a request whose
    /// timeout is cut to what is left of `timeout`; a retry delay that ends before the deadline is
    /// waited out. Returns when the outbox is empty, a pass stopped for good, or the time is up
    /// (the pass then goes on in the background and stops at the deadline). Meant for the start
    /// after a crash at launch, so the crash is heard even if the app dies again.
    @discardableResult
    package func flush(timeout: Duration) -> SendPassResult {
        let deadline = ContinuousClock.now + timeout
        let finished = DispatchSemaphore(value: 0)
        // @unchecked Sendable: written by the queue before it signals `finished`, read only after `finished`
        final class Box: @unchecked Sendable { var result = SendPassResult() }
        let box = Box()
        queue.async { [self] in
            var combined = SendPassResult()
            while true {
                let pass = runPass(deadline: deadline, progress: nil)
                combined.outcomes += pass.outcomes
                combined.stop = pass.stop
                combined.remaining = pass.remaining
                guard case .retryAfter(let until) = pass.stop, pass.remaining > 0 else { break }
                let wait = until.timeIntervalSinceNow
                let left = deadline - ContinuousClock.now
                guard wait < left.seconds else { break }
                if wait > 0 { waitUnlessClosed(until: Date().addingTimeInterval(min(wait, 3600))) }
            }
            box.result = combined
            finished.signal()
        }
        if finished.wait(timeout: .now() + .nanoseconds(Int(max(0, timeout.nanoseconds)))) == .timedOut {
            return SendPassResult(outcomes: [], stop: .deadline, remaining: outbox.pending().count)
        }
        return box.result
    }

    /// Waits until `date` or until the transport is closed, whichever comes first.
    private func waitUnlessClosed(until date: Date) {
        closing.lock()
        defer { closing.unlock() }
        while !isClosed, Date() < date {
            _ = closing.wait(until: date)
        }
    }

    private func scheduleBackgroundPass(after delay: TimeInterval) {
        lock.lock()
        if scheduledPass != nil || gaveUp || closed {
            lock.unlock()
            return
        }
        let item = DispatchWorkItem { [self] in
            lock.lock()
            scheduledPass = nil
            lock.unlock()
            let result = runPass(deadline: nil, progress: nil)
            switch result.stop {
            case .retryAfter(let until): scheduleBackgroundPass(after: until.timeIntervalSinceNow)
            case .busy: scheduleBackgroundPass(after: 5)
            case .gaveUp, .deadline, .closed, nil: break
            }
        }
        scheduledPass = item
        lock.unlock()
        queue.asyncAfter(deadline: .now() + .milliseconds(Int(max(0, delay) * 1000)), execute: item)
    }

    // MARK: One pass (on `queue`)

    private func runPass(deadline: ContinuousClock.Instant?, progress: (@Sendable (EntryOutcome) -> Void)?) -> SendPassResult {
        closing.lock()
        runningPasses += 1
        closing.unlock()
        defer {
            closing.lock()
            runningPasses -= 1
            closing.broadcast()
            closing.unlock()
        }
        var result = sendEntries(deadline: deadline, progress: progress)
        result.remaining = outbox.pending().count
        return result
    }

    private func sendEntries(deadline: ContinuousClock.Instant?, progress: (@Sendable (EntryOutcome) -> Void)?) -> SendPassResult {
        var result = SendPassResult()
        lock.lock()
        let blockedUntil = nextAttempt.flatMap { $0 > Date() ? $0 : nil }
        let stopped = gaveUp
        let wasClosed = closed
        lock.unlock()
        if wasClosed {
            result.stop = .closed
            return result
        }
        if stopped {
            result.stop = .gaveUp
            return result
        }
        if let blockedUntil {
            result.stop = .retryAfter(until: blockedUntil)
            return result
        }
        guard sendLock.acquire(wait: false) else {
            result.stop = .busy
            return result
        }
        defer { sendLock.release() }

        let entries = outbox.pending()
        if entries.isEmpty {
            // Only discard counts to report: a client report on its own (not stored).
            let discards = outbox.pendingDiscards()
            if !discards.isEmpty && !currentLimits().isLimited("internal") {
                let envelope = Envelope(header: [:], items: [Outbox.clientReportItem(discards)])
                result.stop = sendStandaloneClientReport(envelope, discards, deadline: deadline)
            }
            return result
        }
        for entry in entries {
            if isClosed {
                result.stop = .closed
                return result
            }
            if let deadline, ContinuousClock.now >= deadline {
                result.stop = .deadline
                return result
            }
            let outcome = send(entry, deadline: deadline)
            result.outcomes.append(outcome.outcome)
            progress?(outcome.outcome)
            if let stop = outcome.stop {
                result.stop = stop
                return result
            }
        }
        return result
    }

    private func currentLimits() -> RateLimits {
        lock.lock()
        defer { lock.unlock() }
        return limits
    }

    /// Removes the items of limited categories; counts them `ratelimit_backoff`.
    private func filterLimited(_ envelope: Envelope) -> (Envelope, dropped: Int) {
        let limits = currentLimits()
        let now = Date()
        var kept = envelope
        var discarded: [(Outbox.DiscardKey, Int)] = []
        kept.items = envelope.items.filter { item in
            let category = DataCategory.of(itemType: item.type)
            guard limits.isLimited(category, now: now) else { return true }
            discarded.append((Outbox.DiscardKey(reason: "ratelimit_backoff", category: category), 1))
            return false
        }
        outbox.recordDiscards(discarded)
        return (kept, discarded.count)
    }

    private func send(_ original: Outbox.Entry, deadline: ContinuousClock.Instant?) -> (outcome: EntryOutcome, stop: SendPassResult.Stop?) {
        var entry = original
        guard let stored = try? outbox.load(entry) else {
            outbox.remove(entry)
            outbox.recordDiscards([(Outbox.DiscardKey(reason: "internal_sdk_error", category: "default"), 1)])
            return (EntryOutcome(entry: entry.name, kind: .dropped(reason: "internal_sdk_error"), status: nil, itemsDroppedForRateLimits: 0), nil)
        }
        let (envelope, droppedForLimits) = filterLimited(stored)
        if envelope.items.isEmpty {
            outbox.remove(entry)
            return (EntryOutcome(entry: entry.name, kind: .dropped(reason: "ratelimit_backoff"), status: nil,
                                 itemsDroppedForRateLimits: droppedForLimits), nil)
        }
        if droppedForLimits > 0, let replaced = try? outbox.replace(entry, with: envelope) { entry = replaced }

        let discards = outbox.pendingDiscards()
        var outgoing = envelope
        if !discards.isEmpty && !currentLimits().isLimited("internal") { outgoing.items.append(Outbox.clientReportItem(discards)) }
        let exchange = post(outgoing, deadline: deadline)
        if isClosed {
            // Closed while the request ran (a response that raced the cancel, or a client that
            // cannot cancel and returned after `close`'s grace, maybe during exit): the outbox,
            // the limits and the failure count stay as they are; the envelope is sent again by
            // the next launch with the same event id, which the server keeps once.
            return (EntryOutcome(entry: entry.name, kind: .kept(reason: TransportError.Code.cancelled.rawValue), status: nil,
                                 itemsDroppedForRateLimits: droppedForLimits), .closed)
        }
        switch exchange {
        case .failure(let error) where error.code == .cancelled:
            // Closed while the request ran: kept for the next launch, not counted as a failure.
            return (EntryOutcome(entry: entry.name, kind: .kept(reason: error.code.rawValue), status: nil,
                                 itemsDroppedForRateLimits: droppedForLimits), .closed)
        case .failure(let error):
            let stop = recordFailure()
            return (EntryOutcome(entry: entry.name, kind: .kept(reason: error.code.rawValue), status: nil,
                                 itemsDroppedForRateLimits: droppedForLimits), stop)
        case .success(let response):
            applyLimits(response)
            let carriedDiscards = outgoing.items.count > envelope.items.count ? discards : [:]
            switch response.status {
            case 200..<300:
                recordSuccess()
                outbox.remove(entry)
                outbox.subtractDiscards(carriedDiscards)
                return (EntryOutcome(entry: entry.name, kind: .delivered, status: response.status,
                                     itemsDroppedForRateLimits: droppedForLimits), nil)
            case 429:
                recordSuccess()  // the server answered: not a failure to back off from
                let (left, dropped) = filterLimited(envelope)
                if left.items.isEmpty {
                    outbox.remove(entry)
                    return (EntryOutcome(entry: entry.name, kind: .dropped(reason: "ratelimit_backoff"), status: 429,
                                         itemsDroppedForRateLimits: droppedForLimits + dropped), nil)
                }
                _ = try? outbox.replace(entry, with: left)
                return (EntryOutcome(entry: entry.name, kind: .kept(reason: "429"), status: 429,
                                     itemsDroppedForRateLimits: droppedForLimits + dropped), nil)
            case 408, 500...:
                let stop = recordFailure()
                return (EntryOutcome(entry: entry.name, kind: .kept(reason: "\(response.status)"), status: response.status,
                                     itemsDroppedForRateLimits: droppedForLimits), stop)
            default:
                // 413 (too large: retrying cannot help) and other client errors: dropped, counted.
                outbox.remove(entry)
                outbox.recordDiscards(envelope.items.map { (Outbox.DiscardKey(reason: "send_error", category: DataCategory.of(itemType: $0.type)), 1) })
                recordSuccess()
                return (EntryOutcome(entry: entry.name, kind: .dropped(reason: "send_error"), status: response.status,
                                     itemsDroppedForRateLimits: droppedForLimits), nil)
            }
        }
    }

    private func sendStandaloneClientReport(_ envelope: Envelope, _ discards: [Outbox.DiscardKey: Int],
                                            deadline: ContinuousClock.Instant?) -> SendPassResult.Stop? {
        let exchange = post(envelope, deadline: deadline)
        if isClosed { return .closed }  // as in `send`: nothing recorded after `close`
        switch exchange {
        case .failure(let error) where error.code == .cancelled: return .closed
        case .failure: return recordFailure()
        case .success(let response):
            applyLimits(response)
            if (200..<300).contains(response.status) {
                outbox.subtractDiscards(discards)
                recordSuccess()
            } else if response.status == 408 || response.status >= 500 {
                return recordFailure()
            }
            return nil
        }
    }

    private func post(_ envelope: Envelope, deadline: ContinuousClock.Instant?) -> Result<HTTPResponse, TransportError> {
        var outgoing = envelope
        outgoing.header["sent_at"] = .string(Self.rfc3339(Date()))
        var body = outgoing.serialized()
        var headers = [
            "X-Sentry-Auth": dsn.authHeader(client: options.client),
            "User-Agent": options.client,
            "Content-Type": "application/x-sentry-envelope",
        ]
        if options.compress, let compressed = try? Gzip.compress(body) {
            body = compressed
            headers["Content-Encoding"] = "gzip"
        }
        var timeout = options.requestTimeout
        if let deadline {
            let left = deadline - ContinuousClock.now
            if left <= .zero { return .failure(TransportError(code: .timedOut, message: "the flush deadline passed")) }
            timeout = min(timeout, left)
        }
        do {
            return .success(try client.post(dsn.envelopeURL, headers: headers, body: body, timeout: timeout))
        } catch {
            return .failure(error)
        }
    }

    private func applyLimits(_ response: HTTPResponse) {
        lock.lock()
        let before = limits
        limits.update(status: response.status, retryAfter: response.headers["retry-after"],
                      sentryRateLimits: response.headers["x-sentry-rate-limits"])
        let changed = limits != before
        let snapshot = limits
        lock.unlock()
        if changed { rateLimitStore.save(snapshot) }
    }

    private func recordSuccess() {
        lock.lock()
        consecutiveFailures = 0
        nextAttempt = nil
        lock.unlock()
    }

    /// Counts a failed attempt; returns how the pass stops.
    private func recordFailure() -> SendPassResult.Stop? {
        lock.lock()
        defer { lock.unlock() }
        consecutiveFailures += 1
        if consecutiveFailures >= options.maximumAttempts {
            gaveUp = true
            nextAttempt = nil
            return .gaveUp
        }
        let initial = options.initialRetryDelay.seconds
        let delay = min(options.maximumRetryDelay.seconds, initial * pow(2, Double(consecutiveFailures - 1)))
        let until = Date().addingTimeInterval(delay * Double.random(in: 0.5...1.0))
        nextAttempt = until
        return .retryAfter(until: until)
    }

    static func rfc3339(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }
}
