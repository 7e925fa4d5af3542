import ArgumentParser
@testable import CollectorApp
@testable import CollectorCommandLine
import Foundation
import NIOCore
import Testing

/// Connection limits, below the process test (`scripts/slow_clients.py` in `scripts/test.sh`): the
/// admission rule, the total derived from the open-file limit, the options, and the timeouts on a
/// live collector.
@Suite struct ConnectionLimitsTests {
    static func registry(total: Int, perAddress: Int, reserved: Int) -> ConnectionRegistry {
        var limits = ConnectionLimits()
        limits.maxConnections = total
        limits.maxConnectionsPerAddress = perAddress
        limits.reservedForNewAddresses = reserved
        return ConnectionRegistry(limits: ResolvedConnectionLimits(limits, fileLimit: 1024), metrics: CollectorMetrics())
    }

    @Test func capsInTotalAndPerAddressKeepTheLastPlacesForNewAddresses() {
        let registry = Self.registry(total: 10, perAddress: 4, reserved: 3)
        let a = ConnectionRegistry.AddressKey.v4(1), b = ConnectionRegistry.AddressKey.v4(2), c = ConnectionRegistry.AddressKey.v4(3)
        #expect((0..<4).map { _ in registry.admit(a) } == Array(repeating: .admitted, count: 4))
        #expect(registry.admit(a) == .refused(.overPerAddress))
        #expect((0..<3).map { _ in registry.admit(b) } == Array(repeating: .admitted, count: 3))
        // 7 open = 10 - 3: an address with a connection open waits, a new one gets a kept place.
        #expect(registry.admit(b) == .refused(.overTotal))
        #expect(registry.admit(c) == .admitted)
        #expect(registry.admit(c) == .refused(.overTotal))
        #expect(registry.admit(.v4(4)) == .admitted)
        #expect(registry.admit(.v4(5)) == .admitted)
        #expect(registry.admit(.v4(6)) == .refused(.overTotal))
        #expect(registry.openConnections == 10)
        registry.release(a)
        #expect(registry.openConnections(from: a) == 3)
        #expect(registry.admit(.v4(6)) == .admitted)
        #expect(registry.metrics.closedConnectionCount("over_per_address") == 1)
        #expect(registry.metrics.closedConnectionCount("over_total") == 3)
        #expect(registry.metrics.openConnectionCount == 10)
    }

    @Test func addressesAreCountedPerIPv4AddressAndIPv6Prefix() throws {
        let v4 = try SocketAddress(ipAddress: "192.0.2.7", port: 1000)
        let mapped = try SocketAddress(ipAddress: "::ffff:192.0.2.7", port: 2000)
        #expect(ConnectionRegistry.AddressKey(v4) == ConnectionRegistry.AddressKey(mapped))
        let one = try SocketAddress(ipAddress: "2001:db8:1:2::1", port: 1)
        let sameNetwork = try SocketAddress(ipAddress: "2001:db8:1:2:ffff::9", port: 2)
        let other = try SocketAddress(ipAddress: "2001:db8:1:3::1", port: 3)
        #expect(ConnectionRegistry.AddressKey(one) == ConnectionRegistry.AddressKey(sameNetwork))
        #expect(ConnectionRegistry.AddressKey(one) != ConnectionRegistry.AddressKey(other))
        #expect(ConnectionRegistry.AddressKey(nil) == .other)
    }

    @Test func theTotalFollowsTheOpenFileLimitUnlessSet() {
        var limits = ConnectionLimits()
        #expect(limits.resolvedMaxConnections(fileLimit: 1024) == 896)
        #expect(limits.resolvedMaxConnections(fileLimit: 100) == 1)
        #expect(limits.resolvedMaxConnections(fileLimit: nil) == 65_536)
        #expect(limits.neededFileLimit == nil)
        // A cap set above what the limit leaves is lowered to it: running out of descriptors
        // would end the process (libdispatch's worker monitor).
        limits.maxConnections = 5000
        #expect(limits.neededFileLimit == 5128)
        #expect(limits.resolvedMaxConnections(fileLimit: 1024) == 896)
        #expect(limits.resolvedMaxConnections(fileLimit: 5128) == 5000)
        #expect(limits.resolvedMaxConnections(fileLimit: 65_536) == 5000)
        #expect(limits.resolvedMaxConnections(fileLimit: nil) == 5000)
        let resolved = ResolvedConnectionLimits(ConnectionLimits(), fileLimit: 1024)
        #expect(resolved.maxConnections == 896 && resolved.maxConnectionsPerAddress == 256 && resolved.reservedForNewAddresses == 32)
    }

    /// The soft open-file limit is raised toward what is wanted, as far as the hard limit allows,
    /// and never lowered.
    @Test func theFileLimitIsRaisedWithinTheHardLimitAndNeverLowered() throws {
        let limit = try #require(ResolvedConnectionLimits.fileLimits())
        let soft = try #require(ResolvedConnectionLimits.currentFileLimit())
        #expect(ResolvedConnectionLimits.raiseFileLimit(to: soft - 1) == soft, "lowered")
        #expect(ResolvedConnectionLimits.raiseFileLimit(to: soft) == soft)
        if limit.rlim_max > rlim_t(soft) {
            #expect(ResolvedConnectionLimits.raiseFileLimit(to: soft + 1) == soft + 1)
        }
        // Up to the hard limit only where that is small: a process with a soft limit of millions
        // makes every child spawn slower (descriptors closed one by one).
        if limit.rlim_max <= 65_536 {
            let hard = Int(limit.rlim_max)
            #expect(ResolvedConnectionLimits.raiseFileLimit(to: hard + 1000) == hard, "above the hard limit")
        }
    }

