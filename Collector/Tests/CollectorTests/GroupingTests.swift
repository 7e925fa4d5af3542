@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

@Suite("Collector grouping")
struct GroupingTests {
    @Test func sameTypeAndInAppFramesGroupTogetherWhateverTheMessage() {
        let a = Grouping.group(Fixtures.exceptionEvent(value: "index 3"))
        let b = Grouping.group(Fixtures.exceptionEvent(value: "index 7"))
        #expect(a.hash == b.hash)
        #expect(a.algorithm == "v1")
        #expect(a.components == ["type:ValueError", "frame:parse", "frame:load", "frame:main"])
    }

    @Test func differentFramesOrTypesMakeDifferentIssues() {
        let base = Grouping.group(Fixtures.exceptionEvent())
        #expect(base.hash != Grouping.group(Fixtures.exceptionEvent(functions: ["main", "load", "save"])).hash)
        #expect(base.hash != Grouping.group(Fixtures.exceptionEvent(type: "KeyError")).hash)
    }

    @Test func syntheticExceptionTypesAreIgnored() {
        let sigsegv = Grouping.group(Fixtures.exceptionEvent(type: "SIGSEGV", synthetic: true))
        let sigbus = Grouping.group(Fixtures.exceptionEvent(type: "SIGBUS", synthetic: true))
        #expect(sigsegv.hash == sigbus.hash)
        #expect(!sigsegv.components.contains { $0.hasPrefix("type:") })
        #expect(sigsegv.title.hasPrefix("parse (SIGSEGV)"))
    }

    @Test func onlyInAppFramesCountWhenSomeAreMarked() {
        var event = Fixtures.exceptionEvent()
        guard case .object(var members) = event else { Issue.record("fixture is not an object"); return }
        members["exception"] = ["values": [[
            "type": "E",
            "stacktrace": ["frames": [
                ["function": "main", "in_app": true], ["function": "library_a", "in_app": false], ["function": "crash", "in_app": true],
            ]],
        ]]]
        event = .object(members)
        #expect(Grouping.group(event).components == ["type:E", "frame:crash", "frame:main"])
    }

    @Test func unsymbolicatedFramesUseModuleAndOffset() {
        func event(base: UInt64) -> JSONValue {
            [
                "event_id": .string(Fixtures.eventID()),
                "exception": ["values": [["type": "SIGSEGV", "mechanism": ["type": "signalhandler", "synthetic": true],
                                          "stacktrace": ["frames": [["instruction_addr": .string("0x" + String(base + 0x1234, radix: 16))]]]]]],
                "debug_meta": ["images": [["code_file": "/usr/bin/myapp", "image_addr": .string("0x" + String(base, radix: 16)), "image_size": 65536]]],
            ]
        }
        let first = Grouping.group(event(base: 0x5555_0000_0000))
        let second = Grouping.group(event(base: 0x7777_0000_0000))  // another run, another load address
        #expect(first.components == ["frame:myapp+0x1234"])
        #expect(first.hash == second.hash)
    }

    @Test func fingerprintReplacesOrExtendsTheDefault() {
        let custom = Grouping.group(Fixtures.exceptionEvent(fingerprint: ["database-down"]))
        let otherStack = Grouping.group(Fixtures.exceptionEvent(type: "KeyError", functions: ["x"], fingerprint: ["database-down"]))
        #expect(custom.hash == otherStack.hash)
        let extended = Grouping.group(Fixtures.exceptionEvent(fingerprint: ["{{ default }}", "tenant-a"]))
        #expect(extended.components == ["type:ValueError", "frame:parse", "frame:load", "frame:main", "fingerprint:tenant-a"])
        #expect(extended.hash != Grouping.group(Fixtures.exceptionEvent()).hash)
    }

    @Test func messagesGroupByTheirText() {
        let a = Grouping.group(["event_id": "a", "message": "disk full"])
        let b = Grouping.group(["event_id": "b", "logentry": ["formatted": "disk full"]])
        #expect(a.hash == b.hash)
        #expect(a.title == "disk full")
    }

    @Test func releasesOrderNumerically() {
        #expect(ReleaseOrder.isNewer("app@1.10.0", than: "app@1.9.3"))
        #expect(ReleaseOrder.isNewer("2.0.0+12", than: "2.0.0+9"))
        #expect(!ReleaseOrder.isNewer("1.0", than: "1.0.0"))
        #expect(ReleaseOrder.compare("app@1.0.0", "app@1.0.1") == .orderedAscending)
    }

    @Test func resolvedIssuesRegressOnlyForNewerReleases() async throws {
        try await Harness.run { harness in
            func send(_ release: String) async throws {
                #expect(try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent(release: release))).status == 200)
            }
            try await send("app@1.0.0")
            let issueID = try #require(try await harness.issues().first?["id"]?.intValue)
            let resolved = try await harness.api("/api/0/issues/\(issueID)", method: "PUT", json: ["status": "resolved_in_next_release"])
            #expect(resolved.status == 200)
            #expect(resolved.json?["resolved_in_release"]?.stringValue == "app@1.0.0")
            try await send("app@1.0.0")  // the release it was resolved in
            try await send("app@0.9.0")  // an older release still in use
            var issue = try await harness.api("/api/0/issues/\(issueID)").json
            #expect(issue?["status"]?.stringValue == "resolved_in_next_release")
            #expect(issue?["event_count"]?.intValue == 3)
            try await send("app@1.1.0")
            issue = try await harness.api("/api/0/issues/\(issueID)").json
            #expect(issue?["status"]?.stringValue == "regressed")
            #expect(issue?["last_release"]?.stringValue == "app@1.1.0")
            #expect(try await harness.issues().count == 1)
        }
    }

