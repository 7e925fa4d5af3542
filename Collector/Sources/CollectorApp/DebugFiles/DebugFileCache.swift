import Foundation

/// This collector's copies of stored debug files, for the symbolizer to open: one file per
/// checksum in `directory` (`<data-dir>/debug-files`), written from the database's chunks when
/// first needed (to a temporary name, then renamed, so a reader never sees half a file) and
/// checked against the checksum. The database stays the truth: deleting the directory only costs
/// the next symbolication a rewrite.
final class DebugFileCache: Sendable {
    let directory: String

    init(directory: String) {
        self.directory = directory
    }

    struct Assembled {
        var object: ObjectFile
        var size: Int64
        var path: String
    }

    /// Why a file could not be assembled; `detail` is for the uploader (the assemble answer).
    struct AssemblyFailure: Error {
        var detail: String
    }

    /// 503 `debug_files.cache` with `Retry-After: 30`: the data directory could not be written
    /// (full, read-only, removed); nothing was recorded, the same upload may be sent again.
    static func unwritable(_ directory: String, _ error: (any Error)? = nil) -> CollectorError {
        CollectorError(code: "debug_files.cache", message: "cannot write debug files to \(directory)\(error.map { ": \($0)" } ?? "")",
                       status: 503, retryAfter: 30)
    }

    func path(checksum: String) -> String { (directory as NSString).appendingPathComponent(checksum) }

    /// Writes the chunks in order to the cache, checks the whole file's SHA-1 and size, and reads
    /// its headers.
    /// - Throws: `AssemblyFailure` (a missing chunk, a checksum mismatch, too large, not an object
    ///   file the collector reads), or the store's error.
    func assemble(checksum: String, chunks: [String], maxSize: Int64, store: any DebugFileStore) async throws -> Assembled {
        let size = try await write(checksum: checksum, chunks: chunks, maxSize: maxSize, store: store)
        let target = path(checksum: checksum)
        guard let object = ObjectFile.read(path: target) else {
            try? FileManager.default.removeItem(atPath: target)
            throw AssemblyFailure(detail: "not a debug file the collector reads (64-bit little-endian ELF with a GNU build id, 64-bit Mach-O with LC_UUID)")
        }
        return Assembled(object: object, size: size, path: target)
    }

    /// The cached copy of `file`, written from its chunks when missing; nil (and logged by the
    /// caller) when that fails.
    func localPath(for file: DebugFileRecord, store: any DebugFileStore) async throws -> String {
        let target = path(checksum: file.checksum)
        if let attributes = try? FileManager.default.attributesOfItem(atPath: target),
           (attributes[.size] as? NSNumber)?.int64Value == file.size {
            return target
        }
        _ = try await write(checksum: file.checksum, chunks: file.chunks, maxSize: file.size, store: store)
        return target
    }

    /// - Throws: `AssemblyFailure`, `unwritable`, or the store's error.
    private func write(checksum: String, chunks: [String], maxSize: Int64, store: any DebugFileStore) async throws -> Int64 {
        do { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) } catch {
            throw Self.unwritable(directory, error)
        }
        let temporary = (directory as NSString).appendingPathComponent(".\(checksum).\(UUID().uuidString).part")
        guard FileManager.default.createFile(atPath: temporary, contents: nil), let handle = FileHandle(forWritingAtPath: temporary) else {
            throw Self.unwritable(directory)
        }
        var keep = false
        defer {
            try? handle.close()
            if !keep { try? FileManager.default.removeItem(atPath: temporary) }
        }
        let hash = SHA1()
        var size: Int64 = 0
        for chunk in chunks {
            guard let data = try await store.debugChunk(chunk) else { throw AssemblyFailure(detail: "chunk \(chunk) is not stored") }
            size += Int64(data.count)
            guard size <= maxSize else { throw AssemblyFailure(detail: "the file is larger than \(maxSize) bytes") }
            hash.update(data)
            do { try handle.write(contentsOf: data) } catch { throw Self.unwritable(directory, error) }
        }
        let actual = hash.hex()
        guard actual == checksum else {
            throw AssemblyFailure(detail: "the chunks' concatenation has SHA-1 \(actual), not the file's checksum \(checksum)")
        }
        do { try handle.synchronize() } catch { throw Self.unwritable(directory, error) }
        guard rename(temporary, path(checksum: checksum)) == 0 else { throw Self.unwritable(directory) }
        keep = true
        return size
    }
}
