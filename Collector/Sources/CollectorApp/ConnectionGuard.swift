import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Slow and idle clients (`CollectorConfiguration.connections`): every accepted connection
/// passes `ConnectionRegistry` (caps in total and per client address; one over a cap is closed
/// at once, before anything is read from it), then `ConnectionGuardHandler` closes it when a
/// request head is not complete within the header timeout or when it waits longer than the idle
/// timeout for its next request.
///
/// The pipeline of an HTTP/1 connection: `ConnectionGuardHandler` (bytes) → Hummingbird's
/// HTTP/1 codec → `RequestPhaseHandler` (request parts, tells the guard when a head arrived and a
/// response ended) → Hummingbird's `HTTPConnectionStateHandler` (graceful shutdown) → the
/// handler task.
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value
    let http1: HTTP1Channel
    let registry: ConnectionRegistry

    init(responder: @escaping HTTPChannelHandler.Responder, registry: ConnectionRegistry) {
        self.registry = registry
        // No idle timeout of Hummingbird's own: `ConnectionGuardHandler` keeps them all.
        self.http1 = HTTP1Channel(responder: responder, configuration: .init())
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            // First in the pipeline: it decides before the first read and sees every byte.
            try channel.pipeline.syncOperations.addHandler(ConnectionGuardHandler(registry: registry))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return http1.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let operations = channel.pipeline.syncOperations
            let guardHandler = try operations.handler(type: ConnectionGuardHandler.self)
            let stateHandler = try operations.handler(type: HTTPConnectionStateHandler.self)
            try operations.addHandler(RequestPhaseHandler(connection: guardHandler), position: .before(stateHandler))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await http1.handle(value: value, logger: logger)
    }
}

/// The open connections of the collector, counted in total and per client address, and the
/// admission rule (see `ConnectionLimits`). Shared by all event loops.
final class ConnectionRegistry: Sendable {
    /// A client address as the per-address cap counts it: an IPv4 address (IPv4-mapped IPv6
    /// included), an IPv6 /64 (one host usually holds a whole /64), anything else (a Unix socket) as one.
    enum AddressKey: Hashable, Sendable {
        case v4(UInt32)
        case v6Prefix(UInt64)
        case other

        init(_ address: SocketAddress?) {
            switch address {
            case .v4(let ipv4):
                self = .v4(UInt32(bigEndian: ipv4.address.sin_addr.s_addr))
            case .v6(let ipv6):
                var bytes = [UInt8](repeating: 0, count: 16)
                withUnsafeBytes(of: ipv6.address.sin6_addr) { raw in
                    for index in 0..<min(16, raw.count) { bytes[index] = raw[index] }
                }
                if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
                    self = .v4(bytes[12..<16].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
                } else {
                    self = .v6Prefix(bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
                }
            default:
                self = .other
            }
        }
    }

    /// Why a connection was refused or closed (the `reason` label of
    /// `collector_connections_closed_total`).
    enum CloseReason: String, Sendable {
        case overTotal = "over_total"
        case overPerAddress = "over_per_address"
        case headerTimeout = "header_timeout"
        case idleTimeout = "idle_timeout"
        case bodyTimeout = "body_timeout"
    }

    enum Admission: Equatable, Sendable {
        case admitted
        case refused(CloseReason)
    }

    let limits: ResolvedConnectionLimits
    let metrics: CollectorMetrics
    private struct State {
        var total = 0
        var perAddress: [AddressKey: Int] = [:]
    }
    private let state = Mutex(State())

    init(limits: ResolvedConnectionLimits, metrics: CollectorMetrics) {
        self.limits = limits
        self.metrics = metrics
    }

    /// Admits a new connection from `key` or refuses it: at `maxConnections` in total; at
    /// `maxConnectionsPerAddress` from this address; and, for an address that already has a
    /// connection open, at `maxConnections - reservedForNewAddresses` in total (the last ones
    /// are kept for addresses with none open, such as a health check).
    func admit(_ key: AddressKey) -> Admission {
        let (admission, total) = state.withLock { state -> (Admission, Int) in
            let fromAddress = state.perAddress[key] ?? 0
            if state.total >= limits.maxConnections { return (.refused(.overTotal), state.total) }
            if fromAddress >= limits.maxConnectionsPerAddress { return (.refused(.overPerAddress), state.total) }
            if fromAddress > 0 && state.total >= limits.maxConnections - limits.reservedForNewAddresses {
                return (.refused(.overTotal), state.total)
            }
            state.total += 1
            state.perAddress[key] = fromAddress + 1
            return (.admitted, state.total)
        }
        switch admission {
        case .admitted: metrics.setOpenConnections(total)
        case .refused(let reason): metrics.connectionClosed(reason.rawValue)
        }
        return admission
    }

