import CrashShieldProtocol
import CrashShield
import Foundation
import _CrashShieldIncidents
import _CrashShieldTestSupport

/// `shield-test-probe incident-exit-probe [--incidents N] [--sink-ms N] [--watch-ms N] [--fork-child] [--stop]`:
/// the test child of the incident delivery thread's end (CrashShieldTests' `IncidentExitTests`).
///
/// Before anything of CrashShield runs it registers an exit handler (the *watch*), so the watch
/// runs after every exit handler the SDK registers (atexit handlers run last registered, first).
/// Then it starts the guards (`CrashShieldOptions.guardsOnly`) with one slow sink that sleeps
/// `--sink-ms` (default 20) per incident, records `--incidents` (default 200) distinct incidents
/// in a burst, waits until the sink received the first one and prints
/// `BURST recorded=<n> delivered=<n>`. Then:
/// - `--fork-child`: forks while the delivery thread is busy; the child records one incident of
///   its own, waits for it (at most 2 s) and prints `FORK-CHILD inherited-delivered=<incidents of
///   the parent's burst the child's sink received> own-delivered=<true|false>`, then calls `exit`;
///   the parent waits for the child (at most 10 s, then kills it) and prints
///   `FORK child=<exit status|signal N|hung>`.
/// - `--stop`: `CrashShieldSDK.stop()`, then prints `STOPPED running=<a sink call is running>
///   late-calls=<sink calls begun after stop returned, 100 ms later>`.
/// Then `exit(0)`. The watch marks that the exit's teardown began, notes whether a sink call was
/// running at that moment, waits `--watch-ms` (default 300: the rest of a slow teardown) and
/// prints `TEARDOWN running-at-begin=<true|false> late-calls=<sink calls begun after the
/// teardown began> delivered=<statistics.delivered> dropped=<statistics.droppedDeliveries>`.
/// Before the delivery thread had an exit rule, the sink went on receiving the burst during the
/// teardown (`late-calls` > 0, `running-at-begin=true`).
enum IncidentExitProbeCommand {
    struct Arguments {
        var incidents = 200
        var sinkMilliseconds = 20
        var watchMilliseconds = 300
        var forkChild = false
        var stop = false
    }

    /// The probe's counters (C11 atomics of `_CrashShieldTestSupport`, usable from the delivery
    /// thread, an exit handler and a forked child alike).
    enum Counter: Int32 {
        /// Sink calls running now (0 or 1: the delivery thread calls one at a time).
        case running
        /// Sink calls begun so far.
        case calls
        /// Sink calls begun after the watch began (the exit's teardown).
        case lateCalls
        /// 1 once the exit's teardown began.
        case teardownBegan
        /// In a forked child: calls for the parent's burst and for the child's own incident.
        case inheritedCalls
        case ownCalls

        var value: Int { csc_test_probe_counter_load(rawValue) }
        func add(_ delta: Int) { _ = csc_test_probe_counter_add(rawValue, delta) }
    }
    // these three are set at the top of `run`, before any sink, thread or child exists; then only read
    nonisolated(unsafe) static var sinkMicroseconds: useconds_t = 20_000
    nonisolated(unsafe) static var watchMicroseconds: useconds_t = 300_000
    nonisolated(unsafe) static var parentPID: pid_t = 0

    static func run(_ arguments: Arguments) -> Int32 {
        sinkMicroseconds = useconds_t(max(0, arguments.sinkMilliseconds) * 1000)
        watchMicroseconds = useconds_t(max(0, arguments.watchMilliseconds) * 1000)
        parentPID = getpid()
        atexit { IncidentExitProbeCommand.watch() }

        var options = CrashShieldOptions.guardsOnly
        options.sinks = [ClosureIncidentSink { incident in IncidentExitProbeCommand.receive(incident) }]
        do {
            try CrashShieldSDK.start(options)
        } catch {
            FileHandle.standardError.write(Data("incident-exit-probe: start failed: \(error)\n".utf8))
            return 1
        }
        for index in 0..<max(1, arguments.incidents) { record(selector: "burst\(index)") }
        let deadline = Date().addingTimeInterval(10)
        while Counter.calls.value == 0 && Date() < deadline { usleep(1000) }
        print("BURST recorded=\(CrashShieldSDK.statistics.recorded) delivered=\(CrashShieldSDK.statistics.delivered)")
        fflush(nil)

        if arguments.forkChild { forkChild() }
        if arguments.stop {
            CrashShieldSDK.stop()
            let begunAtStop = Counter.calls.value
            let runningAtStop = Counter.running.value > 0
            usleep(100_000)
            print("STOPPED running=\(runningAtStop) late-calls=\(Counter.calls.value - begunAtStop)")
            fflush(nil)
        }
        exit(0)
    }

    /// One incident with its own fingerprint (the selector differs), recorded through the C
    /// pipeline as a guard would.
    private static func record(selector: String) {
        "IncidentExitProbe".withCString { className in
            selector.withCString { selectorName in
                var site = cs_incident_site()
                site.guard_name = cString(probeGuardName)
                site.policy = CS_POLICY_NEUTRALIZE
                site.class_name = className
                site.selector_name = selectorName
                site.reason = cString(probeReason)
                cs_incident_record(&site)
            }
        }
    }

    private static func receive(_ incident: Incident) {
        if Counter.teardownBegan.value > 0 { Counter.lateCalls.add(1) }
        if getpid() != parentPID {
            if incident.methodName.contains("burst") { Counter.inheritedCalls.add(1) }
            else { Counter.ownCalls.add(1) }
            return
        }
        Counter.running.add(1)
        Counter.calls.add(1)
        usleep(sinkMicroseconds)
        Counter.running.add(-1)
    }

    private static func forkChild() {
        let child = fork()
        if child == 0 {
            record(selector: "child")
            CrashShieldSDK.flushIncidents(timeout: .seconds(2))
            print("FORK-CHILD inherited-delivered=\(Counter.inheritedCalls.value) own-delivered=\(Counter.ownCalls.value > 0)")
            fflush(nil)
            exit(0)
        }
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(10)
        var ended = false
        while Date() < deadline {
            if waitpid(child, &status, WNOHANG) == child { ended = true; break }
            usleep(5000)
        }
        if !ended {
            kill(child, SIGKILL)
            _ = waitpid(child, &status, 0)
        }
        let signal = status & 0x7f
        print("FORK child=\(!ended ? "hung" : signal == 0 ? "\((status >> 8) & 0xff)" : "signal \(signal)")")
        fflush(nil)
    }

    /// The exit handler registered first, so it runs after the SDK's.
    private static func watch() {
        guard getpid() == parentPID else { return }
        Counter.teardownBegan.add(1)
        let runningAtBegin = Counter.running.value > 0
        usleep(watchMicroseconds)
        let statistics = CrashShieldSDK.statistics
        print("TEARDOWN running-at-begin=\(runningAtBegin) late-calls=\(Counter.lateCalls.value) delivered=\(statistics.delivered) dropped=\(statistics.droppedDeliveries)")
        fflush(nil)
    }
}

/// Static strings: the pipeline keeps the guard name and reason pointers.
private let probeGuardName: StaticString = "probe"
private let probeReason: StaticString = "incident-exit-probe burst"

private func cString(_ text: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
}
