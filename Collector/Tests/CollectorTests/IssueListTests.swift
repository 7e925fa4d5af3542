@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

/// The issue list (store, API and page): filters, sort, keyset pages and `limit`, bulk status
/// changes; and event time: an event's own timestamp, clamped to its arrival.
@Suite("Issue list and event time")
struct IssueListTests {
    /// An event of its own issue (`name` is its exception type, so the title starts with it).
    static func event(_ name: String, value: String = "failed", release: String? = "app@1.0.0", environment: String? = nil,
                      level: String = "error", guardName: String? = nil, user: String? = "user-1", timestamp: Date? = nil) -> JSONValue {
        guard case .object(var fields) = Fixtures.exceptionEvent(type: name, value: value, functions: ["main", "run_" + name],
                                                                 release: release, user: user) else { return .null }
        fields["level"] = .string(level)
        if let environment { fields["environment"] = .string(environment) }
        if let timestamp { fields["timestamp"] = .double(timestamp.timeIntervalSince1970) }
        if let guardName {
            fields["level"] = "warning"
            fields["tags"] = ["guard": .string(guardName)]
            fields["exception"] = ["values": [["type": .string(name), "value": .string(value), "mechanism": ["type": "crashshield", "handled": true],
                                               "stacktrace": ["frames": [["function": .string("-[Feed \(name)]"), "in_app": true]]]]]]
        }
        return .object(fields)
    }

    static func write(_ project: Int64, _ json: JSONValue, received: Date = Date()) throws -> IngestWrite {
        let record = try EventRecord.extract(projectID: project, payload: json.jsonData(), json: json, fallbackEventID: nil, received: received)
        return IngestWrite(projectID: project, event: record, received: received)
    }

    static func titles(_ page: IssuePage) -> Set<String> { Set(page.issues.map { String($0.title.prefix { $0 != ":" }) }) }

    // MARK: Store

    @Test func filtersSelectByTextReleaseEnvironmentLevelGuardAndStatus() async throws {
        try await TestDatabase.withStore { store in
            let project = try await store.createProject(name: "p").id
            let other = try await store.createProject(name: "other").id
            _ = try await store.commitIngest([
                try Self.write(project, Self.event("HeaderError", value: "bad 100% header", release: "app@1.0.0", environment: "production")),
                try Self.write(project, Self.event("KeyError", release: "app@2.0.0", environment: "staging")),
                try Self.write(project, Self.event("KeyError", release: "app@1.0.0", environment: "production")),
                try Self.write(project, Self.event("RangeGuard", release: "app@2.0.0", environment: "production", guardName: "container")),
                try Self.write(project, Self.event("FatalError", release: nil, level: "fatal")),
                try Self.write(other, Self.event("HeaderError", release: "app@1.0.0", environment: "production")),
            ])
            func titles(_ query: IssueQuery) async throws -> Set<String> { Self.titles(try await store.issues(projectID: project, query: query)) }
            #expect(try await titles(IssueQuery()) == ["HeaderError", "KeyError", "RangeGuard", "FatalError"])
            // Text: title or culprit, case-insensitive; % and _ are literal.
            #expect(try await titles(IssueQuery(text: "headererror")) == ["HeaderError"])
            #expect(try await titles(IssueQuery(text: "run_keyerror")) == ["KeyError"])
            #expect(try await titles(IssueQuery(text: "100%")) == ["HeaderError"])
            #expect(try await titles(IssueQuery(text: "%")) == ["HeaderError"])
            #expect(try await titles(IssueQuery(text: "_")) == ["HeaderError", "KeyError", "FatalError"])  // culprit run_<name>
            #expect(try await titles(IssueQuery(text: "no such text")) == [])
            // Release and environment: any event of the issue.
            #expect(try await titles(IssueQuery(release: "app@1.0.0")) == ["HeaderError", "KeyError"])
            #expect(try await titles(IssueQuery(release: "app@2.0.0")) == ["KeyError", "RangeGuard"])
            #expect(try await titles(IssueQuery(environment: "staging")) == ["KeyError"])
            #expect(try await titles(IssueQuery(environment: "production")) == ["HeaderError", "KeyError", "RangeGuard"])
            #expect(try await titles(IssueQuery(level: "fatal")) == ["FatalError"])
            #expect(try await titles(IssueQuery(guardName: "container")) == ["RangeGuard"])
            #expect(try await titles(IssueQuery(guardName: "timer")) == [])
            // Filters are of the issue: KeyError has an event in app@2.0.0 and one in production.
            #expect(try await titles(IssueQuery(release: "app@2.0.0", environment: "production")) == ["KeyError", "RangeGuard"])
            #expect(try await titles(IssueQuery(release: "app@2.0.0", level: "warning")) == ["RangeGuard"])
            // Status.
            let key = try #require(try await store.issues(projectID: project, query: IssueQuery(text: "KeyError")).issues.first)
            #expect(try await store.setIssueStatus(projectID: project, ids: [key.id], .resolved) == [key.id])
            #expect(try await titles(IssueQuery(statuses: IssueQuery.open)) == ["HeaderError", "RangeGuard", "FatalError"])
            #expect(try await titles(IssueQuery(statuses: [.resolved])) == ["KeyError"])
            #expect(try await store.issues(projectID: project, query: IssueQuery(statuses: IssueQuery.open)).total == 3)
            // The filter values.
            let values = try await store.issueFilterValues(projectID: project, limit: 10)
            #expect(values.releases == ["app@2.0.0", "app@1.0.0"])
            #expect(values.environments == ["production", "staging"])
            #expect(values.guards == ["container"])
        }
    }

