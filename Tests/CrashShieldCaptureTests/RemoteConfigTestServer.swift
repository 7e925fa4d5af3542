import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A minimal HTTP/1.1 server on 127.0.0.1 for the remote configuration tests: it answers each
/// request with the next scripted response (the last one repeats), closes the connection, and
/// records every request's head (request line and headers).
final class RemoteConfigTestServer: @unchecked Sendable {
    struct Response {
        var status: Int
        var headers: [(String, String)] = []
        var body = Data()
    }

    let port: UInt16
    private let listener: Int32
    private let lock = NSLock()
    private var script: [Response]
    private var heads: [String] = []

    init(_ script: [Response]) throws {
        self.script = script
        #if os(Linux)
        let stream = Int32(SOCK_STREAM.rawValue)
        #else
        let stream = SOCK_STREAM
        #endif
        let fd = socket(AF_INET, stream, 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
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
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "RemoteConfigTestServer"
        thread.start()
    }

    private var stopped = false

    /// Stops accepting; later connections are refused. Idempotent: the listening descriptor is
    /// shut down once (the accept thread closes it), never after its number may have been reused.
    func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        shutdown(listener, Int32(SHUT_RDWR))
    }

    /// Replaces the responses still to come.
    func respond(_ responses: [Response]) {
        lock.lock()
        script = responses
        lock.unlock()
    }

    /// The heads of the requests received so far.
    var requests: [String] {
        lock.lock()
        defer { lock.unlock() }
        return heads
    }

    /// The value of header `name` (case-insensitive) in a request head.
    static func header(_ name: String, in head: String) -> String? {
        for line in head.components(separatedBy: "\r\n").dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == name.lowercased() {
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                // Only stop() ends accept (the thread keeps the server alive, so no deinit
                // can shut the descriptor down after this close).
                close(listener)
                return
            }
            serve(connection)
            close(connection)
        }
    }

    private func serve(_ connection: Int32) {
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        let terminator = Data("\r\n\r\n".utf8)
        while received.range(of: terminator) == nil {
            let count = read(connection, &buffer, buffer.count)
            if count <= 0 { return }
            received.append(contentsOf: buffer[0..<count])
        }
        let head = String(decoding: received[..<received.range(of: terminator)!.lowerBound], as: UTF8.self)
        lock.lock()
        heads.append(head)
        let response = script.count > 1 ? script.removeFirst() : script.first ?? Response(status: 500)
        lock.unlock()
        var text = "HTTP/1.1 \(response.status) \(response.status == 200 ? "OK" : response.status == 304 ? "Not Modified" : "Status")\r\n"
        for (name, value) in response.headers { text += "\(name): \(value)\r\n" }
        if response.status != 304 { text += "Content-Length: \(response.body.count)\r\n" }
        text += "Connection: close\r\n\r\n"
        var bytes = Data(text.utf8)
        if response.status != 304 { bytes.append(response.body) }
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(connection, raw.baseAddress! + offset, raw.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }
}
