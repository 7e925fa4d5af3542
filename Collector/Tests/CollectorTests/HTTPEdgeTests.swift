@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// HTTP edges: HEAD, unknown routes, HSTS, pre-release order.
@Suite struct HTTPEdgeTests {
    /// HEAD answers as GET does (status, headers, `Content-Length` of the GET's body) and sends no
    /// body: read from the socket up to the collector's close.
    @Test func headAnswersLikeGetWithoutABody() async throws {
        try await Harness.run { harness in
            for path in ["/health", "/login", "/static/collector.css", "/projects", "/api/\(harness.project.id)/sdk-config"] {
                let get = try await harness.client.execute(path)
                let head = try await RawHTTP.exchange(baseURL: harness.client.baseURL, method: "HEAD", path: path)
                #expect(head.status == get.status, "\(path)")
                #expect(head.body.isEmpty, "\(path): HEAD sent \(head.body.count) body bytes")
                #expect(head.headers["content-type"] == get.headers["content-type"], "\(path)")
                #expect(head.headers["location"] == get.headers["location"], "\(path)")
                if get.status == 200 {
                    #expect(head.headers["content-length"] == String(get.body.count), "\(path)")
                }
            }
        }
    }

    /// Unknown routes, and known paths asked with a method they do not answer, get the dashboard's
    /// 404 page outside `/api` and the JSON error document under it.
    @Test func unknownRoutesGetTheNotFoundPage() async throws {
        try await Harness.run { harness in
            let page = try await harness.client.execute("/no/such/page")
            #expect(page.status == 404)
            #expect(page.headers["content-type"] == "text/html; charset=utf-8")
            #expect(page.text.contains("<h1>Not found</h1>"))
            #expect(page.text.contains("route.unknown"))
            #expect(page.text.contains("/static/collector.css"))
            #expect(page.headers["content-security-policy"]?.contains("default-src 'none'") == true)

            for path in ["/api/0/nothing-here", "/api/\(harness.project.id)/envelope/", "/api"] {
                let api = try await harness.client.execute(path)
                #expect(api.status == 404, "\(path)")
                #expect(api.headers["content-type"] == "application/json", "\(path)")
                #expect(api.json?["code"]?.stringValue == "route.unknown", "\(path)")
            }
            let put = try await harness.client.execute("/health", method: "PUT")
            #expect(put.status == 404)
            #expect(put.text.contains("route.unknown"))

            let head = try await RawHTTP.exchange(baseURL: harness.client.baseURL, method: "HEAD", path: "/no/such/page")
            #expect(head.status == 404)
            #expect(head.body.isEmpty)
            #expect(head.headers["content-length"] == String(page.body.count))
        }
    }

