import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry
import _CrashShieldCapture

/// App hangs and exits that leave no crash report. Every process that blocks, crashes
/// or is killed is a `shield-test-probe hang-probe` child with a timeout; its envelopes go to a loopback
/// server.
@Suite(.serialized) struct AppHangTests {
    /// The events and session updates the server received.
    func received(_ server: LoopbackHTTPServer) throws -> (events: [JSONValue], sessions: [JSONValue]) {
        var events: [JSONValue] = [], sessions: [JSONValue] = []
        for request in server.requests where request.method == "POST" && request.path.hasSuffix("/envelope/") {
            let envelope = try Envelope.parse(Gzip.decompress(request.body) ?? request.body)
            for item in envelope.items {
                if item.type == "event" { events.append(try JSONValue.parse(item.payload)) }
                if item.type == "session" { sessions.append(try JSONValue.parse(item.payload)) }
            }
        }
        return (events, sessions)
    }

    /// With CRASHSHIELD_INTEROP_DIR set, writes the envelope whose event has mechanism
    /// `mechanismType` there as `live-<name>.envelope` (as stored: without the `sent_at` the
    /// transport adds), for scripts/check-sentry-interop.sh.
    func exportForInterop(_ server: LoopbackHTTPServer, mechanismType: String, name: String) throws {
        guard let out = ProcessInfo.processInfo.environment["CRASHSHIELD_INTEROP_DIR"] else { return }
        for request in server.requests where request.method == "POST" && request.path.hasSuffix("/envelope/") {
            let body = Gzip.decompress(request.body) ?? request.body
            let envelope = try Envelope.parse(body)
            guard envelope.items.contains(where: { item in
                item.type == "event" && (try? JSONValue.parse(item.payload)).map { mechanism($0) == mechanismType } == true
            }) else { continue }
            // The envelope as stored: the transport adds `sent_at` to the header as it sends.
            let headerEnd = body.firstIndex(of: UInt8(ascii: "\n")) ?? body.endIndex
            var header = try #require(try JSONSerialization.jsonObject(with: body[..<headerEnd]) as? [String: Any])
            header["sent_at"] = nil
            let stored = try JSONSerialization.data(withJSONObject: header) + body[headerEnd...]
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            try stored.write(to: URL(fileURLWithPath: out + "/live-\(name).envelope"))
        }
    }

    func mechanism(_ event: JSONValue) -> String? { event["exception"]?["values"]?.arrayValue?.first?["mechanism"]?["type"]?.stringValue }

    func functions(_ event: JSONValue) -> [String] {
        (event["exception"]?["values"]?.arrayValue?.first?["stacktrace"]?["frames"]?.arrayValue ?? []).compactMap { $0["function"]?.stringValue }
    }

    func hangs(_ events: [JSONValue]) -> [JSONValue] { events.filter { mechanism($0) == "AppHang" } }

    func threads(_ event: JSONValue) -> [JSONValue] { event["threads"]?["values"]?.arrayValue ?? [] }

    func functions(ofThread thread: JSONValue) -> [String] {
        (thread["stacktrace"]?["frames"]?.arrayValue ?? []).compactMap { $0["function"]?.stringValue }
    }

    func thread(named name: String, in event: JSONValue) -> JSONValue? { threads(event).first { $0["name"]?.stringValue == name } }

