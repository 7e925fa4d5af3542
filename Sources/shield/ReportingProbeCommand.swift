import CrashShieldProtocol
import CrashShield
import CrashShieldRecording
import CrashShieldSentry
import Foundation
import _CrashShieldScenarios
import _CrashShieldTestSupport
import CrashShieldBase

/// `shield reporting-probe --dir D [--dsn DSN] [...]`: the test child of reporting as part of the
/// one start. Starts CrashShield (guards, capture, launch protection, and reporting when `--dsn`
/// is given; `--no-capture`: capture off, the directory is launch protection's; `--capture-only`: `CrashCapture.start(_:launchProtection:reporting:)` instead), prints
/// `{"start_ns": <the start's duration>, "last_run": "<outcome>", "remote_config_version": <the
/// activated document's version or null>, "swift_policy": "<the Swift access guard's policy>"}`, then:
/// - `--crash-during-launch`: crashes (SIGSEGV) while the launch is still in progress;
/// - `--incident`: one misuse of the Swift access guard after start, delivered and handed to
///   reporting before going on;
/// - `--stop`: `stop()` (prints `STOPPED remote-fetch=<finished|running|none>`: the
///   remote-configuration fetch right after it), then another misuse that must not be reported;
/// then returns normally (a clean exit: `exit` sends the session's end).
/// - `--scenario NAME`: runs that Objective-C misuse scenario (a `shield demo` name) under the
///   guards, prints `SCENARIO <name> guard=<guard> outcome=<returned|threw|other>`, and waits until
///   its incident was delivered and handed to reporting;
/// - `--complete-launch`: `launchCompleted()` (prints `LAUNCH-COMPLETED repairs=<steps run at this
///   start, comma-separated>`); `--crash-after-launch`: the same, then a SIGSEGV in `csc_crash_segv`;
/// `--release R`: `ReportingOptions.release` (default `probe@1.0`).
/// `--threshold N` and `--probe-step`: launch protection's threshold and a repair step that prints
/// `REPAIR pending=<envelopes in D/outbox>` when it runs (0: the server accepted everything
/// before the step ran).
/// `--default-capture`: `options.capture` is left unassigned (its directory, name and version are
/// changed in place), so a remote configuration rule's `capture` may switch it; then prints
/// `CAPTURE installed=<true|false> sigsegv=<default|handled>` (the SIGSEGV disposition) after the
/// start line. `--reset-remote-config-step`: `RepairStep.resetRemoteConfiguration()` is launch
/// protection's first repair step.
/// `--hold-requests-ms N`: every request of the reporting transport first waits N ms (ended at
/// once by the transport's cancellation), then goes to the server: a send pass that is still
/// running when the exit flush gives up. `--watch-exit-teardown-ms N`: an exit handler that runs
/// after reporting's own (it is registered before the start) lists the outbox, waits N ms (the
/// rest of a slow exit), lists it again and prints `TEARDOWN outbox-unchanged=<true|false>
/// transport-calls=<requests begun or ended by the transport's HTTP client meanwhile>
/// pending=<envelopes> remote-fetch=<finished|running|none> openssl=<alive|stopped|absent>` (the
/// remote-configuration fetch as the handler began; whether OpenSSL, which URLSession uses on
/// Linux, still works there or was cleaned up by an exit handler that ran before reporting's): a
/// send pass or a fetch that goes on into the exit, or an exit flush left without OpenSSL, shows.
/// `--standalone-remote-config DSN`: before the start, `RemoteConfiguration.activate` with that
/// DSN and the directory (the public path without reporting: its own background fetch and exit
/// handler, registered after the teardown watch's, so the watch sees what it left).
/// `--capture-handled`: after the start, sets the user "user-42" and the tag checkout_flow=v2,
/// sends `capture(error: ProbeError.declined(code: 7))` and `capture(message: "probe message",
/// level: .warning)` from `HandledEvents.send`, then `flush(timeout: 10 s)`; prints `CAPTURED
/// <error event id> <message event id> FLUSH <true|false>`.
/// `--fork-child-exits`: after the start (and `--incident`), forks a child that calls `exit(0)`
/// at once (so the exit handlers run in the child), waits for it and prints
/// `FORK child=<exit status, or signal N>`, then goes on.
/// `--uncaught-scenario`: `--scenario` runs with no try/catch around it, so an exception the
/// guards let through ends the process as in an app (the next start reports the crash); it prints
/// `SCENARIO <name> guard=<guard> outcome=returned` only when the scenario returns.
/// `--guards-off`: `CrashShieldOptions.defaultPolicy` is `.off` (an app running without guards),
/// so a remote configuration rule's guard policy is what switches a guard on.
/// `--crash-in-sink`: an incident sink that crashes (SIGSEGV), and 200 ms after the start (the
/// delivery thread made after it) one misuse: the process dies in the sink, on the delivery thread.
/// `--stay-ms N`: live N ms more before exiting (past the app-hang watchdog's first tick, which
/// writes this run's record: the next start then reads it, as every launch but an app's first does).
/// `--app-classes N`: before the start, N empty NSObject subclasses registered (an app's own classes;
/// the start's first lookups by name and first walks meet them).
/// `--objc-used-before`: before the start, one autorelease pool and one message to NSObject, so
/// the runtime's once-per-process initialisation is not part of the measured start (an app has
/// used Objective-C by the time it starts the SDK: on Apple before `main`).
enum ReportingProbeCommand {
    struct Arguments {
        var directory: String
        var dsn: String?
        var captureOnly = false
        var crashDuringLaunch = false
        var incident = false
        var stop = false
        var threshold: Int?
        var probeStep = false
        var launchFlushTimeout: Double?
        var exitFlushTimeout: Double?
        var remoteConfigPublicKey: String?
        var noCapture = false
        var waitForRemoteConfig = false
        var defaultCapture = false
        var resetRemoteConfigStep = false
        var release: String?
        var scenario: String?
        var completeLaunch = false
        var crashAfterLaunch = false
        var holdRequestsMilliseconds: Int?
        var watchExitTeardownMilliseconds: Int?
        var forkChildExits = false
        var standaloneRemoteConfigDSN: String?
        var captureHandled = false
        var objcUsedBefore = false
        var uncaughtScenario = false
        var guardsOff = false
        var stayMilliseconds: Int?
        var crashInSink = false
        var appClasses = 0
    }

