import CrashShieldBase
import CrashShieldRecording
import CrashShieldProtocol
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the outbox refused an operation: a stable `code`, a `message` for people and the file
/// concerned (`path`).
package struct OutboxError: CodedError {
    /// The kind of error; `rawValue` is a stable string (the Swift name, e.g. "tooLarge").
    package struct Code: StableErrorCode {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }

        /// The outbox directory does not exist and could not be created, or is not a directory.
        package static let directoryUnavailable = Code(rawValue: "directoryUnavailable")
        /// Writing, syncing or renaming a file failed (the message names the step and errno).
        package static let writeFailed = Code(rawValue: "writeFailed")
        /// One envelope is larger than the outbox's byte cap.
        package static let tooLarge = Code(rawValue: "tooLarge")
        /// The envelope has no items.
        package static let empty = Code(rawValue: "empty")
        /// An entry is gone or is not an envelope.
        package static let unreadable = Code(rawValue: "unreadable")
    }

    /// The kind of error (stable).
    package let code: Code
    /// What went wrong, for people; the wording may change between versions.
    package let message: String
    /// The directory or file concerned; nil for `tooLarge` and `empty`.
    package let path: String?

    /// An error of `code` with `message` about `path`.
    package init(code: Code, message: String, path: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
    }

    /// One envelope is larger than the outbox's byte cap.
    package static let tooLarge = OutboxError(code: .tooLarge, message: "the envelope is larger than the outbox's byte cap")
    /// The envelope has no items.
    package static let empty = OutboxError(code: .empty, message: "an envelope without items has nothing to send")
}

/// Files written so that a reader sees either the old content or the complete new one, never a
/// part: a temporary file in the same directory, written, fsynced, renamed over the target, and
/// the directory fsynced (so the rename itself survives a power loss).
enum DurableFile {
    /// Prefix of temporary files; they are never taken for content.
    static let temporaryPrefix = ".tmp-"
    private static let counter = Counter()

    static func write(_ data: Data, to path: String) throws(OutboxError) {
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = "\(directory)/\(temporaryPrefix)\(getpid())-\(counter.next())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw failure("open", temporary) }
        var written = 0
        let ok: Bool = data.withUnsafeBytes { buffer in
            while written < buffer.count {
                let count = Foundation.write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { return false }
                written += count
            }
            return fsync(descriptor) == 0
        }
        let error = failure(ok ? "close" : "write", temporary)
        if close(descriptor) != 0 || !ok {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else {
            let renameError = failure("rename", path)
            unlink(temporary)
            throw renameError
        }
        syncDirectory(directory)
    }

    /// fsync of a directory, so a rename or unlink in it is durable.
    static func syncDirectory(_ directory: String) {
        let descriptor = open(directory, O_RDONLY | O_CLOEXEC)
        if descriptor >= 0 {
            _ = fsync(descriptor)
            close(descriptor)
        }
    }

    private static func failure(_ step: String, _ path: String) -> OutboxError {
        OutboxError(code: .writeFailed, message: "\(step) \(path): \(String(cString: strerror(errno)))", path: path)
    }

    final class Counter: Sendable {
        private let value = Locked<UInt64>(0)
        func next() -> UInt64 {
            value.withLock { value in
                value += 1
                return value
            }
        }
    }
}

/// An exclusive `flock` on a file, held between `acquire` and `release`; shared by processes and
/// by `Outbox` instances within one process (each takes its own descriptor).
// @unchecked Sendable: `descriptor` is used by one thread at a time (each holder owns its instance)
final class FileLock: @unchecked Sendable {
    private let path: String
    private var descriptor: Int32 = -1

    init(path: String) { self.path = path }

    /// Takes the lock; with `wait: false` gives up at once when another holder has it.
    func acquire(wait: Bool) -> Bool {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        while flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0 {
            if errno == EINTR { continue }
            close(fd)
            return false
        }
        descriptor = fd
        return true
    }

