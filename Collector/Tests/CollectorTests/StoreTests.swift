@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Testing

@Suite("Collector storage")
struct StoreTests {
    static func record(project: Int64, id: String = Fixtures.eventID(), release: String? = "1.0") throws -> EventRecord {
        let json = Fixtures.exceptionEvent(id: id, release: release)
        return try EventRecord.extract(projectID: project, payload: json.jsonData(), json: json, fallbackEventID: nil, received: Date())
    }

    @Test func migrationsApplyOnceAndDataSurvivesReopening() async throws {
        let fresh = try await TestDatabase.fresh()
        let first = try await TestDatabase.open(fresh.database)
        #expect(first.databaseKind == (TestDatabase.isPostgres ? "postgres" : "sqlite"))
        try await first.migrate()
        try await first.migrate()
        #expect(try await first.appliedMigrations() == SQLStore.migrations.map(\.version))
        let project = try await first.createProject(name: "p")
        let id = Fixtures.eventID()
        #expect(try await first.insertEvent(Self.record(project: project.id, id: id)) != .duplicate)
        try await first.close()

        let second = try await TestDatabase.open(fresh.database)
        try await second.migrate()
        #expect(try await second.projects().map(\.publicKey) == [project.publicKey])
        #expect(try await second.eventPayload(projectID: project.id, eventID: id) != nil)
        #expect(try await second.insertEvent(Self.record(project: project.id, id: id)) == .duplicate)
        try await second.close()
        await fresh.drop()
    }

    /// Two connections stand for two collector processes sharing one database.
    @Test func twoWritersIngestingTheSameStreamStoreEveryEventOnceWithExactCounts() async throws {
        let fresh = try await TestDatabase.fresh()
        let first = try await TestDatabase.open(fresh.database)
        try await first.migrate()
        let second = try await TestDatabase.open(fresh.database)
        try await second.migrate()
        let project = try await first.createProject(name: "p")
        let ids = (0..<40).map { _ in Fixtures.eventID() }
        let users = ["a", "b", "c"]
        let outcomes = try await withThrowingTaskGroup(of: EventInsertOutcome.self) { group in
            for (index, id) in ids.enumerated() {
                for store in [first, second] {  // every event through both writers, concurrently
                    group.addTask {
                        let json = Fixtures.exceptionEvent(id: id, release: "1.\(index % 4)", user: users[index % 3])
                        let record = try EventRecord.extract(projectID: project.id, payload: json.jsonData(), json: json,
                                                             fallbackEventID: nil, received: Date())
                        return try await store.insertEvent(record)
                    }
                }
            }
            return try await group.reduce(into: [EventInsertOutcome]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == .duplicate }.count == 40)
        let issues = try await second.issues(projectID: project.id)
        #expect(issues.count == 1)
        #expect(issues.first?.eventCount == 40)
        #expect(issues.first?.userCount == 3)
        #expect(issues.first?.lastRelease == "1.3")
        #expect(try await first.events(issueID: try #require(issues.first?.id), limit: 100).count == 40)
        try await first.close()
        try await second.close()
        await fresh.drop()
    }

    /// Batches make statements whose text varies with their size; SQLite's statement cache must
    /// stay bounded while every statement still runs.
    @Test func manyDistinctStatementsRunAndTheStatementCacheStaysBounded() async throws {
        let fresh = try await TestDatabase.fresh()
        let store = try await TestDatabase.open(fresh.database)
        let count = SQLiteBackend.maxCachedStatements * 2 + 10
        for index in 0..<count {
            let sql = "SELECT " + Array(repeating: "CAST(? AS BIGINT)", count: index % 40 + 1).joined(separator: " + ") + " + \(index) AS n"
            let rows = try await store.query(sql, Array(repeating: .int(1), count: index % 40 + 1))
            #expect(rows.first?.int("n") == Int64(index % 40 + 1 + index))
        }
        if let sqlite = store.backend as? SQLiteBackend {
            #expect(sqlite.cachedStatementCount <= SQLiteBackend.maxCachedStatements)
        }
        try await store.close()
        await fresh.drop()
    }

    @Test func retentionDeletesOldEventsAndKeepsIssueCounts() async throws {
        let fresh = try await TestDatabase.fresh()
        let store = try await TestDatabase.open(fresh.database)
        try await store.migrate()
        let project = try await store.createProject(name: "p")
        let json = Fixtures.exceptionEvent()
        let old = try EventRecord.extract(projectID: project.id, payload: json.jsonData(), json: json, fallbackEventID: nil,
                                          received: Date().addingTimeInterval(-10 * 86_400))
        _ = try await store.insertEvent(old)
        _ = try await store.insertEvent(Self.record(project: project.id))
        #expect(try await store.deleteData(receivedBefore: Date().addingTimeInterval(-86_400)) == 1)
        let issue = try #require(try await store.issues(projectID: project.id).first)
        #expect(issue.eventCount == 2)
        #expect(try await store.events(issueID: issue.id, limit: 10).count == 1)
        try await store.close()
        await fresh.drop()
    }

