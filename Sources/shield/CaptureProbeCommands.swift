import CrashShieldTestDoubles
import CrashShieldProtocol
import CrashShield
import CrashShieldRecording
import CrashShieldSentry
import Foundation
import _CrashShieldCapture
import _CrashShieldTestSupport
import CrashShieldBase

/// `shield bench-capture [--json] [--runs N]`: crashes N children (`shield crash segv`) and
/// reads how long each handler took from signal entry to its last write (the report's
/// `handler_ns`). Target: report on disk within 20 ms. The same for a crash whose stack
/// walk needed the fallback (`shield crash return-overwritten`: the DWARF walk faults on the
/// overwritten return address, is abandoned, and the frame-pointer walk takes over).
enum BenchCaptureCommand {
    static func run(_ arguments: [String]) -> Int32 {
        let runs = max(1, Int(CrashCommand.option("--runs", in: arguments) ?? "") ?? 20)
        let samples = signalToDiskSamples(kind: "segv", runs: runs)
        let fallbackSamples = signalToDiskSamples(kind: "return-overwritten", runs: runs)
        guard !samples.isEmpty, !fallbackSamples.isEmpty else {
            print(arguments.contains("--json") ? "{\"case\": \"capture.signal_to_disk\", \"error\": \"no reports\"}" : "no reports")
            return 1
        }
        let median = samples[samples.count / 2], worst = samples.last!
        let fallbackMedian = fallbackSamples[fallbackSamples.count / 2], fallbackWorst = fallbackSamples.last!
        let target: UInt64 = 20_000_000
        let startSamples = launchStartSamples(runs: runs)
        let startMedian = startSamples.isEmpty ? 0 : startSamples[startSamples.count / 2]
        let afterCrashSamples = launchStartAfterCrashSamples(runs: runs)
        let afterCrashMedian = afterCrashSamples.isEmpty ? 0 : afterCrashSamples[afterCrashSamples.count / 2]
        let guardedSamples = startAfterCrashInsideGuardSamples(runs: runs)
        let guardedMedian = guardedSamples.isEmpty ? 0 : guardedSamples[guardedSamples.count / 2]
        let scopeCases = scopeCases(runs: runs)
        if arguments.contains("--json") {
            print("{\"case\": \"capture.signal_to_disk\", \"runs\": \(samples.count), \"median_ns\": \(median), \"max_ns\": \(worst), \"target_ns\": \(target)}")
            print("{\"case\": \"capture.signal_to_disk_unwind_fallback\", \"runs\": \(fallbackSamples.count), \"median_ns\": \(fallbackMedian), \"max_ns\": \(fallbackWorst), \"target_ns\": \(target)}")
            print("{\"case\": \"capture.start_with_launch_protection\", \"runs\": \(startSamples.count), \"median_ns\": \(startMedian), \"max_ns\": \(startSamples.last ?? 0), \"target_ns\": 1000000}")
            print("{\"case\": \"capture.start_after_crash\", \"runs\": \(afterCrashSamples.count), \"median_ns\": \(afterCrashMedian), \"max_ns\": \(afterCrashSamples.last ?? 0), \"target_ns\": 1000000}")
            print("{\"case\": \"capture.start_after_crash_guards_on\", \"runs\": \(guardedSamples.count), \"median_ns\": \(guardedMedian), \"max_ns\": \(guardedSamples.last ?? 0), \"target_ns\": 1000000}")
            for item in scopeCases {
                print("{\"case\": \"\(item.name)\", \"runs\": \(item.samples.count), \"median_ns\": \(item.median), \"max_ns\": \(item.samples.last ?? 0)}")
            }
        } else {
            print("capture.signal_to_disk  runs \(samples.count)  median \(Double(median) / 1e6) ms  max \(Double(worst) / 1e6) ms  (target <= 20 ms)")
            print("capture.signal_to_disk_unwind_fallback  runs \(fallbackSamples.count)  median \(Double(fallbackMedian) / 1e6) ms  max \(Double(fallbackWorst) / 1e6) ms  (target <= 20 ms)")
            print("capture.start_with_launch_protection  runs \(startSamples.count)  median \(Double(startMedian) / 1e6) ms  max \(Double(startSamples.last ?? 0) / 1e6) ms  (target <= 1 ms)")
            print("capture.start_after_crash  runs \(afterCrashSamples.count)  median \(Double(afterCrashMedian) / 1e6) ms  max \(Double(afterCrashSamples.last ?? 0) / 1e6) ms  (target <= 1 ms)")
            print("capture.start_after_crash_guards_on  runs \(guardedSamples.count)  median \(Double(guardedMedian) / 1e6) ms  max \(Double(guardedSamples.last ?? 0) / 1e6) ms  (target <= 1 ms)")
            for item in scopeCases {
                print("\(item.name)  runs \(item.samples.count)  median \(Double(item.median) / 1e3) µs  max \(Double(item.samples.last ?? 0) / 1e3) µs")
            }
        }
        return worst <= target && fallbackWorst <= target ? 0 : 1
    }

