import CZlib
@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Logging
import ServiceLifecycle
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response as the tests see it: status, headers (names lowercased) and body.
struct TestResponse: Sendable {
    let status: Int
    let headers: [String: String]
    let body: Data

    var json: JSONValue? { try? JSONValue.parse(body) }
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// Refuses redirects, so tests see the 303 and its headers.
final class NoRedirects: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}

/// A minimal HTTP client over URLSession, without caching, cookies or redirects.
struct TestClient: Sendable {
    let baseURL: String
    private let session: URLSession

    init(baseURL: String) {
        self.baseURL = baseURL
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.timeoutIntervalForRequest = 30
        session = URLSession(configuration: configuration, delegate: NoRedirects(), delegateQueue: nil)
    }

    func execute(_ path: String, method: String = "GET", headers: [String: String] = [:], body: Data? = nil) async throws -> TestResponse {
        var request = URLRequest(url: URL(string: baseURL + path)!)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        let (data, response) = try await session.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
        }
        return TestResponse(status: http.statusCode, headers: fields, body: data)
    }
}

/// The database the tests run against: SQLite, or PostgreSQL when `COLLECTOR_TEST_POSTGRES_URL`
/// names a server (`scripts/test.sh` starts one and runs the suites a second time).
enum TestDatabase {
    static let postgresURL = ProcessInfo.processInfo.environment["COLLECTOR_TEST_POSTGRES_URL"]
    static var isPostgres: Bool { postgresURL != nil }

    /// A new, empty database, and how to delete it. SQLite: a file in the temporary directory.
    /// PostgreSQL: a new database on the server, dropped by `drop`.
    struct Fresh: Sendable {
        let database: CollectorConfiguration.Database
        let drop: @Sendable () async -> Void
    }

    static func fresh() async throws -> Fresh {
        let name = "collector_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        guard let admin = postgresURL else {
            let path = NSTemporaryDirectory() + name + ".sqlite"
            return Fresh(database: .sqlite(path: path)) {
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            }
        }
        let server = try await PostgresBackend.connect(url: admin)
        _ = try await server.query("CREATE DATABASE \(name)", [])
        try await server.close()
        var components = try #require(URLComponents(string: admin))
        components.path = "/" + name
        let url = try #require(components.string)
        return Fresh(database: .postgres(url: url)) {
            guard let server = try? await PostgresBackend.connect(url: admin) else { return }
            _ = try? await server.query("DROP DATABASE IF EXISTS \(name) WITH (FORCE)", [])
            try? await server.close()
        }
    }

    static func open(_ database: CollectorConfiguration.Database) async throws -> SQLStore {
        let logger = Logger(label: "collector-tests")
        switch database {
        case .sqlite(let path): return try await SQLStore.openSQLite(path: path, logger: logger)
        case .postgres(let url): return try await SQLStore.openPostgres(url: url, logger: logger)
        }
    }

    /// Runs `body` on a store over a new database (migrated unless `migrated` is false), closed
    /// and deleted afterwards, also when `body` throws.
    static func withStore(migrated: Bool = true, _ body: (SQLStore) async throws -> Void) async throws {
        let fresh = try await fresh()
        let store = try await open(fresh.database)
        do {
            if migrated { try await store.migrate() }
            try await body(store)
        } catch {
            try? await store.close()
            await fresh.drop()
            throw error
        }
        try await store.close()
        await fresh.drop()
    }
}

/// A collector running on 127.0.0.1 (a free port) on a new database (see `TestDatabase`), with a known
/// API token; stopped when the body returns.
struct Harness: Sendable {
    static let token = "test-token"
    static let adminPassword = "correct horse battery staple"
    let client: TestClient
    let project: ProjectInfo

    struct ProjectInfo: Decodable, Sendable {
        let id: Int64
        let name: String
        let publicKey: String
        let configSigningPublicKey: String
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }

    struct StartFailure: Error {}

    static func run(_ configure: (inout CollectorConfiguration) -> Void = { _ in },
                    _ body: @escaping @Sendable (Harness) async throws -> Void) async throws {
        let fresh = try await TestDatabase.fresh()
        do {
            try await run(on: fresh.database, configure, body)
        } catch {
            await fresh.drop()
            throw error
        }
        await fresh.drop()
    }

    private static func run(on database: CollectorConfiguration.Database, _ configure: (inout CollectorConfiguration) -> Void,
                            _ body: @escaping @Sendable (Harness) async throws -> Void) async throws {
        var configuration = CollectorConfiguration(database: database, dataDirectory: NSTemporaryDirectory())
        configuration.initialAPIToken = token
        configuration.adminPassword = adminPassword
        configuration.port = 0
        configure(&configuration)
        try await run(configuration: configuration, body)
    }

