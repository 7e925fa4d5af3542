// shield-test-probe — the child processes only the tests spawn: each subcommand starts CrashShield
// in one particular way, prints what it saw and ends as the test expects (a crash, a clean exit, a
// hang until killed). It is in no product; `shield-test-probe --help` lists the subcommands.
//
//   rejected-start-probe  a second capture start is rejected and changes nothing (RejectedCaptureStartTests)
//   stop-probe            stop uninstalls capture and restores the previous handler (RejectedCaptureStartTests)
//   outbox-writer         enqueues numbered envelopes until killed (OutboxTests)
//   incident-exit-probe   the incident delivery thread's end at exit, stop and fork (IncidentExitTests)
//   hang-probe            app hangs and exits without a report (AppHangTests)
//
// The children the shield tool's own commands spawn (scenario, launch-probe, failsafe-probe,
// reporting-probe) are subcommands of shield.
import ArgumentParser
import Foundation

struct ShieldTestProbe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shield-test-probe",
        abstract: "Test children of CrashShield's tests (not a user tool).",
        subcommands: [RejectedStartProbe.self, StopProbe.self, OutboxWriter.self, IncidentExitProbe.self, HangProbe.self]
    )
}

/// Ends the command with a body's status (0 returns normally).
func finish(_ status: Int32) throws {
    if status != 0 { throw ExitCode(status) }
}

/// `--flag` for each true flag, in the order given.
func flags(_ pairs: KeyValuePairs<String, Bool>) -> [String] { pairs.filter(\.value).map(\.key) }

/// The value after `name` in `arguments`, if there is one.
func option(_ name: String, in arguments: [String]) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

struct RejectedStartProbe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rejected-start-probe", abstract: "A second capture start is rejected and changes nothing.")
    @Option(help: "The first start's report directory.") var dir: String
    @Option(help: "The second start's report directory.") var otherDir: String
    @Option(help: "capture, capture-c or start-capture.") var first: String
    @Option(help: "capture or start-capture.") var second: String
    func run() throws {
        try finish(RejectedStartProbeCommand.run(["--dir", dir, "--other-dir", otherDir, "--first", first, "--second", second]))
    }
}

struct StopProbe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stop-probe", abstract: "stop uninstalls capture and restores the previous handler.")
    @Option(help: "The report directory.") var dir: String
    @Flag(help: "Capture alone (CrashCapture), not the SDK's one start.") var captureOnly = false
    @Flag(help: "Start again after stopping.") var restart = false
    func run() throws {
        try finish(StopProbeCommand.run(["--dir", dir] + flags(["--capture-only": captureOnly, "--restart": restart])))
    }
}

struct OutboxWriter: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox-writer",
        abstract: "Enqueue numbered envelopes into <dir>/outbox in a loop, printing ACK <n> after each is durable.")
    @Option(help: "The report directory.") var dir: String
    @Option(help: "Stop after this many envelopes (default: never).") var count: Int?
    @Option(help: "The number of the first envelope (default 0).") var first: Int = 0
    func run() throws { try finish(OutboxWriterCommand.run(directory: dir, count: count, first: first)) }
}

struct IncidentExitProbe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "incident-exit-probe",
        abstract: "A slow sink still receiving a burst of incidents when the process exits: the delivery thread's end.")
    @Option(help: "Distinct incidents recorded in the burst (default 200).") var incidents = 200
    @Option(name: .customLong("sink-ms"), help: "Milliseconds the sink sleeps per incident (default 20).") var sinkMilliseconds = 20
    @Option(name: .customLong("watch-ms"), help: "Milliseconds the exit watch waits after the SDK's exit handlers (default 300).")
    var watchMilliseconds = 300
    @Flag(help: "Fork while the delivery thread is busy; the child records and waits for one incident of its own.") var forkChild = false
    @Flag(help: "CrashShieldSDK.stop() after the burst began, before the exit.") var stop = false
    func run() throws {
        try finish(IncidentExitProbeCommand.run(IncidentExitProbeCommand.Arguments(
            incidents: incidents, sinkMilliseconds: sinkMilliseconds, watchMilliseconds: watchMilliseconds,
            forkChild: forkChild, stop: stop)))
    }
}

ShieldTestProbe.main()
