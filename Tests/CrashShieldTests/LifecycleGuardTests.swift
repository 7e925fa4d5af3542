import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing
@testable import CrashShield
import _CrashShieldScenarios

/// One misuse scenario of a lifecycle guard and the exact incident it must produce.
struct LifecycleMisuse: Sendable, CustomStringConvertible {
    let scenario: String
    let guardID: GuardID
    let className: String
    let selector: String
    let reason: String
    var recorded: UInt64 = 1
    var description: String { scenario }
}

private let addSelector = "addObserver:forKeyPath:options:context:"
private let removeSelector = "removeObserver:forKeyPath:"
private let removeContextSelector = "removeObserver:forKeyPath:context:"
private let reportOnlyTimerReason =
    "repeating timer was the last owner of its target: kept it alive until the timer ended (report-only)"

let lifecycleMisuses: [LifecycleMisuse] = [
    .init(scenario: "kvo.addObserver.nilObserver", guardID: .kvo, className: "CSLModel", selector: addSelector,
          reason: "nil observer: registration ignored"),
    .init(scenario: "kvo.addObserver.nilKeyPath", guardID: .kvo, className: "CSLModel", selector: addSelector,
          reason: "nil or empty key path: registration ignored"),
    .init(scenario: "kvo.addObserver.emptyKeyPath", guardID: .kvo, className: "CSLModel", selector: addSelector,
          reason: "nil or empty key path: registration ignored"),
    .init(scenario: "kvo.addObserver.duplicate", guardID: .kvo, className: "CSLModel", selector: addSelector,
          reason: "identical registration added twice: blocked"),
    .init(scenario: "kvo.removeObserver.neverAdded", guardID: .kvo, className: "CSLModel", selector: removeSelector,
          reason: "removal of a registration that does not exist: ignored"),
    .init(scenario: "kvo.removeObserver.twice", guardID: .kvo, className: "CSLModel", selector: removeSelector,
          reason: "removal of a registration that does not exist: ignored"),
    .init(scenario: "kvo.removeObserverContext.wrongContext", guardID: .kvo, className: "CSLModel",
          selector: removeContextSelector,
          reason: "removal of a registration that does not exist (with this context): ignored"),
    .init(scenario: "kvo.removeObserverContext.neverAdded", guardID: .kvo, className: "CSLModel",
          selector: removeContextSelector,
          reason: "removal of a registration that does not exist (with this context): ignored"),
    .init(scenario: "kvo.observed.deallocObserved", guardID: .kvo, className: "CSLModel", selector: "dealloc",
          reason: "observed object deallocated while observed: registrations removed"),
    .init(scenario: "kvo.observer.deallocRegistered", guardID: .kvo, className: "CSLKVOObserver", selector: "dealloc",
          reason: "observer deallocated while registered for key-value observing: removed"),
    .init(scenario: "kvo.observer.noCallback", guardID: .kvo, className: "CSLLazyObserver",
          selector: "observeValueForKeyPath:ofObject:change:context:",
          reason: "observer does not implement observeValueForKeyPath: notification dropped"),
    .init(scenario: "notification.observer.deallocRegistered", guardID: .notification, className: "CSLObserver",
          selector: "dealloc", reason: "observer deallocated while registered for notifications: removed from the center"),
    .init(scenario: "notification.observer.deallocAfterPartialRemoval", guardID: .notification,
          className: "CSLObserver", selector: "dealloc",
          reason: "observer deallocated while registered for notifications: removed from the center"),
    .init(scenario: "zombie.message.object", guardID: .zombie, className: "CSLZombieVictim", selector: "name",
          reason: zombieReason),
    .init(scenario: "zombie.message.integer", guardID: .zombie, className: "CSLZombieVictim", selector: "count",
          reason: zombieReason),
    .init(scenario: "zombie.message.double", guardID: .zombie, className: "CSLZombieVictim", selector: "ratio",
          reason: zombieReason),
    .init(scenario: "zombie.message.struct", guardID: .zombie, className: "CSLZombieVictim", selector: "range",
          reason: zombieReason),
    .init(scenario: "zombie.release.overRelease", guardID: .zombie, className: "CSLZombieVictim", selector: "release",
          reason: zombieReason),
    .init(scenario: "timer.repeating.targetReleased", guardID: .timer, className: "NSTimer", selector: "cs_tick:",
          reason: "repeating timer fired after its target was deallocated: invalidated"),
]

