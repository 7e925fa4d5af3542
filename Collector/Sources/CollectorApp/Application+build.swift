import CrashShieldProtocol
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// Builds the collector: opens and migrates the database, creates the first project and API
/// token on an empty database, and returns the HTTP application (not yet running).
///
/// - Parameters:
///   - configuration: where to listen and store, limits, rate limits; validated first
///     (`CollectorConfiguration.validate()`: throws `CollectorConfigurationError`).
///   - logger: the application's logger (structured `key=value` metadata).
///   - onRunning: called once the server listens, with its URL, the first project's DSN and an
///     API token created on this start (if any).
public func buildApplication(
    _ configuration: CollectorConfiguration,
    logger: Logger = Logger(label: "shield-collector"),
    onRunning: @escaping @Sendable (CollectorReady) async -> Void = { _ in }
) async throws -> some ApplicationProtocol {
    try configuration.validate()
    let store: any CollectorStore
    switch configuration.database {
    case .sqlite(let path):
        if path != ":memory:" {
            try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
            let parent = (path as NSString).deletingLastPathComponent
            if !parent.isEmpty { try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true) }
        }
        store = try await SQLStore.openSQLite(path: path, logger: logger, lockTimeout: configuration.lockTimeout)
    case .postgres(let url):
        store = try await SQLStore.openPostgres(url: url, logger: logger, lockTimeout: configuration.lockTimeout)
    }
    var firstProject: Project?
    var createdToken: String?
    var createdAdminPassword: String?
    do {
        try await store.migrate()
        firstProject = try await store.projects().first
        if firstProject == nil && configuration.createFirstProject {
            let created = try await store.createProject(name: "default")
            firstProject = created
            logger.info("project created", metadata: ["project": "\(created.id)", "name": "default"])
        }
        if try await store.apiTokenCount() == 0 {
            let token = configuration.initialAPIToken ?? APIAuth.newToken()
            try await store.insertAPIToken(name: "initial", tokenHash: APIAuth.hash(token), created: Date())
            if configuration.initialAPIToken == nil { createdToken = token }
            logger.info("api token created", metadata: ["name": "initial"])
        }
        createdAdminPassword = try await DashboardRoutes.bootstrapAccounts(store: store, configuration: configuration, logger: logger)
    } catch {
        try? await store.close()
        throw error
    }

    let metrics = CollectorMetrics()
    if let sqlStore = store as? SQLStore { metrics.observeStorage(sqlStore.monitor) }
    let routes = CollectorRoutes(
        store: store, metrics: metrics, logger: logger,
        ingest: IngestService(store: store, limits: configuration.limits, queueLimits: configuration.ingestQueue,
                              metrics: metrics, logger: logger),
        sdkConfig: SDKConfigService(store: store, maxAge: configuration.sdkConfigMaxAge),
        rateLimiter: RateLimiter(perSecond: configuration.rateLimitPerSecond, burst: configuration.rateLimitBurst),
        limits: configuration.limits)
    // HEAD is answered as GET without the body (the GET's headers, Content-Length included).
    let router = Router(context: CollectorRequestContext.self, options: .autoGenerateHeadEndpoints)
    router.add(middleware: RequestLogMiddleware(logger: logger))
    if StrictTransportSecurityMiddleware<CollectorRequestContext>.applies(publicURL: configuration.publicURL) {
        router.add(middleware: StrictTransportSecurityMiddleware())
    }
    router.add(middleware: NotFoundPageMiddleware())
    routes.register(on: router)
    var renamerService: IssueRenamerService?
    var dashboard = DashboardRoutes.make(store: store, configuration: configuration, metrics: metrics, logger: logger)
    if let debugFiles = store as? any DebugFileStore {
        let cache = DebugFileCache(directory: (configuration.dataDirectory as NSString).appendingPathComponent("debug-files"))
        let symbolizer = Symbolizer(configured: configuration.symbolizer, timeout: configuration.symbolizerTimeout)
        if let executable = symbolizer.executable {
            logger.info("symbolizer", metadata: ["path": "\(executable)"])
        } else {
            logger.error("llvm-symbolizer not found: frames are shown as received", metadata: [
                "searched": "\(symbolizer.searched.joined(separator: ","))", "hint": "install Debian's llvm or pass serve --symbolizer PATH"])
        }
        let symbolication = Symbolication(store: debugFiles, cache: cache, symbolizer: symbolizer, logger: logger)
        let renamer = (store as? any DebugFileStore & CollectorStore).map { IssueRenamer(store: $0, symbolication: symbolication, logger: logger) }
        if let renamer { renamerService = IssueRenamerService(renamer: renamer, interval: configuration.issueRenameInterval) }
        DebugFileRoutes(routes: routes, store: debugFiles, cache: cache, symbolication: symbolication, renamer: renamer, logger: logger)
            .register(on: router)
        dashboard?.symbolication = symbolication
    }
    dashboard?.register(on: router)

    let shutdown = ShutdownGracePeriod(gracePeriod: configuration.shutdownGracePeriod, store: store, logger: logger)
    var services: [any Service] = [StoreCloser(store: store, shutdown: shutdown, logger: logger)]
    if let days = configuration.retentionDays {
        services.append(RetentionService(store: store, days: days, logger: logger))
    }
    services.append(AutoProtectService(protect: ProtectService(store: store, sdkConfig: routes.sdkConfig),
                                       interval: configuration.autoProtectInterval, logger: logger))
    if let renamerService { services.append(renamerService) }
    let project = firstProject
    let tokenToShow = createdToken
    let passwordToShow = createdAdminPassword
    var fileLimit = ResolvedConnectionLimits.currentFileLimit()
    if let soft = fileLimit, let needed = configuration.connections.neededFileLimit, needed > soft {
        fileLimit = ResolvedConnectionLimits.raiseFileLimit(to: needed)
        if fileLimit != soft {
            logger.info("open-file limit raised for max connections", metadata: [
                "from": "\(soft)", "to": "\(fileLimit.map(String.init) ?? "unlimited")", "needed": "\(needed)"])
        }
    }
    let connectionLimits = ResolvedConnectionLimits(configuration.connections, fileLimit: fileLimit)
    let registry = ConnectionRegistry(limits: connectionLimits, metrics: metrics)
    logger.info("connection limits", metadata: [
        "max_connections": "\(connectionLimits.maxConnections)", "max_per_address": "\(connectionLimits.maxConnectionsPerAddress)",
        "reserved_for_new_addresses": "\(connectionLimits.reservedForNewAddresses)", "header_timeout_s": "\(configuration.connections.headerTimeout)",
        "idle_timeout_s": "\(configuration.connections.idleTimeout)", "open_file_limit": "\(connectionLimits.fileLimit.map(String.init) ?? "unlimited")",
    ])
    if let requested = configuration.connections.maxConnections, connectionLimits.maxConnections < requested {
        logger.warning("max connections lowered to the open-file limit minus the reserve: raise the hard limit (ulimit -Hn) to allow more", metadata: [
            "max_connections": "\(connectionLimits.maxConnections)", "requested": "\(requested)",
            "open_file_limit": "\(connectionLimits.fileLimit.map(String.init) ?? "unlimited")",
            "reserved_file_descriptors": "\(configuration.connections.reservedFileDescriptors)",
        ])
    }
    let application = Application(
        router: router,
        server: HTTPServerBuilder { responder in GuardedHTTP1Channel(responder: responder, registry: registry) },
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "shield-collector"),
        services: services,
        onServerRunning: { channel in
            let port = channel.localAddress?.port ?? configuration.port
            let listeningURL = "http://\(configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host):\(port)"
            let url = configuration.publicURL ?? listeningURL
            logger.info("collector listening", metadata: ["url": "\(url)"])
            await onRunning(CollectorReady(url: url, listeningURL: listeningURL, firstProjectDSN: project?.dsn(baseURL: url), createdAPIToken: tokenToShow,
                                     createdAdminPassword: passwordToShow))
        },
        logger: logger)
    return CollectorApplication(base: application, shutdown: shutdown)
}