    /// `handler_ns` of the reports of `runs` children crashing with `kind`, sorted.
    static func signalToDiskSamples(kind: String, runs: Int, extraArguments: [String] = []) -> [UInt64] {
        let directory = NSTemporaryDirectory() + "crashshield-bench-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var samples: [UInt64] = []
        for _ in 0..<runs {
            try? FileManager.default.removeItem(atPath: directory)
            _ = ChildProcess.run(ChildProcess.currentExecutable, ["crash", kind, "--dir", directory] + extraArguments, timeout: .seconds(20))
            for item in CrashCapture.pendingReports(in: directory, symbolicate: false) {
                if let value = (try? item.result.get())?.handlerNs { samples.append(value) }
            }
        }
        return samples.sorted()
    }

    /// `CrashCapture.start` with launch protection, measured inside `shield launch-probe` children
    /// (each a normal launch that completes), after one warm-up launch.
    static func launchStartSamples(runs: Int) -> [UInt64] {
        let directory = NSTemporaryDirectory() + "crashshield-bench-launch-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var samples: [UInt64] = []
        for run in 0...runs {
            let result = ChildProcess.run(ChildProcess.currentExecutable, ["launch-probe", "--dir", directory], timeout: .seconds(20))
            guard run > 0, let line = result.output.split(separator: "\n").first(where: { $0.hasPrefix("{") }),
                  let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let value = object["start_ns"] as? Int else { continue }
            samples.append(UInt64(value))
        }
        return samples.sorted()
    }

    /// The same start right after a launch that crashed (`launch-probe --crash`), so it finds that
    /// crash's report and decides `lastRun` from it; a fresh directory per run (one report each).
    static func launchStartAfterCrashSamples(runs: Int) -> [UInt64] {
        let directory = NSTemporaryDirectory() + "crashshield-bench-after-crash-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var samples: [UInt64] = []
        for _ in 0..<runs {
            try? FileManager.default.removeItem(atPath: directory)
            _ = ChildProcess.run(ChildProcess.currentExecutable, ["launch-probe", "--dir", directory, "--crash"], timeout: .seconds(20))
            let result = ChildProcess.run(ChildProcess.currentExecutable, ["launch-probe", "--dir", directory], timeout: .seconds(20))
            guard let line = result.output.split(separator: "\n").first(where: { $0.hasPrefix("{") }),
                  let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  object["last_run"] as? String == "crashed", let value = object["start_ns"] as? Int else { continue }
            samples.append(UInt64(value))
        }
        return samples.sorted()
    }
}

