import Foundation
import NIOCore
import SQLiteNIO

// `AccountStore` and `DashboardQueries` on SQLite. Every statement here is portable SQL (see
// `AccountStore`): `$n` placeholders in order of appearance (SQLite numbers `$n` parameters by
// first appearance, PostgreSQL by n), DOUBLE PRECISION seconds since 1970, no SQLite functions.
extension SQLiteStore: AccountStore, DashboardQueries {
    /// Account-schema versions, applied in order and recorded in `account_schema_migrations`
    /// (separate from the core schema's `schema_migrations`). Never edited once released.
    static let accountMigrations: [(version: Int, statements: [String])] = [
        (1001, [
            // `accounts` itself is created by the core schema (version 1).
            """
            CREATE TABLE login_sessions (
                token_hash TEXT PRIMARY KEY, account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                csrf_token TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL)
            """,
            "CREATE INDEX login_sessions_expires ON login_sessions (expires_at)",
        ]),
    ]

    public func migrateAccounts() async throws {
        try await transaction {
            _ = try await query("CREATE TABLE IF NOT EXISTS account_schema_migrations (version BIGINT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)")
            let applied = Set(try await query("SELECT version FROM account_schema_migrations").compactMap { $0.column("version")?.integer })
            for migration in Self.accountMigrations where !applied.contains(migration.version) {
                for statement in migration.statements { _ = try await query(statement) }
                _ = try await query("INSERT INTO account_schema_migrations (version, applied_at) VALUES ($1, $2)",
                                    [.integer(migration.version), Self.time(Date())])
            }
        }
    }

    private static func account(_ row: SQLiteRow, prefix: String = "") -> Account? {
        guard let id = row.column(prefix + "id")?.integer, let name = row.column(prefix + "email")?.string,
              let hash = row.column(prefix + "password_hash")?.string, let created = row.column(prefix + "created_at")?.double
        else { return nil }
        return Account(id: Int64(id), name: name, passwordHash: hash, isAdmin: (row.column(prefix + "is_admin")?.integer ?? 0) != 0,
                       createdAt: Date(timeIntervalSince1970: created))
    }

    public func accountCount() async throws -> Int64 {
        try await serialized { Int64(try await query("SELECT count(*) AS n FROM accounts").first?.column("n")?.integer ?? 0) }
    }

    public func createAccount(name: String, passwordHash: String, isAdmin: Bool, created: Date) async throws -> Account {
        try await serialized {
            let rows = try await query(
                "INSERT INTO accounts (email, password_hash, is_admin, created_at) VALUES ($1, $2, $3, $4) RETURNING *",
                [.text(name), .text(passwordHash), .integer(isAdmin ? 1 : 0), Self.time(created)])
            guard let account = rows.first.flatMap({ Self.account($0) }) else { throw CollectorError.storage("account insert returned no row") }
            return account
        }
    }

    public func account(name: String) async throws -> Account? {
        try await serialized { try await query("SELECT * FROM accounts WHERE email = $1", [.text(name)]).first.flatMap { Self.account($0) } }
    }

    public func insertLoginSession(tokenHash: String, accountID: Int64, csrfToken: String, created: Date, expires: Date) async throws {
        try await serialized {
            _ = try await query(
                "INSERT INTO login_sessions (token_hash, account_id, csrf_token, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
                [.text(tokenHash), .integer(Int(accountID)), .text(csrfToken), Self.time(created), Self.time(expires)])
        }
    }

    public func loginSession(tokenHash: String, now: Date) async throws -> LoginSession? {
        try await serialized {
            let rows = try await query(
                """
                SELECT s.token_hash, s.csrf_token, s.created_at AS session_created, s.expires_at,
                    a.id AS a_id, a.email AS a_email, a.password_hash AS a_password_hash, a.is_admin AS a_is_admin,
                    a.created_at AS a_created_at
                FROM login_sessions s JOIN accounts a ON a.id = s.account_id
                WHERE s.token_hash = $1 AND s.expires_at > $2
                """, [.text(tokenHash), Self.time(now)])
            guard let row = rows.first, let account = Self.account(row, prefix: "a_"),
                  let csrf = row.column("csrf_token")?.string, let created = row.column("session_created")?.double,
                  let expires = row.column("expires_at")?.double
            else { return nil }
            return LoginSession(tokenHash: tokenHash, account: account, csrfToken: csrf,
                                createdAt: Date(timeIntervalSince1970: created), expiresAt: Date(timeIntervalSince1970: expires))
        }
    }

