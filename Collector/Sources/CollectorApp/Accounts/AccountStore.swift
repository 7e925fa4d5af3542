import Foundation

/// A person who can log in to the dashboard. `name` is the login name (stored in the
/// `accounts.email` column, which may hold a plain name such as `admin`).
public struct Account: Sendable, Hashable {
    public let id: Int64
    public let name: String
    /// `pbkdf2-sha256$<iterations>$<salt base64>$<hash base64>` (see `PasswordHasher`).
    public let passwordHash: String
    public let isAdmin: Bool
    public let createdAt: Date
}

/// A logged-in browser session as stored: the session token's SHA-256 (the token itself lives
/// only in the browser's cookie), its account, its CSRF token and when it stops being valid.
public struct LoginSession: Sendable, Hashable {
    public let tokenHash: String
    public let account: Account
    /// The value every form of this session carries in its `csrf_token` hidden field.
    public let csrfToken: String
    public let createdAt: Date
    public let expiresAt: Date
}

/// Storage for dashboard accounts and login sessions, separate from `CollectorStore` so that each
/// database implements it in its own file.
///
/// Implementations must be safe to call concurrently. `SQLStore` implements it for SQLite and
/// PostgreSQL (`SQLStore+Accounts.swift`); its tables are part of `CollectorStore.migrate()`.
public protocol AccountStore: Sendable {
    func accountCount() async throws -> Int64
    /// - Throws: when an account with this name exists (the name is unique).
    func createAccount(name: String, passwordHash: String, isAdmin: Bool, created: Date) async throws -> Account
    func account(name: String) async throws -> Account?
    func insertLoginSession(tokenHash: String, accountID: Int64, csrfToken: String, created: Date, expires: Date) async throws
    /// The session with this token hash if it has not expired at `now`, else nil.
    func loginSession(tokenHash: String, now: Date) async throws -> LoginSession?
    func deleteLoginSession(tokenHash: String) async throws
    /// Deletes sessions that expired before `now`; returns how many.
    func deleteExpiredLoginSessions(now: Date) async throws -> Int64

    /// Every account, by name.
    func accounts() async throws -> [Account]
    func account(id: Int64) async throws -> Account?
    /// Replaces the account's password hash and deletes its login sessions except the one whose
    /// token hash is `keepingSession` (nil: all of them), in one transaction.
    func updatePassword(accountID: Int64, passwordHash: String, keepingSession: String?) async throws
    /// Deletes the account with its login sessions and API tokens, in one transaction, so none
    /// of them works afterwards. Returns false when there is no such account.
    /// - Throws: `CollectorError` `account.last_admin` (409) when it is the only admin account.
    func deleteAccount(id: Int64) async throws -> Bool

    /// Stores an API token by its SHA-256 (the token itself is never stored).
    func createAPIToken(name: String, tokenHash: String, accountID: Int64?, created: Date) async throws -> APITokenInfo
    /// The API tokens of one account (`accountID`), or of everyone (nil), newest first.
    func apiTokens(accountID: Int64?) async throws -> [APITokenInfo]
    /// Deletes the token with this hash; with `accountID`, only when that account owns it.
    /// Returns whether a token was deleted.
    func deleteAPIToken(tokenHash: String, accountID: Int64?) async throws -> Bool
    /// Records that the API accepted the token at `now`; writes only when the stored time is
    /// missing or more than a minute older, so a busy script does not write on every request.
    func recordAPITokenUse(tokenHash: String, now: Date) async throws
}

/// An API token as listed: its name, owner and times, never the token (only its SHA-256 is stored).
public struct APITokenInfo: Sendable, Hashable {
    /// The token's SHA-256 (lowercase hex); names the token in a revoke form.
    public let tokenHash: String
    public let name: String
    /// The account that created it; nil for the token made on first start (`initial`).
    public let accountID: Int64?
    public let accountName: String?
    public let createdAt: Date
    /// When the API last accepted it (kept to the minute), nil when never.
    public let lastUsedAt: Date?
}

