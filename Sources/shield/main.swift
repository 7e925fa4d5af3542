// shield — CrashShield's command-line tool. `shield --help` and `shield <command> --help`
// list the commands and their options; unknown options are errors.
//
//   shield demo [--json] [PREFIX]     every misuse scenario, without and with guards, each in a child
//   shield bench [--json] [--runs N]  all figures: guard cost, then the capture figures
//   shield crash KIND [--dir D]       install capture and crash on purpose
//   shield reports [--json] [--dir D] pending crash reports, symbolicated
//   shield bench-capture [--json]     the capture figures alone: signal to report on disk, start cost
//   shield bench-reporting [--json]   the reporting figures alone: outbox enqueues, start with reporting, crash conversion, one breadcrumb
//   shield bench-hangs [--json]       the app-hang figures alone: heartbeat cost, CPU with the main thread idle
//   shield send --dsn DSN --dir D     convert pending crash reports, upload the outbox
//   shield envelope --dir D [--dsn]   print the envelopes that would be sent
// Hidden: the children these commands spawn (scenario for demo, launch-probe and failsafe-probe for
// bench-capture, reporting-probe for bench-reporting). Children only the tests spawn are
// subcommands of shield-test-probe (Tests/Probes/shield-test-probe), not of this tool.
//
// Each command below only declares its arguments and hands them, in the form the command bodies
// (the *Command.swift files) have always read, to those bodies.
import CrashShieldProtocol
import ArgumentParser
import Foundation

struct Shield: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shield",
        abstract: "CrashShield's command-line tool: demo, benchmarks, deliberate crashes, reports and their upload.",
        subcommands: [
            Demo.self, Bench.self, Crash.self, Reports.self, BenchCapture.self, BenchReporting.self, BenchHangs.self, Send.self, EnvelopeList.self,
            Scenario.self, LaunchProbe.self, FailSafeProbe.self, ReportingProbe.self,
        ]
    )
}

/// Ends the command with a body's status (0 returns normally).
func finish(_ status: Int32) throws {
    if status != 0 { throw ExitCode(status) }
}

/// `--flag` for each true flag, in the order given.
func flags(_ pairs: KeyValuePairs<String, Bool>) -> [String] { pairs.filter(\.value).map(\.key) }

/// `[name, value]` when the value is present.
func option(_ name: String, _ value: CustomStringConvertible?) -> [String] { value.map { [name, $0.description] } ?? [] }

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run every misuse scenario without and with guards, each in a child process.",
        discussion: "Exits 0 only if every guarded run is `ok` with at least one incident.")
    @Flag(help: "One JSON object per scenario and line.") var json = false
    @Argument(help: "Only the scenarios whose name starts with this prefix.") var prefix: String?
    func run() throws { try finish(DemoCommand.run(json: json, filter: prefix)) }
}

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Measure guard cost, then the capture, reporting and app-hang figures.")
    @Flag(help: "One JSON object per case and line.") var json = false
    @Option(help: "Crashes and launches for the capture figures (default 20).") var runs: Int?
    func run() throws {
        let guardStatus = BenchCommand.run(json: json)
        let captureStatus = BenchCaptureCommand.run(flags(["--json": json]) + option("--runs", runs))
        let reportingStatus = ReportingBenchCommand.run(json: json, runs: runs)
        let hangStatus = HangBenchCommand.run(json: json, seconds: 5)
        try finish([guardStatus, captureStatus, reportingStatus, hangStatus].first { $0 != 0 } ?? 0)
    }
}

struct BenchReporting: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-reporting", abstract: "The reporting figures alone: outbox enqueues, start cost with reporting, converting one crash report, adding one breadcrumb.")
    @Flag(help: "One JSON object per case and line.") var json = false
    @Option(help: "Enqueues ÷ 10 (default 20, i.e. 200 enqueues).") var runs: Int?
    func run() throws { try finish(ReportingBenchCommand.run(json: json, runs: runs)) }
}

struct BenchCapture: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-capture", abstract: "The capture figures alone: signal to report on disk, start cost.")
    @Flag(help: "One JSON object per case and line.") var json = false
    @Option(help: "Crashes and launches per figure (default 20).") var runs: Int?
    func run() throws { try finish(BenchCaptureCommand.run(flags(["--json": json]) + option("--runs", runs))) }
}

