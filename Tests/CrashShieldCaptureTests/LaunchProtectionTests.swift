import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// End to end, with `shield launch-probe` as the app: every launch is a child process.
@Suite struct LaunchProtectionTests {
    struct Probe: Decodable {
        let last_run: String
        let during_launch: Bool
        let consecutive: Int
        let repairs: [String]
        let repairs_failed: [String]
        let exhausted: Bool
        let safe_mode: Bool
        let state_reset: Bool
        let detection: String
    }

    /// One launch; returns what launch protection decided at its start.
    func launch(_ directory: String, _ extra: [String] = [], expect termination: Termination? = nil) throws -> Probe {
        let result = try runChild(Built.shield, ["launch-probe", "--dir", directory] + extra)
        if let termination { #expect(result.termination == termination) }
        let line = try #require(result.output.split(separator: "\n").first { $0.hasPrefix("{") })
        return try JSONDecoder().decode(Probe.self, from: Data(line.utf8))
    }

    /// A launch that is killed with SIGKILL while it is still launching.
    func killedLaunch(_ directory: String) throws -> Probe {
        let child = try Child(Built.shield, ["launch-probe", "--dir", directory, "--hang"])
        #expect(child.waitForOutput(containing: "}"))
        kill(child.process.processIdentifier, SIGKILL)
        let result = child.wait()
        #expect(result.termination == .signaled(SIGKILL))
        let line = try #require(result.output.split(separator: "\n").first { $0.hasPrefix("{") })
        return try JSONDecoder().decode(Probe.self, from: Data(line.utf8))
    }

    /// Repair steps are `async throws` closures run while `start` waits, here on the main thread of
    /// a command-line app: a step that needs the main actor times out and fails (no deadlock; the
    /// launch goes on), the next launch crash runs the next step, whose awaited sleep succeeds.
    @Test func asyncStepsRunWhileStartWaitsOnTheMainThread() throws {
        let directory = temporaryDirectory("async-steps")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var state = LaunchProtection.State()
        state.launchId = "previous"
        state.phase = "launching"
        state.consecutiveLaunchCrashes = 2
        LaunchProtection.writeState(state, to: "\(directory)/launch-state")
        // The timer method counts the previous launch (it never completed) as a launch crash.
        var probe = try launch(directory, ["--no-capture", "--main-actor-step", "--crash"], expect: .signaled(SIGSEGV))
        #expect(probe.consecutive == 3)
        #expect(probe.repairs == ["needs-main-actor"])
        #expect(probe.repairs_failed == ["needs-main-actor"])
        probe = try launch(directory, ["--no-capture", "--main-actor-step"], expect: .exited(0))
        #expect(probe.repairs == ["awaits-sleep"])
        #expect(probe.repairs_failed.isEmpty)
    }

    @Test func crashLoopIsRepairedEscalatesAndEnds() throws {
        let directory = temporaryDirectory("launch")
        defer { try? FileManager.default.removeItem(atPath: directory) }

        var probe = try launch(directory, ["--crash"], expect: .signaled(SIGSEGV))
        #expect(probe.last_run == "first_launch")
        probe = try launch(directory, ["--crash"], expect: .signaled(SIGSEGV))
        #expect(probe.last_run == "crashed")
        #expect(probe.during_launch)
        #expect(probe.consecutive == 1)

        // kill -9 during launch: no report, so it neither counts nor resets.
        probe = try killedLaunch(directory)
        #expect(probe.consecutive == 2)
        probe = try launch(directory, ["--crash"], expect: .signaled(SIGSEGV))
        #expect(probe.last_run == "ended_without_report")
        #expect(probe.consecutive == 2)
        #expect(probe.repairs.isEmpty)

        // Third consecutive launch crash: the threshold. The first step runs before launch.
        probe = try launch(directory, ["--crash"], expect: .signaled(SIGSEGV))
        #expect(probe.consecutive == 3)
        #expect(probe.repairs == ["safe-mode"])
        #expect(probe.safe_mode)
        // Still crashing: escalate to the next step each launch, never repeating one.
        probe = try launch(directory, ["--crash"], expect: .signaled(SIGSEGV))
        #expect(probe.repairs == ["step-two"])
        probe = try launch(directory, ["--crash"], expect: .signaled(SIGSEGV))
        #expect(probe.repairs == ["step-three"])
        probe = try launch(directory, ["--crash"], expect: .signaled(SIGSEGV))
        #expect(probe.repairs.isEmpty)
        #expect(probe.exhausted)

        // The app starts normally: the launch completes and the count resets.
        probe = try launch(directory, [], expect: .exited(0))
        #expect(probe.consecutive == 7)
        probe = try launch(directory, [], expect: .exited(0))
        #expect(probe.last_run == "clean_exit")
        #expect(probe.consecutive == 0)
        #expect(probe.repairs.isEmpty)
        #expect(probe.safe_mode, "safe mode stays on until the app ends it")
    }

    /// A repair step that itself crashes is a launch crash (its report says "launching"), so the
    /// next launch runs the next step at once (README, CAPTURE.md), instead of the count starting
    /// over and the next step waiting for `threshold` more crashing launches.
    @Test func crashInsideARepairStepEscalatesAtTheNextLaunch() throws {
        let directory = temporaryDirectory("step-crash")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--crashing-step", "--threshold", "2"]
        _ = try launch(directory, arguments + ["--crash"], expect: .signaled(SIGSEGV))
        var probe = try launch(directory, arguments + ["--crash"], expect: .signaled(SIGSEGV))
        #expect(probe.consecutive == 1 && probe.repairs.isEmpty)

        // The threshold: step "crashes" runs before launch and the process dies inside it.
        let crashed = try runChild(Built.shield, ["launch-probe", "--dir", directory] + arguments)
        #expect(crashed.termination == .signaled(SIGSEGV))
        #expect(!crashed.output.contains("{"), "start never returned")
        let reports = loadReports(directory, symbolicate: false).sorted { ($0.timestampNs ?? 0) < ($1.timestampNs ?? 0) }
        #expect(reports.count == 3)
        #expect(reports.last?.launchPhase == .launching)

        probe = try launch(directory, arguments, expect: .exited(0))
        #expect(probe.last_run == "crashed")
        #expect(probe.during_launch)
        #expect(probe.consecutive == 3)
        #expect(probe.repairs == ["after-crash"])
    }

    @Test func corruptStateFileIsSurvived() throws {
        let directory = temporaryDirectory("corrupt")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try launch(directory, [], expect: .exited(0))
        let valid = try #require(FileManager.default.contents(atPath: "\(directory)/launch-state"))
        var flipped = [UInt8](valid)
        flipped[flipped.count / 2] ^= 0x01
        let damaged = [
            Data("crashshield-launch-state 1\nconsecutive_launch_crashes=-4\nchecksum=0\n".utf8),
            Data("\u{0}\u{1}garbage".utf8), Data(flipped), valid.prefix(valid.count / 2), Data(),
        ]
        for garbage in damaged {
            try garbage.write(to: URL(fileURLWithPath: "\(directory)/launch-state"))
            let probe = try launch(directory, [], expect: .exited(0))
            #expect(probe.state_reset)
            #expect(probe.last_run == "first_launch")
            #expect(probe.consecutive == 0)
        }
        let probe = try launch(directory, [], expect: .exited(0))
        #expect(!probe.state_reset)
        #expect(probe.last_run == "clean_exit")
    }

    /// Without capture the timer method counts a launch that never completed — including a
    /// kill -9 (the documented false positive).
    @Test func timerMethodWithoutCapture() throws {
        let directory = temporaryDirectory("timer")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try launch(directory, ["--no-capture", "--crash"], expect: .signaled(SIGSEGV))
        var probe = try launch(directory, ["--no-capture", "--crash"], expect: .signaled(SIGSEGV))
        #expect(probe.detection == "timer")
        #expect(probe.consecutive == 1)
        let child = try Child(Built.shield, ["launch-probe", "--dir", directory, "--no-capture", "--hang"])
        #expect(child.waitForOutput(containing: "}"))
        kill(child.process.processIdentifier, SIGKILL)
        _ = child.wait()
        probe = try launch(directory, ["--no-capture"], expect: .exited(0))
        #expect(probe.consecutive == 3)
        #expect(probe.repairs == ["safe-mode"])
    }

    /// In-process: the state file is written atomically and read back identically.
    @Test func stateRoundTrips() throws {
        let directory = temporaryDirectory("state")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var state = LaunchProtection.State()
        state.launchId = "x"
        state.phase = "running"
        state.consecutiveLaunchCrashes = 2
        state.attemptedSteps = ["safe-mode"]
        LaunchProtection.writeState(state, to: "\(directory)/launch-state")
        let data = try #require(FileManager.default.contents(atPath: "\(directory)/launch-state"))
        #expect(LaunchProtection.decodeState(data) == state)
        #expect((try FileManager.default.contentsOfDirectory(atPath: directory)) == ["launch-state"])
    }

    /// Rewriting swaps the new file in (RENAME_EXCHANGE) and removes the old one; values cannot
    /// forge lines or steps; the written file keeps the version-1 format byte for byte.
    @Test func stateRewriteSwapsAndCleansValues() throws {
        let directory = temporaryDirectory("rewrite")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/launch-state"
        var state = LaunchProtection.State()
        state.launchId = "first"
        LaunchProtection.writeState(state, to: path)
        state.launchId = "second\nphase=exited"
        state.phase = "launching"
        state.appVersion = "2.0,beta\r"
        state.consecutiveLaunchCrashes = 4
        state.attemptedSteps = ["safe-mode", "a,b", "c\nd"]
        state.safeMode = true
        #expect(LaunchProtection.writeState(state, to: path))
        #expect((try FileManager.default.contentsOfDirectory(atPath: directory)) == ["launch-state"])
        let data = try #require(FileManager.default.contents(atPath: path))
        let text = String(decoding: data, as: UTF8.self)
        let body = "crashshield-launch-state 1\nlaunch_id=second_phase=exited\nphase=launching\napp_version=2.0_beta_\n"
            + "consecutive_launch_crashes=4\nattempted_steps=safe-mode,a_b,c_d\nsafe_mode=1\n"
        #expect(text == body + "checksum=" + String(fnv1a(Array(body.utf8)), radix: 16) + "\n")
        let decoded = try #require(LaunchProtection.decodeState(data))
        #expect(decoded.launchId == "second_phase=exited")
        #expect(decoded.appVersion == "2.0_beta_")
        #expect(decoded.attemptedSteps == ["safe-mode", "a_b", "c_d"])
        #expect(decoded.safeMode && decoded.consecutiveLaunchCrashes == 4)

        // Reader rules of version 1: empty lines skipped, unknown keys ignored, "+2" is 2.
        let extra = "crashshield-launch-state 1\n\nfuture_key=x\nconsecutive_launch_crashes=+2\nsafe_mode=0\n"
        let newer = Data((extra + "checksum=" + String(fnv1a(Array(extra.utf8)), radix: 16) + "\n").utf8)
        #expect(LaunchProtection.decodeState(newer)?.consecutiveLaunchCrashes == 2)
        let headerless = "consecutive_launch_crashes=2\n"
        #expect(LaunchProtection.decodeState(Data((headerless + "checksum=" + String(fnv1a(Array(headerless.utf8)), radix: 16) + "\n").utf8)) == nil)
    }

    @Test func launchIDsAreLowercaseVersion4UUIDs() {
        let first = makeLaunchID(), second = makeLaunchID()
        #expect(first != second)
        let uuid = UUID(uuidString: first)
        #expect(uuid != nil && first == first.lowercased() && first.count == 36)
        #expect(Array(first)[14] == "4")
    }

    private func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        bytes.reduce(0xcbf2_9ce4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }
}

/// In-process checks of launch protection without capture (no signal handlers are installed).
@Suite struct LaunchProtectionUnitTests {
    @Test func appUpdateIsReported() throws {
        let directory = temporaryDirectory("update")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = LaunchProtection.begin(directory: directory, appVersion: "1.0", captureEnabled: false)
        #expect(first.lastRun.outcome == .firstLaunch)
        first.launchCompleted()
        first.markExited()
        let second = LaunchProtection.begin(directory: directory, appVersion: "1.1", captureEnabled: false)
        #expect(second.lastRun.outcome == .cleanExit)
        #expect(second.lastRun.appUpdated)
        #expect(second.lastRun.previousAppVersion == "1.0")
        second.launchCompleted()
    }

