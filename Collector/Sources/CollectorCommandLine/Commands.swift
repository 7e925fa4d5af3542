import ArgumentParser
import CollectorApp
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

/// `shield-collector`: the collector's command line (`serve`, `prune`, `bench`).
public struct ShieldCollector: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "shield-collector",
        abstract: "The CrashShield collector: receives crash reports and prevented crashes from Sentry SDKs, serves remote switches.",
        subcommands: [Serve.self, Prune.self, Bench.self, BenchClients.self])
}

struct StorageOptions: ParsableArguments {
    @Option(help: "A SQLite file path, or postgres://user:password@host:port/database. Default: <data-dir>/collector.sqlite.")
    var database: String?

    @Option(help: "Directory for the collector's files.")
    var dataDir: String = "collector-data"

    var resolvedDatabase: CollectorConfiguration.Database {
        .init(argument: database ?? (dataDir as NSString).appendingPathComponent("collector.sqlite"))
    }
}

struct LoggingOptions: ParsableArguments {
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    func makeLogger() -> Logger {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = KeyValueLogHandler(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: "shield-collector")
        logger.logLevel = level
        return logger
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the collector. On an empty database it creates a first project and an API token and prints them.")

    @Option(help: "Address to listen on.") var host: String = "127.0.0.1"
    @Option(help: "Port to listen on (0: any free port).") var port: Int = 8000
    @OptionGroup var storage: StorageOptions
    @OptionGroup var logging: LoggingOptions
    @Option(help: "Delete events older than this many days (checked hourly; issue counts stay).") var retentionDays: Int?
    @Option(help: "Ingest requests per second per project after the burst.") var rateLimit: Double = 200
    @Option(help: "Ingest requests a project may send at once.") var rateLimitBurst: Int = 400
    @Option(help: "The URL clients use to reach the collector (for printed DSNs).") var publicUrl: String?
    @Option(help: "Ingest requests that may wait for the database at once; beyond that, ingest answers 503 with Retry-After: 1.")
    var ingestQueueRequests: Int = IngestQueueLimits().maxDepth
    @Option(help: "Event and attachment bytes the waiting ingest requests may hold; beyond that, ingest answers 503 with Retry-After: 1.")
    var ingestQueueBytes: Int = IngestQueueLimits().maxBytes
    @Option(help: "Cache-Control: max-age of GET /api/<project>/sdk-config, in seconds: how long an app waits before it asks for the remote configuration again (0: at every start).")
    var sdkConfigMaxAge: Int = 300
    @Option(help: "Seconds between auto-protect passes (projects that switched auto-protect on get the report-only switch of a guardable crash that reached their threshold of users in a release).")
    var autoProtectInterval: Double = 60
    @Option(help: "Seconds a database statement waits for a lock another process or collector holds; then the request is answered 503 with Retry-After: 1 and nothing of it is stored.")
    var lockTimeout: Double = 5
    @Option(help: "On SIGTERM or SIGINT, seconds the requests in flight get to finish; then database statements still waiting are cancelled, their requests answered 503, and the collector exits.")
    var shutdownGracePeriod: Double = 10
    @Option(help: "Seconds a client has to send a complete request head (from the connection's start, or from the first byte after a response); then the connection is closed.")
    var headerTimeout: Double = ConnectionLimits().headerTimeout
    @Option(help: "Seconds a keep-alive connection may wait for its next request (or a request body go without a byte); then it is closed.")
    var idleTimeout: Double = ConnectionLimits().idleTimeout
    @Option(help: "Connections open at once, all clients (default: the open-file limit, ulimit -n, minus 128). One over a cap is closed at once.")
    var maxConnections: Int?
    @Option(help: "Connections open at once from one client address (IPv4 address, IPv6 /64); raise it behind a reverse proxy.")
    var maxConnectionsPerAddress: Int = ConnectionLimits().maxConnectionsPerAddress
    @Option(help: "The last places of --max-connections, kept for client addresses with no connection open (health checks, new clients).")
    var reservedConnections: Int = ConnectionLimits().reservedForNewAddresses
    @Option(help: "The llvm-symbolizer that symbolicates frames with uploaded debug files (default: the first of llvm-symbolizer on PATH, Debian's /usr/lib/llvm-N/bin, the Swift toolchain's /opt/swift/usr/bin).")
    var symbolizer: String?
    @Option(help: "Seconds one llvm-symbolizer run may take; then it is killed and its frames are shown as received.")
    var symbolizerTimeout: Double = 10

    func validate() throws {
        guard ingestQueueRequests >= 1 else {
            throw ValidationError("--ingest-queue-requests must be a positive number of requests (got \(ingestQueueRequests))")
        }
        guard ingestQueueBytes >= 1 else {
            throw ValidationError("--ingest-queue-bytes must be a positive number of bytes (got \(ingestQueueBytes))")
        }
        guard sdkConfigMaxAge >= 0 else {
            throw ValidationError("--sdk-config-max-age must be 0 or more seconds (got \(sdkConfigMaxAge))")
        }
        guard lockTimeout >= 0.001 && lockTimeout <= 86_400 else {
            throw ValidationError("--lock-timeout must be between 0.001 and 86400 seconds (got \(lockTimeout))")
        }
        guard shutdownGracePeriod >= 0 && shutdownGracePeriod.isFinite else {
            throw ValidationError("--shutdown-grace-period must be 0 or more seconds (got \(shutdownGracePeriod))")
        }
        for (option, value) in [("--header-timeout", headerTimeout), ("--idle-timeout", idleTimeout)] where !(value > 0 && value <= 86_400) {
            throw ValidationError("\(option) must be more than 0 and at most 86400 seconds (got \(value))")
        }
        if let maxConnections, maxConnections < 1 {
            throw ValidationError("--max-connections must be at least 1 (got \(maxConnections))")
        }
        guard maxConnectionsPerAddress >= 1 else {
            throw ValidationError("--max-connections-per-address must be at least 1 (got \(maxConnectionsPerAddress))")
        }
        guard symbolizerTimeout > 0 else {
            throw ValidationError("--symbolizer-timeout must be above 0 (got \(symbolizerTimeout))")
        }
        guard reservedConnections >= 0 else {
            throw ValidationError("--reserved-connections must be 0 or more (got \(reservedConnections))")
        }
    }

    /// The collector's configuration from these options and `environment`
    /// (`SHIELD_COLLECTOR_API_TOKEN`, `SHIELD_COLLECTOR_ADMIN_PASSWORD`).
    func makeConfiguration(environment: [String: String]) -> CollectorConfiguration {
        var configuration = CollectorConfiguration(database: storage.resolvedDatabase, dataDirectory: storage.dataDir)
        configuration.host = host
        configuration.port = port
        configuration.retentionDays = retentionDays
        configuration.rateLimitPerSecond = rateLimit
        configuration.rateLimitBurst = rateLimitBurst
        configuration.publicURL = publicUrl
        configuration.ingestQueue.maxDepth = ingestQueueRequests
        configuration.ingestQueue.maxBytes = ingestQueueBytes
        configuration.sdkConfigMaxAge = sdkConfigMaxAge
        configuration.autoProtectInterval = autoProtectInterval
        configuration.lockTimeout = lockTimeout
        configuration.shutdownGracePeriod = shutdownGracePeriod
        configuration.connections.headerTimeout = headerTimeout
        configuration.connections.idleTimeout = idleTimeout
        configuration.connections.maxConnections = maxConnections
        configuration.connections.maxConnectionsPerAddress = maxConnectionsPerAddress
        configuration.connections.reservedForNewAddresses = reservedConnections
        configuration.symbolizer = symbolizer
        configuration.symbolizerTimeout = symbolizerTimeout
        configuration.initialAPIToken = environment["SHIELD_COLLECTOR_API_TOKEN"]
        configuration.adminPassword = environment["SHIELD_COLLECTOR_ADMIN_PASSWORD"]
        return configuration
    }

    func run() async throws {
        let logger = logging.makeLogger()
        let configuration = makeConfiguration(environment: ProcessInfo.processInfo.environment)
        let app = try await buildApplication(configuration, logger: logger) { ready in
            var lines = ["shield-collector listening on \(ready.url)"]
            if let dsn = ready.firstProjectDSN { lines.append("first project DSN: \(dsn)") }
            if let token = ready.createdAPIToken { lines.append("API token (shown once): \(token)") }
            if let password = ready.createdAdminPassword { lines.append("dashboard: \(ready.url)/login  account: admin  password (shown once): \(password)") }
            FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        }
        // The collector ends stuck database work itself after the grace period (and waits at most
        // 5 s more for it); this backstop also ends anything else still holding the server,
        // such as a client that never finishes sending its body, by cancelling it.
        var group = ServiceGroupConfiguration(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        group.maximumGracefulShutdownDuration = .seconds(shutdownGracePeriod + 10)
        try await ServiceGroup(configuration: group).run()
    }
}

struct Prune: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Delete events, attachments and sessions older than N days (issue counts stay), then exit.")

    @OptionGroup var storage: StorageOptions
    @OptionGroup var logging: LoggingOptions
    @Option(help: "Keep this many days.") var olderThanDays: Int

    func run() async throws {
        let logger = logging.makeLogger()
        let deleted = try await pruneData(database: storage.resolvedDatabase, olderThanDays: olderThanDays, logger: logger)
        print("deleted \(deleted) events older than \(olderThanDays) days")
    }
}

struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure ingest throughput of realistic crash envelopes against the database's raw insert rate, or (--fill) page times on a big database and ingest while a user reads (a report, not a test).")