struct Crash: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Install crash capture and crash on purpose.",
        discussion: "Kinds: \(CrashCommand.kinds.joined(separator: " ")).")
    @Argument(help: "What crash to cause (segv, bus, ill, fpe, abort, trap, objc-exception, swift-index, swift-unwrap, stack-overflow, thread-segv, two-threads, ...).")
    var kind: String
    @Option(help: "The report directory.") var dir: String?
    @Option(help: "The app name recorded in the report.") var appName: String?
    @Flag(help: "Start the guards before capture.") var guards = false
    @Flag(help: "Start the guards after capture.") var guardsAfterCapture = false
    @Option(help: "<guard>=<neutralize|reportOnly|off> after the guards started (repeatable).") var setPolicy: [String] = []
    @Flag(help: "Park a crashed background thread and let the process go on.") var recover = false
    // Test setups (hidden from help).
    @Flag(help: .hidden) var crashInHandler = false
    @Flag(help: .hidden) var hangInHandler = false
    @Flag(help: .hidden) var occupyReportName = false
    @Flag(help: .hidden) var previousHandler = false
    @Flag(help: .hidden) var resethandPrevious = false
    @Flag(help: .hidden) var slowPreviousHandlers = false
    @Flag(help: .hidden) var previousTrapHandler = false
    @Flag(help: .hidden) var appTerminateHandler = false
    @Flag(help: .hidden) var ignoreSigpipe = false
    @Flag(help: .hidden) var ignoreSigtrap = false
    @Flag(help: .hidden) var fromThread = false
    @Flag(help: .hidden) var parentCrashes = false
    @Option(help: .hidden) var jumpFrom: String?
    @Option(help: .hidden) var then: String?
    @Option(help: .hidden) var fsizeLimit: String?
    @Flag(help: .hidden) var exhaustFds = false
    @Flag(help: .hidden) var removeDir = false
    @Flag(help: .hidden) var unwritableDir = false
    @Option(help: .hidden) var threadName: String?
    @Option(help: .hidden) var reason: String?
    @Option(help: "With `scenario`: the misuse scenario to run uncaught (`shield demo` names).") var scenario: String?

    // Scope before the crash (user, tags, contexts, breadcrumbs; see ScopeSetup).
    @Option(help: "Set the user (id, username user-<id>, email <id>@example.com).") var user: String?
    @Option(help: "<key>=<value>: a tag (repeatable).") var tag: [String] = []
    @Option(help: "<name>.<key>=<value>: a context value (repeatable).") var context: [String] = []
    @Option(help: "A breadcrumb message (repeatable).") var breadcrumb: [String] = []
    @Flag(help: .hidden) var oversizeScope = false
    // Remote configuration (see CrashCommand).
    @Option(help: "Activate the remote configuration stored in the directory and fetch from this DSN before crashing.")
    var remoteConfigDsn: String?
    @Option(help: "The Ed25519 public key (base64) remote configuration documents must be signed with.")
    var remoteConfigKey: String?
    @Option(help: "The app version remote configuration rules are matched against.") var appVersion: String?
    @Option(help: .hidden) var scopeChurn: Int?

    /// The body reads the command line as given (the order of repeated scope options matters);
    /// the declarations above only validate it and document it.
    func run() throws { try finish(CrashCommand.run(commandLineAfterSubcommand())) }
}

/// The arguments after `shield <subcommand>`, as typed, with `--name=value` split into
/// `--name value` (the form the command bodies read).
func commandLineAfterSubcommand() -> [String] {
    CommandLine.arguments.dropFirst(2).flatMap { argument -> [String] in
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return [argument] }
        return [String(argument[..<equals]), String(argument[argument.index(after: equals)...])]
    }
}

struct Reports: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List and print the pending crash reports, symbolicated.")
    @Flag(help: "One JSON object per report and line.") var json = false
    @Option(help: "The report directory.") var dir: String?
    @Flag(help: "Print addresses without symbolicating them.") var noSymbolicate = false
    @Flag(help: "Remove each report after printing it.") var delete = false
    func run() throws {
        try finish(ReportsCommand.run(
            option("--dir", dir) + flags(["--json": json, "--no-symbolicate": noSymbolicate, "--delete": delete])))
    }
}

