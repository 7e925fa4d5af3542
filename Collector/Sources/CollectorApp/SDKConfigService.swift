import CrashShieldProtocol
import Foundation

/// Versions, signs and serves a project's SDK configuration document (the remote switches).
///
/// The collector treats the document as validated, opaque JSON: it must be an object, `rules`
/// (when present) an array of objects, at most `maxDocumentBytes`. The collector sets `version`
/// (one above the newest stored) and `issued_at`, writes it as compact JSON with sorted keys, and
/// signs those exact bytes with the project's Ed25519 key, so the SDK verifies the payload bytes
/// and needs no canonical JSON. A rollback re-issues an older version's content under a new,
/// higher version number (the SDK refuses a version lower than the one it has).
struct SDKConfigService: Sendable {
    let store: any CollectorStore
    /// `Cache-Control: max-age` of the served document, in seconds.
    let maxAge: Int
    static let maxDocumentBytes = 64 * 1024

    /// Validates `document` and stores it as the project's next version.
    /// - Throws: `sdk_config.invalid` (400), `sdk_config.too_large` (413),
    ///   `sdk_config.version_conflict` (409) when the document names a version not above the newest.
    func publish(projectID: Int64, document: JSONValue, restoredFrom: Int64? = nil, now: Date = Date()) async throws -> SDKConfigVersion {
        guard case .object(var members) = document else {
            throw CollectorError.badRequest("sdk_config.invalid", "the document must be a JSON object")
        }
        if let rules = members["rules"] {
            guard let list = rules.arrayValue, list.allSatisfy({ $0.objectValue != nil }) else {
                throw CollectorError.badRequest("sdk_config.invalid", "rules must be an array of objects")
            }
        }
        let newest = try await store.activeSDKConfig(projectID: projectID)?.version ?? 0
        let version: Int64
        if restoredFrom == nil, let requested = members["version"] {
            guard let number = requested.intValue, number > 0 else {
                throw CollectorError.badRequest("sdk_config.invalid", "version must be a positive integer")
            }
            guard number > newest else {
                throw CollectorError.conflict("sdk_config.version_conflict", "version \(number) is not above the newest version \(newest)")
            }
            version = number
        } else {
            version = newest + 1
        }
        members["version"] = .int(version)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        members["issued_at"] = .string(formatter.string(from: now))
        let bytes = JSONValue.object(members).jsonData()
        guard bytes.count <= Self.maxDocumentBytes else {
            throw CollectorError.tooLarge("sdk_config.too_large", "the document is larger than \(Self.maxDocumentBytes) bytes")
        }
        var signature: String?
        if let raw = try await store.configSigningKey(projectID: projectID) {
            signature = try CryptoSupport.ed25519Sign(bytes, privateKey: raw).base64EncodedString()
        }
        let config = SDKConfigVersion(projectID: projectID, version: version, document: bytes, signature: signature,
                                      createdAt: now, restoredFrom: restoredFrom)
        try await store.insertSDKConfig(config)
        return config
    }

    /// Re-issues version `version`'s content as the newest version.
    /// - Throws: `sdk_config.unknown_version` (404).
    func rollback(projectID: Int64, to version: Int64, now: Date = Date()) async throws -> SDKConfigVersion {
        guard let old = try await store.sdkConfig(projectID: projectID, version: version),
              let document = try? JSONValue.parse(old.document)
        else { throw CollectorError.notFound("sdk_config.unknown_version", "project \(projectID) has no configuration version \(version)") }
        return try await publish(projectID: projectID, document: document, restoredFrom: version, now: now)
    }

    /// The entity tag of a served version: changes whenever the served bytes change.
    static func etag(_ config: SDKConfigVersion) -> String {
        let digest = CryptoSupport.sha256Hex(config.document).prefix(16)
        return "\"v\(config.version)-\(digest)\""
    }

    /// Whether an `If-None-Match` header value names `etag` (a list, weak tags, or `*`).
    static func matches(ifNoneMatch: String, etag: String) -> Bool {
        for candidate in ifNoneMatch.split(separator: ",") {
            var tag = candidate.trimmingCharacters(in: .whitespaces)
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            if tag == etag { return true }
        }
        return false
    }

    /// The response body: `{"payload": base64(document), "signature": base64?}`.
    static func body(_ config: SDKConfigVersion) -> Data {
        var members: [String: JSONValue] = ["payload": .string(config.document.base64EncodedString())]
        if let signature = config.signature { members["signature"] = .string(signature) }
        return JSONValue.object(members).jsonData()
    }
}