    @Test(arguments: IssueSort.allCases)
    func everyIssueIsReachedOnceThroughTheCursorsInTheSortsOrder(sort: IssueSort) async throws {
        try await TestDatabase.withStore { store in
            let project = try await store.createProject(name: "p").id
            let now = Date()
            // 23 issues: issue k has k % 5 + 1 events and users, its events k minutes ago; ties on counts.
            var writes: [IngestWrite] = []
            for k in 0..<23 {
                for n in 0...(k % 5) {
                    writes.append(try Self.write(project, Self.event("E\(k)", user: "u\(n)", timestamp: now.addingTimeInterval(Double(-60 * k - n))),
                                                 received: now))
                }
            }
            _ = try await store.commitIngest(writes)
            var query = IssueQuery(sort: sort, limit: 5)
            var pages: [[CollectorApp.Issue]] = []
            var cursor: IssueCursor?
            repeat {
                query.cursor = cursor
                let page = try await store.issues(projectID: project, query: query)
                #expect(page.total == 23)
                #expect(page.issues.count == min(5, 23 - pages.count * 5))
                #expect((page.previous == nil) == pages.isEmpty)
                pages.append(page.issues)
                cursor = page.next
            } while cursor != nil && pages.count < 10
            #expect(pages.count == 5)
            let listed = pages.flatMap { $0 }
            #expect(Set(listed.map(\.id)).count == 23)
            func key(_ issue: CollectorApp.Issue) -> (Double, Int64) {
                switch sort {
                case .lastSeen: return (issue.lastSeen.timeIntervalSince1970, issue.id)
                case .firstSeen: return (issue.firstSeen.timeIntervalSince1970, issue.id)
                case .events: return (Double(issue.eventCount), issue.id)
                case .users: return (Double(issue.userCount), issue.id)
                }
            }
            #expect(listed.map(\.id) == listed.sorted { key($0) > key($1) }.map(\.id))
            // Back from the third page: the second, then the first (which has no previous page).
            query.cursor = try await store.issues(projectID: project, query: IssueQuery(sort: sort, limit: 5, cursor: nil)).next
            let second = try await store.issues(projectID: project, query: query)
            query.cursor = second.next
            let third = try await store.issues(projectID: project, query: query)
            #expect(third.issues.map(\.id) == pages[2].map(\.id))
            query.cursor = third.previous
            let backToSecond = try await store.issues(projectID: project, query: query)
            #expect(backToSecond.issues.map(\.id) == pages[1].map(\.id))
            #expect(backToSecond.next == second.next)
            query.cursor = backToSecond.previous
            let backToFirst = try await store.issues(projectID: project, query: query)
            #expect(backToFirst.issues.map(\.id) == pages[0].map(\.id))
            #expect(backToFirst.previous == nil)
        }
    }

