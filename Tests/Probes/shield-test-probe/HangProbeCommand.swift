import CrashShieldProtocol
import ArgumentParser
import CrashShield
import CrashShieldRecording
import CrashShieldSentry
import Foundation
import _CrashShieldTestSupport
import CrashShieldBase

/// `shield-test-probe hang-probe --dir D [--dsn DSN] ...`: the test child of app hangs and exits without a
/// report. Starts CrashShield on the main thread (capture, launch protection, and reporting when
/// `--dsn` is given, release `hang-probe@<app version>`), prints `STARTED last_run=<outcome>`,
/// adds the breadcrumb `--breadcrumb`, runs the main run loop for 600 ms (the heartbeat arms hang
/// detection), then:
/// - `--block-ms N`: blocks the main thread N ms in `HangProbe.blockMainThread` (a loop of short
///   sleeps until the deadline), runs the run loop 1 s more (the watchdog sees the answer and
///   the hang's event is submitted), prints `HANGS detected=<hangs detected>`;
/// - `--workers` (with `--block-ms` or `--block-forever`): first starts two threads the hang's
///   sample must see: `probe-reader`, blocked in `read` of a pipe in `probeReaderBlockedInRead`
///   until the main thread writes 16 KiB into it after the block (prints `READER bytes=<read>
///   intact=<the bytes are the ones written> eintr=<EINTR seen>`), and `probe-sleeper`, in a
///   `nanosleep` loop in `probeSleeperInNanosleep` for the block plus 1 s that continues with the
///   remaining time after EINTR (prints `SLEEPER slept_ms=<measured> requested_ms=<asked>
///   eintr=<EINTR seen>`);
/// - `--idle-threads N`: first starts N threads (`probe-idle-<i>`) blocked in `read` of a pipe
///   nobody writes, in `probeIdleThreadWaits`;
/// - `--block-forever`: prints `BLOCKING` and blocks the main thread the same way until killed;
/// - `--allocate-mb N`: touches N MiB in 8 MiB steps, 50 ms apart (the out-of-memory test);
///   `--join-cgroup DIR` first moves this process into that cgroup (writes its pid to
///   `DIR/cgroup.procs`);
/// - `--stop`: `CrashShieldSDK.stop()` (before `--wait`);
/// - `--wait`: prints `READY` and runs the main run loop until killed;
/// - `--crash`: SIGSEGV in `csc_crash_segv`;
/// then flushes reporting (10 s) and returns (a clean exit).
struct HangProbe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hang-probe", abstract: "App hangs and exits without a report: the test child.")
    @Option(help: "The report directory.") var dir: String
    @Option(help: "Report to this DSN (without: no reporting).") var dsn: String?
    @Option(help: "The app version (default 1.0).") var appVersion = "1.0"
    @Option(name: .customLong("timeout-ms"), help: "CaptureOptions.appHangTimeout in ms (0: off; default 2000).") var timeoutMilliseconds = 2000
    @Option(help: "A breadcrumb added after the start.") var breadcrumb: String?
    @Option(name: .customLong("block-ms"), help: "Block the main thread this long.") var blockMilliseconds: Int?
    @Flag(help: "Block the main thread until killed.") var blockForever = false
    @Option(name: .customLong("allocate-mb"), help: "Touch this many MiB, 8 MiB at a time.") var allocateMegabytes: Int?
    @Option(help: "Join this cgroup (v1 or v2 directory) before allocating.") var joinCgroup: String?
    @Flag(help: "CrashShieldSDK.stop() before --wait.") var stop = false
    @Flag(help: "Print READY and run the main run loop until killed.") var wait = false
    @Flag(help: "Crash (SIGSEGV).") var crash = false
    @Flag(help: "Start a reader and a sleeper thread before blocking.") var workers = false
    @Option(name: .customLong("idle-threads"), help: "Start this many idle threads before blocking.") var idleThreads = 0

    func run() throws {
        var options = CrashShieldOptions()
        var capture = CaptureOptions(directory: dir)
        capture.appName = "hang-probe"
        capture.appVersion = appVersion
        capture.appHangTimeout = timeoutMilliseconds > 0 ? .milliseconds(timeoutMilliseconds) : nil
        options.capture = capture
        options.launchProtection = LaunchProtectionOptions()
        if let dsn {
            var reporting = try ReportingOptions(dsn: dsn, release: "hang-probe@\(appVersion)")
            reporting.exitFlushTimeout = .seconds(10)
            options.reporting = reporting
        }
        try CrashShieldSDK.start(options)
        print("STARTED last_run=\(CrashShieldSDK.lastRun?.outcome.rawValue ?? "none")")
        fflush(nil)
        if let breadcrumb { CrashScope.addBreadcrumb(message: breadcrumb, category: "probe") }
        RunLoop.main.run(until: Date().addingTimeInterval(0.6))
        for index in 0..<idleThreads { HangProbe.startIdleThread(index) }
        let workerThreads = workers ? HangProbe.Workers(sleepMilliseconds: (blockMilliseconds ?? 600_000) + 1000) : nil
        if let blockMilliseconds {
            HangProbe.blockMainThread(milliseconds: blockMilliseconds)
            RunLoop.main.run(until: Date().addingTimeInterval(1))
            print("HANGS detected=\(CrashCapture.appHangsDetected)")
            fflush(nil)
            workerThreads?.finish()
        }
        if blockForever {
            print("BLOCKING")
            fflush(nil)
            HangProbe.blockMainThread(milliseconds: Int.max / 2_000_000)
        }
        if let joinCgroup {
            try "\(getpid())\n".write(toFile: joinCgroup + "/cgroup.procs", atomically: false, encoding: .utf8)
        }
        if let allocateMegabytes {
            print("ALLOCATING")
            fflush(nil)
            var kept: [UnsafeMutableRawPointer] = []
            for _ in 0..<(allocateMegabytes / 8) {
                let block = UnsafeMutableRawPointer.allocate(byteCount: 8 << 20, alignment: 4096)
                memset(block, 0x5a, 8 << 20)
                kept.append(block)
                RunLoop.main.run(until: Date().addingTimeInterval(0.05))
            }
            print("ALLOCATED \(kept.count * 8) MiB")
        }
        if stop { CrashShieldSDK.stop() }
        if wait {
            print("READY")
            fflush(nil)
            while true { RunLoop.main.run(until: Date().addingTimeInterval(1)) }
        }
        if crash { csc_crash_segv() }
        _ = CrashShieldSDK.flush(timeout: .seconds(10))
    }

    /// The reader and the sleeper of `--workers`.
    // @unchecked Sendable: only immutable properties (`pipeFDs`, a semaphore)
    final class Workers: @unchecked Sendable {
        static let payload: [UInt8] = (0..<16_384).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let pipeFDs: [Int32]
        let done = DispatchSemaphore(value: 0)

        init(sleepMilliseconds: Int) {
            var fds: [Int32] = [0, 0]
            precondition(pipe(&fds) == 0)
            pipeFDs = fds
            let readFD = fds[0]
            Thread { [done] in
                HangProbe.nameThread("probe-reader")
                HangProbe.probeReaderBlockedInRead(fd: readFD)
                done.signal()
            }.start()
            Thread { [done] in
                HangProbe.nameThread("probe-sleeper")
                HangProbe.probeSleeperInNanosleep(milliseconds: sleepMilliseconds)
                done.signal()
            }.start()
            usleep(50_000)  // both are in their blocking call before the main thread blocks
        }

        /// Writes the reader's bytes and waits for both threads to print their results.
        func finish() {
            _ = Self.payload.withUnsafeBytes { write(pipeFDs[1], $0.baseAddress, $0.count) }
            done.wait()
            done.wait()
        }
    }

    static func nameThread(_ name: String) { csc_test_set_thread_name(name) }

    /// A thread blocked in `read` of a pipe: the hang's sample of this thread names this function.
    /// Reads until it has the whole payload and says whether the bytes are the ones written.
    @inline(never)
    static func probeReaderBlockedInRead(fd: Int32) {
        var received: [UInt8] = []
        var interrupted = 0
        var buffer = [UInt8](repeating: 0, count: 1024)
        while received.count < Workers.payload.count {
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if got < 0 && errno == EINTR {
                interrupted += 1
                continue
            }
            if got <= 0 { break }
            received += buffer[0..<got]
        }
        print("READER bytes=\(received.count) intact=\(received == Workers.payload) eintr=\(interrupted)")
        fflush(nil)
    }

    /// A thread in a `nanosleep` loop that continues with the remaining time after EINTR, as a
    /// correct one does: it sleeps its full time however often it is interrupted.
    @inline(never)
    static func probeSleeperInNanosleep(milliseconds: Int) {
        let began = ContinuousClock.now
        var remaining = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
        var interrupted = 0
        while true {
            var left = timespec()
            if nanosleep(&remaining, &left) == 0 { break }
            guard errno == EINTR else { break }
            interrupted += 1
            remaining = left
        }
        let sleptMilliseconds = (ContinuousClock.now - began).milliseconds
        print("SLEEPER slept_ms=\(sleptMilliseconds) requested_ms=\(milliseconds) eintr=\(interrupted)")
        fflush(nil)
    }

    // written and read only by `startIdleThread`, which the probe calls on its main thread only
    nonisolated(unsafe) static var idlePipe: [Int32] = []

    static func startIdleThread(_ index: Int) {
        if idlePipe.isEmpty {
            var fds: [Int32] = [0, 0]
            precondition(pipe(&fds) == 0)
            idlePipe = fds
        }
        let fd = idlePipe[0]
        Thread {
            HangProbe.nameThread("probe-idle-\(index)")
            HangProbe.probeIdleThreadWaits(fd: fd)
        }.start()
    }

    /// An idle thread: blocked in `read` of a pipe nobody writes.
    @inline(never)
    static func probeIdleThreadWaits(fd: Int32) {
        var byte: UInt8 = 0
        while read(fd, &byte, 1) < 0 && errno == EINTR {}
    }

    /// The app code that hangs: the main thread's stack names it.
    @inline(never)
    static func blockMainThread(milliseconds: Int) {
        let deadline = ContinuousClock.now + .milliseconds(milliseconds)
        while ContinuousClock.now < deadline { usleep(20_000) }
    }
}
