import CrashShieldProtocol
import CrashShield
import Foundation
import _CrashShieldScenarios

/// `shield scenario NAME --guarded|--unguarded`: runs one scenario in this process and prints
/// `RESULT <outcome> <incidents>` on standard output. The demo runs it as a child process.
enum ScenarioChild {
    static func index(of name: String) -> Int? {
        (0..<cs_scenario_count()).first { String(cString: cs_scenario_at($0).pointee.name) == name }
    }

    static func run(name: String, guarded: Bool) -> Int32 {
        if let swiftScenario = SwiftScenarios.named(name) { return SwiftScenarios.runChild(swiftScenario, guarded: guarded) }
        guard let index = index(of: name) else {
            FileHandle.standardError.write(Data("unknown scenario \(name)\n".utf8))
            return 2
        }
        let scenario = cs_scenario_at(index).pointee
        if guarded {
            do {
                try CrashShieldSDK.start(.guardsOnly)
            } catch {
                print("RESULT start-failed:\(error) 0")
                return 1
            }
        }
        var exceptionName = [CChar](repeating: 0, count: 128)
        let outcome = cs_scenario_run(index, &exceptionName, exceptionName.count)
        CrashShieldSDK.flushIncidents()
        let incidents = CrashShieldSDK.recordedCount(for: GuardID(rawValue: String(cString: scenario.guard_name)))
        let text: String
        switch outcome {
        case CS_SCENARIO_RETURNED_NEUTRAL: text = "ok"
        case CS_SCENARIO_THREW:
            text = "exception:" + String(decoding: exceptionName.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        default: text = "unexpected-result"
        }
        print("RESULT \(text) \(incidents)")
        fflush(nil)
        return 0
    }
}