    /// Runs a collector with exactly `configuration` (its `initialAPIToken` must be `token`; its
    /// port should be 0) until `body` returns.
    static func run(configuration: CollectorConfiguration, _ body: @escaping @Sendable (Harness) async throws -> Void) async throws {
        var logger = Logger(label: "collector-tests")
        logger.logLevel = .warning
        let (readyStream, readyContinuation) = AsyncStream<CollectorReady>.makeStream()
        let app = try await buildApplication(configuration, logger: logger) { ready in readyContinuation.yield(ready) }
        // Stopped the way SIGTERM stops it: a graceful shutdown (the server drains, then the database closes).
        let services = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await services.run() }
            do {
                var iterator = readyStream.makeAsyncIterator()
                guard let ready = await iterator.next() else { throw StartFailure() }
                let client = TestClient(baseURL: ready.listeningURL)
                let projects = try await client.execute("/api/0/projects", headers: ["Authorization": "Bearer \(token)"])
                #expect(projects.status == 200)
                let project = try #require(try decoder().decode([ProjectInfo].self, from: projects.body).first)
                try await body(Harness(client: client, project: project))
            } catch {
                await services.triggerGracefulShutdown()
                throw error
            }
            await services.triggerGracefulShutdown()
            try await group.waitForAll()
        }
    }

    var authHeader: String { "Sentry sentry_version=7, sentry_client=tests/1.0, sentry_key=\(project.publicKey)" }

    /// POSTs a body to the envelope endpoint (or `path`) with `X-Sentry-Auth` unless `headers` are given.
    func post(_ path: String? = nil, body: [UInt8], headers: [String: String]? = nil) async throws -> TestResponse {
        let uri = path ?? "/api/\(project.id)/envelope/"
        let fields = headers ?? ["X-Sentry-Auth": authHeader, "Content-Type": "application/x-sentry-envelope"]
        return try await client.execute(uri, method: "POST", headers: fields, body: Data(body))
    }

    /// Calls the management API with the test token.
    func api(_ path: String, method: String = "GET", json: JSONValue? = nil) async throws -> TestResponse {
        var headers = ["Authorization": "Bearer \(Self.token)"]
        if json != nil { headers["Content-Type"] = "application/json" }
        return try await client.execute(path, method: method, headers: headers, body: json?.jsonData())
    }

    func issues() async throws -> [JSONValue] {
        let response = try await api("/api/0/projects/\(project.id)/issues")
        #expect(response.status == 200)
        return response.json?.arrayValue ?? []
    }
}

enum Fixtures {
    static func eventID() -> String { UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased() }

    /// An error event with one exception and in-app frames (caller first, crashing frame last).
    static func exceptionEvent(id: String = eventID(), type: String = "ValueError", value: String = "bad value",
                               functions: [String] = ["main", "load", "parse"], release: String? = "app@1.0.0",
                               synthetic: Bool = false, fingerprint: [String]? = nil, user: String? = "user-1") -> JSONValue {
        var event: [String: JSONValue] = [
            "event_id": .string(id), "timestamp": .double(Date().timeIntervalSince1970), "platform": "python", "level": "error",
            "exception": ["values": [[
                "type": .string(type), "value": .string(value),
                "mechanism": ["type": "generic", "handled": false, "synthetic": .bool(synthetic)],
                "stacktrace": ["frames": .array(functions.map { ["function": .string($0), "in_app": true] })],
            ]]],
        ]
        if let release { event["release"] = .string(release) }
        if let fingerprint { event["fingerprint"] = .array(fingerprint.map { .string($0) }) }
        if let user { event["user"] = ["id": .string(user)] }
        return .object(event)
    }

    static func envelope(event: JSONValue? = nil, extra: [Envelope.Item] = [], header: [String: JSONValue] = [:]) -> [UInt8] {
        var items: [Envelope.Item] = []
        var envelopeHeader = header
        if let event {
            items.append(.json(type: "event", event))
            envelopeHeader["event_id"] = event["event_id"]
        }
        return [UInt8](Envelope(header: envelopeHeader, items: items + extra).serialized())
    }

    /// `data` compressed as gzip (`gzip: true`) or zlib-wrapped deflate.
    static func compress(_ data: [UInt8], gzip: Bool) -> [UInt8] {
        var stream = z_stream()
        deflateInit2_(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, gzip ? 31 : 15, 9, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        defer { deflateEnd(&stream) }
        var input = data
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(data.count))) + 64)
        let produced: Int = input.withUnsafeMutableBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = inBuf.baseAddress
                stream.avail_in = uInt(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = uInt(outBuf.count)
                _ = deflate(&stream, Z_FINISH)
                return outBuf.count - Int(stream.avail_out)
            }
        }
        return Array(output[0..<produced])
    }
}