    /// The Sentry shape of an app hang's threads (sentry-cocoa's): the hung thread first, the one
    /// the exception's `thread_id` names, `current` and `main`, not crashed, its stack in the
    /// exception (a snapshot) and not repeated; every other thread not crashed, not current; the
    /// watchdog itself never among them.
    func expectHangThreadShape(_ event: JSONValue, sourceLocation: SourceLocation = #_sourceLocation) {
        let all = threads(event)
        let exception = event["exception"]?["values"]?.arrayValue?.first
        #expect(all.first?["id"] == exception?["thread_id"], "\(all.first.map { "\($0)" } ?? "none")", sourceLocation: sourceLocation)
        #expect(all.first?["current"] == true && all.first?["main"] == true && all.first?["crashed"] == false, sourceLocation: sourceLocation)
        #expect(all.first?["stacktrace"] == nil, "the exception carries the hung thread's stack", sourceLocation: sourceLocation)
        #expect(exception?["stacktrace"]?["snapshot"] == true, sourceLocation: sourceLocation)
        for other in all.dropFirst() {
            #expect(other["crashed"] == false && other["current"] == false && other["id"] != nil, "\(other)", sourceLocation: sourceLocation)
            #expect(other["id"] != all.first?["id"], sourceLocation: sourceLocation)
        }
        #expect(!all.contains { $0["name"]?.stringValue?.hasPrefix("CrashShieldHang") == true }, "the watchdog never samples itself",
                sourceLocation: sourceLocation)
    }

    /// `READER ...` and `SLEEPER ...` of `--workers`: the reader got every byte written, intact,
    /// without EINTR (the sampling signal is SA_RESTART, so `read` restarts); the sleeper slept at
    /// least what it asked (its loop continues with the remaining time after EINTR). Returns the
    /// sleeper's EINTR count.
    @discardableResult
    func expectWorkersUndisturbed(_ output: String, sourceLocation: SourceLocation = #_sourceLocation) -> Int? {
        #expect(output.contains("READER bytes=16384 intact=true eintr=0"), "\(output)", sourceLocation: sourceLocation)
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("SLEEPER ") }) else {
            Issue.record("no SLEEPER line: \(output)", sourceLocation: sourceLocation)
            return nil
        }
        var fields: [String: Int] = [:]
        for part in line.split(separator: " ").dropFirst() {
            let pair = part.split(separator: "=")
            if pair.count == 2 { fields[String(pair[0])] = Int(pair[1]) }
        }
        let slept = fields["slept_ms"] ?? -1, requested = fields["requested_ms"] ?? Int.max
        #expect(slept >= requested, "\(line)", sourceLocation: sourceLocation)
        return fields["eintr"]
    }
    func abnormalExits(_ events: [JSONValue]) -> [JSONValue] { events.filter { mechanism($0) == "AbnormalExit" } }

    func probe(_ directory: String, _ server: LoopbackHTTPServer, _ extra: [String] = [], timeout: TimeInterval = 60) throws -> ChildResult {
        try runChild(Built.testProbe, ["hang-probe", "--dir", directory, "--dsn", server.dsn] + extra, timeout: timeout)
    }

    /// Starts a probe, waits for `ready` in its output, keeps it running `seconds` more, then
    /// kills it with SIGKILL.
    func probeKilled(_ directory: String, _ server: LoopbackHTTPServer, _ extra: [String], ready: String,
                     after seconds: Double = 0) throws -> ChildResult {
        let child = try Child(Built.testProbe, ["hang-probe", "--dir", directory, "--dsn", server.dsn] + extra)
        let saw = child.waitForOutput(containing: ready, timeout: 60)
        if seconds > 0 { usleep(useconds_t(seconds * 1_000_000)) }
        kill(child.process.processIdentifier, SIGKILL)
        let result = child.wait(timeout: 30)
        #expect(saw, "\(result.output)")
        return result
    }

    /// The main thread blocked for 3 s with a 2 s timeout: exactly one app-hang event, handled,
    /// naming the blocking function on the main thread's stack, with a duration past the timeout.
    @Test func threeSecondBlockIsOneAppHang() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("hang-3s")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try probe(directory, server, ["--block-ms", "3000", "--breadcrumb", "before-hang", "--workers"])
        #expect(result.termination == .exited(0), "\(result.output)")
        #expect(result.output.contains("HANGS detected=1"), "\(result.output)")
        // Sampled during the hang, the workers still complete correctly.
        let sleeperInterruptions = expectWorkersUndisturbed(result.output)
        let got = try received(server)
        let found = hangs(got.events)
        #expect(found.count == 1, "\(got.events)")
        let hang = try #require(found.first)
        let exception = try #require(hang["exception"]?["values"]?.arrayValue?.first)
        #expect(exception["type"] == "App Hanging" && exception["mechanism"]?["handled"] == true)
        #expect(hang["level"] == "error")
        #expect(hang["threads"]?["values"]?.arrayValue?.first?["main"] == true)
        #expect(functions(hang).contains { $0.contains("blockMainThread") }, "\(functions(hang))")
        let duration = try #require(exception["mechanism"]?["data"]?["duration_ms"]?.intValue)
        #expect(duration >= 2000, "a hang ends after the timeout: \(duration) ms")
        #expect(hang["breadcrumbs"]?["values"]?.arrayValue?.contains { $0["message"] == "before-hang" } == true)
        #expect(abnormalExits(got.events).isEmpty)
        // The other threads: the two the probe started, each with its own blocking function.
        expectHangThreadShape(hang)
        let reader = try #require(thread(named: "probe-reader", in: hang), "\(threads(hang))")
        #expect(functions(ofThread: reader).contains { $0.contains("probeReaderBlockedInRead") }, "\(functions(ofThread: reader))")
        let sleeper = try #require(thread(named: "probe-sleeper", in: hang), "\(threads(hang))")
        #expect(functions(ofThread: sleeper).contains { $0.contains("probeSleeperInNanosleep") }, "\(functions(ofThread: sleeper))")
        #expect(!functions(ofThread: reader).contains { $0.contains("blockMainThread") }, "each thread its own stack")
        // Linux: the sleeper's nanosleep is interrupted once by its sample (never restarted by
        // the kernel) and its loop slept on (checked above).
        #expect(sleeperInterruptions == 1, "\(result.output)")
        let counts = try #require(hang["extra"]?["crashshield.hang_threads"])
        #expect(counts["listed"] == true && (counts["sampled"]?.intValue ?? 0) >= 2, "\(counts)")
        #expect(counts["left_out_of_run_record"]?.intValue == 0 && counts["beyond_limit"]?.intValue == 0, "\(counts)")
        #expect(Int64(threads(hang).count - 1) == counts["found"]?.intValue, "every other thread listed: \(counts)")
        try exportForInterop(server, mechanismType: "AppHang", name: "app-hang")
    }

    /// A 1 s block with the 2 s timeout is no hang.
    @Test func oneSecondBlockIsNoHang() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("hang-1s")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try probe(directory, server, ["--block-ms", "1000", "--workers"])
        #expect(result.termination == .exited(0), "\(result.output)")
        #expect(result.output.contains("HANGS detected=0"), "\(result.output)")
        // No hang, no sampling: the other threads are never signalled.
        #expect(expectWorkersUndisturbed(result.output) == 0, "\(result.output)")
        let got = try received(server)
        #expect(hangs(got.events).isEmpty, "\(got.events)")
        #expect(got.sessions.contains { $0["status"] == "exited" }, "the probe reported: \(got.sessions)")
    }

    /// A hang killed with SIGKILL after 5 s: a fatal hang at the next start (the stack taken
    /// while it hung, the duration so far), with the session closed `abnormal` in its envelope,
    /// and no separate abnormal-exit event.
    @Test func killedHangIsAFatalHangAtTheNextStart() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("hang-fatal")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let killed = try probeKilled(directory, server, ["--block-forever", "--breadcrumb", "before-fatal-hang", "--workers"],
                                     ready: "BLOCKING", after: 5)
        #expect(killed.termination == .signaled(SIGKILL), "\(killed.output)")
        #expect(hangs(try received(server).events).isEmpty, "the hang never ended in that process")

        let next = try probe(directory, server)
        #expect(next.termination == .exited(0), "\(next.output)")
        #expect(next.output.contains("last_run=ended_without_report"), "\(next.output)")
        let got = try received(server)
        let found = hangs(got.events)
        #expect(found.count == 1, "\(got.events)")
        let hang = try #require(found.first)
        let exception = try #require(hang["exception"]?["values"]?.arrayValue?.first)
        #expect(hang["level"] == "fatal" && exception["mechanism"]?["handled"] == false)
        #expect(functions(hang).contains { $0.contains("blockMainThread") }, "\(functions(hang))")
        #expect((exception["mechanism"]?["data"]?["duration_ms"]?.intValue ?? 0) >= 2000)
        #expect(hang["extra"]?["crashshield.abnormal_exit"]?["hanging"] == true)
        #expect(hang["breadcrumbs"]?["values"]?.arrayValue?.contains { $0["message"] == "before-fatal-hang" } == true)
        #expect(abnormalExits(got.events).isEmpty, "one event per death")
        #expect(got.sessions.filter { $0["status"] == "abnormal" }.count == 1)
        // The other threads, as the run record kept them.
        expectHangThreadShape(hang)
        let reader = try #require(thread(named: "probe-reader", in: hang), "\(threads(hang))")
        #expect(functions(ofThread: reader).contains { $0.contains("probeReaderBlockedInRead") }, "\(functions(ofThread: reader))")
        let sleeper = try #require(thread(named: "probe-sleeper", in: hang), "\(threads(hang))")
        #expect(functions(ofThread: sleeper).contains { $0.contains("probeSleeperInNanosleep") }, "\(functions(ofThread: sleeper))")
        let counts = try #require(hang["extra"]?["crashshield.hang_threads"])
        #expect(counts["left_out_of_run_record"]?.intValue == 0, "\(counts)")
        try exportForInterop(server, mechanismType: "AppHang", name: "fatal-app-hang")
    }

    /// A fatal hang with more threads than the run record keeps (`CSC_HANG_RECORD_THREADS`, 16):
    /// the next start's event has the hung thread and the 16 others the record kept, and says how
    /// many were left out. The live sample had them all (at most 32).
    @Test func fatalHangWithMoreThreadsThanTheRecordKeeps() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("hang-fatal-many")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let killed = try probeKilled(directory, server, ["--block-forever", "--idle-threads", "20"], ready: "BLOCKING", after: 4)
        #expect(killed.termination == .signaled(SIGKILL), "\(killed.output)")
        let next = try probe(directory, server)
        #expect(next.termination == .exited(0), "\(next.output)")
        let hang = try #require(hangs(try received(server).events).first)
        expectHangThreadShape(hang)
        #expect(functions(hang).contains { $0.contains("blockMainThread") }, "\(functions(hang))")
        #expect(threads(hang).count == 1 + Int(CSC_HANG_RECORD_THREADS), "\(threads(hang).count) threads")
        let counts = try #require(hang["extra"]?["crashshield.hang_threads"])
        let found = try #require(counts["found"]?.intValue)
        let leftOut = try #require(counts["left_out_of_run_record"]?.intValue)
        let beyond = try #require(counts["beyond_limit"]?.intValue)
        #expect(found >= 20, "the 20 idle threads and the probe's own: \(counts)")
        #expect(leftOut >= 4 && leftOut + beyond + Int64(CSC_HANG_RECORD_THREADS) == found, "\(counts)")
        let idle = threads(hang).filter { $0["name"]?.stringValue?.hasPrefix("probe-idle-") == true }
        #expect(!idle.isEmpty && idle.allSatisfy { functions(ofThread: $0).contains { $0.contains("probeIdleThreadWaits") } }, "\(idle)")
        let unknown = (hang["extra"]?["crashshield.unknown"]?.arrayValue ?? []).compactMap(\.stringValue)
        #expect(unknown.contains { $0.contains("\(leftOut) other thread(s) sampled but left out of the run record") }, "\(unknown)")
    }

    /// The event's threads from a hang made by hand: order, flags, a thread that did not answer and
    /// one that blocks the signal (each listed without a stack) and what could not be sampled,
    /// said in `extra`.
    @Test func appHangEventThreads() throws {
        let reporter = EventReporter(options: try ReportingOptions(dsn: "https://key@example.com/1"), installationID: "install")
        let converter = reporter.incidentConverter(appVersion: "1.0")
        func frame(_ address: UInt64) -> IncidentRecord.Frame { IncidentRecord.Frame(address: address, imagePath: "", imageOffset: nil) }
        let hang = AppHang(frames: [frame(0x1000), frame(0x1100)], threadID: 7, threadName: "main-loop",
                           threads: [.init(id: 8, name: "worker", frames: [frame(0x2000), frame(0x2100), frame(0x2200)], outcome: .sampled),
                                     .init(id: 9, name: nil, frames: [], outcome: .noAnswer),
                                     .init(id: 10, name: "queue", frames: [], outcome: .blocksSignal)],
                           threadsBeyondLimit: 3, threadsLeftOut: 2, started: Date(timeIntervalSince1970: 100), duration: .seconds(3),
                           fatal: true, timeoutMilliseconds: 2000)
        let event = try JSONValue.parse(JSONEncoder().encode(reporter.appHangEvent(hang, converter: converter, eventID: SentryID.random())))
        expectHangThreadShape(event)
        let all = threads(event)
        #expect(all.map { $0["id"]?.intValue } == [7, 8, 9, 10])
        #expect(all[0]["name"] == "main-loop" && all[1]["name"] == "worker" && all[2]["name"] == nil)
        #expect(all[1]["stacktrace"]?["frames"]?.arrayValue?.compactMap { $0["instruction_addr"]?.stringValue } == ["0x2200", "0x2100", "0x2000"])
        #expect(all[2]["stacktrace"] == nil && all[3]["stacktrace"] == nil, "not sampled: no stack")
        #expect(all[1]["main"] == false)
        let counts = try #require(event["extra"]?["crashshield.hang_threads"])
        #expect(counts["found"]?.intValue == 8 && counts["sampled"]?.intValue == 1, "\(counts)")
        #expect(counts["not_answered"] == [9] && counts["signal_blocked"] == [10], "\(counts)")
        #expect(counts["beyond_limit"]?.intValue == 3 && counts["left_out_of_run_record"]?.intValue == 2)
        let unknown = (event["extra"]?["crashshield.unknown"]?.arrayValue ?? []).compactMap(\.stringValue)
        #expect(unknown.count == 4, "\(unknown)")
        #expect(unknown.contains { $0.hasPrefix("stacks of 1 other thread(s) (listed without a stack): they did not answer") })
        #expect(unknown.contains { $0.hasPrefix("stacks of 1 other thread(s) (listed without a stack): they block the sampling signal") })
        #expect(unknown.contains { $0.hasPrefix("3 other thread(s) beyond the 32") })
        #expect(unknown.contains { $0.hasPrefix("2 other thread(s) sampled but left out of the run record (room for 16)") })
    }

    // MARK: exits without a report

    /// `kill -9` of a running app: exactly one abnormal-exit event at the next start, with the
    /// last breadcrumb, the run time, the last memory sample and what could not be known.
    @Test func killNineIsOneAbnormalExit() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("exit-kill9")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let killed = try probeKilled(directory, server, ["--wait", "--breadcrumb", "before-kill"], ready: "READY", after: 1.5)
        #expect(killed.termination == .signaled(SIGKILL))
        let next = try probe(directory, server)
        #expect(next.termination == .exited(0), "\(next.output)")
        let got = try received(server)
        let exits = abnormalExits(got.events)
        #expect(exits.count == 1, "\(got.events)")
        #expect(hangs(got.events).isEmpty)
        let event = try #require(exits.first)
        #expect(event["level"] == "fatal" && event["exception"]?["values"]?.arrayValue?.first?["type"] == "AbnormalExit")
        #expect(event["breadcrumbs"]?["values"]?.arrayValue?.contains { $0["message"] == "before-kill" } == true)
        let facts = try #require(event["extra"]?["crashshield.abnormal_exit"])
        #expect(facts["hanging"] == false)
        #expect((facts["memory"]?["resident_bytes"]?.intValue ?? 0) > 0, "\(facts)")
        #expect((facts["ran_seconds"]?.doubleValue ?? facts["ran_seconds"]?.intValue.map(Double.init) ?? 0) > 0, "\(facts)")
        #expect((facts["unknown"]?.arrayValue?.count ?? 0) > 0)
        #expect(got.sessions.filter { $0["status"] == "abnormal" }.count == 1)
        try exportForInterop(server, mechanismType: "AbnormalExit", name: "abnormal-exit")
    }

    /// A process killed by the kernel's out-of-memory killer (a memory cgroup where this machine
    /// allows one; otherwise SIGKILL while it allocates, and the test says so): one abnormal exit.
    @Test func outOfMemoryKillIsOneAbnormalExit() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("exit-oom")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        switch MemoryCgroup.make(limitBytes: 192 << 20) {
        case .success(let group):
            defer { group.remove() }
            let result = try probe(directory, server, ["--join-cgroup", group.path, "--allocate-mb", "4096"], timeout: 120)
            #expect(result.termination == .signaled(SIGKILL), "\(result.output)")
            #expect((group.oomKills() ?? 0) >= 1, "the kernel's OOM killer ended it")
        case .failure(let reason):
            Issue.record("no memory cgroup on this machine (\(reason)): tested with SIGKILL instead", severity: .warning)
            let killed = try probeKilled(directory, server, ["--allocate-mb", "4096"], ready: "ALLOCATING", after: 1)
            #expect(killed.termination == .signaled(SIGKILL))
        }
        let next = try probe(directory, server)
        #expect(next.termination == .exited(0), "\(next.output)")
        let got = try received(server)
        let exits = abnormalExits(got.events)
        #expect(exits.count == 1, "\(got.events)")
        let memory = exits.first?["extra"]?["crashshield.abnormal_exit"]?["memory"]
        #expect((memory?["resident_bytes"]?.intValue ?? 0) > 0, "\(String(describing: memory))")
    }

    /// A clean exit, a crash (its report tells), `stop()` before a kill, and an update between
    /// launches (a kill followed by a start of another app version) give no abnormal exit.
    @Test(arguments: ["clean-exit", "crash", "stop-then-kill", "update"])
    func noAbnormalExit(_ ending: String) throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("exit-\(ending)")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var nextArguments: [String] = []
        switch ending {
        case "clean-exit":
            #expect(try probe(directory, server).termination == .exited(0))
        case "crash":
            #expect(try probe(directory, server, ["--crash"]).termination == .signaled(SIGSEGV))
        case "stop-then-kill":
            #expect(try probeKilled(directory, server, ["--stop", "--wait"], ready: "READY").termination == .signaled(SIGKILL))
        default:
            #expect(try probeKilled(directory, server, ["--wait"], ready: "READY").termination == .signaled(SIGKILL))
            nextArguments = ["--app-version", "2.0"]
        }
        let next = try probe(directory, server, nextArguments)
        #expect(next.termination == .exited(0), "\(next.output)")
        let got = try received(server)
        #expect(abnormalExits(got.events).isEmpty, "\(got.events)")
        #expect(hangs(got.events).isEmpty)
        if ending == "crash" {
            #expect(got.events.filter { $0["level"] == "fatal" }.count == 1, "the crash is reported by its report")
        }
    }

    /// A crash report carries the watchdog's last memory sample (the handler reads it from the
    /// run record without allocating), and the crash's event shows it.
    @Test func crashReportCarriesTheLastMemorySample() throws {
        let directory = temporaryDirectory("crash-memory")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crashed = try runChild(Built.testProbe, ["hang-probe", "--dir", directory, "--crash"], timeout: 60)
        #expect(crashed.termination == .signaled(SIGSEGV), "\(crashed.output)")
        let report = try #require(loadReports(directory, symbolicate: false).first)
        let memory = try #require(report.process?.memory, "process.memory in the report")
        #expect((memory.residentBytes ?? 0) > 1 << 20, "\(memory)")
        #expect((memory.peakResidentBytes ?? 0) >= (memory.residentBytes ?? 0) / 2)
        let event = CrashEventConverter(options: try ReportingOptions(dsn: "https://key@example.com/1")).event(from: report)
        #expect(event.extra?["crashshield.memory"]?["resident_bytes"]?.intValue == Int64(memory.residentBytes ?? 0))
    }

    /// The decision itself: only a run that ended without a report, neither stopped nor followed
    /// by an app or OS update, and whose record is of the previous launch, is an abnormal exit.
    @Test func previousRunEventDecision() throws {
        let reporter = EventReporter(options: try ReportingOptions(dsn: "https://key@example.com/1"), installationID: "install")
        let converter = reporter.incidentConverter(appVersion: "1.0")
        let record = PreviousRunRecord(launchID: "launch-1", appVersion: "1.0", osVersion: "os-1", started: Date(timeIntervalSince1970: 100),
                                       lastAlive: Date(timeIntervalSince1970: 160), stopped: false, hangDetection: true)
        func lastRun(_ outcome: LastRun.Outcome, updated: Bool = false) -> LastRun {
            LastRun(outcome: outcome, crashedDuringLaunch: false, report: nil, appUpdated: updated, previousAppVersion: "1.0", detection: .report)
        }
        func decide(_ run: LastRun?, _ record: PreviousRunRecord?, launch: String? = "launch-1", os: String = "os-1") -> SentryEvent? {
            reporter.previousRunEvent(lastRun: run, previousLaunchID: launch, record: record, converter: converter, osVersion: os)
        }
        let event = try #require(decide(lastRun(.endedWithoutReport), record))
        #expect(event.exception?.values.first?.mechanism?.type == "AbnormalExit")
        #expect(event.eventID == SentryID.derived(from: "crashshield.abnormal-exit:launch-1"), "one id per run")
        #expect(decide(lastRun(.cleanExit), record) == nil)
        #expect(decide(lastRun(.crashed), record) == nil)
        #expect(decide(lastRun(.endedWithoutReport, updated: true), record) == nil)
        #expect(decide(lastRun(.endedWithoutReport), record, os: "os-2") == nil)
        #expect(decide(lastRun(.endedWithoutReport), record, launch: "launch-0") == nil)
        var stopped = record
        stopped.stopped = true
        #expect(decide(lastRun(.endedWithoutReport), stopped) == nil)
        #expect(decide(lastRun(.endedWithoutReport), nil) == nil)
    }
}

