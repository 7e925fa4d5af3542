import Foundation

/// Ingest writes, several requests per transaction (group commit).
///
/// A batch is stored in two steps, each one `SQLBackend.run` (on PostgreSQL one round trip):
///  1. begin; on PostgreSQL take the transaction-scoped advisory lock of every project in the
///     batch (in ascending order, so two collectors cannot deadlock); read which of the batch's
///     event ids are stored, the batch's issues and which of its (issue, user) and (issue,
///     environment or guard) pairs are known.
///  2. with those rows, replay the batch in order in memory (duplicates, new issues, regressions,
///     user and release counts exactly as one-by-one ingestion would produce them), then write
///     the result: new issues, one update per touched issue, the events, new issue users,
///     per-release counts, per-day counts, environments and guards, sessions, aggregates,
///     attachments, client reports, and commit.
/// An issue's first and last seen (and its releases' and days') are its events' own times
/// (`EventRecord.timestamp`), in whatever order they arrive.
/// Under the lock (PostgreSQL) or SQLite's write lock (`BEGIN IMMEDIATE`) nothing read in step 1
/// can change before the commit, so the replay is exact.
extension SQLStore {
    public func commitIngest(_ writes: [IngestWrite]) async throws -> [IngestWriteOutcome] {
        guard !writes.isEmpty else { return [] }
        defer { pageBudget.ingestCommitted() }
        return try await serialized(write: true) { try await commitLocked(writes) }
    }

    /// The key of an issue: its project and grouping hash.
    private struct IssueKey: Hashable {
        let project: Int64
        let hash: String
    }

    /// An issue as the replay sees it: its stored state (if any) plus the batch's changes.
    private struct IssueReplay {
        var id: Int64?
        /// The first event of a new issue (its title, culprit, level and first release).
        var first: EventRecord?
        var status: IssueStatus
        var resolvedIn: String?
        var lastRelease: String?
        /// The earliest and latest event time of the batch's events (first seen of a new issue).
        var firstSeen: Date
        var lastSeen: Date
        var events: Int64 = 0
        var newUsers: Int64 = 0
        var regressed = false
    }

    private struct ReleaseKey: Hashable {
        let issue: IssueKey
        let release: String
    }

    private struct ReleaseReplay {
        var events: Int64
        var firstSeen: Date
        var lastSeen: Date
    }

    /// A day (UTC, days since 1970) of an issue's events (`issue_days`).
    private struct DayKey: Hashable {
        let issue: IssueKey
        let day: Int64
    }

    /// An environment or guard an issue's events carry (`issue_facets`).
    private struct FacetKey: Hashable {
        let issue: IssueKey
        let facet: String
        let value: String
    }

    private struct UserKey: Hashable {
        let issue: IssueKey
        let user: String
    }

    private struct IssueUserPair: Hashable {
        let hash: String
        let user: String
    }