    @Test func aBulkStatusChangeTouchesOnlyTheProjectsNamedIssues() async throws {
        try await TestDatabase.withStore { store in
            let project = try await store.createProject(name: "p").id
            let other = try await store.createProject(name: "other").id
            _ = try await store.commitIngest([try Self.write(project, Self.event("A")), try Self.write(project, Self.event("B")),
                                              try Self.write(project, Self.event("C")), try Self.write(other, Self.event("D"))])
            let ids = Dictionary(uniqueKeysWithValues: try await store.issues(projectID: project, query: IssueQuery()).issues.map { ($0.title.prefix(1), $0.id) })
            let foreign = try #require(try await store.issues(projectID: other, query: IssueQuery()).issues.first?.id)
            let changed = try await store.setIssueStatus(projectID: project, ids: [ids["A"]!, ids["B"]!, ids["A"]!, foreign, 999_999], .ignored)
            #expect(changed == [ids["A"]!, ids["B"]!].sorted())
            #expect(try await store.issue(id: ids["A"]!)?.status == .ignored)
            #expect(try await store.issue(id: ids["C"]!)?.status == .unresolved)
            #expect(try await store.issue(id: foreign)?.status == .unresolved)
            #expect(try await store.setIssueStatus(projectID: project, ids: [], .resolved) == [])
        }
    }

    // MARK: Event time

    @Test func anEventsTimeIsItsOwnTimestampBoundedByItsArrival() throws {
        let received = Date(timeIntervalSince1970: 1_800_000_000)
        func time(_ timestamp: JSONValue?) throws -> Date {
            guard case .object(var fields) = Self.event("E") else { return .distantPast }
            fields["timestamp"] = timestamp
            let json = JSONValue.object(fields)
            return try EventRecord.extract(projectID: 1, payload: json.jsonData(), json: json, fallbackEventID: nil, received: received).timestamp
        }
        #expect(try time(.double(1_800_000_000 - 3600)) == received.addingTimeInterval(-3600))
        #expect(try time("2027-01-15T07:40:00Z") == Date(timeIntervalSince1970: 1_800_000_000 - 1200))  // received at 08:00:00 UTC
        // In the future of its arrival (a wrong device clock): its arrival.
        #expect(try time(.double(1_800_000_000 + 86_400)) == received)
        // Older than 90 days: 90 days before its arrival.
        #expect(try time(.double(1_800_000_000 - 200 * 86_400)) == received.addingTimeInterval(-EventRecord.maxTimestampAge))
        #expect(EventRecord.maxTimestampAge == 90 * 86_400)
        #expect(try time(nil) == received)
        #expect(try time("not a time") == received)
    }

