import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// Golden envelopes (Tests/Golden/Reporting): each stored crash report (`reports/<case>.json`,
/// symbolicated reports of real crashes of `shield crash <kind>`) converted with fixed settings,
/// ids and times must give exactly `envelopes/crash-<case>.envelope`; likewise an incident, its
/// aggregated repeat, the session updates and a client report. A change in the conversion shows as a
/// diff of these files. `CRASHSHIELD_UPDATE_GOLDEN=1 swift test --filter GoldenEnvelopeTests`
/// rewrites them after an intended change. `scripts/check-sentry-interop.sh` reads the same files
/// with Sentry's own envelope reader and event normalizer.
@Suite(.serialized) struct GoldenEnvelopeTests {
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path + "/Tests/Golden/Reporting"
    }()
    static let updating = ProcessInfo.processInfo.environment["CRASHSHIELD_UPDATE_GOLDEN"] == "1"

    static var reportCases: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: root + "/reports")) ?? [])
            .filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()
    }

    /// Compares `envelope` with the stored file `name` (or stores it when updating), then reads
    /// it back: the envelope reader and the event decoder must give the same values.
    static func check(_ envelope: Envelope, _ name: String) throws {
        let bytes = envelope.serialized()
        let path = root + "/envelopes/\(name).envelope"
        if updating {
            try FileManager.default.createDirectory(atPath: root + "/envelopes", withIntermediateDirectories: true)
            try bytes.write(to: URL(fileURLWithPath: path))
        }
        let stored = try #require(FileManager.default.contents(atPath: path), "missing \(path): run with CRASHSHIELD_UPDATE_GOLDEN=1")
        if stored != bytes {
            let actual = NSTemporaryDirectory() + "\(name).envelope.actual"
            try? bytes.write(to: URL(fileURLWithPath: actual))
            Issue.record("\(name): the envelope differs from \(path) (new output in \(actual))")
        }
        let parsed = try Envelope.parse(stored)
        #expect(try parsed == Envelope.parse(bytes))
        #expect(parsed.header["sent_at"] == nil)
        for item in parsed.items where item.type == "event" {
            let event = try SentryEvent.decode(item.payload)
            #expect(try event.jsonData() == item.payload, "\(name): the event does not read back into the same value")
            #expect(parsed.header["event_id"]?.stringValue == event.eventID)
        }
        for item in parsed.items where item.type == "session" {
            let session = try JSONDecoder().decode(SessionUpdate.self, from: item.payload)
            #expect(try session.jsonData() == item.payload)
        }
    }

    @Test func thereIsAReportForEveryCrashKind() {
        for kind in ["segv", "abort", "objc-exception", "swift-index", "inside-guard"] {
            #expect(Self.reportCases.contains(kind), "no golden report \(kind).json")
        }
    }

    @Test(arguments: GoldenEnvelopeTests.reportCases)
    func crashEnvelope(_ name: String) throws {
        let data = try #require(FileManager.default.contents(atPath: Self.root + "/reports/\(name).json"))
        let report = try CrashReport.decode([UInt8](data))
        let crashNs = try #require(report.timestampNs)
        let crashTime = Date(timeIntervalSince1970: Double(crashNs / 1_000) / 1e6)
        let directory = temporaryDirectory("golden-\(name)")
        // The crashed launch's session, then the next start.
        _ = try SessionTracker(directory: directory, release: "com.example.app@2.4.1+311", environment: "production",
                               installationID: ReportingFixture.installationID, launchID: report.launchId,
                               now: crashTime.addingTimeInterval(-2.5), sessionID: "3b7e1b4c-0d2a-4f6e-9a8b-5c4d3e2f1a0b")
        let next = try SessionTracker(directory: directory, release: "com.example.app@2.4.1+311", environment: "production",
                                      installationID: ReportingFixture.installationID, now: crashTime.addingTimeInterval(10),
                                      sessionID: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d")
        let reporter = EventReporter(options: ReportingFixture.options(), installationID: ReportingFixture.installationID)
        let envelopes = reporter.crashEnvelopes(reports: [report], sessions: next, context: CrashEventContext(consecutiveLaunchCrashes: 1))
        #expect(envelopes.count == 1)
        let envelope = try #require(envelopes.first)
        #expect(envelope.items.map(\.type) == ["event", "session"])
        let event = try #require(try envelope.event())
        #expect(event.level == .fatal)
        // Symbolicated reports: the crashed thread's last (crashing) frames name functions.
        #expect(event.exception?.values.first?.stacktrace?.frames.contains { $0.function != nil } == true)
        try Self.check(envelope, "crash-\(name)")
    }

    @Test func incidentEnvelopes() throws {
        let reporter = EventReporter(options: ReportingFixture.options(), installationID: ReportingFixture.installationID,
                                     processInstance: "golden-process")
        let first = try #require(reporter.incidentEnvelope(ReportingFixture.incident(count: 1), converter: ReportingFixture.incidentConverter))
        try Self.check(first, "incident-first")
        #expect(reporter.incidentEnvelope(ReportingFixture.incident(count: 7, first: false), converter: ReportingFixture.incidentConverter) == nil)
        let repeated = try #require(reporter.incidentEnvelope(ReportingFixture.incident(count: 12, first: false),
                                                              converter: ReportingFixture.incidentConverter))
        try Self.check(repeated, "incident-repeated")
    }

    @Test func sessionEnvelopes() throws {
        let t0 = Date(timeIntervalSince1970: 1_795_323_000.125)
        let directory = temporaryDirectory("golden-sessions")
        let reporter = EventReporter(options: ReportingFixture.options(), installationID: ReportingFixture.installationID)
        let vanished = try SessionTracker(directory: directory, release: "com.example.app@2.4.1+311", environment: "production",
                                          installationID: ReportingFixture.installationID, now: t0,
                                          sessionID: "11111111-2222-4333-8444-555555555555")
        let start = try #require(vanished.initialUpdate())
        try Self.check(try #require(reporter.sessionEnvelope([start])), "session-start")
        let next = try SessionTracker(directory: directory, release: "com.example.app@2.4.1+311", environment: "production",
                                      installationID: ReportingFixture.installationID, now: t0.addingTimeInterval(3600),
                                      sessionID: "66666666-7777-4888-9999-aaaaaaaaaaaa")
        let abnormal = try #require(next.closePrevious(crash: nil))
        try Self.check(try #require(reporter.sessionEnvelope([abnormal])), "session-abnormal")
        _ = next.initialUpdate()
        next.recordError()
        let exited = try #require(next.end(.exited, now: t0.addingTimeInterval(3720.5)))
        try Self.check(try #require(reporter.sessionEnvelope([exited])), "session-exited")
    }

    @Test func clientReportEnvelope() throws {
        let reporter = EventReporter(options: ReportingFixture.options(), installationID: ReportingFixture.installationID)
        reporter.discards.record(reason: "sample_rate", category: "error", quantity: 3)
        reporter.discards.record(reason: "before_send", category: "error")
        reporter.discards.record(reason: "queue_overflow", category: "session", quantity: 2)
        let envelope = try #require(reporter.clientReportEnvelope(now: Date(timeIntervalSince1970: 1_795_323_100)))
        try Self.check(envelope, "client-report")
    }
}

/// Live crashes of every golden kind, converted as the next start would: the event names the
/// crashed function and reads back. With `CRASHSHIELD_INTEROP_DIR` set, the envelopes are also
/// written there for `scripts/check-sentry-interop.sh`.
@Suite struct LiveCrashEnvelopeTests {
    @Test(arguments: ["segv", "abort", "objc-exception", "swift-index", "inside-guard", "cxx-exception"])
    func liveCrashConverts(_ kind: String) throws {
        let directory = temporaryDirectory("live-\(kind)")
        var arguments = ["crash", kind, "--dir", directory]
        if kind == "inside-guard" { arguments.append("--guards") }
        let result = try runChild(Built.shield, arguments)
        #expect(result.termination != .timedOut)
        let report = try #require(loadReports(directory).first, "shield crash \(kind) left no report")
        let reporter = EventReporter(options: ReportingFixture.options(), installationID: ReportingFixture.installationID)
        let envelope = try #require(reporter.crashEnvelopes(reports: [report], sessions: nil).first)
        let event = try #require(try Envelope.parse(envelope.serialized()).event())
        let frames = try #require(event.exception?.values.first?.stacktrace?.frames)
        let expectedFunction = ["segv": "csc_crash_segv", "abort": "csc_crash_abort", "swift-index": "swiftIndex",
                                "objc-exception": "cs_capture_raise_uncaught_exception", "inside-guard": "",
                                "cxx-exception": "crashshield_test::checkout_total(int)"][kind]!
        if !expectedFunction.isEmpty {
            #expect(frames.contains { $0.function?.contains(expectedFunction) == true },
                    "\(kind): no frame names \(expectedFunction): \(frames.compactMap(\.function))")
        }
        #expect(frames.contains { $0.inApp == true })
        if kind == "inside-guard" {
            // The incident before the crash reads as the incident did, its
            // numbers in place (before: "index {} beyond count {}").
            let crumbs = event.breadcrumbs?.values.compactMap(\.message) ?? []
            #expect(crumbs.contains { $0.hasSuffix("objectAtIndex:]: index 7 beyond count 2") }, "\(crumbs)")
        }
        if kind == "cxx-exception" {
            #expect(event.exception?.values.first?.type == "std::out_of_range")
            #expect(event.exception?.values.first?.mechanism?.type == "cpp_exception")
        }
        if let out = ProcessInfo.processInfo.environment["CRASHSHIELD_INTEROP_DIR"] {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            try envelope.serialized().write(to: URL(fileURLWithPath: out + "/live-\(kind).envelope"))
        }
    }

    /// A crash's event carries the app's scope from its report: user, tags
    /// beside CrashShield's own, contexts, breadcrumbs before the crash's incidents. Before: the
    /// report held the scope, the event had user.id = the installation id and none of the rest.
    @Test func liveCrashCarriesTheAppsScope() throws {
        let directory = temporaryDirectory("live-scope")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try runChild(Built.shield, [
            "crash", "segv", "--dir", directory, "--user", "42", "--tag", "checkout_flow=v2", "--tag", "crashshield.kind=app's",
            "--context", "order.id=A-1", "--context", "app.screen=checkout", "--breadcrumb", "opened cart", "--breadcrumb", "tapped pay",
        ])
        #expect(result.termination == .signaled(SIGSEGV))
        let report = try #require(loadReports(directory).first, "shield crash segv left no report")
        let reporter = EventReporter(options: ReportingFixture.options(), installationID: ReportingFixture.installationID)
        let envelope = try #require(reporter.crashEnvelopes(reports: [report], sessions: nil).first)
        let event = try #require(try Envelope.parse(envelope.serialized()).event())
        #expect(event.user == SentryEvent.User(id: "42", username: "user-42", email: "42@example.com"))
        #expect(event.tags?["checkout_flow"] == "v2")
        #expect(event.tags?["crashshield.kind"] == "signal", "CrashShield's own tag wins over the app's of the same name")
        #expect(event.contexts?.named?["order"] == ["id": "A-1"])
        #expect(event.contexts?.named?["app"] == ["screen": "checkout"] && event.contexts?.app?.appName != nil)
        let crumbs = try #require(event.breadcrumbs?.values)
        #expect(crumbs.prefix(2).map(\.message) == ["opened cart", "tapped pay"])
        #expect(crumbs.prefix(2).allSatisfy { $0.category == "shield" && $0.level == .warning })
        if let out = ProcessInfo.processInfo.environment["CRASHSHIELD_INTEROP_DIR"] {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            try envelope.serialized().write(to: URL(fileURLWithPath: out + "/live-scope.envelope"))
        }
    }
}
