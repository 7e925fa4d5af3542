import CrashShieldBase
import Foundation
package import _CrashShieldCapture

/// A hang of the watched thread (the thread that called the start: the main thread of an app),
/// as the app-hang watchdog sampled it (`csc_hang.h`), with the process's other threads.
package struct AppHang: Sendable {
    /// The watched thread's return addresses, innermost first (frame 0: where it was).
    package var frames: [IncidentRecord.Frame]
    /// False when the stack could not be taken (no free signal on Linux, the thread did not
    /// answer the sampling signal in time): the event says so and has no stack.
    package var sampled: Bool
    package var threadID: UInt64
    /// The watched thread's name; nil when it has none or it could not be read.
    package var threadName: String?
    /// The other threads (the watchdog's own excepted), in the order they were listed.
    package var threads: [OtherThread]
    /// What could not be sampled of the other threads.
    package var threadsListed: Bool
    /// Other threads the process had when the hang was sampled.
    package var threadsFound: Int
    /// Found beyond the `CSC_HANG_MAX_THREADS` sampled: neither sampled nor listed.
    package var threadsBeyondLimit: Int
    /// Sampled, but not kept by the run record (fatal hangs: no room for more than
    /// `CSC_HANG_RECORD_THREADS`).
    package var threadsLeftOut: Int
    /// The last heartbeat before the hang.
    package var started: Date
    /// From the last heartbeat before the hang to the first after it; for a fatal hang, until the
    /// last sign of life of the process.
    package var duration: Duration
    /// The process did not survive the hang (reported at the next start).
    package var fatal: Bool
    package var timeoutMilliseconds: UInt32

    /// Another thread of the process as sampled during the hang.
    package struct OtherThread: Sendable {
        package var id: UInt64
        package var name: String?
        /// Innermost first; empty unless `outcome` is `.sampled`.
        package var frames: [IncidentRecord.Frame]
        package var outcome: Outcome

        package enum Outcome: Sendable {
            case sampled
            /// It did not answer the sampling signal in time (Linux) or could not be suspended
            /// (Apple): no stack.
            case noAnswer
            /// Linux: it blocks the sampling signal (libdispatch's worker threads block every
            /// signal), so it was not sent one: no stack.
            case blocksSignal
        }

        package init(id: UInt64, name: String?, frames: [IncidentRecord.Frame], outcome: Outcome) {
            self.id = id
            self.name = name
            self.frames = frames
            self.outcome = outcome
        }
    }

    /// Reads the sample in place (it is large: never copied onto the stack).
    init(_ sample: UnsafePointer<csc_hang_sample>, fatal: Bool, timeoutMilliseconds: UInt32) {
        let raw = UnsafeRawPointer(sample)
        let imageBytes = (raw + MemoryLayout<csc_hang_sample>.offset(of: \.images)!).assumingMemoryBound(to: UInt8.self)
        let images: [String] = (0..<Int(min(sample.pointee.image_count, UInt32(CSC_HANG_MAX_IMAGES)))).map { index in
            let path = UnsafeBufferPointer(start: imageBytes + index * Int(CSC_HANG_IMAGE_PATH_BYTES), count: Int(CSC_HANG_IMAGE_PATH_BYTES))
            return String(decoding: path.prefix { $0 != 0 }, as: UTF8.self)
        }
        func frames(_ base: UnsafeRawPointer, _ count: UInt32) -> [IncidentRecord.Frame] {
            let all = UnsafeBufferPointer(start: base.assumingMemoryBound(to: csc_hang_frame.self), count: Int(CSC_HANG_MAX_FRAMES))
            return all.prefix(Int(min(count, UInt32(CSC_HANG_MAX_FRAMES)))).map { frame in
                let known = frame.image >= 0 && Int(frame.image) < images.count
                return IncidentRecord.Frame(address: frame.address, imagePath: known ? images[Int(frame.image)] : "",
                                            imageOffset: known ? frame.offset : nil)
            }
        }
        func name(_ base: UnsafeRawPointer) -> String? {
            let bytes = UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: Int(CSC_HANG_THREAD_NAME_BYTES))
            let text = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            return text.isEmpty ? nil : text
        }
        self.frames = frames(raw + MemoryLayout<csc_hang_sample>.offset(of: \.frames)!, sample.pointee.frame_count)
        threadName = name(raw + MemoryLayout<csc_hang_sample>.offset(of: \.thread_name)!)
        var others: [OtherThread] = []
        let threadsBase = raw + MemoryLayout<csc_hang_sample>.offset(of: \.threads)!
        for index in 0..<Int(min(sample.pointee.thread_count, UInt32(CSC_HANG_MAX_THREADS))) {
            let thread = threadsBase + index * MemoryLayout<csc_hang_thread>.stride
            let entry = thread.assumingMemoryBound(to: csc_hang_thread.self)
            others.append(OtherThread(
                id: entry.pointee.thread_id, name: name(thread + MemoryLayout<csc_hang_thread>.offset(of: \.name)!),
                frames: frames(thread + MemoryLayout<csc_hang_thread>.offset(of: \.frames)!, entry.pointee.frame_count),
                outcome: entry.pointee.outcome == UInt32(CSC_HANG_THREAD_SAMPLED) ? .sampled
                    : entry.pointee.outcome == UInt32(CSC_HANG_THREAD_SIGNAL_BLOCKED) ? .blocksSignal : .noAnswer))
        }
        threads = others
        threadsListed = sample.pointee.threads_listed
        threadsFound = Int(sample.pointee.threads_found)
        threadsBeyondLimit = Int(sample.pointee.threads_beyond_limit)
        threadsLeftOut = Int(sample.pointee.threads_left_out)
        sampled = sample.pointee.sampled
        threadID = sample.pointee.thread_id
        started = Date(timeIntervalSince1970: Double(sample.pointee.started_wall_ns) / 1e9)
        duration = .nanoseconds(Int64(clamping: sample.pointee.duration_ns))
        self.fatal = fatal
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// A hang made by hand (tests).
    package init(frames: [IncidentRecord.Frame], sampled: Bool = true, threadID: UInt64, threadName: String? = nil,
                 threads: [OtherThread] = [], threadsListed: Bool = true, threadsFound: Int? = nil, threadsBeyondLimit: Int = 0,
                 threadsLeftOut: Int = 0, started: Date, duration: Duration, fatal: Bool, timeoutMilliseconds: UInt32) {
        self.frames = frames
        self.sampled = sampled
        self.threadID = threadID
        self.threadName = threadName
        self.threads = threads
        self.threadsListed = threadsListed
        self.threadsFound = threadsFound ?? threads.count + threadsBeyondLimit + threadsLeftOut
        self.threadsBeyondLimit = threadsBeyondLimit
        self.threadsLeftOut = threadsLeftOut
        self.started = started
        self.duration = duration
        self.fatal = fatal
        self.timeoutMilliseconds = timeoutMilliseconds
    }
}