    @Test func aBatchOfFourteenDaysLandsOnItsFourteenDays() async throws {
        try await TestDatabase.withStore { store in
            let project = try await store.createProject(name: "p").id
            let now = Date()
            let today = Int64((now.timeIntervalSince1970 / 86_400).rounded(.down))
            // Sent together now, captured over the last 14 days (newest first, as an outbox may send them),
            // plus one from a clock a day ahead.
            var writes = try (0..<14).map { day in
                try Self.write(project, Self.event("Incident", release: "app@1.\(day % 3).0", timestamp: now.addingTimeInterval(Double(-day) * 86_400)),
                               received: now)
            }
            writes.append(try Self.write(project, Self.event("Incident", timestamp: now.addingTimeInterval(86_400)), received: now))
            _ = try await store.commitIngest(writes)
            let issue = try #require(try await store.issues(projectID: project, query: IssueQuery()).issues.first)
            #expect(abs(issue.firstSeen.timeIntervalSince(now.addingTimeInterval(-13 * 86_400))) < 0.01)
            #expect(abs(issue.lastSeen.timeIntervalSince(now)) < 0.01)
            let days = try await store.issueActivity(issueIDs: [issue.id], days: (today - 13)...today)[issue.id] ?? [:]
            #expect(days.count == 14)
            #expect(days[today] == 2)  // today's and the future one's
            #expect((today - 13..<today).allSatisfy { days[$0] == 1 })
            let stored = try await store.events(issueID: issue.id, limit: 100)
            #expect(stored.allSatisfy { $0.timestamp <= $0.received })
            // Release first/last seen follow event time too.
            let releases = try await store.query("SELECT release, first_seen, last_seen FROM issue_releases WHERE issue_id = ? ORDER BY release",
                                                 [.int(issue.id)])
            let first = try #require(releases.first { $0.string("release") == "app@1.0.0" })
            #expect(abs((first.double("first_seen") ?? 0) - now.addingTimeInterval(-12 * 86_400).timeIntervalSince1970) < 0.01)  // days 0, 3, ..., 12
            // A later batch with an older event moves first seen back.
            _ = try await store.commitIngest([try Self.write(project, Self.event("Incident", timestamp: now.addingTimeInterval(-20 * 86_400)), received: now)])
            let again = try #require(try await store.issue(id: issue.id))
            #expect(abs(again.firstSeen.timeIntervalSince(now.addingTimeInterval(-20 * 86_400))) < 0.01)
            #expect(again.lastSeen == issue.lastSeen)
            // Retention drops the per-day counts of days before its cutoff with the events; counts stay.
            _ = try await store.deleteData(receivedBefore: now.addingTimeInterval(-5 * 86_400))
            let kept = try await store.issueActivity(issueIDs: [issue.id], days: (today - 30)...today)[issue.id] ?? [:]
            #expect(kept.keys.min() == today - 5 && kept[today] == 2)
            #expect(try await store.issue(id: issue.id)?.eventCount == 16)
        }
    }

    @Test func preventedCrashesCountOnTheirEventsDay() async throws {
        try await TestDatabase.withStore { store in
            let project = try await store.createProject(name: "p").id
            let now = Date()
            _ = try await store.commitIngest([try Self.write(project, Self.event("RangeGuard", guardName: "container",
                                                                                timestamp: now.addingTimeInterval(-10 * 86_400)))])
            let rows = try await store.incidentRows(projectID: project, since: now.addingTimeInterval(-14 * 86_400), limit: 10)
            #expect(rows.count == 1)
            #expect(abs((rows.first?.time ?? now).timeIntervalSince(now.addingTimeInterval(-10 * 86_400))) < 0.01)
            #expect(try await store.incidentRows(projectID: project, since: now.addingTimeInterval(-9 * 86_400), limit: 10).isEmpty)
            let counts = try await store.incidents(projectID: project)
            #expect(abs((counts.first?.lastSeen ?? now).timeIntervalSince(now.addingTimeInterval(-10 * 86_400))) < 0.01)
        }
    }