    /// The launch window ends the launch by itself (on its own thread) and persists it.
    @Test func launchWindowCompletesTheLaunch() throws {
        let directory = temporaryDirectory("window")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = LaunchProtectionOptions()
        options.launchWindow = .milliseconds(50)
        let protection = LaunchProtection.begin(directory: directory, options: options, captureEnabled: false)
        let deadline = Date().addingTimeInterval(20)
        while !protection.isLaunchCompleted && Date() < deadline { usleep(10_000) }
        #expect(protection.isLaunchCompleted)
        let state = try #require(LaunchProtection.readState("\(directory)/launch-state").0)
        #expect(state.phase == "running")
    }

    /// With capture, the window's timer is started by the app-hang watchdog after the start
    /// returned: the launch still completes by itself, after the window and not long after it,
    /// both with hang detection on (the default) and without; the next start sees a clean exit.
    @Test(arguments: [false, true]) func launchWindowCompletesTheLaunchWithCapture(hangDetectionOff: Bool) throws {
        let directory = temporaryDirectory("window-capture")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try runChild(Built.shield, ["launch-probe", "--dir", directory, "--window-ms", "150"]
                                   + (hangDetectionOff ? ["--no-hang-detection"] : []))
        #expect(run.termination == .exited(0))
        let line = try #require(run.output.split(separator: "\n").first { $0.hasPrefix("WINDOW-COMPLETED-AFTER-MS ") },
                                "output: \(run.output)")
        let milliseconds = try #require(Int(line.dropFirst("WINDOW-COMPLETED-AFTER-MS ".count)))
        #expect(milliseconds >= 150)
        let state = try #require(LaunchProtection.readState("\(directory)/launch-state").0)
        #expect(state.phase == "exited")
        #expect(state.consecutiveLaunchCrashes == 0)
    }

