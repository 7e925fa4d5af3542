import Foundation

/// The issue list: filters, keyset pages, bulk status changes, per-day activity.
///
/// A page is one indexed range scan of `issues` (`issues_last_seen`, `issues_first_seen`,
/// `issues_events`, `issues_users`: project, sorted column, id) from the cursor, stopped after
/// `limit + 1` matching rows; the release, environment and guard filters are primary-key lookups
/// in `issue_releases` and `issue_facets` per issue scanned. The total is a count over the
/// project's issues. Events are never read.
extension SQLStore {
    /// `WHERE` text and binds selecting the project's issues that match `query`'s filters.
    private static func issueFilter(projectID: Int64, _ query: IssueQuery) -> (sql: String, binds: [DBValue]) {
        var clauses = ["project_id = ?"]
        var binds: [DBValue] = [int(projectID)]
        if let statuses = query.statuses {
            let sorted = statuses.map(\.rawValue).sorted()
            clauses.append("status IN (\(Array(repeating: "?", count: sorted.count).joined(separator: ", ")))")
            binds += sorted.map { .text($0) }
        }
        if let level = query.level {
            clauses.append("level = ?")
            binds.append(.text(level))
        }
        if let text = query.text, !text.isEmpty {
            // Substring match, case-insensitive; `%`, `_` and `\` in the text match themselves.
            let escaped = text.lowercased().replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: "%", with: "\\%").replacingOccurrences(of: "_", with: "\\_")
            clauses.append("(lower(title) LIKE ? ESCAPE '\\' OR lower(culprit) LIKE ? ESCAPE '\\')")
            binds += [.text("%" + escaped + "%"), .text("%" + escaped + "%")]
        }
        if let release = query.release {
            clauses.append("EXISTS (SELECT 1 FROM issue_releases r WHERE r.issue_id = issues.id AND r.release = ?)")
            binds.append(.text(release))
        }
        for (facet, value) in [("environment", query.environment), ("guard", query.guardName)] {
            guard let value else { continue }
            clauses.append("EXISTS (SELECT 1 FROM issue_facets f WHERE f.issue_id = issues.id AND f.facet = ? AND f.value = ?)")
            binds += [.text(facet), .text(value)]
        }
        return (clauses.joined(separator: " AND "), binds)
    }

    public func issues(projectID: Int64, query list: IssueQuery) async throws -> IssuePage {
        let (filter, binds) = Self.issueFilter(projectID: projectID, list)
        let column = list.sort.column
        let limit = max(1, list.limit)
        func sortValue(_ issue: Issue) -> Double {
            switch list.sort {
            case .lastSeen: return issue.lastSeen.timeIntervalSince1970
            case .firstSeen: return issue.firstSeen.timeIntervalSince1970
            case .events: return Double(issue.eventCount)
            case .users: return Double(issue.userCount)
            }
        }
        var sql = "SELECT * FROM issues WHERE " + filter
        var pageBinds = binds
        let before = list.cursor?.direction == .before
        if let cursor = list.cursor {
            sql += " AND (\(column), id) \(before ? ">" : "<") (?, ?)"
            pageBinds += [list.sort.isTime ? .double(cursor.value) : .int(Int64(cursor.value)), .int(cursor.id)]
        }
        sql += before ? " ORDER BY \(column) ASC, id ASC LIMIT ?" : " ORDER BY \(column) DESC, id DESC LIMIT ?"
        pageBinds.append(Self.int(limit + 1))
        let (rows, total) = try await read {
            let rows = try await query(sql, pageBinds).compactMap(Self.issue)
            let total = try await query("SELECT count(*) AS n FROM issues WHERE " + filter, binds).first?.int("n") ?? 0
            return (rows, Int64(total))
        }
        let more = rows.count > limit
        var issues = Array(rows.prefix(limit))
        if before { issues.reverse() }
        let first = issues.first.map { IssueCursor(direction: .before, value: sortValue($0), id: $0.id) }
        let last = issues.last.map { IssueCursor(direction: .after, value: sortValue($0), id: $0.id) }
        switch list.cursor?.direction {
        case nil: return IssuePage(issues: issues, total: total, next: more ? last : nil, previous: nil)
        case .after?: return IssuePage(issues: issues, total: total, next: more ? last : nil, previous: first)
        case .before?: return IssuePage(issues: issues, total: total, next: last, previous: more ? first : nil)
        }
    }

    public func setIssueStatus(projectID: Int64, ids: [Int64], _ status: IssueStatus) async throws -> [Int64] {
        let unique = Array(Set(ids)).sorted()
        guard !unique.isEmpty else { return [] }
        let resolving = status == .resolved || status == .resolvedInNextRelease
        return try await transaction {
            try await query(
                """
                UPDATE issues SET status = ?, resolved_in_release = CASE WHEN ? = 1 THEN last_release ELSE NULL END
                WHERE project_id = ? AND id IN (\(Array(repeating: "?", count: unique.count).joined(separator: ", "))) RETURNING id
                """,
                [.text(status.rawValue), Self.int(resolving ? 1 : 0), Self.int(projectID)] + unique.map { Self.int($0) }
            ).compactMap { $0.int("id") }.sorted()
        }
    }

    public func issueActivity(issueIDs: [Int64], days: ClosedRange<Int64>) async throws -> [Int64: [Int64: Int64]] {
        guard !issueIDs.isEmpty else { return [:] }
        let rows = try await read {
            try await query(
                """
                SELECT issue_id, day, events FROM issue_days
                WHERE issue_id IN (\(Array(repeating: "?", count: issueIDs.count).joined(separator: ", "))) AND day >= ? AND day <= ?
                """, issueIDs.map { Self.int($0) } + [Self.int(days.lowerBound), Self.int(days.upperBound)])
        }
        var activity: [Int64: [Int64: Int64]] = [:]
        for row in rows {
            guard let issue = row.int("issue_id"), let day = row.int("day"), let events = row.int("events") else { continue }
            activity[issue, default: [:]][day] = events
        }
        return activity
    }

    public func issueFilterValues(projectID: Int64, limit: Int) async throws -> IssueFilterValues {
        let project = Self.int(projectID)
        let (releases, environments, guards) = try await read {
            // The most recently seen releases, then in release order.
            let releases = try await query(
                """
                SELECT r.release FROM issue_releases r JOIN issues i ON i.id = r.issue_id WHERE i.project_id = ?
                GROUP BY r.release ORDER BY max(r.last_seen) DESC LIMIT ?
                """, [project, Self.int(limit)]).compactMap { $0.string("release") }
            func facet(_ name: String) async throws -> [String] {
                try await query(
                    """
                    SELECT DISTINCT f.value FROM issue_facets f JOIN issues i ON i.id = f.issue_id
                    WHERE f.facet = ? AND i.project_id = ? ORDER BY f.value LIMIT ?
                    """, [.text(name), project, Self.int(limit)]).compactMap { $0.string("value") }
            }
            return (releases, try await facet("environment"), try await facet("guard"))
        }
        return IssueFilterValues(releases: releases.sorted { ReleaseOrder.isNewer($0, than: $1) },
                                 environments: environments, guards: guards)
    }
}
