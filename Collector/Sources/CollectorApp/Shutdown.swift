import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// Bounds a graceful shutdown. `begin` (called when the graceful shutdown starts) arms a timer;
/// once `gracePeriod` seconds have passed and the store has not been closed yet, it calls
/// `CollectorStore.cancelForShutdown()`: statements still waiting fail with `storage.cancelled`,
/// so the requests in flight are answered (503, nothing of them stored), the HTTP server
/// finishes, and the store closes. Until then requests in flight may finish normally, including
/// statements that get their lock within the grace period.
final class ShutdownGracePeriod: Sendable {
    let gracePeriod: TimeInterval
    private let store: any CollectorStore
    private let logger: Logger
    /// The armed timer; nil before `begin`.
    private let timer = Mutex<Task<Void, Never>?>(nil)

    init(gracePeriod: TimeInterval, store: any CollectorStore, logger: Logger) {
        self.gracePeriod = gracePeriod
        self.store = store
        self.logger = logger
    }

    static let beginMessage = "graceful shutdown: finishing requests in flight"

    /// Starts the grace period (and logs `beginMessage`); a second call does nothing.
    func begin() {
        timer.withLock { timer in
            guard timer == nil else { return }
            logger.info("\(Self.beginMessage)", metadata: ["grace_period_s": "\(gracePeriod)"])
            timer = Task { [store, gracePeriod, logger] in
                do { try await Task.sleep(for: .seconds(gracePeriod)) } catch { return }
                logger.warning("shutdown grace period over: cancelling database statements still running",
                               metadata: ["grace_period_s": "\(gracePeriod)"])
                await store.cancelForShutdown()
            }
        }
    }

    /// Disarms the timer (the store is closed; nothing is left to cancel).
    func end() {
        timer.withLock { $0?.cancel() }
    }
}

/// The collector's HTTP application with a bounded graceful shutdown: when the graceful shutdown
/// of the service running it begins, `shutdown.begin()` starts the grace period, while the
/// application shuts down as usual (the server stops accepting, finishes the requests in flight,
/// then `StoreCloser` closes the database). Everything else is `base`'s.
struct CollectorApplication<Base: ApplicationProtocol>: ApplicationProtocol {
    typealias Responder = Base.Responder
    let base: Base
    let shutdown: ShutdownGracePeriod

    var responder: Responder { get async throws { try await base.responder } }
    var server: HTTPServerBuilder { base.server }
    var eventLoopGroup: any EventLoopGroup { base.eventLoopGroup }
    var configuration: ApplicationConfiguration { base.configuration }
    var logger: Logger { base.logger }
    @Sendable func onServerRunning(_ channel: any Channel) async { await base.onServerRunning(channel) }
    var services: [any Service] { base.services }
    var processesRunBeforeServerStart: [@Sendable () async throws -> Void] { base.processesRunBeforeServerStart }

    func run() async throws {
        try await withGracefulShutdownHandler {
            try await base.run()
        } onGracefulShutdown: {
            shutdown.begin()
        }
    }
}