    /// A step that never calls its completion fails after its timeout and the launch goes on; its
    /// marker is persisted, so the next launch crash runs the next step instead.
    @Test func stepTimeoutFailsTheStepAndEscalates() throws {
        let directory = temporaryDirectory("timeout")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var state = LaunchProtection.State()
        state.launchId = "previous"
        state.phase = "launching"
        state.consecutiveLaunchCrashes = 2
        LaunchProtection.writeState(state, to: "\(directory)/launch-state")
        var options = LaunchProtectionOptions()
        options.launchWindow = .seconds(60)
        options.repairSteps = [
            RepairStep(id: "never-completes", timeout: .milliseconds(200)) { _ in try await Task.sleep(for: .seconds(3600)) },
            .run(id: "second") { _ in },
        ]
        let protection = LaunchProtection.begin(directory: directory, options: options, captureEnabled: false)
        #expect(protection.consecutiveLaunchCrashes == 3)
        #expect(protection.repairsRun == ["never-completes"])
        #expect(protection.repairsFailed == ["never-completes"])
        // The launch crashes (timer method: it never completes); the next start escalates.
        LaunchProtection.forgetLaunchForTesting(directory: directory)
        let next = LaunchProtection.begin(directory: directory, options: options, captureEnabled: false)
        #expect(next.repairsRun == ["second"])
        #expect(next.repairsFailed.isEmpty)
        next.launchCompleted()
    }

