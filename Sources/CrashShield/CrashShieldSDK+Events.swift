import CrashShieldBase
import CrashShieldGuards
import CrashShieldRecording
import CrashShieldSentry
import CrashShieldProtocol
internal import _CrashShieldIncidents

/// Events the app sends itself, through the same outbox, rate limits, `beforeSend` and scope as
/// crashes and incidents. Each needs reporting (`CrashShieldOptions.reporting`) started: without
/// it, or after `stop`/`close`, nothing is sent and the functions return nil / false.
extension CrashShieldSDK {
    /// Sends `error` as a handled event: one exception whose type is the error's type name and
    /// whose value is its description, mechanism `generic` (handled), the caller's stack, and the
    /// app's scope as it is now. Returns the event id, or nil when reporting is not running.
    /// Converted and stored on the reporting queue: `beforeSend` may still drop it.
    @inline(never) @discardableResult
    public static func capture(error: any Error, level: SentryEvent.Level = .error) -> String? {
        let raw = UnsafeMutablePointer<UInt>.allocate(capacity: frameCapacity)
        defer { raw.deallocate() }
        let count = cs_caller_frames(raw, frameCapacity, 0) // called from here: starts at this function's caller
        return submit(.error(type: String(reflecting: type(of: error)), description: String(describing: error)), level: level,
                      frames: frames(raw, count))
    }

    /// Sends `message` as an event of `level` (a `logentry`), with the caller's stack as the
    /// thread's and the app's scope as it is now. Returns the event id, or nil when reporting is
    /// not running.
    @inline(never) @discardableResult
    public static func capture(message: String, level: SentryEvent.Level = .info) -> String? {
        let raw = UnsafeMutablePointer<UInt>.allocate(capacity: frameCapacity)
        defer { raw.deallocate() }
        let count = cs_caller_frames(raw, frameCapacity, 0) // called from here: starts at this function's caller
        return submit(.message(message), level: level, frames: frames(raw, count))
    }

    /// Waits until every event submitted so far is stored, then sends what is pending, for at
    /// most `timeout` in all. True when everything was sent in time; false otherwise (what was not
    /// sent stays in the outbox for a later send or the next launch), or when reporting is not
    /// running.
    @discardableResult
    public static func flush(timeout: Duration = .seconds(2)) -> Bool {
        ReportingClient.current?.flush(timeout: timeout) ?? false
    }

    /// Ends reporting for this process as `stop` does (the session's `exited` update, what is
    /// pending sent within `ReportingOptions.exitFlushTimeout`); guards and capture keep running.
    /// Later `capture` calls send nothing.
    package static func close() {
        ReportingClient.current?.end()
    }

    private static let frameCapacity = Int(CS_INCIDENT_MAX_FRAMES)

    /// The `count` return addresses at `raw` with their images.
    private static func frames(_ raw: UnsafeMutablePointer<UInt>, _ count: Int) -> [IncidentRecord.Frame] {
        UnsafeBufferPointer(start: raw, count: count).map { address in
            let frame = Incident.Frame(address: address)
            return IncidentRecord.Frame(address: UInt64(address), imagePath: frame.imagePath,
                                        imageOffset: frame.imageOffset.map(UInt64.init))
        }
    }

    private static func submit(_ handled: IncidentEventConverter.Handled, level: SentryEvent.Level,
                               frames: [IncidentRecord.Frame]) -> String? {
        ReportingClient.current?.submitHandled(handled, level: level, frames: frames, threadID: cs_current_thread_id(),
                                               isMainThread: cs_is_main_thread())
    }
}
