@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

/// The verdict table on real crashes: the events CrashShield's SDK sends for its own misuse
/// scenarios run with the guards off (`scripts/verdict_fixtures.py` writes them to
/// `Fixtures/Verdicts`), and for crashes no guard covers.
@Suite("Guard verdicts")
struct GuardVerdictTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/Verdicts")

    static func fixture(_ name: String) throws -> JSONValue {
        let data = try Data(contentsOf: directory.appendingPathComponent(name + ".json"))
        return try JSONValue.parse(data)
    }

    /// Scenario → the rule and guard that must cover its unguarded crash (and the class prefix
    /// the rule reads, where it reads one).
    static let expected: [(scenario: String, rule: String, guardName: String)] = [
        ("array.objectAtIndex.beyond", "container.misuse", "container"),
        ("mdict.setObjectForKey.nilKey", "container.misuse", "container"),
        ("oset.objectAtIndex.beyond", "container.misuse", "container"),
        ("string.substringFromIndex.beyond", "string.misuse", "string"),
        ("string.characterAtIndex.beyond", "string.misuse", "string"),
        ("selector.missingObject.instance", "selector.unrecognized", "selector"),
        ("selector.missingClassObject.class", "selector.unrecognized", "selector"),
        ("nsnull.length.null", "nsnull.message", "nsnull"),
        ("kvc.valueForKey.undefinedKey", "kvc.undefined-key", "kvc"),
        ("kvc.setValue.nilScalar", "kvc.nil-value", "kvc"),
        ("kvo.removeObserverContext.neverAdded", "kvo.misuse", "kvo"),
        // A freed observer messaged by the notification centre: on GNUstep without symbols only
        // the runtime's lookup shows, so it reads as any message to a freed object.
        ("notification.observer.deallocRegistered", "zombie.freed-receiver", "zombie"),
        ("zombie.message.object", "zombie.freed-receiver", "zombie"),
    ]

    @Test(arguments: expected.map(\.scenario))
    func eachScenarioCrashGetsItsGuard(_ scenario: String) throws {
        let want = try #require(Self.expected.first { $0.scenario == scenario })
        let event = try Self.fixture(scenario)
        let verdict = try #require(GuardVerdicts.verdict(for: event), "no verdict for \(scenario)")
        #expect(verdict.rule == want.rule)
        #expect(verdict.guardName == want.guardName)
        #expect(RemoteConfigDocument.knownGuardNames.contains(verdict.guardName), "the SDK's own guard names only")
    }

    @Test func everyRuleOfTheTableHasARealCrash() {
        let covered = Set(Self.expected.map(\.rule))
        #expect(Set(GuardVerdicts.rules.map(\.name)) == covered)
        #expect(Set(GuardVerdicts.rules.map(\.name)).count == GuardVerdicts.rules.count, "rule names are unique")
        for rule in GuardVerdicts.rules { #expect(RemoteConfigDocument.knownGuardNames.contains(rule.guardName), "\(rule.name)") }
    }

    @Test(arguments: ["crash-segv", "crash-abort", "crash-cxx-exception", "crash-objc-exception"])
    func crashesNoGuardCoversGetNoVerdict(_ name: String) throws {
        let event = try Self.fixture(name)
        #expect(GuardVerdicts.verdict(for: event) == nil)
    }

    @Test func aPreventedCrashGetsNoVerdict() throws {
        // The same exception, as a CrashShield incident sends it: a handled mechanism.
        guard case .object(var event) = try Self.fixture("array.objectAtIndex.beyond"),
              case .object(var exception)? = event["exception"], case .array(var values)? = exception["values"],
              case .object(var last)? = values.last, case .object(var mechanism)? = last["mechanism"]
        else { Testing.Issue.record("unexpected fixture shape"); return }
        mechanism["handled"] = .bool(true)
        last["mechanism"] = .object(mechanism)
        values[values.count - 1] = .object(last)
        exception["values"] = .array(values)
        event["exception"] = .object(exception)
        #expect(GuardVerdicts.verdict(for: .object(event)) == nil)
    }

    @Test func theZombieVerdictNeedsAClassPrefixTheseStacksDoNotName() throws {
        // The app frames of the scenario are C functions: no Objective-C class to read.
        let verdict = try #require(GuardVerdicts.verdict(for: try Self.fixture("zombie.message.object")))
        #expect(verdict.className == nil && verdict.classPrefix == nil)
        #expect(verdict.needsClassPrefix)
        // The same crash called from an app method names that method's class.
        guard case .object(var event) = try Self.fixture("zombie.message.object"),
              case .object(var exception)? = event["exception"], case .array(var values)? = exception["values"],
              case .object(var last)? = values.last, case .object(var stack)? = last["stacktrace"],
              case .array(var frames)? = stack["frames"]
        else { Testing.Issue.record("unexpected fixture shape"); return }
        frames.insert(["function": "-[MYCartController reload:]", "in_app": true], at: max(0, frames.count - 2))
        stack["frames"] = .array(frames)
        last["stacktrace"] = .object(stack)
        values[values.count - 1] = .object(last)
        exception["values"] = .array(values)
        event["exception"] = .object(exception)
        let named = try #require(GuardVerdicts.verdict(for: .object(event)))
        #expect(named.rule == "zombie.freed-receiver" && named.className == "MYCartController" && named.classPrefix == "MY")
    }

    @Test func theSelectorVerdictNamesTheReceiversClassPrefix() throws {
        let verdict = try #require(GuardVerdicts.verdict(for: try Self.fixture("selector.missingObject.instance")))
        #expect(verdict.className == "CSMsgAppModel")
        #expect(verdict.classPrefix == "CS")
    }

    @Test func selectorVerdictsReadTheClassFromTheReason() {
        // Apple's text for the same misuse (the reason's format is Foundation's).
        #expect(GuardVerdicts.reasonClass("-[MYThing foo]: unrecognized selector sent to instance 0x600000c04000") == "MYThing")
        #expect(GuardVerdicts.reasonClass("+[MYThing(Extras) bar:]: unrecognized selector sent to class 0x1") == "MYThing")
        #expect(GuardVerdicts.reasonClass("MYThing(instance) does not recognize foo") == "MYThing")
        #expect(GuardVerdicts.reasonClass("no method here") == nil)
    }

    @Test func classPrefixesFollowTheCapitalsBeforeTheFirstWord() {
        #expect(GuardVerdicts.classPrefix("MYThing") == "MY")
        #expect(GuardVerdicts.classPrefix("MYURLCache") == "MYURL")
        #expect(GuardVerdicts.classPrefix("NSNull") == "NS")
        #expect(GuardVerdicts.classPrefix("Cart") == "Cart")
        #expect(GuardVerdicts.classPrefix("ABC") == "ABC")
    }
}