/// The capture steps of `CrashShieldSDK.start` (capture, launch protection, the guard fail-safe)
/// with the guards on,
/// right after a crash inside a guard (`shield crash inside-guard`), measured inside
/// `shield failsafe-probe --launch-protection` children; a fresh directory per run (one report
/// each). Counted only when the fail-safe switched the container guard off.
extension BenchCaptureCommand {
    static func startAfterCrashInsideGuardSamples(runs: Int) -> [UInt64] {
        let directory = NSTemporaryDirectory() + "crashshield-bench-failsafe-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var samples: [UInt64] = []
        for _ in 0..<runs {
            try? FileManager.default.removeItem(atPath: directory)
            _ = ChildProcess.run(ChildProcess.currentExecutable, ["crash", "inside-guard", "--dir", directory], timeout: .seconds(20))
            let result = ChildProcess.run(ChildProcess.currentExecutable, ["failsafe-probe", "--dir", directory, "--launch-protection"],
                                          timeout: .seconds(20))
            let lines = result.output.split(separator: "\n")
            guard lines.contains("POLICY container off"),
                  let line = lines.first(where: { $0.hasPrefix("START-CAPTURE-NS ") }),
                  let value = UInt64(line.dropFirst("START-CAPTURE-NS ".count)) else { continue }
            samples.append(value)
        }
        return samples.sorted()
    }
}

/// `shield launch-probe --dir D [--crash|--hang] [--no-capture] [--threshold N] [--crashing-step] [--main-actor-step] [--unwritable-dir] [--fill-disk] [--stderr-full-pipe] [--fsize-limit N] [--window-ms N] [--no-hang-detection]`:
/// the child of the launch-protection end-to-end test. Starts capture with launch protection and
/// three repair steps (safe-mode, step-two, step-three; with --crashing-step: "crashes", whose
/// body dies of SIGSEGV, then "after-crash"), prints one JSON line describing what launch
/// protection decided, then crashes during launch (--crash), waits to be killed (--hang), waits
/// for a launch window of N ms to complete the launch and prints `WINDOW-COMPLETED-AFTER-MS <ms>`
/// (--window-ms), or completes the launch and exits cleanly.
enum LaunchProbeCommand {
    static func run(_ arguments: [String]) -> Int32 {
        guard let directory = CrashCommand.option("--dir", in: arguments) else { return 2 }
        var launch = LaunchProtectionOptions()
        launch.threshold = Int(CrashCommand.option("--threshold", in: arguments) ?? "") ?? 3
        let windowMilliseconds = CrashCommand.option("--window-ms", in: arguments).flatMap { Int($0) }
        launch.launchWindow = windowMilliseconds.map { .milliseconds($0) } ?? .seconds(60)
        launch.repairSteps = [
            .safeMode(),
            .run(id: "step-two") { _ in },
            RepairStep(id: "step-three") { _ in try await Task.sleep(for: .milliseconds(1)) },
        ]
        if arguments.contains("--crashing-step") {
            launch.repairSteps = [.run(id: "crashes") { _ in csc_crash_segv() }, .run(id: "after-crash") { _ in }]
        }
        if arguments.contains("--main-actor-step") {
            // Start runs on the main thread here: a step that needs the main actor cannot run
            // until start returns, so it must time out (not deadlock); the next one awaits a sleep.
            launch.repairSteps = [
                RepairStep(id: "needs-main-actor", timeout: .milliseconds(500)) { _ in await MainActor.run {} },
                RepairStep(id: "awaits-sleep", timeout: .seconds(10)) { _ in try await Task.sleep(for: .milliseconds(20)) },
            ]
        }
        let protection: LaunchProtection
        let clock = ContinuousClock()
        let startedAt = clock.now
        if arguments.contains("--no-capture") {
            protection = LaunchProtection.begin(directory: directory, options: launch, appVersion: "1.0", captureEnabled: false)
        } else {
            var options = CaptureOptions(directory: directory)
            options.appVersion = "1.0"
            if arguments.contains("--no-hang-detection") { options.appHangTimeout = nil }
            guard let started = try? CrashCapture.start(options, launchProtection: launch) else { return 1 }
            protection = started
        }
        let elapsed = clock.now - startedAt
        let fields: [String: Any] = [
            "start_ns": elapsed.nanoseconds,
            "last_run": protection.lastRun.outcome.rawValue,
            "during_launch": protection.lastRun.crashedDuringLaunch,
            "consecutive": protection.consecutiveLaunchCrashes,
            "repairs": protection.repairsRun,
            "repairs_failed": protection.repairsFailed,
            "exhausted": protection.repairExhausted,
            "safe_mode": protection.isSafeMode,
            "state_reset": protection.stateWasReset,
            "detection": protection.lastRun.detection.rawValue,
            "report_lost": protection.lastRun.reportLost,
        ]
        let data = (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])) ?? Data()
        print(String(decoding: data, as: UTF8.self))
        fflush(nil)
        if arguments.contains("--unwritable-dir") { HostileSetup.makeUnwritable(directory) }
        if arguments.contains("--fill-disk") { HostileSetup.fillDisk(directory) }
        if let limit = CrashCommand.option("--fsize-limit", in: arguments).flatMap({ rlim_t($0) }) { HostileSetup.limitFileSize(limit) }
        if arguments.contains("--stderr-full-pipe") { HostileSetup.fillStandardErrorPipe() }
        if arguments.contains("--crash") { csc_crash_segv() }
        if arguments.contains("--hang") { while true { sleep(1) } }
        if windowMilliseconds != nil {
            // The window completes the launch by itself: how long after the start it did (or none).
            let deadline = clock.now + .seconds(20)
            while !protection.isLaunchCompleted && clock.now < deadline { usleep(1_000) }
            let after = clock.now - startedAt
            print(protection.isLaunchCompleted ? "WINDOW-COMPLETED-AFTER-MS \(after.milliseconds)" : "WINDOW-NOT-COMPLETED")
            return 0
        }
        protection.launchCompleted()
        return 0
    }
}

