import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing
@testable import CrashShield
import _CrashShieldScenarios
import _CrashShieldRuntime
import _CrashShieldIncidents
import _CrashShieldTestSupport

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
    .init(scenario: "selector.missingFloat.instance", guardID: .selector, className: "CSMsgAppModel",
          selector: "cs_missingFloat", isClassMethod: false, reason: unrecognized),
    .init(scenario: "selector.missingPair.struct8", guardID: .selector, className: "CSMsgAppModel",
          selector: "cs_missingPair", isClassMethod: false, reason: unrecognized),
    .init(scenario: "selector.missingMixed.struct16", guardID: .selector, className: "CSMsgAppModel",
          selector: "cs_missingMixed", isClassMethod: false, reason: unrecognized),
    .init(scenario: "selector.missingFormat.variadic", guardID: .selector, className: "CSMsgAppModel",
          selector: "cs_missingFormat:", isClassMethod: false, reason: unrecognized),
    .init(scenario: "selector.performSelectorWithObject.untyped", guardID: .selector, className: "CSMsgAppModel",
          selector: "cs_neverDeclared:", isClassMethod: false, reason: unrecognized),
    .init(scenario: "selector.performSelector.classUntyped", guardID: .selector, className: "CSMsgAppModel",
          selector: "cs_neverDeclared", isClassMethod: true, reason: unrecognized),
    // JSON type confusion: the receivers are private concrete classes, checked by
    // jsonValueClassesAreInScopeByDefault against the runtime's own answer.
    .init(scenario: "selector.length.number", guardID: .selector, className: nil,
          selector: "length", isClassMethod: false, reason: unrecognized),
    .init(scenario: "selector.objectForKey.array", guardID: .selector, className: nil,
          selector: "objectForKey:", isClassMethod: false, reason: unrecognized),
    .init(scenario: "selector.integerValue.array", guardID: .selector, className: nil,
          selector: "integerValue", isClassMethod: false, reason: unrecognized),
    .init(scenario: "selector.objectAtIndex.dictionary", guardID: .selector, className: nil,
          selector: "objectAtIndex:", isClassMethod: false, reason: unrecognized),
    .init(scenario: "selector.count.string", guardID: .selector, className: nil,
          selector: "count", isClassMethod: false, reason: unrecognized),
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
    .init(scenario: "kvc.valueForKey.classUndefinedKey", guardID: .kvc, className: "CSMsgAppModel",
          selector: "valueForUndefinedKey:", isClassMethod: true, reason: "undefined key: nil returned"),
    .init(scenario: "kvc.setValue.classUndefinedKey", guardID: .kvc, className: "CSMsgAppModel",
          selector: "setValue:forUndefinedKey:", isClassMethod: true, reason: "undefined key: value ignored"),
]

