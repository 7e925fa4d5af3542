import ArgumentParser
import CrashShield
import CrashShieldCapture
import Foundation
import _CrashShieldTestSupport

/// `shield hang-probe --dir D [--dsn DSN] ...`: the test child of app hangs and exits without a
/// report. Starts CrashShield on the main thread (capture, launch protection, and reporting when
/// `--dsn` is given, release `hang-probe@<app version>`), prints `STARTED last_run=<outcome>`,
/// adds the breadcrumb `--breadcrumb`, runs the main run loop for 600 ms (the heartbeat arms hang
/// detection), then:
/// - `--block-ms N`: blocks the main thread N ms in `HangProbe.blockMainThread` (a loop of short
///   sleeps until the deadline), runs the run loop 1 s more (the watchdog sees the answer and
///   the hang's event is submitted), prints `HANGS detected=<hangs detected>`;
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
        commandName: "hang-probe", abstract: "(internal) App hangs and exits without a report: the test child.", shouldDisplay: false)
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
        if let breadcrumb { CrashShieldSDK.addBreadcrumb(message: breadcrumb, category: "probe") }
        RunLoop.main.run(until: Date().addingTimeInterval(0.6))
        if let blockMilliseconds {
            HangProbe.blockMainThread(milliseconds: blockMilliseconds)
            RunLoop.main.run(until: Date().addingTimeInterval(1))
            print("HANGS detected=\(CrashCapture.appHangsDetected)")
            fflush(nil)
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

    /// The app code that hangs: the main thread's stack names it.
    @inline(never)
    static func blockMainThread(milliseconds: Int) {
        let deadline = ContinuousClock.now + .milliseconds(milliseconds)
        while ContinuousClock.now < deadline { usleep(20_000) }
    }
}