    /// `Strict-Transport-Security` on every answer when the public URL is https, never otherwise.
    @Test(arguments: [("https://crashes.example.com", true), ("HTTPS://crashes.example.com:8443/", true),
                      ("http://crashes.example.com", false), (nil, false)] as [(String?, Bool)])
    func strictTransportSecurityOnlyBehindHTTPS(publicURL: String?, expected: Bool) async throws {
        try await Harness.run({ $0.publicURL = publicURL }) { harness in
            let answers = [
                try await harness.client.execute("/health"),
                try await harness.client.execute("/login"),
                try await harness.client.execute("/no/such/page"),
                try await harness.api("/api/0/projects"),
                try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent())),
            ]
            for answer in answers {
                #expect(answer.headers["strict-transport-security"] == (expected ? "max-age=31536000" : nil),
                        "public URL \(publicURL ?? "none"), status \(answer.status)")
            }
        }
    }

    /// Semver precedence: a pre-release is older than its release; pre-releases compare identifier
    /// by identifier.
    @Test func preReleasesOrderAsSemverSays() {
        let ascending = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
                         "1.0.0-rc.1", "1.0.0", "1.0.1-0", "1.0.1", "2.0.0-beta", "2.0.0-rc.1", "2.0.0", "2.0.1-alpha"]
        for (older, newer) in zip(ascending, ascending.dropFirst()) {
            #expect(ReleaseOrder.isNewer("app@" + newer, than: "app@" + older), "\(newer) > \(older)")
            #expect(ReleaseOrder.compare(older, newer) == .orderedAscending, "\(older) < \(newer)")
        }
        #expect(ReleaseOrder.isNewer("app@2.0.0", than: "app@2.0.0-beta"))
        #expect(ReleaseOrder.isNewer("2.0.0-beta", than: "1.9.9"))
        #expect(ReleaseOrder.isNewer("2.0.0-beta.1+2", than: "2.0.0-beta.1+1"))
        #expect(ReleaseOrder.isNewer("2.0.0-beta.10", than: "2.0.0-beta.9"))
        #expect(ReleaseOrder.compare("v2.0.0-rc.1", "v2.0.0") == .orderedAscending)
        #expect(ReleaseOrder.compare("1.0-beta", "1.0") == .orderedAscending)
        // Not a version core: the dash separates components as before.
        #expect(ReleaseOrder.isNewer("my-app-1.10", than: "my-app-1.9"))
        // Unchanged: numeric components, a missing one is 0, builds break ties.
        #expect(ReleaseOrder.compare("1.0", "1.0.0") == .orderedSame)
        #expect(ReleaseOrder.isNewer("app@1.10.0", than: "app@1.9.3"))
    }

    /// In the regression rules: an issue resolved in `2.0.0` does not reopen for `2.0.0-beta`; one
    /// resolved in the next release after `2.0.0-rc.1` reopens for `2.0.0`, not for `2.0.0-beta`.
    @Test func preReleasesAreOlderInRegressionRules() async throws {
        try await Harness.run { harness in
            func send(_ release: String, type: String) async throws {
                let event = Fixtures.exceptionEvent(type: type, release: release)
                #expect(try await harness.post(body: Fixtures.envelope(event: event)).status == 200)
            }
            func issue(_ type: String) async throws -> JSONValue? {
                try await harness.issues().first { $0["title"]?.stringValue?.hasPrefix(type) == true }
            }
            try await send("app@2.0.0", type: "FinalError")
            let final = try #require(try await issue("FinalError")?["id"]?.intValue)
            #expect(try await harness.api("/api/0/issues/\(final)", method: "PUT", json: ["status": "resolved"]).status == 200)
            try await send("app@2.0.0-beta", type: "FinalError")
            var current = try await harness.api("/api/0/issues/\(final)").json
            #expect(current?["status"]?.stringValue == "resolved")
            #expect(current?["last_release"]?.stringValue == "app@2.0.0")

            try await send("app@2.0.0-rc.1", type: "CandidateError")
            let candidate = try #require(try await issue("CandidateError")?["id"]?.intValue)
            let resolved = try await harness.api("/api/0/issues/\(candidate)", method: "PUT", json: ["status": "resolved_in_next_release"])
            #expect(resolved.json?["resolved_in_release"]?.stringValue == "app@2.0.0-rc.1")
            try await send("app@2.0.0-beta", type: "CandidateError")
            current = try await harness.api("/api/0/issues/\(candidate)").json
            #expect(current?["status"]?.stringValue == "resolved_in_next_release")
            try await send("app@2.0.0", type: "CandidateError")
            current = try await harness.api("/api/0/issues/\(candidate)").json
            #expect(current?["status"]?.stringValue == "regressed")
            #expect(current?["last_release"]?.stringValue == "app@2.0.0")
        }
    }
}

/// One HTTP/1.1 request over a plain socket (`Connection: close`), read to the collector's close,
/// so a test sees exactly the bytes sent (URLSession drops a HEAD's body silently).
enum RawHTTP {
    struct Answer: Sendable {
        let status: Int
        let headers: [String: String]
        let body: [UInt8]
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func exchange(baseURL: String, method: String, path: String) async throws -> Answer {
        let port = try #require(URLComponents(string: baseURL)?.port)
        let request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n"
        // The socket blocks (at most 10 s): on a thread of its own, not the cooperative pool's.
        let bytes: [UInt8] = try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try roundTrip(port: UInt16(port), request: Array(request.utf8)) })
            }
        }
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: Array("\r\n\r\n".utf8)) }) else {
            throw Failure(description: "no header block in \(bytes.count) bytes")
        }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(lines[0].split(separator: " ").dropFirst().first ?? "") ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Answer(status: status, headers: headers, body: Array(bytes[(end + 4)...]))
    }

    private static func roundTrip(port: UInt16, request: [UInt8]) throws -> [UInt8] {
        let socket = try BlockingSocket(port: port)
        try socket.write(request)
        return try socket.readToClose()
    }
}

/// A blocking TCP connection to 127.0.0.1 (reads time out after 10 s). For tests that need the
/// exact bytes or the moment the collector closes; use it off the cooperative pool.
final class BlockingSocket {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let fd: Int32

    init(port: UInt16) throws {
        #if canImport(Glibc)
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw Failure(description: "connect: errno \(errno)")
        }
    }

    deinit { close(fd) }

    func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send: errno \(errno)") }
            sent += n
        }
    }

    /// Everything received until the other side closes (a reset counts as a close).
    func readToClose() throws -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 || (n < 0 && errno == ECONNRESET) { return received }
            guard n > 0 else { throw Failure(description: "recv: errno \(errno) after \(received.count) bytes") }
            received.append(contentsOf: buffer[..<n])
        }
    }
}