extension RuntimeTests {
    @Suite struct MessageGuard {
        @Test func messageGuardsAreActiveAfterTheirCanaries() throws {
            try withGuards {
                // selector: the forward hook plus performSelector:, performSelector:withObject: and
                // performSelector:withObject:withObject: on NSObject and its metaclass; nsnull: the
                // forward hook only (no NSNull method changes); kvc: seven methods, both sides.
                for (id, hooked) in [(GuardID.selector, 7), (.nsnull, 1), (.kvc, 14)] {
                    let status = try #require(CrashShieldSDK.status.first { $0.id == id })
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
                #expect(CrashShieldSDK.recordedCount(for: expected.guardID) == 1)
            }
        }

        @Test(arguments: messageScenarioExpectations)
        func withoutGuardsTheMisuseThrows(_ expected: ExpectedMessageIncident) {
            CrashShieldSDK._resetForTesting()
            guard case .threw(let name) = runScenario(expected.scenario) else {
                Issue.record("\(expected.scenario) did not throw without guards")
                return
            }
            #expect(!name.isEmpty)
        }

        @Test func legalMessagesBehaveIdenticallyWithAndWithoutGuards() throws {
            CrashShieldSDK._resetForTesting()
            let unguarded = runOracles().filter { $0.key.hasPrefix("messages:") }
            let (guarded, recorded) = try withGuards {
                let results = runOracles().filter { $0.key.hasPrefix("messages:") }
                let recorded = [GuardID.selector, .nsnull, .kvc].map { CrashShieldSDK.recordedCount(for: $0) }
                return (results, recorded)
            }
            #expect(unguarded.count == 10)
            #expect(guarded == unguarded)
            #expect(recorded == [0, 0, 0], "legal calls recorded incidents")
            // The oracles exercise what they claim to (spot checks of the shared text).
            let forwarding = try #require(unguarded["messages: class with its own forwarding"])
            #expect(forwarding.contains("length=10\n"))
            #expect(forwarding.contains("uppercaseString=FORWARDED!\n"))
            #expect(forwarding.contains("unknownToTarget=exception:NSInvalidArgumentException\n"))
            let proxy = try #require(unguarded["messages: NSProxy subclass"])
            #expect(proxy.contains("length=7\n"))
            let overrider = try #require(unguarded["messages: class overriding the KVC hooks"])
            #expect(overrider.contains("valueForUndefinedKey=fallback:missing<"))
            #expect(overrider.contains("countAfterNil=-1\n"))
            let null = try #require(unguarded["messages: NSNull's own methods"])
            #expect(null.contains("description=<null>\n"))
            #expect(null.contains("respondsToLength=NO\n"))
            let implemented = try #require(unguarded["messages: implemented methods and respondsToSelector:"])
            #expect(implemented.contains("respondsToMissing=NO\n"))
            #expect(implemented.contains("classRespondsToMissing=NO\n"))
            // NSNull answers no signature for what it does not implement (code that builds an
            // NSInvocation after asking must not be misled), and nothing else changes either.
            let introspection = try #require(unguarded["messages: introspection of selectors nobody implements"])
            #expect(introspection.contains("null.length.methodSignatureForSelector=nil\n"))
            #expect(introspection.contains("null.missingBig.methodSignatureForSelector=nil\n"))
            #expect(introspection.contains("model.missingObject.methodSignatureForSelector=nil\n"))
            #expect(introspection.contains("number.length.respondsToSelector=NO\n"))
            #expect(introspection.contains("modelClass.neverDeclared.respondsToSelector=NO\n"))
            let handoffs = try #require(unguarded["messages: KVC hand-offs to deprecated and overriding methods"])
            #expect(handoffs.contains("unboundQuery=unbound:Lxcke<"))
            #expect(handoffs.contains("unboundAfterTake=Lxcke=GNUstep<"))
            #expect(handoffs.contains("unableToSetNil=-7<"))
            #expect(handoffs.contains("takeValueCalls=10111\n"))
            #expect(handoffs.contains("nilKeyToOverride=constant<"))
            #expect(handoffs.contains("nilKeyWritesToOverride=1\n"))
            #expect(handoffs.contains("classOverride=class constant<"))
            #expect(handoffs.contains("dictionaryNilPath=nil\n"))
            let jsonForwarding = try #require(unguarded["messages: legal forwarding to JSON values"])
            #expect(jsonForwarding.contains("distantCount=2\n"))
            #expect(jsonForwarding.contains("checkerOutsideProtocol=exception:"))
            #expect(jsonForwarding.contains("targetForwarderObjectForKey=v<"))
            #expect(jsonForwarding.contains("invocationForwarderCapitalized=Forwarded!\n"))
            let foundation = try #require(unguarded["messages: JSON values in Foundation's own code"])
            #expect(foundation.contains("roundTripEqual=YES\n"))
            #expect(foundation.contains("archiveRoundTrip=YES\n"))
        }

        @Test func nsnullPassesArgumentsAndResultsThroughUnchanged() throws {
            try withGuards {
                let incidents = collectIncidents { #expect(cs_msg_nsnull_answers_like_empty_values() == 0) }
                #expect(CrashShieldSDK.recordedCount(for: .nsnull) == 8)
                #expect(Set(incidents.map(\.selector)) == [
                    "stringByAppendingFormat:", "stringByPaddingToLength:withString:startingAtIndex:", "decimalValue",
                    "rangeOfString:", "lastObject", "allKeys", "doubleValue",
                ])
                #expect(incidents.allSatisfy { $0.className == "NSNull" && $0.guardID == .nsnull })
            }
        }

