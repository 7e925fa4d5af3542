import Foundation

// `AccountStore` and `DashboardQueries` on `SQLStore`, for SQLite and PostgreSQL alike: `?`
// placeholders (the PostgreSQL backend numbers them), times as seconds since 1970, no
// database-specific functions. The tables come from `SQLStore.migrations` (accounts: version 1,
// login sessions: version 3).
extension SQLStore: AccountStore, DashboardQueries {
    private static func account(_ row: DBRow, prefix: String = "") -> Account? {
        guard let id = row.int(prefix + "id"), let name = row.string(prefix + "email"),
              let hash = row.string(prefix + "password_hash"), let created = row.double(prefix + "created_at")
        else { return nil }
        return Account(id: id, name: name, passwordHash: hash, isAdmin: (row.int(prefix + "is_admin") ?? 0) != 0,
                       createdAt: Date(timeIntervalSince1970: created))
    }

    public func accountCount() async throws -> Int64 {
        try await serialized { try await query("SELECT count(*) AS n FROM accounts").first?.int("n") ?? 0 }
    }

    public func createAccount(name: String, passwordHash: String, isAdmin: Bool, created: Date) async throws -> Account {
        try await serialized {
            let rows = try await query(
                "INSERT INTO accounts (email, password_hash, is_admin, created_at) VALUES (?, ?, ?, ?) RETURNING id, email, password_hash, is_admin, created_at",
                [.text(name), .text(passwordHash), Self.int(isAdmin ? 1 : 0), Self.time(created)])
            guard let account = rows.first.flatMap({ Self.account($0) }) else { throw CollectorError.storage("account insert returned no row") }
            return account
        }
    }

    public func account(name: String) async throws -> Account? {
        try await serialized {
            try await query("SELECT id, email, password_hash, is_admin, created_at FROM accounts WHERE email = ?", [.text(name)])
                .first.flatMap { Self.account($0) }
        }
    }

    public func insertLoginSession(tokenHash: String, accountID: Int64, csrfToken: String, created: Date, expires: Date) async throws {
        try await serialized {
            _ = try await query(
                "INSERT INTO login_sessions (token_hash, account_id, csrf_token, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
                [.text(tokenHash), Self.int(accountID), .text(csrfToken), Self.time(created), Self.time(expires)])
        }
    }

    public func loginSession(tokenHash: String, now: Date) async throws -> LoginSession? {
        try await serialized {
            let rows = try await query(
                """
                SELECT s.csrf_token, s.created_at AS session_created, s.expires_at,
                    a.id AS a_id, a.email AS a_email, a.password_hash AS a_password_hash, a.is_admin AS a_is_admin,
                    a.created_at AS a_created_at
                FROM login_sessions s JOIN accounts a ON a.id = s.account_id
                WHERE s.token_hash = ? AND s.expires_at > ?
                """, [.text(tokenHash), Self.time(now)])
            guard let row = rows.first, let account = Self.account(row, prefix: "a_"),
                  let csrf = row.string("csrf_token"), let created = row.double("session_created"),
                  let expires = row.double("expires_at")
            else { return nil }
            return LoginSession(tokenHash: tokenHash, account: account, csrfToken: csrf,
                                createdAt: Date(timeIntervalSince1970: created), expiresAt: Date(timeIntervalSince1970: expires))
        }
    }

    public func deleteLoginSession(tokenHash: String) async throws {
        try await serialized { _ = try await query("DELETE FROM login_sessions WHERE token_hash = ?", [.text(tokenHash)]) }
    }

    public func deleteExpiredLoginSessions(now: Date) async throws -> Int64 {
        try await serialized {
            Int64(try await query("DELETE FROM login_sessions WHERE expires_at <= ? RETURNING token_hash", [Self.time(now)]).count)
        }
    }

    // MARK: DashboardQueries

    private static func storedEvent(_ row: DBRow) -> StoredEvent? {
        guard let id = row.string("event_id"), let issue = row.int("issue_id"),
              let received = row.double("received"), let timestamp = row.double("timestamp"),
              let payload = row.data("payload")
        else { return nil }
        let summary = EventSummary(
            eventID: id, issueID: issue, received: Date(timeIntervalSince1970: received),
            timestamp: Date(timeIntervalSince1970: timestamp), level: row.string("level") ?? "",
            release: row.string("release"), environment: row.string("environment"),
            platform: row.string("platform"))
        return StoredEvent(summary: summary, payload: payload)
    }

    public func recentEvents(projectID: Int64, limit: Int) async throws -> [StoredEvent] {
        try await serialized {
            try await query(
                """
                SELECT event_id, issue_id, received, timestamp, level, release, environment, platform, payload FROM events
                WHERE project_id = ? ORDER BY received DESC, id DESC LIMIT ?
                """, [Self.int(projectID), Self.int(limit)]
            ).compactMap(Self.storedEvent)
        }
    }

    public func issueEvents(issueID: Int64, limit: Int) async throws -> [StoredEvent] {
        try await serialized {
            try await query(
                """
                SELECT event_id, issue_id, received, timestamp, level, release, environment, platform, payload FROM events
                WHERE issue_id = ? ORDER BY received DESC, id DESC LIMIT ?
                """, [Self.int(issueID), Self.int(limit)]
            ).compactMap(Self.storedEvent)
        }
    }

    public func incidentRows(projectID: Int64, since: Date, limit: Int) async throws -> [IncidentRow] {
        try await serialized {
            try await query(
                """
                SELECT guard_name, release, received FROM incidents WHERE project_id = ? AND received >= ?
                ORDER BY received LIMIT ?
                """, [Self.int(projectID), Self.time(since), Self.int(limit)]
            ).compactMap { row in
                guard let name = row.string("guard_name"), let received = row.double("received") else { return nil }
                return IncidentRow(guardName: name, release: row.string("release"), received: Date(timeIntervalSince1970: received))
            }
        }
    }

    public func sessionRows(projectID: Int64, since: Date, limit: Int) async throws -> [SessionRow] {
        try await serialized {
            let project = Self.int(projectID)
            var rows = try await query(
                "SELECT release, started, status, distinct_id FROM sessions WHERE project_id = ? AND started >= ? ORDER BY started LIMIT ?",
                [project, Self.time(since), Self.int(limit)]
            ).compactMap { row -> SessionRow? in
                guard let release = row.string("release"), let started = row.double("started"),
                      let status = row.string("status") else { return nil }
                return SessionRow(release: release, started: Date(timeIntervalSince1970: started), status: status,
                                  distinctID: row.string("distinct_id"), count: 1)
            }
            for row in try await query(
                """
                SELECT release, bucket, exited, errored, abnormal, crashed FROM session_aggregates
                WHERE project_id = ? AND bucket >= ? ORDER BY bucket LIMIT ?
                """, [project, Self.time(since), Self.int(limit)])
            {
                guard let release = row.string("release"), let bucket = row.double("bucket") else { continue }
                let started = Date(timeIntervalSince1970: bucket)
                for status in ["exited", "errored", "abnormal", "crashed"] {
                    let count = row.int(status) ?? 0
                    if count > 0 { rows.append(SessionRow(release: release, started: started, status: status, distinctID: nil, count: count)) }
                }
            }
            return rows
        }
    }
}
