import Foundation
import Testing
@_spi(Testing) @testable import CrashShield
import _CrashShieldScenarios

/// What the one incident of a message-guard scenario must say. `className` nil: the receiver is
/// a private Foundation class (a string inside a key path), not checked by name.
struct ExpectedMessageIncident: Sendable, CustomTestStringConvertible {
    let scenario: String
    let guardID: GuardID
    let className: String?
    let selector: String
    let isClassMethod: Bool
    let reason: String
    var testDescription: String { scenario }
}

let unrecognized = "unrecognized selector: nil/0 returned"

let messageScenarioExpectations: [ExpectedMessageIncident] = [
    .init(scenario: "selector.missingObject.instance", guardID: .selector, className: "CSMsgAppModel",
          selector: "cs_missingObject", isClassMethod: false, reason: unrecognized),
    .init(scenario: "selector.missingInt.instance", guardID: .selector, className: "CSMsgAppModel",
          selector: "cs_missingInt", isClassMethod: false, reason: unrecognized),
    .init(scenario: "selector.missingDouble.instance", guardID: .selector, className: "CSMsgAppModel",
          selector: "cs_missingDouble", isClassMethod: false, reason: unrecognized),
    .init(scenario: "selector.missingRange.struct16", guardID: .selector, className: "CSMsgAppModel",
          selector: "cs_missingRange", isClassMethod: false, reason: unrecognized),
    .init(scenario: "selector.missingBig.sret", guardID: .selector, className: "CSMsgAppModel",
          selector: "cs_missingBig", isClassMethod: false, reason: unrecognized),
    .init(scenario: "selector.missingLongDouble.x87", guardID: .selector, className: "CSMsgAppModel",
          selector: "cs_missingLongDouble", isClassMethod: false, reason: unrecognized),
    .init(scenario: "selector.missingClassObject.class", guardID: .selector, className: "CSMsgAppModel",
          selector: "cs_missingClassObject", isClassMethod: true, reason: unrecognized),
    .init(scenario: "selector.performSelector.untyped", guardID: .selector, className: "CSMsgAppModel",
          selector: "cs_neverDeclared", isClassMethod: false, reason: unrecognized),
    .init(scenario: "nsnull.length.null", guardID: .nsnull, className: "NSNull", selector: "length",
          isClassMethod: false, reason: "message to NSNull answered as an empty NSString"),
    .init(scenario: "nsnull.isEqualToString.null", guardID: .nsnull, className: "NSNull",
          selector: "isEqualToString:", isClassMethod: false, reason: "message to NSNull answered as an empty NSString"),
    .init(scenario: "nsnull.intValue.null", guardID: .nsnull, className: "NSNull", selector: "intValue",
          isClassMethod: false, reason: "message to NSNull answered as an empty NSString"),
    .init(scenario: "nsnull.count.null", guardID: .nsnull, className: "NSNull", selector: "count",
          isClassMethod: false, reason: "message to NSNull answered as an empty NSArray"),
    .init(scenario: "nsnull.objectForKey.null", guardID: .nsnull, className: "NSNull", selector: "objectForKey:",
          isClassMethod: false, reason: "message to NSNull answered as an empty NSDictionary"),
    .init(scenario: "nsnull.missingRange.null", guardID: .nsnull, className: "NSNull", selector: "cs_missingRange",
          isClassMethod: false, reason: "message to NSNull no empty value answers: nil/0 returned"),
    .init(scenario: "kvc.setValue.undefinedKey", guardID: .kvc, className: "CSMsgAppModel",
          selector: "setValue:forUndefinedKey:", isClassMethod: false, reason: "undefined key: value ignored"),
    .init(scenario: "kvc.valueForKey.undefinedKey", guardID: .kvc, className: "CSMsgAppModel",
          selector: "valueForUndefinedKey:", isClassMethod: false, reason: "undefined key: nil returned"),
    .init(scenario: "kvc.setValue.nilKey", guardID: .kvc, className: "CSMsgAppModel", selector: "setValue:forKey:",
          isClassMethod: false, reason: "nil key: value ignored"),
    .init(scenario: "kvc.valueForKey.nilKey", guardID: .kvc, className: "CSMsgAppModel", selector: "valueForKey:",
          isClassMethod: false, reason: "nil key: nil returned"),
    .init(scenario: "kvc.setValue.nilScalar", guardID: .kvc, className: "CSMsgAppModel",
          selector: "setNilValueForKey:", isClassMethod: false, reason: "nil for a scalar property: ignored"),
    .init(scenario: "kvc.valueForKeyPath.badPath", guardID: .kvc, className: nil,
          selector: "valueForUndefinedKey:", isClassMethod: false, reason: "undefined key: nil returned"),
    .init(scenario: "kvc.setValueForKeyPath.badPath", guardID: .kvc, className: "CSMsgAppModel",
          selector: "valueForUndefinedKey:", isClassMethod: false, reason: "undefined key: nil returned"),
    .init(scenario: "kvc.valueForKeyPath.nilPath", guardID: .kvc, className: "CSMsgAppModel",
          selector: "valueForKeyPath:", isClassMethod: false, reason: "nil key path: nil returned"),
]

