import CrashShieldBase
import CrashShieldProtocol
import Crypto
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry

/// A document of `version` whose one rule switches `guardName` to `policy` for every app.
func remoteDocument(_ version: Int64, guardName: String = "timer", policy: RemoteGuardPolicy = .off) -> RemoteConfigDocument {
    RemoteConfigDocument(version: version, issuedAt: "2026-11-23T06:00:00Z",
                         rules: [RemoteConfigRule(guards: [guardName: policy], incidentSampleRate: 1 / Double(version + 1))])
}

/// The served body of `document`, signed with `key` (unsigned without one).
func servedBody(_ document: RemoteConfigDocument, signedWith key: Curve25519.Signing.PrivateKey?) throws -> Data {
    let payload = document.jsonData()
    let envelope = try key.map { try SignedRemoteConfig(signing: payload, with: $0) } ?? SignedRemoteConfig(payload: payload, signature: nil)
    return envelope.jsonData()
}

/// Stores `document` in `directory` as a fetch would (no network).
func storeDocument(_ document: RemoteConfigDocument, in directory: String, signedWith key: Curve25519.Signing.PrivateKey? = nil,
                   etag: String? = nil) throws {
    let payload = document.jsonData()
    let envelope = try key.map { try SignedRemoteConfig(signing: payload, with: $0) } ?? SignedRemoteConfig(payload: payload, signature: nil)
    try RemoteConfigStore(directory: directory).store(envelope, document: document, etag: etag)
}

@Suite struct RemoteConfigStoreTests {
    @Test func aLowerVersionIsRejectedAndTheStoredOneKept() throws {
        let directory = temporaryDirectory("rc-store-lower")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = RemoteConfigStore(directory: directory)
        try storeDocument(remoteDocument(5), in: directory, etag: "\"five\"")
        let error = try #require(throws: RemoteConfigError.self) { try storeDocument(remoteDocument(4), in: directory) }
        #expect(error.code == RemoteConfigStore.olderVersionCode)
        let kept = try #require(store.loadDocument())
        #expect(kept.version == 5)
        #expect(kept.etag == "\"five\"")
        #expect(try RemoteConfigDocument.parse(kept.envelope.payload).document == remoteDocument(5))
        // The same version again (a re-served document) and a higher one are stored.
        try storeDocument(remoteDocument(5, policy: .reportOnly), in: directory)
        try storeDocument(remoteDocument(6), in: directory)
        #expect(store.loadDocument()?.version == 6)
    }

    /// Writes go through a temporary file and a rename: concurrent readers see one whole
    /// document or the other, never a mix or an empty file, and no temporary file is left.
    /// The writer keeps writing until the readers have read many times and seen the document
    /// change (bounded by a write count, so a starved reader fails the test instead of hanging it).
    @Test func writesAreAtomic() throws {
        let directory = temporaryDirectory("rc-store-atomic")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = RemoteConfigStore(directory: directory)
        try storeDocument(remoteDocument(1), in: directory)
        let stop = Locked(false)
        let torn = Locked(0), reads = Locked(0), seen = Locked(Set<Int64>())
        let started = DispatchSemaphore(value: 0)
        let readers = DispatchGroup()
        for _ in 0..<2 {
            Thread.detachNewThread {
                readers.enter()
                defer { readers.leave() }
                var first = true
                while !stop.withLock({ $0 }) {
                    if let stored = store.loadDocument(),
                       let parsed = try? RemoteConfigDocument.parse(stored.envelope.payload),
                       parsed.document == remoteDocument(stored.version) {
                        _ = seen.withLock { $0.insert(stored.version) }
                        reads.withLock { $0 += 1 }
                    } else {
                        torn.withLock { $0 += 1 }
                    }
                    if first { started.signal(); first = false }
                }
            }
        }
        #expect(started.wait(timeout: .now() + 60) == .success)
        #expect(started.wait(timeout: .now() + 60) == .success)
        var version: Int64 = 1
        while version < 5000 && (reads.withLock({ $0 }) < 200 || seen.withLock({ $0 }).count < 3) {
            version += 1
            try storeDocument(remoteDocument(version), in: directory)
        }
        stop.withLock { $0 = true }
        readers.wait()
        #expect(torn.withLock { $0 } == 0)
        #expect(reads.withLock { $0 } >= 200, "reads while writing: \(reads.withLock { $0 })")
        #expect(seen.withLock { $0 }.count >= 3, "versions seen: \(seen.withLock { $0 }.count)")
        #expect(store.loadDocument()?.version == version)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test func aCorruptStoredFileIsNoDocument() throws {
        let directory = temporaryDirectory("rc-store-corrupt")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = RemoteConfigStore(directory: directory)
        try Data("{\"version\": 3, \"payl".utf8).write(to: URL(fileURLWithPath: store.documentPath))
        #expect(store.loadDocument() == nil)
        let options = RemoteConfigOptions(dsn: try DSN("http://key@127.0.0.1:9/1"), directory: directory)
        #expect(RemoteConfiguration.load(options).version == nil)
        try Data("not json".utf8).write(to: URL(fileURLWithPath: store.statePath))
        #expect(store.loadState() == RemoteConfigStore.State())
    }