struct Send: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Convert the pending crash reports of a directory and upload its outbox to a Sentry-compatible server.",
        discussion: "Prints one line per envelope; exits 1 when something could not be sent (it stays for the next try), 2 for a bad DSN or directory.")
    @Option(help: "The client key: http(s)://<public key>@<host>[:port]/<project id>.") var dsn: String
    @Option(help: "The report directory (its outbox is <dir>/outbox).") var dir: String
    @Option(help: "Seconds to wait for each response (default 15).") var timeout: Double = 15
    func run() throws { try finish(SendCommand.run(dsn: dsn, directory: dir, timeout: timeout)) }
}

struct EnvelopeList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "envelope", abstract: "Print the envelopes that would be sent from a report directory, oldest first.")
    @Option(help: "The report directory (its outbox is <dir>/outbox).") var dir: String
    @Option(help: "Also show the envelopes the pending crash reports would become for this DSN.") var dsn: String?
    func run() throws { try finish(SendCommand.printEnvelopes(directory: dir, dsn: dsn)) }
}

// MARK: Hidden children of the commands above

struct Scenario: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "(internal) Run one misuse scenario in this process; prints RESULT <outcome> <incidents>.", shouldDisplay: false)
    @Argument(help: "The scenario's name.") var name: String
    @Flag(help: "With the guards started.") var guarded = false
    @Flag(help: "Without guards (the default).") var unguarded = false
    func run() throws { try finish(ScenarioChild.run(name: name, guarded: guarded)) }
}

struct LaunchProbe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "launch-probe", abstract: "(internal) The launch-protection end-to-end test child.", shouldDisplay: false)
    @Option(help: "The report directory.") var dir: String
    @Flag(help: "Crash during the launch.") var crash = false
    @Flag(help: "Wait to be killed during the launch.") var hang = false
    @Flag(help: "Launch protection without capture.") var noCapture = false
    @Option(help: "Consecutive launch crashes before repair (default 3).") var threshold: Int?
    @Flag(help: "A repair step that crashes.") var crashingStep = false
    @Flag(help: "A repair step that runs on the main actor.") var mainActorStep = false
    @Flag(help: "Make the directory unwritable after start.") var unwritableDir = false
    @Flag(help: "Fill the directory's file system after start (<dir>/filler).") var fillDisk = false
    @Flag(help: "Make stderr a full pipe nobody reads after start.") var stderrFullPipe = false
    @Option(help: "Set RLIMIT_FSIZE to this many bytes after start.") var fsizeLimit: String?
    @Option(help: "A launch window of this many milliseconds; wait for it to complete the launch.") var windowMs: Int?
    @Flag(help: "Capture without app-hang detection.") var noHangDetection = false
    func run() throws {
        try finish(LaunchProbeCommand.run(
            ["--dir", dir] + option("--threshold", threshold) + option("--fsize-limit", fsizeLimit)
                + option("--window-ms", windowMs)
                + flags(["--crash": crash, "--hang": hang, "--no-capture": noCapture, "--crashing-step": crashingStep,
                         "--main-actor-step": mainActorStep, "--unwritable-dir": unwritableDir,
                         "--fill-disk": fillDisk, "--stderr-full-pipe": stderrFullPipe,
                         "--no-hang-detection": noHangDetection])))
    }
}

struct FailSafeProbe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "failsafe-probe", abstract: "(internal) Guards, then capture with the fail-safe; prints what it decided.",
        shouldDisplay: false)
    @Option(help: "The report directory.") var dir: String
    @Flag(help: "Start launch protection too.") var launchProtection = false
    func run() throws { try finish(FailSafeProbeCommand.run(["--dir", dir] + flags(["--launch-protection": launchProtection]))) }
}

Shield.main()