/// A memory cgroup for one test child: cgroup v2 (`memory.max`, `memory.swap.max`) or v1
/// (`memory.limit_in_bytes`, `memory.memsw.limit_in_bytes`), made under the hierarchy's root.
struct MemoryCgroup {
    let path: String
    let version: Int

    static func make(limitBytes: Int) -> Result<MemoryCgroup, MemoryCgroupUnavailable> {
        let name = "crashshield-test-\(getpid())-\(UUID().uuidString.prefix(8))"
        let manager = FileManager.default
        let v2Controllers = (try? String(contentsOfFile: "/sys/fs/cgroup/cgroup.controllers", encoding: .utf8)) ?? ""
        let candidates: [(String, Int)] = (v2Controllers.split(separator: " ").contains { $0.trimmingCharacters(in: .whitespacesAndNewlines) == "memory" }
            ? [("/sys/fs/cgroup", 2)] : []) + [("/sys/fs/cgroup/memory", 1)]
        var reasons: [String] = []
        for (root, version) in candidates {
            let path = root + "/" + name
            guard mkdir(path, 0o755) == 0 else {
                reasons.append("mkdir \(path): \(String(cString: strerror(errno)))")
                continue
            }
            let group = MemoryCgroup(path: path, version: version)
            let limited = version == 2
                ? group.write("memory.max", "\(limitBytes)")
                : group.write("memory.limit_in_bytes", "\(limitBytes)")
            guard limited else {
                reasons.append("cannot set the limit of \(path)")
                group.remove()
                continue
            }
            // No swap, so the limit is reached (best effort: swap accounting may be off).
            _ = version == 2 ? group.write("memory.swap.max", "0") : group.write("memory.memsw.limit_in_bytes", "\(limitBytes)")
            return .success(group)
        }
        return .failure(MemoryCgroupUnavailable(reason: reasons.isEmpty ? "no memory controller" : reasons.joined(separator: "; ")))
    }

    private func write(_ file: String, _ value: String) -> Bool {
        (try? (value + "\n").write(toFile: path + "/" + file, atomically: false, encoding: .utf8)) != nil
    }

    /// How many processes the kernel's OOM killer ended in the group.
    func oomKills() -> Int? {
        let file = version == 2 ? "memory.events" : "memory.oom_control"
        guard let text = try? String(contentsOfFile: path + "/" + file, encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n").first { $0.hasPrefix("oom_kill ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") }
    }

    func remove() { rmdir(path) }
}

struct MemoryCgroupUnavailable: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}