    func release() {
        guard descriptor >= 0 else { return }
        flock(descriptor, LOCK_UN)
        close(descriptor)
        descriptor = -1
    }
}

/// Envelopes waiting to be sent, one file each, in a directory of their own.
///
/// Guarantees:
/// - `enqueue` returns only after the envelope is durable (written to a temporary file, fsynced,
///   renamed to its final name, the directory fsynced). A process killed at any instant leaves
///   every envelope it enqueued complete, and no partial one under a final name: a file named
///   `*.envelope` is readable if and only if it is complete. Temporary files of dead writers are
///   removed when the outbox is opened.
/// - Entries are listed oldest first (their names start with the enqueue time in nanoseconds).
/// - The outbox is capped by count and bytes (`Limits`); when an enqueue goes over either cap, the
///   oldest entries are removed until it fits, and their items are counted as discarded
///   (`cache_overflow`). Discard counts are kept in a file until a client report carries them.
/// - `sent_at` is never stored (it is set when an envelope is sent).
// @unchecked Sendable: in-process state under `lock`, files under `FileLock`; the rest is immutable
package final class Outbox: @unchecked Sendable {
    /// Caps. Defaults: 100 envelopes, 8 MiB.
    package struct Limits: Sendable, Hashable {
        /// Most envelopes kept (at least 1).
        package var maximumCount: Int
        /// Most bytes kept, all envelopes together (at least 1).
        package var maximumBytes: Int
        /// Caps; values below 1 become 1.
        package init(maximumCount: Int = 100, maximumBytes: Int = 8 << 20) {
            self.maximumCount = max(1, maximumCount)
            self.maximumBytes = max(1, maximumBytes)
        }
    }

    /// One stored envelope.
    package struct Entry: Sendable, Hashable {
        /// The file name (`<enqueue time ns>-<pid>-<n>.envelope`); names sort oldest first.
        package let name: String
        /// The file's full path.
        package let path: String
        /// The file's size.
        package let byteCount: Int
    }

    /// How many items of one category were discarded for one reason (client report terms:
    /// reasons `cache_overflow`, `ratelimit_backoff`, `send_error`, `internal_sdk_error`).
    package struct DiscardKey: Sendable, Hashable, Comparable {
        /// The client-report reason (`cache_overflow`, ...).
        package let reason: String
        /// The data category (`error`, `session`, ...; see `DataCategory`).
        package let category: String
        /// A (reason, category) pair.
        package init(reason: String, category: String) {
            self.reason = reason
            self.category = category
        }
        package static func < (a: DiscardKey, b: DiscardKey) -> Bool { (a.reason, a.category) < (b.reason, b.category) }
    }

    /// The extension of entry files: "envelope".
    package static let fileExtension = "envelope"
    /// Where the outbox of a report directory lives: `<report directory>/outbox`.
    package static func directory(forReportDirectory reportDirectory: String) -> String { reportDirectory + "/outbox" }

    /// The outbox's own directory.
    package let directory: String
    /// The caps applied after each enqueue.
    package let limits: Limits
    private let lock = Locked()
    private let counter = DurableFile.Counter()
    private var discardsPath: String { directory + "/discards.json" }
    private var lockPath: String { directory + "/.lock" }

    /// Opens (creating if needed, mode 0700) the outbox in `directory` and removes temporary files
    /// left by writers that are no longer running (or older than ten minutes).
    /// - Throws: `OutboxError` `directoryUnavailable` when the directory cannot be created.
    package init(directory: String, limits: Limits = Limits()) throws(OutboxError) {
        self.directory = directory
        self.limits = limits
        // The usual cases (the directory exists, or only its last component is missing) with
        // mkdir(2) and chmod(2): FileManager's createDirectory with attributes costs ~0.6 M
        // instructions (attribute dictionaries, dynamic casts) of reporting's setup.
        if mkdir(directory, 0o700) == 0 {
            chmod(directory, 0o700)  // exactly 0700, whatever the umask
        } else if errno != EEXIST {  // an existing path is checked below: it must be a directory
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw OutboxError(code: .directoryUnavailable, message: "cannot create \(directory): \(error.localizedDescription)",
                                  path: directory)
            }
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw OutboxError(code: .directoryUnavailable, message: "\(directory) is not a directory", path: directory)
        }
        removeAbandonedTemporaryFiles()
    }

