// shield — CrashShield's command-line tool (SPEC §8).
//
//   shield demo [--json]            every misuse scenario, without and with guards, each in a child
//   shield bench [--json]           guard cost on the hot calls (SPEC §9)
//   shield scenario NAME --guarded|--unguarded   (internal) run one scenario in this process
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.first ?? "help"
let rest = Array(arguments.dropFirst())

switch command {
case "demo":
    exit(DemoCommand.run(json: rest.contains("--json"), filter: rest.first { !$0.hasPrefix("--") }))
case "bench":
    exit(BenchCommand.run(json: rest.contains("--json")))
case "scenario":
    guard let name = rest.first else { usage() }
    exit(ScenarioChild.run(name: name, guarded: rest.contains("--guarded")))
default:
    usage()
}

func usage() -> Never {
    let text = """
        usage: shield demo [--json] [NAME-PREFIX]
               shield bench [--json]
        """
    FileHandle.standardError.write(Data((text + "\n").utf8))
    exit(2)
}
