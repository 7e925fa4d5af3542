import CrashShieldTestDoubles
import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing
@testable import CrashShield
import _CrashShieldScenarios

/// Scenarios of the container guard, in table order.
let containerScenarioIndexes: [Int] = (0..<cs_scenario_count()).filter {
    String(cString: cs_scenario_at($0).pointee.guard_name) == "container"
}
let containerScenarioNames: [String] = containerScenarioIndexes.map { String(cString: cs_scenario_at($0).pointee.name) }

/// Scenarios that crash the process when the guard does not catch them (GNUstep does not check a
/// wrapping range there): run only in child processes, so a regression fails one test, not the suite.
let containerScenariosFatalUnguarded: Set<String> = ["mdata.replaceBytesInRange.wrap"]

/// Oracles of the container guard: one per hooked selector, named "<public class> <selector>".
let containerOracleClasses: Set<String> = [
    "NSArray", "NSMutableArray", "NSDictionary", "NSMutableDictionary", "NSSet", "NSMutableSet", "NSOrderedSet",
    "NSMutableOrderedSet", "NSCache", "NSUserDefaults", "NSData", "NSMutableData",
]

/// The key-value coding proxy oracles, in table order.
let kvcProxyOracleNames: [String] = [
    "NSMutableArray KVC proxy (mutableArrayValueForKey:)",
    "NSMutableArray KVC proxy (mutableArrayValueForKey:, key observed)",
    "NSMutableArray KVC proxy (mutableArrayValueForKeyPath:)",
    "NSMutableSet KVC proxy (mutableSetValueForKey:)",
    "NSMutableSet KVC proxy (mutableSetValueForKey:, key observed)",
]

func isContainerOracle(_ name: String) -> Bool {
    containerOracleClasses.contains(String(name.split(separator: " ").first ?? ""))
}

extension RuntimeTests {
    @Suite struct ContainerGuard {
        @Test func everyMisuseRowHasAScenario() {
            #expect(containerScenarioNames.count >= 50)
            #expect(Set(containerScenarioNames).count == containerScenarioNames.count)
        }

        @Test func guardIsActiveWithEveryOwnerHooked() throws {
            try withGuards {
                let status = try #require(CrashShieldSDK.status.first { $0.id == .container })
                #expect(status.state == .active)
                // 45 hook rows; several selectors have more than one owning class on GNUstep.
                #expect(status.hookedMethods >= 45)
            }
        }

        @Test(arguments: containerScenarioNames.filter { !containerScenariosFatalUnguarded.contains($0) })
        func misuseIsNeutralisedWithExactlyOneIncident(_ name: String) throws {
            let scenario = cs_scenario_at(scenarioIndex(name)).pointee
            var recorded = 0
            let incidents = try collectIncidents {
                try withGuards {
                    #expect(runScenario(name) == .neutral)
                    CrashShieldSDK.flushIncidents()
                    recorded = CrashShieldSDK.recordedCount(for: .container)
                }
            }
            #expect(recorded == 1)
            #expect(incidents.count == 1)
            let incident = try #require(incidents.first)
            #expect(incident.guardID == .container)
            #expect(incident.policy == .neutralize)
            #expect(incident.selector == String(cString: scenario.selector))
            #expect(incident.isClassMethod == scenario.class_method)
            #expect(!incident.reason.isEmpty)
        }

        @Test(arguments: [
            ("array.objectAtIndexedSubscript.beyond", "index 5 beyond count 2"),
            ("array.subarrayWithRange.beyond", "range location 1 length 5 beyond count"),
            ("array.objectsAtIndexes.beyond", "index 5 beyond count 2"),
            ("array.literal.nil", "nil object at index 1 of 3"),
            ("array.initWithObjectsCount.nil", "nil object at index 1 of 3"),
            ("marray.addObject.nil", "nil object"),
            ("marray.insertObject.beyond", "index 9 beyond count 2"),
            ("marray.insertObjectsAtIndexes.mismatch", "1 objects for 2 indexes"),
            ("marray.insertObjectsAtIndexes.beyond", "index 9 beyond count 2"),
            ("marray.insertObjectsAtIndexes.nilArray", "nil array"),
            ("dict.literal.nilValue", "nil value at index 1 of 2"),
            ("dict.dictionaryWithObjectsForKeysCount.nilKey", "nil key at index 1 of 2"),
            ("mdict.setObjectForKey.nilKey", "nil key"),
            ("mdict.setObjectForKey.nilValue", "nil value"),
            ("mdict.removeObjectForKey.nil", "nil key"),
            ("cache.setObjectForKeyCost.nilValue", "nil value"),
            ("defaults.objectForKey.nilKey", "nil key"),
            ("data.getBytesRange.beyond", "range location 1 length 9 beyond length"),
            ("mdata.resetBytesInRange.beyond", "range location 4 length 1 beyond length"),
        ])
        func reasonText(_ name: String, _ reason: String) throws {
            let incidents = try collectIncidents {
                try withGuards {
                    #expect(runScenario(name) == .neutral)
                    CrashShieldSDK.flushIncidents()
                }
            }
            #expect(incidents.map(\.reason) == [reason])
        }

