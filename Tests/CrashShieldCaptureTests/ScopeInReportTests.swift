import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// The app's scope (user, tags, contexts, its own breadcrumbs) reaches crash
/// reports. Every crash is a child process (`shield crash`) with a timeout.
@Suite struct ScopeInReportTests {
    /// The only report file of `directory`, parsed strictly (no repair) and checked against the
    /// schema's keys, and the same report decoded.
    private func strictReport(_ directory: String) throws -> (raw: [String: Any], report: CrashReport) {
        let raw = try HostileCrashTests().rawReport(directory)
        let report = try #require(loadReports(directory, symbolicate: false).first)
        return (raw, report)
    }

    @Test func reportCarriesUserTagsContextsAndBreadcrumbs() throws {
        let directory = temporaryDirectory("scope-report")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let started = Date()
        let crash = try runChild(Built.shield, [
            "crash", "segv", "--dir", directory, "--user", "42", "--tag", "environment=staging", "--tag", "quote=say \"hi\"",
            "--context", "app.screen=checkout", "--context", "app.build=1187", "--breadcrumb", "opened cart",
            "--breadcrumb", "tapped pay 🔥",
        ])
        #expect(crash.termination == .signaled(SIGSEGV))
        let (raw, report) = try strictReport(directory)
        #expect(report.isComplete)
        let scope = try #require(report.scope)
        #expect(scope.user == CrashScope.User(id: "42", username: "user-42", email: "42@example.com"))
        #expect(scope.tags == ["environment": "staging", "quote": "say \"hi\""])
        #expect(scope.contexts == ["app": ["screen": "checkout", "build": "1187"]])
        #expect(scope.breadcrumbs.map(\.message) == ["opened cart", "tapped pay 🔥"])
        #expect(scope.breadcrumbs.allSatisfy { $0.level == .warning && $0.category == "shield" && $0.data["index"] != nil })
        for crumb in scope.breadcrumbs {
            #expect(crumb.timestamp >= started.addingTimeInterval(-1) && crumb.timestamp <= Date())
        }
        #expect(scope.droppedBreadcrumbs == 0 && scope.droppedContexts == 0 && scope.droppedTags == 0)
        // In the file: the user's ip_address is absent, breadcrumbs carry timestamp_ns.
        let rawScope = try #require(raw["scope"] as? [String: Any])
        let rawUser = try #require(rawScope["user"] as? [String: Any])
        #expect(Set(rawUser.keys) == ["id", "username", "email"])
        let rawCrumb = try #require((rawScope["breadcrumbs"] as? [[String: Any]])?.first)
        #expect((rawCrumb["timestamp_ns"] as? NSNumber)?.uint64Value ?? 0 > 0)
    }

    /// After more breadcrumbs than the scope keeps, a crash report carries exactly the last
    /// `maxBreadcrumbs` (100), oldest first, the last one added included: the crash handler sees
    /// the scope of the latest change.
    @Test func reportAfterManyBreadcrumbsHasTheLastHundred() throws {
        let directory = temporaryDirectory("scope-many-breadcrumbs")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let added = 2 * CrashScope.maxBreadcrumbs + 37
        let crumbs = (0..<added).flatMap { ["--breadcrumb", "crumb \($0)"] }
        let crash = try runChild(Built.shield, ["crash", "segv", "--dir", directory] + crumbs)
        #expect(crash.termination == .signaled(SIGSEGV))
        let (_, report) = try strictReport(directory)
        let scope = try #require(report.scope)
        #expect(scope.breadcrumbs.map(\.message) == (added - CrashScope.maxBreadcrumbs..<added).map { "crumb \($0)" })
        #expect(scope.droppedBreadcrumbs == 0, "the last hundred fit the report's bound")
    }

