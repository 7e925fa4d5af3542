import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// `shield send` and `shield envelope`, and the command line's strictness
/// after the move to swift-argument-parser.
@Suite struct ShieldSendTests {
    func pendingEnvelope(in directory: String) throws -> Outbox {
        let outbox = try Outbox(directory: Outbox.directory(forReportDirectory: directory))
        try outbox.enqueue(Envelope(header: ["event_id": .string(String(repeating: "b", count: 32))],
                                    items: [.json(type: "event", ["message": "from shield send", "level": "fatal"])]))
        return outbox
    }

    @Test func sendDeliversTheEnvelopeAndEmptiesTheOutbox() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("shield-send")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outbox = try pendingEnvelope(in: directory)
        let result = try runChild(Built.shield, ["send", "--dsn", server.dsn, "--dir", directory])
        #expect(result.termination == .exited(0), "\(result.output)")
        #expect(result.output.contains("delivered "), "\(result.output)")
        #expect(outbox.pending().isEmpty)
        #expect(server.requests.count == 1)
        let request = try #require(server.requests.first)
        let body = try #require(Gzip.decompress(request.body))
        let envelope = try Envelope.parse(body)
        #expect(try JSONValue.parse(envelope.items[0].payload)["message"] == "from shield send")
    }

    /// `shield crash segv`, then `shield send`: one envelope whose event names the crashed
    /// function; the report is gone and the outbox empty afterwards.
    @Test func crashThenSendDeliversTheCrashEvent() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = temporaryDirectory("shield-send-crash")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crash = try runChild(Built.shield, ["crash", "segv", "--dir", directory])
        #expect(crash.termination == .signaled(SIGSEGV))
        #expect(loadReports(directory, symbolicate: false).count == 1)
        let preview = try runChild(Built.shield, ["envelope", "--dir", directory, "--dsn", server.dsn])
        #expect(preview.output.contains("# crash report 1 of 1"), "\(preview.output)")
        #expect(server.requests.isEmpty)

        let result = try runChild(Built.shield, ["send", "--dsn", server.dsn, "--dir", directory])
        #expect(result.termination == .exited(0), "\(result.output)")
        #expect(result.output.contains("converted 1 crash report"), "\(result.output)")
        #expect(server.requests.count == 1)
        let request = try #require(server.requests.first)
        let envelope = try Envelope.parse(try #require(Gzip.decompress(request.body)))
        let event = try #require(envelope.items.first { $0.type == "event" })
        let json = try JSONValue.parse(event.payload)
        #expect(json["level"] == "fatal")
        let frames = json["exception"]?["values"]?.arrayValue?.first?["stacktrace"]?["frames"]?.arrayValue ?? []
        #expect(frames.contains { $0["function"]?.stringValue == "csc_crash_segv" }, "\(frames.suffix(3))")
        #expect(loadReports(directory, symbolicate: false).isEmpty)
        #expect(try Outbox(directory: Outbox.directory(forReportDirectory: directory)).pending().isEmpty)
    }

    /// With the server down the envelope stays (exit 1) and goes out at the next try.
    @Test func sendWithTheServerDownKeepsTheEnvelopeForTheNextTry() throws {
        let directory = temporaryDirectory("shield-send-down")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outbox = try pendingEnvelope(in: directory)
        let port = LoopbackHTTPServer.closedPort()
        let down = try runChild(Built.shield, ["send", "--dsn", "http://0123456789abcdef0123456789abcdef@127.0.0.1:\(port)/1", "--dir", directory])
        #expect(down.termination == .exited(1), "\(down.output)")
        #expect(down.output.contains("kept "), "\(down.output)")
        #expect(outbox.pending().count == 1)

        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let up = try runChild(Built.shield, ["send", "--dsn", server.dsn, "--dir", directory])
        #expect(up.termination == .exited(0), "\(up.output)")
        #expect(outbox.pending().isEmpty)
        #expect(server.requests.count == 1)
    }

    @Test func sendRefusesAMalformedDSN() throws {
        let directory = temporaryDirectory("shield-send-bad-dsn")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try Child(Built.shield, ["send", "--dsn", "https://sentry.example.com/1", "--dir", directory],
                               captureStandardError: true).wait()
        #expect(result.termination == .exited(2))
        #expect(result.output.contains("dsn.key"), "\(result.output)")
    }

    @Test func envelopePrintsWhatWouldBeSent() throws {
        let directory = temporaryDirectory("shield-envelope")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outbox = try pendingEnvelope(in: directory)
        let result = try runChild(Built.shield, ["envelope", "--dir", directory])
        #expect(result.termination == .exited(0))
        let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first?.hasPrefix("# \(outbox.pending()[0].name)") == true, "\(result.output)")
        let printed = try Envelope.parse(Data(lines.dropFirst().joined(separator: "\n").utf8))
        #expect(printed == (try outbox.load(outbox.pending()[0])))
        #expect(outbox.pending().count == 1)  // printing sends and removes nothing
    }

    @Test func everyCommandHasHelpAndRefusesUnknownOptions() throws {
        for command in ["demo", "bench", "crash", "reports", "bench-capture", "bench-reporting", "send", "envelope", "scenario", "launch-probe"] {
            let help = try runChild(Built.shield, [command, "--help"])
            #expect(help.termination == .exited(0), "\(command) --help: \(help.termination)")
            #expect(help.output.contains("USAGE: shield \(command)"), "\(command): \(help.output)")
            let unknown = try runChild(Built.shield, [command, "--no-such-option"])
            #expect(unknown.termination != .exited(0), "\(command) --no-such-option")
        }
        let top = try runChild(Built.shield, ["--help"])
        for visible in ["demo", "bench", "crash", "reports", "bench-capture", "bench-reporting", "send", "envelope"] {
            #expect(top.output.contains("  \(visible) "), "\(visible) missing from: \(top.output)")
        }
        for hidden in ["scenario", "launch-probe", "failsafe-probe", "reporting-probe"] {
            #expect(!top.output.contains("  \(hidden) "), "\(hidden) shown in: \(top.output)")
        }
        // The children only the tests spawn are shield-test-probe's, not shield's.
        for testOnly in ["rejected-start-probe", "stop-probe", "outbox-writer", "incident-exit-probe", "hang-probe"] {
            #expect(!top.output.contains(testOnly), "\(testOnly) shown in: \(top.output)")
            let refused = try runChild(Built.shield, [testOnly, "--dir", "/nonexistent"])
            #expect(refused.termination != .exited(0), "shield \(testOnly): \(refused.termination)")
            let help = try runChild(Built.shield, [testOnly, "--help"])
            #expect(!help.output.contains("USAGE: shield \(testOnly)"), "shield \(testOnly) --help: \(help.output)")
            let probe = try runChild(Built.testProbe, [testOnly, "--help"])
            #expect(probe.output.contains("USAGE: shield-test-probe \(testOnly)"), "\(testOnly): \(probe.output)")
        }
    }

    /// An unknown crash kind is still refused with status 2 and the list of kinds.
    @Test func unknownCrashKind() throws {
        let result = try Child(Built.shield, ["crash", "no-such-kind"], captureStandardError: true).wait()
        #expect(result.termination == .exited(2))
        #expect(result.output.contains("segv"))
    }
}
