import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing
@testable import CrashShield
import _CrashShieldRuntime
import _CrashShieldScenarios

/// Which implementations the hooks go on: the system's own, plus app
/// classes the app opts in by prefix; and one selector with more owners than slots never switches
/// a guard off.
extension RuntimeTests {
    @Suite struct Scope {
        private func text(_ make: () -> UnsafeMutablePointer<CChar>?) -> String {
            let pointer = make()!
            defer { free(pointer) }
            return String(cString: pointer)
        }

        private func appSubclassCalls() -> String { text { cs_scope_app_subclass_calls() } }
        private func sevenStringCalls() -> String { text { cs_scope_seven_string_calls() } }

        private func guardedOptions(optingIn prefixes: [String]) -> CrashShieldOptions {
            var options = CrashShieldOptions()
            options.guardedAppClassPrefixes = prefixes
            return options
        }

        /// An app's NSArray, NSString and NSMutableArray subclasses keep their own legal contract
        /// by default: same results as unguarded, no incident.
        @Test func appSubclassesBehaveAsUnguardedByDefault() throws {
            CrashShieldSDK._resetForTesting()
            let unguarded = appSubclassCalls()
            #expect(unguarded == "wrap[5]=c wrap[3]=a;pad[1]=98 pad[10]=46;nulls=2 last-is-null=1")
            let guarded = try withGuards {
                let result = appSubclassCalls()
                #expect(CrashShieldSDK.flushIncidents())
                #expect(CrashShieldSDK.statistics.recorded == 0)
                return result
            }
            #expect(guarded == unguarded)
        }

        /// The system's wrappers (NSArray's -objectAtIndexedSubscript: and
        /// -objectsAtIndexes: forward to -objectAtIndex:, NSMutableString's -deleteCharactersInRange:
        /// and -insertString:atIndex: to -replaceCharactersInRange:withString:, none checking bounds)
        /// keep an app subclass's own contract: same results as unguarded, no incident. Before the
        /// fix the hooks judged them by -count / -length: nil and an incident for each.
        @Test func wrappersKeepAnAppSubclassContract() throws {
            CrashShieldSDK._resetForTesting()
            let unguarded = text { cs_wrapper_app_subclass_calls() }
            #expect(unguarded == """
                ring[4] = b
                ring objectsAtIndexes {4} = (b)
                shortRing[2] = c
                shortRing objectsAtIndexes {2} = (c)
                clamping deleteCharactersInRange {1, 10} = a
                clamping insertString x atIndex 10 = abcx

                """)
            let guarded = try withGuards {
                let result = text { cs_wrapper_app_subclass_calls() }
                #expect(CrashShieldSDK.flushIncidents())
                #expect(CrashShieldSDK.statistics.recorded == 0)
                return result
            }
            #expect(guarded == unguarded)
        }

        /// Opted in by prefix, the same classes are guarded: the calls the guards treat as misuse
        /// are neutralised, with incidents.
        @Test func optedInAppSubclassesAreGuarded() throws {
            try withGuards(guardedOptions(optingIn: ["CSScope"])) {
                let result = appSubclassCalls()
                #expect(result == "wrap[5]=(null) wrap[3]=(null);pad[1]=98 pad[10]=0;nulls=1 last-is-null=0")
                #expect(CrashShieldSDK.flushIncidents())
                #expect(CrashShieldSDK.recordedCount(for: .container) == 3)
                #expect(CrashShieldSDK.recordedCount(for: .string) == 1)
            }
        }

        /// GNUstep's own classes stay guarded whatever the app opts in or not.
        @Test func systemClassesStayGuarded() throws {
            for options in [CrashShieldOptions(), guardedOptions(optingIn: ["CSScope"])] {
                try withGuards(options) {
                    #expect(runScenario("array.objectAtIndex.beyond") == .neutral)
                    #expect(runScenario("string.characterAtIndex.beyond") == .neutral)
                    #expect(runScenario("marray.addObject.nil") == .neutral)
                }
            }
        }

        /// Seven app NSString subclasses with their own -characterAtIndex: (the case): by
        /// default left alone; opted in, all hooked, the string guard active and nothing skipped.
        @Test func sevenStringSubclasses() throws {
            let unguarded = sevenStringCalls()
            #expect(unguarded == "49,50,51,52,53,54,55,")
            try withGuards {
                #expect(sevenStringCalls() == unguarded)
                let string = try #require(CrashShieldSDK.status.first { $0.id == .string })
                #expect(string.state == .active)
                #expect(string.skippedHooks.isEmpty)
            }
            try withGuards(guardedOptions(optingIn: ["CSScopeString"])) {
                #expect(sevenStringCalls() == "0,0,0,0,0,0,0,")
                let string = try #require(CrashShieldSDK.status.first { $0.id == .string })
                #expect(string.state == .active)
                #expect(string.skippedHooks.isEmpty)
                #expect(runScenario("string.characterAtIndex.beyond") == .neutral)
            }
        }

        /// More opted-in owners of one selector than the engine has slots: the string guard stays
        /// active for GNUstep's strings and for the owners that fit, and names the ones skipped.
        @Test func ownersBeyondTheSlotsAreSkippedAndReported() throws {
            let extra = 40
            #expect(cs_scope_make_extra_string_classes(extra) >= extra)
            let owners = cs_test_owner_count("NSString", "characterAtIndex:", false)
            let slots = Int(cs_guard_slot_count())
            #expect(owners > slots)
            try withGuards(guardedOptions(optingIn: ["CSScope"])) {
                let string = try #require(CrashShieldSDK.status.first { $0.id == .string })
                #expect(string.state == .active)
                #expect(string.policy == .neutralize)
                #expect(string.skippedHooks.count == owners - slots)
                #expect(string.skippedHooks.allSatisfy { $0.hasPrefix("-[CSScope") && $0.hasSuffix(" characterAtIndex:]") })
                #expect(runScenario("string.characterAtIndex.beyond") == .neutral)
                #expect(runScenario("string.characterAtIndex.beyond.unicode") == .neutral)
                // Every extra class is either hooked (neutralised: 0) or skipped (its own '.').
                let skipped = Set(string.skippedHooks)
                for index in 0..<extra {
                    let name = "-[CSScopeExtraString\(index) characterAtIndex:]"
                    let expected: Int32 = skipped.contains(name) ? 46 : 0
                    #expect(cs_scope_extra_string_character(index) == expected, "\(name)")
                }
                let raw = (0..<cs_guard_count()).map { cs_guard_status_at($0) }.first { String(cString: $0.name) == "string" }
                #expect(raw.map { Int($0.skipped_hooks) } == owners - slots)
                #expect(raw?.detail != nil)
            }
            // Not opted in, the app classes are out of scope: nothing to skip.
            try withGuards {
                let string = try #require(CrashShieldSDK.status.first { $0.id == .string })
                #expect(string.state == .active)
                #expect(string.skippedHooks.isEmpty)
                #expect(cs_scope_extra_string_character(0) == 46)
            }
        }
    }
}