    private func removeAbandonedTemporaryFiles() {
        let now = Date()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        where name.hasPrefix(DurableFile.temporaryPrefix) {
            let path = "\(directory)/\(name)"
            let writer = name.dropFirst(DurableFile.temporaryPrefix.count).split(separator: "-").first.flatMap { pid_t($0) }
            // This process's own temporary files may belong to another Outbox instance writing now.
            let writerAlive = writer.map { kill($0, 0) == 0 || errno == EPERM } ?? false
            let modified = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date) ?? nil
            let old = modified.map { now.timeIntervalSince($0) > 600 } ?? true
            if !writerAlive || old { unlink(path) }
        }
    }

    /// Stores `envelope` durably (without any `sent_at` header) and returns its entry, then
    /// applies the caps (removing the oldest other entries, counted as `cache_overflow`).
    /// - Throws: `OutboxError` `empty` for an envelope without items, `tooLarge` when the
    ///   envelope alone exceeds the byte cap (its items are counted as `cache_overflow`),
    ///   `writeFailed` when the disk refuses.
    @discardableResult
    package func enqueue(_ envelope: Envelope) throws(OutboxError) -> Entry {
        guard !envelope.items.isEmpty else {
            throw OutboxError.empty
        }
        var stored = envelope
        stored.header["sent_at"] = nil
        let data = stored.serialized()
        guard data.count <= limits.maximumBytes else {
            recordDiscards(Self.itemCategories(stored).map { (DiscardKey(reason: "cache_overflow", category: $0), 1) })
            throw OutboxError(code: .tooLarge,
                              message: "the envelope has \(data.count) bytes, more than the outbox's cap of \(limits.maximumBytes)")
        }
        let nanoseconds = UInt64(max(0, Date().timeIntervalSince1970 * 1e9))
        let name = String(format: "%020llu-%d-%llu.%@", nanoseconds, getpid(), counter.next(), Self.fileExtension)
        let path = "\(directory)/\(name)"
        try DurableFile.write(data, to: path)
        let entry = Entry(name: name, path: path, byteCount: data.count)
        applyCaps(keeping: entry)
        return entry
    }

    private func applyCaps(keeping newest: Entry) {
        lock.lock()
        var entries = pending()
        var bytes = entries.reduce(0) { $0 + $1.byteCount }
        var discarded: [(DiscardKey, Int)] = []
        while entries.count > limits.maximumCount || bytes > limits.maximumBytes,
              let oldest = entries.first(where: { $0 != newest }) {
            let categories = (try? load(oldest)).map(Self.itemCategories) ?? ["default"]
            // Counted only by the remover (another process may have sent or dropped it meanwhile).
            if unlink(oldest.path) == 0 {
                discarded += categories.map { (DiscardKey(reason: "cache_overflow", category: $0), 1) }
            }
            entries.removeAll { $0 == oldest }
            bytes -= oldest.byteCount
        }
        lock.unlock()
        if !discarded.isEmpty {
            DurableFile.syncDirectory(directory)
            recordDiscards(discarded)
        }
    }

    static func itemCategories(_ envelope: Envelope) -> [String] {
        envelope.items.isEmpty ? ["default"] : envelope.items.map { DataCategory.of(itemType: $0.type) }
    }

    /// The stored envelopes, oldest first. Temporary files and other files are not listed.
    package func pending() -> [Entry] {
        let suffix = "." + Self.fileExtension
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(suffix) && !$0.hasPrefix(".") }
            .sorted()
        return names.compactMap { name in
            let path = "\(directory)/\(name)"
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }  // removed meanwhile
            return Entry(name: name, path: path, byteCount: Int(info.st_size))
        }
    }

    /// The envelope stored in `entry`.
    /// - Throws: `OutboxError` `unreadable` when the file is gone or is not an envelope.
    package func load(_ entry: Entry) throws(OutboxError) -> Envelope {
        guard let data = FileManager.default.contents(atPath: entry.path) else {
            throw OutboxError(code: .unreadable, message: "cannot read \(entry.path)", path: entry.path)
        }
        do {
            return try Envelope.parse(data)
        } catch {
            throw OutboxError(code: .unreadable, message: "\(entry.name): \(error)", path: entry.path)
        }
    }

    /// Removes `entry` durably. Removing an entry that is already gone is not an error.
    package func remove(_ entry: Entry) {
        unlink(entry.path)
        DurableFile.syncDirectory(directory)
    }

    /// Replaces the content of `entry` (same name, so the same place in the order), atomically.
    func replace(_ entry: Entry, with envelope: Envelope) throws(OutboxError) -> Entry {
        var stored = envelope
        stored.header["sent_at"] = nil
        let data = stored.serialized()
        try DurableFile.write(data, to: entry.path)
        return Entry(name: entry.name, path: entry.path, byteCount: data.count)
    }

    // MARK: Discard counts (client reports)

    /// Adds discarded-item counts to the persistent tally.
    package func recordDiscards(_ counts: [(DiscardKey, Int)]) {
        guard !counts.isEmpty else { return }
        updateDiscards { tally in
            for (key, quantity) in counts where quantity > 0 { tally[key, default: 0] += quantity }
        }
    }

    /// The discard counts not yet carried by a delivered client report.
    package func pendingDiscards() -> [DiscardKey: Int] {
        guard let data = FileManager.default.contents(atPath: discardsPath),
              case .array(let rows)? = try? JSONValue.parse(data) else { return [:] }
        var tally: [DiscardKey: Int] = [:]
        for row in rows {
            guard let reason = row["reason"]?.stringValue, let category = row["category"]?.stringValue,
                  let quantity = row["quantity"]?.intValue, quantity > 0 else { continue }
            tally[DiscardKey(reason: reason, category: category), default: 0] += Int(quantity)
        }
        return tally
    }

    /// Subtracts counts that a delivered client report carried.
    func subtractDiscards(_ delivered: [DiscardKey: Int]) {
        guard !delivered.isEmpty else { return }
        updateDiscards { tally in
            for (key, quantity) in delivered {
                let left = (tally[key] ?? 0) - quantity
                tally[key] = left > 0 ? left : nil
            }
        }
    }

    private func updateDiscards(_ change: (inout [DiscardKey: Int]) -> Void) {
        lock.lock()
        defer { lock.unlock() }
        let fileLock = FileLock(path: lockPath)
        let locked = fileLock.acquire(wait: true)
        defer { if locked { fileLock.release() } }
        var tally = pendingDiscards()
        change(&tally)
        if tally.isEmpty {
            unlink(discardsPath)
            return
        }
        let rows = tally.keys.sorted().map { key -> JSONValue in
            ["reason": .string(key.reason), "category": .string(key.category), "quantity": .int(Int64(tally[key]!))]
        }
        try? DurableFile.write(JSONValue.array(rows).jsonData(), to: discardsPath)
    }

    /// A `client_report` item carrying `counts`, timestamped `now`.
    static func clientReportItem(_ counts: [DiscardKey: Int], now: Date = Date()) -> Envelope.Item {
        let discarded = counts.keys.sorted().map { key -> JSONValue in
            ["reason": .string(key.reason), "category": .string(key.category), "quantity": .int(Int64(counts[key]!))]
        }
        return .json(type: "client_report", ["timestamp": .double(now.timeIntervalSince1970), "discarded_events": .array(discarded)])
    }
}
