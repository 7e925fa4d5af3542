import Foundation
import Logging
import NIOCore
import SQLiteNIO

/// `CollectorStore` on one SQLite file (or `:memory:` for tests).
///
/// One connection, in WAL mode, is the only writer; every method runs under one async lock, so
/// a transaction's statements never interleave with another's. Times are stored as seconds since
/// 1970 (REAL).
public final class SQLiteStore: CollectorStore {
    private let connection: SQLiteConnection
    private let lock = AsyncLock()
    private let logger: Logger

    /// Opens (creating when missing) the database at `path`; `":memory:"` opens a private
    /// in-memory database. Call `migrate()` before use.
    public static func open(path: String, logger: Logger) async throws -> SQLiteStore {
        let storage: SQLiteConnection.Storage = path == ":memory:" ? .memory : .file(path: path)
        let connection = try await SQLiteConnection.open(storage: storage, logger: logger)
        let store = SQLiteStore(connection: connection, logger: logger)
        if path != ":memory:" {
            _ = try await connection.query("PRAGMA journal_mode=WAL", [])
            _ = try await connection.query("PRAGMA synchronous=NORMAL", [])
        }
        _ = try await connection.query("PRAGMA foreign_keys=ON", [])
        _ = try await connection.query("PRAGMA busy_timeout=5000", [])
        return store
    }

    private init(connection: SQLiteConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    public func close() async throws { try await connection.close() }

    // MARK: Helpers

    func query(_ sql: String, _ binds: [SQLiteData] = []) async throws -> [SQLiteRow] {
        try await connection.query(sql, binds)
    }

    func serialized<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await lock.withLock(body)
    }

