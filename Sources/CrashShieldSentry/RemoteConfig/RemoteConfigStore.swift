import CrashShieldBase
import CrashShieldRecording
import CrashShieldProtocol
import Foundation

/// The remote configuration document kept in the report directory, and the fetch state.
///
/// Files (both replaced atomically: temporary file, fsync, rename, fsync of the directory):
/// - `remote-config.json` (`documentFileName`): the signed envelope as received, its ETag and
///   version. Launch protection's `RepairStep.resetRemoteConfiguration` deletes it.
/// - `remote-config-state.json` (`stateFileName`): when the next fetch is due, the version a
///   repair step discarded, and why the last document was rejected. It survives a reset, so a
///   discarded version is not fetched and applied again.
///
/// A document is stored only after it was verified and parsed; the store itself refuses a
/// version lower than the stored one and one not above a discarded version.
package struct RemoteConfigStore: Sendable {
    package static let documentFileName = "remote-config.json"
    package static let stateFileName = "remote-config-state.json"

    package let directory: String
    package init(directory: String) { self.directory = directory }

    package var documentPath: String { "\(directory)/\(Self.documentFileName)" }
    package var statePath: String { "\(directory)/\(Self.stateFileName)" }

    /// The stored document as kept on disk (not verified or parsed: see `RemoteConfiguration.load`).
    package struct StoredDocument: Sendable, Hashable {
        package var envelope: SignedRemoteConfig
        package var version: Int64
        package var etag: String?
    }

    /// Fetch bookkeeping.
    package struct State: Sendable, Hashable {
        /// No fetch before this time (from the server's `Cache-Control: max-age`, or the default interval).
        package var nextFetchAt: Date?
        /// The version a repair step discarded: documents up to this version are refused.
        package var discardedVersion: Int64?
        /// Why the most recent document (fetched or stored) was refused.
        package var lastRejection: RemoteConfigError?
        package init(nextFetchAt: Date? = nil, discardedVersion: Int64? = nil, lastRejection: RemoteConfigError? = nil) {
            self.nextFetchAt = nextFetchAt
            self.discardedVersion = discardedVersion
            self.lastRejection = lastRejection
        }
    }

    /// Rejection codes of the store (stable).
    package static let olderVersionCode = "remote_config.older_version"
    package static let discardedVersionCode = "remote_config.discarded_version"
    package static let writeFailedCode = "remote_config.write_failed"

    // MARK: reading

    /// The stored document; nil when there is none or the file is unreadable or corrupt.
    package func loadDocument() -> StoredDocument? {
        // The usual start has no document: access(2) instead of the first FileManager use.
        guard access(documentPath, F_OK) == 0 else { return nil }
        guard let data = FileManager.default.contents(atPath: documentPath),
              let root = try? JSONValue.parseStrict(data), let members = root.objectValue,
              let version = members["version"]?.intValue,
              let payloadText = members["payload"]?.stringValue, let payload = Data(base64Encoded: payloadText)
        else { return nil }
        let signature = members["signature"]?.stringValue.flatMap { Data(base64Encoded: $0) }
        return StoredDocument(envelope: SignedRemoteConfig(payload: payload, signature: signature), version: version,
                              etag: members["etag"]?.stringValue)
    }

    /// The fetch state; an empty state when missing or corrupt.
    package func loadState() -> State {
        guard let data = FileManager.default.contents(atPath: statePath),
              let root = try? JSONValue.parseStrict(data), let members = root.objectValue else { return State() }
        var state = State()
        state.nextFetchAt = members["next_fetch_at"]?.doubleValue.map { Date(timeIntervalSince1970: $0) }
        state.discardedVersion = members["discarded_version"]?.intValue
        if let rejection = members["last_rejection"], let code = rejection["code"]?.stringValue {
            state.lastRejection = RemoteConfigError(code: code, path: rejection["path"]?.stringValue ?? "$",
                                                    message: rejection["message"]?.stringValue ?? "")
        }
        return state
    }

    // MARK: writing

    /// Stores `envelope` (already verified and parsed as `document`) unless its version is lower
    /// than the stored one or not above a discarded version.
    /// - Throws: `RemoteConfigError` with `olderVersionCode` or `discardedVersionCode` (the stored
    ///   document stays), or `writeFailedCode` when the file could not be written.
    package func store(_ envelope: SignedRemoteConfig, document: RemoteConfigDocument, etag: String?) throws(RemoteConfigError) {
        if let stored = loadDocument(), document.version < stored.version {
            throw RemoteConfigError(code: Self.olderVersionCode, path: "$.version",
                                    message: "version \(document.version) is lower than the stored version \(stored.version)")
        }
        if let discarded = loadState().discardedVersion, document.version <= discarded {
            throw RemoteConfigError(code: Self.discardedVersionCode, path: "$.version",
                                    message: "version \(document.version) is not above version \(discarded), which launch protection discarded")
        }
        var members: [String: JSONValue] = [
            "version": .int(document.version),
            "payload": .string(envelope.payload.base64EncodedString()),
        ]
        if let signature = envelope.signature { members["signature"] = .string(signature.base64EncodedString()) }
        if let etag { members["etag"] = .string(etag) }
        guard Self.writeAtomically(JSONValue.object(members).jsonData(), to: documentPath) else {
            throw RemoteConfigError(code: Self.writeFailedCode, path: "$", message: "could not write \(documentPath)")
        }
    }

    /// Replaces the fetch state.
    @discardableResult
    package func saveState(_ state: State) -> Bool {
        var members: [String: JSONValue] = [:]
        if let next = state.nextFetchAt { members["next_fetch_at"] = .double(next.timeIntervalSince1970) }
        if let discarded = state.discardedVersion { members["discarded_version"] = .int(discarded) }
        if let rejection = state.lastRejection {
            members["last_rejection"] = ["code": .string(rejection.code), "path": .string(rejection.path),
                                         "message": .string(rejection.message)]
        }
        return Self.writeAtomically(JSONValue.object(members).jsonData(), to: statePath)
    }

    /// Deletes the stored document and remembers its version as discarded (launch protection's
    /// reset step): the defaults apply from the next start, and that version is not applied again.
    package func discard() {
        if let stored = loadDocument() {
            var state = loadState()
            state.discardedVersion = max(state.discardedVersion ?? stored.version, stored.version)
            saveState(state)
        }
        try? FileManager.default.removeItem(atPath: documentPath)
    }

    /// Writes `data` to a temporary file next to `path`, fsyncs it, renames it over `path` and
    /// fsyncs the directory: a reader sees the old or the new file, never a part of one, also
    /// after a crash or power loss.
    static func writeAtomically(_ data: Data, to path: String) -> Bool {
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = "\(path).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return false }
        var ok = data.withUnsafeBytes { buffer -> Bool in
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
        ok = ok && fsync(fd) == 0
        close(fd)
        guard ok, rename(temporary, path) == 0 else {
            unlink(temporary)
            return false
        }
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            fsync(directoryFD)
            close(directoryFD)
        }
        return true
    }
}