    /// A connection `admit` admitted has closed.
    func release(_ key: AddressKey) {
        let total = state.withLock { state -> Int in
            state.total -= 1
            if let count = state.perAddress[key], count > 1 { state.perAddress[key] = count - 1 } else { state.perAddress[key] = nil }
            return state.total
        }
        metrics.setOpenConnections(total)
    }

    /// Connections open now (in total, from `key`).
    var openConnections: Int { state.withLock { $0.total } }
    func openConnections(from key: AddressKey) -> Int { state.withLock { $0.perAddress[key] ?? 0 } }
}

/// `ConnectionLimits` with the total cap worked out from the open-file limit, in the units the
/// handlers use.
struct ResolvedConnectionLimits: Sendable, Hashable {
    var maxConnections: Int
    var maxConnectionsPerAddress: Int
    var reservedForNewAddresses: Int
    var headerTimeoutNanoseconds: Int64
    var idleTimeoutNanoseconds: Int64
    /// The process's open-file limit (soft `RLIMIT_NOFILE`) when it was read, nil when unlimited or unknown.
    var fileLimit: Int?

    init(_ limits: ConnectionLimits, fileLimit: Int?) {
        self.fileLimit = fileLimit
        maxConnections = limits.resolvedMaxConnections(fileLimit: fileLimit)
        maxConnectionsPerAddress = limits.maxConnectionsPerAddress
        reservedForNewAddresses = min(limits.reservedForNewAddresses, max(0, maxConnections - 1))
        headerTimeoutNanoseconds = Int64((limits.headerTimeout * 1e9).rounded())
        idleTimeoutNanoseconds = Int64((limits.idleTimeout * 1e9).rounded())
    }

    #if canImport(Glibc)
    private static let openFiles = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let openFiles = RLIMIT_NOFILE
    #endif

    /// This process's `RLIMIT_NOFILE`, soft (`rlim_cur`) and hard (`rlim_max`); nil: unreadable.
    static func fileLimits() -> rlimit? {
        var limit = rlimit()
        return getrlimit(openFiles, &limit) == 0 ? limit : nil
    }

    /// The soft `RLIMIT_NOFILE` of this process (nil: unlimited or unreadable).
    static func currentFileLimit() -> Int? {
        // RLIM_INFINITY (all bits set on Linux, 2^63 − 1 on Darwin) and anything absurdly large count as unlimited.
        guard let limit = fileLimits(), limit.rlim_cur < rlim_t(1) << 40 else { return nil }
        return Int(limit.rlim_cur)
    }

    /// Raises the soft `RLIMIT_NOFILE` to `wanted`, or to the hard limit when that is lower; never
    /// lowers it. Returns the soft limit afterwards (nil: unlimited or unreadable).
    static func raiseFileLimit(to wanted: Int) -> Int? {
        guard var limit = fileLimits() else { return nil }
        let target = min(rlim_t(max(0, wanted)), limit.rlim_max)
        if target > limit.rlim_cur {
            limit.rlim_cur = target
            _ = setrlimit(openFiles, &limit)
        }
        return currentFileLimit()
    }
}

/// First handler of every connection: admission (`ConnectionRegistry`), the header timeout and
/// the idle timeout between requests. Lives on the connection's event loop.
///
/// Phases: `awaitingHead` from the connection's start (deadline: start + header timeout) and from
/// the first byte after a response (deadline: that byte + header timeout); `inRequest` from a
/// complete request head until its response ends (while its body is being read, the idle timeout
/// counts from the last byte received; after the body, no deadline: the handler is working);
/// `idle` after the last response (deadline: its end + idle timeout).
final class ConnectionGuardHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum Phase { case starting, refused, awaitingHead, inRequest, idle, closed }