    /// The prevented-crash page's counts per guard and UTC day, made by the database, equal the
    /// same counts made from the rows one by one (as the page did before): every day of 14,
    /// several guards, the "last 7 days" split at an exact time, nothing before `since`.
    @Test func preventedCrashCountsPerGuardAndDayMatchTheRows() async throws {
        try await TestDatabase.withStore { store in
            let project = try await store.createProject(name: "p").id
            let now = Date()
            var writes: [IngestWrite] = []
            for index in 0..<60 {
                let guardName = ["container", "kvo", "timer"][index % 3]
                let time = now.addingTimeInterval(-Double(index) * 0.27 * 86_400 - 60)
                writes.append(try Self.write(project, Self.event("Guard\(index % 3)", level: "warning", guardName: guardName, timestamp: time)))
            }
            _ = try await store.commitIngest(writes)
            let days = SVGChart.days(count: 14, now: now)
            let weekAgo = now.addingTimeInterval(-7 * 86_400)
            let rows = try await store.incidentRows(projectID: project, since: days[0], limit: 10_000)
            #expect(rows.count > 40 && rows.count < 60)  // some fall before the 14 days
            struct Key: Hashable { let name: String; let day: Int64 }
            var expected: [Key: (all: Int64, recent: Int64)] = [:]
            for row in rows {
                let key = Key(name: row.guardName, day: Int64((row.time.timeIntervalSince1970 / 86_400).rounded(.down)))
                let entry = expected[key] ?? (0, 0)
                expected[key] = (entry.all + 1, entry.recent + (row.time >= weekAgo ? 1 : 0))
            }
            let counted = try await store.incidentDayCounts(projectID: project, since: days[0], recent: weekAgo)
            #expect(counted.count == expected.count)
            for entry in counted {
                let want = expected[Key(name: entry.guardName, day: entry.day)]
                #expect(want?.all == entry.count && want?.recent == entry.recent, "\(entry)")
            }
            #expect(counted.reduce(0) { $0 + $1.count } == Int64(rows.count))
        }
    }

    /// A database of schema version 6 (arrival times everywhere, raw timestamps) upgrades.
    @Test func theMigrationClampsStoredTimesAndFillsTheListsTables() async throws {
        try await TestDatabase.withStore(migrated: false) { store in
            let dialect = store.backend.dialect
            _ = try await store.query(SQLStore.typed("CREATE TABLE schema_migrations (version {int} PRIMARY KEY, applied_at {real} NOT NULL)", for: dialect)!)
            for migration in SQLStore.migrations where migration.version <= 6 {
                for statement in migration.statements {
                    guard let typed = SQLStore.typed(statement, for: dialect) else { continue }
                    _ = try await store.query(typed)
                }
                _ = try await store.query("INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)", [.int(Int64(migration.version))])
            }
            let project = try await store.createProject(name: "p").id
            let received = 1_800_000_000.0
            _ = try await store.query(
                """
                INSERT INTO issues (project_id, fingerprint_hash, grouping_algorithm, title, culprit, level, first_seen, last_seen,
                    first_release, last_release, event_count, user_count) VALUES (?, 'h', 'v1', 'T', 'c', 'warning', ?, ?, 'r1', 'r1', 3, 1)
                """, [.int(project), .double(received), .double(received + 100)])
            _ = try await store.query(
                "INSERT INTO issue_releases (issue_id, release, event_count, first_seen, last_seen) VALUES (1, 'r1', 3, ?, ?)",
                [.double(received), .double(received + 100)])
            // Captured 3 days before arrival; from a clock 5 days ahead; 200 days before arrival.
            for (index, (arrival, timestamp)) in [(received, received - 3 * 86_400), (received + 50, received + 5 * 86_400),
                                                  (received + 100, received - 200 * 86_400)].enumerated() {
                _ = try await store.query(
                    """
                    INSERT INTO events (project_id, event_id, issue_id, received, timestamp, level, release, environment, incident_guard, payload)
                    VALUES (?, ?, 1, ?, ?, 'warning', 'r1', 'production', 'container', ?)
                    """, [.int(project), .text("e\(index)"), .double(arrival), .double(timestamp), .blob(Data("{}".utf8))])
            }
            try await store.migrate()
            #expect(try await store.appliedMigrations() == SQLStore.migrations.map(\.version))
            let times = try await store.query("SELECT event_id, timestamp FROM events ORDER BY event_id").map { $0.double("timestamp") }
            #expect(times == [received - 3 * 86_400, received + 50, received + 100 - 90 * 86_400])
            let issue = try #require(try await store.issue(id: 1))
            #expect(issue.firstSeen.timeIntervalSince1970 == received + 100 - 90 * 86_400)
            #expect(issue.lastSeen.timeIntervalSince1970 == received + 50)
            let release = try #require(try await store.query("SELECT first_seen, last_seen FROM issue_releases").first)
            #expect(release.double("first_seen") == received + 100 - 90 * 86_400 && release.double("last_seen") == received + 50)
            let day = Int64((received / 86_400).rounded(.down))
            let activity = try await store.issueActivity(issueIDs: [1], days: (day - 100)...(day + 10))[1] ?? [:]
            #expect(activity.values.reduce(0, +) == 3)
            #expect(activity[day - 3] == 1)
            #expect(try await store.issues(projectID: project, query: IssueQuery(environment: "production", guardName: "container")).total == 1)
            #expect(try await store.incidentRows(projectID: project, since: Date(timeIntervalSince1970: received - 4 * 86_400), limit: 10).count == 2)
        }
    }