extension RuntimeTests {
    @Suite struct MessageGuard {
        @Test func messageGuardsAreActiveAfterTheirCanaries() throws {
            try withGuards {
                for (id, hooked) in [(GuardID.selector, 1), (.nsnull, 3), (.kvc, 7)] {
                    let status = try #require(CrashShield.status.first { $0.id == id })
                    #expect(status.state == .active, "\(id): \(status.state)")
                    #expect(status.policy == .neutralize)
                    #expect(status.hookedMethods == hooked, "\(id)")
                }
            }
        }

        @Test func everyMessageScenarioHasAnExpectation() {
            let names = allScenarioNames.filter {
                $0.hasPrefix("selector.") || $0.hasPrefix("nsnull.") || $0.hasPrefix("kvc.")
            }
            #expect(names == messageScenarioExpectations.map(\.scenario))
        }

        @Test(arguments: messageScenarioExpectations)
        func misuseIsNeutralisedWithExactlyOneIncident(_ expected: ExpectedMessageIncident) throws {
            try withGuards {
                var outcome: ScenarioRun.Outcome = .otherValue
                let incidents = collectIncidents { outcome = runScenario(expected.scenario) }
                #expect(outcome == .neutral)
                #expect(incidents.count == 1)
                let incident = try #require(incidents.first)
                #expect(incident.guardID == expected.guardID)
                #expect(incident.kind == .firstOccurrence)
                #expect(incident.policy == .neutralize)
                if let className = expected.className { #expect(incident.className == className) }
                #expect(incident.selector == expected.selector)
                #expect(incident.isClassMethod == expected.isClassMethod)
                #expect(incident.reason == expected.reason)
                #expect(incident.count == 1)
                #expect(CrashShield.recordedCount(for: expected.guardID) == 1)
            }
        }

        @Test(arguments: messageScenarioExpectations)
        func withoutGuardsTheMisuseThrows(_ expected: ExpectedMessageIncident) {
            CrashShield._resetForTesting()
            guard case .threw(let name) = runScenario(expected.scenario) else {
                Issue.record("\(expected.scenario) did not throw without guards")
                return
            }
            #expect(!name.isEmpty)
        }

        @Test func legalMessagesBehaveIdenticallyWithAndWithoutGuards() throws {
            CrashShield._resetForTesting()
            let unguarded = runOracles().filter { $0.key.hasPrefix("messages:") }
            let (guarded, recorded) = try withGuards {
                let results = runOracles().filter { $0.key.hasPrefix("messages:") }
                let recorded = [GuardID.selector, .nsnull, .kvc].map { CrashShield.recordedCount(for: $0) }
                return (results, recorded)
            }
            #expect(unguarded.count == 6)
            #expect(guarded == unguarded)
            #expect(recorded == [0, 0, 0], "legal calls recorded incidents")
            // The oracles exercise what they claim to (spot checks of the shared text).
            let forwarding = try #require(unguarded["messages: class with its own forwarding"])
            #expect(forwarding.contains("length=10\n"))
            #expect(forwarding.contains("uppercaseString=FORWARDED!\n"))
            #expect(forwarding.contains("unknownToTarget=exception:NSInvalidArgumentException\n"))
            let proxy = try #require(unguarded["messages: NSProxy subclass"])
            #expect(proxy.contains("length=7\n"))
            #expect(proxy.contains("unknownToTarget=exception:"))
            let overrider = try #require(unguarded["messages: class overriding the KVC hooks"])
            #expect(overrider.contains("valueForUndefinedKey=fallback:missing<"))
            #expect(overrider.contains("countAfterNil=-1\n"))
            let null = try #require(unguarded["messages: NSNull's own methods"])
            #expect(null.contains("description=<null>\n"))
            #expect(null.contains("respondsToLength=NO\n"))
            let implemented = try #require(unguarded["messages: implemented methods and respondsToSelector:"])
            #expect(implemented.contains("respondsToMissing=NO\n"))
            #expect(implemented.contains("classRespondsToMissing=NO\n"))
        }

        @Test func nsnullPassesArgumentsAndResultsThroughUnchanged() throws {
            try withGuards {
                let incidents = collectIncidents { #expect(cs_msg_nsnull_answers_like_empty_values() == 0) }
                #expect(CrashShield.recordedCount(for: .nsnull) == 8)
                #expect(Set(incidents.map(\.selector)) == [
                    "stringByAppendingFormat:", "stringByPaddingToLength:withString:startingAtIndex:", "decimalValue",
                    "rangeOfString:", "lastObject", "allKeys", "doubleValue",
                ])
                #expect(incidents.allSatisfy { $0.className == "NSNull" && $0.guardID == .nsnull })
            }
        }

