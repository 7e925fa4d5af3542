import CrashShieldProtocol
import CrashShield
import Foundation
import _CrashShieldScenarios

/// `shield bench`: the cost of every bench case with guards uninstalled (baseline) and installed
/// (guarded), measured in this one process. Rounds alternate between the two so that drift in
/// machine load hits both; each figure is the best round, in nanoseconds per operation. The hot
/// calls (`objectAtIndex:` ... `substringWithRange:`) are timed on their thread's CPU clock, so
/// time spent preempted by other processes counts on neither side.
enum BenchCommand {
    static let rounds = 7
    static let targetNanosecondsPerMeasurement: UInt64 = 40_000_000

    struct Result {
        let name: String
        var baseline = Double.infinity
        var guarded = Double.infinity
        var ratio: Double { guarded / baseline }
    }

    static func run(json: Bool) -> Int32 {
        let cases = (0..<cs_bench_count()).map { cs_bench_at($0).pointee }
            .filter { BenchFilter.selects(String(cString: $0.name)) }
        CrashShieldSDK._resetForTesting()
        let iterations = cases.map(calibrate)
        var results = cases.map { Result(name: String(cString: $0.name)) }
        for _ in 0..<rounds {
            CrashShieldSDK._resetForTesting()
            for (index, benchCase) in cases.enumerated() {
                let nanoseconds = Double(benchCase.run(iterations[index], false)) / Double(iterations[index])
                results[index].baseline = min(results[index].baseline, nanoseconds)
            }
            do {
                try CrashShieldSDK.start(.guardsOnly)
            } catch {
                FileHandle.standardError.write(Data("bench: start failed: \(error)\n".utf8))
                return 1
            }
            for (index, benchCase) in cases.enumerated() {
                let nanoseconds = Double(benchCase.run(iterations[index], true)) / Double(iterations[index])
                results[index].guarded = min(results[index].guarded, nanoseconds)
            }
        }
        CrashShieldSDK._resetForTesting()
        for (result, benchCase) in zip(results, cases) {
            let note = benchCase.note.map { fill in
                var buffer = [CChar](repeating: 0, count: 2048)
                fill(&buffer, buffer.count)
                return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
            if json {
                let noteField = note.map { ", \"note\": \"\($0)\"" } ?? ""
                print(
                    "{\"case\": \"\(result.name)\", \"baseline_ns\": \(format(result.baseline)), "
                        + "\"guarded_ns\": \(format(result.guarded)), \"ratio\": \(format(result.ratio, digits: 3))\(noteField)}")
            } else {
                let name = result.name.padding(toLength: 44, withPad: " ", startingAt: 0)
                print("\(name) baseline \(format(result.baseline)) ns  guarded \(format(result.guarded)) ns  ratio \(format(result.ratio, digits: 3))")
                if let note { print("    \(note)") }
            }
        }
        return 0
    }

    /// Iterations that make one baseline measurement take about `targetNanosecondsPerMeasurement`.
    private static func calibrate(_ benchCase: cs_bench_case) -> UInt64 {
        if benchCase.fixed_iterations > 0 { return benchCase.fixed_iterations }
        var iterations: UInt64 = 1_000
        while true {
            let elapsed = benchCase.run(iterations, false)
            if elapsed >= targetNanosecondsPerMeasurement / 4 || iterations >= 1 << 28 {
                let perOperation = max(1, elapsed / iterations)
                return max(1_000, targetNanosecondsPerMeasurement / perOperation)
            }
            iterations *= 4
        }
    }

    private static func format(_ value: Double, digits: Int = 2) -> String {
        String(format: "%.\(digits)f", value)
    }
}

/// SHIELD_BENCH_FILTER=<name>[|<name>...]: only the cases with one of these names (a name ending
/// in `*` is a prefix), for comparing variants of one piece of code (e.g. under callgrind).
/// Unset or empty: every case.
enum BenchFilter {
    static let names = (ProcessInfo.processInfo.environment["SHIELD_BENCH_FILTER"] ?? "").split(separator: "|").map(String.init)

    static func selects(_ name: String) -> Bool {
        names.isEmpty || names.contains { $0.hasSuffix("*") ? name.hasPrefix($0.dropLast()) : name == $0 }
    }
}