struct ReportingProbe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reporting-probe", abstract: "(internal) The one start with reporting: the reporting end-to-end test child.",
        shouldDisplay: false)
    @Option(help: "The report directory.") var dir: String
    @Option(help: "Report to this DSN (without: no reporting).") var dsn: String?
    @Flag(help: "CrashCapture.start(_:launchProtection:reporting:) instead of the SDK's start.") var captureOnly = false
    @Flag(help: "Crash (SIGSEGV) during the launch.") var crashDuringLaunch = false
    @Flag(help: "One misuse of the Swift access guard after start.") var incident = false
    @Flag(help: "stop() after start, then one more misuse.") var stop = false
    @Option(help: "Launch crashes before repair (default 3).") var threshold: Int?
    @Flag(help: "A repair step that prints how many envelopes the outbox holds.") var probeStep = false
    @Option(help: "ReportingOptions.launchCrashFlushTimeout in seconds.") var launchFlushTimeout: Double?
    @Option(help: "ReportingOptions.exitFlushTimeout in seconds.") var exitFlushTimeout: Double?
    @Option(help: "ReportingOptions.remoteConfigPublicKey (base64).") var remoteConfigPublicKey: String?
    @Flag(help: "The SDK's start with capture off.") var noCapture = false
    @Flag(help: "Before exiting, wait (up to 10 s) for the start's background remote-configuration fetch.")
    var waitForRemoteConfig = false
    @Flag(help: "Leave options.capture unassigned (a remote configuration rule may switch it); print CAPTURE installed=… sigsegv=….")
    var defaultCapture = false
    @Flag(help: "RepairStep.resetRemoteConfiguration() as the first repair step.") var resetRemoteConfigStep = false
    @Option(help: "ReportingOptions.release (default probe@1.0).") var release: String?
    @Option(help: "Run this Objective-C misuse scenario (`shield demo` names) under the guards after start.") var scenario: String?
    @Flag(help: "Run --scenario with no try/catch around it: what the guards let through ends the process.")
    var uncaughtScenario = false
    @Flag(help: "Every guard's policy defaults to off (CrashShieldOptions.defaultPolicy); a remote document may switch one on.")
    var guardsOff = false
    @Flag(help: "Mark the launch completed after start (launchCompleted()).") var completeLaunch = false
    @Flag(help: "Mark the launch completed, then crash (SIGSEGV in csc_crash_segv).") var crashAfterLaunch = false
    @Option(name: .customLong("hold-requests-ms"), help: "Hold every reporting request this many milliseconds before sending it (a cancellation ends the hold).")
    var holdRequestsMilliseconds: Int?
    @Option(name: .customLong("watch-exit-teardown-ms"), help: "After reporting's exit handler, watch the outbox for this many milliseconds and print TEARDOWN ….")
    var watchExitTeardownMilliseconds: Int?
    @Flag(help: "After start, fork a child that exits at once (running the exit handlers); print FORK child=….")
    var forkChildExits = false
    @Option(help: "Before the start, RemoteConfiguration.activate with this DSN (its own background fetch, no reporting).")
    var standaloneRemoteConfig: String?
    @Flag(help: "After start, set a user and a tag, capture(error:) and capture(message:), then flush; print CAPTURED … FLUSH ….")
    var captureHandled = false
    @Flag(help: "Before the start, use Objective-C once (an autorelease pool and a message to NSObject), as an app has by then.")
    var objcUsedBefore = false
    @Option(name: .customLong("stay-ms"), help: "Live this many milliseconds more before exiting (the run record is written 20 ms after the start).")
    var stayMilliseconds: Int?
    @Flag(help: "An incident sink that crashes; one misuse 200 ms after the start.") var crashInSink = false
    @Option(help: "Before the start, register this many empty NSObject subclasses (an app's own classes).")
    var appClasses = 0
    func run() throws {
        try finish(ReportingProbeCommand.run(ReportingProbeCommand.Arguments(
            directory: dir, dsn: dsn, captureOnly: captureOnly, crashDuringLaunch: crashDuringLaunch, incident: incident,
            stop: stop, threshold: threshold, probeStep: probeStep, launchFlushTimeout: launchFlushTimeout,
            exitFlushTimeout: exitFlushTimeout, remoteConfigPublicKey: remoteConfigPublicKey,
            noCapture: noCapture, waitForRemoteConfig: waitForRemoteConfig,
            defaultCapture: defaultCapture, resetRemoteConfigStep: resetRemoteConfigStep, release: release, scenario: scenario,
            completeLaunch: completeLaunch, crashAfterLaunch: crashAfterLaunch,
            holdRequestsMilliseconds: holdRequestsMilliseconds, watchExitTeardownMilliseconds: watchExitTeardownMilliseconds,
            forkChildExits: forkChildExits, standaloneRemoteConfigDSN: standaloneRemoteConfig, captureHandled: captureHandled,
            objcUsedBefore: objcUsedBefore, uncaughtScenario: uncaughtScenario, guardsOff: guardsOff,
            stayMilliseconds: stayMilliseconds, crashInSink: crashInSink, appClasses: appClasses)))
    }
}
