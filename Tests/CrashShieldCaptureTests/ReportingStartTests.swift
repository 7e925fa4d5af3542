import CrashShieldBase
import CrashShieldProtocol
import Crypto
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// Reporting as part of the one start: children crash
/// (`shield crash segv`, `shield reporting-probe --crash-during-launch`), then a
/// `shield reporting-probe --dsn` child starts with reporting against a loopback server.
@Suite(.serialized) struct ReportingStartTests {
    /// The items the server received, in order, with their envelope's index.
    struct Received {
        var events: [(envelope: Int, json: JSONValue)] = []
        var sessions: [(envelope: Int, json: JSONValue)] = []
        var envelopes = 0
    }

    func received(_ server: LoopbackHTTPServer) throws -> Received {
        var result = Received()
        // The start also fetches the remote configuration (GET): only envelopes count here.
        for (index, request) in server.requests.filter({ $0.method == "POST" && $0.path.hasSuffix("/envelope/") }).enumerated() {
            let body = Gzip.decompress(request.body) ?? request.body
            let envelope = try Envelope.parse(body)
            result.envelopes += 1
            for item in envelope.items {
                if item.type == "event" { result.events.append((index, try JSONValue.parse(item.payload))) }
                if item.type == "session" { result.sessions.append((index, try JSONValue.parse(item.payload))) }
            }
        }
        return result
    }

    /// A `reporting-probe` child. Unless `extra` sets one, the exit flush gets 10 s: these tests
    /// check what arrives, not how fast (the flush returns once the outbox is empty). The
    /// product's 1 s can run out on a loaded machine (conversion with symbolication, several
    /// sends), and since reporting's end cancels what is left, nothing arrives after it.
    func probe(_ directory: String, dsn: String?, _ extra: [String] = []) throws -> ChildResult {
        let flush = dsn != nil && !extra.contains("--exit-flush-timeout") ? ["--exit-flush-timeout", "10"] : []
        return try runChild(Built.shield, ["reporting-probe", "--dir", directory] + (dsn.map { ["--dsn", $0] } ?? []) + flush + extra,
                            timeout: 60)
    }

    func functions(_ event: JSONValue) -> [String] {
        (event["exception"]?["values"]?.arrayValue?.first?["stacktrace"]?["frames"]?.arrayValue ?? []).compactMap { $0["function"]?.stringValue }
    }