    func transaction<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await lock.withLock {
            _ = try await query("BEGIN IMMEDIATE")
            do {
                let result = try await body()
                _ = try await query("COMMIT")
                return result
            } catch {
                _ = try? await query("ROLLBACK")
                throw error
            }
        }
    }

    static func text(_ value: String?) -> SQLiteData { value.map { .text($0) } ?? .null }
    static func time(_ date: Date) -> SQLiteData { .float(date.timeIntervalSince1970) }
    private static func blob(_ data: Data) -> SQLiteData { .blob(ByteBuffer(bytes: data)) }

    // MARK: Migrations

    /// Schema versions in order; a migration is never edited once released, only followed by a new one.
    static let migrations: [(version: Int, statements: [String])] = [
        (1, [
            """
            CREATE TABLE projects (
                id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, public_key TEXT NOT NULL UNIQUE,
                config_signing_key BLOB NOT NULL, created_at REAL NOT NULL)
            """,
            """
            CREATE TABLE issues (
                id INTEGER PRIMARY KEY AUTOINCREMENT, project_id INTEGER NOT NULL REFERENCES projects(id),
                fingerprint_hash TEXT NOT NULL, grouping_algorithm TEXT NOT NULL, title TEXT NOT NULL,
                culprit TEXT NOT NULL, level TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'unresolved',
                resolved_in_release TEXT, first_seen REAL NOT NULL, last_seen REAL NOT NULL,
                first_release TEXT, last_release TEXT, event_count INTEGER NOT NULL DEFAULT 0,
                user_count INTEGER NOT NULL DEFAULT 0, UNIQUE (project_id, fingerprint_hash))
            """,
            """
            CREATE TABLE events (
                id INTEGER PRIMARY KEY AUTOINCREMENT, project_id INTEGER NOT NULL REFERENCES projects(id),
                event_id TEXT NOT NULL, issue_id INTEGER NOT NULL REFERENCES issues(id), received REAL NOT NULL,
                timestamp REAL NOT NULL, level TEXT NOT NULL, platform TEXT, release TEXT, environment TEXT,
                user_key TEXT, incident_guard TEXT, payload BLOB NOT NULL,
                payload_encoding TEXT NOT NULL DEFAULT 'identity', UNIQUE (project_id, event_id))
            """,
            "CREATE INDEX events_issue ON events (issue_id, received)",
            "CREATE INDEX events_received ON events (received)",
            """
            CREATE VIEW incidents AS
                SELECT project_id, event_id, issue_id, incident_guard AS guard_name, release, received
                FROM events WHERE incident_guard IS NOT NULL
            """,
            """
            CREATE TABLE issue_users (
                issue_id INTEGER NOT NULL REFERENCES issues(id), user_key TEXT NOT NULL,
                PRIMARY KEY (issue_id, user_key)) WITHOUT ROWID
            """,
            """
            CREATE TABLE issue_releases (
                issue_id INTEGER NOT NULL REFERENCES issues(id), release TEXT NOT NULL,
                event_count INTEGER NOT NULL, first_seen REAL NOT NULL, last_seen REAL NOT NULL,
                PRIMARY KEY (issue_id, release)) WITHOUT ROWID
            """,
            """
            CREATE TABLE sessions (
                project_id INTEGER NOT NULL REFERENCES projects(id), sid TEXT NOT NULL, distinct_id TEXT,
                seq INTEGER NOT NULL, started REAL NOT NULL, last_update REAL NOT NULL, status TEXT NOT NULL,
                errors INTEGER NOT NULL, release TEXT NOT NULL, environment TEXT, received REAL NOT NULL,
                PRIMARY KEY (project_id, sid))
            """,
            """
            CREATE TABLE session_aggregates (
                project_id INTEGER NOT NULL REFERENCES projects(id), release TEXT NOT NULL,
                environment TEXT NOT NULL, bucket REAL NOT NULL, exited INTEGER NOT NULL,
                errored INTEGER NOT NULL, abnormal INTEGER NOT NULL, crashed INTEGER NOT NULL,
                PRIMARY KEY (project_id, release, environment, bucket))
            """,
            """
            CREATE TABLE attachments (
                id INTEGER PRIMARY KEY AUTOINCREMENT, project_id INTEGER NOT NULL REFERENCES projects(id),
                event_id TEXT, filename TEXT NOT NULL, content_type TEXT, attachment_type TEXT,
                size INTEGER NOT NULL, data BLOB NOT NULL, received REAL NOT NULL)
            """,
            """
            CREATE TABLE client_reports (
                project_id INTEGER NOT NULL REFERENCES projects(id), reason TEXT NOT NULL, category TEXT NOT NULL,
                quantity INTEGER NOT NULL, last_received REAL NOT NULL,
                PRIMARY KEY (project_id, reason, category))
            """,
            """
            CREATE TABLE sdk_configs (
                project_id INTEGER NOT NULL REFERENCES projects(id), version INTEGER NOT NULL,
                document BLOB NOT NULL, signature TEXT, created_at REAL NOT NULL, restored_from INTEGER,
                PRIMARY KEY (project_id, version))
            """,
            """
            CREATE TABLE accounts (
                id INTEGER PRIMARY KEY AUTOINCREMENT, email TEXT NOT NULL UNIQUE, password_hash TEXT NOT NULL,
                is_admin INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL)
            """,
            """
            CREATE TABLE api_tokens (
                token_hash TEXT PRIMARY KEY, name TEXT NOT NULL, account_id INTEGER REFERENCES accounts(id),
                created_at REAL NOT NULL)
            """,
        ]),
    ]

    public func migrate() async throws {
        try await serialized {
            _ = try await query("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)")
            let applied = Set(try await query("SELECT version FROM schema_migrations").compactMap { $0.column("version")?.integer })
            for migration in Self.migrations where !applied.contains(migration.version) {
                _ = try await query("BEGIN IMMEDIATE")
                do {
                    for statement in migration.statements { _ = try await query(statement) }
                    _ = try await query("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                                        [.integer(migration.version), Self.time(Date())])
                    _ = try await query("COMMIT")
                    logger.info("migration applied", metadata: ["version": "\(migration.version)"])
                } catch {
                    _ = try? await query("ROLLBACK")
                    throw error
                }
            }
        }
    }

    public func appliedMigrations() async throws -> [Int] {
        try await serialized {
            try await query("SELECT version FROM schema_migrations ORDER BY version").compactMap { $0.column("version")?.integer }
        }
    }

    // MARK: Projects

    private static func project(_ row: SQLiteRow) -> Project? {
        guard let id = row.column("id")?.integer, let name = row.column("name")?.string,
              let key = row.column("public_key")?.string, let created = row.column("created_at")?.double,
              let signing = row.column("config_signing_key")?.blob,
              let publicKey = try? CryptoSupport.ed25519PublicKey(privateKey: Data(signing.readableBytesView))
        else { return nil }
        return Project(id: Int64(id), name: name, publicKey: key, createdAt: Date(timeIntervalSince1970: created),
                       configSigningPublicKey: publicKey.base64EncodedString())
    }

    public func createProject(name: String) async throws -> Project {
        let key = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let signing = CryptoSupport.newEd25519PrivateKey()
        return try await serialized {
            let rows = try await query(
                "INSERT INTO projects (name, public_key, config_signing_key, created_at) VALUES (?, ?, ?, ?) RETURNING *",
                [.text(name), .text(key), Self.blob(signing), Self.time(Date())])
            guard let row = rows.first, let project = Self.project(row) else { throw CollectorError.storage("project insert returned no row") }
            return project
        }
    }

    public func projects() async throws -> [Project] {
        try await serialized { try await query("SELECT * FROM projects ORDER BY id").compactMap(Self.project) }
    }

    public func project(id: Int64) async throws -> Project? {
        try await serialized { try await query("SELECT * FROM projects WHERE id = ?", [.integer(Int(id))]).first.flatMap(Self.project) }
    }

    public func configSigningKey(projectID: Int64) async throws -> Data? {
        try await serialized {
            try await query("SELECT config_signing_key FROM projects WHERE id = ?", [.integer(Int(projectID))])
                .first?.column("config_signing_key")?.blob.map { Data($0.readableBytesView) }
        }
    }

    // MARK: Events and issues

    /// Whether an event in `release` reopens an issue resolved in `resolvedIn`.
    /// `resolved`: unless the event's release is older than the one resolved in.
    /// `resolved_in_next_release`: only when the event's release is newer.
    static func regresses(status: IssueStatus, resolvedIn: String?, eventRelease: String?) -> Bool {
        switch status {
        case .resolved:
            guard let resolvedIn, let eventRelease else { return true }
            return ReleaseOrder.compare(eventRelease, resolvedIn) != .orderedAscending
        case .resolvedInNextRelease:
            guard let resolvedIn else { return true }
            guard let eventRelease else { return false }
            return ReleaseOrder.isNewer(eventRelease, than: resolvedIn)
        case .unresolved, .ignored, .regressed:
            return false
        }
    }

    public func insertEvent(_ event: EventRecord) async throws -> EventInsertOutcome {
        try await transaction {
            let project = SQLiteData.integer(Int(event.projectID))
            let existing = try await query("SELECT 1 FROM events WHERE project_id = ? AND event_id = ?", [project, .text(event.eventID)])
            if !existing.isEmpty { return .duplicate }

            let issueRows = try await query(
                "SELECT id, status, resolved_in_release, last_release FROM issues WHERE project_id = ? AND fingerprint_hash = ?",
                [project, .text(event.grouping.hash)])
            let issueID: Int64
            var newIssue = false
            var regressed = false
            if let row = issueRows.first, let id = row.column("id")?.integer {
                issueID = Int64(id)
                let status = IssueStatus(rawValue: row.column("status")?.string ?? "") ?? .unresolved
                regressed = Self.regresses(status: status, resolvedIn: row.column("resolved_in_release")?.string, eventRelease: event.release)
                let lastRelease = row.column("last_release")?.string
                let newLast: String? = {
                    guard let release = event.release else { return lastRelease }
                    guard let lastRelease else { return release }
                    return ReleaseOrder.isNewer(release, than: lastRelease) ? release : lastRelease
                }()
                _ = try await query(
                    """
                    UPDATE issues SET event_count = event_count + 1, last_seen = max(last_seen, ?), last_release = ?,
                        status = CASE WHEN ? THEN 'regressed' ELSE status END,
                        resolved_in_release = CASE WHEN ? THEN NULL ELSE resolved_in_release END
                    WHERE id = ?
                    """,
                    [Self.time(event.received), Self.text(newLast), .integer(regressed ? 1 : 0), .integer(regressed ? 1 : 0), .integer(Int(id))])
            } else {
                let rows = try await query(
                    """
                    INSERT INTO issues (project_id, fingerprint_hash, grouping_algorithm, title, culprit, level, first_seen,
                        last_seen, first_release, last_release, event_count)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1) RETURNING id
                    """,
                    [project, .text(event.grouping.hash), .text(event.grouping.algorithm), .text(event.grouping.title),
                     .text(event.grouping.culprit), .text(event.level), Self.time(event.received), Self.time(event.received),
                     Self.text(event.release), Self.text(event.release)])
                guard let id = rows.first?.column("id")?.integer else { throw CollectorError.storage("issue insert returned no id") }
                issueID = Int64(id)
                newIssue = true
            }
            let issue = SQLiteData.integer(Int(issueID))
            _ = try await query(
                """
                INSERT INTO events (project_id, event_id, issue_id, received, timestamp, level, platform, release,
                    environment, user_key, incident_guard, payload)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [project, .text(event.eventID), issue, Self.time(event.received), Self.time(event.timestamp), .text(event.level),
                 Self.text(event.platform), Self.text(event.release), Self.text(event.environment), Self.text(event.userKey),
                 Self.text(event.incidentGuard), Self.blob(event.payload)])
            if let user = event.userKey {
                let inserted = try await query(
                    "INSERT INTO issue_users (issue_id, user_key) VALUES (?, ?) ON CONFLICT DO NOTHING RETURNING 1 AS added",
                    [issue, .text(user)])
                if !inserted.isEmpty {
                    _ = try await query("UPDATE issues SET user_count = user_count + 1 WHERE id = ?", [issue])
                }
            }
            if let release = event.release {
                _ = try await query(
                    """
                    INSERT INTO issue_releases (issue_id, release, event_count, first_seen, last_seen) VALUES (?, ?, 1, ?, ?)
                    ON CONFLICT (issue_id, release) DO UPDATE SET event_count = event_count + 1,
                        last_seen = max(last_seen, excluded.last_seen)
                    """,
                    [issue, .text(release), Self.time(event.received), Self.time(event.received)])
            }
            return .stored(issueID: issueID, newIssue: newIssue, regressed: regressed)
        }
    }

    private static func issue(_ row: SQLiteRow) -> Issue? {
        guard let id = row.column("id")?.integer, let project = row.column("project_id")?.integer,
              let hash = row.column("fingerprint_hash")?.string, let first = row.column("first_seen")?.double,
              let last = row.column("last_seen")?.double
        else { return nil }
        return Issue(
            id: Int64(id), projectID: Int64(project), fingerprintHash: hash,
            groupingAlgorithm: row.column("grouping_algorithm")?.string ?? "",
            title: row.column("title")?.string ?? "", culprit: row.column("culprit")?.string ?? "",
            level: row.column("level")?.string ?? "error",
            status: IssueStatus(rawValue: row.column("status")?.string ?? "") ?? .unresolved,
            resolvedInRelease: row.column("resolved_in_release")?.string,
            firstSeen: Date(timeIntervalSince1970: first), lastSeen: Date(timeIntervalSince1970: last),
            firstRelease: row.column("first_release")?.string, lastRelease: row.column("last_release")?.string,
            eventCount: Int64(row.column("event_count")?.integer ?? 0), userCount: Int64(row.column("user_count")?.integer ?? 0))
    }

    public func issues(projectID: Int64) async throws -> [Issue] {
        try await serialized {
            try await query("SELECT * FROM issues WHERE project_id = ? ORDER BY last_seen DESC", [.integer(Int(projectID))]).compactMap(Self.issue)
        }
    }

    public func issue(id: Int64) async throws -> Issue? {
        try await serialized { try await query("SELECT * FROM issues WHERE id = ?", [.integer(Int(id))]).first.flatMap(Self.issue) }
    }

    public func setIssueStatus(id: Int64, _ status: IssueStatus) async throws -> Issue? {
        try await transaction {
            let resolving = status == .resolved || status == .resolvedInNextRelease
            _ = try await query(
                "UPDATE issues SET status = ?, resolved_in_release = CASE WHEN ? THEN last_release ELSE NULL END WHERE id = ?",
                [.text(status.rawValue), .integer(resolving ? 1 : 0), .integer(Int(id))])
            return try await query("SELECT * FROM issues WHERE id = ?", [.integer(Int(id))]).first.flatMap(Self.issue)
        }
    }

    public func events(issueID: Int64, limit: Int) async throws -> [EventSummary] {
        try await serialized {
            try await query(
                """
                SELECT event_id, issue_id, received, timestamp, level, release, environment, platform FROM events
                WHERE issue_id = ? ORDER BY received DESC, id DESC LIMIT ?
                """, [.integer(Int(issueID)), .integer(limit)]
            ).compactMap { row in
                guard let id = row.column("event_id")?.string, let issue = row.column("issue_id")?.integer,
                      let received = row.column("received")?.double, let timestamp = row.column("timestamp")?.double
                else { return nil }
                return EventSummary(eventID: id, issueID: Int64(issue), received: Date(timeIntervalSince1970: received),
                                    timestamp: Date(timeIntervalSince1970: timestamp), level: row.column("level")?.string ?? "",
                                    release: row.column("release")?.string, environment: row.column("environment")?.string,
                                    platform: row.column("platform")?.string)
            }
        }
    }

    public func eventPayload(projectID: Int64, eventID: String) async throws -> Data? {
        try await serialized {
            try await query("SELECT payload FROM events WHERE project_id = ? AND event_id = ?", [.integer(Int(projectID)), .text(eventID)])
                .first?.column("payload")?.blob.map { Data($0.readableBytesView) }
        }
    }

    // MARK: Sessions, attachments, client reports

    public func recordSession(projectID: Int64, _ update: SessionUpdate) async throws {
        try await serialized {
            // A terminal state (exited, crashed, abnormal) is final; an update older than the
            // stored one (lower seq) is ignored.
            _ = try await query(
                """
                INSERT INTO sessions (project_id, sid, distinct_id, seq, started, last_update, status, errors, release,
                    environment, received)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (project_id, sid) DO UPDATE SET status = excluded.status, seq = excluded.seq,
                    errors = max(sessions.errors, excluded.errors), last_update = excluded.last_update,
                    distinct_id = coalesce(excluded.distinct_id, sessions.distinct_id), received = excluded.received
                WHERE sessions.status NOT IN ('exited', 'crashed', 'abnormal') AND excluded.seq >= sessions.seq
                """,
                [.integer(Int(projectID)), .text(update.sessionID), Self.text(update.distinctID), .integer(Int(update.sequence)),
                 Self.time(update.started), Self.time(update.timestamp), .text(update.status), .integer(Int(update.errors)),
                 .text(update.release), Self.text(update.environment), Self.time(Date())])
        }
    }

    public func recordSessionAggregates(projectID: Int64, _ aggregates: [SessionAggregate]) async throws {
        try await transaction {
            for aggregate in aggregates {
                let bucket = (aggregate.started.timeIntervalSince1970 / 3600).rounded(.down) * 3600
                _ = try await query(
                    """
                    INSERT INTO session_aggregates (project_id, release, environment, bucket, exited, errored, abnormal, crashed)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (project_id, release, environment, bucket) DO UPDATE SET
                        exited = exited + excluded.exited, errored = errored + excluded.errored,
                        abnormal = abnormal + excluded.abnormal, crashed = crashed + excluded.crashed
                    """,
                    [.integer(Int(projectID)), .text(aggregate.release), .text(aggregate.environment ?? ""), .float(bucket),
                     .integer(Int(aggregate.exited)), .integer(Int(aggregate.errored)), .integer(Int(aggregate.abnormal)),
                     .integer(Int(aggregate.crashed))])
            }
        }
    }

    public func storeAttachment(projectID: Int64, eventID: String?, filename: String, contentType: String?,
                                attachmentType: String?, data: Data, received: Date) async throws {
        try await serialized {
            _ = try await query(
                """
                INSERT INTO attachments (project_id, event_id, filename, content_type, attachment_type, size, data, received)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [.integer(Int(projectID)), Self.text(eventID), .text(filename), Self.text(contentType), Self.text(attachmentType),
                 .integer(data.count), Self.blob(data), Self.time(received)])
        }
    }

    public func recordClientReport(projectID: Int64, _ discarded: [DiscardedCount], received: Date) async throws {
        try await transaction {
            for entry in discarded {
                _ = try await query(
                    """
                    INSERT INTO client_reports (project_id, reason, category, quantity, last_received) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (project_id, reason, category) DO UPDATE SET quantity = quantity + excluded.quantity,
                        last_received = excluded.last_received
                    """,
                    [.integer(Int(projectID)), .text(entry.reason), .text(entry.category), .integer(Int(entry.quantity)), Self.time(received)])
            }
        }
    }

    public func attachmentCount(projectID: Int64) async throws -> Int64 {
        try await serialized {
            Int64(try await query("SELECT count(*) AS n FROM attachments WHERE project_id = ?", [.integer(Int(projectID))]).first?.column("n")?.integer ?? 0)
        }
    }

    public func discardedTotal(projectID: Int64) async throws -> Int64 {
        try await serialized {
            Int64(try await query("SELECT coalesce(sum(quantity), 0) AS n FROM client_reports WHERE project_id = ?",
                                  [.integer(Int(projectID))]).first?.column("n")?.integer ?? 0)
        }
    }

    public func releaseHealth(projectID: Int64) async throws -> [ReleaseHealth] {
        try await serialized {
            let project = SQLiteData.integer(Int(projectID))
            var byRelease: [String: ReleaseHealth] = [:]
            for row in try await query(
                """
                SELECT release, count(*) AS sessions,
                    sum(status = 'crashed') AS crashed, sum(status = 'abnormal') AS abnormal,
                    sum(status NOT IN ('crashed', 'abnormal') AND (errors > 0 OR status = 'errored')) AS errored,
                    count(DISTINCT distinct_id) AS users,
                    count(DISTINCT CASE WHEN status = 'crashed' THEN distinct_id END) AS crashed_users
                FROM sessions WHERE project_id = ? GROUP BY release
                """, [project])
            {
                guard let release = row.column("release")?.string else { continue }
                func n(_ key: String) -> Int64 { Int64(row.column(key)?.integer ?? 0) }
                byRelease[release] = ReleaseHealth(release: release, sessions: n("sessions"), crashedSessions: n("crashed"),
                                                   abnormalSessions: n("abnormal"), erroredSessions: n("errored"),
                                                   users: n("users"), crashedUsers: n("crashed_users"))
            }
            for row in try await query(
                """
                SELECT release, sum(exited + errored + abnormal + crashed) AS sessions, sum(crashed) AS crashed,
                    sum(abnormal) AS abnormal, sum(errored) AS errored
                FROM session_aggregates WHERE project_id = ? GROUP BY release
                """, [project])
            {
                guard let release = row.column("release")?.string else { continue }
                func n(_ key: String) -> Int64 { Int64(row.column(key)?.integer ?? 0) }
                let base = byRelease[release]
                byRelease[release] = ReleaseHealth(
                    release: release, sessions: (base?.sessions ?? 0) + n("sessions"),
                    crashedSessions: (base?.crashedSessions ?? 0) + n("crashed"),
                    abnormalSessions: (base?.abnormalSessions ?? 0) + n("abnormal"),
                    erroredSessions: (base?.erroredSessions ?? 0) + n("errored"),
                    users: base?.users ?? 0, crashedUsers: base?.crashedUsers ?? 0)
            }
            return byRelease.values.sorted { ReleaseOrder.isNewer($0.release, than: $1.release) }
        }
    }

    public func incidents(projectID: Int64) async throws -> [IncidentCount] {
        try await serialized {
            try await query(
                """
                SELECT guard_name, release, count(*) AS n, max(received) AS last_seen FROM incidents
                WHERE project_id = ? GROUP BY guard_name, release ORDER BY n DESC, guard_name
                """, [.integer(Int(projectID))]
            ).compactMap { row in
                guard let name = row.column("guard_name")?.string, let last = row.column("last_seen")?.double else { return nil }
                return IncidentCount(guardName: name, release: row.column("release")?.string,
                                     count: Int64(row.column("n")?.integer ?? 0), lastSeen: Date(timeIntervalSince1970: last))
            }
        }
    }

    // MARK: SDK configuration

    private static func sdkConfig(_ row: SQLiteRow) -> SDKConfigVersion? {
        guard let project = row.column("project_id")?.integer, let version = row.column("version")?.integer,
              let document = row.column("document")?.blob, let created = row.column("created_at")?.double
        else { return nil }
        return SDKConfigVersion(projectID: Int64(project), version: Int64(version), document: Data(document.readableBytesView),
                                signature: row.column("signature")?.string, createdAt: Date(timeIntervalSince1970: created),
                                restoredFrom: row.column("restored_from")?.integer.map(Int64.init))
    }

    public func insertSDKConfig(_ config: SDKConfigVersion) async throws {
        try await transaction {
            let newest = try await query("SELECT max(version) AS v FROM sdk_configs WHERE project_id = ?", [.integer(Int(config.projectID))])
                .first?.column("v")?.integer
            if let newest, Int64(newest) >= config.version {
                throw CollectorError.conflict("sdk_config.version_conflict", "version \(config.version) is not above the stored version \(newest)")
            }
            _ = try await query(
                "INSERT INTO sdk_configs (project_id, version, document, signature, created_at, restored_from) VALUES (?, ?, ?, ?, ?, ?)",
                [.integer(Int(config.projectID)), .integer(Int(config.version)), Self.blob(config.document), Self.text(config.signature),
                 Self.time(config.createdAt), config.restoredFrom.map { .integer(Int($0)) } ?? .null])
        }
    }

    public func activeSDKConfig(projectID: Int64) async throws -> SDKConfigVersion? {
        try await serialized {
            try await query("SELECT * FROM sdk_configs WHERE project_id = ? ORDER BY version DESC LIMIT 1", [.integer(Int(projectID))])
                .first.flatMap(Self.sdkConfig)
        }
    }

    public func sdkConfigHistory(projectID: Int64) async throws -> [SDKConfigVersion] {
        try await serialized {
            try await query("SELECT * FROM sdk_configs WHERE project_id = ? ORDER BY version DESC", [.integer(Int(projectID))])
                .compactMap(Self.sdkConfig)
        }
    }

    public func sdkConfig(projectID: Int64, version: Int64) async throws -> SDKConfigVersion? {
        try await serialized {
            try await query("SELECT * FROM sdk_configs WHERE project_id = ? AND version = ?", [.integer(Int(projectID)), .integer(Int(version))])
                .first.flatMap(Self.sdkConfig)
        }
    }

    // MARK: API tokens

    public func insertAPIToken(name: String, tokenHash: String, created: Date) async throws {
        try await serialized {
            _ = try await query("INSERT INTO api_tokens (token_hash, name, created_at) VALUES (?, ?, ?)",
                                [.text(tokenHash), .text(name), Self.time(created)])
        }
    }

    public func apiTokenExists(tokenHash: String) async throws -> Bool {
        try await serialized { !(try await query("SELECT 1 FROM api_tokens WHERE token_hash = ?", [.text(tokenHash)]).isEmpty) }
    }

    public func apiTokenCount() async throws -> Int64 {
        try await serialized { Int64(try await query("SELECT count(*) AS n FROM api_tokens").first?.column("n")?.integer ?? 0) }
    }

    // MARK: Retention

    public func deleteData(receivedBefore cutoff: Date) async throws -> Int64 {
        try await transaction {
            let time = Self.time(cutoff)
            let deleted = try await query("DELETE FROM events WHERE received < ? RETURNING 1 AS gone", [time]).count
            _ = try await query("DELETE FROM attachments WHERE received < ?", [time])
            _ = try await query("DELETE FROM sessions WHERE received < ?", [time])
            return Int64(deleted)
        }
    }
}
