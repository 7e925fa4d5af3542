import COpenSSL
import Foundation

/// SHA-256 and Ed25519 through the system's OpenSSL libcrypto.
public enum CryptoSupport {
    /// SHA-256 of `data`, as 64 lowercase hex digits.
    public static func sha256Hex(_ data: Data) -> String { hex(sha256(data)) }

    /// Lowercase hexadecimal digits of `bytes`.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var output = [UInt8]()
        output.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// SHA-256 of `data` (32 bytes).
    public static func sha256(_ data: Data) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        data.withUnsafeBytes { buffer in
            _ = SHA256(buffer.bindMemory(to: UInt8.self).baseAddress, buffer.count, &digest)
        }
        return digest
    }

    /// `count` bytes from OpenSSL's CSPRNG.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        if RAND_bytes(&bytes, Int32(count)) != 1 {
            // OpenSSL's generator failed to seed (should not happen on Linux); fall back to the system's.
            var generator = SystemRandomNumberGenerator()
            for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
        }
        return bytes
    }

    /// Why a signing operation failed. `code` is stable.
    public struct Failure: Error, Sendable, Hashable {
        public let code: String
    }

    /// A new Ed25519 private key (its 32-byte seed).
    public static func newEd25519PrivateKey() -> Data { Data(randomBytes(32)) }

    /// The Ed25519 public key (32 bytes) of a private key seed.
    public static func ed25519PublicKey(privateKey: Data) throws(Failure) -> Data {
        let key = try makeKey(privateKey, isPrivate: true)
        defer { EVP_PKEY_free(key) }
        var length = 32
        var bytes = [UInt8](repeating: 0, count: 32)
        guard EVP_PKEY_get_raw_public_key(key, &bytes, &length) == 1, length == 32 else { throw Failure(code: "crypto.public_key") }
        return Data(bytes)
    }

    /// The Ed25519 signature (64 bytes) of `message` by `privateKey` (a 32-byte seed).
    public static func ed25519Sign(_ message: Data, privateKey: Data) throws(Failure) -> Data {
        let key = try makeKey(privateKey, isPrivate: true)
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { throw Failure(code: "crypto.context") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, nil, nil, key) == 1 else { throw Failure(code: "crypto.sign_init") }
        var signature = [UInt8](repeating: 0, count: 64)
        var length = 64
        let status = message.withUnsafeBytes { buffer in
            EVP_DigestSign(context, &signature, &length, buffer.bindMemory(to: UInt8.self).baseAddress, buffer.count)
        }
        guard status == 1, length == 64 else { throw Failure(code: "crypto.sign") }
        return Data(signature)
    }

    /// Whether `signature` is `publicKey`'s Ed25519 signature of `message`.
    public static func ed25519Verify(_ signature: Data, message: Data, publicKey: Data) -> Bool {
        guard let key = try? makeKey(publicKey, isPrivate: false) else { return false }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1 else { return false }
        let status = signature.withUnsafeBytes { signatureBuffer in
            message.withUnsafeBytes { messageBuffer in
                EVP_DigestVerify(context, signatureBuffer.bindMemory(to: UInt8.self).baseAddress, signatureBuffer.count,
                                 messageBuffer.bindMemory(to: UInt8.self).baseAddress, messageBuffer.count)
            }
        }
        return status == 1
    }

    private static func makeKey(_ raw: Data, isPrivate: Bool) throws(Failure) -> OpaquePointer {
        guard raw.count == 32 else { throw Failure(code: "crypto.key_length") }
        let bytes = [UInt8](raw)
        let key = isPrivate
            ? EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, bytes, 32)
            : EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, bytes, 32)
        guard let key else { throw Failure(code: "crypto.key") }
        return key
    }
}