    @Test func reportWithoutScopeHasNoScopeKey() throws {
        let directory = temporaryDirectory("scope-none")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crash = try runChild(Built.shield, ["crash", "segv", "--dir", directory])
        #expect(crash.termination == .signaled(SIGSEGV))
        let (raw, report) = try strictReport(directory)
        #expect(raw["scope"] == nil)
        #expect(report.scope == nil)
        #expect(raw["incidents"] != nil)
    }

    /// A scope far beyond the report's bound: the report is complete, strict JSON, its scope
    /// within the bound, with the newest breadcrumbs kept, older ones counted as dropped, and the
    /// user whole.
    @Test func oversizedScopeIsCutToFitAndTheReportStaysValid() throws {
        let directory = temporaryDirectory("scope-oversize")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crash = try runChild(Built.shield, ["crash", "segv", "--dir", directory, "--oversize-scope"])
        #expect(crash.termination == .signaled(SIGSEGV))
        let (raw, report) = try strictReport(directory)
        #expect(report.isComplete)
        let rawScope = try #require(raw["scope"])
        let scopeBytes = try JSONSerialization.data(withJSONObject: rawScope)
        // Re-serialised by Foundation, which escapes "/" and may differ in spacing: an upper
        // estimate only, so measure the file's own text too.
        let file = try #require(CrashReportStore(directory: directory).reportFiles().first)
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let start = try #require(text.range(of: "\"scope\":"))
        let end = try #require(text.range(of: ",\"guards\":") ?? text.range(of: ",\"process\":"))
        let fileScopeBytes = text[start.upperBound..<end.lowerBound].utf8.count
        #expect(fileScopeBytes <= CrashScope.maxReportBytes, "scope of \(fileScopeBytes) bytes (re-serialised \(scopeBytes.count))")
        #expect(fileScopeBytes > CrashScope.maxReportBytes / 2)

        let scope = try #require(report.scope)
        let value = String(repeating: "\"\\\u{01}é🔥", count: 40)
        let bounded = ScopeText.value(value)
        #expect(scope.user == CrashScope.User(id: bounded, username: bounded, email: bounded, ipAddress: bounded))
        #expect(scope.droppedBreadcrumbs > 0)
        #expect(scope.droppedBreadcrumbs + scope.breadcrumbs.count == CrashScope.maxBreadcrumbs)
        // Newest kept: the fill adds breadcrumbs 0..<120, the ring keeps 20..<120.
        let numbers = scope.breadcrumbs.compactMap { Int($0.message.split(separator: " ")[1]) }
        #expect(numbers.last == CrashScope.maxBreadcrumbs + 19)
        #expect(numbers == Array((CrashScope.maxBreadcrumbs + 20 - numbers.count)..<(CrashScope.maxBreadcrumbs + 20)))
        // Breadcrumbs go first: user, tags and contexts fit once enough of them are gone.
        #expect(!scope.breadcrumbs.isEmpty)
        #expect(scope.droppedContexts == 0 && scope.droppedTags == 0)
        #expect(scope.tags.count == CrashScope.maxTags && scope.contexts.count == 3)
    }

