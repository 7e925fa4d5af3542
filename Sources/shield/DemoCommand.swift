import CrashShieldProtocol
import Foundation
import _CrashShieldScenarios

/// `shield demo`: every misuse scenario, once without guards and once with, each in a child
/// process. Exits 0 only when every guarded run is `ok` with at least one incident.
enum DemoCommand {
    struct Row {
        let scenario: String
        let guardName: String
        var unguarded = ""
        var guarded = ""
        var incidents: UInt64 = 0
        var passed: Bool { guarded == "ok" && incidents > 0 }
    }

    static func run(json: Bool, filter: String?) -> Int32 {
        var rows = (0..<cs_scenario_count()).map { index -> Row in
            let scenario = cs_scenario_at(index).pointee
            return Row(scenario: String(cString: scenario.name), guardName: String(cString: scenario.guard_name))
        } + SwiftScenarios.all.map { Row(scenario: $0.name, guardName: $0.guardID.rawValue) }
        if let filter { rows = rows.filter { $0.scenario.hasPrefix(filter) } }

        let executable = ChildProcess.currentExecutable
        let results = UnsafeMutableBufferPointer<Row>.allocate(capacity: rows.count)
        _ = results.initialize(from: rows)
        defer { results.deallocate() }
        let resultsBase = UnsafeSendablePointer(results.baseAddress!)
        DispatchQueue.concurrentPerform(iterations: rows.count) { index in
            var row = resultsBase.pointer[index]
            let unguarded = outcome(executable, row.scenario, guarded: false)
            let guarded = outcome(executable, row.scenario, guarded: true)
            row.unguarded = unguarded.outcome
            row.guarded = guarded.outcome
            row.incidents = guarded.incidents
            resultsBase.pointer[index] = row
        }
        let finished = Array(results)
        if json {
            for row in finished {
                print(
                    "{\"scenario\": \(quoted(row.scenario)), \"guard\": \(quoted(row.guardName)), "
                        + "\"unguarded\": \(quoted(row.unguarded)), \"guarded\": \(quoted(row.guarded)), "
                        + "\"incidents\": \(row.incidents)}")
            }
        } else {
            printTable(finished)
        }
        return finished.allSatisfy(\.passed) ? 0 : 1
    }

    private static func outcome(_ executable: String, _ scenario: String, guarded: Bool) -> (outcome: String, incidents: UInt64) {
        let result = ChildProcess.run(executable, ["scenario", scenario, guarded ? "--guarded" : "--unguarded"])
        switch result.termination {
        case .timedOut: return ("timeout", 0)
        case .signaled(let signal): return ("signal:\(ChildProcess.signalName(signal))", 0)
        case .exited(let code):
            if let line = result.output.split(separator: "\n").last(where: { $0.hasPrefix("RESULT ") }) {
                let parts = line.split(separator: " ")
                if parts.count == 3 { return (String(parts[1]), UInt64(parts[2]) ?? 0) }
            }
            return ("exit:\(code)", 0)
        }
    }

    private static func printTable(_ rows: [Row]) {
        func column(_ values: [String], _ title: String) -> Int { max(title.count, values.map(\.count).max() ?? 0) }
        let widths = [
            column(rows.map(\.scenario), "scenario"), column(rows.map(\.guardName), "guard"),
            column(rows.map(\.unguarded), "unguarded"), column(rows.map(\.guarded), "guarded"),
        ]
        func line(_ cells: [String]) -> String {
            zip(cells, widths + [0]).map { $0.padding(toLength: max($1, $0.count), withPad: " ", startingAt: 0) }
                .joined(separator: "  ")
        }
        print(line(["scenario", "guard", "unguarded", "guarded", "incidents"]))
        for row in rows { print(line([row.scenario, row.guardName, row.unguarded, row.guarded, "\(row.incidents)"])) }
        let passed = rows.filter(\.passed).count
        print("\(passed)/\(rows.count) scenarios neutralised with an incident")
    }

    private static func quoted(_ text: String) -> String {
        var escaped = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case _ where scalar.value < 0x20: escaped += String(format: "\\u%04x", scalar.value)
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped + "\""
    }
}

/// Lets `concurrentPerform` workers write disjoint elements of one buffer.
// @unchecked Sendable: its users write disjoint elements only, and read them after the workers joined
struct UnsafeSendablePointer<T>: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<T>
    init(_ pointer: UnsafeMutablePointer<T>) { self.pointer = pointer }
}
