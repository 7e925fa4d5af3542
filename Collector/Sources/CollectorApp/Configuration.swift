import Foundation

/// Everything `buildApplication` needs; the command line fills it from its options.
public struct CollectorConfiguration: Sendable {
    /// Where the collector keeps its data.
    public enum Database: Sendable, Hashable {
        /// A SQLite file (created when missing); `":memory:"` for a private in-memory database.
        case sqlite(path: String)
        /// A PostgreSQL server (`postgres://user:password@host:port/database`, any libpq connection
        /// URI). Several collector processes may share one database.
        case postgres(url: String)

        /// `postgres://...` or `postgresql://...` is PostgreSQL; anything else is a SQLite path.
        public init(argument: String) {
            let lower = argument.lowercased()
            self = lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://") ? .postgres(url: argument) : .sqlite(path: argument)
        }
    }

    /// Address to listen on. Default 127.0.0.1.
    public var host: String = "127.0.0.1"
    /// Port to listen on; 0 picks a free port (the running callback reports it). Default 8000.
    public var port: Int = 8000
    public var database: Database
    /// Directory for files the collector writes besides the database. Created when missing.
    public var dataDirectory: String
    public var limits = IngestLimits()
    /// How many ingest requests, and how many of their event and attachment bytes, may wait for
    /// the database at once; beyond either, ingest answers 503 `ingest.queue_full` with
    /// `Retry-After: 1`. Default 2,000 requests and 64 MiB.
    public var ingestQueue = IngestQueueLimits()
    /// Ingest requests per second each project may make once its burst is spent. Default 200.
    public var rateLimitPerSecond: Double = 200
    /// Ingest requests a project may make at once. Default 400.
    public var rateLimitBurst: Int = 400
    /// `Cache-Control: max-age` for `GET /api/<project>/sdk-config`, in seconds. Default 300.
    public var sdkConfigMaxAge: Int = 300
    /// Seconds between auto-protect passes (`ProtectService.autoProtect`; projects switch
    /// auto-protect on in their settings). Default 60.
    public var autoProtectInterval: Double = 60
    /// When set, events, attachments and session rows older than this many days are deleted
    /// once an hour (issue counts stay). Default: kept forever.
    public var retentionDays: Int?
    /// On a database with no API token: the token to create (nil: a random one, reported once
    /// through the running callback).
    public var initialAPIToken: String?
    /// On a database with no project: create one named "default". Default true.
    public var createFirstProject: Bool = true
    /// The URL clients reach the collector at, for the DSNs it prints (nil: `http://host:port`).
    public var publicURL: String?
    /// On a database with no dashboard account: the `admin` account's password (nil or empty: a
    /// random one, reported once through the running callback).
    public var adminPassword: String?
    /// How long a dashboard login lasts, in seconds. Default 12 hours.
    public var sessionLifetime: TimeInterval = 12 * 3600
    /// How long a database statement waits for a lock another connection or process holds (a
    /// concurrent `shield-collector prune`, another collector's commit), in seconds; then the
    /// request fails with 503 `storage.busy` and `Retry-After: 1`, and nothing of it is stored.
    /// SQLite's busy timeout (the wait blocks the calling thread), PostgreSQL's `lock_timeout`
    /// (except while migrating at start, which waits for another collector's migration).
    /// Between 0.001 and 86,400. Default 5.
    public var lockTimeout: TimeInterval = 5
    /// Graceful shutdown (SIGTERM, SIGINT): the server stops accepting connections and requests
    /// in flight get this many seconds to finish. Past it, statements not yet started are refused
    /// and a PostgreSQL statement still running is cancelled; their requests are answered with
    /// 503 `storage.cancelled` (`Retry-After: 5`) and nothing of them is stored. The database is
    /// then closed, waiting at most 5 more seconds for a cancelled statement. At least 0.
    /// Default 10.
    public var shutdownGracePeriod: TimeInterval = 10
    /// Timeouts and caps against slow and idle clients (slowloris): see `ConnectionLimits`.
    public var connections = ConnectionLimits()
    /// The `llvm-symbolizer` executable that symbolicates frames with uploaded debug files; nil
    /// searches `Symbolizer.defaultCandidates()` (PATH, Debian's LLVM, the Swift toolchain).
    public var symbolizer: String?
    /// Seconds one symbolizer run may take; then it is killed and its frames stay as received.
    public var symbolizerTimeout: Double = 10
    /// Seconds between passes that rename new issues named after addresses once debug files name
    /// them (`IssueRenamer`); a stored debug file also starts a pass at once.
    public var issueRenameInterval: Double = 30