    static func run(_ arguments: Arguments) -> Int32 {
        if let hold = arguments.holdRequestsMilliseconds {
            ReportingClient.setHTTPClientForTesting { HoldingHTTPClient(hold: .milliseconds(hold)) }
        }
        if let watch = arguments.watchExitTeardownMilliseconds {
            ExitTeardownWatch.install(directory: arguments.directory + "/outbox", duration: .milliseconds(watch))
        }
        if let dsnText = arguments.standaloneRemoteConfigDSN {
            // After the teardown watch: its exit handler runs after the fetch's.
            do {
                RemoteConfiguration.activate(RemoteConfigOptions(dsn: try DSN(dsnText), directory: arguments.directory))
            } catch {
                FileHandle.standardError.write(Data("reporting-probe: \(error)\n".utf8))
                return 2
            }
        }
        var reporting: ReportingOptions?
        if let dsn = arguments.dsn {
            do {
                var options = try ReportingOptions(dsn: dsn, release: arguments.release ?? "probe@1.0")
                if let seconds = arguments.launchFlushTimeout { options.launchCrashFlushTimeout = .milliseconds(Int(seconds * 1000)) }
                if let seconds = arguments.exitFlushTimeout { options.exitFlushTimeout = .milliseconds(Int(seconds * 1000)) }
                if let key = arguments.remoteConfigPublicKey { options.remoteConfigPublicKey = try RemoteConfigPublicKey(base64: key) }
                reporting = options
            } catch {
                FileHandle.standardError.write(Data("reporting-probe: \(error)\n".utf8))
                return 2
            }
        }
        var capture = CaptureOptions(directory: arguments.directory)
        capture.appName = "reporting-probe"
        capture.appVersion = "1.0"
        var launch = LaunchProtectionOptions()
        if let threshold = arguments.threshold { launch.threshold = threshold }
        if arguments.probeStep {
            let outbox = arguments.directory + "/outbox"
            launch.repairSteps = [.run(id: "probe-step") { _ in
                let pending = ((try? FileManager.default.contentsOfDirectory(atPath: outbox)) ?? []).filter { $0.hasSuffix(".envelope") }
                print("REPAIR pending=\(pending.count)")
                fflush(nil)
            }]
        }
        if arguments.resetRemoteConfigStep { launch.repairSteps.insert(.resetRemoteConfiguration(), at: 0) }

        if arguments.objcUsedBefore { cs_scope_use_objc_runtime() }
        if arguments.appClasses > 0 { _ = cs_scope_make_filler_classes(arguments.appClasses) }
        let clock = ContinuousClock()
        let began = clock.now
        let lastRun: LastRun?
        do {
            if arguments.captureOnly {
                try CrashCapture.start(capture, launchProtection: launch, reporting: reporting)
                lastRun = CrashCapture.lastRun
            } else {
                var options = CrashShieldOptions()
                if arguments.defaultCapture {
                    options.capture?.directory = capture.directory
                    options.capture?.appName = capture.appName
                    options.capture?.appVersion = capture.appVersion
                } else {
                    options.capture = arguments.noCapture ? nil : capture
                }
                launch.directoryWithoutCapture = arguments.directory
                options.launchProtection = launch
                options.reporting = reporting
                if arguments.guardsOff { options.defaultPolicy = .off }
                if arguments.crashInSink { options.sinks.append(ClosureIncidentSink { _ in csc_crash_segv() }) }
                try CrashShieldSDK.start(options)
                lastRun = CrashShieldSDK.lastRun
            }
        } catch {
            FileHandle.standardError.write(Data("reporting-probe: start failed: \(error)\n".utf8))
            return 1
        }
        let elapsed = clock.now - began
        let nanoseconds = elapsed.nanoseconds
        let version = RemoteConfiguration.current?.version.map(String.init) ?? "null"
        let swiftPolicy = arguments.captureOnly ? "null" : CrashShieldSDK.status.first { $0.id == .swiftAccess }.map { "\"\($0.policy)\"" } ?? "null"
        // In the order the start took them: [name, nanoseconds] pairs.
        let steps = arguments.captureOnly ? "" : CrashShieldSDK._lastStartSteps.map { step in
            return "[\"\(step.step)\", \(step.duration.nanoseconds)]"
        }.joined(separator: ", ")
        print("{\"start_ns\": \(nanoseconds), \"steps\": [\(steps)], \"last_run\": \"\(lastRun?.outcome.rawValue ?? "none")\", \"remote_config_version\": \(version), \"swift_policy\": \(swiftPolicy)}")
        if arguments.defaultCapture {
            print("CAPTURE installed=\(CrashCapture.isInstalled) sigsegv=\(sigsegvIsDefault() ? "default" : "handled")")
        }
        fflush(nil)

        if arguments.crashDuringLaunch { csc_crash_segv() }
        if arguments.waitForRemoteConfig {
            // The fetch runs in the background; a process that exits at once may end before its
            // request reaches the server.
            let outcome = RemoteConfiguration.current?.waitForBackgroundFetch(timeout: .seconds(10))
            print("REMOTE-CONFIG fetch=\(outcome.map { "\($0)" } ?? "unfinished")")
            fflush(nil)
        }
        if arguments.completeLaunch || arguments.crashAfterLaunch {
            let protection = arguments.captureOnly ? CrashCapture.launchProtection : CrashShieldSDK.launchProtection
            protection?.launchCompleted()
            print("LAUNCH-COMPLETED repairs=\(protection?.repairsRun.joined(separator: ",") ?? "")")
            fflush(nil)
            if arguments.crashAfterLaunch { csc_crash_segv() }
        }
        if arguments.incident { misuseAndHandOver() }
        if arguments.captureHandled { HandledEvents.send() }
        if arguments.forkChildExits {
            let child = fork()
            if child == 0 { exit(0) }
            var status: Int32 = 0
            _ = waitpid(child, &status, 0)
            let signal = status & 0x7f
            print("FORK child=\(signal == 0 ? "\((status >> 8) & 0xff)" : "signal \(signal)")")
            fflush(nil)
        }
        if let name = arguments.scenario {
            guard let index = ScenarioChild.index(of: name) else {
                FileHandle.standardError.write(Data("reporting-probe: unknown scenario \(name)\n".utf8))
                return 2
            }
            if arguments.uncaughtScenario {
                _ = cs_scenario_run_uncaught(index)
                print("SCENARIO \(name) guard=\(String(cString: cs_scenario_at(index).pointee.guard_name)) outcome=returned")
                fflush(nil)
                CrashShieldSDK.flushIncidents(timeout: .seconds(5))
                _ = ReportingClient.current?.waitUntilIdle(timeout: .seconds(5))
                return 0
            }
            var exceptionName = [CChar](repeating: 0, count: 128)
            let outcome = cs_scenario_run(index, &exceptionName, exceptionName.count)
            let text = outcome == CS_SCENARIO_RETURNED_NEUTRAL ? "returned" : outcome == CS_SCENARIO_THREW ? "threw" : "other"
            print("SCENARIO \(name) guard=\(String(cString: cs_scenario_at(index).pointee.guard_name)) outcome=\(text)")
            fflush(nil)
            CrashShieldSDK.flushIncidents(timeout: .seconds(5))
            _ = ReportingClient.current?.waitUntilIdle(timeout: .seconds(5))
        }
        if arguments.stop {
            if arguments.captureOnly { CrashCapture.stop() } else { CrashShieldSDK.stop() }
            print("STOPPED remote-fetch=\(ExitTeardownWatch.remoteFetchState())")
            fflush(nil)
            if !arguments.captureOnly { misuseAndHandOver() }
        }
        if arguments.crashInSink {
            // Past the watchdog's first tick, which creates the delivery thread; then a misuse
            // whose delivery crashes in the sink.
            usleep(200_000)
            let values = [1, 2, 3]
            _ = values[shielded: 7]
            CrashShieldSDK.flushIncidents(timeout: .seconds(5))
            print("SINK-DID-NOT-CRASH")
            return 1
        }
        if let stay = arguments.stayMilliseconds { usleep(useconds_t(max(0, stay)) * 1000) }
        return 0
    }