/// What the run record (`csc_hang.h`) of the previous run says: read at the start before this
/// run's record replaces it.
package struct PreviousRunRecord: Sendable {
    package var launchID: String
    package var appVersion: String
    package var osVersion: String
    package var started: Date
    /// The last sign of life (the watchdog writes it every tick, at most 1 s apart); nil when the
    /// watchdog never ran.
    package var lastAlive: Date?
    /// `stop()` ended the SDK's watch of that run.
    package var stopped: Bool
    package var hangDetection: Bool
    /// The hang in progress at the last sign of life (a fatal hang, unless the run crashed or
    /// exited cleanly).
    package var hang: AppHang?
    package var memory: Memory?
    /// The app's scope as last published in that run, in a crash report's form.
    package var scopeJSON: String?
    /// `scopeJSON` decoded (user, tags, contexts, breadcrumbs). Decoded on each read, off the
    /// start path: the first JSON decoding of a process costs milliseconds.
    package var scope: CrashScope.Snapshot? {
        guard let scopeJSON else { return nil }
        let wrapped = Array("{\"id\":\"run-record\",\"scope\":".utf8) + Array(scopeJSON.utf8) + Array("}".utf8)
        return (try? CrashReport.decode(wrapped))?.scope
    }

    package struct Memory: Sendable {
        package var sampled: Date
        package var residentBytes: UInt64
        package var peakResidentBytes: UInt64
        /// Apple's phys_footprint; nil elsewhere.
        package var footprintBytes: UInt64?
        package var warnings: Int
        package var lastWarning: Date?
    }

    /// Reads `<directory>/run-record`; nil when there is none or it is not a record this SDK wrote.
    package static func read(directory: String) -> PreviousRunRecord? {
        var info = csc_run_record_info()
        let path = directory + "/" + CSC_RUN_RECORD_FILE
        guard csc_run_record_read(path, &info) else { return nil }
        defer { csc_run_record_info_free(&info) }
        func date(_ ns: UInt64) -> Date { Date(timeIntervalSince1970: Double(ns) / 1e9) }
        var record = PreviousRunRecord(
            launchID: String(cString: info.launch_id), appVersion: String(cString: info.app_version),
            osVersion: String(cString: info.os_version), started: date(info.started_wall_ns),
            lastAlive: info.alive_wall_ns > info.started_wall_ns ? date(info.alive_wall_ns) : nil,
            stopped: info.stopped, hangDetection: info.hang_detection)
        if info.hanging, let hang = info.hang {
            record.hang = AppHang(UnsafePointer(hang), fatal: true, timeoutMilliseconds: info.hang_timeout_ms)
        }
        if info.memory_sampled_wall_ns != 0 {
            record.memory = Memory(sampled: date(info.memory_sampled_wall_ns), residentBytes: info.memory_resident_bytes,
                                   peakResidentBytes: info.memory_peak_resident_bytes,
                                   footprintBytes: info.memory_footprint_bytes == 0 ? nil : info.memory_footprint_bytes,
                                   warnings: Int(info.memory_warnings),
                                   lastWarning: info.memory_last_warning_wall_ns == 0 ? nil : date(info.memory_last_warning_wall_ns))
        }
        if let json = info.scope_json { record.scopeJSON = String(cString: json) }
        return record
    }

    package init(launchID: String, appVersion: String, osVersion: String, started: Date, lastAlive: Date?,
                 stopped: Bool, hangDetection: Bool, hang: AppHang? = nil, memory: Memory? = nil, scopeJSON: String? = nil) {
        self.launchID = launchID
        self.appVersion = appVersion
        self.osVersion = osVersion
        self.started = started
        self.lastAlive = lastAlive
        self.stopped = stopped
        self.hangDetection = hangDetection
        self.hang = hang
        self.memory = memory
        self.scopeJSON = scopeJSON
    }
}