    @Test func theServeOptionsSetTheLimitsAndBadValuesAreRefused() throws {
        let defaults = try IngestQueueOptionsTests.serve([]).makeConfiguration(environment: [:]).connections
        #expect(defaults == ConnectionLimits())
        #expect(defaults.headerTimeout == 10 && defaults.idleTimeout == 60 && defaults.maxConnections == nil)
        let set = try IngestQueueOptionsTests.serve([
            "--header-timeout", "2.5", "--idle-timeout", "30", "--max-connections", "500",
            "--max-connections-per-address", "50", "--reserved-connections", "5",
        ]).makeConfiguration(environment: [:]).connections
        #expect(set.headerTimeout == 2.5 && set.idleTimeout == 30 && set.maxConnections == 500)
        #expect(set.maxConnectionsPerAddress == 50 && set.reservedForNewAddresses == 5)
        #expect(IngestQueueOptionsTests.refusal(["--header-timeout", "0"])?.contains("--header-timeout must be more than 0") == true)
        #expect(IngestQueueOptionsTests.refusal(["--idle-timeout=-1"])?.contains("--idle-timeout must be more than 0") == true)
        #expect(IngestQueueOptionsTests.refusal(["--max-connections", "0"])?.contains("--max-connections must be at least 1") == true)
        #expect(IngestQueueOptionsTests.refusal(["--max-connections-per-address", "0"])?.contains("--max-connections-per-address must be at least 1") == true)
        #expect(IngestQueueOptionsTests.refusal(["--reserved-connections=-1"])?.contains("--reserved-connections must be 0 or more") == true)

        var configuration = CollectorConfiguration(database: .sqlite(path: ":memory:"), dataDirectory: NSTemporaryDirectory())
        configuration.connections.idleTimeout = .infinity
        #expect(throws: CollectorConfigurationError.self) { try configuration.validate() }
    }

    /// A connection that never completes its head is closed after the header timeout; one that
    /// had an answer and stays idle, after the idle timeout; one whose body stalls, after the idle
    /// timeout too. A keep-alive connection used within the idle timeout stays open.
    @Test func headerIdleAndBodyTimeoutsCloseConnections() async throws {
        try await Harness.run({ $0.connections.headerTimeout = 0.5; $0.connections.idleTimeout = 1 }) { harness in
            let port = try #require(URLComponents(string: harness.client.baseURL)?.port)
            async let slowHead = RawSocket.closedAfter(port: port, send: [("GET /health HTTP/1.1\r\nHost: x\r\n", 0), ("X-A: b\r\n", 0.3)])
            async let idle = RawSocket.closedAfter(port: port, send: [("GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 0)])
            // The envelope endpoint reads the whole body before it answers.
            async let stalledBody = RawSocket.closedAfter(port: port, send: [(
                "POST /api/\(harness.project.id)/envelope/ HTTP/1.1\r\nHost: x\r\nX-Sentry-Auth: \(harness.authHeader)\r\nContent-Length: 10\r\n\r\nab", 0)])
            async let kept = RawSocket.closedAfter(port: port, send: [
                ("GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 0), ("GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 0.7),
                ("GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 0.7),
            ])
            let (head, idleResult, body, keptResult) = try await (slowHead, idle, stalledBody, kept)
            #expect(head.answers == 0 && head.seconds >= 0.45 && head.seconds < 1.5, "slow head: \(head)")
            #expect(idleResult.answers == 1 && idleResult.seconds >= 0.95 && idleResult.seconds < 2.5, "idle: \(idleResult)")
            #expect(body.answers == 0 && body.seconds >= 0.95 && body.seconds < 2.5, "stalled body: \(body)")
            #expect(keptResult.answers == 3 && keptResult.seconds >= 2.3, "kept alive: \(keptResult)")
            // At least: the test client's own keep-alive connections may be closed as idle too.
            let metrics = try await harness.client.execute("/metrics").text
            func closed(_ reason: String) -> Int {
                let prefix = "collector_connections_closed_total{reason=\"\(reason)\"} "
                return metrics.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Int($0.dropFirst(prefix.count)) } ?? 0
            }
            #expect(closed("header_timeout") >= 1)
            #expect(closed("idle_timeout") >= 2)
            #expect(closed("body_timeout") == 1)
        }
    }
}

/// A socket that sends its pieces (each after a delay), then reads until the collector closes.
enum RawSocket {
    struct Result: Sendable, CustomStringConvertible {
        /// Status lines received, and seconds from connecting to the collector's close.
        let answers: Int
        let seconds: Double
        var description: String { "\(answers) answers, closed after \(seconds) s" }
    }

    static func closedAfter(port: Int, send pieces: [(String, Double)]) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Swift.Result { try run(port: port, pieces: pieces) })
            }
        }
    }

    private static func run(port: Int, pieces: [(String, Double)]) throws -> Result {
        let socket = try BlockingSocket(port: UInt16(port))
        let start = Date()
        for (text, delay) in pieces {
            if delay > 0 { Thread.sleep(forTimeInterval: delay) }
            try socket.write(Array(text.utf8))
        }
        let received = try socket.readToClose()
        let text = String(decoding: received, as: UTF8.self)
        return Result(answers: text.components(separatedBy: "HTTP/1.1 ").count - 1, seconds: Date().timeIntervalSince(start))
    }
}