    // MARK: API

    @Test func theAPIFiltersSortsAndPagesWithItsLimitAndLinkHeaders() async throws {
        try await Harness.run { harness in
            for index in 0..<7 {
                let event = Self.event("Error\(index)", release: index < 3 ? "app@1.0.0" : "app@2.0.0", environment: index % 2 == 0 ? "production" : "staging",
                                       timestamp: Date().addingTimeInterval(Double(-60 * index)))
                #expect(try await harness.post(body: Fixtures.envelope(event: event)).status == 200)
            }
            let base = "/api/0/projects/\(harness.project.id)/issues"
            var titles: [String] = []
            var path: String? = base + "?limit=3"
            var pages = 0
            while let next = path, pages < 5 {
                let response = try await harness.api(next)
                #expect(response.status == 200)
                #expect(response.headers["x-hits"] == "7")
                let page = response.json?.arrayValue ?? []
                #expect(page.count <= 3)
                titles += page.compactMap { $0["title"]?.stringValue.map { String($0.prefix { $0 != ":" }) } }
                let link = try #require(response.headers["link"])
                #expect(link.contains("rel=\"previous\"; results=\"\(pages > 0)\""))
                // <path>; rel="next"; results="true"; cursor="..."
                let nextPart = try #require(link.components(separatedBy: ", ").first { $0.contains("rel=\"next\"") })
                path = nextPart.contains("results=\"true\"") ? String(nextPart.dropFirst().prefix { $0 != ">" }) : nil
                pages += 1
            }
            #expect(pages == 3)
            #expect(titles == (0..<7).map { "Error\($0)" })  // last seen first
            // Filters and sort.
            func list(_ query: String) async throws -> [String] {
                try await harness.api(base + "?" + query).json?.arrayValue?.compactMap { $0["title"]?.stringValue.map { String($0.prefix { $0 != ":" }) } } ?? []
            }
            #expect(try await list("release=app%401.0.0&environment=production") == ["Error0", "Error2"])
            #expect(try await list("query=error6") == ["Error6"])
            #expect(try await list("query=Error+6") == [])
            #expect(try await list("sort=first_seen&limit=2") == ["Error0", "Error1"])
            #expect(try await list("status=resolved") == [])
            #expect(try await list("level=error&limit=100").count == 7)
            // `limit` is bounded; nonsense is refused.
            let capped = try await harness.api(base + "?limit=5000")
            #expect(capped.status == 200 && capped.headers["link"]?.contains("limit=1000") == true)
            for bad in ["limit=0", "limit=ten", "sort=newest", "status=open-ish", "level=loud", "cursor=x1:2"] {
                let response = try await harness.api(base + "?" + bad)
                #expect(response.status == 400, "\(bad)")
                #expect(response.json?["code"]?.stringValue?.hasPrefix("request.") == true, "\(bad)")
            }
            #expect(try await harness.client.execute(base).status == 401)
            #expect(try await harness.api("/api/0/projects/999/issues").status == 404)
        }
    }

