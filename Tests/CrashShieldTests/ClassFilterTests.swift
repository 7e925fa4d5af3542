import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing
@testable import CrashShield
import _CrashShieldScenarios

/// The class filters (`allowedClassPrefixes`, `deniedClassPrefixes`, and the same lists from a
/// remote configuration document) decide which misuses are guarded, never whether a guard works:
/// every guard passes its canary whatever they say. The same holds for every other option that
/// names classes or sets budgets (timer weak targets, zombie lists and budgets, opted-in app
/// classes, main-thread-only calls) and for the policies a guard starts with.
extension RuntimeTests {
    @Suite struct ClassFilters {
        /// An option set that must leave every guard's state as an unconfigured start does.
        enum Configuration: String, CaseIterable, Sendable {
            case allowMY, denyMY, allowMYDenyMYLegacy, denyEveryClassTheCanariesUse, remoteDocumentAllowMY
            case timerWeakTargetsNamingNSObject, zombieBudgetSmallerThanOneZombie, zombieRulesDenyingEveryClass
            case appClassesOptedInWithCS, mainThreadOnlyCall

            var options: CrashShieldOptions {
                var options = CrashShieldOptions.guardsOnly
                switch self {
                case .allowMY: options.allowedClassPrefixes = ["MY"]
                case .denyMY: options.deniedClassPrefixes = ["MY"]
                case .allowMYDenyMYLegacy:
                    options.allowedClassPrefixes = ["MY"]
                    options.deniedClassPrefixes = ["MYLegacy"]
                case .denyEveryClassTheCanariesUse: options.deniedClassPrefixes = ["NS", "GS", "CS"]
                case .remoteDocumentAllowMY:
                    // The rule of the documented example: prefixes only, so policies stay comparable.
                    options = options.applyingRemoteOverrides(
                        RemoteConfigRule(allowClassPrefixes: ["MY"], denyClassPrefixes: ["MYLegacy"]))
                case .timerWeakTargetsNamingNSObject: options.timerWeakTargetClasses = ["NSObject"]
                case .zombieBudgetSmallerThanOneZombie:
                    options.zombieClassPrefixes = ["MY"]
                    options.zombieMaxBytes = 1
                    options.zombieMaxCount = 1
                case .zombieRulesDenyingEveryClass:
                    options.zombieClassNames = ["CSZombieCanaryVictim"]
                    options.zombieDeniedClasses = ["NSObject"]
                case .appClassesOptedInWithCS: options.guardedAppClassPrefixes = ["CS"]
                case .mainThreadOnlyCall:
                    options.mainThreadOnlyCalls = [MainThreadCall(className: "CSLMainThreadOnly", selector: "cs_touch:")]
                }
                return options
            }
        }

        private typealias States = [GuardID: GuardStatus.State]

        private func states(_ statuses: [GuardStatus]) -> States {
            Dictionary(uniqueKeysWithValues: statuses.map { ($0.id, $0.state) })
        }

        private func text(_ make: () -> UnsafeMutablePointer<CChar>?) -> String {
            let pointer = make()!
            defer { free(pointer) }
            return String(cString: pointer)
        }

        private func appArrayAddNil() -> String { text { cs_filter_app_array_add_nil() } }
        private func appModelUndefinedKey() -> String { text { cs_filter_app_model_undefined_key() } }

        private var allowMY: CrashShieldOptions {
            var options = CrashShieldOptions.guardsOnly
            options.allowedClassPrefixes = ["MY"]
            return options
        }

        @Test(arguments: Configuration.allCases)
        func everyGuardActiveWithoutTheOptionIsActiveWithIt(_ configuration: Configuration) throws {
            let unconfigured = try withGuards { states(CrashShieldSDK.status) }
            let active = unconfigured.filter { $0.value == .active }.map(\.key)
            #expect(active.count == unconfigured.count, "every guard passes its canary unconfigured: \(unconfigured)")
            let configured = try withGuards(configuration.options) {
                (states(CrashShieldSDK.status), CrashShieldSDK.zombieUsage.count)
            }
            for id in active {
                #expect(configured.0[id] == .active, "\(configuration): \(id) is \(String(describing: configured.0[id]))")
            }
            #expect(configured.1 == 0, "the zombie canary's zombie is gone once start returns")
        }