    public func deleteLoginSession(tokenHash: String) async throws {
        try await serialized { _ = try await query("DELETE FROM login_sessions WHERE token_hash = $1", [.text(tokenHash)]) }
    }

    public func deleteExpiredLoginSessions(now: Date) async throws -> Int64 {
        try await serialized {
            Int64(try await query("DELETE FROM login_sessions WHERE expires_at <= $1 RETURNING token_hash", [Self.time(now)]).count)
        }
    }

    // MARK: DashboardQueries

    private static func storedEvent(_ row: SQLiteRow) -> StoredEvent? {
        guard let id = row.column("event_id")?.string, let issue = row.column("issue_id")?.integer,
              let received = row.column("received")?.double, let timestamp = row.column("timestamp")?.double,
              let payload = row.column("payload")?.blob
        else { return nil }
        let summary = EventSummary(
            eventID: id, issueID: Int64(issue), received: Date(timeIntervalSince1970: received),
            timestamp: Date(timeIntervalSince1970: timestamp), level: row.column("level")?.string ?? "",
            release: row.column("release")?.string, environment: row.column("environment")?.string,
            platform: row.column("platform")?.string)
        return StoredEvent(summary: summary, payload: Data(payload.readableBytesView))
    }

    public func recentEvents(projectID: Int64, limit: Int) async throws -> [StoredEvent] {
        try await serialized {
            try await query(
                """
                SELECT event_id, issue_id, received, timestamp, level, release, environment, platform, payload FROM events
                WHERE project_id = $1 ORDER BY received DESC, id DESC LIMIT $2
                """, [.integer(Int(projectID)), .integer(limit)]
            ).compactMap(Self.storedEvent)
        }
    }

    public func issueEvents(issueID: Int64, limit: Int) async throws -> [StoredEvent] {
        try await serialized {
            try await query(
                """
                SELECT event_id, issue_id, received, timestamp, level, release, environment, platform, payload FROM events
                WHERE issue_id = $1 ORDER BY received DESC, id DESC LIMIT $2
                """, [.integer(Int(issueID)), .integer(limit)]
            ).compactMap(Self.storedEvent)
        }
    }

    public func incidentRows(projectID: Int64, since: Date, limit: Int) async throws -> [IncidentRow] {
        try await serialized {
            try await query(
                """
                SELECT guard_name, release, received FROM incidents WHERE project_id = $1 AND received >= $2
                ORDER BY received LIMIT $3
                """, [.integer(Int(projectID)), Self.time(since), .integer(limit)]
            ).compactMap { row in
                guard let name = row.column("guard_name")?.string, let received = row.column("received")?.double else { return nil }
                return IncidentRow(guardName: name, release: row.column("release")?.string, received: Date(timeIntervalSince1970: received))
            }
        }
    }

    public func sessionRows(projectID: Int64, since: Date, limit: Int) async throws -> [SessionRow] {
        try await serialized {
            let project = SQLiteData.integer(Int(projectID))
            var rows = try await query(
                "SELECT release, started, status, distinct_id FROM sessions WHERE project_id = $1 AND started >= $2 LIMIT $3",
                [project, Self.time(since), .integer(limit)]
            ).compactMap { row -> SessionRow? in
                guard let release = row.column("release")?.string, let started = row.column("started")?.double,
                      let status = row.column("status")?.string else { return nil }
                return SessionRow(release: release, started: Date(timeIntervalSince1970: started), status: status,
                                  distinctID: row.column("distinct_id")?.string, count: 1)
            }
            for row in try await query(
                """
                SELECT release, bucket, exited, errored, abnormal, crashed FROM session_aggregates
                WHERE project_id = $1 AND bucket >= $2 LIMIT $3
                """, [project, Self.time(since), .integer(limit)])
            {
                guard let release = row.column("release")?.string, let bucket = row.column("bucket")?.double else { continue }
                let started = Date(timeIntervalSince1970: bucket)
                for status in ["exited", "errored", "abnormal", "crashed"] {
                    let count = Int64(row.column(status)?.integer ?? 0)
                    if count > 0 { rows.append(SessionRow(release: release, started: started, status: status, distinctID: nil, count: count)) }
                }
            }
            return rows
        }
    }
}