    private static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }

    private static let issueIDSubquery = "(SELECT id FROM issues WHERE project_id = ? AND fingerprint_hash = ?)"

    private func commitLocked(_ writes: [IngestWrite]) async throws -> [IngestWriteOutcome] {
        let postgres = backend.dialect == .postgres
        let events = writes.compactMap(\.event)
        let projects = Set(events.map(\.projectID)).sorted()

        // Step 1: begin, lock, read.
        var reads: [SQLStatement] = [SQLStatement(postgres ? "BEGIN" : "BEGIN IMMEDIATE")]
        if postgres {
            // Another collector process may be storing events of these projects right now.
            for project in projects { reads.append(SQLStatement("SELECT pg_advisory_xact_lock(?)", [.int(project)])) }
        }
        struct ProjectReads {
            let project: Int64
            let storedIDs: Int
            let issues: Int
            let users: Int?
            let facets: Int?
        }
        var projectReads: [ProjectReads] = []
        for project in projects {
            let ofProject = events.filter { $0.projectID == project }
            let eventIDs = Array(Set(ofProject.map(\.eventID)))
            let hashes = Array(Set(ofProject.map(\.grouping.hash)))
            let pairs = Array(Set(ofProject.compactMap { event in
                event.userKey.map { IssueUserPair(hash: event.grouping.hash, user: $0) }
            }))
            let storedIDs = reads.count
            reads.append(SQLStatement(
                "SELECT event_id FROM events WHERE project_id = ? AND event_id IN (\(Self.placeholders(eventIDs.count)))",
                [.int(project)] + eventIDs.map { .text($0) }))
            let issues = reads.count
            reads.append(SQLStatement(
                """
                SELECT id, fingerprint_hash, status, resolved_in_release, last_release FROM issues
                WHERE project_id = ? AND fingerprint_hash IN (\(Self.placeholders(hashes.count)))
                """,
                [.int(project)] + hashes.map { .text($0) }))
            var usersIndex: Int?
            if !pairs.isEmpty {
                // Exactly the batch's (issue, user) pairs: one primary-key lookup each.
                usersIndex = reads.count
                reads.append(SQLStatement(
                    """
                    SELECT p.column1 AS fingerprint_hash, p.column2 AS user_key
                    FROM (VALUES \(Array(repeating: "(CAST(? AS TEXT), CAST(? AS TEXT))", count: pairs.count).joined(separator: ", "))) AS p
                    JOIN issues i ON i.project_id = ? AND i.fingerprint_hash = p.column1
                    JOIN issue_users u ON u.issue_id = i.id AND u.user_key = p.column2
                    """,
                    pairs.flatMap { [DBValue.text($0.hash), .text($0.user)] } + [.int(project)]))
            }
            let facetTriples = Array(Set(ofProject.flatMap { event in
                Self.facets(of: event).map { [event.grouping.hash, $0.facet, $0.value] }
            }))
            var facetsIndex: Int?
            if !facetTriples.isEmpty {
                // Exactly the batch's (issue, facet, value) triples: one primary-key lookup each.
                facetsIndex = reads.count
                reads.append(SQLStatement(
                    """
                    SELECT p.column1 AS fingerprint_hash, p.column2 AS facet, p.column3 AS value
                    FROM (VALUES \(Array(repeating: "(CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT))", count: facetTriples.count).joined(separator: ", "))) AS p
                    JOIN issues i ON i.project_id = ? AND i.fingerprint_hash = p.column1
                    JOIN issue_facets f ON f.issue_id = i.id AND f.facet = p.column2 AND f.value = p.column3
                    """,
                    facetTriples.flatMap { $0.map { DBValue.text($0) } } + [.int(project)]))
            }
            projectReads.append(ProjectReads(project: project, storedIDs: storedIDs, issues: issues, users: usersIndex, facets: facetsIndex))
        }

        do {
            let read = try await backend.run(reads)
            var storedEvents = Set<IssueKey>()  // (project, event id)
            var issues: [IssueKey: IssueReplay] = [:]
            var knownUsers = Set<UserKey>()
            var facets = Set<FacetKey>()  // stored, then also the batch's
            var facetOrder: [FacetKey] = []  // the batch's new ones
            for entry in projectReads {
                for row in read[entry.storedIDs] {
                    if let id = row.string("event_id") { storedEvents.insert(IssueKey(project: entry.project, hash: id)) }
                }
                for row in read[entry.issues] {
                    guard let id = row.int("id"), let hash = row.string("fingerprint_hash") else { continue }
                    issues[IssueKey(project: entry.project, hash: hash)] = IssueReplay(
                        id: id, first: nil, status: IssueStatus(rawValue: row.string("status") ?? "") ?? .unresolved,
                        resolvedIn: row.string("resolved_in_release"), lastRelease: row.string("last_release"),
                        firstSeen: .distantFuture, lastSeen: .distantPast)
                }
                if let index = entry.facets {
                    for row in read[index] {
                        guard let hash = row.string("fingerprint_hash"), let facet = row.string("facet"), let value = row.string("value") else { continue }
                        facets.insert(FacetKey(issue: IssueKey(project: entry.project, hash: hash), facet: facet, value: value))
                    }
                }
                if let users = entry.users {
                    for row in read[users] {
                        guard let hash = row.string("fingerprint_hash"), let user = row.string("user_key") else { continue }
                        knownUsers.insert(UserKey(issue: IssueKey(project: entry.project, hash: hash), user: user))
                    }
                }
            }

            // Step 2: replay in order, then write.
            var outcomes = [IngestWriteOutcome](repeating: IngestWriteOutcome(event: nil), count: writes.count)
            var issueOrder: [IssueKey] = []
            var releases: [ReleaseKey: ReleaseReplay] = [:]
            var releaseOrder: [ReleaseKey] = []
            var newUsers: [UserKey] = []
            var days: [DayKey: Int64] = [:]
            var dayOrder: [DayKey] = []
            var storedInBatch: [(index: Int, event: EventRecord, issue: IssueKey, newIssue: Bool, regressed: Bool)] = []
            for (index, write) in writes.enumerated() {
                guard let event = write.event else { continue }
                let eventKey = IssueKey(project: event.projectID, hash: event.eventID)
                if storedEvents.contains(eventKey) {
                    outcomes[index].event = .duplicate
                    continue
                }
                storedEvents.insert(eventKey)
                let key = IssueKey(project: event.projectID, hash: event.grouping.hash)
                var regressed = false
                var newIssue = false
                if var issue = issues[key] {
                    regressed = Self.regresses(status: issue.status, resolvedIn: issue.resolvedIn, eventRelease: event.release)
                    if regressed {
                        issue.status = .regressed
                        issue.resolvedIn = nil
                        issue.regressed = true
                    }
                    if let release = event.release {
                        if let last = issue.lastRelease {
                            // A release is never newer than itself; the equality test skips parsing both.
                            if release != last && ReleaseOrder.isNewer(release, than: last) { issue.lastRelease = release }
                        } else {
                            issue.lastRelease = release
                        }
                    }
                    if issue.events == 0 { issueOrder.append(key) }
                    issue.events += 1
                    issue.firstSeen = min(issue.firstSeen, event.timestamp)
                    issue.lastSeen = max(issue.lastSeen, event.timestamp)
                    issues[key] = issue
                } else {
                    newIssue = true
                    issueOrder.append(key)
                    issues[key] = IssueReplay(id: nil, first: event, status: .unresolved, resolvedIn: nil,
                                              lastRelease: event.release, firstSeen: event.timestamp, lastSeen: event.timestamp, events: 1)
                }
                let dayKey = DayKey(issue: key, day: Self.day(event.timestamp))
                if let count = days[dayKey] { days[dayKey] = count + 1 } else {
                    days[dayKey] = 1
                    dayOrder.append(dayKey)
                }
                for (facet, value) in Self.facets(of: event) {
                    let facetKey = FacetKey(issue: key, facet: facet, value: value)
                    if facets.insert(facetKey).inserted { facetOrder.append(facetKey) }
                }
                if let user = event.userKey {
                    let userKey = UserKey(issue: key, user: user)
                    if knownUsers.insert(userKey).inserted {
                        newUsers.append(userKey)
                        issues[key]!.newUsers += 1
                    }
                }
                if let release = event.release {
                    let releaseKey = ReleaseKey(issue: key, release: release)
                    if var known = releases[releaseKey] {
                        known.events += 1
                        known.firstSeen = min(known.firstSeen, event.timestamp)
                        known.lastSeen = max(known.lastSeen, event.timestamp)
                        releases[releaseKey] = known
                    } else {
                        releaseOrder.append(releaseKey)
                        releases[releaseKey] = ReleaseReplay(events: 1, firstSeen: event.timestamp, lastSeen: event.timestamp)
                    }
                }
                storedInBatch.append((index, event, key, newIssue, regressed))
            }

            // Multi-row statements on PostgreSQL: each statement costs a parse, plan and execute on
            // the server, so a batch writes each table with as few statements as it can. On SQLite
            // one row per statement (`rowsPerStatement`).
            let rowsPerStatement = Self.rowsPerStatement(postgres: postgres)
            var statements: [SQLStatement] = []
            let newIssueKeys = issueOrder.filter { issues[$0]!.first != nil }
            let touchedIssues = issueOrder.filter { issues[$0]!.first == nil }
            let newIssueStatements = statements.count..<(statements.count + Self.chunkCount(newIssueKeys.count, rowsPerStatement))
            statements += Self.multiRow(
                rowsPerStatement: rowsPerStatement,
                prefix: """
                    INSERT INTO issues (project_id, fingerprint_hash, grouping_algorithm, title, culprit, level, first_seen,
                        last_seen, first_release, last_release, event_count, user_count) VALUES
                    """,
                row: "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", suffix: " RETURNING id, project_id, fingerprint_hash",
                rows: newIssueKeys.map { key in
                    let issue = issues[key]!
                    let first = issue.first!
                    return [.int(key.project), .text(key.hash), .text(first.grouping.algorithm), .text(first.grouping.title),
                            .text(first.grouping.culprit), .text(first.level), Self.time(issue.firstSeen), Self.time(issue.lastSeen),
                            Self.text(first.release), Self.text(issue.lastRelease), .int(issue.events), .int(issue.newUsers)]
                })
            // Per touched issue: id, events, new users, last seen, last release, regressed (1 or 0), first seen.
            let issueUpdates: [[DBValue]] = touchedIssues.compactMap { key in
                let issue = issues[key]!
                guard let id = issue.id else { return nil }
                return [.int(id), .int(issue.events), .int(issue.newUsers), Self.time(issue.lastSeen), Self.text(issue.lastRelease),
                        .int(issue.regressed ? 1 : 0), Self.time(issue.firstSeen)]
            }
            if postgres {
                // One statement for all (each statement costs PostgreSQL a parse and plan). VALUES
                // columns are column1, column2, ...; the casts give PostgreSQL their types.
                statements += Self.multiRow(
                    rowsPerStatement: rowsPerStatement,
                    prefix: """
                        UPDATE issues SET event_count = event_count + v.column2, user_count = user_count + v.column3,
                            last_seen = CASE WHEN issues.last_seen > v.column4 THEN issues.last_seen ELSE v.column4 END,
                            first_seen = CASE WHEN issues.first_seen < v.column7 THEN issues.first_seen ELSE v.column7 END,
                            last_release = v.column5,
                            status = CASE WHEN v.column6 = 1 THEN 'regressed' ELSE issues.status END,
                            resolved_in_release = CASE WHEN v.column6 = 1 THEN NULL ELSE issues.resolved_in_release END
                        FROM (VALUES
                        """,
                    row: "(CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS DOUBLE PRECISION), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS DOUBLE PRECISION))",
                    suffix: ") AS v WHERE issues.id = v.column1",
                    rows: issueUpdates)
            } else {
                // SQLite runs statements in process: one prepared (cached) statement per issue is
                // cheaper than materializing a VALUES table and joining it.
                for row in issueUpdates {
                    statements.append(SQLStatement(
                        """
                        UPDATE issues SET event_count = event_count + ?2, user_count = user_count + ?3,
                            last_seen = CASE WHEN last_seen > ?4 THEN last_seen ELSE ?4 END,
                            first_seen = CASE WHEN first_seen < ?7 THEN first_seen ELSE ?7 END,
                            last_release = ?5,
                            status = CASE WHEN ?6 = 1 THEN 'regressed' ELSE status END,
                            resolved_in_release = CASE WHEN ?6 = 1 THEN NULL ELSE resolved_in_release END
                        WHERE id = ?1
                        """,
                        row))
                }
            }
            statements += Self.multiRow(
                rowsPerStatement: rowsPerStatement,
                prefix: """
                    INSERT INTO events (project_id, event_id, issue_id, received, timestamp, level, platform, release,
                        environment, user_key, incident_guard, payload) VALUES
                    """,
                row: "(?, ?, \(Self.issueIDSubquery), ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows: storedInBatch.map { stored in
                    let event = stored.event
                    return [.int(event.projectID), .text(event.eventID), .int(stored.issue.project), .text(stored.issue.hash),
                            Self.time(event.received), Self.time(event.timestamp), .text(event.level), Self.text(event.platform),
                            Self.text(event.release), Self.text(event.environment), Self.text(event.userKey),
                            Self.text(event.incidentGuard), .blob(event.payload)]
                })
            // The launch tags of the events just inserted (rarely any: most events have none).
            statements += Self.multiRow(
                rowsPerStatement: rowsPerStatement,
                prefix: "INSERT INTO event_launch_tags (event_row, position, project_id, received, release, tag_key, tag_value) VALUES ",
                row: "((SELECT id FROM events WHERE project_id = ? AND event_id = ?), ?, ?, ?, ?, ?, ?)",
                rows: storedInBatch.flatMap { stored in
                    let event = stored.event
                    return event.launchTags.enumerated().map { position, tag -> [DBValue] in
                        [.int(event.projectID), .text(event.eventID), Self.int(position), .int(event.projectID), Self.time(event.received),
                         Self.text(event.release), .text(tag.key), .text(tag.value)]
                    }
                })
            statements += Self.multiRow(
                rowsPerStatement: rowsPerStatement,
                prefix: "INSERT INTO issue_users (issue_id, user_key) VALUES ",
                row: "(\(Self.issueIDSubquery), ?)",
                rows: newUsers.map { [.int($0.issue.project), .text($0.issue.hash), .text($0.user)] })
            // One row per (issue, release): a multi-row upsert may not touch a row twice.
            statements += Self.multiRow(
                rowsPerStatement: rowsPerStatement,
                prefix: "INSERT INTO issue_releases (issue_id, release, event_count, first_seen, last_seen) VALUES ",
                row: "(\(Self.issueIDSubquery), ?, ?, ?, ?)",
                suffix: """
                     ON CONFLICT (issue_id, release) DO UPDATE SET event_count = issue_releases.event_count + excluded.event_count,
                        first_seen = CASE WHEN issue_releases.first_seen < excluded.first_seen
                            THEN issue_releases.first_seen ELSE excluded.first_seen END,
                        last_seen = CASE WHEN issue_releases.last_seen > excluded.last_seen
                            THEN issue_releases.last_seen ELSE excluded.last_seen END
                    """,
                rows: releaseOrder.map { key in
                    let release = releases[key]!
                    return [.int(key.issue.project), .text(key.issue.hash), .text(key.release), .int(release.events),
                            Self.time(release.firstSeen), Self.time(release.lastSeen)]
                })
            // One row per (issue, day), for the same reason; only facets not stored yet.
            statements += Self.multiRow(
                rowsPerStatement: rowsPerStatement,
                prefix: "INSERT INTO issue_days (issue_id, day, events) VALUES ",
                row: "(\(Self.issueIDSubquery), ?, ?)",
                suffix: " ON CONFLICT (issue_id, day) DO UPDATE SET events = issue_days.events + excluded.events",
                rows: dayOrder.map { key in [.int(key.issue.project), .text(key.issue.hash), .int(key.day), .int(days[key]!)] })
            statements += Self.multiRow(
                rowsPerStatement: rowsPerStatement,
                prefix: "INSERT INTO issue_facets (issue_id, facet, value) VALUES ",
                row: "(\(Self.issueIDSubquery), ?, ?)",
                suffix: " ON CONFLICT (issue_id, facet, value) DO NOTHING",
                rows: facetOrder.map { key in [.int(key.issue.project), .text(key.issue.hash), .text(key.facet), .text(key.value)] })
            statements += Self.sessionStatements(writes, rowsPerStatement: rowsPerStatement)
            for write in writes {
                statements += Self.otherItemStatements(write)
            }
            statements.append(SQLStatement("COMMIT"))
            let written = try await backend.run(statements)

            var newIssueIDs: [IssueKey: Int64] = [:]
            for index in newIssueStatements {
                for row in written[index] {
                    guard let id = row.int("id"), let project = row.int("project_id"), let hash = row.string("fingerprint_hash") else { continue }
                    newIssueIDs[IssueKey(project: project, hash: hash)] = id
                }
            }
            for stored in storedInBatch {
                guard let id = newIssueIDs[stored.issue] ?? issues[stored.issue]?.id else {
                    throw CollectorError.storage("issue insert returned no id")
                }
                outcomes[stored.index].event = .stored(issueID: id, newIssue: stored.newIssue, regressed: stored.regressed)
            }
            return outcomes
        } catch {
            _ = try? await query("ROLLBACK")
            throw error
        }
    }

    /// The facets of an event its issue is filtered by (`issue_facets`): its environment and guard.
    private static func facets(of event: EventRecord) -> [(facet: String, value: String)] {
        var facets: [(facet: String, value: String)] = []
        if let environment = event.environment { facets.append(("environment", environment)) }
        if let guardName = event.incidentGuard { facets.append(("guard", guardName)) }
        return facets
    }

    /// The UTC day of `date`, in days since 1970 (`issue_days.day`).
    static func day(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 / 86_400).rounded(.down)) }

    /// Rows per multi-row statement: 100 on PostgreSQL (65,535 parameters per statement at most);
    /// 1 on SQLite. SQLite runs statements in process, so a statement costs it no round trip, and a
    /// statement that writes several rows inside a transaction must be able to undo itself alone
    /// (a constraint failure on its fifth row aborts the statement, not the transaction): SQLite
    /// then keeps a statement journal with a copy of every existing page the statement changes,
    /// in a temporary file beyond 64 KiB, about 5 extra page writes per event. A one-row
    /// statement needs none. Either way a failing statement fails the whole batch, which
    /// `IngestWriter` then retries write by write.
    private static func rowsPerStatement(postgres: Bool) -> Int { postgres ? 100 : 1 }

    private static func chunkCount(_ rows: Int, _ rowsPerStatement: Int) -> Int { (rows + rowsPerStatement - 1) / rowsPerStatement }

    /// `prefix row, row, ... suffix` statements, `rowsPerStatement` rows each; none for no rows.
    /// Statements of the same row count share one text, built once.
    private static func multiRow(rowsPerStatement: Int, prefix: String, row: String, suffix: String = "", rows: [[DBValue]]) -> [SQLStatement] {
        var texts: [Int: String] = [:]
        var statements: [SQLStatement] = []
        statements.reserveCapacity(chunkCount(rows.count, rowsPerStatement))
        for start in stride(from: 0, to: rows.count, by: rowsPerStatement) {
            let chunk = rows[start..<min(start + rowsPerStatement, rows.count)]
            let sql: String
            if let text = texts[chunk.count] {
                sql = text
            } else {
                sql = prefix + Array(repeating: row, count: chunk.count).joined(separator: ", ") + suffix
                texts[chunk.count] = sql
            }
            statements.append(SQLStatement(sql, chunk.count == 1 ? chunk[chunk.startIndex] : chunk.flatMap { $0 }))
        }
        return statements
    }

    /// The batch's session updates as multi-row upserts. A multi-row upsert may not touch a row
    /// twice, so the k-th update of each session goes in the k-th round: updates of one session
    /// keep their order, and updates of different sessions do not interact.
    private static func sessionStatements(_ writes: [IngestWrite], rowsPerStatement: Int) -> [SQLStatement] {
        struct SessionKey: Hashable {
            let project: Int64
            let sid: String
        }
        var rounds: [[[DBValue]]] = []
        var seen: [SessionKey: Int] = [:]
        for write in writes {
            for update in write.sessions {
                let key = SessionKey(project: write.projectID, sid: update.sessionID)
                let round = seen[key, default: 0]
                seen[key] = round + 1
                if round == rounds.count { rounds.append([]) }
                rounds[round].append(
                    [.int(write.projectID), .text(update.sessionID), text(update.distinctID), .int(update.sequence),
                     time(update.started), time(update.timestamp), .text(update.status), .int(update.errors),
                     .text(update.release), text(update.environment), time(write.received)])
            }
        }
        // A terminal state (exited, crashed, abnormal) is final; an update older than the
        // stored one (lower seq) is ignored.
        return rounds.flatMap { rows in
            multiRow(
                rowsPerStatement: rowsPerStatement,
                prefix: """
                    INSERT INTO sessions (project_id, sid, distinct_id, seq, started, last_update, status, errors, release,
                        environment, received) VALUES
                    """,
                row: "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                suffix: """
                     ON CONFLICT (project_id, sid) DO UPDATE SET status = excluded.status, seq = excluded.seq,
                        errors = CASE WHEN sessions.errors > excluded.errors THEN sessions.errors ELSE excluded.errors END,
                        last_update = excluded.last_update, distinct_id = coalesce(excluded.distinct_id, sessions.distinct_id),
                        received = excluded.received
                    WHERE sessions.status NOT IN ('exited', 'crashed', 'abnormal') AND excluded.seq >= sessions.seq
                    """,
                rows: rows)
        }
    }

    /// Session aggregates, attachments and client reports of one write, in the order one-by-one
    /// ingestion stores them.
    private static func otherItemStatements(_ write: IngestWrite) -> [SQLStatement] {
        var statements: [SQLStatement] = []
        let project = DBValue.int(write.projectID)
        for aggregate in write.sessionAggregates {
            let bucket = (aggregate.started.timeIntervalSince1970 / 3600).rounded(.down) * 3600
            statements.append(SQLStatement(
                """
                INSERT INTO session_aggregates (project_id, release, environment, bucket, exited, errored, abnormal, crashed)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (project_id, release, environment, bucket) DO UPDATE SET
                    exited = session_aggregates.exited + excluded.exited, errored = session_aggregates.errored + excluded.errored,
                    abnormal = session_aggregates.abnormal + excluded.abnormal, crashed = session_aggregates.crashed + excluded.crashed
                """,
                [project, .text(aggregate.release), .text(aggregate.environment ?? ""), .double(bucket),
                 .int(aggregate.exited), .int(aggregate.errored), .int(aggregate.abnormal), .int(aggregate.crashed)]))
        }
        for attachment in write.attachments {
            statements.append(SQLStatement(
                """
                INSERT INTO attachments (project_id, event_id, filename, content_type, attachment_type, size, data, received)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [project, text(attachment.eventID), .text(attachment.filename), text(attachment.contentType),
                 text(attachment.attachmentType), .int(Int64(attachment.data.count)), .blob(attachment.data), time(write.received)]))
        }
        for entry in write.discarded {
            statements.append(SQLStatement(
                """
                INSERT INTO client_reports (project_id, reason, category, quantity, last_received) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (project_id, reason, category) DO UPDATE SET quantity = client_reports.quantity + excluded.quantity,
                    last_received = excluded.last_received
                """,
                [project, .text(entry.reason), .text(entry.category), .int(entry.quantity), time(write.received)]))
        }
        return statements
    }
}