private let zombieReason =
    "message sent to a deallocated instance (kept as a zombie); the stack is where it was deallocated"

let lifecycleOracleNames = [
    "KVO options, nested and dependent key paths, several observers",
    "NSNotificationCenter addObserver:selector:name:object:",
    "NSTimer repeating and one-shot",
]

extension RuntimeTests {
    @Suite struct LifecycleGuard {
        @Test func lifecycleGuardsAreActive() throws {
            try withGuards {
                for id in [GuardID.kvo, .notification, .timer, .zombie, .mainThread] {
                    let status = try #require(CrashShieldSDK.status.first { $0.id == id })
                    #expect(status.state == .active, "\(id): \(status.state)")
                    #expect(status.policy == .neutralize)
                }
            }
        }

        @Test(arguments: lifecycleMisuses)
        func misuseIsNeutralisedWithTheExactIncident(_ misuse: LifecycleMisuse) throws {
            try withGuards {
                let incidents = collectIncidents {
                    #expect(runScenario(misuse.scenario) == .neutral)
                }
                #expect(CrashShieldSDK.recordedCount(for: misuse.guardID) == misuse.recorded)
                let mine = incidents.filter { $0.guardID == misuse.guardID }
                let first = try #require(mine.first)
                #expect(first.className == misuse.className)
                #expect(first.selector == misuse.selector)
                #expect(!first.isClassMethod)
                #expect(first.reason == misuse.reason)
                #expect(first.policy == .neutralize)
                if misuse.guardID == .zombie {
                    // The stack is the deallocation stack, captured when the object was released.
                    #expect(!first.frames.isEmpty)
                }
            }
        }

        @Test func zombiesAreOptInAndHonourTheDenyList() throws {
            try withGuards {
                #expect(cs_lifecycle_free_victims(10) == 0)
            }
            var options = CrashShieldOptions()
            options.zombieClassPrefixes = ["CSLZombie"]
            options.zombieDeniedClasses = ["CSLZombieV"]
            try withGuards(options) {
                #expect(cs_lifecycle_free_victims(10) == 0)
            }
            options.zombieDeniedClasses = []
            try withGuards(options) {
                #expect(cs_lifecycle_free_victims(10) == 10)
                #expect(CrashShieldSDK.zombieUsage.count == 10)
                CrashShieldSDK.flushZombies()
                #expect(CrashShieldSDK.zombieUsage == (0, 0))
                cs_lifecycle_unconfigure_zombies()
            }
        }

        /// Hundreds of thousands of zombie-class objects: the accounted zombie memory never goes
        /// above the byte budget, the count never above its cap, and the newest zombie still answers.
        @Test func zombieMemoryStaysWithinTheBudgetUnderChurn() throws {
            try withGuards {
                let budget = 64 * 1024
                var countAfter = 0
                let peak = cs_lifecycle_zombie_churn(300_000, budget, 100_000, &countAfter)
                #expect(peak > 0)
                #expect(peak <= budget)
                #expect(countAfter > 0)
                #expect(CrashShieldSDK.zombieUsage.bytes <= budget)
                let countCapped = cs_lifecycle_zombie_churn(50_000, 0, 100, &countAfter)
                #expect(countAfter == 100)
                #expect(countCapped <= 2 * 1024 * 1024)
                #expect(cs_lifecycle_message_latest_zombie())
                #expect(CrashShieldSDK.recordedCount(for: .zombie) == 1)
                cs_lifecycle_unconfigure_zombies()
                #expect(CrashShieldSDK.zombieUsage.count == 0)
                #expect(CrashShieldSDK.zombieUsage.bytes == 0)
            }
        }