/// One stored event with its payload, for dashboard pages that read what events carry (tags,
/// contexts, stacks).
public struct StoredEvent: Sendable {
    public let summary: EventSummary
    /// The event's JSON as received.
    public let payload: Data
}

/// A prevented crash: which guard, in which release, when (its event time).
public struct IncidentRow: Sendable, Hashable {
    public let guardName: String
    public let release: String?
    public let time: Date
}

/// Prevented crashes of one guard on one UTC day (`day`: days since 1970), by event time:
/// `count` in all, `recent` of them at or after the query's `recent` time.
public struct IncidentDayCount: Sendable, Hashable {
    public let guardName: String
    public let day: Int64
    public let count: Int64
    public let recent: Int64
}

/// One release-health observation for the timeline charts: a session (or `count` sessions of a
/// pre-aggregated bucket) started at `started` in `release`.
public struct SessionRow: Sendable, Hashable {
    public let release: String
    public let started: Date
    public let status: String
    /// The user (`did`), nil for aggregates and anonymous sessions.
    public let distinctID: String?
    public let count: Int64
}

/// One release's sessions on one UTC day (`releaseDays`). Users count only sessions with a user
/// (`did`); aggregates add sessions without users.
public struct ReleaseDay: Sendable, Hashable {
    public let release: String
    /// The day's start (UTC midnight).
    public let day: Date
    public var sessions: Int64
    public var crashed: Int64
    public var users: Int64
    public var crashedUsers: Int64
}

/// A project with the counts the projects page shows.
public struct ProjectSummary: Sendable, Hashable {
    public let project: Project
    /// Issues unresolved or regressed.
    public let openIssues: Int64
    public let issues: Int64
    /// Prevented crashes (incidents) stored.
    public let incidents: Int64
}

/// Read-only queries the dashboard needs beyond `CollectorStore` (implemented by `SQLStore` for
/// SQLite and PostgreSQL).
public protocol DashboardQueries: Sendable {
    /// Every project (by id) with its issue and incident counts, counted from indexes.
    func projectSummaries() async throws -> [ProjectSummary]
    /// The newest events of a project (by received time), at most `limit`.
    func recentEvents(projectID: Int64, limit: Int) async throws -> [StoredEvent]
    /// The launch-crash page's counts from the launch tags of the project's newest `window` events.
    func launchSummary(projectID: Int64, window: Int) async throws -> LaunchSummary
    /// The newest events of an issue, at most `limit`.
    func issueEvents(issueID: Int64, limit: Int) async throws -> [StoredEvent]
    /// Prevented crashes whose event time is `since` or later, oldest first, at most `limit`.
    func incidentRows(projectID: Int64, since: Date, limit: Int) async throws -> [IncidentRow]
    /// Prevented crashes whose event time is `since` or later, counted per guard and UTC day,
    /// with how many of them are at `recent` or later (the prevented-crash page's chart and trend,
    /// counted by the database instead of read row by row).
    func incidentDayCounts(projectID: Int64, since: Date, recent: Date) async throws -> [IncidentDayCount]
    /// Release health per UTC day of `releases` from the day of `since` on, from the summaries
    /// ingest keeps: sessions (aggregates included), crashed ones, users and crashed users.
    func releaseDays(projectID: Int64, releases: [String], since: Date) async throws -> [ReleaseDay]
    /// Sessions and session aggregates started at or after `since`, at most `limit` rows.
    func sessionRows(projectID: Int64, since: Date, limit: Int) async throws -> [SessionRow]
    /// One event of an issue (`eventID`, or the newest when nil) with the ids of its neighbours in
    /// the issue's order; nil when the issue has no such event. See `IssueEventPosition`.
    func issueEvent(issueID: Int64, projectID: Int64, eventID: String?) async throws -> IssueEventPosition?
    /// The attachments stored with an event of the project (metadata only), in the order
    /// received, at most `limit`.
    func eventAttachments(projectID: Int64, eventID: String, limit: Int) async throws -> [AttachmentInfo]
    /// One attachment of the project with its bytes; nil when the project has none with this id.
    func attachment(projectID: Int64, id: Int64) async throws -> StoredAttachment?
}