    /// Launch protection's reset step deletes the stored document (the app's settings apply from
    /// the next start) and its version is not stored again.
    @Test func resetRemoteConfigurationDiscardsTheStoredDocument() async throws {
        let directory = temporaryDirectory("rc-store-reset")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try storeDocument(remoteDocument(9), in: directory, etag: "\"nine\"")
        let options = RemoteConfigOptions(dsn: try DSN("http://key@127.0.0.1:9/1"), directory: directory)
        #expect(RemoteConfiguration.load(options).version == 9)

        let step = RepairStep.resetRemoteConfiguration()
        #expect(step.id == "reset-remote-config")
        try await step.body(RepairContext(directory: directory, consecutiveLaunchCrashes: 3, lastReport: nil))

        #expect(!FileManager.default.fileExists(atPath: RemoteConfigStore(directory: directory).documentPath))
        let next = RemoteConfiguration.load(options)
        #expect(next.version == nil)
        #expect(next.overrides == nil)
        // The discarded document comes back from the server: refused, so the crash loop it
        // caused does not return.
        let outcome = RemoteConfigFetcher(options: options)
            .handle(status: 200, body: try servedBody(remoteDocument(9), signedWith: nil), etag: nil, cacheControl: nil, now: Date())
        guard case .rejected(let error) = outcome else { Issue.record("\(outcome)"); return }
        #expect(error.code == RemoteConfigStore.discardedVersionCode)
        #expect(RemoteConfigStore(directory: directory).loadState().lastRejection?.code == RemoteConfigStore.discardedVersionCode)
        // A newer one is stored.
        #expect(RemoteConfigFetcher(options: options)
            .handle(status: 200, body: try servedBody(remoteDocument(10), signedWith: nil), etag: nil, cacheControl: nil, now: Date())
            == .stored(version: 10))
    }

    /// With a key configured, a stored document that does not verify is not activated at start.
    @Test func aStoredDocumentIsVerifiedAtStart() throws {
        let directory = temporaryDirectory("rc-store-verify")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = Curve25519.Signing.PrivateKey()
        try storeDocument(remoteDocument(2), in: directory)
        var options = RemoteConfigOptions(dsn: try DSN("http://key@127.0.0.1:9/1"), directory: directory)
        #expect(RemoteConfiguration.load(options).version == 2, "no key: unsigned is fine")
        options.publicKey = RemoteConfigPublicKey(key.publicKey)
        let refused = RemoteConfiguration.load(options)
        #expect(refused.version == nil)
        #expect(refused.rejection?.code == RemoteConfigError.missingSignatureCode)
        try storeDocument(remoteDocument(3), in: directory, signedWith: key)
        let active = RemoteConfiguration.load(options)
        #expect(active.version == 3)
        #expect(active.overrides?.guards == ["timer": .off])
    }

    @Test(arguments: [("max-age=120", 120), ("public, max-age=0", 0), ("no-cache, MAX-AGE = 60", 60), ("s-maxage=5", nil),
                      ("max-age=-1", nil), ("max-age=abc", nil), ("", nil)] as [(String, Int?)])
    func maxAgeIsReadFromCacheControl(header: String, seconds: Int?) {
        #expect(RemoteConfigFetcher.maxAge(header) == seconds)
    }
}
