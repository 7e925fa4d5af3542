import CrashShieldBase
import CrashShieldRecording
import Foundation
package import _CrashShieldZlib

/// gzip (RFC 1952) over zlib, for envelope request bodies (`Content-Encoding: gzip`).
enum Gzip {
    /// Why zlib refused. `code` is stable: `gzip.init`, `gzip.stream`.
    struct Failure: Error, Sendable, Hashable {
        let code: String
        let zlibStatus: Int32
    }

    /// `data` as one gzip member (compression level 6, zlib's default).
    static func compress(_ data: Data) throws(Failure) -> Data {
        var stream = z_stream()
        // windowBits 15 + 16: zlib writes the gzip header and trailer (CRC-32, length).
        let initStatus = deflateInit2_(&stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY,
                                       zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard initStatus == Z_OK else { throw Failure(code: "gzip.init", zlibStatus: initStatus) }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(data.count)))
        var output = [UInt8](repeating: 0, count: bound + 32)
        var input = [UInt8](data)
        let status: Int32 = input.withUnsafeMutableBufferPointer { inputBuffer in
            output.withUnsafeMutableBufferPointer { outputBuffer in
                stream.next_in = inputBuffer.baseAddress
                stream.avail_in = uInt(inputBuffer.count)
                stream.next_out = outputBuffer.baseAddress
                stream.avail_out = uInt(outputBuffer.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { throw Failure(code: "gzip.stream", zlibStatus: status) }
        return Data(output.prefix(Int(stream.total_out)))
    }

    /// The bytes of a gzip stream, checked against its CRC-32 and length; nil when `data` is not
    /// a complete, intact gzip stream or inflates beyond `limit` bytes.
    static func decompress(_ data: Data, limit: Int = 64 << 20) -> Data? {
        var stream = z_stream()
        guard inflateInit2_(&stream, 15 + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
        defer { inflateEnd(&stream) }
        var input = [UInt8](data)
        var result = Data()
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var status: Int32 = Z_OK
        input.withUnsafeMutableBufferPointer { inputBuffer in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = uInt(inputBuffer.count)
            while status == Z_OK {
                chunk.withUnsafeMutableBufferPointer { chunkBuffer in
                    stream.next_out = chunkBuffer.baseAddress
                    stream.avail_out = uInt(chunkBuffer.count)
                    status = inflate(&stream, Z_NO_FLUSH)
                    result.append(chunkBuffer.baseAddress!, count: chunkBuffer.count - Int(stream.avail_out))
                }
                if result.count > limit { status = Z_BUF_ERROR }
            }
        }
        return status == Z_STREAM_END && stream.avail_in == 0 ? result : nil
    }
}