    @Option(help: "A SQLite file path (created; must not exist) or postgres://... naming an empty database. Default: a new file in the temporary directory.")
    var database: String?
    @Option(help: "Envelopes to ingest.") var events: Int = 5000
    @Option(help: "Concurrent clients, each waiting for its acknowledgement before sending the next envelope.") var concurrency: Int = 8
    @Flag(help: "Send the envelopes over HTTP to a collector started in this process (default: call the ingest service directly, below HTTP).")
    var http = false
    @Option(help: ArgumentHelp(
        "Read benchmark: fill --database (kept; reused when it holds this many events already) up to N realistic events, time every dashboard page and API read over HTTP, then ingest --events envelopes over HTTP alone and while one user reloads the slowest page.",
        valueName: "N"))
    var fill: Int?
    @Option(help: "Read benchmark: loads of each page timed (after one warm-up load).") var loads: Int = 5
    @Flag(help: "Read benchmark: run the ingest clients in a process of their own (this executable's bench-clients) instead of as threads of the collector's process.")
    var clientsProcess = false
    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        var logger = logging.makeLogger()
        logger.logLevel = .warning
        if let fill {
            guard let database else { throw ValidationError("--fill needs --database (the file or database it fills and keeps)") }
            let report = try await runReadBenchmark(database: CollectorConfiguration.Database(argument: database), fillTo: fill,
                                                    ingestEvents: events, concurrency: concurrency, loads: loads,
                                                    clientsExecutable: clientsProcess ? Bundle.main.executablePath ?? CommandLine.arguments[0] : nil,
                                                    logger: logger)
            print(report.description)
            return
        }
        let target = CollectorConfiguration.Database(argument: database ?? NSTemporaryDirectory() + "collector-bench-\(UUID().uuidString).sqlite")
        let report = try await runIngestBenchmark(database: target, events: events, concurrency: concurrency, overHTTP: http, logger: logger)
        print(report.description)
        if case .sqlite(let path) = target, database == nil {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
    }
}

/// The read benchmark's ingest clients in a process of their own (`bench --fill --clients-process`
/// runs it; not for use by hand).
struct BenchClients: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-clients", abstract: "The read benchmark's ingest clients (run by bench --clients-process).", shouldDisplay: false)

    @Option var port: Int
    @Option var dsn: String
    @Option var base: Int
    @Option var events: Int
    @Option var concurrency: Int

    func run() async throws {
        try await runBenchmarkClients(port: port, dsn: dsn, base: base, events: events, concurrency: concurrency)
    }
}
