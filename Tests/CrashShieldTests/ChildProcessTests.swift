import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing
import CrashShield
import _CrashShieldScenarios
import _CrashShieldRuntime
import _CrashShieldIncidents

/// Misuse without a catch: these tests let the exception escape, so each runs in a child process
/// (Swift Testing exit tests). GNUstep ends a process with an uncaught exception with exit(1).
@Suite struct ChildProcessTests {
    @Test func policyOffRestoresTheUncaughtException() async {
        await #expect(processExitsWith: .exitCode(1)) {
            guard (try? CrashShieldSDK.start(.guardsOnly)) != nil, (try? CrashShieldSDK.setPolicy(.off, for: .container)) != nil
            else { exit(3) }
            _ = cs_scenario_at(scenarioIndex("array.objectAtIndex.beyond")).pointee.run()
            exit(4) // not reached: GNUstep exits with 1 on the uncaught exception
        }
    }

    /// Report-only records (EngineTests.policiesSwitchAtRunTime checks the count in-process) and
    /// then lets the original exception end the process.
    @Test func reportOnlyLetsTheExceptionEndTheProcess() async {
        await #expect(processExitsWith: .exitCode(1)) {
            guard (try? CrashShieldSDK.start(.guardsOnly)) != nil, (try? CrashShieldSDK.setPolicy(.reportOnly, for: .string)) != nil
            else { exit(3) }
            _ = cs_scenario_at(scenarioIndex("string.characterAtIndex.beyond")).pointee.run()
            exit(4) // not reached: GNUstep exits with 1 on the uncaught exception
        }
    }

    @Test func neutralizeSurvivesTheSameMisuse() async {
        await #expect(processExitsWith: .success) {
            try CrashShieldSDK.start(.guardsOnly)
            guard cs_scenario_at(scenarioIndex("array.objectAtIndex.beyond")).pointee.run() else { exit(3) }
            guard cs_scenario_at(scenarioIndex("string.characterAtIndex.beyond")).pointee.run() else { exit(4) }
            exit(CrashShieldSDK.statistics.recorded == 2 ? 0 : 5)
        }
    }

    /// Objective-C apps start the guards through cs_runtime.h alone, with no Swift API call.
    @Test func plainCEntryPointStartsTheSameGuards() async {
        await #expect(processExitsWith: .success) {
            guard cs_guards_start(nil) == CS_START_OK else { exit(3) }
            guard cs_guards_start(nil) == CS_START_ALREADY_STARTED else { exit(4) }
            guard cs_scenario_at(scenarioIndex("array.objectAtIndex.beyond")).pointee.run() else { exit(5) }
            exit(cs_incidents_stats().recorded == 1 ? 0 : 6)
        }
    }

    @Test func withoutGuardsTheMisuseKillsTheProcess() async {
        await #expect(processExitsWith: .exitCode(1)) {
            _ = cs_scenario_at(scenarioIndex("array.objectAtIndex.beyond")).pointee.run()
        }
    }
}