    @Test func theAPIChangesTheStatusOfSeveralIssues() async throws {
        try await Harness.run { harness in
            for name in ["A", "B", "C"] {
                #expect(try await harness.post(body: Fixtures.envelope(event: Self.event(name))).status == 200)
            }
            let ids = try await harness.issues().compactMap { $0["id"]?.intValue }.sorted()
            let base = "/api/0/projects/\(harness.project.id)/issues"
            let response = try await harness.api(base + "?id=\(ids[0])&id=\(ids[1])", method: "PUT", json: ["status": "resolved"])
            #expect(response.status == 200)
            #expect(response.json?["updated"]?.arrayValue?.compactMap(\.intValue) == [ids[0], ids[1]])
            let statuses = try await harness.issues().compactMap { issue in issue["id"]?.intValue.map { ($0, issue["status"]?.stringValue ?? "") } }
            #expect(Dictionary(uniqueKeysWithValues: statuses) == [ids[0]: "resolved", ids[1]: "resolved", ids[2]: "unresolved"])
            #expect(try await harness.api(base + "?id=\(ids[2])", method: "PUT", json: ["status": "regressed"]).status == 400)
            #expect(try await harness.api(base, method: "PUT", json: ["status": "ignored"]).status == 400)
            #expect(try await harness.api(base + "?id=x", method: "PUT", json: ["status": "ignored"]).status == 400)
            #expect(try await harness.client.execute(base + "?id=\(ids[2])", method: "PUT", body: Data("{\"status\":\"ignored\"}".utf8)).status == 401)
            #expect(try await harness.api("/api/0/issues/\(ids[2])").json?["status"]?.stringValue == "unresolved")
        }
    }

    // MARK: Dashboard

    @Test func theListPageSearchesPagesDrawsSparklinesAndChangesSeveralIssuesWithItsCSRFToken() async throws {
        try await DashboardTests.run { harness, browser in
            let now = Date()
            for index in 0..<5 {
                let event = Self.event("Error\(index)", environment: "production", timestamp: now.addingTimeInterval(Double(-86_400 * index)))
                #expect(try await harness.post(body: Fixtures.envelope(event: event)).status == 200)
            }
            #expect(try await browser.logIn().status == 303)
            let first = try await browser.get("/projects/1?limit=2")
            #expect(first.status == 200)
            #expect(first.text.components(separatedBy: "<tr data-issue=").count - 1 == 2)
            #expect(first.text.contains("2 of 5 matching issues"))
            // Each row's sparkline: 14 days, one bar on the day of its event, titled with the day.
            #expect(first.text.contains("<svg class=\"spark\""))
            #expect(first.text.contains("<title>\(SVGChart.dayLabel(now)): 1</title>"))
            #expect(first.text.contains("<title>\(SVGChart.dayLabel(now.addingTimeInterval(-86_400))): 1</title>"))
            let next = try #require(first.text.range(of: "<a rel=\"next\" href=\"").map { String(first.text[$0.upperBound...].prefix { $0 != "\"" }) })
            let second = try await browser.get(next.replacingOccurrences(of: "&amp;", with: "&"))
            #expect(second.text.contains(">Error2:") && second.text.contains(">Error3:") && !second.text.contains(">Error0:"))
            #expect(second.text.contains("rel=\"prev\""))
            let search = try await browser.get("/projects/1?query=error4&environment=production")
            #expect(search.text.contains(">Error4:") && !search.text.contains(">Error3:"))
            #expect(search.text.contains("1 of 1 matching issue"))
            let bad = try await browser.get("/projects/1?limit=nope")
            #expect(bad.status == 400)

            // Bulk: the session's CSRF token is required.
            let csrf = try #require(Browser.csrfToken(in: first))
            let ids = try await harness.issues().compactMap { $0["id"]?.intValue }.sorted()
            let form = [("status", "resolved"), ("issue", String(ids[0])), ("issue", String(ids[1])), ("return", "/projects/1?status=open")]
            #expect(try await browser.post("/projects/1/issues/status", form: form).status == 403)
            #expect(try await browser.post("/projects/1/issues/status", form: form + [("csrf_token", String(repeating: "0", count: 64))]).status == 403)
            #expect(try await harness.issues().allSatisfy { $0["status"]?.stringValue == "unresolved" })
            let done = try await browser.post("/projects/1/issues/status", form: form + [("csrf_token", csrf)])
            #expect(done.status == 303)
            #expect(done.headers["location"] == "/projects/1?status=open&updated=2&to=resolved")
            let statuses = try await harness.issues().compactMap { issue in issue["id"]?.intValue.map { ($0, issue["status"]?.stringValue ?? "") } }
            #expect(Dictionary(uniqueKeysWithValues: statuses).filter { $0.value == "resolved" }.keys.sorted() == [ids[0], ids[1]])
            let after = try await browser.get("/projects/1?status=open&updated=2&to=resolved")
            #expect(after.text.contains("2 issues set to resolved."))
            #expect(after.text.contains("3 of 3 matching issues"))
        }
    }

