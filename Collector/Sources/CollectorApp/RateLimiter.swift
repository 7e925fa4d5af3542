import Foundation
import Synchronization

/// A token bucket per project: `burst` requests at once, refilled at `perSecond`. A request that
/// finds the bucket empty is refused with the seconds until a token is back.
final class RateLimiter: Sendable {
    private struct Bucket { var tokens: Double; var updated: Double }
    private let buckets = Mutex<[Int64: Bucket]>([:])
    let perSecond: Double
    let burst: Double

    init(perSecond: Double, burst: Int) {
        self.perSecond = max(perSecond, 0.001)
        self.burst = Double(max(burst, 1))
    }

    /// Takes one token for `project`; returns nil when allowed, or the whole seconds to wait (≥ 1).
    func acquire(project: Int64, now: Double = Date().timeIntervalSince1970) -> Int? {
        buckets.withLock { buckets in
            var bucket = buckets[project] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + max(0, now - bucket.updated) * perSecond)
            bucket.updated = now
            defer { buckets[project] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return max(1, Int(((1 - bucket.tokens) / perSecond).rounded(.up)))
        }
    }
}