/// This run's record and app-hang watchdog (`csc_hang.h`), started by capture's start.
///
/// The watched thread is the thread that called the start (an app's main thread). It answers
/// through a repeating timer on that thread's run loop (`RunLoop.current` at the start, common
/// modes; the timer is added by the start on Apple, by the watchdog thread on Linux) that calls `csc_hang_heartbeat`
/// every eighth of the timeout; a thread that runs
/// another loop (a GNUstep `NSRunLoop`, `dispatchMain`, a server's event loop) answers with
/// `CrashCapture.appHangHeartbeat()`. Detection is armed by the first answer.
package enum RunWatch {
    private static let lock = Locked()
    // `timer` and `timeoutMilliseconds` are read and written only under `lock`
    nonisolated(unsafe) private static var timer: Timer?
    nonisolated(unsafe) private static var timeoutMilliseconds: UInt32 = 0
    private static let hangHandler = Locked<(@Sendable (AppHang) -> Void)?>(nil)

    /// The OS version as the run record keeps it (an OS update between runs is not a kill).
    package static var osVersion: String {
        var text = [CChar](repeating: 0, count: 128)
        csc_os_version(&text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Opens this run's record in `directory` and starts the watchdog (hang detection with
    /// `appHangTimeout`, none when nil; memory sampling and the sign of life always).
    static func start(directory: String, launchID: String, appVersion: String?, appHangTimeout: Duration?) {
        // The file is made by the watchdog thread at its first tick: the start does not pay for it.
        _ = csc_run_record_open_later(directory, launchID, appVersion ?? "")
        let timeout = appHangTimeout.map { UInt32(clamping: max(10, $0.nanoseconds / 1_000_000)) } ?? 0
        lock.lock()
        defer { lock.unlock() }
        timer?.invalidate()
        timer = nil
        timeoutMilliseconds = timeout
        csc_hang_watch_this_thread()
        subscribeToMemoryWarnings()
        // The run loop is had here, on its thread (creating one takes file descriptors, which
        // must not fail later, e.g. once the app has used them all).
        #if canImport(Darwin)
        // Apple documents NSRunLoop as usable only from its own thread: the timer is added here.
        if timeout > 0 { timer = makeHeartbeatTimer(timeout, on: RunLoop.current) }
        pendingLoop = nil
        #else
        // swift-corelibs-foundation adds a timer to another thread's loop under CFRunLoop's own
        // lock: the watchdog thread makes and adds it (~0.1 ms the start does not pay). On the
        // main thread the watchdog thread also gets the loop (`RunLoop.main`, creatable from any
        // thread), so the start does not pay for its creation (~0.1 ms: an epoll, an eventfd and
        // a timerfd); should those descriptors be unavailable then, no heartbeat arms detection.
        pendingLoop = timeout == 0 ? nil : Thread.isMainThread ? .main : .other(RunLoop.current)
        #endif
        watchdogRuns = csc_hang_start(timeout, hangCallback, watchdogSetup)
    }

    /// Whether the last start's watchdog runs (false after stop or a failed thread start).
    // read and written only under `lock`
    nonisolated(unsafe) private static var watchdogRuns = false
    /// `afterStart`'s work not run yet, in the order given (a list of nodes, not an array of
    /// closures: the start does not pay for instantiating that array's generic metadata).
    private final class DeferredWork {
        let run: @Sendable () -> Void
        var next: DeferredWork?
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
    // `deferredWork` and `lastDeferredWork` are read and written only under `lock`
    nonisolated(unsafe) private static var deferredWork: DeferredWork?
    nonisolated(unsafe) private static var lastDeferredWork: DeferredWork?

    /// Runs `work` after this start, off its thread: started by the watchdog's first tick
    /// (CSC_HANG_FIRST_TICK_MS after the start), on a thread with the start thread's signal mask
    /// and name, so threads it creates get what they would have got from the start's thread; or on
    /// the thread that calls `stop()`, should that come first. In the order given. False when no
    /// watchdog runs: the caller does the work itself.
    package static func afterStart(_ work: @escaping @Sendable () -> Void) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard watchdogRuns else { return false }
        let node = DeferredWork(work)
        if let last = lastDeferredWork { last.next = node } else { deferredWork = node }
        lastDeferredWork = node
        return true
    }

    private static func runDeferredWork(_ list: DeferredWork?) {
        var node = list
        while let current = node {
            current.run()
            node = current.next
        }
    }

    /// Takes the deferred work (under `lock`), to run outside it.
    private static func takeDeferredWork() -> DeferredWork? {
        let work = deferredWork
        deferredWork = nil
        lastDeferredWork = nil
        return work
    }

    /// The loop that gets the heartbeat timer at the watchdog's first tick (Linux; nil: none).
    private enum PendingLoop { case main, other(RunLoop) }
    // read and written only under `lock`
    nonisolated(unsafe) private static var pendingLoop: PendingLoop?

    private static func makeHeartbeatTimer(_ timeout: UInt32, on loop: RunLoop) -> Timer {
        let interval = Double(csc_hang_heartbeat_interval_ms(timeout)) / 1000
        let heartbeat = Timer(timeInterval: interval, repeats: true) { _ in csc_hang_heartbeat() }
        heartbeat.tolerance = interval / 4
        loop.add(heartbeat, forMode: .common)
        return heartbeat
    }

    /// Once after each start, on the thread the watchdog's first tick starts for it (see
    /// `afterStart`): the watched thread's heartbeat timer, then the deferred work.
    fileprivate static func setUpOnWatchdogThread() {
        lock.lock()
        let work = takeDeferredWork()
        if let pending = pendingLoop {
            pendingLoop = nil
            switch pending {
            case .main: timer = makeHeartbeatTimer(timeoutMilliseconds, on: RunLoop.main)
            case .other(let loop): timer = makeHeartbeatTimer(timeoutMilliseconds, on: loop)
            }
        }
        lock.unlock()
        runDeferredWork(work)
    }

    /// Stops the watchdog's watch and marks the run stopped (the next start reports no abnormal
    /// exit for it). The timer is invalidated (from its own thread's run loop on the next pass,
    /// where the start was not on this thread).
    static func stop() {
        lock.lock()
        csc_hang_stop()
        csc_run_record_mark_stopped()
        watchdogRuns = false
        let work = takeDeferredWork()
        pendingLoop = nil
        timer?.invalidate()
        timer = nil
        lock.unlock()
        runDeferredWork(work)
    }

    #if canImport(Darwin)
    // read and written only under `lock` (`subscribeToMemoryWarnings`)
    nonisolated(unsafe) private static var memoryPressure: (any DispatchSourceMemoryPressure)?
    #endif

    /// Apple: the system's memory warnings (the dispatch memory-pressure source: `warning` and
    /// `critical`, what UIKit's didReceiveMemoryWarning also reports) are counted in the run
    /// record and added as breadcrumbs (category `device.event`, data `action: LOW_MEMORY` and
    /// the level). Linux sends no such warning: only the sampled figures are kept. Once per
    /// process; called under `lock`.
    private static func subscribeToMemoryWarnings() {
        #if canImport(Darwin)
        guard memoryPressure == nil else { return }
        let source = DispatchSource.makeMemoryPressureSource(eventMask: [.warning, .critical], queue: .global(qos: .utility))
        source.setEventHandler { [weak source] in
            let level = source?.data.contains(.critical) == true ? "critical" : "warning"
            csc_run_record_note_memory_warning()
            CrashScope.addBreadcrumb(message: "Memory warning (\(level))", category: "device.event", level: .warning,
                                     data: ["action": "LOW_MEMORY", "level": level])
        }
        source.activate()
        memoryPressure = source
        #endif
    }

    /// Where ended hangs go (reporting sets it); nil: they are dropped.
    package static func setHangHandler(_ handler: (@Sendable (AppHang) -> Void)?) { hangHandler.withLock { $0 = handler } }

    fileprivate static func deliver(_ sample: UnsafePointer<csc_hang_sample>) {
        lock.lock()
        let timeout = timeoutMilliseconds
        lock.unlock()
        let hang = AppHang(sample, fatal: false, timeoutMilliseconds: timeout)
        hangHandler.withLock { $0 }?(hang)
    }

    /// Hangs detected in this process (tests).
    package static var detectedCount: Int { Int(csc_hang_detected_count()) }
}

/// Called on the watchdog thread once after each start.
private let watchdogSetup: @convention(c) () -> Void = { RunWatch.setUpOnWatchdogThread() }

/// Called on the watchdog thread when a hang ends.
private let hangCallback: csc_hang_callback = { sample in
    guard let sample else { return }
    RunWatch.deliver(sample)
}

extension CrashCapture {
    /// The watched thread (the thread that called the start) is alive: call it from a loop that
    /// is not the thread's `RunLoop` (which the start's timer covers), at least every eighth of
    /// `CaptureOptions.appHangTimeout`. Cheap (a clock read and an atomic store: no allocation,
    /// no lock) and safe from any context, a signal handler included.
    public static func appHangHeartbeat() { csc_hang_heartbeat() }

    /// App hangs detected in this process so far (tests, the hang probe).
    package static var appHangsDetected: Int { RunWatch.detectedCount }

    /// How long the last hang's sampling took on the watchdog thread (every thread's stack and
    /// the images) and how many other threads it sampled; nil before any hang (the benchmark).
    package static var lastAppHangSampleCost: (duration: Duration, otherThreads: Int)? {
        var nanoseconds: UInt64 = 0, threads: UInt32 = 0
        guard csc_hang_last_sample_cost(&nanoseconds, &threads) else { return nil }
        return (.nanoseconds(Int64(clamping: nanoseconds)), Int(threads))
    }
}
