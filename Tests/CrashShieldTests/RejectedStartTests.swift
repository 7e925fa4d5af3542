import CrashShieldTestDoubles
import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing
@testable import CrashShield
import _CrashShieldRuntime
import _CrashShieldScenarios

extension RuntimeTests {
    /// A second `start` is rejected and changes nothing (its sinks, Swift guard
    /// policies, zombie configuration and count-update interval never take effect).
    @Suite struct RejectedStart {
        @Test func rejectedStartChangesNoState() throws {
            var first = CrashShieldOptions()
            first.zombieClassPrefixes = ["CSLZombie"]
            first.countUpdateInterval = .seconds(3600)
            try withGuards(first) {
                try CrashShieldSDK.setPolicy(.off, for: .swiftAccess)
                try CrashShieldSDK.setPolicy(.reportOnly, for: .decoding)
                let policiesBefore = CrashShieldSDK.status.map { "\($0.id) \($0.policy)" }

                let rejectedSink = InMemoryIncidentSink(capacity: 100)
                var second = CrashShieldOptions()
                second.sinks = [rejectedSink]
                second.zombieClassPrefixes = []
                second.zombieDeniedClasses = ["CSLZombie"]
                second.countUpdateInterval = .zero
                let rejectedDirectory = NSTemporaryDirectory() + "crashshield-rejected-start-\(getpid())-\(UUID().uuidString)"
                second.capture = CaptureOptions(directory: rejectedDirectory)
                second.launchProtection = LaunchProtectionOptions()
                #expect(throws: CrashShieldError.alreadyStarted) { try CrashShieldSDK.start(second) }

                // Capture and launch protection: nothing installed, no directory created.
                #expect(!CrashCapture.isInstalled)
                #expect(CrashCapture.directory == nil)
                #expect(CrashShieldSDK.launchProtection == nil)
                #expect(!FileManager.default.fileExists(atPath: rejectedDirectory), "the rejected call created its directory")

                // Policies: the Swift guards keep what setPolicy set (not the rejected defaults).
                #expect(CrashShieldSDK.status.map { "\($0.id) \($0.policy)" } == policiesBefore)
                #expect(CrashShieldSDK.status.first { $0.id == .swiftAccess }?.policy == .off)
                #expect(CrashShieldSDK.status.first { $0.id == .decoding }?.policy == .reportOnly)

                // Sinks and interval: three repeats of one misuse reach a sink added the regular way
                // once (the first start's hour-long interval holds back the repeats) and never the
                // rejected call's sink.
                let incidents = try collectIncidents {
                    for _ in 0..<3 { #expect(runScenario("array.objectAtIndex.beyond") == .neutral) }
                }
                #expect(incidents.count == 1, "\(incidents.map(\.methodName))")
                #expect(CrashShieldSDK.recordedCount(for: .container) == 3)
                #expect(rejectedSink.incidents.isEmpty)

                // Zombies: the first start's configuration still keeps the fixture class.
                #expect(cs_lifecycle_free_victims(4) == 4)
                CrashShieldSDK.flushZombies()
                cs_lifecycle_unconfigure_zombies()
            }
        }

        /// The rejection is the same when the first start came from the C entry point.
        @Test func startAfterTheCEntryPointIsRejectedAndChangesNothing() throws {
            CrashShieldSDK._resetForTesting()
            defer { CrashShieldSDK._resetForTesting() }
            #expect(cs_guards_start(nil) == CS_START_OK)
            try CrashShieldSDK.setPolicy(.off, for: .swiftAccess)
            let rejectedSink = InMemoryIncidentSink(capacity: 100)
            var options = CrashShieldOptions()
            options.sinks = [rejectedSink]
            #expect(throws: CrashShieldError.alreadyStarted) { try CrashShieldSDK.start(options) }
            #expect(!CrashCapture.isInstalled, "the rejected call installed capture")
            #expect(!CrashShieldSDK.isEnabled)
            #expect(CrashShieldSDK.status.first { $0.id == .swiftAccess }?.policy == .off)
            _ = try collectIncidents { #expect(runScenario("array.objectAtIndex.beyond") == .neutral) }
            #expect(rejectedSink.incidents.isEmpty)
        }
    }

    /// `stop` undoes `start` for the guards: hooks removed (a misuse behaves as without
    /// CrashShield again), Swift-side guards back to `.neutralize`, the start's sinks removed;
    /// a second `start` works again.
    @Suite struct StopAndRestart {
        @Test func stopRestoresOriginalBehaviourAndStartWorksAgain() throws {
            CrashShieldSDK._resetForTesting()
            defer { CrashShieldSDK._resetForTesting() }
            let sink = InMemoryIncidentSink(capacity: 100)
            var options = CrashShieldOptions.guardsOnly
            options.sinks = [sink]
            options.policies[.swiftAccess] = .reportOnly
            try CrashShieldSDK.start(options)
            #expect(CrashShieldSDK.isEnabled)
            #expect(runScenario("array.objectAtIndex.beyond") == .neutral)

            CrashShieldSDK.stop()
            #expect(!CrashShieldSDK.isEnabled)
            #expect(CrashShieldSDK.lastRun == nil)
            let registryGuards = CrashShieldSDK.status.filter { $0.id != .swiftAccess && $0.id != .decoding }
            #expect(!registryGuards.isEmpty)
            #expect(registryGuards.allSatisfy { $0.state == .notInstalled }, "\(registryGuards.map { "\($0.id) \($0.state)" })")
            #expect(CrashShieldSDK.status.first { $0.id == .swiftAccess }?.policy == .neutralize)
            guard case .threw = runScenario("array.objectAtIndex.beyond") else {
                Issue.record("after stop the misuse was still neutralised")
                return
            }
            CrashShieldSDK.flushIncidents()
            let delivered = sink.incidents.count
            CrashShieldSDK.stop() // a second stop is a no-op

            try CrashShieldSDK.start(.guardsOnly)
            #expect(CrashShieldSDK.isEnabled)
            #expect(CrashShieldSDK.status.first { $0.id == .container }?.state == .active)
            #expect(runScenario("array.objectAtIndex.beyond") == .neutral)
            CrashShieldSDK.flushIncidents()
            #expect(sink.incidents.count == delivered, "the stopped start's sink still receives incidents")
        }

        /// Launch protection without capture (the timer method) through the one start: the first
        /// start is a first launch; a launch that never completed counts as a launch crash at the
        /// next start, which at threshold 1 runs safe mode and switches off `safeModeGuards`.
        @Test func launchProtectionWithoutCaptureAndSafeModeGuards() throws {
            CrashShieldSDK._resetForTesting()
            defer { CrashShieldSDK._resetForTesting() }
            let directory = NSTemporaryDirectory() + "crashshield-timer-start-\(getpid())-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var options = CrashShieldOptions.guardsOnly
            var launch = LaunchProtectionOptions()
            launch.threshold = 1
            launch.launchWindow = .seconds(600)
            launch.directoryWithoutCapture = directory
            options.launchProtection = launch
            options.safeModeGuards = [.kvo]

            try CrashShieldSDK.start(options)
            #expect(!CrashCapture.isInstalled)
            #expect(CrashShieldSDK.lastRun?.outcome == .firstLaunch)
            #expect(CrashShieldSDK.lastRun?.detection == .timer)
            #expect(FileManager.default.fileExists(atPath: "\(directory)/launch-state"))
            #expect(CrashShieldSDK.status.first { $0.id == .kvo }?.policy == .neutralize)

            // The process "dies" during launch: the next start is a new launch.
            CrashShieldSDK.stop()
            LaunchProtection.forgetLaunchForTesting(directory: directory)
            try CrashShieldSDK.start(options)
            let protection = try #require(CrashShieldSDK.launchProtection)
            defer { protection.endSafeMode(); protection.launchCompleted() }
            #expect(CrashShieldSDK.crashedLastRun)
            #expect(protection.repairsRun == ["safe-mode"])
            #expect(protection.isSafeMode)
            #expect(CrashShieldSDK.status.first { $0.id == .kvo }?.policy == .off)
            #expect(CrashShieldSDK.status.first { $0.id == .container }?.policy == .neutralize)
        }

        @Test func stopBeforeStartIsANoOp() {
            CrashShieldSDK._resetForTesting()
            CrashShieldSDK.stop()
            #expect(!CrashShieldSDK.isEnabled)
            #expect(CrashShieldSDK.launchProtection == nil)
            #expect(!CrashShieldSDK.crashedLastRun)
        }
    }
}