        /// Not a demo scenario: unguarded, GNUstep 1.28 allocates until memory runs out, so even the
        /// guarded run is a child process.
        @Test func nilIndexSetGivesAnEmptyArray() async {
            await #expect(processExitsWith: .success) {
                exit(guardedChildRun(expecting: ["nil index set"]) { cs_containers_nil_index_set_misuse() })
            }
        }

        /// A third-party "safe array" category that exchanges the immutable array's
        /// -objectAtIndex: before start leaves that owner alone (its own implementation answers,
        /// nothing is recorded) and the rest of the guard active. Before the fix the canary failed
        /// on that owner and the whole container guard stayed off (exit 6).
        @Test func aSafeArraySwizzleBeforeStartLeavesOnlyThatOwnerAlone() async {
            await #expect(processExitsWith: .success) {
                cs_scope_exchange_safe_array()
                guard (try? CrashShieldSDK.start(.guardsOnly)) != nil else { exit(5) }
                guard CrashShieldSDK.status.first(where: { $0.id == .container })?.state == .active else { exit(6) }
                let sink = InMemoryIncidentSink(capacity: 100)
                CrashShieldSDK.addSink(sink)
                let calls = cs_scope_safe_array_calls()
                guard cs_scope_safe_array_read_beyond(), cs_scope_safe_array_calls() == calls + 1 else { exit(7) }
                let misuses = [
                    ("mdict.setObjectForKey.nilKey", "nil key"), ("marray.addObject.nil", "nil object"),
                    ("data.getBytesRange.beyond", "range location 1 length 9 beyond length"),
                ]
                for (name, _) in misuses {
                    guard cs_scenario_at(scenarioIndex(name)).pointee.run() else { exit(8) }
                }
                guard CrashShieldSDK.flushIncidents(timeout: .seconds(5)) else { exit(9) }
                exit(sink.incidents.map(\.reason) == misuses.map(\.1) ? 0 : 10)
            }
        }

        /// The same category installed after start runs in front of the hook (its
        /// own answer, nothing recorded); exchanged back, the hook answers again and records.
        @Test func aSafeArraySwizzleAfterStartAndBackKeepsTheGuard() async {
            await #expect(processExitsWith: .success) {
                guard (try? CrashShieldSDK.start(.guardsOnly)) != nil else { exit(5) }
                let sink = InMemoryIncidentSink(capacity: 100)
                CrashShieldSDK.addSink(sink)
                cs_scope_exchange_safe_array()
                let calls = cs_scope_safe_array_calls()
                guard cs_scope_safe_array_read_beyond(), cs_scope_safe_array_calls() == calls + 1 else { exit(6) }
                guard CrashShieldSDK.flushIncidents(timeout: .seconds(5)), sink.incidents.isEmpty else { exit(7) }
                cs_scope_exchange_safe_array()
                let callsBack = cs_scope_safe_array_calls()
                guard cs_scope_safe_array_read_beyond(), cs_scope_safe_array_calls() == callsBack else { exit(8) }
                guard cs_scenario_at(scenarioIndex("marray.addObject.nil")).pointee.run() else { exit(9) }
                guard CrashShieldSDK.flushIncidents(timeout: .seconds(5)) else { exit(10) }
                exit(sink.incidents.map(\.reason) == ["index 5 beyond count 2", "nil object"] ? 0 : 11)
            }
        }

        @Test func literalIncidentsNameTheClassMethod() throws {
            let incidents = try collectIncidents {
                try withGuards {
                    #expect(runScenario("array.literal.nil") == .neutral)
                    #expect(runScenario("dict.literal.nilValue") == .neutral)
                    CrashShieldSDK.flushIncidents()
                }
            }
            #expect(incidents.map(\.methodName) == [
                "+[NSArray arrayWithObjects:count:]", "+[NSDictionary dictionaryWithObjects:forKeys:count:]",
            ])
        }

        /// location + length wraps past NSUIntegerMax: must be caught, never treated as in range.
        /// (Incident text renders NSUIntegerMax as -1, the value a negative index would have had.)
        @Test(arguments: [
            ("array.subarrayWithRange.wrap", "range location -1 length 2 beyond count"),
            ("data.subdataWithRange.wrap", "range location -1 length 2 beyond length"),
            ("data.getBytesRange.wrap", "range location 2 length -1 beyond length"),
        ])
        func wrappingRangesAreCaught(_ name: String, _ reason: String) throws {
            let incidents = try collectIncidents {
                try withGuards {
                    #expect(runScenario(name) == .neutral)
                    CrashShieldSDK.flushIncidents()
                }
            }
            #expect(incidents.map(\.reason) == [reason])
        }

        @Test func wrappingRangesThrowWithoutTheGuard() {
            CrashShieldSDK._resetForTesting()
            for name in ["array.subarrayWithRange.wrap", "data.subdataWithRange.wrap", "data.getBytesRange.wrap"] {
                #expect(runScenario(name) == .threw("NSRangeException"), "\(name)")
            }
        }

        /// Unguarded, GNUstep's -replaceBytesInRange:withBytes: does not check for a wrapping range
        /// and crashes the process (SIGSEGV); guarded, the call is a no-op.
        @Test func wrappingReplaceBytesCrashesWithoutTheGuard() async {
            await #expect(processExitsWith: .signal(SIGSEGV)) {
                _ = cs_scenario_at(scenarioIndex("mdata.replaceBytesInRange.wrap")).pointee.run()
                exit(4) // not reached
            }
            await #expect(processExitsWith: .success) {
                exit(guardedChildRun(expecting: ["range location 1 length -1 beyond length"]) {
                    cs_scenario_at(scenarioIndex("mdata.replaceBytesInRange.wrap")).pointee.run()
                })
            }
        }

        @Test func legalCallsGiveIdenticalResultsWithAndWithoutTheGuard() throws {
            CrashShieldSDK._resetForTesting()
            let unguarded = runOracles().filter { isContainerOracle($0.key) }
            var guarded: [String: String] = [:]
            try withGuards {
                guarded = runOracles().filter { isContainerOracle($0.key) }
                CrashShieldSDK.flushIncidents()
                #expect(CrashShieldSDK.recordedCount(for: .container) == 0)
            }
            #expect(unguarded.count == 50 + kvcProxyOracleNames.count)
            #expect(Set(unguarded.keys) == Set(guarded.keys))
            for (name, text) in unguarded.sorted(by: { $0.key < $1.key }) {
                #expect(!text.hasPrefix("exception:"), "\(name): \(text)")
                #expect(guarded[name] == text, "\(name)")
            }
        }

        /// Key-value coding collection proxies (GNUstep's -count of a getter/setter
        /// proxy reads a collection its own mutations replace) keep every legal result, with and
        /// without the key observed, and record nothing. In a child process: before the fix the
        /// guard dropped the issue's removeObjectAtIndex: and, with the key observed, messaged freed memory.
        @Test func kvcCollectionProxiesKeepTheirLegalResults() async {
            await #expect(processExitsWith: .success) {
                let unguarded = runOracles(named: kvcProxyOracleNames)
                guard unguarded.values.allSatisfy({ !$0.hasPrefix("exception:") }) else { exit(6) }
                // The issue's reproduction, unguarded: tags = 0,b.
                guard unguarded[kvcProxyOracleNames[0]]?.hasPrefix("tags (0,b) ") == true,
                    unguarded[kvcProxyOracleNames[1]]?.hasPrefix("tags (0,b) ") == true
                else { exit(7) }
                guard (try? CrashShieldSDK.start(.guardsOnly)) != nil else { exit(5) }
                let guarded = runOracles(named: kvcProxyOracleNames)
                guard guarded == unguarded else {
                    for name in kvcProxyOracleNames where guarded[name] != unguarded[name] {
                        print("\(name):\n  unguarded \(unguarded[name] ?? "-")\n  guarded   \(guarded[name] ?? "-")")
                    }
                    exit(3)
                }
                CrashShieldSDK.flushIncidents()
                exit(CrashShieldSDK.recordedCount(for: .container) == 0 ? 0 : 4)
            }
        }

        /// The proxies' misuse still stops where GNUstep would throw: in the collection the proxy
        /// forwards to, which the guard covers itself.
        @Test func kvcArrayProxyMisuseIsStoppedInTheForwardedCollection() throws {
            try withGuards {
                #expect(cs_containers_kvc_proxy_misuse())
                CrashShieldSDK.flushIncidents()
                #expect(CrashShieldSDK.recordedCount(for: .container) == 2)
            }
        }

        /// A legal call: a nil value in a keyed subscript removes the key, guarded or not.
        @Test func nilValueInKeyedSubscriptStillRemovesTheKey() throws {
            let name = "NSMutableDictionary setObject:forKeyedSubscript:"
            try withGuards {
                #expect(runOracles()[name] == "{a=1;b=2;} {b=2;} 1")
                #expect(CrashShieldSDK.recordedCount(for: .container) == 0)
            }
        }

        @Test func setObjectAtIndexedSubscriptAtCountAppends() throws {
            try withGuards {
                #expect(runOracles()["NSMutableArray setObject:atIndexedSubscript:"] == "(replaced,b,appended) (first)")
            }
        }

        @Test func withPolicyOffTheMisuseThrowsUncaughtAgain() async {
            await #expect(processExitsWith: .exitCode(1)) {
                var options = CrashShieldOptions.guardsOnly
                options.policies[.container] = .off
                guard (try? CrashShieldSDK.start(options)) != nil else { exit(3) }
                // Called directly, without the runner's @catch: GNUstep exits(1) on the uncaught exception.
                _ = cs_scenario_at(scenarioIndex("marray.addObject.nil")).pointee.run()
                exit(4) // not reached
            }
        }

        @Test func withPolicyNeutralizeTheSameMisuseSurvives() async {
            await #expect(processExitsWith: .success) {
                guard (try? CrashShieldSDK.start(.guardsOnly)) != nil else { exit(5) }
                let survived = cs_scenario_at(scenarioIndex("marray.addObject.nil")).pointee.run()
                exit(survived ? 0 : 3)
            }
        }

        @Test func sharedContainersSurviveConcurrentLegalAndMisuse() throws {
            try withGuards {
                let threads: UInt32 = 8, iterations: UInt32 = 1_500
                let misuses = cs_containers_stress(threads, iterations)
                #expect(misuses == UInt64(threads) * UInt64(iterations) * 10)
                #expect(CrashShieldSDK.recordedCount(for: .container) == misuses)
            }
        }

        @Test(arguments: [1, 42, 20_261_122] as [UInt64])
        func seededRandomMisuseMatchesTheModel(_ seed: UInt64) throws {
            try withGuards {
                var misuses: UInt64 = 0
                let mismatches = cs_containers_randomized(seed, 4_000, &misuses)
                #expect(mismatches == 0)
                #expect(misuses > 500)
                #expect(CrashShieldSDK.recordedCount(for: .container) == misuses)
            }
        }

        @Test func reportOnlyRecordsAndLetsTheOriginalThrow() throws {
            var options = CrashShieldOptions()
            options.policies[.container] = .reportOnly
            try withGuards(options) {
                #expect(runScenario("marray.insertObject.beyond") == .threw("NSRangeException"))
                #expect(CrashShieldSDK.recordedCount(for: .container) == 1)
                // A literal passes through three hooked initialisers; it is still one incident.
                #expect(runScenario("array.literal.nil") == .threw("NSInvalidArgumentException"))
                #expect(runScenario("dict.literal.nilValue") == .threw("NSInvalidArgumentException"))
                #expect(runScenario("set.initWithObjectsCount.nil") == .threw("NSInvalidArgumentException"))
                #expect(CrashShieldSDK.recordedCount(for: .container) == 4)
                // The depth marker unwound with the exceptions: the next neutralised misuse records again.
                try CrashShieldSDK.setPolicy(.neutralize, for: .container)
                #expect(runScenario("array.literal.nil") == .neutral)
                #expect(CrashShieldSDK.recordedCount(for: .container) == 5)
            }
        }
    }
}