        @Test func reportOnlyRecordsKVOMisuseAndLetsTheOriginalRun() throws {
            var options = CrashShieldOptions()
            options.policies[.kvo] = .reportOnly
            try withGuards(options) {
                // GNUstep ignores a removal of an unknown registration: report-only changes nothing else.
                #expect(runScenario("kvo.removeObserver.neverAdded") == .neutral)
                #expect(CrashShieldSDK.recordedCount(for: .kvo) == 1)
            }
        }

        /// Report-only timers keep the unguarded behaviour (the timer retains its target) and say
        /// once per timer that the timer was all that kept the target alive: when the timer lets
        /// the target go (invalidated or freed), its release is the one that deallocates it.
        @Test func reportOnlyTimerKeepsItsTargetAndReportsOnce() throws {
            var options = CrashShieldOptions()
            options.policies[.timer] = .reportOnly
            try withGuards(options) {
                let incidents = collectIncidents {
                    #expect(runScenario("timer.repeating.targetReleased") == .otherValue, "the target was freed")
                }
                #expect(CrashShieldSDK.recordedCount(for: .timer) == 1)
                let timer = incidents.filter { $0.guardID == .timer }
                #expect(timer.count == 1)
                let first = try #require(timer.first)
                #expect(first.policy == .reportOnly)
                #expect(first.reason == reportOnlyTimerReason)
                #expect(first.className == "NSTimer")
                #expect(first.selector == "cs_tick:")
            }
            // Every constructor: the released target stays alive (as unguarded) and is reported once,
            // when its timer is invalidated; a target of a class not named is neither.
            options.timerWeakTargetClasses = ["CSLScreen"]
            for initWithFireDate in [false, true] {
                try withGuards(options) {
                    let incidents = collectIncidents {
                        #expect(cs_lifecycle_timer_keeps_released_target(true, initWithFireDate))
                        #expect(cs_lifecycle_timer_keeps_released_target(false, initWithFireDate))
                    }
                    #expect(incidents.filter { $0.guardID == .timer }.map(\.reason) == [reportOnlyTimerReason],
                            "initWithFireDate: \(initWithFireDate)")
                    #expect(CrashShieldSDK.recordedCount(for: .timer) == 1)
                }
            }
        }

        /// Report-only with every ticker's timer watched (CSLTicker named): the timer oracle's legal
        /// uses give exactly the unguarded text, and only the three pollers whose timer was their
        /// last owner are reported, never a ticker that its owner still held when its timer stopped
        /// (the first two timers of the oracle). The proxy must not outlive the timer's reference
        /// either (no pool keeps it), or the pollers would not deallocate when they stop.
        @Test func reportOnlyTimerReportsOnlyWhenTheTimerWasTheLastOwner() throws {
            let name = "NSTimer repeating and one-shot"
            CrashShieldSDK._resetForTesting()
            let unguarded = try #require(runOracles(named: [name])[name])
            var options = CrashShieldOptions()
            options.policies[.timer] = .reportOnly
            options.timerWeakTargetClasses = ["CSLTicker"]
            try withGuards(options) {
                var guarded: String?
                let incidents = collectIncidents { guarded = runOracles(named: [name])[name] }
                #expect(guarded == unguarded)
                // The pollers' incidents share one fingerprint (delivered once, then counted):
                // the exact number is the recorded count.
                let timer = incidents.filter { $0.guardID == .timer }
                #expect(!timer.isEmpty)
                for incident in timer {
                    #expect(incident.reason == reportOnlyTimerReason)
                    #expect(incident.policy == .reportOnly)
                    #expect(incident.className == "NSTimer")
                    #expect(incident.selector == "cs_tick:")
                }
                #expect(CrashShieldSDK.recordedCount(for: .timer) == 3)
            }
        }