    private let registry: ConnectionRegistry
    private var phase = Phase.starting
    private var key = ConnectionRegistry.AddressKey.other
    private var requestsInProgress = 0
    /// The latest request's body is still being received.
    private var bodyOpen = false
    private var lastByte = NIODeadline.now()
    private var deadline: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    init(registry: ConnectionRegistry) {
        self.registry = registry
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { _ = admit(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        end()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        guard admit(context) else { return }  // closed: the handlers after this one never hear of it
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        end()
        context.fireChannelInactive()  // also for a refused connection: its handler task ends with it
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastByte = .now()
        switch phase {
        case .idle:
            phase = .awaitingHead
            schedule(nanoseconds: registry.limits.headerTimeoutNanoseconds, reason: .headerTimeout)
        case .refused, .closed:
            return
        case .starting, .awaitingHead, .inRequest:
            break
        }
        context.fireChannelRead(data)
    }

    func read(context: ChannelHandlerContext) {
        guard phase != .refused && phase != .closed else { return }  // nothing is read from a refused connection
        context.read()
    }

    /// `RequestPhaseHandler`: a request head is complete.
    func requestHeadReceived() {
        guard phase != .refused && phase != .closed else { return }
        requestsInProgress += 1
        phase = .inRequest
        bodyOpen = true
        schedule(nanoseconds: registry.limits.idleTimeoutNanoseconds, reason: .bodyTimeout)
    }

    /// `RequestPhaseHandler`: a request's body is complete.
    func requestEndReceived() {
        bodyOpen = false
        if phase == .inRequest { cancelDeadline() }
    }

    /// `RequestPhaseHandler`: a response has been written to its end.
    func responseEnded() {
        guard phase == .inRequest else { return }
        requestsInProgress = max(0, requestsInProgress - 1)
        if requestsInProgress == 0 {
            phase = .idle
            schedule(nanoseconds: registry.limits.idleTimeoutNanoseconds, reason: .idleTimeout)
        }
    }

    /// Admits the connection once (true), or closes it at once (false).
    private func admit(_ context: ChannelHandlerContext) -> Bool {
        switch phase {
        case .starting: break
        case .refused, .closed: return false
        case .awaitingHead, .inRequest, .idle: return true
        }
        key = ConnectionRegistry.AddressKey(context.channel.remoteAddress)
        switch registry.admit(key) {
        case .admitted:
            phase = .awaitingHead
            schedule(nanoseconds: registry.limits.headerTimeoutNanoseconds, reason: .headerTimeout)
            return true
        case .refused:
            phase = .refused
            context.close(promise: nil)
            return false
        }
    }

    private func schedule(nanoseconds: Int64, reason: ConnectionRegistry.CloseReason) {
        cancelDeadline()
        guard let context else { return }
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(nanoseconds)) { [self] in
            deadline = nil
            guard let context = self.context else { return }
            switch phase {
            case .awaitingHead, .idle:
                break
            case .inRequest:
                // A body: the idle timeout counts from its last byte, which may be later than when this was scheduled.
                guard bodyOpen else { return }
                let idleSince = NIODeadline.now() - lastByte
                if idleSince.nanoseconds < nanoseconds {
                    schedule(nanoseconds: nanoseconds - idleSince.nanoseconds, reason: reason)
                    return
                }
            case .starting, .refused, .closed:
                return
            }
            registry.metrics.connectionClosed(reason.rawValue)
            context.close(promise: nil)
        }
    }

    private func cancelDeadline() {
        deadline?.cancel()
        deadline = nil
    }

    /// The connection is gone: stops the timer and gives its place back (once).
    private func end() {
        cancelDeadline()
        switch phase {
        case .awaitingHead, .inRequest, .idle: registry.release(key)
        case .starting, .refused, .closed: break
        }
        if phase != .refused { phase = .closed }
    }
}

/// Tells `ConnectionGuardHandler` where a connection is between requests: a request head has
/// arrived, a response has ended. Sits after the HTTP/1 codec.
final class RequestPhaseHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let connection: ConnectionGuardHandler

    init(connection: ConnectionGuardHandler) {
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: connection.requestHeadReceived()
        case .end: connection.requestEndReceived()
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { connection.responseEnded() }
        context.write(data, promise: promise)
    }
}
