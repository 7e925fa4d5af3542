import CrashShieldBase
import CrashShieldRecording
import Foundation
import CrashShieldProtocol

/// Sentry's data categories, as rate limits and client reports name them.
package enum DataCategory {
    /// The category of an envelope item type: `event` → `error`, `session`/`sessions` →
    /// `session`, `client_report` → `internal`, `attachment` → `attachment`, `transaction` →
    /// `transaction`; any other type → `default`.
    package static func of(itemType: String) -> String {
        switch itemType {
        case "event": return "error"
        case "session", "sessions": return "session"
        case "client_report": return "internal"
        case "attachment": return "attachment"
        case "transaction": return "transaction"
        default: return "default"
        }
    }
}

/// The server's rate limits: until when each data category (or every category) must not be sent.
///
/// Deadlines are wall-clock times so they can be stored and honoured after a relaunch
/// (`RateLimitStore`). A limit for every category is kept under the key `""`.
package struct RateLimits: Sendable, Hashable, Codable {
    /// Category → the time before which it is limited. `""` limits every category.
    package private(set) var deadlines: [String: Date]

    /// Limits with these deadlines (none by default).
    package init(deadlines: [String: Date] = [:]) { self.deadlines = deadlines }

    /// How long a 429 without `Retry-After` or `X-Sentry-Rate-Limits` limits everything: 60 s.
    package static let defaultRetryAfter: TimeInterval = 60

    /// The time before which `category` must not be sent, or nil when it is not limited at `now`.
    package func limitedUntil(_ category: String, now: Date = Date()) -> Date? {
        let candidates = [deadlines[category], deadlines[""]].compactMap { $0 }.filter { $0 > now }
        return candidates.max()
    }

    /// Whether `category` must not be sent at `now`.
    package func isLimited(_ category: String, now: Date = Date()) -> Bool { limitedUntil(category, now: now) != nil }

    /// Takes in a response's limits. `X-Sentry-Rate-Limits` (any status) wins over `Retry-After`;
    /// a 429 with neither limits every category for `defaultRetryAfter`. A deadline only ever
    /// moves later; expired ones are forgotten.
    /// - Parameters:
    ///   - retryAfter: the `Retry-After` value: seconds, or an HTTP date.
    ///   - sentryRateLimits: the `X-Sentry-Rate-Limits` value:
    ///     `retry_after:categories:scope[:reason_code[:namespaces]]` groups separated by commas,
    ///     categories separated by semicolons, no categories meaning every category.
    package mutating func update(status: Int, retryAfter: String?, sentryRateLimits: String?, now: Date = Date()) {
        deadlines = deadlines.filter { $0.value > now }
        if let header = sentryRateLimits?.trimmingCharacters(in: .whitespaces), !header.isEmpty {
            for group in header.split(separator: ",") {
                let fields = group.trimmingCharacters(in: .whitespaces).split(separator: ":", omittingEmptySubsequences: false)
                guard let seconds = fields.first.flatMap({ Double($0.trimmingCharacters(in: .whitespaces)) }),
                      seconds.isFinite, seconds >= 0 else { continue }
                let categories = fields.count > 1
                    ? fields[1].split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                    : []
                for category in categories.isEmpty ? [""] : categories {
                    extend(category, to: now.addingTimeInterval(seconds))
                }
            }
            return
        }
        guard status == 429 else { return }
        let seconds = retryAfter.flatMap { Self.retryAfterSeconds($0, now: now) } ?? Self.defaultRetryAfter
        extend("", to: now.addingTimeInterval(seconds))
    }

    private mutating func extend(_ category: String, to deadline: Date) {
        if let existing = deadlines[category], existing >= deadline { return }
        deadlines[category] = deadline
    }

    /// `Retry-After` as seconds from `now`: a non-negative number of seconds, or an HTTP date
    /// (`Wed, 21 Oct 2026 07:28:00 GMT`; a date in the past gives 0). Nil when it is neither.
    package static func retryAfterSeconds(_ value: String, now: Date = Date()) -> TimeInterval? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(trimmed) { return seconds.isFinite && seconds >= 0 ? seconds : nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: trimmed) { return max(0, date.timeIntervalSince(now)) }
        }
        return nil
    }
}

/// `RateLimits` kept in a file (`ratelimits.json` in the outbox directory), so limits are
/// remembered across launches. Written atomically; an unreadable file counts as no limits.
struct RateLimitStore {
    let path: String

    func load() -> RateLimits {
        guard let data = FileManager.default.contents(atPath: path),
              case .object(let members)? = try? JSONValue.parse(data) else { return RateLimits() }
        var deadlines: [String: Date] = [:]
        for (category, value) in members {
            if let seconds = value.doubleValue, seconds.isFinite { deadlines[category] = Date(timeIntervalSince1970: seconds) }
        }
        return RateLimits(deadlines: deadlines)
    }

    func save(_ limits: RateLimits, now: Date = Date()) {
        let live = limits.deadlines.filter { $0.value > now }
        if live.isEmpty && !FileManager.default.fileExists(atPath: path) { return }
        let object = JSONValue.object(live.mapValues { .double($0.timeIntervalSince1970) })
        try? DurableFile.write(object.jsonData(), to: path)
    }
}