        @Test func forwardingClassesKeepTheirOwnDecision() throws {
            CrashShieldSDK._resetForTesting()
            #expect(cs_msg_forwarder_unknown() == -1)
            try withGuards {
                #expect(cs_msg_forwarder_unknown() == -1)
                #expect(CrashShieldSDK.recordedCount(for: .selector) == 0)
            }
        }

        @Test func systemClassesAreOutOfScopeByDefault() throws {
            try withGuards {
                #expect(cs_msg_system_date_unrecognized() == -1)
                #expect(CrashShieldSDK.recordedCount(for: .selector) == 0)
            }
        }

        /// Type confusion from JSON: the JSON value classes (NSString, NSNumber, NSArray,
        /// NSDictionary, mutable forms and concrete private classes) are in the default scope.
        @Test func jsonValueClassesAreInScopeByDefault() throws {
            let scenarios = ["selector.length.number", "selector.objectForKey.array", "selector.integerValue.array",
                             "selector.objectAtIndex.dictionary", "selector.count.string"]
            let expectedClasses = [0, 1, 1, 2, 3].map { String(cString: cs_msg_json_class_name(Int32($0))) }
            try withGuards {
                let incidents = collectIncidents {
                    for name in scenarios { #expect(runScenario(name) == .neutral, "\(name)") }
                    #expect(cs_msg_system_class_unrecognized() == 1)
                }
                #expect(incidents.count == scenarios.count + 1)
                #expect(Array(incidents.prefix(scenarios.count).map(\.className)) == expectedClasses)
                #expect(incidents.allSatisfy { $0.guardID == .selector && !$0.isClassMethod })
            }
        }

        /// An app class that gains -methodSignatureForSelector: and
        /// -forwardInvocation: with class_addMethod after its first unrecognized message forwards
        /// from then on. Before the fix the cached scope kept neutralising it (0 and a second
        /// incident instead of 42; exit 6).
        @Test func forwardingAddedAfterTheFirstMessageRuns() async {
            await #expect(processExitsWith: .success) {
                guard (try? CrashShieldSDK.start(.guardsOnly)) != nil else { exit(3) }
                guard cs_msg_late_forwarder_missing_int() == 0 else { exit(4) }
                cs_msg_late_forwarder_add_forwarding()
                guard cs_msg_late_forwarder_missing_int() == 42 else { exit(6) }
                guard CrashShieldSDK.flushIncidents(timeout: .seconds(5)) else { exit(7) }
                exit(CrashShieldSDK.recordedCount(for: .selector) == 1 ? 0 : 8)
            }
        }

        /// The same class of bug on another forwarding path: a class that gains
        /// -forwardingTargetForSelector: after a first unrecognized message. Unfixed, exit 6 (0
        /// instead of 42: still neutralised). (Class-side forwarding added to a metaclass later is
        /// not a member here: unguarded, GNUstep does not forward such a class message either.)
        @Test func aForwardingTargetAddedLaterRuns() async {
            await #expect(processExitsWith: .success) {
                guard (try? CrashShieldSDK.start(.guardsOnly)) != nil else { exit(3) }
                guard cs_msg_late_redirector_missing_int() == 0 else { exit(4) }
                cs_msg_late_forwarder_add_target()
                guard cs_msg_late_redirector_missing_int() == 42 else { exit(6) }
                guard CrashShieldSDK.flushIncidents(timeout: .seconds(5)) else { exit(7) }
                exit(CrashShieldSDK.recordedCount(for: .selector) == 1 ? 0 : 8)
            }
        }

