import CrashShieldTestDoubles
import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing
import CrashShield
import _CrashShieldIncidents
import _CrashShieldTestSupport

/// The end of incident delivery: at exit no sink call starts and a running one is waited for
/// (bounded), `stop()` does the same and then lets delivery go on, and a forked child delivers only
/// its own incidents. The exit and the fork run in child processes (`shield-test-probe incident-exit-probe`,
/// Swift Testing exit tests); before this end existed the probe's sink went on receiving the burst
/// while the exit's teardown ran, and a forked child never delivered.
@Suite struct IncidentExitTests {
    /// Runs `shield-test-probe incident-exit-probe` with `arguments` (killed after 60 s) and returns its exit
    /// status and standard output.
    func probe(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try runSiblingExecutable("shield-test-probe", ["incident-exit-probe"] + arguments)
    }

    /// The value of `key=` on the line that starts with `prefix`.
    func field(_ key: String, of prefix: String, in output: String) -> String? {
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix(prefix + " ") }) else { return nil }
        for part in line.split(separator: " ") where part.hasPrefix(key + "=") { return String(part.dropFirst(key.count + 1)) }
        return nil
    }

    /// A slow sink (20 ms per incident) has 200 incidents to go when `exit(0)` runs: by the time
    /// an exit handler registered before the start runs, no sink call is running and none starts
    /// during the following 300 ms; every incident was either delivered or dropped and counted.
    @Test func exitEndsDeliveryBeforeTheTeardownGoesOn() throws {
        let run = try probe(["--incidents", "200", "--sink-ms", "20", "--watch-ms", "300"])
        #expect(run.status == 0, "\(run.output)")
        #expect(field("running-at-begin", of: "TEARDOWN", in: run.output) == "false", "\(run.output)")
        #expect(field("late-calls", of: "TEARDOWN", in: run.output) == "0", "\(run.output)")
        let delivered = Int(field("delivered", of: "TEARDOWN", in: run.output) ?? "") ?? -1
        let dropped = Int(field("dropped", of: "TEARDOWN", in: run.output) ?? "") ?? -1
        #expect(delivered >= 1 && dropped >= 1 && delivered + dropped == 200, "\(run.output)")
    }

    /// Forked while the delivery thread is busy, the child delivers none of the parent's queued
    /// incidents, delivers its own (its own delivery thread starts), and exits.
    @Test func forkedChildDeliversItsOwnIncidentsOnly() throws {
        let run = try probe(["--incidents", "200", "--sink-ms", "1", "--fork-child"])
        #expect(run.status == 0, "\(run.output)")
        #expect(field("child", of: "FORK", in: run.output) == "0", "\(run.output)")
        #expect(field("inherited-delivered", of: "FORK-CHILD", in: run.output) == "0", "\(run.output)")
        #expect(field("own-delivered", of: "FORK-CHILD", in: run.output) == "true", "\(run.output)")
        #expect(field("late-calls", of: "TEARDOWN", in: run.output) == "0", "\(run.output)")
    }

    /// `stop()` takes the exit's path: once it returned no sink call of the started SDK is running
    /// or begins.
    @Test func stopEndsDeliveryLikeTheExit() throws {
        let run = try probe(["--incidents", "200", "--sink-ms", "20", "--stop"])
        #expect(run.status == 0, "\(run.output)")
        #expect(field("running", of: "STOPPED", in: run.output) == "false", "\(run.output)")
        #expect(field("late-calls", of: "STOPPED", in: run.output) == "0", "\(run.output)")
    }

    /// After `stop()` delivery goes on: a sink added with `addSink` receives an incident recorded
    /// after `stop` returned.
    @Test func deliveryGoesOnAfterStop() async {
        await #expect(processExitsWith: .success) {
            try CrashShieldSDK.start(.guardsOnly)
            let kept = InMemoryIncidentSink()
            CrashShieldSDK.addSink(kept)
            CrashShieldSDK.stop()
            _ = [1, 2][shielded: 5]
            guard CrashShieldSDK.flushIncidents(timeout: .seconds(10)) else { exit(3) }
            exit(kept.incidents.count == 1 ? 0 : 4)
        }
    }

    /// The C contract of `cs_incidents_end_delivery`: it waits for the running callback at most
    /// `wait_ms` (false while the callback is still inside), drops and counts what is recorded
    /// while delivery is ended, calls nothing then, does not wait for itself on the delivery
    /// thread, and `cs_incidents_resume_delivery` lets delivery go on.
    @Test func endDeliveryWaitsBoundedDropsAndResumes() async {
        await #expect(processExitsWith: .success) {
            cs_incidents_set_callback({ _, _ in
                Cell.calls.add(1)
                while Cell.holdCallback.value != 0 { usleep(1000) }
                if Cell.endFromCallback.value != 0 {
                    Cell.endedOnDeliveryThread.store(cs_incidents_end_delivery(60_000) ? 1 : 2)
                }
            }, nil)
            Cell.holdCallback.store(1)
            IncidentExitTests.recordIncident("first")
            while Cell.calls.value == 0 { usleep(1000) }
            IncidentExitTests.recordIncident("queued")
            // The callback is held: a short end gives up and says so; the queued one is dropped.
            guard !cs_incidents_end_delivery(20) else { exit(3) }
            guard cs_incidents_stats().dropped_deliveries == 1 else { exit(4) }
            Cell.holdCallback.store(0)
            guard cs_incidents_end_delivery(60_000) else { exit(5) }
            IncidentExitTests.recordIncident("while-ended")
            guard cs_incidents_stats().dropped_deliveries == 2 else { exit(6) }
            guard cs_incidents_flush(60_000), Cell.calls.value == 1 else { exit(7) }
            // Resumed, a callback that ends delivery on the delivery thread does not wait for itself.
            cs_incidents_resume_delivery()
            Cell.endFromCallback.store(1)
            IncidentExitTests.recordIncident("after-resume")
            while Cell.endedOnDeliveryThread.value == 0 { usleep(1000) }
            guard Cell.endedOnDeliveryThread.value == 1 else { exit(8) }
            guard Cell.calls.value == 2 else { exit(9) }
            exit(0)
        }
    }

    /// Shared between the test and the delivery thread: C11 atomics of `_CrashShieldTestSupport`
    /// (Swift's `Atomic` needs macOS 15 / iOS 18, newer than the package's platforms).
    enum Cell: Int32 {
        case calls, holdCallback, endFromCallback
        /// 0: not yet; 1: cs_incidents_end_delivery returned true on the delivery thread; 2: false.
        case endedOnDeliveryThread
        var value: Int { csc_test_probe_counter_load(rawValue) }
        func add(_ delta: Int) { _ = csc_test_probe_counter_add(rawValue, delta) }
        func store(_ value: Int) { csc_test_probe_counter_store(rawValue, value) }
    }

    /// One incident of its own fingerprint (the selector differs).
    static func recordIncident(_ selector: String) {
        "IncidentExitTests".withCString { className in
            selector.withCString { selectorName in
                var site = cs_incident_site()
                site.guard_name = cString(guardName)
                site.policy = CS_POLICY_NEUTRALIZE
                site.class_name = className
                site.selector_name = selectorName
                site.reason = cString(reason)
                cs_incident_record(&site)
            }
        }
    }
}

/// Static strings: the pipeline keeps the guard name and reason pointers.
private let guardName: StaticString = "exit-test"
private let reason: StaticString = "end of delivery"

private func cString(_ text: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
}