    /// A second `begin` for a directory whose launch in this process is running
    /// changes nothing. It took the running launch for a previous run that never completed: with
    /// the timer method a launch crash, counted, persisted, and repaired at the threshold.
    @Test func secondBeginOfARunningLaunchChangesNothing() throws {
        let directory = temporaryDirectory("begin-twice")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = LaunchProtectionOptions()
        options.launchWindow = .seconds(60)
        options.threshold = 1
        let repairs = RepairRecorder()
        options.repairSteps = [.run(id: "records") { _ in repairs.record() }]
        let first = LaunchProtection.begin(directory: directory, options: options, appVersion: "1.0", captureEnabled: false)
        defer { first.launchCompleted() }
        let stateBefore = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/launch-state"))

        let second = LaunchProtection.begin(directory: directory + "/", options: options, appVersion: "2.0",
                                            captureEnabled: false)
        #expect(second === first)
        #expect(second.consecutiveLaunchCrashes == 0)
        #expect(second.repairsRun.isEmpty)
        #expect(repairs.count == 0, "the rejected begin ran a repair step")
        let stateAfter = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/launch-state"))
        #expect(stateAfter == stateBefore, "the rejected begin rewrote the launch state")
        let state = try #require(LaunchProtection.readState("\(directory)/launch-state").0)
        #expect(state.launchId == first.launchID)
        #expect(state.consecutiveLaunchCrashes == 0)
        #expect(state.appVersion == "1.0")
    }

