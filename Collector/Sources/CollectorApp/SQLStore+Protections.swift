import Foundation

/// Protections (`protections`, migration 11) and auto-protect's settings and candidates.
extension SQLStore {
    public func issueReleases(issueID: Int64) async throws -> [String] {
        try await read {
            try await query("SELECT release FROM issue_releases WHERE issue_id = ? ORDER BY last_seen DESC, release", [Self.int(issueID)])
                .compactMap { $0.string("release") }
        }
    }

    public func insertProtection(_ protection: Protection) async throws -> Int64? {
        try await transaction {
            try await query(
                """
                INSERT INTO protections (project_id, issue_id, release, guard_name, policy, origin, class_prefix, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id
                """,
                [Self.int(protection.projectID), Self.int(protection.issueID), .text(protection.release), .text(protection.guardName),
                 .text(protection.policy), .text(protection.origin), Self.text(protection.classPrefix), Self.time(protection.createdAt)]
            ).first?.int("id")
        }
    }

    public func setProtectionVersion(id: Int64, version: Int64) async throws {
        try await transaction { _ = try await query("UPDATE protections SET config_version = ? WHERE id = ?", [Self.int(version), Self.int(id)]) }
    }

    public func deleteProtection(id: Int64) async throws {
        try await transaction { _ = try await query("DELETE FROM protections WHERE id = ?", [Self.int(id)]) }
    }

    private static func protection(_ row: DBRow) -> Protection? {
        guard let id = row.int("id"), let project = row.int("project_id"), let issue = row.int("issue_id"),
              let release = row.string("release"), let guardName = row.string("guard_name"), let policy = row.string("policy"),
              let origin = row.string("origin"), let created = row.double("created_at")
        else { return nil }
        return Protection(id: Int64(id), projectID: Int64(project), issueID: Int64(issue), release: release, guardName: guardName,
                          policy: policy, origin: origin, classPrefix: row.string("class_prefix"),
                          configVersion: row.int("config_version"), createdAt: Date(timeIntervalSince1970: created))
    }

    public func protectionSummaries(projectID: Int64) async throws -> [ProtectionSummary] {
        try await read {
            try await query(
                """
                SELECT p.*,
                    (SELECT count(*) FROM events e WHERE e.issue_id = p.issue_id AND e.release = p.release
                        AND e.incident_guard IS NULL AND e.timestamp < p.created_at) AS crashes_before,
                    (SELECT count(*) FROM events e WHERE e.issue_id = p.issue_id AND e.release = p.release
                        AND e.incident_guard IS NULL AND e.timestamp >= p.created_at) AS crashes_after,
                    (SELECT count(*) FROM events e WHERE e.project_id = p.project_id AND e.incident_guard = p.guard_name
                        AND e.release = p.release AND e.timestamp >= p.created_at) AS incidents_after
                FROM protections p WHERE p.project_id = ? ORDER BY p.created_at DESC, p.id DESC
                """, [Self.int(projectID)]
            ).compactMap { row in
                Self.protection(row).map {
                    ProtectionSummary(protection: $0, crashesBefore: Int64(row.int("crashes_before") ?? 0),
                                      crashesAfter: Int64(row.int("crashes_after") ?? 0), incidentsAfter: Int64(row.int("incidents_after") ?? 0))
                }
            }
        }
    }

    public func protections(issueID: Int64) async throws -> [Protection] {
        try await read {
            try await query("SELECT * FROM protections WHERE issue_id = ? ORDER BY created_at DESC, id DESC", [Self.int(issueID)])
                .compactMap(Self.protection)
        }
    }

    public func autoProtectUsers(projectID: Int64) async throws -> Int64? {
        try await read {
            try await query("SELECT auto_protect_users FROM projects WHERE id = ?", [Self.int(projectID)]).first?.int("auto_protect_users")
        }
    }

    public func setAutoProtectUsers(projectID: Int64, users: Int64?) async throws {
        try await transaction {
            _ = try await query("UPDATE projects SET auto_protect_users = ? WHERE id = ?", [users.map { Self.int($0) } ?? .null, Self.int(projectID)])
        }
    }

    public func autoProtectProjects() async throws -> [(projectID: Int64, users: Int64)] {
        try await read {
            try await query("SELECT id, auto_protect_users FROM projects WHERE auto_protect_users IS NOT NULL ORDER BY id").compactMap { row in
                guard let id = row.int("id"), let users = row.int("auto_protect_users") else { return nil }
                return (Int64(id), Int64(users))
            }
        }
    }

    public func autoProtectCandidates(projectID: Int64, users: Int64, since: Date) async throws -> [AutoProtectCandidate] {
        try await read {
            try await query(
                """
                SELECT e.issue_id, e.release, count(DISTINCT e.user_key) AS users FROM issues i JOIN events e ON e.issue_id = i.id
                WHERE i.project_id = ? AND i.level = 'fatal' AND i.last_seen >= ? AND e.release IS NOT NULL
                    AND e.user_key IS NOT NULL AND e.incident_guard IS NULL
                    AND NOT EXISTS (SELECT 1 FROM protections p WHERE p.issue_id = e.issue_id AND p.release = e.release AND p.origin = 'auto')
                GROUP BY e.issue_id, e.release HAVING count(DISTINCT e.user_key) >= ?
                ORDER BY e.issue_id, e.release
                """, [Self.int(projectID), Self.time(since), Self.int(users)]
            ).compactMap { row in
                guard let issue = row.int("issue_id"), let release = row.string("release"), let count = row.int("users") else { return nil }
                return AutoProtectCandidate(issueID: Int64(issue), release: release, users: Int64(count))
            }
        }
    }
}