    func pendingEnvelopes(_ directory: String) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory + "/outbox")) ?? []).filter { $0.hasSuffix(".envelope") }.count
    }

    /// `capture(error:)` and `capture(message:level:)` send handled events
    /// through the outbox, with the app's scope and the caller's stack, and `flush` has sent them
    /// when it returns true. (The API did not exist before.)
    @Test func handledErrorsAndMessagesAreSentWithScopeAndCallSite() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("reporting-handled")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try probe(directory, dsn: server.dsn, ["--capture-handled"])
        #expect(result.termination == .exited(0), "\(result.output)")
        let line = try #require(result.output.split(separator: "\n").first { $0.hasPrefix("CAPTURED ") }, "\(result.output)")
        let fields = line.split(separator: " ").map(String.init)
        try #require(fields.count == 5)
        #expect(fields[3] == "FLUSH" && fields[4] == "true", "\(line)")
        let got = try received(server)
        let error = try #require(got.events.first { $0.json["event_id"]?.stringValue == fields[1] }?.json, "\(got.events.map(\.json))")
        let exception = try #require(error["exception"]?["values"]?.arrayValue?.first)
        #expect(error["level"] == "error")
        #expect(exception["type"]?.stringValue?.hasSuffix("ProbeError") == true, "\(exception)")
        #expect(exception["value"] == "declined(code: 7)")
        #expect(exception["mechanism"]?["type"] == "generic" && exception["mechanism"]?["handled"] == true)
        #expect(error["user"]?["id"] == "user-42" && error["tags"]?["checkout_flow"] == "v2")
        // The stack starts at the app code that called capture(error:) (caller → callee: last).
        let frame = try #require(exception["stacktrace"]?["frames"]?.arrayValue?.last)
        let path = try #require(frame["package"]?.stringValue)
        let address = try #require(frame["instruction_addr"]?.stringValue.flatMap { UInt64($0.dropFirst(2), radix: 16) })
        let base = try #require(frame["image_addr"]?.stringValue.flatMap { UInt64($0.dropFirst(2), radix: 16) })
        let symbol = ExternalSymbolizer.symbolize(path: path, offsets: [address - base - 1])?.first ?? nil
        #expect(symbol?.function.contains("HandledEvents") == true && symbol?.function.contains("send") == true,
                "first frame: \(symbol?.function ?? "?")")
        let message = try #require(got.events.first { $0.json["event_id"]?.stringValue == fields[2] }?.json)
        #expect(message["logentry"]?["formatted"] == "probe message" && message["level"] == "warning")
        #expect(message["user"]?["id"] == "user-42")
        #expect(pendingEnvelopes(directory) == 0)
    }

    /// A crash report pending at start becomes one crash event naming the crashed function; the
    /// report file is gone and the outbox empty afterwards.
    @Test(arguments: [false, true]) func pendingCrashIsSentByTheStart(captureOnly: Bool) throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("reporting-start-crash")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crash = try runChild(Built.shield, ["crash", "segv", "--dir", directory])
        #expect(crash.termination == .signaled(SIGSEGV))

        let result = try probe(directory, dsn: server.dsn, captureOnly ? ["--capture-only"] : [])
        #expect(result.termination == .exited(0), "\(result.output)")
        let got = try received(server)
        let crashes = got.events.filter { $0.json["level"] == "fatal" }
        #expect(crashes.count == 1, "\(got.events.map(\.json))")
        #expect(functions(try #require(crashes.first).json).contains("csc_crash_segv"), "\(crashes.first.map { functions($0.json) } ?? [])")
        // This launch's session: started (init) and ended cleanly at exit.
        #expect(got.sessions.filter { $0.json["init"]?.boolValue == true && $0.json["status"] == "ok" }.count == 1)
        #expect(got.sessions.filter { $0.json["status"] == "exited" }.count == 1)
        #expect(loadReports(directory, symbolicate: false).count == 0)
        #expect(pendingEnvelopes(directory) == 0)
    }

    /// A crash during launch is received before launch protection's repair step runs, in one
    /// envelope with the crashed run's session closed `crashed`, tagged with the launch fields;
    /// the crash of a launch that ran a repair step names that step.
    @Test func launchCrashIsReceivedBeforeTheRepairStep() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("reporting-start-launch")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A generous bound: the claim is the order (sent before the step), not the speed.
        let repair = ["--probe-step", "--threshold", "1", "--launch-flush-timeout", "10"]

        let first = try probe(directory, dsn: server.dsn, ["--crash-during-launch"])
        #expect(first.termination == .signaled(SIGSEGV), "\(first.output)")
        #expect(try received(server).events.isEmpty)

        // Second launch: the first one's crash is sent before the step runs; then it crashes too.
        let second = try probe(directory, dsn: server.dsn, repair + ["--crash-during-launch"])
        #expect(second.termination == .signaled(SIGSEGV), "\(second.output)")
        #expect(second.output.contains("REPAIR pending=0"), "\(second.output)")
        var got = try received(server)
        let firstCrash = try #require(got.events.first { $0.json["level"] == "fatal" })
        #expect(functions(firstCrash.json).contains("csc_crash_segv"))
        #expect(firstCrash.json["tags"]?["launch.phase"] == "launching")
        #expect(firstCrash.json["tags"]?["launch.consecutive_crashes"] == "1")
        #expect(firstCrash.json["tags"]?["launch.attempted_repair_step"] == nil)
        let crashedSessions = got.sessions.filter { $0.json["status"] == "crashed" }
        #expect(crashedSessions.count == 1 && crashedSessions.first?.envelope == firstCrash.envelope, "\(got.sessions.map(\.json))")

        // Third launch: the second one's crash names the step that launch ran.
        let third = try probe(directory, dsn: server.dsn, repair)
        #expect(third.termination == .exited(0), "\(third.output)")
        got = try received(server)
        let crashes = got.events.filter { $0.json["level"] == "fatal" }
        #expect(crashes.count == 2)
        let secondCrash = try #require(crashes.last)
        #expect(secondCrash.json["tags"]?["launch.attempted_repair_step"] == "probe-step")
        #expect(secondCrash.json["tags"]?["launch.repair_step"] == nil)
        #expect(secondCrash.json["tags"]?["launch.consecutive_crashes"] == "2")
        #expect(got.sessions.filter { $0.json["status"] == "crashed" }.count == 2)
        // No step ran at the third start (the only one was attempted) and its launch did not
        // complete: no loop's end is reported.
        #expect(got.events.filter { $0.json["level"] == "info" }.isEmpty, "\(got.events.map(\.json))")
        #expect(pendingEnvelopes(directory) == 0)
    }

    /// A launch that ran a repair step and then completed reports the loop's end: one `info`
    /// event tagged `launch.repair_step` with the step and the loop's length, sent even though
    /// the process exits right after. A later completed launch without a step sends none.
    @Test func aLaunchCompletedAfterARepairStepNamesTheStep() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("reporting-start-loop-ended")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let repair = ["--probe-step", "--threshold", "2", "--launch-flush-timeout", "10", "--exit-flush-timeout", "10"]
        for _ in 0..<2 {
            let crashed = try probe(directory, dsn: server.dsn, repair + ["--crash-during-launch"])
            #expect(crashed.termination == .signaled(SIGSEGV), "\(crashed.output)")
        }
        let repaired = try probe(directory, dsn: server.dsn, repair + ["--complete-launch"])
        #expect(repaired.termination == .exited(0), "\(repaired.output)")
        #expect(repaired.output.contains("LAUNCH-COMPLETED repairs=probe-step"), "\(repaired.output)")
        var got = try received(server)
        let ended = got.events.filter { $0.json["level"] == "info" }
        #expect(ended.count == 1, "\(got.events.map(\.json))")
        let end = try #require(ended.first).json
        #expect(end["tags"]?["launch.repair_step"] == "probe-step" && end["tags"]?["launch.consecutive_crashes"] == "2")
        #expect(end["logentry"]?["formatted"]?.stringValue?.contains("probe-step") == true)
        #expect(end["release"] == "probe@1.0")
        let crashes = got.events.filter { $0.json["level"] == "fatal" }
        #expect(crashes.count == 2 && crashes.allSatisfy { $0.json["tags"]?["launch.repair_step"] == nil })
        #expect(pendingEnvelopes(directory) == 0)

        let later = try probe(directory, dsn: server.dsn, repair + ["--complete-launch"])
        #expect(later.termination == .exited(0) && later.output.contains("LAUNCH-COMPLETED repairs=\n"), "\(later.output)")
        got = try received(server)
        #expect(got.events.filter { $0.json["level"] == "info" }.count == 1)
    }

    /// Nothing pending: no crash envelope, one session start, and the clean exit's `exited`.
    /// The incident delivery thread is created after the start, by a thread the app-hang watchdog
    /// starts with the start thread's signal mask: a crash in an app's sink on that thread is
    /// captured like any other (with the watchdog's mask, every signal blocked, the kernel would
    /// kill the process without running the handler), and the next start finds its report.
    @Test func aCrashInASinkOnTheDeliveryThreadIsCaptured() throws {
        let directory = temporaryDirectory("sink-crash")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crashed = try probe(directory, dsn: nil, ["--crash-in-sink"])
        #expect(crashed.termination == .signaled(SIGSEGV), "\(crashed.output)")
        #expect(!crashed.output.contains("SINK-DID-NOT-CRASH"))
        let reports = loadReports(directory)
        #expect(reports.count == 1)
        #expect(reports.first?.crash?.signal == SIGSEGV)
    }

    @Test func nothingPendingSendsOnlyTheSession() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("reporting-start-empty")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try probe(directory, dsn: server.dsn)
        #expect(result.termination == .exited(0), "\(result.output)")
        let got = try received(server)
        #expect(got.events.isEmpty)
        let starts = got.sessions.filter { $0.json["init"]?.boolValue == true }
        #expect(starts.count == 1 && starts.first?.json["status"] == "ok", "\(got.sessions.map(\.json))")
        #expect(starts.first?.json["attrs"]?["release"] == "probe@1.0")
        let exits = got.sessions.filter { $0.json["status"] == "exited" }
        #expect(exits.count == 1 && exits.first?.json["sid"] == starts.first?.json["sid"])
        #expect(pendingEnvelopes(directory) == 0)
    }

    /// Server down: the crash envelope stays in the outbox; the next start sends it.
    @Test func serverDownKeepsTheCrashForTheNextStart() throws {
        let directory = temporaryDirectory("reporting-start-down")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crash = try runChild(Built.shield, ["crash", "segv", "--dir", directory])
        #expect(crash.termination == .signaled(SIGSEGV))
        let down = "http://0123456789abcdef0123456789abcdef@127.0.0.1:\(LoopbackHTTPServer.closedPort())/1"
        // Long enough for the conversion (symbolication included) before the exit gives up.
        let first = try probe(directory, dsn: down, ["--exit-flush-timeout", "8"])
        #expect(first.termination == .exited(0), "\(first.output)")
        #expect(pendingEnvelopes(directory) >= 1)
        #expect(loadReports(directory, symbolicate: false).count == 0)  // converted: the outbox has it

        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let second = try probe(directory, dsn: server.dsn)
        #expect(second.termination == .exited(0), "\(second.output)")
        let got = try received(server)
        let crashes = got.events.filter { $0.json["level"] == "fatal" }
        #expect(crashes.count == 1)
        #expect(crashes.first.map { functions($0.json).contains("csc_crash_segv") } == true)
        #expect(pendingEnvelopes(directory) == 0)
    }

    /// A send pass still running when the exit flush gives up does not go on into the exit: the
    /// child's requests are held 4 s (`--hold-requests-ms`), the exit flush allows 0.3 s, and an
    /// exit handler that runs after reporting's watches the outbox for 5 s more (past the hold: a
    /// pass that went on would send and remove an envelope there). Nothing may change there and
    /// no request may begin or end; the server gets nothing. The envelopes (session start,
    /// incident, session end) stay on disk and the next launch delivers them.
    @Test func aSendPassDoesNotRunIntoTheExitAndTheNextLaunchSendsWhatItHeld() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("reporting-start-exit-race")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try probe(directory, dsn: server.dsn, ["--incident", "--exit-flush-timeout", "0.3",
                                                          "--hold-requests-ms", "4000", "--watch-exit-teardown-ms", "5000"])
        #expect(first.termination == .exited(0), "\(first.output)")
        #expect(first.output.contains("TEARDOWN outbox-unchanged=true transport-calls=0 pending=3"), "\(first.output)")
        #expect(try received(server).envelopes == 0)
        #expect(pendingEnvelopes(directory) == 3)

        let second = try probe(directory, dsn: server.dsn, ["--exit-flush-timeout", "10"])
        #expect(second.termination == .exited(0), "\(second.output)")
        let got = try received(server)
        #expect(got.events.filter { $0.json["level"] == "warning" }.count == 1, "\(got.events.map(\.json))")
        // Both launches' sessions: each started and ended cleanly.
        #expect(got.sessions.filter { $0.json["init"]?.boolValue == true }.count == 2)
        #expect(got.sessions.filter { $0.json["status"] == "exited" }.count == 2)
        #expect(pendingEnvelopes(directory) == 0)
    }

    /// The start's remote-configuration fetch does not run into the exit either: against a
    /// server that never answers, the fetch (started before the incident was handed over) has
    /// finished, cancelled by reporting's end, when the next exit handler runs. On Linux, OpenSSL
    /// (URLSession's, through libcurl) is still usable there: its own exit cleanup, registered by
    /// the first URLSession after reporting's handler, used to run first, so reporting's exit
    /// flush ran on a cleaned-up OpenSSL, and an exit during that first URLSession's
    /// initialisation crashed (SIGSEGV under `curl_global_init`).
    @Test func theRemoteConfigurationFetchDoesNotRunIntoTheExit() throws {
        let server = try LoopbackHTTPServer(fallback: .hang)
        defer { server.stop() }
        let directory = temporaryDirectory("reporting-start-exit-fetch")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try probe(directory, dsn: server.dsn, ["--incident", "--exit-flush-timeout", "0.3", "--watch-exit-teardown-ms", "100"])
        #expect(result.termination == .exited(0), "\(result.output)")
        #expect(result.output.contains("remote-fetch=finished"), "\(result.output)")
        #if os(Linux)
        // URLSession's OpenSSL (through libcurl) was not cleaned up before reporting's exit work.
        #expect(result.output.contains("openssl=alive"), "\(result.output)")
        #endif
        #expect(pendingEnvelopes(directory) == 3)  // session start, incident, session end: for the next launch
    }

    /// The public path without reporting (`RemoteConfiguration.activate`, e.g. `shield crash
    /// --remote-config-dsn`) follows the same end: against a server that never answers, its
    /// background fetch has finished (cancelled by its own exit handler) when the next exit
    /// handler runs, OpenSSL is still usable there (Linux), and nothing was stored. Before, the
    /// fetch ran on into the exit (`remote-fetch=running`) until its 30 s request timeout.
    @Test func theStandaloneRemoteConfigurationFetchDoesNotRunIntoTheExit() throws {
        let server = try LoopbackHTTPServer(fallback: .hang)
        defer { server.stop() }
        let directory = temporaryDirectory("remote-config-standalone-exit")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try probe(directory, dsn: nil, ["--standalone-remote-config", server.dsn, "--incident",
                                                      "--watch-exit-teardown-ms", "100"])
        #expect(result.termination == .exited(0), "\(result.output)")
        #expect(result.output.contains("remote-fetch=finished"), "\(result.output)")
        #if os(Linux)
        #expect(result.output.contains("openssl=alive"), "\(result.output)")
        #endif
        #expect(RemoteConfigStore(directory: directory).loadDocument() == nil)
        #expect(RemoteConfigStore(directory: directory).loadState().nextFetchAt == nil)
    }

    /// `stop()` ends that fetch too: right after it returned, the fetch is no longer running.
    @Test func stopEndsTheStandaloneRemoteConfigurationFetch() throws {
        let server = try LoopbackHTTPServer(fallback: .hang)
        defer { server.stop() }
        let directory = temporaryDirectory("remote-config-standalone-stop")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try probe(directory, dsn: nil, ["--standalone-remote-config", server.dsn, "--stop"])
        #expect(result.termination == .exited(0), "\(result.output)")
        #expect(result.output.contains("STOPPED remote-fetch=finished"), "\(result.output)")
    }

    /// A forked child that exits does not end the parent's reporting: its exit handler neither
    /// sends nor writes nor waits, so the server gets one `exited` session (the parent's) and one
    /// incident. The exit flush allows 100 s, more than the probe's 60 s timeout: a child whose
    /// exit waited for reporting (whose queues need threads a forked child does not have) would
    /// hold its parent in `waitpid` until the probe is killed.
    @Test func aForkedChildsExitLeavesReportingToTheParent() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("reporting-start-fork")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try probe(directory, dsn: server.dsn, ["--incident", "--fork-child-exits", "--exit-flush-timeout", "100"])
        #expect(result.termination == .exited(0), "\(result.output)")
        #expect(result.output.contains("FORK child=0"), "\(result.output)")
        let got = try received(server)
        #expect(got.sessions.filter { $0.json["status"] == "exited" }.count == 1, "\(got.sessions.map(\.json))")
        #expect(got.events.filter { $0.json["level"] == "warning" }.count == 1)
        #expect(pendingEnvelopes(directory) == 0)
    }

    /// An incident after start reaches the server as a `warning` event.
    @Test func incidentAfterStartIsSentAsWarning() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("reporting-start-incident")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try probe(directory, dsn: server.dsn, ["--incident"])
        #expect(result.termination == .exited(0), "\(result.output)")
        let got = try received(server)
        let warnings = got.events.filter { $0.json["level"] == "warning" }
        #expect(warnings.count == 1, "\(got.events.map(\.json))")
        let exception = warnings.first?.json["exception"]?["values"]?.arrayValue?.first
        #expect(exception?["type"] == "swift", "\(String(describing: exception))")
        #expect(exception?["mechanism"]?["handled"]?.boolValue == true)
        // The session counts the handled error.
        #expect(got.sessions.first { $0.json["status"] == "exited" }?.json["errors"]?.intValue == 1)
    }

    /// `stop()` ends reporting: the session's end is sent then, and a misuse after it is not.
    @Test func stopEndsReporting() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("reporting-start-stop")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try probe(directory, dsn: server.dsn, ["--stop"])
        #expect(result.termination == .exited(0), "\(result.output)")
        #expect(result.output.contains("STOPPED"))
        let got = try received(server)
        #expect(got.events.isEmpty, "\(got.events.map(\.json))")
        #expect(got.sessions.filter { $0.json["status"] == "exited" }.count == 1)
    }

    /// Capture off: reporting still sends the session and incidents, from launch protection's
    /// directory.
    @Test func withCaptureOffIncidentsAndSessionsAreSent() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("reporting-start-nocapture")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try probe(directory, dsn: server.dsn, ["--no-capture", "--incident"])
        #expect(result.termination == .exited(0), "\(result.output)")
        let got = try received(server)
        #expect(got.events.filter { $0.json["level"] == "warning" }.count == 1)
        #expect(got.events.filter { $0.json["level"] == "fatal" }.isEmpty)
        #expect(got.sessions.filter { $0.json["init"]?.boolValue == true }.count == 1)
        #expect(got.sessions.filter { $0.json["status"] == "exited" }.count == 1)
        #expect(FileManager.default.fileExists(atPath: directory + "/session.json"))
    }

    /// Without `--dsn` the start reports nothing and makes no outbox.
    @Test func withoutReportingNothingIsStored() throws {
        let directory = temporaryDirectory("reporting-start-off")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try probe(directory, dsn: nil, ["--incident"])
        #expect(result.termination == .exited(0), "\(result.output)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/outbox"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/session.json"))
    }

    func startLine(_ output: String) throws -> JSONValue {
        let line = try #require(output.split(separator: "\n").first { $0.hasPrefix("{") }, "\(output)")
        return try JSONValue.parse(Data(line.utf8))
    }

    /// With reporting configured the start activates the stored remote configuration before the
    /// guards start (its rule switches the Swift access guard off), fetches from the reporting
    /// server, and the run's crash report names the document's version, which the crash event
    /// carries at the next start.
    @Test func theStartActivatesTheStoredRemoteConfiguration() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("reporting-start-remote")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try storeDocument(remoteDocument(7, guardName: "swift", policy: .off), in: directory)

        let first = try probe(directory, dsn: server.dsn, ["--crash-during-launch"])
        #expect(first.termination == .signaled(SIGSEGV), "\(first.output)")
        let started = try startLine(first.output)
        #expect(started["remote_config_version"]?.intValue == 7)
        #expect(started["swift_policy"] == "off")
        #expect(loadReports(directory, symbolicate: false).first?.remoteConfigVersion == 7)

        let second = try probe(directory, dsn: server.dsn, ["--wait-for-remote-config"])
        #expect(second.termination == .exited(0), "\(second.output)")
        #expect(server.requests.contains { $0.method == "GET" && $0.path.contains("/1/") }, "\(server.requests.map(\.path))")
        let crash = try #require(try received(server).events.first { $0.json["level"] == "fatal" })
        #expect(crash.json["tags"]?["crashshield.remote_config_version"] == "7")

        // Without reporting the start activates nothing (the app would call activate itself).
        let off = try startLine(try probe(directory, dsn: nil).output)
        #expect(off["remote_config_version"] == .null && off["swift_policy"] == "neutralize")

        // With a public key, the unsigned stored document is refused.
        let key = Curve25519.Signing.PrivateKey().publicKey.rawRepresentation.base64EncodedString()
        let signedOnly = try startLine(try probe(directory, dsn: server.dsn, ["--remote-config-public-key", key]).output)
        #expect(signedOnly["remote_config_version"] == .null && signedOnly["swift_policy"] == "neutralize")
    }

    /// The `CAPTURE installed=… sigsegv=…` line of a `--default-capture` probe.
    func captureLine(_ output: String) throws -> String {
        try #require(output.split(separator: "\n").first { $0.hasPrefix("CAPTURE ") }.map(String.init), "\(output)")
    }

    /// A stored document whose one rule (matching every app) says `capture`.
    func storeCaptureDocument(_ capture: Bool, in directory: String) throws {
        try storeDocument(RemoteConfigDocument(version: 7, issuedAt: "2026-11-23T06:00:00Z",
                                               rules: [RemoteConfigRule(capture: capture)]), in: directory)
    }

    /// `"capture": false` keeps crash capture off for a launch whose app left `options.capture`
    /// at its default: no signal handler is installed and a crash during that launch writes no
    /// report (launch protection still counts it, by its launch state). Launch protection's
    /// `resetRemoteConfiguration` step discards the document; the launch that runs it keeps the
    /// document's settings, the next launch has the app's own again (capture on: a report).
    @Test func aRuleSwitchesDefaultCaptureOffUntilTheDocumentIsReset() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("reporting-start-capture-off")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try storeCaptureDocument(false, in: directory)
        let launch = ["--default-capture", "--threshold", "1", "--reset-remote-config-step"]

        let first = try probe(directory, dsn: server.dsn, launch + ["--crash-during-launch"])
        #expect(first.termination == .signaled(SIGSEGV), "\(first.output)")
        #expect(try startLine(first.output)["remote_config_version"]?.intValue == 7)
        #expect(try captureLine(first.output) == "CAPTURE installed=false sigsegv=default")
        #expect(CrashCapture.pendingReports(in: directory).count == 0, "capture was off: the crash left no report")

        let second = try probe(directory, dsn: server.dsn, launch)
        #expect(second.termination == .exited(0), "\(second.output)")
        let secondStart = try startLine(second.output)
        #expect(secondStart["last_run"] == "crashed", "the launch that never completed counts")
        #expect(secondStart["remote_config_version"]?.intValue == 7, "the repair launch still has the document")
        #expect(try captureLine(second.output) == "CAPTURE installed=false sigsegv=default")
        #expect(RemoteConfigStore(directory: directory).loadDocument() == nil, "the repair step discarded the document")

        let third = try probe(directory, dsn: server.dsn, ["--default-capture", "--crash-during-launch"])
        #expect(third.termination == .signaled(SIGSEGV), "\(third.output)")
        #expect(try startLine(third.output)["remote_config_version"] == .null)
        #expect(try captureLine(third.output) == "CAPTURE installed=true sigsegv=handled")
        let reports = loadReports(directory, symbolicate: false)
        #expect(reports.count == 1 && reports.first?.crash?.signal == SIGSEGV, "capture is the app's default again")
    }

    /// What the app assigned in code wins over the document's `capture`, in both directions.
    @Test func theAppsCaptureChoiceWinsOverTheRule() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }

        let onDirectory = temporaryDirectory("reporting-start-capture-app-on")
        defer { try? FileManager.default.removeItem(atPath: onDirectory) }
        try storeCaptureDocument(false, in: onDirectory)
        let on = try probe(onDirectory, dsn: server.dsn, ["--crash-during-launch"])  // options.capture = CaptureOptions(...)
        #expect(on.termination == .signaled(SIGSEGV), "\(on.output)")
        #expect(try startLine(on.output)["remote_config_version"]?.intValue == 7)
        #expect(loadReports(onDirectory, symbolicate: false).count == 1, "the app switched capture on: the rule's false is ignored")

        let offDirectory = temporaryDirectory("reporting-start-capture-app-off")
        defer { try? FileManager.default.removeItem(atPath: offDirectory) }
        try storeCaptureDocument(true, in: offDirectory)
        let off = try probe(offDirectory, dsn: server.dsn, ["--no-capture", "--crash-during-launch"])
        #expect(off.termination == .signaled(SIGSEGV), "\(off.output)")
        #expect(try startLine(off.output)["remote_config_version"]?.intValue == 7)
        #expect(CrashCapture.pendingReports(in: offDirectory).count == 0, "the app switched capture off: the rule's true is ignored")
    }
}