        @Test func forwardingClassesKeepTheirOwnDecision() throws {
            CrashShield._resetForTesting()
            #expect(cs_msg_forwarder_unknown() == -1)
            try withGuards {
                #expect(cs_msg_forwarder_unknown() == -1)
                #expect(CrashShield.recordedCount(for: .selector) == 0)
            }
        }

        @Test func systemClassesAreOutOfScopeByDefault() throws {
            try withGuards {
                #expect(cs_msg_system_class_unrecognized() == -1)
                #expect(CrashShield.recordedCount(for: .selector) == 0)
            }
        }

        @Test func anAllowListReplacesTheDefaultScope() throws {
            var options = CrashShieldOptions()
            options.allowedClassPrefixes = ["NSNumber"]
            try withGuards(options) {
                let incidents = collectIncidents { #expect(cs_msg_system_class_unrecognized() == 1) }
                #expect(incidents.map(\.methodName).contains { $0.hasSuffix(" length]") && $0.hasPrefix("-[") })
                #expect(incidents.allSatisfy { $0.guardID == .selector })
                // An app class that is not allow-listed is left alone.
                #expect(runScenario("selector.missingObject.instance") == .threw("NSInvalidArgumentException"))
            }
        }

        @Test func aDenyListLeavesMatchingClassesAlone() throws {
            var options = CrashShieldOptions()
            options.deniedClassPrefixes = ["CSMsg"]
            try withGuards(options) {
                #expect(runScenario("selector.missingObject.instance") == .threw("NSInvalidArgumentException"))
                #expect(runScenario("kvc.valueForKey.undefinedKey") == .threw("NSUnknownKeyException"))
                #expect(runScenario("nsnull.length.null") == .neutral)
                #expect(CrashShield.recordedCount(for: .selector) == 0)
                #expect(CrashShield.recordedCount(for: .kvc) == 0)
            }
        }

        @Test func reportOnlyRecordsThenLetsTheExceptionHappen() throws {
            var options = CrashShieldOptions()
            options.policies = [.selector: .reportOnly, .nsnull: .reportOnly, .kvc: .reportOnly]
            try withGuards(options) {
                let incidents = collectIncidents {
                    #expect(runScenario("selector.missingObject.instance") == .threw("NSInvalidArgumentException"))
                    #expect(runScenario("nsnull.length.null") == .threw("NSInvalidArgumentException"))
                    #expect(runScenario("kvc.valueForKey.undefinedKey") == .threw("NSUnknownKeyException"))
                }
                #expect(Set(incidents.map(\.guardID)) == [.selector, .nsnull, .kvc])
                #expect(incidents.allSatisfy { $0.policy == .reportOnly })
                #expect(incidents.first { $0.guardID == .selector }?.selector == "cs_missingObject")
            }
        }

        @Test func offMeansTheOriginalBehaviourAndNoIncident() throws {
            try withGuards {
                for id in [GuardID.selector, .nsnull, .kvc] { try CrashShield.setPolicy(.off, for: id) }
                #expect(runScenario("selector.missingObject.instance") == .threw("NSInvalidArgumentException"))
                #expect(runScenario("nsnull.count.null") == .threw("NSInvalidArgumentException"))
                #expect(runScenario("kvc.setValue.nilScalar") == .threw("NSInvalidArgumentException"))
                #expect(CrashShield.statistics.recorded == 0)
                try CrashShield.setPolicy(.neutralize, for: .selector)
                #expect(runScenario("selector.missingObject.instance") == .neutral)
            }
        }

        @Test func repeatedMisuseIsOneFingerprintCounted() throws {
            try withGuards {
                for _ in 0..<5 { #expect(runScenario("selector.missingInt.instance") == .neutral) }
                #expect(CrashShield.recordedCount(for: .selector) == 5)
                #expect(CrashShield.statistics.fingerprints == 1)
            }
        }

        @Test func uninstallRestoresUnrecognizedSelectorAndNSNullBehaviour() throws {
            try withGuards {
                #expect(runScenario("selector.missingObject.instance") == .neutral)
                #expect(runScenario("nsnull.length.null") == .neutral)
            }
            #expect(runScenario("selector.missingObject.instance") == .threw("NSInvalidArgumentException"))
            #expect(runScenario("nsnull.length.null") == .threw("NSInvalidArgumentException"))
            #expect(runScenario("kvc.valueForKey.undefinedKey") == .threw("NSUnknownKeyException"))
        }

        @Test(arguments: [
            (GuardID.selector, "selector.missingObject.instance", "NSInvalidArgumentException"),
            (.nsnull, "nsnull.length.null", "NSInvalidArgumentException"),
            (.kvc, "kvc.valueForKey.undefinedKey", "NSUnknownKeyException"),
        ])
        func aFailedCanaryRemovesTheGuardAgain(_ id: GuardID, _ scenario: String, _ exception: String) throws {
            CrashShield._resetForTesting()
            CrashShield._injectCanaryFailure(for: id)
            try CrashShield.start()
            defer { CrashShield._resetForTesting() }
            let status = try #require(CrashShield.status.first { $0.id == id })
            #expect(status.state == .canaryFailed(reason: "canary failure injected by a test"))
            #expect(status.hookedMethods == 0)
            #expect(runScenario(scenario) == .threw(exception))
            #expect(CrashShield.recordedCount(for: id) == 0)
        }

        @Test func concurrentMisuseOnManyThreads() throws {
            try withGuards {
                #expect(cs_msg_run_concurrently(8, 500) == 0)
                #expect(CrashShield.recordedCount(for: .selector) == 8 * 500 * 3)
                #expect(CrashShield.recordedCount(for: .nsnull) == 8 * 500 * 2)
                #expect(CrashShield.recordedCount(for: .kvc) == 8 * 500 * 2)
            }
        }
    }
}