    @Test func usersAreCountedOncePerIssue() async throws {
        try await Harness.run { harness in
            for user in ["a", "b", "a", "a"] {
                _ = try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent(user: user)))
            }
            let issue = try #require(try await harness.issues().first)
            #expect(issue["event_count"]?.intValue == 4)
            #expect(issue["user_count"]?.intValue == 2)
        }
    }

    @Test func incidentEventsAppearPerGuardAndRelease() async throws {
        try await Harness.run { harness in
            func incident(_ guardName: String, _ release: String) -> JSONValue {
                ["event_id": .string(Fixtures.eventID()), "level": "warning", "release": .string(release), "tags": ["guard": .string(guardName)],
                 "exception": ["values": [["type": "NSRangeException", "mechanism": ["type": "crashshield", "handled": true],
                                           "stacktrace": ["frames": [["function": "-[Feed reload]", "in_app": true]]]]]]]
            }
            for (name, release) in [("container", "1.0"), ("container", "1.0"), ("container", "1.1"), ("zombie", "1.1")] {
                _ = try await harness.post(body: Fixtures.envelope(event: incident(name, release)))
            }
            _ = try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent()))  // a crash, not an incident
            let incidents = try await harness.api("/api/0/projects/\(harness.project.id)/incidents").json
            let rows = incidents?.arrayValue ?? []
            #expect(rows.count == 3)
            #expect(rows.first?["guard_name"]?.stringValue == "container")
            #expect(rows.first?["release"]?.stringValue == "1.0")
            #expect(rows.first?["count"]?.intValue == 2)
            #expect(rows.reduce(0) { $0 + ($1["count"]?.intValue ?? 0) } == 4)
        }
    }
}

@Suite("Collector timestamps")
struct TimestampTests {
    @Test func rfc3339TimestampsParseWithZonesAndFractions() throws {
        let reference = try #require(EventRecord.parseRFC3339("2026-11-23T06:00:00Z"))
        #expect(reference.timeIntervalSince1970 == 1_795_413_600)
        #expect(EventRecord.parseRFC3339("2026-11-23T06:00:00")?.timeIntervalSince1970 == 1_795_413_600)
        #expect(EventRecord.parseRFC3339("2026-11-23T08:00:00+02:00")?.timeIntervalSince1970 == 1_795_413_600)
        #expect(EventRecord.parseRFC3339("2026-11-23T06:00:00.250Z")?.timeIntervalSince1970 == 1_795_413_600.25)
        #expect(EventRecord.parseRFC3339("2000-02-29T00:00:00Z")?.timeIntervalSince1970 == 951_782_400)
        #expect(EventRecord.parseRFC3339("1969-12-31T23:59:59Z")?.timeIntervalSince1970 == -1)
        for bad in ["", "2026-11-23", "2026-13-01T00:00:00Z", "2026-11-23T06:00:00Zjunk", "2026-11-23T06:00:00.Z", "tomorrow"] {
            #expect(EventRecord.parseRFC3339(bad) == nil, "\(bad)")
        }
    }
}

/// Envelopes CrashShield's own SDK produced (the SDK's golden files, byte for byte): the collector
/// stores its crash as an issue naming the crashed function and its incident under prevented crashes.
@Suite("CrashShield SDK envelopes")
struct CrashShieldEnvelopeTests {
    static func golden(_ name: String) throws -> [UInt8] {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }  // Collector/Tests/CollectorTests/<file> → repository root
        return Array(try Data(contentsOf: url.appendingPathComponent("Tests/Golden/Reporting/envelopes/\(name).envelope")))
    }

    /// The golden file with its envelope header's `dsn` naming the test project (the files name
    /// an example DSN, and the collector refuses an envelope whose dsn names another project).
    static func addressed(_ bytes: [UInt8], to harness: Harness) throws -> [UInt8] {
        let end = try #require(bytes.firstIndex(of: 0x0A))
        guard case .object(var header) = try JSONValue.parse(Data(bytes[..<end])) else { throw CancellationError() }
        header["dsn"] = .string("http://\(harness.project.publicKey)@127.0.0.1/\(harness.project.id)")
        return Array(JSONValue.object(header).jsonData()) + bytes[end...]
    }

    @Test func aCrashAndAnIncidentFromTheSDKAreStoredAndShown() async throws {
        try await Harness.run { harness in
            #expect(try await harness.post(body: Self.addressed(Self.golden("crash-segv"), to: harness)).status == 200)
            #expect(try await harness.post(body: Self.addressed(Self.golden("incident-first"), to: harness)).status == 200)
            let issues = try await harness.issues()
            let crash = issues.first { ($0["level"]?.stringValue ?? "") == "fatal" || ($0["title"]?.stringValue ?? "").contains("SIGSEGV") }
            let crashText = "\(crash?["title"]?.stringValue ?? "") \(crash?["culprit"]?.stringValue ?? "")"
            #expect(crashText.contains("csc_crash_segv"), "crash issue: \(crashText)")
            let incidents = try await harness.api("/api/0/projects/\(harness.project.id)/incidents").json?.arrayValue ?? []
            #expect(incidents.map { $0["guard_name"]?.stringValue } == ["container"])
        }
    }
}
