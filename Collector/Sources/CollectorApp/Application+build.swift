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
        store = try await SQLStore.openSQLite(path: path, logger: logger)
    case .postgres(let url):
        store = try await SQLStore.openPostgres(url: url, logger: logger)
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
    let routes = CollectorRoutes(
        store: store, metrics: metrics, logger: logger,
        ingest: IngestService(store: store, limits: configuration.limits, queueLimits: configuration.ingestQueue,
                              metrics: metrics, logger: logger),
        sdkConfig: SDKConfigService(store: store, maxAge: configuration.sdkConfigMaxAge),
        rateLimiter: RateLimiter(perSecond: configuration.rateLimitPerSecond, burst: configuration.rateLimitBurst),
        limits: configuration.limits)
    let router = Router(context: BasicRequestContext.self)
    router.add(middleware: RequestLogMiddleware(logger: logger))
    // Handlers run on their connection's event loop (`http1OnEventLoop`). A route gets the
    // middleware added before it is registered: the collector's routes decide themselves which
    // handlers leave the event loop; every dashboard page does (password hashing, page rendering,
    // database reads).
    routes.register(on: router)
    router.add(middleware: OffEventLoopMiddleware())
    DashboardRoutes.make(store: store, configuration: configuration, logger: logger)?.register(on: router)

    var services: [any Service] = [StoreCloser(store: store, logger: logger)]
    if let days = configuration.retentionDays {
        services.append(RetentionService(store: store, days: days, logger: logger))
    }
    let project = firstProject
    let tokenToShow = createdToken
    let passwordToShow = createdAdminPassword
    return Application(
        router: router,
        server: .http1OnEventLoop(),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "shield-collector"),
        services: services,
        onServerRunning: { channel in
            let port = channel.localAddress?.port ?? configuration.port
            let url = configuration.publicURL ?? "http://\(configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host):\(port)"
            logger.info("collector listening", metadata: ["url": "\(url)"])
            await onRunning(CollectorReady(url: url, firstProjectDSN: project?.dsn(baseURL: url), createdAPIToken: tokenToShow,
                                     createdAdminPassword: passwordToShow))
        },
        logger: logger)
}

extension HTTPServerBuilder {
    /// HTTP/1.1 where each connection's task prefers the event loop of its channel as its
    /// executor: reading the request, running the handler and writing the answer happen on the
    /// thread that does the connection's I/O, instead of passing from the event loop to Swift's
    /// global pool and back for every request part (in `bench --http`, about half the collector's
    /// voluntary context switches per request).
    /// Handlers that may compute for long (password hashing, page rendering) or wait (a SQLite
    /// statement runs on the calling thread and may wait for the connection's lock while the
    /// ingest writer commits) must leave the event loop (`offEventLoop`, `OffEventLoopMiddleware`),
    /// since the loop serves other connections meanwhile.
    static func http1OnEventLoop(configuration: HTTP1Channel.Configuration = .init()) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            EventLoopPreferringChannel(base: HTTP1Channel(responder: responder, configuration: configuration))
        }
    }
}

/// A server child channel whose `handle` runs with the channel's event loop as the task's
/// executor preference (child tasks inherit it; unstructured `Task {}` started by a handler does not).
struct EventLoopPreferringChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value
    let base: Base

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await withTaskExecutorPreference(EventLoopTaskExecutor.of(value.channel.eventLoop)) {
            await base.handle(value: value, logger: logger)
        }
    }
}

/// A `TaskExecutor` that runs jobs on one NIO event loop. A job enqueued from that loop's own
/// thread (a task resumed by the channel's I/O) is queued without waking any thread.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    private init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    private static let executors = Mutex<[ObjectIdentifier: EventLoopTaskExecutor]>([:])

    /// The executor of `eventLoop`: one per loop, created at its first connection (event loops
    /// live as long as their group; the collector's group lives as long as the process).
    static func of(_ eventLoop: any EventLoop) -> EventLoopTaskExecutor {
        executors.withLock { executors in
            let key = ObjectIdentifier(eventLoop)
            if let existing = executors[key] { return existing }
            let created = EventLoopTaskExecutor(eventLoop: eventLoop)
            executors[key] = created
            return created
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// Runs `body` on Swift's global concurrent executor, off the connection's event loop, and
/// returns to the caller's executor afterwards: for work that may compute for long or wait for a
/// lock (any store call except the ingest writer's `submit`, which only enqueues).
func offEventLoop<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
    try await withTaskExecutorPreference(globalConcurrentExecutor, operation: body)
}

/// Runs the rest of the request (later middleware and the handler) off the connection's event
/// loop (`offEventLoop`), for routes whose handlers may compute for long or wait for the database.
struct OffEventLoopMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await offEventLoop { try await next(request, context) }
    }
}

/// Closes the database after the server has stopped (graceful shutdown: the HTTP server
/// finishes in-flight requests first, then this service's shutdown runs).
struct StoreCloser: Service {
    let store: any CollectorStore
    let logger: Logger

    func run() async throws {
        // Returns on graceful shutdown or cancellation; either way the database is closed.
        try? await gracefulShutdown()
        logger.info("closing database")
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