    @Test func inflaterAcceptsRawDeflateAndRefusesGarbage() throws {
        let text = Array(String(repeating: "envelope ", count: 100).utf8)
        let zlibWrapped = Fixtures.compress(text, gzip: false)
        // Raw deflate: the zlib stream without its 2-byte header and 4-byte checksum.
        let raw = Array(zlibWrapped.dropFirst(2).dropLast(4))
        let inflater = try Inflater(format: .deflate, limit: 10_000)
        try inflater.feed(Array(raw.prefix(5)))
        try inflater.feed(Array(raw.dropFirst(5)))
        #expect(try inflater.finish() == text)

        let garbage = try Inflater(format: .gzip, limit: 10_000)
        #expect(throws: CollectorError.self) {
            try garbage.feed(Array("definitely not gzip".utf8))
            _ = try garbage.finish()
        }
        let small = try Inflater(format: .gzip, limit: 100)
        #expect(throws: CollectorError.self) { try small.feed(Fixtures.compress(text, gzip: true)) }
    }

    @Test func sentryAuthHeaderParsing() {
        #expect(SentryAuth.key(fromHeader: "Sentry sentry_version=7, sentry_client=x/1, sentry_key=abc") == "abc")
        #expect(SentryAuth.key(fromHeader: "sentry_key=\"def\",sentry_version=7") == "def")
        #expect(SentryAuth.key(fromHeader: "Sentry sentry_version=7") == nil)
        #expect(SentryAuth.normalizedKey("0123456789ABCDEF-0123456789abcdef") == "0123456789abcdef0123456789abcdef")
        #expect(SentryAuth.normalizedKey("short") == nil)
        #expect(SentryAuth.key(fromHeader: "  sentry\tsentry_key=x") == nil)  // "Sentry" must be followed by a space
        #expect(SentryAuth.key(fromHeader: "\tSENTRY sentry_version=7,\tSentry_Key = \"ghi\" ") == "ghi")
        #expect(SentryAuth.key(fromHeader: "Sentry sentry_key=") == nil)
        #expect(SentryAuth.normalizedKey("0123456789abcdef0123456789abcdef0") == nil)  // 33 digits
        #expect(SentryAuth.normalizedKey("0123456789abcdef0123456789abcdeg") == nil)
        #expect(SentryAuth.normalizedKey("０123456789abcdef0123456789abcde") == nil)  // a fullwidth digit is not ASCII hex
    }

    /// `SentryAuth`'s one byte-wise parser answers what a Character-wise reading of the rules
    /// (`characterReference`, the parser it replaced) answers, on ASCII edge cases (empty pieces,
    /// repeated separators, quotes, the `maxSplits` of `name=value`) and on non-ASCII values whose
    /// separators are not followed by combining marks.
    @Test(arguments: [
        "Sentry sentry_version=7, sentry_client=x/1, sentry_key=abc", "sentry_key=\"def\",sentry_version=7",
        "  sentry\tsentry_key=x", "\tSENTRY sentry_version=7,\tSentry_Key = \"ghi\" ", "Sentry sentry_key=",
        "Sentry ,,sentry_key=a,,", "sentry_key==b", "=sentry_key=c", "sentry_key=d=e", "sentry_key=\"\"", "sentry_key=\"",
        "sentry_key=\" \"", "Sentry  sentry_key =  f ", "SENTRY_KEY=G", "sentry_keyx=h, sentry_key=i", "sentry_key", "Sentry",
        "Sentry ", "", " , = , ", "sentry sentry sentry_key=j", "sentry_key=k,sentry_key=l", "sentry_key=\tm\t",
        "x=1,  sentry_key = \"n, o\"", "sentry_key=p\r\n",
        "Sentry sentry_client=café/1, sentry_key=abc", "Sentry sentry_key=ключ", "Sentry sentry_key=\"ключ\" ",
        "Sentry sentry_kéy=q, sentry_key=r", "Sentry sentry_key=\u{FFFD}s", "sentry_key=日本,x=1",
    ])
    func sentryAuthParseMatchesTheCharacterReading(header: String) {
        #expect(SentryAuth.key(fromHeader: header) == Self.characterReference(header))
    }

    /// The rules of `SentryAuth.key(fromHeader:)` read on Characters (the collector's former
    /// second parser, kept here as the test's reference).
    static func characterReference(_ value: String) -> String? {
        func trimmed(_ text: Substring) -> Substring {
            var result = text
            while let first = result.first, first == " " || first == "\t" { result = result.dropFirst() }
            while let last = result.last, last == " " || last == "\t" { result = result.dropLast() }
            return result
        }
        var text = trimmed(Substring(value))
        if text.utf8.count >= 7, text.prefix(7).lowercased() == "sentry " { text = text.dropFirst(7) }
        for part in text.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            let name = trimmed(pair[0])
            var value = trimmed(pair[1])
            if value.utf8.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = value.dropFirst().dropLast() }
            if name.utf8.count == 10, name.lowercased() == "sentry_key", !value.isEmpty { return String(value) }
        }
        return nil
    }

    /// A request to the envelope endpoint with `fields` and `query`, as the router hands it over.
    static func request(_ fields: [(String, String)], query: String = "") -> Request {
        var head = HTTPRequest(method: .post, scheme: "http", authority: "127.0.0.1", path: "/api/1/envelope/" + query)
        for (name, value) in fields { head.headerFields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return Request(head: head, body: RequestBody(buffer: ByteBuffer()))
    }

    /// The same credentials through every entry point (`X-Sentry-Auth`, `Authorization: Sentry`,
    /// `?sentry_key=`) give the same key, with odd spacing, quoting, case and non-ASCII bytes; a
    /// comma followed by a combining mark still separates (HTTP splits bytes, not graphemes).
    @Test func everyEntryPointReadsTheSameKey() {
        let cases: [(pairs: String, key: String?)] = [
            ("sentry_version=7, sentry_client=x/1.0, sentry_key=0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),
            ("\t sentry_version=7 ,\tSENTRY_KEY =\t\"AbC\"  ", "AbC"),
            ("sentry_key=\"a, b\"", "\"a"),
            ("sentry_client=café/1,sentry_key=ключ", "ключ"),
            ("sentry_key=\"日本\" , sentry_key=later", "日本"),
            ("sentry_key=x,\u{301}sentry_key=y", "x"),
            ("sentry_client=a,\u{301}, sentry_key=z", "z"),
            ("sentry_key=\u{FFFD}\u{FFFD}", "\u{FFFD}\u{FFFD}"),
            ("sentry_key=, sentry_key=\"\"", nil),
            ("sentry_version=7", nil),
        ]
        for (pairs, key) in cases {
            #expect(CollectorRoutes.clientKey(Self.request([("X-Sentry-Auth", "Sentry " + pairs)])) == key, "X-Sentry-Auth: Sentry \(pairs)")
            #expect(CollectorRoutes.clientKey(Self.request([("X-Sentry-Auth", pairs)])) == key, "X-Sentry-Auth: \(pairs)")
            #expect(CollectorRoutes.clientKey(Self.request([("Authorization", "Sentry " + pairs)])) == key, "Authorization: Sentry \(pairs)")
            #expect(CollectorRoutes.clientKey(Self.request([("Authorization", " sEnTrY " + pairs)])) == key, "Authorization: sEnTrY \(pairs)")
            // Another scheme is no Sentry credential.
            #expect(CollectorRoutes.clientKey(Self.request([("Authorization", "Bearer " + pairs)])) == nil, "Authorization: Bearer \(pairs)")
            #expect(CollectorRoutes.clientKey(Self.request([("Authorization", pairs)])) == nil, "Authorization: \(pairs)")
            if let key {
                let asciiAlphanumerics = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
                let encoded = key.addingPercentEncoding(withAllowedCharacters: asciiAlphanumerics)!
                #expect(CollectorRoutes.clientKey(Self.request([], query: "?sentry_version=7&sentry_key=" + encoded)) == key, "?sentry_key=\(key)")
            }
        }
        #expect(CollectorRoutes.clientKey(Self.request([], query: "?sentry_key=")) == nil)
        // X-Sentry-Auth is read first, then Authorization, then the query.
        let both = Self.request([("Authorization", "Sentry sentry_key=second"), ("X-Sentry-Auth", "Sentry sentry_key=first")], query: "?sentry_key=third")
        #expect(CollectorRoutes.clientKey(both) == "first")
        #expect(CollectorRoutes.clientKey(Self.request([("Authorization", "Sentry sentry_key=second")], query: "?sentry_key=third")) == "second")
    }

    @Test func sentryAuthNonASCIIHeaderParsing() {
        #expect(SentryAuth.key(fromHeader: "Sentry sentry_client=café/1, sentry_key=abc") == "abc")
        #expect(SentryAuth.key(fromHeader: "Sentry sentry_key=ключ") == "ключ")
    }
}
