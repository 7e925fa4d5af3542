import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing
@testable import CrashShield
import _CrashShieldScenarios

/// Registrations the KVO guard did not make (added before it was installed or while it was off)
/// and removal by context: legal calls keep their meaning across policy switches.
extension RuntimeTests {
    @Suite struct KVOGuard {
        /// GNUstep's own NSOperation removes a KVO registration it already removed when a
        /// cancelled dependency is dropped (GNUstep Tests/base NSOperation/basic.m:51); GNUstep
        /// ignores that, so it is no app misuse: the same result, and no incident.
        @Test func systemCodeRemovingANonexistentRegistrationIsNotReported() throws {
            try withGuards {
                #expect(cs_test_nsoperation_remove_cancelled_dependency())
                CrashShieldSDK.flushIncidents()
                #expect(CrashShieldSDK.recordedCount(for: .kvo) == 0)
            }
        }

        /// A policy switch between adding and removing never changes what the removal means:
        /// added while off (untracked), removed while on, the removal must reach the registration
        /// (not be taken for a misuse and ignored); added while on (tracked), removed while off,
        /// the guard's own registration must go too.
        @Test(arguments: [(GuardPolicy.off, GuardPolicy.neutralize), (.neutralize, .off)])
        func removalAfterAPolicySwitchRemovesTheRegistration(added: GuardPolicy, removed: GuardPolicy) throws {
            try withGuards {
                let pair = try #require(cs_test_kvo_pair_new())
                try CrashShieldSDK.setPolicy(added, for: .kvo)
                cs_test_kvo_pair_add(pair, 2)
                #expect(cs_test_kvo_pair_change(pair) == 10)
                try CrashShieldSDK.setPolicy(removed, for: .kvo)
                cs_test_kvo_pair_remove(pair)
                #expect(cs_test_kvo_pair_change(pair) == 0, "the registration survived its removal")
                try CrashShieldSDK.setPolicy(.neutralize, for: .kvo)
                #expect(CrashShieldSDK.recordedCount(for: .kvo) == 0)
                cs_test_kvo_pair_free(pair)
            }
        }

        /// One registration tracked (context 1), then one of the same pair added while off
        /// (context 2, untracked). Apple keeps both: removing context 2 must take the untracked
        /// one, not the tracked registration of context 1. GNUstep replaces: context 2 is all that
        /// is left, as without the guard, and removing either context is legal and silent.
        @Test func removingAnUntrackedContextLeavesTheTrackedOne() throws {
            try withGuards {
                let pair = try #require(cs_test_kvo_pair_new())
                cs_test_kvo_pair_add(pair, 1)
                try CrashShieldSDK.setPolicy(.off, for: .kvo)
                cs_test_kvo_pair_add(pair, 2)
                try CrashShieldSDK.setPolicy(.neutralize, for: .kvo)
                #if canImport(Darwin)
                #expect(cs_test_kvo_pair_change(pair) == 110)
                cs_test_kvo_pair_remove_context(pair, 2)
                #expect(cs_test_kvo_pair_change(pair) == 100)
                #else
                #expect(cs_test_kvo_pair_change(pair) == 10)
                cs_test_kvo_pair_remove_context(pair, 2)
                #expect(cs_test_kvo_pair_change(pair) == 0)
                #endif
                cs_test_kvo_pair_remove_context(pair, 1)
                #expect(cs_test_kvo_pair_change(pair) == 0)
                #expect(CrashShieldSDK.recordedCount(for: .kvo) == 0)
                cs_test_kvo_pair_free(pair)
            }
        }

        /// The other order: added while off (context 1, untracked), then on (context 2). GNUstep
        /// replaces the first registration, so one change notifies context 2 only and one removal
        /// ends it; Apple keeps both.
        @Test func trackedAddAfterAnUntrackedOneFollowsThePlatform() throws {
            try withGuards {
                let pair = try #require(cs_test_kvo_pair_new())
                try CrashShieldSDK.setPolicy(.off, for: .kvo)
                cs_test_kvo_pair_add(pair, 1)
                try CrashShieldSDK.setPolicy(.neutralize, for: .kvo)
                cs_test_kvo_pair_add(pair, 2)
                #if canImport(Darwin)
                #expect(cs_test_kvo_pair_change(pair) == 110)
                cs_test_kvo_pair_remove(pair)
                cs_test_kvo_pair_remove(pair)
                #else
                #expect(cs_test_kvo_pair_change(pair) == 10)
                cs_test_kvo_pair_remove(pair)
                #endif
                #expect(cs_test_kvo_pair_change(pair) == 0)
                #expect(CrashShieldSDK.recordedCount(for: .kvo) == 0)
                cs_test_kvo_pair_free(pair)
            }
        }

