import Crypto
import Foundation

/// The body served for a remote configuration document:
/// `{"payload": "<base64 of the document's JSON>", "signature": "<base64 Ed25519 signature of the payload bytes>"}`.
///
/// The signature covers the payload's bytes exactly as served, so no canonical JSON is needed.
/// It is optional unless the app configured a public key. Other members of the envelope are
/// ignored.
public struct SignedRemoteConfig: Sendable, Hashable {
    /// The document's JSON text.
    public let payload: Data
    /// The 64-byte Ed25519 signature of `payload`; nil for an unsigned document.
    public let signature: Data?

    public init(payload: Data, signature: Data?) {
        self.payload = payload
        self.signature = signature
    }

    /// Signs `payload` with `privateKey` (the collector's side).
    public init(signing payload: Data, with privateKey: Curve25519.Signing.PrivateKey) throws {
        self.payload = payload
        self.signature = try privateKey.signature(for: payload)
    }

    /// Decodes a served body.
    /// - Throws: `RemoteConfigError` with code "remote_config.invalid_envelope" when the body is
    ///   not a JSON object, `payload` is missing or not base64, or `signature` is present but not
    ///   a base64 string.
    public static func decode(_ body: Data) throws(RemoteConfigError) -> SignedRemoteConfig {
        func invalid(_ path: String, _ message: String) -> RemoteConfigError {
            RemoteConfigError(code: RemoteConfigError.invalidEnvelopeCode, path: path, message: message)
        }
        guard let root = try? StrictJSON.parse(body, rules: .strict), let members = root.objectValue else {
            throw invalid("$", "expected {\"payload\": base64, \"signature\": base64}")
        }
        guard let payloadText = members["payload"]?.stringValue, let payload = Data(base64Encoded: payloadText) else {
            throw invalid("$.payload", "expected a base64 string")
        }
        var signature: Data?
        if let value = members["signature"], value != .null {
            guard let text = value.stringValue, let bytes = Data(base64Encoded: text) else {
                throw invalid("$.signature", "expected a base64 string")
            }
            signature = bytes
        }
        return SignedRemoteConfig(payload: payload, signature: signature)
    }

    /// The body to serve: `{"payload": …, "signature": …}` (signature left out when nil).
    public func jsonData() -> Data {
        var members: [String: JSONValue] = ["payload": .string(payload.base64EncodedString())]
        if let signature { members["signature"] = .string(signature.base64EncodedString()) }
        return JSONValue.object(members).jsonData()
    }

    /// The payload, after checking the signature against `publicKey`. Without a key every
    /// payload is returned (a signature present is then not checked).
    /// - Throws: `RemoteConfigError` "remote_config.missing_signature" (key given, no signature)
    ///   or "remote_config.bad_signature" (the signature does not verify).
    public func verifiedPayload(publicKey: RemoteConfigPublicKey?) throws(RemoteConfigError) -> Data {
        guard let publicKey else { return payload }
        guard let signature else {
            throw RemoteConfigError(code: RemoteConfigError.missingSignatureCode, path: "$.signature",
                                    message: "a public key is configured and the document is not signed")
        }
        guard publicKey.key.isValidSignature(signature, for: payload) else {
            throw RemoteConfigError(code: RemoteConfigError.badSignatureCode, path: "$.signature",
                                    message: "the signature does not verify with the configured public key")
        }
        return payload
    }

    /// Verifies (when `publicKey` is given) and parses the document.
    /// - Throws: `RemoteConfigError` from `verifiedPayload(publicKey:)` or `RemoteConfigDocument.parse`.
    public func document(publicKey: RemoteConfigPublicKey?) throws(RemoteConfigError) -> RemoteConfigParseResult {
        try RemoteConfigDocument.parse(verifiedPayload(publicKey: publicKey))
    }
}

/// The Ed25519 public key an app trusts for remote configuration documents.
public struct RemoteConfigPublicKey: Sendable {
    let key: Curve25519.Signing.PublicKey

    /// From the raw 32-byte key.
    /// - Throws: `RemoteConfigError` "remote_config.invalid_key" for any other length.
    public init(rawRepresentation: Data) throws(RemoteConfigError) {
        do {
            key = try Curve25519.Signing.PublicKey(rawRepresentation: rawRepresentation)
        } catch {
            throw RemoteConfigError(code: RemoteConfigError.invalidKeyCode, path: "$",
                                    message: "an Ed25519 public key is 32 raw bytes")
        }
    }

    /// From the base64 text of the raw 32-byte key (what the collector shows).
    /// - Throws: `RemoteConfigError` "remote_config.invalid_key".
    public init(base64: String) throws(RemoteConfigError) {
        guard let bytes = Data(base64Encoded: base64.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw RemoteConfigError(code: RemoteConfigError.invalidKeyCode, path: "$", message: "the key is not base64")
        }
        try self.init(rawRepresentation: bytes)
    }

    public init(_ key: Curve25519.Signing.PublicKey) { self.key = key }

    /// The raw 32 bytes, base64.
    public var base64: String { key.rawRepresentation.base64EncodedString() }
}