        /// Only targets of the classes the app names (subclasses included)
        /// are held weakly; every other repeating timer keeps its target alive, as unguarded.
        @Test(arguments: [false, true])
        func timersHoldOnlyNamedClassesWeakly(initWithFireDate: Bool) throws {
            let keeps = { (screen: Bool) in cs_lifecycle_timer_keeps_released_target(screen, initWithFireDate) }
            #expect(CrashShieldOptions().timerWeakTargetClasses == CrashShieldOptions.defaultTimerWeakTargetClasses)
            #if !canImport(Darwin)
            #expect(CrashShieldOptions.defaultTimerWeakTargetClasses.isEmpty)
            #endif
            try withGuards {
                #expect(keeps(true), "no class is named by default here")
                #expect(keeps(false))
                #expect(CrashShieldSDK.recordedCount(for: .timer) == 0)
            }
            var options = CrashShieldOptions()
            options.timerWeakTargetClasses = ["CSLScreen", "NoSuchClassAnywhere"]
            try withGuards(options) {
                let incidents = collectIncidents {
                    #expect(!keeps(true), "a named class is held weakly")
                    #expect(keeps(false), "its superclass is not named")
                }
                #expect(CrashShieldSDK.recordedCount(for: .timer) == 1)
                #expect(incidents.filter { $0.guardID == .timer }.map(\.reason)
                    == ["repeating timer fired after its target was deallocated: invalidated"])
            }
            options.timerWeakTargetClasses = ["CSLTicker"]
            try withGuards(options) {
                #expect(!keeps(true), "subclasses of a named class too")
                #expect(!keeps(false))
                #expect(CrashShieldSDK.recordedCount(for: .timer) == 2)
            }
        }

        @Test func legalLifecycleBehaviourIsIdenticalWithAndWithoutGuards() throws {
            CrashShieldSDK._resetForTesting()
            let unguarded = runOracles()
            let guarded = try withGuards { runOracles() }
            for name in lifecycleOracleNames {
                let before = try #require(unguarded[name], "missing oracle \(name)")
                #expect(!before.hasPrefix("exception:"), "\(name): \(before)")
                #expect(guarded[name] == before, "\(name)")
            }
            // The oracles really exercised the behaviour (equal empty text would prove nothing).
            let timers = try #require(guarded["NSTimer repeating and one-shot"])
            #expect(timers.contains("tick 3 arg=timer userInfo=info;  valid=0"), "\(timers)")
            #expect(timers.contains("manual repeating tick 1 arg=timer userInfo=manual; tick 2 arg=timer userInfo=manual;  valid=0"), "\(timers)")
            #expect(timers.contains("forwarder ticks=2") && timers.contains("proxy ticks=2"), "\(timers)")
            // A one-shot timer keeps its target alive after the oracle gave its own reference up.
            #expect(timers.contains("one-shot retained=1 tick 1 arg=timer userInfo=once;  |"), "\(timers)")
            // A repeating timer that is its target's only owner fires until the target stops it,
            // whatever constructor made it; default options name no class here.
            for form in ["scheduled", "timerWith", "initWithFireDate"] {
                #expect(timers.contains("sole-owner poller (\(form)) ticks=3 dealloced=1"), "\(timers)")
            }
            let notes = try #require(guarded["NSNotificationCenter addObserver:selector:name:object:"])
            #expect(notes.hasSuffix("after removing four/sender 10; after removing four/nil 10; after removing nil/sender 10; after dealloc 10"), "\(notes)")
            let kvo = try #require(guarded["KVO options, nested and dependent key paths, several observers"])
            #expect(kvo.contains("hits a="), "\(kvo)")
            // Same observer, key path, two contexts: each platform's own result.
            #if canImport(Darwin)
            #expect(kvo.contains("two contexts: b{[count ctx=7 new=9] [count ctx=8 new=9 old=8] [count ctx=8 new=10 old=9] }"), "\(kvo)")
            #else
            #expect(kvo.contains("two contexts: b{[count ctx=8 kind=1 new=9 old=8] }"), "\(kvo)")
            #endif
        }

        @Test func guardedLegalUseRecordsNothing() throws {
            try withGuards {
                _ = runOracles()
                for id in [GuardID.kvo, .notification, .timer, .zombie, .mainThread] {
                    #expect(CrashShieldSDK.recordedCount(for: id) == 0, "\(id)")
                }
            }
        }

        @Test func concurrentAddRemovePostAndDeallocStayConsistent() throws {
            try withGuards {
                cs_lifecycle_configure_main_thread_fixture()
                let fixture = try #require(cs_lifecycle_mainthread_fixture_new())
                defer { cs_lifecycle_mainthread_fixture_free(fixture) }
                let (threads, iterations): (UInt32, UInt32) = (8, 400)
                #expect(cs_lifecycle_stress(threads, iterations, fixture) == 0)
                // Observers died registered (KVO and notifications) and timer targets were released.
                #expect(CrashShieldSDK.recordedCount(for: .kvo) > 0)
                #expect(CrashShieldSDK.recordedCount(for: .notification) > 0)
                #expect(CrashShieldSDK.recordedCount(for: .timer) > 0)
                // One zombie message and one main-thread call per iteration: none lost.
                let calls = Int(threads * iterations)
                #expect(CrashShieldSDK.recordedCount(for: .zombie) == UInt64(calls))
                #expect(CrashShieldSDK.recordedCount(for: .mainThread) == UInt64(calls))
                // The process's main thread drains the main queue; every re-dispatched call arrives there.
                for _ in 0..<1_000 where cs_lifecycle_mainthread_state(fixture).calls < calls {
                    usleep(10_000)
                }
                let state = cs_lifecycle_mainthread_state(fixture)
                #expect(state.calls == Int32(calls))
                #expect(state.main_calls == state.calls)
            }
        }

        /// A callback that ends its own registration and deallocates
        /// while the original that called it (the center's post, the timer's fire) is still on
        /// the stack, legal without guards, works guarded (each in a child process; the KVO
        /// members are the one-shot observer tests).
        @Test(arguments: [false, true])
        func callbacksEndingTheirOwnRegistrationInsideTheOriginal(_ guarded: Bool) async {
            await #expect(processExitsWith: .success) { [guarded] in
                if guarded { guard (try? CrashShieldSDK.start(.guardsOnly)) != nil else { exit(3) } }
                guard cs_lifecycle_observer_ends_itself_in_post() == 1 else { exit(4) }
                guard cs_lifecycle_timer_owner_ends_itself_in_fire() == 1 else { exit(5) }
                exit(guarded && CrashShieldSDK.statistics.recorded != 0 ? 6 : 0)
            }
        }

        /// `stop()` (cs_guards_uninstall) leaves what the lifecycle guards
        /// touched working as without them. KVO: a registration made while guarded is removed by
        /// the app's removal after the stop, with or without its context (before: the removal was
        /// ignored and the process died with exit status 1 after the observer was freed).
        @Test(arguments: [false, true])
        func aKVORegistrationMadeWhileGuardedIsRemovableAfterStop(_ byContext: Bool) async {
            await #expect(processExitsWith: .success) { [byContext] in
                guard (try? CrashShieldSDK.start(.guardsOnly)) != nil else { exit(3) }
                let after = cs_test_kvo_across_stop(byContext)
                exit(after == 0 ? 0 : (after < 0 ? 5 : 4))
            }
        }

        /// Zombies kept when the guards stop stay zombies: a stale pointer the app still holds
        /// answers nil/0 after the stop (before: stop freed them, count 0: exit 4).
        @Test func aZombieKeptAtStopStaysHarmless() async {
            await #expect(processExitsWith: .success) {
                guard (try? CrashShieldSDK.start(.guardsOnly)) != nil else { exit(3) }
                exit(cs_lifecycle_zombie_across_stop() ? 0 : 4)
            }
        }

        /// Legal oracles across a stop: a notification observer registered while guarded still
        /// gets posts and its removal ends them; a timer scheduled while guarded fires and stops
        /// on -invalidate.
        @Test func notificationObserversAndTimersWorkAcrossStop() async {
            await #expect(processExitsWith: .success) {
                guard (try? CrashShieldSDK.start(.guardsOnly)) != nil else { exit(3) }
                guard cs_lifecycle_notification_across_stop() == 0 else { exit(4) }
                guard (try? CrashShieldSDK.start(.guardsOnly)) != nil else { exit(5) }
                exit(cs_lifecycle_timer_across_stop() == 0 ? 0 : 6)
            }
        }

        /// The same scenarios without any guard (the oracle of the three above; GNUstep 1.28 has
        /// no -removeObserver:forKeyPath:context: of its own, the guard adds it for good).
        @Test func theAcrossStopScenariosUnguarded() async {
            await #expect(processExitsWith: .success) {
                guard cs_test_kvo_across_stop(false) == 0 else { exit(4) }
                guard cs_lifecycle_notification_across_stop() == 0 else { exit(5) }
                exit(cs_lifecycle_timer_across_stop() == 0 ? 0 : 6)
            }
        }

        /// The dealloc hook and its callbacks never autorelease (a drain would never end): every
        /// lifecycle path runs with no pool in place and GNUstep must not complain on stderr.
        @Test func deallocPathsCreateNoAutoreleasedObjects() async {
            await #expect(processExitsWith: .success) {
                try CrashShieldSDK.start(.guardsOnly)
                let path = FileManager.default.temporaryDirectory.appendingPathComponent("cs-nopool-\(getpid()).txt").path
                let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
                guard fd >= 0, dup2(fd, 2) == 2 else { exit(3) }
                cs_lifecycle_dealloc_paths_without_pool()
                fflush(nil)
                let log = (try? String(contentsOfFile: path, encoding: .utf8)) ?? "unreadable"
                unlink(path)
                guard !log.contains("without pool") else { exit(4) }
                let recorded = CrashShieldSDK.recordedCount(for: .kvo) + CrashShieldSDK.recordedCount(for: .notification)
                exit(recorded == 2 ? 0 : 5)
            }
        }

        /// The main dispatch queue is drained by the test process's main thread (Swift's async
        /// main), so the re-dispatched call runs there while this test waits off the main thread.
        @Test func backgroundCallOfAMainThreadOnlyMethodRunsOnTheMainQueue() async throws {
            CrashShieldSDK._resetForTesting()
            try CrashShieldSDK.start(.guardsOnly)
            defer { CrashShieldSDK._resetForTesting() }
            cs_lifecycle_configure_main_thread_fixture()
            let fixture = try #require(cs_lifecycle_mainthread_fixture_new())
            defer { cs_lifecycle_mainthread_fixture_free(fixture) }
            let status = try #require(CrashShieldSDK.status.first { $0.id == .mainThread })
            #expect(status.hookedMethods == 2)

            cs_lifecycle_mainthread_call_from_background(fixture, true)
            cs_lifecycle_mainthread_call_from_background(fixture, false)
            for _ in 0..<500 where cs_lifecycle_mainthread_state(fixture).calls < 2 {
                try await Task.sleep(for: .milliseconds(10))
            }
            let state = cs_lifecycle_mainthread_state(fixture)
            #expect(state.calls == 2)
            #expect(state.main_calls == 2)
            #expect(CrashShieldSDK.recordedCount(for: .mainThread) == 2)
        }

        /// An Objective-C program that calls `cs_guards_start(NULL)` first in
        /// `main()` (no Swift code, no libdispatch) gets an active main-thread guard, and a call
        /// from another thread runs once on the main thread when the main run loop runs
        /// (`Tests/Probes/plain-objc-app/main.m` checks each step and exits with its number).
        @Test func plainObjectiveCProgramGetsAWorkingMainThreadGuard() throws {
            let (status, output) = try runSiblingExecutable("plain-objc-app")
            #expect(status == 0, "\(output)")
            #expect(output.contains("step 2 main-thread guard active"), "\(output)")
            #expect(output.hasSuffix("OK\n"), "\(output)")
        }

        /// On the main thread the configured call runs at once, unchanged, without an incident.
        @Test func mainThreadCallIsUntouched() async {
            await #expect(processExitsWith: .success) {
                try CrashShieldSDK.start(.guardsOnly)
                cs_lifecycle_configure_main_thread_fixture()
                let code: Int32 = await MainActor.run {
                    guard cs_scenarios_is_main_thread() else { return 3 }
                    let fixture = cs_lifecycle_mainthread_fixture_new()!
                    cs_lifecycle_mainthread_call_here(fixture)
                    let state = cs_lifecycle_mainthread_state(fixture)
                    return state.calls == 1 && state.main_calls == 1 && state.last_argument == 5 ? 0 : 4
                }
                guard code == 0 else { exit(code) }
                exit(CrashShieldSDK.recordedCount(for: .mainThread) == 0 ? 0 : 5)
            }
        }
    }
}