    /// Threads change the scope without pause while the main thread crashes: the report is
    /// strict JSON, complete, and its scope decodes (it is one whole published text).
    @Test(arguments: 1...3)
    func scopeChangingOnOtherThreadsDuringACrashLeavesAValidReport(_ run: Int) throws {
        let directory = temporaryDirectory("scope-churn-\(run)")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crash = try runChild(Built.shield, ["crash", "segv", "--dir", directory, "--scope-churn", "4"])
        #expect(crash.termination == .signaled(SIGSEGV))
        let (raw, report) = try strictReport(directory)
        #expect(report.isComplete)
        #expect(report.crash?.signal == SIGSEGV)
        if let rawScope = raw["scope"] as? [String: Any] {
            // A whole text: every breadcrumb it has decodes, and the churn's keys are consistent.
            let crumbs = rawScope["breadcrumbs"] as? [[String: Any]] ?? []
            #expect(report.scope?.breadcrumbs.count == crumbs.count)
            for crumb in crumbs { #expect((crumb["message"] as? String)?.hasPrefix("thread ") == true) }
            if let context = (rawScope["contexts"] as? [String: Any])?["churn"] as? [String: String] {
                #expect(Set(context.keys) == ["thread", "step"])
            }
        }
    }
}

/// The scope's bounds and its report text, on `ScopeState` values (the process-wide scope is
/// tested in the CrashShield tests' serialized suite, where incidents read it).
@Suite struct ScopeStateTests {
    private func parsed(_ state: ScopeState) throws -> [String: Any] {
        let bytes = state.composeReportJSON()
        return try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test func emptyScopePublishesNothing() {
        #expect(ScopeState().composeReportJSON().isEmpty)
        var state = ScopeState()
        state.setTag("a", "b")
        state.removeTag("a")
        state.setUser(CrashScope.User())
        #expect(state.composeReportJSON().isEmpty)
    }

    @Test func textIsCutAtAWholeScalarWithinTheByteBound() {
        #expect(ScopeText.bounded("abc", bytes: 3) == "abc")
        #expect(ScopeText.bounded("abcd", bytes: 3) == "abc")
        // "é" is 2 bytes, "🔥" 4: a scalar that does not fit whole is left out.
        #expect(ScopeText.bounded("aé", bytes: 2) == "a")
        #expect(ScopeText.bounded("ab🔥", bytes: 5) == "ab")
        #expect(ScopeText.key(String(repeating: "k", count: 100)).utf8.count == CrashScope.maxKeyBytes)
        #expect(ScopeText.value(String(repeating: "é", count: 200)).utf8.count == CrashScope.maxValueBytes)
    }

    @Test func tagAndContextLimitsIgnoreNewKeysButReplaceExistingOnes() throws {
        var state = ScopeState()
        for index in 0..<(CrashScope.maxTags + 5) { state.setTag("tag-\(index)", "v") }
        #expect(state.tags.count == CrashScope.maxTags)
        #expect(state.tags["tag-\(CrashScope.maxTags)"] == nil)
        state.setTag("tag-0", "replaced")
        #expect(state.tags["tag-0"] == "replaced")
        state.setTag("", "ignored")
        #expect(state.tags[""] == nil)

        for index in 0..<(CrashScope.maxContexts + 2) { state.setContext("context-\(index)", ["k": "v"]) }
        #expect(state.contexts.count == CrashScope.maxContexts)
        let many = Dictionary(uniqueKeysWithValues: (0..<30).map { (String(format: "key-%02d", $0), "v") })
        state.setContext("context-0", many)
        // The first entries in key order are kept.
        #expect(state.contexts["context-0"]?.keys.sorted() == (0..<CrashScope.maxContextEntries).map { String(format: "key-%02d", $0) })
        state.setContext("context-0", nil)
        #expect(state.contexts["context-0"] == nil)
        #expect(try parsed(state)["contexts"] != nil)
    }

    @Test func breadcrumbRingDropsTheOldest() throws {
        var state = ScopeState()
        for index in 0..<(CrashScope.maxBreadcrumbs + 7) {
            state.addBreadcrumb(CrashScope.Breadcrumb(message: "crumb \(index)"))
        }
        #expect(state.breadcrumbs.count == CrashScope.maxBreadcrumbs)
        #expect(state.breadcrumbs.first?.message == "crumb 7")
        #expect(state.breadcrumbs.last?.message == "crumb \(CrashScope.maxBreadcrumbs + 6)")
        #expect(state.snapshot(lastBreadcrumbs: 3).breadcrumbs.map(\.message) == (104...106).map { "crumb \($0)" })
        let crumbs = try #require(try parsed(state)["breadcrumbs"] as? [[String: Any]])
        #expect(crumbs.count == CrashScope.maxBreadcrumbs)
        state.clearBreadcrumbs()
        #expect(state.breadcrumbs.isEmpty)
    }

    /// Control characters, quotes, backslashes and multi-byte text survive the trip through the
    /// report text and the report decoder unchanged.
    @Test func reportTextRoundTripsThroughTheDecoder() throws {
        var state = ScopeState()
        let awkward = "line\nbreak \"quoted\" back\\slash \u{07}bell tab\t 中文 🔥"
        state.setUser(CrashScope.User(id: awkward, ipAddress: "127.0.0.1"))
        state.setTag("k", awkward)
        state.setContext("ctx", [awkward: awkward])
        let timestamp = Date(timeIntervalSince1970: 1_795_323_053.25)
        state.addBreadcrumb(CrashScope.Breadcrumb(timestamp: timestamp, message: awkward, category: "c", level: .error, data: ["d": awkward]))
        let report = "{\"schema\":\"crashshield.crash-report\",\"version\":1,\"id\":\"report-1-2-0\",\"scope\":"
            + String(decoding: state.composeReportJSON(), as: UTF8.self) + ",\"complete\":true}"
        let decoded = try CrashReport.decode(Array(report.utf8))
        let scope = try #require(decoded.scope)
        let expected = state.snapshot(lastBreadcrumbs: CrashScope.maxBreadcrumbs)
        #expect(scope.user == expected.user && scope.tags == expected.tags && scope.contexts == expected.contexts)
        #expect(scope.breadcrumbs.map(\.message) == [awkward] && scope.breadcrumbs.first?.data == ["d": awkward])
        #expect(scope.breadcrumbs.first?.category == "c")
        #expect(scope.user?.ipAddress == "127.0.0.1")
        #expect(scope.breadcrumbs.first?.level == .error)
        #expect(abs((scope.breadcrumbs.first?.timestamp.timeIntervalSince1970 ?? 0) - timestamp.timeIntervalSince1970) < 1e-6)
        // And back out in the report's key style.
        let encoded = try #require(try JSONSerialization.jsonObject(with: decoded.jsonData()) as? [String: Any])
        let user = (encoded["scope"] as? [String: Any])?["user"] as? [String: Any]
        #expect(user?["ip_address"] as? String == "127.0.0.1")
    }

    /// Every bound at its limit: the text stays within the report's bound, strict JSON, and
    /// drops oldest breadcrumbs first, then contexts, then tags.
    @Test func oversizedScopeShrinksInTheDocumentedOrder() throws {
        let value = String(repeating: "\u{01}\"", count: 200) // 6 + 2 bytes each once escaped
        var state = ScopeState()
        state.setUser(CrashScope.User(id: value, username: value, email: value, ipAddress: value))
        for tag in 0..<CrashScope.maxTags { state.setTag(String(format: "tag-%02d", tag), value) }
        var bytes = state.composeReportJSON()
        // Tags alone: 50 × ~1 KiB escaped, more than the bound: the last tags in key order go.
        var object = try parsed(state)
        #expect(bytes.count <= CrashScope.maxReportBytes)
        let dropped = try #require(object["dropped_tags"] as? Int)
        let tags = try #require(object["tags"] as? [String: String])
        #expect(tags.count + dropped == CrashScope.maxTags)
        #expect(tags.keys.sorted() == (0..<tags.count).map { String(format: "tag-%02d", $0) })
        #expect(object["user"] != nil)

        for context in 0..<CrashScope.maxContexts { state.setContext("context-\(context)", ["k": value]) }
        for index in 0..<CrashScope.maxBreadcrumbs { state.addBreadcrumb(CrashScope.Breadcrumb(message: "crumb \(index)")) }
        bytes = state.composeReportJSON()
        object = try parsed(state)
        #expect(bytes.count <= CrashScope.maxReportBytes)
        // Every breadcrumb and context was dropped before any more tags.
        #expect(object["breadcrumbs"] == nil)
        #expect(object["dropped_breadcrumbs"] as? Int == CrashScope.maxBreadcrumbs)
        #expect(object["dropped_contexts"] as? Int == CrashScope.maxContexts)
    }
}