    /// True when SIGSEGV has the default disposition (no handler installed: a crash ends the
    /// process without a report).
    private static func sigsegvIsDefault() -> Bool {
        var action = sigaction()
        guard sigaction(SIGSEGV, nil, &action) == 0 else { return false }
        #if canImport(Darwin)
        return action.__sigaction_u.__sa_handler == nil
        #else
        return action.__sigaction_handler.sa_handler == nil
        #endif
    }

    /// One out-of-bounds read through the Swift access guard; waits until the incident was
    /// delivered and reporting handled it.
    private static func misuseAndHandOver() {
        let values = [1, 2, 3]
        let index = Int(ProcessInfo.processInfo.environment["PROBE_INDEX"] ?? "7") ?? 7
        _ = values[shielded: index]
        CrashShieldSDK.flushIncidents(timeout: .seconds(5))
        _ = ReportingClient.current?.waitUntilIdle(timeout: .seconds(5))
    }
}

/// Counts the calls of the transport's HTTP client that begin or end (`HoldingHTTPClient`).
private let transportCalls = ProbeCounter()

final class ProbeCounter: Sendable {
    private let count = Locked(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

/// `--hold-requests-ms`: waits `hold` before each request (or until `cancelAll`, which ends the
/// wait with `cancelled`), then posts through URLSession.
// @unchecked Sendable: `cancelled` is read and written only under `condition`; the rest is immutable
final class HoldingHTTPClient: EnvelopeHTTPClient, @unchecked Sendable {
    private let hold: Duration
    private let forward = URLSessionEnvelopeClient()
    private let condition = NSCondition()
    private var cancelled = false

    init(hold: Duration) { self.hold = hold }

    func post(_ url: URL, headers: [String: String], body: Data, timeout: Duration) throws(TransportError) -> HTTPResponse {
        transportCalls.increment()
        defer { transportCalls.increment() }
        let seconds = hold.seconds
        let until = Date().addingTimeInterval(seconds)
        condition.lock()
        while !cancelled, Date() < until { _ = condition.wait(until: until) }
        let stop = cancelled
        condition.unlock()
        if stop { throw TransportError.cancelled }
        return try forward.post(url, headers: headers, body: body, timeout: timeout)
    }

    func cancelAll() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        condition.unlock()
        forward.cancelAll()
    }
}

/// `--watch-exit-teardown-ms`: see `ReportingProbeCommand`.
enum ExitTeardownWatch {
    // set by `install` before it registers the atexit handler, which only reads it
    nonisolated(unsafe) private static var directory = ""
    // set by `install` before it registers the atexit handler, which only reads it
    nonisolated(unsafe) private static var duration: Duration = .zero

