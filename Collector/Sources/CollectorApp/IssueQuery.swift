import Foundation

/// Which issues of a project to list, in which order, and which page of them: the issue list of
/// the dashboard (`/projects/<id>`) and of the API (`GET /api/0/projects/<id>/issues`).
///
/// Query parameters (all optional): `query` (text in the title or culprit, case-insensitive),
/// `release`, `environment` (an event of the issue carried it), `level`, `guard` (a prevented
/// crash of the issue named this guard), `status` (one status, `open` for unresolved and
/// regressed, or `all`), `sort` (`last_seen`, `first_seen`, `events` or `users`; newest or
/// largest first), `limit` (issues per page) and `cursor` (a page's `next` or `previous`).
public struct IssueQuery: Sendable, Hashable {
    /// Text the title or the culprit contains (case-insensitive); nil or empty: any.
    public var text: String?
    public var release: String?
    public var environment: String?
    public var level: String?
    public var guardName: String?
    /// The statuses shown; nil: every status.
    public var statuses: Set<IssueStatus>?
    public var sort: IssueSort = .lastSeen
    /// Issues per page (callers bound it: `parse`).
    public var limit: Int = 100
    /// Where the page starts; nil: the first page.
    public var cursor: IssueCursor?

    public init(text: String? = nil, release: String? = nil, environment: String? = nil, level: String? = nil,
                guardName: String? = nil, statuses: Set<IssueStatus>? = nil, sort: IssueSort = .lastSeen, limit: Int = 100,
                cursor: IssueCursor? = nil) {
        self.text = text
        self.release = release
        self.environment = environment
        self.level = level
        self.guardName = guardName
        self.statuses = statuses
        self.sort = sort
        self.limit = limit
        self.cursor = cursor
    }

    /// Unresolved and regressed: what still needs someone (the dashboard's default).
    public static let open: Set<IssueStatus> = [.unresolved, .regressed]

    /// The levels an event may have (Sentry's), in the order the filter offers them.
    public static let levels = ["fatal", "error", "warning", "info", "debug"]

    /// The status parameter's names: `open`, `all` and each status.
    public static let statusChoices = ["open", "all"] + IssueStatus.allCases.map(\.rawValue)

    /// Reads the parameters from `fields` (a parsed query string). A missing `status` means
    /// `defaultStatus`; a missing `limit` means `defaultLimit`, and a larger one than `maxLimit`
    /// means `maxLimit`.
    /// - Throws: 400 `request.limit` (not a whole number of at least 1), `request.sort`,
    ///   `request.status`, `request.level` (not one of the known names) or `request.cursor`
    ///   (not a cursor this collector made).
    static func parse(_ fields: FormFields, defaultStatus: String, defaultLimit: Int, maxLimit: Int) throws(CollectorError) -> IssueQuery {
        func text(_ name: String) -> String? {
            guard let value = fields[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else { return nil }
            return value
        }
        var query = IssueQuery(text: text("query"), release: text("release"), environment: text("environment"), guardName: text("guard"))
        if let level = text("level") {
            guard levels.contains(level) else { throw .badRequest("request.level", "level must be one of \(levels.joined(separator: ", "))") }
            query.level = level
        }
        let status = text("status") ?? defaultStatus
        switch status {
        case "all": query.statuses = nil
        case "open": query.statuses = open
        default:
            guard let one = IssueStatus(rawValue: status) else {
                throw .badRequest("request.status", "status must be one of \(statusChoices.joined(separator: ", "))")
            }
            query.statuses = [one]
        }
        if let sort = text("sort") {
            guard let known = IssueSort(rawValue: sort) else {
                throw .badRequest("request.sort", "sort must be one of \(IssueSort.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            query.sort = known
        }
        if let limit = text("limit") {
            guard let number = Int(limit), number >= 1 else { throw .badRequest("request.limit", "limit must be a whole number from 1 to \(maxLimit)") }
            query.limit = min(number, maxLimit)
        } else {
            query.limit = defaultLimit
        }
        if let cursor = text("cursor") {
            guard let parsed = IssueCursor(cursor) else { throw .badRequest("request.cursor", "cursor is not a cursor of this list") }
            query.cursor = parsed
        }
        return query
    }

    /// The `status` parameter that selects `statuses`: `all`, `open` or one status (another set,
    /// which `parse` never makes, reads as `all`).
    var statusParameter: String {
        guard let statuses else { return "all" }
        if statuses == Self.open { return "open" }
        return statuses.count == 1 ? statuses.first!.rawValue : "all"
    }

    /// The query's parameters (without `cursor`), in the order `parse` reads them, for links.
    var parameters: [(String, String)] {
        var pairs: [(String, String)] = []
        if let text { pairs.append(("query", text)) }
        if let release { pairs.append(("release", release)) }
        if let environment { pairs.append(("environment", environment)) }
        if let level { pairs.append(("level", level)) }
        if let guardName { pairs.append(("guard", guardName)) }
        pairs.append(("status", statusParameter))
        pairs.append(("sort", sort.rawValue))
        pairs.append(("limit", String(limit)))
        return pairs
    }

    /// `parameters` with `cursor`, as a query string (percent-encoded, no leading `?`).
    func queryString(cursor: IssueCursor?) -> String {
        let pairs = parameters + (cursor.map { [("cursor", $0.description)] } ?? [])
        return pairs.map { "\($0.0)=\(HTML.urlComponent($0.1))" }.joined(separator: "&")
    }
}

/// The issue list's orders, each newest or largest first (ties: the newer issue first).
public enum IssueSort: String, Sendable, Hashable, CaseIterable {
    case lastSeen = "last_seen", firstSeen = "first_seen", events, users

    /// The `issues` column it orders by.
    var column: String {
        switch self {
        case .lastSeen: return "last_seen"
        case .firstSeen: return "first_seen"
        case .events: return "event_count"
        case .users: return "user_count"
        }
    }

    /// Whether the column holds times (seconds, fractional) rather than counts.
    var isTime: Bool { self == .lastSeen || self == .firstSeen }
}

/// A position in the issue list (keyset pagination): the sort value and id of an issue, and
/// whether the page lies after it (`next`) or before it (`previous`). Written as
/// `n<value>:<id>` or `p<value>:<id>`, opaque to clients.
public struct IssueCursor: Sendable, Hashable, CustomStringConvertible, LosslessStringConvertible {
    public enum Direction: String, Sendable { case after = "n", before = "p" }
    public let direction: Direction
    /// The issue's value of the sorted column (a time in seconds since 1970, or a count).
    public let value: Double
    public let id: Int64

    public init(direction: Direction, value: Double, id: Int64) {
        self.direction = direction
        self.value = value
        self.id = id
    }

    public init?(_ description: String) {
        guard let first = description.first, let direction = Direction(rawValue: String(first)) else { return nil }
        let parts = description.dropFirst().split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let value = Double(parts[0]), value.isFinite, let id = Int64(parts[1]) else { return nil }
        self.init(direction: direction, value: value, id: id)
    }

    public var description: String { direction.rawValue + "\(value):\(id)" }
}

/// One page of the issue list.
public struct IssuePage: Sendable {
    public let issues: [Issue]
    /// How many issues match the query (on every page).
    public let total: Int64
    /// The page after this one, nil on the last.
    public let next: IssueCursor?
    /// The page before this one, nil on the first.
    public let previous: IssueCursor?
}

/// The values the issue list's filters offer for a project.
public struct IssueFilterValues: Sendable, Hashable {
    /// Newest release first (`ReleaseOrder`).
    public let releases: [String]
    public let environments: [String]
    public let guards: [String]
}
