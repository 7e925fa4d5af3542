import CrashShieldProtocol
import Foundation

/// A document the SDK's own parser (`CrashShieldProtocol.RemoteConfigDocument`) refuses: the
/// collector does not publish it, so an app is never served a document it would reject.
/// Answered with HTTP 422 and `{"code": "sdk_config.rejected", "detail", "path", "sdk_code"}`.
public struct SDKConfigRejection: Error, Sendable, Hashable, CustomStringConvertible {
    /// The collector's code for every rejection, stable across versions.
    public static let code = "sdk_config.rejected"
    /// The HTTP status of a rejection.
    public static let status = 422
    /// The SDK parser's stable code: "remote_config.invalid_value", "remote_config.invalid_constraint",
    /// "remote_config.invalid_json" (not an object) or "remote_config.missing_field".
    public let sdkCode: String
    /// The offending value as a JSON path into the document ("$.rules[0].guards.timer"; "$" for
    /// the whole document).
    public let path: String
    /// What the parser expected there ("expected \"neutralize\", \"reportOnly\" or \"off\"").
    public let reason: String

    public init(_ error: RemoteConfigError) {
        sdkCode = error.code
        path = error.path
        reason = error.message
    }

    /// One line for people: the path, then what was expected.
    public var message: String { "\(path): \(reason)" }
    public var description: String { "\(Self.code) (\(sdkCode)) at \(message)" }
}

/// Versions, validates, signs and serves a project's SDK configuration document (the remote
/// switches).
///
/// Publishing sets `version` (one above the newest stored, or the one the document names when it
/// is higher) and `issued_at`, writes the document as compact JSON with sorted keys, and parses
/// those exact bytes with the SDK's own parser (`RemoteConfigDocument.parse`); a document it
/// refuses is not stored (`SDKConfigRejection`). What the SDK ignores is kept and published:
/// unknown fields and unknown guard names (a newer SDK may know them), reported as warnings by
/// `warnings(of:)`. The bytes are signed with the project's Ed25519 key, so the SDK verifies the
/// payload bytes and needs no canonical JSON. A rollback re-issues an older version's content
/// under a new, higher version number (the SDK refuses a version lower than the one it has).
/// Every version records who published it (`SDKConfigPublisher`; for a rollback, who rolled back).
struct SDKConfigService: Sendable {
    let store: any CollectorStore
    /// `Cache-Control: max-age` of the served document, in seconds.
    let maxAge: Int
    /// The largest document the collector publishes, in bytes of its compact JSON.
    static let maxDocumentBytes = 64 * 1024

    /// Validates `document` with the SDK's parser and stores it as the project's next version.
    /// `version` in the document is honoured when it is above the newest stored version;
    /// `issued_at` is always replaced by `now`; `publishedBy` and `reason` (why, when not an edit:
    /// a protection) are stored with the version.
    /// - Throws: `SDKConfigRejection` (422) when the SDK would refuse the document (also when it
    ///   is not a JSON object or names a version that is not an integer ≥ 0),
    ///   `sdk_config.too_large` (413), `sdk_config.version_conflict` (409) when the document names
    ///   a version not above the newest.
    func publish(projectID: Int64, document: JSONValue, publishedBy: SDKConfigPublisher, restoredFrom: Int64? = nil,
                 reason: String? = nil, now: Date = Date()) async throws -> SDKConfigVersion {
        guard case .object(var members) = document else {
            throw SDKConfigRejection(RemoteConfigError(code: RemoteConfigError.invalidJSONCode, path: "$",
                                                       message: "the document is not a JSON object"))
        }
        let newest = try await store.activeSDKConfig(projectID: projectID)?.version ?? 0
        let version: Int64
        if restoredFrom == nil, let requested = members["version"] {
            guard let number = requested.intValue, number >= 0 else {
                throw SDKConfigRejection(RemoteConfigError(code: RemoteConfigError.invalidValueCode, path: "$.version",
                                                           message: "expected an integer ≥ 0"))
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
        // The served bytes, read exactly as the SDK reads a fetched payload.
        do {
            _ = try RemoteConfigDocument.parse(bytes)
        } catch {
            throw SDKConfigRejection(error)
        }
        var signature: String?
        if let raw = try await store.configSigningKey(projectID: projectID) {
            signature = try CryptoSupport.ed25519Sign(bytes, privateKey: raw).base64EncodedString()
        }
        let config = SDKConfigVersion(projectID: projectID, version: version, document: bytes, signature: signature,
                                      createdAt: now, restoredFrom: restoredFrom, publishedBy: publishedBy, reason: reason)
        try await store.insertSDKConfig(config)
        return config
    }

    /// Re-issues version `version`'s content as the newest version (validated like `publish`),
    /// recording `by` as its publisher.
    /// - Throws: `sdk_config.unknown_version` (404); `SDKConfigRejection` when the old content is
    ///   one the SDK refuses (a version stored before the collector validated documents).
    func rollback(projectID: Int64, to version: Int64, by publisher: SDKConfigPublisher, now: Date = Date()) async throws -> SDKConfigVersion {
        guard let old = try await store.sdkConfig(projectID: projectID, version: version),
              let document = try? JSONValue.parse(old.document)
        else { throw CollectorError.notFound("sdk_config.unknown_version", "project \(projectID) has no configuration version \(version)") }
        return try await publish(projectID: projectID, document: document, publishedBy: publisher, restoredFrom: version, now: now)
    }

    /// What the SDK's parser ignores in a stored version: unknown fields
    /// ("remote_config.unknown_field") and unknown guard names ("remote_config.unknown_guard"),
    /// by path. Empty for a version the parser refuses (none is published since validation).
    static func warnings(of config: SDKConfigVersion) -> [RemoteConfigWarning] {
        (try? RemoteConfigDocument.parse(config.document).warnings) ?? []
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
