import CZlib
import Foundation

/// How a request body is encoded, read from its `Content-Encoding` header.
///
/// Accepted (case-insensitive, spaces around entries ignored): no header, an empty value,
/// `identity`, `gzip` (also `x-gzip`), `deflate`, and `UTF-8`, which some SDKs send by mistake
/// (sentry-java for Android 2.0; Sentry's Relay ignores it too). `identity` entries of a list
/// are ignored, so `identity, gzip` is gzip. Everything else is refused with 415 `body.encoding`
/// (`unsupported`), whose message and the answer's `Accept-Encoding` (`acceptEncoding`) name the
/// codings accepted: `br`, `zstd` (Relay decodes both; this collector does not), any other
/// token, and two codings stacked (`gzip, br`, `gzip, gzip`: only one layer is decoded).
enum BodyEncoding: Sendable, Equatable {
    case identity
    case compressed(Inflater.Format)

    /// The error code of a body encoded in a way the collector cannot decode (HTTP 415).
    static let unsupportedCode = "body.encoding"
    /// The `Accept-Encoding` value sent with a 415 (RFC 7694): the codings the collector decodes.
    static let acceptEncoding = "gzip, deflate"

    /// - Parameter header: the request's `Content-Encoding` value, or nil without one.
    /// - Throws: `body.encoding` (415) for an encoding the collector cannot decode.
    init(header: String?) throws(CollectorError) {
        // Without the header (the usual case) no text work at all.
        guard let header else {
            self = .identity
            return
        }
        var coding: Inflater.Format?
        for entry in header.split(separator: ",", omittingEmptySubsequences: false) {
            let token = entry.trimmingCharacters(in: .whitespaces).lowercased()
            let format: Inflater.Format
            switch token {
            case "", "identity", "utf-8": continue
            case "gzip", "x-gzip": format = .gzip
            case "deflate": format = .deflate
            default: throw Self.unsupported("Content-Encoding \(token) is not supported")
            }
            guard coding == nil else {
                throw Self.unsupported("Content-Encoding \(header) applies more than one coding; one is decoded")
            }
            coding = format
        }
        self = coding.map { .compressed($0) } ?? .identity
    }

    private static func unsupported(_ what: String) -> CollectorError {
        .unsupportedMediaType(unsupportedCode, "\(what) (accepted: \(acceptEncoding), identity)")
    }
}

/// Decompresses a request body as it arrives, refusing output beyond `limit` bytes, so a small
/// compressed body that would expand to gigabytes (a decompression bomb) is stopped after `limit`
/// bytes of work instead of exhausting memory.
///
/// `gzip` is RFC 1952, `deflate` is the zlib format (RFC 1950) as HTTP defines it; raw deflate
/// streams without the zlib header, which some clients send for `deflate`, are accepted too.
final class Inflater {
    enum Format: Sendable { case gzip, deflate }

    private var stream = z_stream()
    private let limit: Int
    private let format: Format
    private var initialized = false
    private var triedRaw = false
    private var pendingForRetry: [UInt8] = []
    private(set) var finished = false
    private(set) var output: [UInt8] = []

    /// - Parameters:
    ///   - format: the body's `Content-Encoding`.
    ///   - limit: the most decompressed bytes accepted; more throws `body.decompressed_too_large`.
    init(format: Format, limit: Int) throws(CollectorError) {
        self.format = format
        self.limit = limit
        try start(windowBits: format == .gzip ? 15 + 16 : 15)
    }

    deinit {
        if initialized { inflateEnd(&stream) }
    }

    private func start(windowBits: Int32) throws(CollectorError) {
        if initialized { inflateEnd(&stream) }
        stream = z_stream()
        let status = inflateInit2_(&stream, windowBits, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else {
            throw .storage("zlib could not start (\(status))")
        }
        initialized = true
    }

    /// Feeds the next compressed bytes.
    /// - Throws: `CollectorError` `body.decompressed_too_large` (413) past the limit,
    ///   `body.compression` (400) for data that is not in the declared format.
    func feed(_ bytes: [UInt8]) throws(CollectorError) {
        guard !bytes.isEmpty else { return }
        if finished { return }  // trailing bytes after the end of the stream are ignored
        if format == .deflate && !triedRaw && stream.total_out == 0 { pendingForRetry.append(contentsOf: bytes) }
        try inflateBytes(bytes)
    }

    private func inflateBytes(_ bytes: [UInt8]) throws(CollectorError) {
        var input = bytes
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let count = input.count
        var failure: CollectorError?
        input.withUnsafeMutableBufferPointer { inputBuffer in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = uInt(count)
            repeat {
                let produced: Int
                let status: Int32 = chunk.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    return inflate(&stream, Z_NO_FLUSH)
                }
                produced = chunk.count - Int(stream.avail_out)
                if status == Z_DATA_ERROR && format == .deflate && !triedRaw && output.isEmpty && produced == 0 {
                    failure = CollectorError(code: "body.compression.retry_raw", message: "", status: 400)
                    return
                }
                guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else {
                    failure = .badRequest("body.compression", "the body is not valid \(format == .gzip ? "gzip" : "deflate") data")
                    return
                }
                if output.count + produced > limit {
                    failure = .tooLarge("body.decompressed_too_large", "the body decompresses to more than \(limit) bytes")
                    return
                }
                output.append(contentsOf: chunk[0..<produced])
                if status == Z_STREAM_END {
                    finished = true
                    return
                }
                if status == Z_BUF_ERROR && produced == 0 { return }  // needs more input
            } while stream.avail_in > 0 || stream.avail_out == 0
        }
        stream.next_in = nil
        if let failure {
            if failure.code == "body.compression.retry_raw" {
                triedRaw = true
                try start(windowBits: -15)
                let replay = pendingForRetry
                pendingForRetry = []
                try inflateBytes(replay)
                return
            }
            throw failure
        }
    }

    /// Ends the stream.
    /// - Throws: `body.compression` when the compressed data stopped before its end.
    func finish() throws(CollectorError) -> [UInt8] {
        guard finished else {
            throw .badRequest("body.compression", "the compressed body is truncated")
        }
        return output
    }
}