/// `shield failsafe-probe --dir D [--launch-protection]`: starts the guards, then capture (which
/// applies the fail-safe to the reports in D; launch protection only when asked), and prints
/// `POLICY <guard> <policy>` for every guard, `FAILSAFE-INCIDENTS <n> <guards>`,
/// `START-CAPTURE-NS <n>` (how long the capture steps of the start took) and `REPORTS-DECODED <d>/<n>` (how many
/// of the n reports found at start were fully decoded by then), then
/// `LAST-RUN <outcome> CRASHED-LAST-RUN <bool>` (`CrashShieldSDK.lastRun`, `crashedLastRun`).
enum FailSafeProbeCommand {
    static func run(_ arguments: [String]) -> Int32 {
        guard let directory = CrashCommand.option("--dir", in: arguments) else { return 2 }
        let sink = InMemoryIncidentSink(capacity: 1000)
        var startCaptureNs: Int64 = 0
        var options = CrashShieldOptions()
        options.sinks = [sink]
        options.capture = CaptureOptions(directory: directory)
        if arguments.contains("--launch-protection") {
            var launch = LaunchProtectionOptions()
            launch.launchWindow = .seconds(60)
            options.launchProtection = launch
        } else {
            options.launchProtection = nil
        }
        do {
            try CrashShieldSDK.start(options)
            // The capture steps alone (what `startCapture` was before the one start), so the figure
            // stays comparable and apart from the guards' installation.
            startCaptureNs = CrashShieldSDK._lastCaptureStepDuration.nanoseconds
        } catch {
            print("START-FAILED \(error)")
            return 1
        }
        CrashShieldSDK.flushIncidents()
        for status in CrashShieldSDK.status { print("POLICY \(status.id.rawValue) \(status.policy)") }
        let failSafe = sink.incidents.filter { $0.reason.contains("fail-safe") }
        print("FAILSAFE-INCIDENTS \(failSafe.count) \(failSafe.map { $0.guardID.rawValue }.joined(separator: ","))")
        let decoded = CrashCapture._reportsFoundAtStartDecodedForTesting
        print("START-CAPTURE-NS \(startCaptureNs)")
        print("REPORTS-DECODED \(decoded.decoded)/\(decoded.count)")
        print("LAST-RUN \(CrashShieldSDK.lastRun?.outcome.rawValue ?? "none") CRASHED-LAST-RUN \(CrashShieldSDK.crashedLastRun)")
        CrashShieldSDK.launchProtection?.launchCompleted()
        return 0
    }
}