    static func install(directory: String, duration: Duration) {
        Self.directory = directory
        Self.duration = duration
        atexit { ExitTeardownWatch.watch() }
    }

    /// The process's remote-configuration fetch (`RemoteConfiguration.current`'s) now.
    static func remoteFetchState() -> String {
        RemoteConfiguration.current.map { $0.waitForBackgroundFetch(timeout: .zero) == nil ? "running" : "finished" } ?? "none"
    }

    /// `OPENSSL_init_crypto(0, NULL)` fails once `OPENSSL_cleanup` ran ("stopped").
    private static func opensslState() -> String {
        #if os(Linux)
        typealias InitCrypto = @convention(c) (UInt64, OpaquePointer?) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "OPENSSL_init_crypto") else { return "absent" }
        return unsafeBitCast(symbol, to: InitCrypto.self)(0, nil) == 1 ? "alive" : "stopped"
        #else
        return "absent"
        #endif
    }

    private static func envelopes() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".envelope") }.sorted()
    }

    private static func watch() {
        let before = envelopes()
        let callsBefore = transportCalls.value
        let fetch = remoteFetchState()
        let openssl = opensslState()
        let nanoseconds = duration.nanoseconds
        usleep(useconds_t(nanoseconds / 1000))
        let after = envelopes()
        print("TEARDOWN outbox-unchanged=\(before == after) transport-calls=\(transportCalls.value - callsBefore) pending=\(after.count) remote-fetch=\(fetch) openssl=\(openssl)")
        fflush(nil)
    }
}

/// The app code of `--capture-handled`: the handled events' stacks start here.
enum HandledEvents {
    enum ProbeError: Error {
        case declined(code: Int)
    }

    @inline(never)
    static func send() {
        CrashScope.setUser(CrashScope.User(id: "user-42"))
        CrashScope.setTag("checkout_flow", "v2")
        let errorID = CrashShieldSDK.capture(error: ProbeError.declined(code: 7))
        let messageID = CrashShieldSDK.capture(message: "probe message", level: .warning)
        let flushed = CrashShieldSDK.flush(timeout: .seconds(10))
        print("CAPTURED \(errorID ?? "nil") \(messageID ?? "nil") FLUSH \(flushed)")
        fflush(nil)
    }
}
