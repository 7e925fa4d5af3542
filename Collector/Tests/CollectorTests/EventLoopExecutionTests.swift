@testable import CollectorApp
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Testing

/// Where handlers run with the collector's server (`HTTPServerBuilder.http1OnEventLoop`): on the
/// event loop of their connection (also after suspending), and off it under `offEventLoop` /
/// `OffEventLoopMiddleware`.
@Suite("Handlers on the connection's event loop")
struct EventLoopExecutionTests {
    /// The current thread's event loop, as text: "none" when the thread is not an event loop's.
    static func currentLoop() -> String {
        MultiThreadedEventLoopGroup.currentEventLoop.map { "\(ObjectIdentifier($0).hashValue)" } ?? "none"
    }

    /// Runs a server with the collector's builder and three routes, and returns the answers of
    /// each route to `requests` sequential requests on one keep-alive connection.
    static func answers(requests: Int) async throws -> [String: [String]] {
        var logger = Logger(label: "event-loop-tests")
        logger.logLevel = .warning
        let router = Router(context: BasicRequestContext.self)
        // "<loop before>,<loop after a suspension>" for each route.
        router.get("on-loop") { _, _ -> String in
            let before = currentLoop()
            try await Task.sleep(for: .milliseconds(1))
            return before + "," + currentLoop()
        }
        router.get("off-loop-call") { _, _ -> String in
            let inside = await offEventLoop { () async -> String in
                let before = currentLoop()
                await Task.yield()
                return before + "," + currentLoop()
            }
            return inside + "," + currentLoop()
        }
        router.add(middleware: OffEventLoopMiddleware())
        router.get("off-loop-route") { _, _ -> String in
            let before = currentLoop()
            try await Task.sleep(for: .milliseconds(1))
            return before + "," + currentLoop()
        }
        let (readyStream, readyContinuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, server: .http1OnEventLoop(),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in readyContinuation.yield(channel.localAddress?.port ?? 0) },
            logger: logger)
        let services = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await services.run() }
            var answers: [String: [String]] = [:]
            do {
                var iterator = readyStream.makeAsyncIterator()
                guard let port = await iterator.next() else { throw Harness.StartFailure() }
                let client = TestClient(baseURL: "http://127.0.0.1:\(port)")
                for route in ["on-loop", "off-loop-call", "off-loop-route"] {
                    for _ in 0..<requests {
                        let response = try await client.execute("/" + route)
                        #expect(response.status == 200)
                        answers[route, default: []].append(response.text)
                    }
                }
            } catch {
                await services.triggerGracefulShutdown()
                throw error
            }
            await services.triggerGracefulShutdown()
            try await group.waitForAll()
            return answers
        }
    }

    @Test func handlersStayOnTheirEventLoopUnlessTheyLeaveIt() async throws {
        let answers = try await Self.answers(requests: 5)
        for answer in answers["on-loop"] ?? [] {
            let parts = answer.split(separator: ",").map(String.init)
            #expect(parts.count == 2)
            #expect(parts[0] != "none", "the handler did not start on an event loop: \(answer)")
            #expect(parts[0] == parts[1], "the handler changed threads across a suspension: \(answer)")
        }
        for answer in answers["off-loop-call"] ?? [] {
            let parts = answer.split(separator: ",").map(String.init)
            #expect(parts.count == 3)
            #expect(parts[0] == "none" && parts[1] == "none", "offEventLoop ran its body on an event loop: \(answer)")
            #expect(parts[2] != "none", "the handler did not return to its event loop after offEventLoop: \(answer)")
        }
        for answer in answers["off-loop-route"] ?? [] {
            #expect(answer == "none,none", "a route behind OffEventLoopMiddleware ran on an event loop: \(answer)")
        }
        #expect(answers.values.map(\.count) == [5, 5, 5])
    }
}