    @Test func theHealthChartsDrawTheNewestReleasesNotTheBusiest() async throws {
        try await DashboardTests.run { harness, browser in
            let now = Date().timeIntervalSince1970
            // Eight releases; the older a release, the more sessions it has.
            for minor in 0..<8 {
                for _ in 0..<(9 - minor) {
                    let session: JSONValue = ["sid": .string(UUID().uuidString), "did": "u", "started": .double(now - 60), "status": "exited",
                                              "attrs": ["release": .string("app@1.\(minor).0")]]
                    #expect(try await harness.post(body: Fixtures.envelope(extra: [.json(type: "session", session)])).status == 200)
                }
            }
            #expect(try await browser.logIn().status == 303)
            let page = try await browser.get("/projects/1/health").text
            let legend = try #require(page.components(separatedBy: "<ul class=\"legend\">").dropFirst().first?.components(separatedBy: "</ul>").first)
            #expect(legend.contains("app@1.7.0") && legend.contains("app@1.2.0"))
            #expect(!legend.contains("app@1.1.0") && !legend.contains("app@1.0.0"), "\(legend)")
        }
    }

    @Test func chartAxisLabelsNeverOverlapAndTodayIsLabelled() {
        for count in [2, 7, 14, 15, 30, 31, 60, 90] {
            let labels = (0..<count).map { "d\($0)" }
            let chart = SVGChart.lines(title: "t", labels: labels, series: [.init(name: "s", values: labels.map { _ in 1 })], yMin: 0, yMax: 1,
                                       format: { String($0) }).rendered
            // x of each day label (the axis labels below the plot, text-anchor middle).
            let xs = chart.components(separatedBy: "<text class=\"axis\" x=\"").dropFirst().compactMap { part -> Double? in
                guard part.contains("text-anchor=\"middle\"") else { return nil }
                return Double(part.prefix { $0 != "\"" })
            }
            #expect(xs.count >= 2, "\(count) days")
            let gaps = zip(xs.dropFirst(), xs).map { $0 - $1 }
            #expect(gaps.allSatisfy { $0 >= SVGChart.labelSpacing - 0.1 }, "\(count) days: \(gaps)")
            #expect(chart.contains(">d\(count - 1)</text>"), "\(count) days: today has no label")
        }
    }
}
