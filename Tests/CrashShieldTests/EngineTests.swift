import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing
@testable import CrashShield
import _CrashShieldRuntime
import _CrashShieldScenarios
import _CrashShieldTestSupport

extension RuntimeTests {
    @Suite struct Engine {
        @Test func everyRegisteredGuardPassesItsCanary() throws {
            try withGuards {
                let runtimeGuards = CrashShieldSDK.status.filter { $0.id != .swiftAccess && $0.id != .decoding }
                #expect(runtimeGuards.map(\.id) == [.container, .string, .selector, .nsnull, .kvc,
                                                     .kvo, .notification, .timer, .mainThread, .zombie])
                for status in runtimeGuards {
                    #expect(status.state == .active, "\(status.id): \(status.state)")
                    #expect(status.policy == .neutralize)
                    #expect(status.hookedMethods > 0 || status.id == .mainThread)
                }
            }
        }

        /// The fail-safe's map from a crash frame to a guard covers every guard's whole code, its
        /// own helper classes' methods included, and nothing outside the guards.
        @Test func everyGuardsCodeMapsToThatGuard() throws {
            try withGuards {
                var probes = [cs_guard_code_probe](repeating: cs_guard_code_probe(), count: 32)
                let count = cs_test_guard_code_probes(&probes, probes.count)
                var covered: Set<String> = []
                for probe in probes.prefix(count) {
                    let label = String(cString: probe.label)
                    let expected = probe.guard.map { String(cString: $0) }
                    #expect(probe.address != 0, "\(label): not found")
                    let found = cs_guard_name_for_address(UInt(probe.address)).map { String(cString: $0) }
                    #expect(found == expected, "\(label)")
                    if let expected, found == expected { covered.insert(expected) }
                }
                let runtimeGuards = CrashShieldSDK.status.map(\.id.rawValue).filter { $0 != "swift" && $0 != "decoding" }
                #expect(covered == Set(runtimeGuards))
            }
        }

        @Test func canaryIncidentsAreNotDelivered() throws {
            let incidents = try collectIncidents {
                try withGuards {}
            }
            #expect(incidents.isEmpty)
            #expect(CrashShieldSDK.statistics.recorded == 0)
        }

        /// While a guard's canary runs (at start), the guard neutralises on the starting thread
        /// only: another thread's misuse in that window meets the guard as it was before the start
        /// (off: the original throws) and records nothing. It used to be neutralised, whatever
        /// policy was configured, and recorded as an incident.
        @Test func aCanaryChangesNoOtherThreadsOutcome() throws {
            CrashShieldSDK._resetForTesting()
            canaryWindowRun = nil
            cs_guard_set_canary_probe_for_testing(GuardID.container.rawValue) {
                var name = [CChar](repeating: 0, count: 64)
                let outcome = cs_scenario_run_on_new_thread(scenarioIndex("array.objectAtIndex.beyond"), &name, name.count)
                canaryWindowRun = (outcome, String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
            var containerState: GuardStatus.State?
            let incidents = try collectIncidents {
                try withGuards {
                    containerState = CrashShieldSDK.status.first { $0.id == .container }?.state
                    // The starting thread's own misuse after the start is guarded as configured.
                    #expect(runScenario("array.objectAtIndex.beyond") == .neutral)
                }
            }
            let run = try #require(canaryWindowRun, "the probe did not run inside the container guard's canary")
            #expect(run.outcome == CS_SCENARIO_THREW)
            #expect(run.exception == "NSRangeException")
            #expect(containerState == .active)
            // Only the starting thread's misuse after the start: nothing from the canary window.
            #expect(incidents.count == 1)
        }

        @Test func aFailedCanaryLeavesTheGuardOffAndSaysWhy() throws {
            CrashShieldSDK._resetForTesting()
            cs_guard_inject_canary_failure_for_testing(GuardID.container.rawValue)
            try CrashShieldSDK.start(.guardsOnly)
            defer { CrashShieldSDK._resetForTesting() }
            let container = try #require(CrashShieldSDK.status.first { $0.id == .container })
            #expect(container.state == .canaryFailed(reason: "canary failure injected by a test"))
            #expect(container.policy == .off)
            #expect(container.hookedMethods == 0)
            // The guard is really off: the misuse throws again.
            #expect(runScenario("array.objectAtIndex.beyond") == .threw("NSRangeException"))
            #expect(throws: CrashShieldError.guardNotActive(.container)) {
                try CrashShieldSDK.setPolicy(.neutralize, for: .container)
            }
            // Other guards are unaffected.
            #expect(CrashShieldSDK.status.first { $0.id == .string }?.state == .active)
        }

        /// Owner discovery never walks the app's classes: a start reads the system images' classes
        /// only, and walks the class list (once) only when the app opts classes in by prefix.
        @Test func startWalksTheClassListOnlyForOptedInPrefixes() throws {
            CrashShieldSDK._resetForTesting()
            defer { CrashShieldSDK._resetForTesting() }
            #expect(cs_scope_class_list_copies_during_start(nil) == 0)
            #expect(CrashShieldSDK.status.filter { $0.state == .active }.count == CrashShieldSDK.status.count)
            #expect(cs_scope_class_list_copies_during_start("CSScope") == 1)
            #expect(CrashShieldSDK.status.filter { $0.state == .active }.count == CrashShieldSDK.status.count)
        }

        /// A start records its steps in order (the benchmark's breakdown), the guards' parts
        /// from the engine's own timing.
        @Test func startRecordsItsSteps() throws {
            CrashShieldSDK._resetForTesting()
            defer { CrashShieldSDK._resetForTesting() }
            try CrashShieldSDK.start(.guardsOnly)
            let names = CrashShieldSDK._lastStartSteps.map(\.step)
            #expect(names.starts(with: ["checks and remote configuration", "incident delivery", "guard options", "guards",
                                        "guards: Objective-C runtime's first use", "guards: owner discovery", "guards: hooks"]))
            #expect(names.last == "reporting hand-off and incident sinks")
            #expect(!names.contains("capture and launch protection"))  // guards only
            #expect(CrashShieldSDK._lastStartSteps.allSatisfy { $0.duration >= .zero })
            let timing = cs_guards_last_start_timing()
            #expect(timing.table_writes_ns <= timing.hooks_ns)
        }

        @Test func startTwiceThrowsAlreadyStarted() throws {
            try withGuards {
                #expect(throws: CrashShieldError.alreadyStarted) { try CrashShieldSDK.start(.guardsOnly) }
            }
        }

        @Test func unknownGuardIsATypedError() throws {
            try withGuards {
                #expect(throws: CrashShieldError.unknownGuard(GuardID(rawValue: "nope"))) {
                    try CrashShieldSDK.setPolicy(.off, for: GuardID(rawValue: "nope"))
                }
            }
        }

        /// The error's kind is its code (a stable string); the guard is a stored property; a catch
        /// pattern matches by code whatever the message.
        @Test func errorsAreMatchedByCode() throws {
            try withGuards {
                do {
                    try CrashShieldSDK.setPolicy(.off, for: GuardID(rawValue: "nope"))
                    Issue.record("an unknown guard's policy was set")
                } catch let error as CrashShieldError where error.code == .unknownGuard {
                    #expect(error.guardID == GuardID(rawValue: "nope"))
                    #expect(error.code.rawValue == "unknownGuard")
                    #expect(error.description.hasPrefix("unknownGuard: "), "\(error)")
                }
                var caught = false
                do { try CrashShieldSDK.start() } catch CrashShieldError.alreadyStarted { caught = true }
                #expect(caught)
                func matchesAlreadyStarted(_ error: any Error) -> Bool {
                    do { throw error } catch CrashShieldError.alreadyStarted { return true } catch { return false }
                }
                #expect(matchesAlreadyStarted(CrashShieldError(code: .alreadyStarted, message: "other wording")))
                #expect(!matchesAlreadyStarted(CrashShieldError.runtimeUnavailable))
                #expect(!matchesAlreadyStarted(CrashShieldError.guardNotActive(.container)))
            }
        }

        @Test func policiesSwitchAtRunTime() throws {
            try withGuards {
                #expect(runScenario("array.objectAtIndex.beyond") == .neutral)
                try CrashShieldSDK.setPolicy(.reportOnly, for: .container)
                #expect(runScenario("array.objectAtIndex.beyond") == .threw("NSRangeException"))
                #expect(CrashShieldSDK.recordedCount(for: .container) == 2)
                try CrashShieldSDK.setPolicy(.off, for: .container)
                #expect(runScenario("array.objectAtIndex.beyond") == .threw("NSRangeException"))
                #expect(CrashShieldSDK.recordedCount(for: .container) == 2)
                try CrashShieldSDK.setPolicy(.neutralize, for: .container)
                #expect(runScenario("array.objectAtIndex.beyond") == .neutral)
                #expect(CrashShieldSDK.recordedCount(for: .container) == 3)
            }
        }

        @Test func startOptionsApplyPolicies() throws {
            var options = CrashShieldOptions()
            options.policies[.string] = .off
            try withGuards(options) {
                #expect(CrashShieldSDK.status.first { $0.id == .string }?.policy == .off)
                #expect(CrashShieldSDK.status.first { $0.id == .container }?.policy == .neutralize)
                #expect(runScenario("string.characterAtIndex.beyond") == .threw("NSInvalidArgumentException"))
            }
        }

        /// The common preset installs every guard, but only its guards start on: the others keep
        /// the original behaviour until a policy (a remote document's, or `setPolicy`) names them.
        @Test func theCommonPresetStartsTheOtherGuardsOff() throws {
            var options = CrashShieldOptions()
            options.preset = .common
            try withGuards(options) {
                for status in CrashShieldSDK.status where ![GuardID.swiftAccess, .decoding].contains(status.id) {
                    #expect(status.state == .active, "\(status.id): \(status.state)")
                    let expected: GuardPolicy = GuardPreset.commonGuards.contains(status.id) ? .neutralize : .off
                    #expect(status.policy == expected, "\(status.id)")
                }
                #expect(runScenario("array.objectAtIndex.beyond") == .neutral)
                #expect(runScenario("kvc.valueForKey.undefinedKey") != .neutral, "kvc is off: the original behaviour")
                #expect(CrashShieldSDK.recordedCount(for: .kvc) == 0)
                try CrashShieldSDK.setPolicy(.neutralize, for: .kvc)
                #expect(runScenario("kvc.valueForKey.undefinedKey") == .neutral)
                #expect(CrashShieldSDK.recordedCount(for: .kvc) == 1)
            }
        }

        @Test func denyListLeavesMatchingClassesAlone() throws {
            var options = CrashShieldOptions()
            options.deniedClassPrefixes = ["NSArray"]  // a public superclass of every array class
            try withGuards(options) {
                #expect(runScenario("array.objectAtIndex.beyond") == .threw("NSRangeException"))
                #expect(runScenario("string.characterAtIndex.beyond") == .neutral)
                #expect(CrashShieldSDK.recordedCount(for: .container) == 0)
            }
        }

        @Test func allowListRestrictsGuardingToMatchingClasses() throws {
            var options = CrashShieldOptions()
            options.allowedClassPrefixes = ["NSString"]
            try withGuards(options) {
                #expect(runScenario("string.characterAtIndex.beyond") == .neutral)
                #expect(runScenario("array.objectAtIndex.beyond") == .threw("NSRangeException"))
            }
        }

        @Test func uninstallRestoresTheOriginalBehaviour() throws {
            try withGuards {
                #expect(runScenario("array.objectAtIndex.beyond") == .neutral)
            }
            #expect(runScenario("array.objectAtIndex.beyond") == .threw("NSRangeException"))
            #expect(CrashShieldSDK.status.allSatisfy { [.swiftAccess, .decoding].contains($0.id) || $0.state == .notInstalled })
        }
    }
}

/// What the other thread's misuse gave inside the container guard's canary window
/// (aCanaryChangesNoOtherThreadsOutcome); written by the probe, read after the start.
nonisolated(unsafe) private var canaryWindowRun: (outcome: cs_scenario_outcome, exception: String)?