    /// Built-in steps: quarantine moves files aside (recoverable), never the SDK's own directory.
    @Test func quarantineMovesFilesAsideAndSparesSDKState() throws {
        let directory = temporaryDirectory("quarantine")
        let data = temporaryDirectory("quarantine-data")
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: data)
        }
        #expect(FileManager.default.createFile(atPath: "\(data)/db.sqlite", contents: Data("db".utf8)))
        var state = LaunchProtection.State()
        state.launchId = "previous"
        state.phase = "launching"
        state.consecutiveLaunchCrashes = 5
        LaunchProtection.writeState(state, to: "\(directory)/launch-state")
        var options = LaunchProtectionOptions()
        options.launchWindow = .seconds(60)
        options.repairSteps = [.quarantine(["\(data)/db.sqlite", directory])]
        let protection = LaunchProtection.begin(directory: directory, options: options, captureEnabled: false)
        #expect(protection.repairsRun == ["quarantine"])
        #expect(!FileManager.default.fileExists(atPath: "\(data)/db.sqlite"))
        let folders = try FileManager.default.contentsOfDirectory(atPath: "\(directory)/quarantine")
        #expect(folders.count == 1)
        #expect(FileManager.default.fileExists(atPath: "\(directory)/quarantine/\(folders[0])/db.sqlite"))
        #expect(FileManager.default.fileExists(atPath: "\(directory)/launch-state"))
        protection.launchCompleted()
    }

    /// Built-in steps clear, reset and delete what they are given, and never the SDK's own state:
    /// not the SDK directory, not a cache entry that holds it, not a file inside it.
    @Test func builtInStepsNeverTouchSDKState() async throws {
        let root = temporaryDirectory("steps")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let fm = FileManager.default
        let caches = "\(root)/caches", sdk = "\(root)/caches/sdk", other = "\(root)/caches/other"
        for directory in [sdk, other] { try fm.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        let files = ["\(caches)/image.png", "\(other)/x", "\(sdk)/launch-state", "\(root)/remote.json",
                     "\(root)/user.db"]
        for file in files { #expect(fm.createFile(atPath: file, contents: Data("x".utf8)), "\(file)") }
        let context = RepairContext(directory: sdk, consecutiveLaunchCrashes: 3, lastReport: nil)
        func run(_ step: RepairStep) async -> Bool {
            do {
                try await step.body(context)
                return true
            } catch {
                return false
            }
        }

        #expect(await run(.clearCaches([caches, sdk])))
        #expect(fm.fileExists(atPath: caches))
        #expect(!fm.fileExists(atPath: "\(caches)/image.png"))
        #expect(!fm.fileExists(atPath: other))
        #expect(fm.fileExists(atPath: "\(sdk)/launch-state"))

        #expect(await run(.resetRemoteConfiguration(["\(root)/remote.json", "\(sdk)/launch-state"])))
        #expect(!fm.fileExists(atPath: "\(root)/remote.json"))
        #expect(fm.fileExists(atPath: "\(sdk)/launch-state"))

        #expect(await run(.deleteUserData(["\(root)/user.db"], explicitOptIn: false)))
        #expect(fm.fileExists(atPath: "\(root)/user.db"))
        #expect(await run(.deleteUserData(["\(root)/user.db", sdk], explicitOptIn: true)))
        #expect(!fm.fileExists(atPath: "\(root)/user.db"))
        #expect(fm.fileExists(atPath: "\(sdk)/launch-state"))
    }
}

/// Counts the runs of a repair step (steps run on their own thread).
private final class RepairRecorder: Sendable {
    private let runs = Locked(0)
    func record() { runs.withLock { $0 += 1 } }
    var count: Int { runs.withLock { $0 } }
}
