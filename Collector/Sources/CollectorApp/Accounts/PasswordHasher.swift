import COpenSSL
import Foundation
import NIOCore
import NIOPosix

/// Password hashing with PBKDF2-HMAC-SHA256 (OpenSSL's `PKCS5_PBKDF2_HMAC`), a random 16-byte
/// salt per password and a 32-byte derived key.
///
/// Stored form: `pbkdf2-sha256$<iterations>$<salt base64>$<derived key base64>`, so the iteration
/// count can rise later without invalidating stored hashes.
public enum PasswordHasher {
    /// Iterations for new hashes. Default 210,000 (OWASP's 2023 figure for PBKDF2-HMAC-SHA256).
    public static let defaultIterations = 210_000
    /// Stored hashes with fewer iterations than this are refused outright.
    static let minimumIterations = 10_000
    static let maximumIterations = 10_000_000
    static let scheme = "pbkdf2-sha256"

    /// A new stored hash of `password` with a fresh random salt.
    public static func hash(_ password: String, iterations: Int = defaultIterations) -> String {
        let salt = CryptoSupport.randomBytes(16)
        let key = derive(password, salt: salt, iterations: iterations)
        return "\(scheme)$\(iterations)$\(Data(salt).base64EncodedString())$\(Data(key).base64EncodedString())"
    }

    /// A well-formed stored hash with `iterations` and a random salt and key: verifying any
    /// password against it costs as much as against a real hash and fails (barring a 2^-256
    /// chance). No KDF runs to build it.
    static func decoy(iterations: Int = defaultIterations) -> String {
        let salt = CryptoSupport.randomBytes(16)
        let key = CryptoSupport.randomBytes(32)
        return "\(scheme)$\(iterations)$\(Data(salt).base64EncodedString())$\(Data(key).base64EncodedString())"
    }

    /// Whether `password` matches `stored` (a value from `hash`). A malformed stored value never
    /// matches. The derived keys are compared in constant time.
    public static func verify(_ password: String, against stored: String) -> Bool {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == scheme, let iterations = Int(parts[1]),
              (minimumIterations...maximumIterations).contains(iterations),
              let salt = Data(base64Encoded: String(parts[2])), let expected = Data(base64Encoded: String(parts[3])),
              !salt.isEmpty, expected.count == 32
        else { return false }
        let derived = derive(password, salt: [UInt8](salt), iterations: iterations)
        return constantTimeEqual(derived, [UInt8](expected))
    }

    /// Whether two byte strings are equal, taking the same time whatever their content (the
    /// length is not secret).
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    /// Whether two strings are equal as UTF-8, in constant time for equal lengths.
    public static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        constantTimeEqual(Array(a.utf8), Array(b.utf8))
    }

    // MARK: Off the shared threads

    /// Threads that run the KDF for `hashOnKDFThreads` and `verifyOnKDFThreads`: half the
    /// machine's cores, at least one (one on a 2-core machine), started on first use and kept
    /// for the life of the process. One hash takes 210,000 HMAC-SHA256 rounds of CPU (measured
    /// at 150 ms to 1 s on a 2-core machine busy with other builds); run on Swift's
    /// cooperative pool (one thread per core) or an event loop, each would stop every other
    /// task on that thread, ingest included, for that long. Here logins wait for each other
    /// instead, and at least half the cores stay free for everything else.
    static let kdfThreads: NIOThreadPool = {
        let threads = NIOThreadPool(numberOfThreads: kdfThreadCount)
        threads.start()
        return threads
    }()
    static let kdfThreadCount = max(1, System.coreCount / 2)

    /// `hash(_:iterations:)` on the KDF threads: the calling task waits without holding a thread.
    public static func hashOnKDFThreads(_ password: String, iterations: Int = defaultIterations) async -> String {
        await onKDFThreads { hash(password, iterations: iterations) }
    }

    /// `verify(_:against:)` on the KDF threads: the calling task waits without holding a thread.
    public static func verifyOnKDFThreads(_ password: String, against stored: String) async -> Bool {
        await onKDFThreads { verify(password, against: stored) }
    }

    /// Runs `body` on `kdfThreads`, even when the calling task is cancelled (the result is small
    /// and the work already queued). The threads are never shut down; should they be, `body`
    /// runs on the calling thread instead.
    private static func onKDFThreads<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            kdfThreads.submit { _ in continuation.resume(returning: body()) }
        }
    }

    static func derive(_ password: String, salt: [UInt8], iterations: Int) -> [UInt8] {
        var key = [UInt8](repeating: 0, count: 32)
        let passwordBytes = Array(password.utf8)
        let status = passwordBytes.withUnsafeBufferPointer { passwordBuffer in
            passwordBuffer.withMemoryRebound(to: CChar.self) { chars in
                PKCS5_PBKDF2_HMAC(chars.baseAddress, Int32(chars.count), salt, Int32(salt.count), Int32(iterations),
                                  EVP_sha256(), Int32(key.count), &key)
            }
        }
        // OpenSSL fails only when it cannot allocate; a random key then matches no stored key.
        if status != 1 { key = CryptoSupport.randomBytes(32) }
        return key
    }
}
