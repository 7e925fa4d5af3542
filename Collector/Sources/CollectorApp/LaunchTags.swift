import CrashShieldProtocol
import Foundation

/// One of an event's launch tags: a tag whose key starts with `launch` or `repair`
/// (CrashShield's SDK sets `launch.phase`, `launch.consecutive_crashes`, `launch.repair_step`).
/// Read at ingest (`EventFacts.launchTags`) and stored in `event_launch_tags` (migration 13), so
/// the launch-crash page reads these rows instead of parsing events.
public struct LaunchTag: Equatable, Sendable {
    public var key: String
    public var value: String

    public init(key: String, value: String) {
        self.key = key
        self.value = value
    }

    static func isLaunchKey(_ key: String) -> Bool { key.hasPrefix("launch") || key.hasPrefix("repair") }

    /// The launch tags of an event's `tags` member, in the order the dashboard lists tags
    /// (`EventView.tags`: an object's members with a scalar value, by key; a list's
    /// `[key, value]` pairs as written).
    static func of(tags: JSONValue?) -> [LaunchTag] {
        guard let tags else { return [] }
        return EventView.tags(["tags": tags]).compactMap { key, value in isLaunchKey(key) ? LaunchTag(key: key, value: value) : nil }
    }
}

/// What the launch-crash page shows, from the launch tags of a project's newest events.
public struct LaunchSummary: Equatable, Sendable {
    /// How many events were looked at (the newest, at most `LaunchSummary.window`).
    public var eventsRead = 0
    /// Launch crashes (`launch.phase` = `launching`, or `launch`) per release, with the longest
    /// loop (`launch.consecutive_crashes`, 1 when absent).
    public var crashesByRelease: [String: Count] = [:]
    /// Loops ended per repair step (`launch.repair_step`), with the releases they ended in.
    public var repairs: [String: Repair] = [:]
    /// Each launch tag key and how many times it was seen.
    public var tagKeys: [String: Int] = [:]

    public struct Count: Equatable, Sendable {
        public var count = 0
        public var maxConsecutive = 0
    }

    public struct Repair: Equatable, Sendable {
        public var count = 0
        public var releases: Set<String> = []
    }

    /// The page reads the newest this many events of a project.
    public static let window = 5_000

    /// Counts one event (`release`: its release, nil when it has none) with its launch tags.
    public mutating func add(release: String?, tags: [LaunchTag]) {
        for tag in tags { tagKeys[tag.key, default: 0] += 1 }
        var values: [String: String] = [:]
        for tag in tags where values[tag.key] == nil { values[tag.key] = tag.value }
        let release = release ?? "(no release)"
        if values["launch.phase"] == "launching" || values["launch.phase"] == "launch" {
            let consecutive = values["launch.consecutive_crashes"].flatMap(Int.init) ?? 1
            var entry = crashesByRelease[release] ?? Count()
            entry.count += 1
            entry.maxConsecutive = max(entry.maxConsecutive, consecutive)
            crashesByRelease[release] = entry
        }
        if let step = values["launch.repair_step"] {
            var entry = repairs[step] ?? Repair()
            entry.count += 1
            entry.releases.insert(release)
            repairs[step] = entry
        }
    }
}
