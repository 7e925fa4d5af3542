import Foundation

/// Everything the collector keeps, behind one interface with one implementation per database
/// (`SQLStore`: SQLite or PostgreSQL); dashboard accounts and dashboard reads are in
/// `AccountStore` and `DashboardQueries`. Every method is safe to call concurrently; methods that
/// change several rows do so in one transaction.
public protocol CollectorStore: Sendable {
    /// Brings the schema to the latest version (applies the migrations not yet applied, each in
    /// its own transaction, and records them).
    func migrate() async throws
    /// The schema versions applied, oldest first.
    func appliedMigrations() async throws -> [Int]
    /// Closes the database after the work already started. After `cancelForShutdown` it waits
    /// a bounded time for that work.
    func close() async throws
    /// For a shutdown whose grace period is over: statements not yet started fail with
    /// `storage.cancelled` (503) and a statement waiting on PostgreSQL (for a lock another
    /// connection holds) is cancelled, so no request waits longer and nothing cancelled is
    /// committed. SQLite statements end by themselves within the lock timeout, so it does nothing
    /// there.
    func cancelForShutdown() async
    /// The storage state, checked now (`/health`): `ok`, `unavailable` (the database cannot be
    /// reached) or `full` (its disk is full).
    func checkStorage() async -> StorageState
    /// Runs `body`, a dashboard page or management API read (its queries and the building of its
    /// answer), where pages run: on `SQLStore` whole on a page connection's thread, below ingest's
    /// priority, with at most as many pages at once as there are page connections (see
    /// `SQLStore.withPageRead`).
    func withPageRead<T: Sendable>(_ body: () async throws -> T) async throws -> T

    func createProject(name: String) async throws -> Project
    func projects() async throws -> [Project]
    func project(id: Int64) async throws -> Project?
    /// The project's Ed25519 signing key (raw 32 bytes) for SDK configuration documents.
    func configSigningKey(projectID: Int64) async throws -> Data?

    /// Stores `writes` in one transaction, with the same effect as storing them one after
    /// another in order: an event whose id is already stored for its project (before or earlier
    /// in `writes`) is a duplicate and changes nothing; events of an issue not yet stored create
    /// it once; regressions and user/release counts follow the order of `writes`. Nothing is
    /// stored when it throws. Returns one outcome per write, in order.
    func commitIngest(_ writes: [IngestWrite]) async throws -> [IngestWriteOutcome]
    /// Stores an event and groups it into an issue, unless an event with the same id is already
    /// stored for the project (then nothing changes: ingest is idempotent on `event_id`).
    func insertEvent(_ event: EventRecord) async throws -> EventInsertOutcome
    func recordSession(projectID: Int64, _ update: SessionUpdate) async throws
    func recordSessionAggregates(projectID: Int64, _ aggregates: [SessionAggregate]) async throws
    func storeAttachment(projectID: Int64, eventID: String?, filename: String, contentType: String?,
                         attachmentType: String?, data: Data, received: Date) async throws
    func recordClientReport(projectID: Int64, _ discarded: [DiscardedCount], received: Date) async throws

    func issues(projectID: Int64) async throws -> [Issue]
    /// One page of the project's issues that match `query` (see `IssueQuery`), in its order,
    /// at most `query.limit`, with the number of all that match and the cursors of the pages
    /// around it. Reads the issues (and, for the release, environment and guard filters, their
    /// per-issue summaries), never their events.
    func issues(projectID: Int64, query: IssueQuery) async throws -> IssuePage
    /// Sets the status of the project's issues among `ids` (as `setIssueStatus(id:_:)` does for
    /// one), in one transaction. Returns the ids it changed (ids of other projects or of no
    /// issue are left out).
    func setIssueStatus(projectID: Int64, ids: [Int64], _ status: IssueStatus) async throws -> [Int64]
    /// Events per UTC day (days since 1970, `days`) of each of `issueIDs`, by event time; days
    /// without events are left out.
    func issueActivity(issueIDs: [Int64], days: ClosedRange<Int64>) async throws -> [Int64: [Int64: Int64]]
    /// The releases (the `limit` most recently seen, newest release first), environments and
    /// guards (the first `limit` by name) of the project's issues, for the list's filters.
    func issueFilterValues(projectID: Int64, limit: Int) async throws -> IssueFilterValues
    func issue(id: Int64) async throws -> Issue?
    /// Sets an issue's status. Resolving records the issue's latest release as the one it was
    /// resolved in.
    func setIssueStatus(id: Int64, _ status: IssueStatus) async throws -> Issue?
    func events(issueID: Int64, limit: Int) async throws -> [EventSummary]
    func eventPayload(projectID: Int64, eventID: String) async throws -> Data?
    func attachmentCount(projectID: Int64) async throws -> Int64
    func discardedTotal(projectID: Int64) async throws -> Int64
    func releaseHealth(projectID: Int64) async throws -> [ReleaseHealth]
    func incidents(projectID: Int64) async throws -> [IncidentCount]

