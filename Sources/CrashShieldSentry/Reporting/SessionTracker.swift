import CrashShieldBase
import CrashShieldRecording
import CrashShieldProtocol
import Foundation

/// One release-health session per launch, kept in the report directory (`session.json`) so the
/// next start knows how the previous one ended.
///
/// The state machine:
/// - `begin` (every start) reads the previous launch's session. If that one never reached a
///   final state (no `end` and no crash recorded), it is returned as `previous` for the caller
///   to close: `crashed` when a crash report of that launch is pending (`closePrevious(crash:)`
///   with the report; the update goes into the crash event's envelope), `abnormal` otherwise
///   (`kill -9`, power loss). Then a new session with status `ok` is stored.
/// - `initialUpdate()` is the new session's first update (`init: true`, status `ok`).
/// - `recordError()` counts a handled error (an incident event) in the session.
/// - `end(.exited)` on a clean exit gives the final update and stores the final state; later
///   calls return nil (final states are final).
///
/// Every state change is written to the file before the update is returned (temporary file,
/// fsync, rename), so a crash right after loses no state. Thread-safe.
// @unchecked Sendable: `state`, `previousState` and `previous` are written only under `lock`
package final class SessionTracker: @unchecked Sendable {
    static let fileName = "session.json"

    /// What `session.json` holds.
    struct State: Codable, Equatable {
        var sid: String
        var did: String?
        var startedNs: UInt64
        var status: SessionUpdate.Status
        var errors: Int
        var release: String
        var environment: String?
        /// The launch id of launch protection, when known (matches a crash report to its launch).
        var launchID: String?
        /// True once an update with `init: true` was handed out for this session.
        var initSent: Bool
        var endedNs: UInt64?
    }

    private let lock = Locked()
    private let path: String
    private var state: State
    /// The previous launch's session when it ended neither cleanly nor with a recorded crash;
    /// nil after `closePrevious`.
    package private(set) var previous: SessionUpdate?
    private var previousState: State?

    /// Starts this launch's session. Create one per launch: a second tracker for the same
    /// directory in the same process would take the first one's running session for a vanished run.
    /// - Parameters:
    ///   - directory: the report directory (created when missing).
    ///   - release, environment: the session's attributes (`release` is required by servers).
    ///   - installationID: `did`, the installation (`InstallationID.load`).
    ///   - launchID: launch protection's id for this launch, if any.
    ///   - now: the session's start (tests pass a fixed time).
    ///   - sessionID: nil: a random UUID (tests pass a fixed one).
    /// - Throws: `SessionTrackerError` (`session.write`) when the state cannot be stored.
    package init(directory: String, release: String, environment: String?, installationID: String?, launchID: String? = nil,
                now: Date = Date(), sessionID: String? = nil) throws(SessionTrackerError) {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        path = (directory as NSString).appendingPathComponent(Self.fileName)
        if let data = FileManager.default.contents(atPath: path), let old = try? JSONDecoder().decode(State.self, from: data),
           old.status == .ok {
            previousState = old
            previous = Self.update(old, isInitial: !old.initSent, timestampNs: old.startedNs, duration: nil)
        }
        state = State(sid: sessionID ?? UUID().uuidString.lowercased(), did: installationID, startedNs: Self.ns(now), status: .ok,
                      errors: 0, release: release, environment: environment, launchID: launchID, initSent: false, endedNs: nil)
        try store(state)
    }

    /// The current session's last known update (status `ok` until it ends).
    package var current: SessionUpdate {
        lock.lock()
        defer { lock.unlock() }
        return Self.update(state, isInitial: !state.initSent, timestampNs: state.endedNs ?? state.startedNs,
                           duration: state.endedNs.map { Double($0 - min($0, state.startedNs)) / 1e9 })
    }

    /// The first update of this session (`init: true`, status `ok`), for a session envelope at
    /// start. Nil when it was already handed out or the session has ended.
    package func initialUpdate() -> SessionUpdate? {
        lock.lock()
        defer { lock.unlock() }
        guard !state.initSent, state.status == .ok else { return nil }
        var next = state
        next.initSent = true
        guard (try? store(next)) != nil else { return nil }
        state = next
        return Self.update(state, isInitial: true, timestampNs: state.startedNs, duration: nil)
    }

    /// Counts one handled error (an incident event that was sent) in this session.
    package func recordError() {
        lock.lock()
        defer { lock.unlock() }
        guard state.status == .ok else { return }
        var next = state
        next.errors += 1
        if (try? store(next)) != nil { state = next }
    }

    /// Ends this session with `status` (`.exited` on a clean exit) at `now`, stores it, and
    /// returns the final update. Nil when the session already ended or `status` is `.ok`.
    package func end(_ status: SessionUpdate.Status = .exited, now: Date = Date()) -> SessionUpdate? {
        lock.lock()
        defer { lock.unlock() }
        guard status.isFinal, state.status == .ok else { return nil }
        var next = state
        next.status = status
        next.endedNs = max(Self.ns(now), state.startedNs)
        if status == .crashed { next.errors += 1 }
        next.initSent = true
        guard (try? store(next)) != nil else { return nil }
        let isInitial = !state.initSent
        state = next
        let end = next.endedNs ?? next.startedNs
        return Self.update(next, isInitial: isInitial, timestampNs: end, duration: Double(end - next.startedNs) / 1e9)
    }

    /// True when `report` belongs to the previous launch's unfinished session: the same launch id
    /// when both are known, otherwise a crash at or after that session's start.
    package func reportBelongsToPrevious(_ report: CrashReport) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let old = previousState else { return false }
        if let launch = old.launchID, let reportLaunch = report.launchId { return launch == reportLaunch }
        guard let time = report.timestampNs else { return false }
        return time >= old.startedNs && time <= state.startedNs
    }

    /// Closes the previous launch's unfinished session: `crashed` at the crash's time when
    /// `crash` is its report; `crashed` at an unknown time (the session's start, no duration)
    /// when `crashedWithoutReport` (launch protection's `lastRun.reportLost`: the handler could
    /// not write a report); `abnormal` otherwise. Returns the final update once; nil when there
    /// is no unfinished previous session or it was already closed.
    package func closePrevious(crash: CrashReport?, crashedWithoutReport: Bool = false) -> SessionUpdate? {
        let belongs = crash.map(reportBelongsToPrevious) ?? false
        lock.lock()
        defer { lock.unlock() }
        guard let old = previousState else { return nil }
        previousState = nil
        previous = nil
        if belongs, let crashNs = crash?.timestampNs {
            var closed = old
            closed.status = .crashed
            closed.errors += 1
            let end = max(crashNs, old.startedNs)
            return Self.update(closed, isInitial: !old.initSent, timestampNs: end, duration: Double(end - old.startedNs) / 1e9)
        }
        var closed = old
        closed.status = crashedWithoutReport ? .crashed : .abnormal
        if crashedWithoutReport { closed.errors += 1 }
        return Self.update(closed, isInitial: !old.initSent, timestampNs: old.startedNs, duration: nil)
    }

    /// The one update of a launch that crashed before its session was stored (a crash right at
    /// launch beats the session's first write, which happens off the start's thread): `init: true`
    /// and `crashed` at once, started at the crash time minus the report's uptime, with this
    /// tracker's release, environment and installation. Nil without the crash's time.
    package func crashedUpdate(unrecordedLaunchOf report: CrashReport) -> SessionUpdate? {
        guard let crashNs = report.timestampNs else { return nil }
        lock.lock()
        let current = state
        lock.unlock()
        let startedNs = crashNs - min(crashNs, report.uptimeNs ?? 0)
        // A stable sid (the same report gives the same session if it is converted again), UUID-shaped.
        let hex = Array(SentryID.derived(from: "crashshield.unrecorded-session:" + report.id).lowercased())
        let sid = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(hex[$0]) }.joined(separator: "-")
        let crashed = State(sid: sid, did: current.did,
                            startedNs: startedNs, status: .crashed, errors: 1, release: current.release,
                            environment: current.environment, launchID: report.launchId, initSent: false, endedNs: crashNs)
        return Self.update(crashed, isInitial: true, timestampNs: crashNs, duration: Double(crashNs - startedNs) / 1e9)
    }

    static func update(_ state: State, isInitial: Bool, timestampNs: UInt64, duration: Double?) -> SessionUpdate {
        SessionUpdate(sid: state.sid, did: state.did, isInitial: isInitial,
                      started: SentryTimestamp.rfc3339(nanosecondsSince1970: state.startedNs),
                      timestamp: SentryTimestamp.rfc3339(nanosecondsSince1970: timestampNs), status: state.status,
                      errors: state.errors, duration: duration.map { ($0 * 1000).rounded() / 1000 },
                      attrs: SessionUpdate.Attributes(release: state.release, environment: state.environment))
    }

    static func ns(_ date: Date) -> UInt64 { UInt64(max(0, date.timeIntervalSince1970) * 1_000_000) * 1_000 }

    /// Writes `state` atomically: temporary file, fsync, rename.
    private func store(_ state: State) throws(SessionTrackerError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(state) else {
            throw SessionTrackerError(code: "session.write", message: "cannot encode the session state")
        }
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SessionTrackerError(code: "session.write", message: "cannot create \(temporary) (errno \(errno))") }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == data.count, synced, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw SessionTrackerError(code: "session.write", message: "cannot store \(path) (errno \(errno))")
        }
    }
}

/// The session state could not be stored. `code` is stable.
package struct SessionTrackerError: CodedError {
    /// `session.write`.
    package let code: String
    package let message: String
}