        /// Where no registration can exist, a removal is still a misuse: reported and ignored.
        @Test func removalFromAnObjectNeverObservedIsStillReported() throws {
            try withGuards {
                let pair = try #require(cs_test_kvo_pair_new())
                cs_test_kvo_pair_remove(pair)
                cs_test_kvo_pair_remove_context(pair, 1)
                #expect(CrashShieldSDK.recordedCount(for: .kvo) == 2)
                cs_test_kvo_pair_free(pair)
            }
        }

        /// Two contexts on one key path. Apple keeps both: removal with a context removes that
        /// registration only. GNUstep replaces: context 3 is the registration,
        /// so removing context 1 is the misuse, reported and ignored.
        @Test func removalWithAContextRemovesThatRegistrationOnly() throws {
            try withGuards {
                let pair = try #require(cs_test_kvo_pair_new())
                cs_test_kvo_pair_add(pair, 1)
                cs_test_kvo_pair_add(pair, 3)
                #if canImport(Darwin)
                #expect(cs_test_kvo_pair_change(pair) == 101)
                cs_test_kvo_pair_remove_context(pair, 1)
                #expect(cs_test_kvo_pair_change(pair) == 1)
                #expect(CrashShieldSDK.recordedCount(for: .kvo) == 0)
                cs_test_kvo_pair_remove_context(pair, 1) // removed already: the misuse
                #else
                #expect(cs_test_kvo_pair_change(pair) == 1)
                cs_test_kvo_pair_remove_context(pair, 1) // replaced by context 3: the misuse
                #endif
                #expect(CrashShieldSDK.recordedCount(for: .kvo) == 1)
                #expect(cs_test_kvo_pair_change(pair) == 1, "the other context's registration was lost")
                cs_test_kvo_pair_remove_context(pair, 3)
                #expect(cs_test_kvo_pair_change(pair) == 0)
                #expect(CrashShieldSDK.recordedCount(for: .kvo) == 1)
                cs_test_kvo_pair_free(pair)
            }
        }

        /// Key-value observing on a class object. GCC libobjc gives the root
        /// metaclass GNUstep's KVO methods of its own, so these calls never reached the instance
        /// hooks: unguarded, the registration throws after breaking the class (its isa becomes an
        /// instance class) and a nil key path crashes. Guarded: reported and ignored, the class
        /// intact. A removal (none can exist) and a removal by context are reported as on instances.
        @Test(arguments: [
            ("kvo.class.addObserver", "addObserver:forKeyPath:options:context:",
             "registration on a class object (unsupported, breaks the class): ignored"),
            ("kvo.class.addObserver.nilKeyPath", "addObserver:forKeyPath:options:context:",
             "registration on a class object (unsupported, breaks the class): ignored"),
            ("kvo.class.removeObserver.neverAdded", "removeObserver:forKeyPath:",
             "removal of a registration that does not exist: ignored"),
        ])
        func registrationOnAClassObjectIsNeutralised(scenario: String, selector: String, reason: String) throws {
            try withGuards {
                let incidents = collectIncidents {
                    #expect(runScenario(scenario) == .neutral)
                }
                #expect(CrashShieldSDK.recordedCount(for: .kvo) == 1)
                let first = try #require(incidents.first { $0.guardID == .kvo })
                #expect(first.className == "CSLModel")
                #expect(first.selector == selector)
                #expect(first.isClassMethod)
                #expect(first.reason == reason)
            }
        }

        /// Unguarded, the class-object registration throws and leaves the class broken: the
        /// misuse the guard stops (in a child process: the class stays broken).
        @Test func registrationOnAClassObjectThrowsUnguarded() async {
            await #expect(processExitsWith: .success) {
                guard case .threw = runScenario("kvo.class.addObserver") else { exit(3) }
                exit(0)
            }
        }