        @Test(arguments: [GuardPolicy.reportOnly, .off])
        func aGuardStartedWithAnotherPolicyPassesItsCanaryAndKeepsThatPolicy(_ policy: GuardPolicy) throws {
            var options = allowMY
            options.defaultPolicy = policy
            try withGuards(options) {
                for status in CrashShieldSDK.status where ![.swiftAccess, .decoding].contains(status.id) {
                    #expect(status.state == .active, "\(status.id): \(status.state)")
                    #expect(status.policy == policy, "\(status.id)")
                }
            }
        }

        /// Allow list ["MY"]: a Foundation array's misuse keeps its original behaviour (the
        /// exception, no incident); the same guard neutralises an app MY class's misuse, once.
        @Test func anAllowListGuardsOnlyTheListedClasses() throws {
            CrashShieldSDK._resetForTesting()
            let unguardedArray = appArrayAddNil()
            let unguardedModel = appModelUndefinedKey()
            #expect(unguardedArray.hasPrefix("exception:"))
            #expect(unguardedModel.hasPrefix("exception:"))
            try withGuards(allowMY) {
                let outsideList = collectIncidents {
                    #expect(runScenario("array.objectAtIndex.beyond") == .threw("NSRangeException"))
                    #expect(runScenario("marray.addObject.nil") == .threw("NSInvalidArgumentException"))
                }
                #expect(outsideList.isEmpty)
                #expect(CrashShieldSDK.recordedCount(for: .container) == 0)

                let insideList = collectIncidents {
                    #expect(appArrayAddNil() == "count=0")
                    #expect(appModelUndefinedKey() == "value=nil")
                }
                #expect(insideList.count == 2)
                #expect(insideList.contains { $0.guardID == .container && $0.methodName == "-[MYFilterArray addObject:]" })
                #expect(insideList.contains { $0.guardID == .kvc && $0.className == "MYFilterModel" })
                #expect(CrashShieldSDK.recordedCount(for: .container) == 1)
                #expect(CrashShieldSDK.recordedCount(for: .kvc) == 1)
            }
        }

        /// Deny list ["MY"]: the app's MY classes keep their original behaviour; Foundation's
        /// classes stay guarded.
        @Test func aDenyListLeavesOnlyTheListedClassesAlone() throws {
            CrashShieldSDK._resetForTesting()
            let unguardedArray = appArrayAddNil()
            let unguardedModel = appModelUndefinedKey()
            var options = CrashShieldOptions.guardsOnly
            options.deniedClassPrefixes = ["MY"]
            try withGuards(options) {
                let incidents = collectIncidents {
                    #expect(appArrayAddNil() == unguardedArray)
                    #expect(appModelUndefinedKey() == unguardedModel)
                    #expect(runScenario("array.objectAtIndex.beyond") == .neutral)
                }
                #expect(incidents.count == 1)
                #expect(incidents.allSatisfy { $0.guardID == .container && !$0.className.hasPrefix("MY") })
                #expect(CrashShieldSDK.recordedCount(for: .kvc) == 0)
            }
        }

        /// Legal calls give the same results with an allow list as without guards.
        @Test func legalCallsAreUnchangedWithAnAllowList() throws {
            CrashShieldSDK._resetForTesting()
            let unguarded = runOracles()
            let guarded = try withGuards(allowMY) {
                let results = runOracles()
                #expect(CrashShieldSDK.flushIncidents())
                #expect(CrashShieldSDK.statistics.recorded == 0)
                return results
            }
            #expect(guarded.count == unguarded.count)
            for (name, result) in unguarded { #expect(guarded[name] == result, "\(name)") }
        }

        /// Another thread that misuses a Foundation array while the guards start (their canaries
        /// included) with an allow list that does not name it always gets the original behaviour:
        /// the canary's exemption from the filters is its own thread's, nobody else's.
        @Test func aConcurrentMisuseOutsideTheListIsNeverGuardedDuringStart() throws {
            CrashShieldSDK._resetForTesting()
            #expect(cs_filter_concurrent_misuse_start())
            for _ in 0..<20 {
                try withGuards(allowMY) {
                    #expect(CrashShieldSDK.status.first { $0.id == .container }?.state == .active)
                }
            }
            var returned = 0, threw = 0, other = 0
            cs_filter_concurrent_misuse_stop(&returned, &threw, &other)
            #expect(returned == 0)
            #expect(other == 0)
            #expect(threw > 0)
        }
    }
}