/// Closes the database after the server has stopped (graceful shutdown: the HTTP server
/// finishes in-flight requests first, then this service's shutdown runs). Requests stuck on the
/// database past the grace period are ended by `shutdown` (see `ShutdownGracePeriod`).
struct StoreCloser: Service {
    let store: any CollectorStore
    let shutdown: ShutdownGracePeriod
    let logger: Logger

    func run() async throws {
        // Returns on graceful shutdown or cancellation; either way the database is closed.
        try? await gracefulShutdown()
        logger.info("closing database")
        defer { shutdown.end() }
        try await store.close()
    }
}

/// Deletes old events once an hour (and at start).
struct RetentionService: Service {
    let store: any CollectorStore
    let days: Int
    let logger: Logger

    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let cutoff = Date().addingTimeInterval(-Double(days) * 86_400)
            do {
                let deleted = try await store.deleteData(receivedBefore: cutoff)
                logger.info("retention pass", metadata: ["deleted_events": "\(deleted)", "days": "\(days)"])
            } catch {
                logger.error("retention pass failed", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(3600)) }
        }
    }
}

/// Logs one line per request at `debug`: method, path, status, duration. Above `debug` it only
/// passes the request on (no clock reads).
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard logger.logLevel <= .debug else { return try await next(request, context) }
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let elapsed = ContinuousClock.now - start
        logger.debug("request", metadata: [
            "method": "\(request.method)", "path": "\(request.uri.path)", "status": "\(response.status.code)",
            "ms": "\(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)",
        ])
        return response
    }
}

/// API tokens: random 32-byte values shown once; only their SHA-256 is stored.
enum APIAuth {
    static func newToken() -> String {
        "csc_" + CryptoSupport.randomBytes(32).map { String(format: "%02x", $0) }.joined()
    }

    static func hash(_ token: String) -> String {
        CryptoSupport.sha256Hex(Data(token.utf8))
    }
}

/// The collector's request context: Hummingbird's basic context plus the connection's peer
/// address (the login throttle's client address; proxy headers are not trusted).
public struct CollectorRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }
}