    public init(database: Database, dataDirectory: String) {
        self.database = database
        self.dataDirectory = dataDirectory
    }

    /// Checks the values the collector cannot run with; `buildApplication` calls it before it
    /// opens the database.
    /// - Throws: `CollectorConfigurationError` naming the first invalid setting: an ingest queue
    ///   limit below 1, a lock timeout outside 0.001...86,400 s, a negative or not finite
    ///   shutdown grace period.
    public func validate() throws {
        let positive: [(setting: String, value: Int)] = [
            ("ingestQueue.maxDepth", ingestQueue.maxDepth),
            ("ingestQueue.maxBytes", ingestQueue.maxBytes),
            ("ingestQueue.maxBatch", ingestQueue.maxBatch),
        ]
        for (setting, value) in positive where value < 1 {
            throw CollectorConfigurationError(setting: setting, message: "must be at least 1 (got \(value))")
        }
        guard lockTimeout >= 0.001 && lockTimeout <= 86_400 else {
            throw CollectorConfigurationError(setting: "lockTimeout", message: "must be between 0.001 and 86400 seconds (got \(lockTimeout))")
        }
        guard shutdownGracePeriod >= 0 && shutdownGracePeriod.isFinite else {
            throw CollectorConfigurationError(setting: "shutdownGracePeriod", message: "must be 0 or more seconds (got \(shutdownGracePeriod))")
        }
        guard autoProtectInterval >= 0.1 && autoProtectInterval <= 86_400 else {
            throw CollectorConfigurationError(setting: "autoProtectInterval", message: "must be between 0.1 and 86400 seconds (got \(autoProtectInterval))")
        }
        for (setting, value) in [("symbolizerTimeout", symbolizerTimeout), ("issueRenameInterval", issueRenameInterval)]
        where !(value > 0 && value <= 86_400) {
            throw CollectorConfigurationError(setting: setting, message: "must be more than 0 and at most 86400 seconds (got \(value))")
        }
        try connections.validate()
    }
}

/// What the collector does against clients that hold connections without using them: a request
/// head must be complete within `headerTimeout`, a keep-alive connection may wait `idleTimeout`
/// for its next request, and connections are capped in total and per client address, with the
/// last few places kept for addresses that have none open (so `/health` and ingest from other
/// clients get in while one client holds the rest). A connection over a cap is closed at once,
/// before anything is read from it. `/metrics` counts them in
/// `collector_connections_closed_total{reason}` (`over_total`, `over_per_address`,
/// `header_timeout`, `idle_timeout`, `body_timeout`) and shows `collector_connections_open`.
///
/// With the defaults and `ulimit -n 1024`: 896 connections in total (1,024 − 128), 256 per
/// address, of which 864 for addresses that already have one open.
public struct ConnectionLimits: Sendable, Hashable {
    /// Seconds a client has to send a complete request head: counted from the connection's start
    /// for its first request, from the first byte after the previous response for the next ones.
    /// Then the connection is closed. More than 0, at most 86,400. Default 10.
    public var headerTimeout: TimeInterval = 10
    /// Seconds a keep-alive connection may wait for its next request after a response, and a
    /// request body may go without a byte; then the connection is closed. More than 0, at most
    /// 86,400. Default 60.
    public var idleTimeout: TimeInterval = 60
    /// Connections open at once, all clients together. Nil: the process's open-file limit (soft
    /// `RLIMIT_NOFILE`, as `ulimit -n` sets it) minus `reservedFileDescriptors`, at least 1 (and
    /// 65,536 when the limit is unlimited). A value above that first raises the soft limit as far
    /// as it needs and the hard limit allows; what the hard limit does not allow lowers the cap to
    /// the limit minus the reserve (logged as a warning). The process never runs out of file
    /// descriptors for connections: on Linux, libdispatch ends a process whose worker monitor
    /// cannot open `/proc/<tid>/stat`. At least 1. Default nil.
    public var maxConnections: Int?
    /// File descriptors the automatic `maxConnections` leaves to everything else: the database
    /// and its journal, PostgreSQL connections, logs, the event loops. At least 0. Default 128.
    public var reservedFileDescriptors: Int = 128
    /// Connections open at once from one client address (an IPv4 address, an IPv6 /64). Behind a
    /// reverse proxy every connection comes from the proxy: raise it to `maxConnections`. At
    /// least 1. Default 256.
    public var maxConnectionsPerAddress: Int = 256
    /// The last places of `maxConnections`, kept for client addresses with no connection open
    /// (a health check, a new client). At least 0; at most `maxConnections` − 1 is used.
    /// Default 32.
    public var reservedForNewAddresses: Int = 32