        /// The unguarded oracle of aForwardingTargetAddedLaterRuns: throws once, then answers 42.
        @Test func aForwardingTargetAddedLaterUnguarded() async {
            await #expect(processExitsWith: .success) {
                guard cs_msg_late_redirector_missing_int() == -1 else { exit(4) }
                cs_msg_late_forwarder_add_target()
                exit(cs_msg_late_redirector_missing_int() == 42 ? 0 : 6)
            }
        }

        /// A class below a JSON value class with its own forwarding (found at run time, here one
        /// made at run time) keeps it: the guard never answers for it.
        @Test func jsonSubclassesWithTheirOwnForwardingKeepIt() throws {
            CrashShieldSDK._resetForTesting()
            #expect(cs_msg_runtime_json_subclass_forwards() == 42)
            try withGuards {
                #expect(cs_msg_runtime_json_subclass_forwards() == 42)
                #expect(CrashShieldSDK.recordedCount(for: .selector) == 0)
            }
        }

        /// An app NSProxy keeps its own forwarding; the message it relays to an NSString that does
        /// not implement it is that string's misuse, neutralised like any other.
        @Test func aProxyRelayingAnUnknownMessageToAJSONValue() throws {
            CrashShieldSDK._resetForTesting()
            #expect(cs_msg_proxy_relays_unknown_to_json() == -1)
            try withGuards {
                let incidents = collectIncidents { #expect(cs_msg_proxy_relays_unknown_to_json() == 1) }
                #expect(incidents.map(\.selector) == ["cs_missingObject"])
                #expect(incidents.map(\.guardID) == [.selector])
            }
        }

        /// Without guards, every untyped call below throws at the lookup (nothing is called).
        @Test func untypedSelectorsThrowWithoutGuards() {
            CrashShieldSDK._resetForTesting()
            for kind in 0...6 { #expect(cs_msg_untyped_call(Int32(kind)) == 1, "kind \(kind)") }
        }

        /// An untyped selector called through a looked-up IMP has no known return convention (a
        /// struct returned in memory puts the buffer where the receiver would be): the guards
        /// decline, the runtime throws as unguarded, and nothing is recorded. In a child process:
        /// a wrong guess crashes or records a garbage incident.
        /// An app category that gives NSObject -length (GNUstep's own test suite has one) makes
        /// NSNull answer -length itself: the canary must probe another selector, not switch the
        /// guard off. Before: "-[NSNull length] not answered as an empty string".
        @Test func nsnullGuardStartsWhenNSObjectHasALengthCategory() async {
            await #expect(processExitsWith: .success) {
                cs_test_add_nsobject_length()
                guard cs_guards_start(nil) == CS_START_OK else { exit(3) }
                for index in 0..<cs_guard_count() {
                    let status = cs_guard_status_at(index)
                    if String(cString: status.name) == "nsnull" { exit(status.state == CS_GUARD_ACTIVE ? 0 : 4) }
                }
                exit(5)
            }
        }

        @Test(arguments: 0...6)
        func untypedSelectorsWithAnUnknownConventionAreDeclined(_ kind: Int) async {
            await #expect(processExitsWith: .success) { [kind] in
                guard cs_guards_start(nil) == CS_START_OK else { exit(3) }
                let outcome = cs_msg_untyped_call(Int32(kind))
                guard outcome == 1 else { exit(outcome == 0 ? 4 : 5) }
                exit(cs_incidents_stats().recorded == 0 ? 0 : 6)
            }
        }

        @Test func anAllowListReplacesTheDefaultScope() throws {
            var options = CrashShieldOptions()
            options.allowedClassPrefixes = ["NSNumber"]
            try withGuards(options) {
                let incidents = collectIncidents { #expect(cs_msg_system_class_unrecognized() == 1) }
                #expect(incidents.map(\.methodName).contains { $0.hasSuffix(" length]") && $0.hasPrefix("-[") })
                #expect(incidents.allSatisfy { $0.guardID == .selector })
                // An app class or JSON class that is not allow-listed is left alone.
                #expect(runScenario("selector.missingObject.instance") == .threw("NSInvalidArgumentException"))
                #expect(runScenario("selector.objectForKey.array") == .threw("NSInvalidArgumentException"))
            }
        }

        @Test func aDenyListLeavesMatchingClassesAlone() throws {
            var options = CrashShieldOptions()
            options.deniedClassPrefixes = ["CSMsg"]
            try withGuards(options) {
                #expect(runScenario("selector.missingObject.instance") == .threw("NSInvalidArgumentException"))
                #expect(runScenario("kvc.valueForKey.undefinedKey") == .threw("NSUnknownKeyException"))
                #expect(runScenario("nsnull.length.null") == .neutral)
                #expect(CrashShieldSDK.recordedCount(for: .selector) == 0)
                #expect(CrashShieldSDK.recordedCount(for: .kvc) == 0)
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

        /// Report-only records exactly what neutralise would answer: a message whose return
        /// convention is unknown is declined under both, with no incident (the lookup throws
        /// before anything is called, so this runs in-process).
        @Test func reportOnlyRecordsNothingForAMessageNeutraliseWouldDecline() throws {
            var options = CrashShieldOptions()
            options.policies = [.selector: .reportOnly, .nsnull: .reportOnly]
            try withGuards(options) {
                #expect(cs_msg_untyped_call(Int32(CS_MSG_UNTYPED_NSNULL_STRUCT32)) == 1)
                #expect(cs_msg_untyped_call(Int32(CS_MSG_UNTYPED_STRUCT32)) == 1)
                #expect(CrashShieldSDK.statistics.recorded == 0)
            }
        }

        @Test func offMeansTheOriginalBehaviourAndNoIncident() throws {
            try withGuards {
                for id in [GuardID.selector, .nsnull, .kvc] { try CrashShieldSDK.setPolicy(.off, for: id) }
                #expect(runScenario("selector.missingObject.instance") == .threw("NSInvalidArgumentException"))
                #expect(runScenario("nsnull.count.null") == .threw("NSInvalidArgumentException"))
                #expect(runScenario("kvc.setValue.nilScalar") == .threw("NSInvalidArgumentException"))
                #expect(CrashShieldSDK.statistics.recorded == 0)
                try CrashShieldSDK.setPolicy(.neutralize, for: .selector)
                #expect(runScenario("selector.missingObject.instance") == .neutral)
            }
        }

        @Test func repeatedMisuseIsOneFingerprintCounted() throws {
            try withGuards {
                for _ in 0..<5 { #expect(runScenario("selector.missingInt.instance") == .neutral) }
                #expect(CrashShieldSDK.recordedCount(for: .selector) == 5)
                #expect(CrashShieldSDK.statistics.fingerprints == 1)
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
            CrashShieldSDK._resetForTesting()
            cs_guard_inject_canary_failure_for_testing(id.rawValue)
            try CrashShieldSDK.start(.guardsOnly)
            defer { CrashShieldSDK._resetForTesting() }
            let status = try #require(CrashShieldSDK.status.first { $0.id == id })
            #expect(status.state == .canaryFailed(reason: "canary failure injected by a test"))
            #expect(status.hookedMethods == 0)
            #expect(runScenario(scenario) == .threw(exception))
            #expect(CrashShieldSDK.recordedCount(for: id) == 0)
        }

        @Test func concurrentMisuseOnManyThreads() throws {
            try withGuards {
                #expect(cs_msg_run_concurrently(8, 500) == 0)
                #expect(CrashShieldSDK.recordedCount(for: .selector) == 8 * 500 * 3)
                #expect(CrashShieldSDK.recordedCount(for: .nsnull) == 8 * 500 * 2)
                #expect(CrashShieldSDK.recordedCount(for: .kvc) == 8 * 500 * 2)
            }
        }
    }
}

