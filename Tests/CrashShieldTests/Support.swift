import CrashShieldTestDoubles
import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing
@testable import CrashShield
import _CrashShieldScenarios

/// Every test that installs guards or counts incidents touches process-wide state, so all of them
/// live under this one serialized suite (extensions in the other files).
@Suite(.serialized) enum RuntimeTests {}

/// Starts the guards with `options` (capture and launch protection left out) after a full reset,
/// runs `body`, and resets again.
@discardableResult
func withGuards<R>(_ options: CrashShieldOptions = .guardsOnly, _ body: () throws -> R) throws -> R {
    CrashShieldSDK._resetForTesting()
    var options = options
    options.capture = nil
    options.launchProtection = nil
    try CrashShieldSDK.start(options)
    defer { CrashShieldSDK._resetForTesting() }
    return try body()
}

/// Collects every incident delivered while `body` runs (flushes before returning).
func collectIncidents(_ body: () throws -> Void) rethrows -> [Incident] {
    let sink = InMemoryIncidentSink(capacity: 100_000)
    CrashShieldSDK.addSink(sink)
    defer { CrashShieldSDK.removeSink(sink) }
    try body()
    #expect(CrashShieldSDK.flushIncidents(timeout: .seconds(5)))
    return sink.incidents
}

struct ScenarioRun {
    enum Outcome: Equatable {
        case neutral
        case otherValue
        case threw(String)
    }
    let outcome: Outcome
}

/// All scenarios, by name, for parameterised tests.
let allScenarioNames: [String] = (0..<cs_scenario_count()).map { String(cString: cs_scenario_at($0).pointee.name) }

func scenarioIndex(_ name: String) -> Int {
    (0..<cs_scenario_count()).first { String(cString: cs_scenario_at($0).pointee.name) == name }!
}

/// Runs one scenario in this process (exceptions are caught by the runner).
func runScenario(_ name: String) -> ScenarioRun.Outcome {
    var buffer = [CChar](repeating: 0, count: 128)
    switch cs_scenario_run(scenarioIndex(name), &buffer, buffer.count) {
    case CS_SCENARIO_RETURNED_NEUTRAL: return .neutral
    case CS_SCENARIO_THREW:
        return .threw(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    default: return .otherValue
    }
}

/// Runs every oracle and returns name -> description of the legal calls' results.
func runOracles() -> [String: String] {
    var results: [String: String] = [:]
    for index in 0..<cs_oracle_count() {
        let name = String(cString: cs_oracle_name(index))
        let text = cs_oracle_run(index)!
        results[name] = String(cString: text)
        free(text)
    }
    return results
}

/// Runs the oracles called `names` (all must exist) and returns name -> description.
func runOracles(named names: [String]) -> [String: String] {
    var results: [String: String] = [:]
    for index in 0..<cs_oracle_count() {
        let name = String(cString: cs_oracle_name(index))
        guard names.contains(name) else { continue }
        let text = cs_oracle_run(index)!
        results[name] = String(cString: text)
        free(text)
    }
    precondition(results.count == names.count, "an oracle is missing")
    return results
}

/// For exit tests: starts the guards in this (child) process, runs `misuse`, and returns the exit
/// status that tells what happened: 0 when it returned the neutralised value and exactly the
/// expected incident reasons were delivered, 3 when the result was wrong, 4 when the incidents
/// differed, 5 when the guards did not start.
func guardedChildRun(expecting reasons: [String], _ misuse: () -> Bool) -> Int32 {
    guard (try? CrashShieldSDK.start(.guardsOnly)) != nil else { return 5 }
    let sink = InMemoryIncidentSink(capacity: 100)
    CrashShieldSDK.addSink(sink)
    guard misuse() else { return 3 }
    guard CrashShieldSDK.flushIncidents(timeout: .seconds(5)) else { return 4 }
    return sink.incidents.map(\.reason) == reasons ? 0 : 4
}

/// Runs the executable `name` built next to the test binary (`shield`, `shield-test-probe`, `plain-objc-app`) with
/// `arguments` and `SWIFT_BACKTRACE=enable=no`, terminating it after `timeout` seconds. Returns its
/// exit status (the negated signal number when a signal ended it) and its standard output
/// (standard error is discarded). The output is read while the child runs, so a child that prints
/// more than a pipe holds cannot stall until the timeout.
func runSiblingExecutable(_ name: String, _ arguments: [String] = [], timeout: TimeInterval = 60) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        .deletingLastPathComponent().appendingPathComponent(name)
    process.arguments = arguments
    var environment = ProcessInfo.processInfo.environment
    environment["SWIFT_BACKTRACE"] = "enable=no"
    process.environment = environment
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    final class Collected: @unchecked Sendable { var data = Data() }
    let collected = Collected()
    let reading = DispatchGroup()
    try process.run()
    reading.enter()
    DispatchQueue.global().async {
        collected.data = pipe.fileHandleForReading.readDataToEndOfFile()
        reading.leave()
    }
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(20_000) }
    if process.isRunning { process.terminate() }
    process.waitUntilExit()
    reading.wait()
    let status = process.terminationReason == .exit ? process.terminationStatus : -process.terminationStatus
    return (status, String(decoding: collected.data, as: UTF8.self))
}