    public init() {}

    /// The total cap for a process whose open-file limit is `fileLimit` (nil: unlimited):
    /// `maxConnections`, at most the limit minus `reservedFileDescriptors` (at least 1).
    public func resolvedMaxConnections(fileLimit: Int?) -> Int {
        guard let fileLimit else { return maxConnections ?? 65_536 }
        let room = max(1, fileLimit - reservedFileDescriptors)
        return min(maxConnections ?? room, room)
    }

    /// The open-file limit `maxConnections` needs (nil: none set, the cap follows the limit).
    public var neededFileLimit: Int? { maxConnections.map { $0 + reservedFileDescriptors } }

    /// - Throws: `CollectorConfigurationError` for the first value out of range (settings named
    ///   `connections.headerTimeout`, ...).
    public func validate() throws {
        for (setting, value) in [("connections.headerTimeout", headerTimeout), ("connections.idleTimeout", idleTimeout)]
        where !(value > 0 && value <= 86_400) {
            throw CollectorConfigurationError(setting: setting, message: "must be more than 0 and at most 86400 seconds (got \(value))")
        }
        if let maxConnections, maxConnections < 1 {
            throw CollectorConfigurationError(setting: "connections.maxConnections", message: "must be at least 1 (got \(maxConnections))")
        }
        guard maxConnectionsPerAddress >= 1 else {
            throw CollectorConfigurationError(setting: "connections.maxConnectionsPerAddress", message: "must be at least 1 (got \(maxConnectionsPerAddress))")
        }
        for (setting, value) in [("connections.reservedForNewAddresses", reservedForNewAddresses),
                                 ("connections.reservedFileDescriptors", reservedFileDescriptors)] where value < 0 {
            throw CollectorConfigurationError(setting: setting, message: "must be 0 or more (got \(value))")
        }
    }
}

/// A configuration value the collector cannot run with (thrown by
/// `CollectorConfiguration.validate()` and so by `buildApplication`, before anything is opened).
public struct CollectorConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The code of every invalid configuration value, stable across versions.
    public static let invalidValueCode = "configuration.invalid_value"
    public var code: String { Self.invalidValueCode }
    /// The `CollectorConfiguration` property, as a key path ("ingestQueue.maxDepth").
    public let setting: String
    /// What is wrong with it, for people ("must be at least 1 (got 0)").
    public let message: String

    public init(setting: String, message: String) {
        self.setting = setting
        self.message = message
    }

    public var description: String { "\(code): \(setting) \(message)" }
}

/// What the collector reports once it listens.
public struct CollectorReady: Sendable {
    /// The public URL when one is configured, else `http://host:port` with the port actually bound.
    public let url: String
    /// `http://host:port` with the port actually bound (where this process listens, whatever the public URL).
    public let listeningURL: String
    /// The first project's DSN, for the bound port.
    public let firstProjectDSN: String?
    /// An API token created on this start (shown once; only its hash is stored), or nil.
    public let createdAPIToken: String?
    /// The password of the `admin` account created on this start (shown once), or nil.
    public let createdAdminPassword: String?
}
