// shield — CrashShield's command-line tool (SPEC §8).
//
//   shield demo [--json]            every misuse scenario, without and with guards, each in a child
//   shield bench [--json]           every SPEC §9 figure: guard cost, then the capture figures
//   shield crash KIND [--dir D]     install capture and crash on purpose (SPEC §8)
//   shield reports [--json] [--dir D]   pending crash reports, symbolicated
//   shield bench-capture [--json]   the capture figures alone: signal to report on disk, start cost
//   shield launch-probe --dir D     (internal) launch protection end-to-end test child
//   shield rejected-start-probe ... (internal) a second capture start is rejected and changes nothing
//   shield stop-probe --dir D       (internal) stop uninstalls capture and restores the previous handler
//   shield scenario NAME --guarded|--unguarded   (internal) run one scenario in this process
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.first ?? "help"
let rest = Array(arguments.dropFirst())

switch command {
case "demo":
    exit(DemoCommand.run(json: rest.contains("--json"), filter: rest.first { !$0.hasPrefix("--") }))
case "bench":
    let guardStatus = BenchCommand.run(json: rest.contains("--json"))
    let captureStatus = BenchCaptureCommand.run(rest)
    exit(guardStatus != 0 ? guardStatus : captureStatus)
case "crash": exit(CrashCommand.run(rest))
case "reports": exit(ReportsCommand.run(rest))
case "bench-capture": exit(BenchCaptureCommand.run(rest))
case "launch-probe": exit(LaunchProbeCommand.run(rest))
case "failsafe-probe": exit(FailSafeProbeCommand.run(rest))
case "rejected-start-probe": exit(RejectedStartProbeCommand.run(rest))
case "stop-probe": exit(StopProbeCommand.run(rest))
case "scenario":
    guard let name = rest.first else { usage() }
    exit(ScenarioChild.run(name: name, guarded: rest.contains("--guarded")))
default:
    usage()
}

func usage() -> Never {
    let text = """
        usage: shield demo [--json] [NAME-PREFIX]
               shield bench [--json] [--runs N]  (N: crashes and launches for the capture figures)
               shield crash <kind> [--dir D]     kinds: segv bus ill fpe abort trap objc-exception swift-index
                                                 swift-unwrap stack-overflow thread-segv two-threads
               shield reports [--json] [--dir D] [--delete]
               shield bench-capture [--json] [--runs N]
        """
    FileHandle.standardError.write(Data((text + "\n").utf8))
    exit(2)
}
