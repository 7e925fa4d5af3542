@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

/// Grouping is versioned: an issue stored under algorithm `v1` must keep receiving the same
/// events, so the `v1` hash of a given event never changes. These tests pin the hash, title,
/// culprit and the facts ingest extracts for fixed events (hand-written ones covering each rule
/// of the algorithm, the benchmark's crash events and CrashShield's SDK golden envelopes) as they
/// were computed when the pins were written; a change to parsing or grouping that moves any of
/// them regroups stored issues.
@Suite("Collector grouping pins")
struct GroupingPinTests {
    /// One line per event: what grouping and extraction decided, in a stable text form.
    /// Both ways ingest can read an event (from a parsed tree, and straight from its bytes) must
    /// give the same record: the summary is of the tree's, after checking the bytes' one.
    static func summary(_ payload: Data) throws -> String {
        let json = try StrictJSON.parse(payload, rules: .lastKeyWins)
        let received = Date(timeIntervalSince1970: 1_800_000_000)
        let record = try EventRecord.extract(projectID: 1, payload: payload, json: json, fallbackEventID: "0123456789abcdef0123456789abcdef",
                                             received: received)
        let direct = try EventRecord.extract(projectID: 1, payload: payload, fallbackEventID: "0123456789abcdef0123456789abcdef",
                                             received: received, invalidJSONMessage: "not JSON")
        #expect(try EventFacts.read(payload) == EventFacts(json))
        #expect(direct.grouping == record.grouping && direct.eventID == record.eventID && direct.level == record.level
            && direct.platform == record.platform && direct.release == record.release && direct.environment == record.environment
            && direct.userKey == record.userKey && direct.incidentGuard == record.incidentGuard && direct.timestamp == record.timestamp)
        let grouping = record.grouping
        return [
            grouping.hash, grouping.algorithm, grouping.title, grouping.culprit, grouping.components.joined(separator: ","),
            record.eventID, record.level, record.platform ?? "-", record.release ?? "-", record.environment ?? "-",
            record.userKey ?? "-", record.incidentGuard ?? "-", String(record.timestamp.timeIntervalSince1970),
        ].joined(separator: " | ").replacingOccurrences(of: "\n", with: "\\n")
    }

    /// Hand-written events, one per grouping rule (exception type and in-app frames, synthetic
    /// types, unsymbolicated frames by image offset, fingerprints, messages, the older exception
    /// list form, no in-app marks, non-object entries, repeated keys, an incident).
    static let handWritten: [(name: String, json: String)] = [
        ("exception", #"{"event_id":"a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1","level":"error","platform":"python","release":"app@1.0.0","user":{"id":"u1"},"exception":{"values":[{"type":"ValueError","value":"bad value","mechanism":{"type":"generic","handled":false},"stacktrace":{"frames":[{"function":"main","in_app":true},{"function":"lib","in_app":false},{"function":"load","in_app":true},{"function":"parse","in_app":true}]}}]}}"#),
        ("synthetic-unsymbolicated", #"{"event_id":"b2b2b2b2-b2b2-b2b2-b2b2-b2b2b2b2b2b2","level":"fatal","timestamp":"2026-11-23T06:00:00.5+01:00","exception":{"values":[{"type":"SIGSEGV","mechanism":{"type":"signalhandler","synthetic":true},"stacktrace":{"frames":[{"instruction_addr":"0x555500001000"},{"instruction_addr":"0x555500001234","package":"/usr/lib/libx.so"},{"instruction_addr":93824992235576,"image_addr":"0x555500000000"},{"instruction_addr":"0x7fff00000010"},{"function":"<unknown>","raw_function":"_Z3foov","instruction_addr":"0x1"}]}}]},"debug_meta":{"images":[{"code_file":"/usr/bin/myapp","image_addr":"0x555500000000","image_size":65536},"not an image",{"code_file":"C:\\app\\other.dll","image_addr":"0x7fff00000000","image_size":4096}]}}"#),
        ("fingerprint-default", #"{"event_id":"c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3","fingerprint":["{{ default }}","tenant-a",7,{"x":1}],"exception":{"values":[{"type":"KeyError","value":"k","stacktrace":{"frames":[{"function":"f","in_app":true}]}}]}}"#),
        ("fingerprint-only", #"{"event_id":"c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4","fingerprint":["database-down"],"message":"connection refused","culprit":"db.connect"}"#),
        ("message", #"{"event_id":"d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4","message":"disk full\nsecond line","transaction":"/upload","user":{"email":"a@b.c"},"environment":"","release":""}"#),
        ("logentry", #"{"event_id":"e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5","logentry":{"message":"retry %s","formatted":"retry 3"},"message":{"formatted":"ignored"},"user":{"id":"","username":"bob"},"timestamp":1795413600.25}"#),
        ("old-list-form-no-in-app", #"{"event_id":"f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6","exception":[{"type":"E1","stacktrace":{"frames":[{"function":"a"},{"function":"b"},{"function":"c"},{"function":"d"},{"function":"e"},{"function":"f"},{"function":"g"}]}},"not an exception",{"type":"","value":"empty type","stacktrace":{"frames":[{"function":"h","in_app":false}]}}],"user":{"id":42}}"#),
        ("repeated-keys", #"{"event_id":"0707070707070707070707070707070707","event_id":"07070707070707070707070707070707","exception":{"values":[{"type":"First"}]},"exception":{"values":[{"type":"Second","type":"Last","stacktrace":{"frames":[{"function":"x","function":"y","in_app":true}]}}]}}"#),
        ("incident", #"{"event_id":"08080808080808080808080808080808","level":"WARNING","tags":{"guard":"container","crashshield.guard":"zombie"},"exception":{"values":[{"type":"NSRangeException","value":"index 3 beyond bounds","mechanism":{"type":"crashshield","handled":true},"stacktrace":{"frames":[{"function":"-[Feed reload]","in_app":true}]}}]}}"#),
        ("incident-mechanism", #"{"event_id":"09090909090909090909090909090909","level":"warning","exception":{"values":[{"type":"container","mechanism":{"type":"crashshield.guard","handled":true}},{"type":"Other","mechanism":{"data":{"guard":"kvo"}}}]}}"#),
        ("no-exception-no-message", #"{"event_id":"10101010101010101010101010101010","culprit":"somewhere"}"#),
        ("long-title", #"{"event_id":"11111111111111111111111111111111","exception":{"values":[{"type":"T","value":"\#(String(repeating: "é", count: 250))"}]}}"#),
    ]

    static let handWrittenPins: [String: String] = [
        "exception":
            #"9b990176b7354ef12c341f350939cc68e72bfc6df4ba2c0a7f46198ba4763493 | v1 | ValueError: bad value | parse | type:ValueError,frame:parse,frame:load,frame:main | a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1 | error | python | app@1.0.0 | - | u1 | - | 1800000000.0"#,
        "synthetic-unsymbolicated":
            #"3c49a1c3daf785e16baba98fa58ece782dd11a0d67ae8a34ee217e67497ba10d | v1 | _Z3foov (SIGSEGV) | _Z3foov | frame:_Z3foov,frame:C:\app\other.dll+0x10,frame:?+0x55555038,frame:libx.so+0x1234,frame:myapp+0x1000 | b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2 | fatal | - | - | - | - | - | 1795410000.5"#,
        "fingerprint-default":
            #"40978e9fb97b54099ca79f1b9f8168855d49d7db1057c2e410ce0f54b3cc2e48 | v1 | KeyError: k | f | type:KeyError,frame:f,fingerprint:tenant-a,fingerprint:7 | c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3 | error | - | - | - | - | - | 1800000000.0"#,
        "fingerprint-only":
            #"d9aaf3f5d66adedb993d82a5a4e6bba8eecce45a37acf85ffc988686bd4da337 | v1 | connection refused | db.connect | fingerprint:database-down | c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4 | error | - | - | - | - | - | 1800000000.0"#,
        "message":
            #"7e975e608e9ad254eb50499de2861056f5b8128fdfe6924a6cdc3ab636b64eda | v1 | disk full | /upload | message:disk full\nsecond line | d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4 | error | - | - | - | a@b.c | - | 1800000000.0"#,
        "logentry":
            #"313a6bbd3d4bca967d63aabe6cef65441cc495686c8b22099f3bdf46ca86eb65 | v1 | retry 3 |  | message:retry 3 | e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5 | error | - | - | - | bob | - | 1795413600.25"#,
        "old-list-form-no-in-app":
            #"1877c76e9534651b9bb9c842d8b33ebd7387752887261a3aff282ab0545ed44b | v1 | : empty type | h | type:E1,frame:g,frame:f,frame:e,frame:d,frame:c,frame:h | f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6 | error | - | - | - | 42 | - | 1800000000.0"#,
        "repeated-keys":
            #"d14a1a4d94954c078458a3bdb91d7b1b9f46e8730cd3f4d94d201a0af331b12b | v1 | Last | y | type:Last,frame:y | 07070707070707070707070707070707 | error | - | - | - | - | - | 1800000000.0"#,
        "incident":
            #"f4c89f90570092f8c94d3d326829cd60c9d43248ed84667b5ff0b72a5e3c403f | v1 | NSRangeException: index 3 beyond bounds | -[Feed reload] | type:NSRangeException,frame:-[Feed reload] | 08080808080808080808080808080808 | warning | - | - | - | - | zombie | 1800000000.0"#,
        "incident-mechanism":
            #"41435c9bbe44e9f21ae25b43fa1a0ae841d5f93f2301033f28f7557191b961ee | v1 | Other |  | type:container,type:Other | 09090909090909090909090909090909 | warning | - | - | - | - | container | 1800000000.0"#,
        "no-exception-no-message":
            #"43f94908089fe568ea7a775e591cef77cf22f63455d9c61c02ecce2799912e66 | v1 | <untitled event> | somewhere | event:10101010101010101010101010101010 | 10101010101010101010101010101010 | error | - | - | - | - | - | 1800000000.0"#,
        "long-title":
            #"ff466ee737c95598cd21deb75c2484242c7329f723cfa1c5c293512a3b3fb5e7 | v1 | T: éééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé… |  | type:T | 11111111111111111111111111111111 | error | - | - | - | - | - | 1800000000.0"#,
    ]

    @Test func handWrittenEventsKeepTheirGrouping() throws {
        for (name, json) in Self.handWritten {
            let line = try Self.summary(Data(json.utf8))
            #expect(line == Self.handWrittenPins[name], "\(name): \(line)")
        }
    }

    /// The benchmark's events: every one of its 50 stacks.
    @Test func benchmarkEventsKeepTheirGrouping() throws {
        var lines: [String] = []
        for envelope in benchmarkEnvelopes(count: 50) {
            let parsed = try Envelope.parse(envelope)
            let event = try #require(parsed.items.first { $0.type == "event" })
            // The benchmark stamps events with the current time: leave the timestamp out.
            lines.append(try Self.summary(event.payload).split(separator: " | ").dropLast().joined(separator: " | "))
        }
        let digest = CryptoSupport.sha256Hex(Data(lines.joined(separator: "\n").utf8))
        #expect(lines.first == #"66525c8dbd757ae9da9ec4d44278b06ad70cc7699e1105fe0042e826a810251b | v1 | App.Module0.function24 (SIGSEGV): Segmentation fault | App.Module0.function24 | frame:App.Module0.function24,frame:App.Module0.function23,frame:App.Module0.function22,frame:App.Module0.function21,frame:App.Module0.function20 | 00000000000000000000000000000000 | fatal | native | app@2.0.0 | production | user-0 | -"#,
                "first: \(lines.first ?? "")")
        #expect(digest == "1b137c049d66db08fec79ba592e66bdefcac0a9878a703e90ddcdcdc18aadcc5", "digest: \(digest)")
    }

    /// CrashShield's SDK golden envelopes (the event items of each).
    @Test func sdkGoldenEventsKeepTheirGrouping() throws {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        let directory = url.appendingPathComponent("Tests/Golden/Reporting/envelopes")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".envelope") }.sorted()
        var lines: [String] = []
        for name in names {
            let envelope = try Envelope.parse(Data(contentsOf: directory.appendingPathComponent(name)))
            for item in envelope.items where item.type == "event" { lines.append(name + ": " + (try Self.summary(item.payload))) }
        }
        #expect(lines.count == 7, "\(lines.count) golden events")
        let digest = CryptoSupport.sha256Hex(Data(lines.joined(separator: "\n").utf8))
        #expect(digest == "a93c379365173f4b2969b1c07ccd194fc8ce023370fe296e7c326257f9c39e0b", "digest: \(digest)\n\(lines.joined(separator: "\n"))")
    }
}