    /// Stores the next version of a project's SDK configuration (`version` must be greater than
    /// every stored one, else `sdk_config.version_conflict`).
    func insertSDKConfig(_ config: SDKConfigVersion) async throws
    /// The newest version (the one served), or nil.
    func activeSDKConfig(projectID: Int64) async throws -> SDKConfigVersion?
    /// Every version, newest first.
    func sdkConfigHistory(projectID: Int64) async throws -> [SDKConfigVersion]
    func sdkConfig(projectID: Int64, version: Int64) async throws -> SDKConfigVersion?

    /// The releases an issue's events came from, most recently seen first.
    func issueReleases(issueID: Int64) async throws -> [String]
    /// Records a protection (its `id` and `configVersion` are ignored); returns its id, or nil
    /// when an "auto" protection of the same issue and release exists (nothing stored).
    func insertProtection(_ protection: Protection) async throws -> Int64?
    /// Sets the configuration version that published protection `id`.
    func setProtectionVersion(id: Int64, version: Int64) async throws
    /// Deletes protection `id` (its publication failed).
    func deleteProtection(id: Int64) async throws
    /// The project's protections, newest first, with crash and incident counts around each.
    func protectionSummaries(projectID: Int64) async throws -> [ProtectionSummary]
    /// The protections of one issue, newest first.
    func protections(issueID: Int64) async throws -> [Protection]
    /// Auto-protect's threshold (users per release) for the project; nil: off.
    func autoProtectUsers(projectID: Int64) async throws -> Int64?
    func setAutoProtectUsers(projectID: Int64, users: Int64?) async throws
    /// Projects with auto-protect on, with their thresholds.
    func autoProtectProjects() async throws -> [(projectID: Int64, users: Int64)]
    /// Releases of the project's fatal issues seen since `since` whose crashes came from at least
    /// `users` distinct users and that auto-protect has not protected yet.
    func autoProtectCandidates(projectID: Int64, users: Int64, since: Date) async throws -> [AutoProtectCandidate]

    /// Stores an API token's SHA-256 (the token itself is never stored).
    func insertAPIToken(name: String, tokenHash: String, created: Date) async throws
    func apiTokenExists(tokenHash: String) async throws -> Bool
    /// The token with this SHA-256, with its name and owning account; nil when there is none
    /// (unknown or revoked).
    func apiToken(tokenHash: String) async throws -> APITokenInfo?
    func apiTokenCount() async throws -> Int64

    /// Deletes events, attachments and session rows received before `cutoff`, the per-day event
    /// counts and per-day users of days before it; issue counts, first/last seen, release totals
    /// and release health stay. Returns the number of events deleted.
    func deleteData(receivedBefore cutoff: Date) async throws -> Int64
}

/// Everything one ingest request stores, validated and ready to write (`CollectorStore.commitIngest`).
public struct IngestWrite: Sendable {
    public var projectID: Int64
    public var event: EventRecord?
    public var sessions: [SessionUpdate] = []
    public var sessionAggregates: [SessionAggregate] = []
    public var attachments: [AttachmentRecord] = []
    public var discarded: [DiscardedCount] = []
    /// When the request arrived (attachments and client reports are stamped with it).
    public var received: Date

    public init(projectID: Int64, event: EventRecord? = nil, received: Date = Date()) {
        self.projectID = projectID
        self.event = event
        self.received = received
    }

    /// True when there is nothing to store.
    public var isEmpty: Bool {
        event == nil && sessions.isEmpty && sessionAggregates.isEmpty && attachments.isEmpty && discarded.isEmpty
    }

    /// Payload bytes held in memory until the write is committed (event and attachments).
    public var payloadBytes: Int {
        (event?.payload.count ?? 0) + attachments.reduce(0) { $0 + $1.data.count }
    }
}

/// An attachment item to store with an ingest request.
public struct AttachmentRecord: Sendable {
    public var eventID: String?
    public var filename: String
    public var contentType: String?
    public var attachmentType: String?
    public var data: Data

    public init(eventID: String?, filename: String, contentType: String?, attachmentType: String?, data: Data) {
        self.eventID = eventID
        self.filename = filename
        self.contentType = contentType
        self.attachmentType = attachmentType
        self.data = data
    }
}

/// What `commitIngest` did with one write: its event's outcome (nil when it had no event).
public struct IngestWriteOutcome: Sendable, Hashable {
    public var event: EventInsertOutcome?
}