        /// A removal by context sent to a class object reaches the method the guard adds to
        /// NSObject (the root metaclass inherits it): reported as a `+` method of the class.
        @Test func removalByContextFromAClassObjectIsReportedAsAClassMethod() throws {
            try withGuards {
                let incidents = collectIncidents {
                    cs_test_kvo_class_remove_context()
                }
                #expect(CrashShieldSDK.recordedCount(for: .kvo) == 1)
                let first = try #require(incidents.first { $0.guardID == .kvo })
                #expect(first.className == "CSLModel")
                #expect(first.selector == "removeObserver:forKeyPath:context:")
                #expect(first.isClassMethod)
            }
        }

        /// A one-shot observer removes itself in its initial-option notification (plainly, then by
        /// context): legal, and unguarded it gets exactly one notification. Guarded, the removal
        /// once drained a pool of its own inside the original -addObserver: still running, freeing
        /// what that original read next (SIGSEGV). In a child process: that crash.
        @Test func oneShotObserverRemovingItselfInItsInitialNotification() async {
            await #expect(processExitsWith: .success) {
                try CrashShieldSDK.start(.guardsOnly)
                guard cs_test_kvo_one_shot(true, false) == 1 else { exit(3) }
                guard cs_test_kvo_one_shot(true, true) == 1 else { exit(4) }
                guard CrashShieldSDK.recordedCount(for: .kvo) == 0 else { exit(5) }
                exit(0)
            }
        }

        /// The same one-shot removal in the initial notification of an add that replaces the
        /// observer's registration of the key path (GNUstep replaces; Apple keeps both, so the
        /// earlier registration notifies once more): the guard's replacing branch calls the
        /// original add with its tracked entry, and the removal inside it reached the same drain.
        @Test func oneShotObserverRemovingItselfInAReplacingAdd() async {
            await #expect(processExitsWith: .success) {
                try CrashShieldSDK.start(.guardsOnly)
                #if canImport(Darwin)
                guard cs_test_kvo_one_shot_replacing() == 2 else { exit(3) }
                #else
                guard cs_test_kvo_one_shot_replacing() == 1 else { exit(3) }
                #endif
                guard CrashShieldSDK.recordedCount(for: .kvo) == 0 else { exit(5) }
                exit(0)
            }
        }

        /// The same removal from a change notification, inside the original -setLevel:'s
        /// notification (plainly, then by context).
        @Test func oneShotObserverRemovingItselfInAChangeNotification() async {
            await #expect(processExitsWith: .success) {
                try CrashShieldSDK.start(.guardsOnly)
                guard cs_test_kvo_one_shot(false, false) == 1 else { exit(3) }
                guard cs_test_kvo_one_shot(false, true) == 1 else { exit(4) }
                guard CrashShieldSDK.recordedCount(for: .kvo) == 0 else { exit(5) }
                exit(0)
            }
        }

        /// The oracle: the same one-shot observers without CrashShield (GNUstep has no removal by
        /// context of its own, so only the plain removal).
        @Test func oneShotObserverUnguarded() async {
            await #expect(processExitsWith: .success) {
                guard cs_test_kvo_one_shot(true, false) == 1 else { exit(3) }
                guard cs_test_kvo_one_shot(false, false) == 1 else { exit(4) }
                #if !canImport(Darwin)
                guard cs_test_kvo_one_shot_replacing() == 1 else { exit(5) }
                #endif
                exit(0)
            }
        }

        /// A registration made before CrashShield started is removed by the app after it started.
        /// In a child process: this process installed the guards long ago.
        @Test func registrationMadeBeforeStartIsRemovedAfterStart() async {
            await #expect(processExitsWith: .success) {
                guard let pair = cs_test_kvo_pair_new() else { exit(2) }
                cs_test_kvo_pair_add(pair, 1)
                try CrashShieldSDK.start(.guardsOnly)
                guard cs_test_kvo_pair_change(pair) == 100 else { exit(3) }
                cs_test_kvo_pair_remove(pair)
                guard cs_test_kvo_pair_change(pair) == 0 else { exit(4) }
                guard CrashShieldSDK.recordedCount(for: .kvo) == 0 else { exit(5) }
                cs_test_kvo_pair_free(pair)
                exit(0)
            }
        }
    }
}
