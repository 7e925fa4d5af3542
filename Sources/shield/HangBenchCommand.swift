import CrashShieldProtocol
import ArgumentParser
import CrashShieldRecording
import CrashShieldSentry
import Foundation
import CrashShieldBase

/// `shield bench-hangs [--json] [--seconds S]`: the cost of app-hang detection (the bound:
/// no allocation or lock on the main thread's path, <= 1 % CPU with the main thread idle).
/// - `hang.heartbeat`: one `CrashCapture.appHangHeartbeat()` (what the main thread's timer runs),
///   ns per call;
/// - `hang.idle_cpu.*`: the process's CPU time (user + system, getrusage) per wall time while the
///   main thread idles in its run loop for S seconds (default 5): without capture (`baseline`),
///   with capture and hang detection off (`detection_off`: the watchdog still writes the sign of
///   life and samples memory, 1 s apart), and with the default 2 s timeout (`detection_on`:
///   the main thread's 250 ms heartbeat timer and the watchdog's 200 ms tick), in percent;
/// - `hang.sample`: what a hang costs the watchdog thread, once, when it is detected (nothing is
///   sampled while no hang is: the idle figures above do not include it): the watched thread's
///   stack, every other thread's (with 8 extra threads blocked in `read`, which answer the
///   sampling signal) and the images, in ms, with the count of other threads sampled. Measured
///   last, with a 200 ms timeout and the main thread blocked 600 ms.
enum HangBenchCommand {
    static func run(json: Bool, seconds: Double) -> Int32 {
        var results: [(String, String)] = []

        let calls = 10_000_000
        let began = ContinuousClock.now
        for _ in 0..<calls { CrashCapture.appHangHeartbeat() }
        let perCall = Double((ContinuousClock.now - began).nanoseconds) / Double(calls)
        results.append(("hang.heartbeat", json ? "\"ns_per_call\": \(format(perCall))" : "\(format(perCall)) ns per call"))

        let directory = NSTemporaryDirectory() + "crashshield-bench-hangs-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var measured: [String: Double] = [:]
        for (name, timeout) in [("baseline", nil), ("detection_off", Duration?.none), ("detection_on", .seconds(2))] as [(String, Duration?)] {
            if name != "baseline" {
                var options = CaptureOptions(directory: directory)
                options.appHangTimeout = timeout
                do {
                    try CrashCapture.start(options, launchProtection: nil)
                } catch {
                    FileHandle.standardError.write(Data("bench-hangs: start failed: \(error)\n".utf8))
                    return 1
                }
            }
            RunLoop.main.run(until: Date().addingTimeInterval(0.5))  // armed, settled
            let cpuBefore = processCPUSeconds()
            let wallBefore = ContinuousClock.now
            RunLoop.main.run(until: Date().addingTimeInterval(seconds))
            let wall = Double((ContinuousClock.now - wallBefore).nanoseconds) / 1e9
            let percent = (processCPUSeconds() - cpuBefore) / wall * 100
            measured[name] = percent
            if name != "baseline" { CrashCapture.stop() }
            results.append(("hang.idle_cpu.\(name)", json ? "\"cpu_percent\": \(format(percent, digits: 4)), \"seconds\": \(format(wall))"
                                                          : "\(format(percent, digits: 4)) % CPU over \(format(wall)) s"))
        }
        if let on = measured["detection_on"], let base = measured["baseline"] {
            results.append(("hang.idle_cpu.added_by_detection", json ? "\"cpu_percent\": \(format(on - base, digits: 4)), \"target_percent\": 1"
                                                                    : "\(format(on - base, digits: 4)) % CPU (target <= 1 %)"))
        }
        // What one hang's sampling costs (after the idle figures, so their threads are not there).
        var options = CaptureOptions(directory: directory)
        options.appHangTimeout = .milliseconds(200)
        do {
            try CrashCapture.start(options, launchProtection: nil)
        } catch {
            FileHandle.standardError.write(Data("bench-hangs: start failed: \(error)\n".utf8))
            return 1
        }
        var idlePipe: [Int32] = [0, 0]
        _ = pipe(&idlePipe)
        let readFD = idlePipe[0]
        for _ in 0..<8 {
            Thread {
                var byte: UInt8 = 0
                while read(readFD, &byte, 1) < 0 && errno == EINTR {}
            }.start()
        }
        RunLoop.main.run(until: Date().addingTimeInterval(0.5))  // armed
        let blockUntil = ContinuousClock.now + .milliseconds(600)
        while ContinuousClock.now < blockUntil { usleep(10_000) }
        RunLoop.main.run(until: Date().addingTimeInterval(0.5))  // the hang ends
        CrashCapture.stop()
        close(idlePipe[1])  // the idle threads' read returns 0: they end
        if let (cost, threads) = CrashCapture.lastAppHangSampleCost {
            let milliseconds = Double(cost.nanoseconds) / 1e6
            results.append(("hang.sample", json ? "\"ms\": \(format(milliseconds, digits: 3)), \"other_threads\": \(threads)"
                                                 : "\(format(milliseconds, digits: 3)) ms, once per hang: the watched thread and \(threads) others sampled"))
        } else {
            results.append(("hang.sample", json ? "\"ms\": null" : "no hang was detected"))
        }
        for (name, text) in results {
            print(json ? "{\"case\": \"\(name)\", \(text)}" : "\(name.padding(toLength: 36, withPad: " ", startingAt: 0)) \(text)")
        }
        return 0
    }

    private static func processCPUSeconds() -> Double {
        var usage = rusage()
        #if os(Linux)
        getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    private static func format(_ value: Double, digits: Int = 2) -> String { String(format: "%.\(digits)f", value) }
}

struct BenchHangs: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-hangs", abstract: "The app-hang figures alone: heartbeat cost, CPU with the main thread idle.")
    @Flag(help: "One JSON object per case and line.") var json = false
    @Option(help: "Seconds of idle run loop per figure (default 5).") var seconds: Double = 5
    func run() throws { try finish(HangBenchCommand.run(json: json, seconds: seconds)) }
}
