import CrashShieldBase
import CrashShieldProtocol
import Foundation
#if canImport(Glibc)
import Glibc

// glibc imports the socket type as an enum and has MSG_NOSIGNAL; Darwin has neither.
private let streamSocket = Int32(SOCK_STREAM.rawValue)
private let noSignal = Int32(MSG_NOSIGNAL)
#else
private let streamSocket = SOCK_STREAM
private let noSignal: Int32 = 0
#endif

/// A small HTTP/1.1 server on 127.0.0.1 for the transport and remote-configuration tests: one
/// connection at a time, each answered by the next scripted `Reply` (then `fallback`), closed after
/// the answer. Records every request it read.
final class LoopbackHTTPServer: @unchecked Sendable {
    enum Reply: Sendable {
        /// Answers with `status`, `headers` and `body`. `Content-Type: application/json` is sent
        /// unless `headers` names a content type; a 304 is sent without `Content-Length` or body.
        case respond(status: Int, headers: [String: String] = [:], body: Data = Data("{}".utf8))
        /// Reads the request and never answers (until `stop`).
        case hang
        /// Closes the connection after reading the request, without an answer.
        case close
    }

    struct Request: Sendable {
        let method: String
        /// The request target as sent (path and query).
        let path: String
        /// The protocol version from the request line, e.g. "HTTP/1.1".
        let version: String
        /// Header names lowercased.
        let headers: [String: String]
        let body: Data
    }

    let port: UInt16
    private let listener: Int32
    private let lock = Locked()
    private var script: [Reply] = []
    private var fallback: Reply
    private var recorded: [Request] = []
    private var held: [Int32] = []
    private var stopped = false
    private let done = DispatchSemaphore(value: 0)

    init(fallback: Reply = .respond(status: 200)) throws {
        self.fallback = fallback
        let fd = socket(AF_INET, streamSocket, 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    deinit { stop() }

    /// A DSN pointing at this server, project 1.
    var dsn: String { "http://0123456789abcdef0123456789abcdef@127.0.0.1:\(port)/1" }

    /// Replies for the next connections, in order.
    func enqueue(_ replies: Reply...) {
        lock.lock()
        script += replies
        lock.unlock()
    }

    func setFallback(_ reply: Reply) {
        lock.lock()
        fallback = reply
        lock.unlock()
    }

    var requests: [Request] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }

    func stop() {
        lock.lock()
        if stopped {
            lock.unlock()
            return
        }
        stopped = true
        let connections = held
        held = []
        lock.unlock()
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for connection in connections {
            shutdown(connection, Int32(SHUT_RDWR))
            close(connection)
        }
        _ = done.wait(timeout: .now() + 5)
    }

    private func serve() {
        defer { done.signal() }
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                return
            }
            lock.lock()
            let isStopped = stopped
            lock.unlock()
            if isStopped {
                close(connection)
                return
            }
            handle(connection)
        }
    }

    private func handle(_ connection: Int32) {
        guard let request = read(connection) else {
            close(connection)
            return
        }
        lock.lock()
        recorded.append(request)
        let reply = script.isEmpty ? fallback : script.removeFirst()
        if case .hang = reply { held.append(connection) }
        lock.unlock()
        switch reply {
        case .hang: return
        case .close: close(connection)
        case .respond(let status, let headers, let body):
            let hasBody = status != 304
            var text = "HTTP/1.1 \(status) Status\r\nConnection: close\r\n"
            if hasBody { text += "Content-Length: \(body.count)\r\n" }
            if !headers.keys.contains(where: { $0.lowercased() == "content-type" }) { text += "Content-Type: application/json\r\n" }
            for (name, value) in headers { text += "\(name): \(value)\r\n" }
            text += "\r\n"
            writeAll(connection, Array(text.utf8) + (hasBody ? Array(body) : []))
            shutdown(connection, Int32(SHUT_WR))
            close(connection)
        }
    }

    private func writeAll(_ connection: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, noSignal) }
            if count <= 0 { return }
            offset += count
        }
    }

    /// Reads one request (headers, then Content-Length bytes of body; answers `Expect: 100-continue`).
    private func read(_ connection: Int32) -> Request? {
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        func fill() -> Bool {
            let count = recv(connection, &chunk, chunk.count, 0)
            if count <= 0 { return false }
            buffer += chunk[0..<count]
            return true
        }
        let separator: [UInt8] = [13, 10, 13, 10]
        var headerEnd: Int?
        while headerEnd == nil {
            if buffer.count >= 4 {
                headerEnd = (0...(buffer.count - 4)).first { buffer[$0..<($0 + 4)].elementsEqual(separator) }
            }
            if headerEnd == nil && !fill() { return nil }
        }
        let head = String(decoding: buffer[0..<headerEnd!], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 3 else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        if headers["expect"]?.lowercased() == "100-continue" { writeAll(connection, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        let bodyStart = headerEnd! + 4
        while buffer.count - bodyStart < length { if !fill() { return nil } }
        return Request(method: String(requestLine[0]), path: String(requestLine[1]), version: String(requestLine[2]), headers: headers,
                       body: Data(buffer[bodyStart..<(bodyStart + length)]))
    }

    /// A port on 127.0.0.1 where nothing listens (bound, then closed).
    static func closedPort() -> UInt16 {
        let fd = socket(AF_INET, streamSocket, 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        close(fd)
        return UInt16(bigEndian: address.sin_port)
    }
}
