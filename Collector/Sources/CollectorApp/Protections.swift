import Foundation

/// A guard switched on for one release of an issue by a published configuration version (the
/// one-click protection, `origin` "manual", or auto-protect, "auto").
public struct Protection: Sendable, Hashable {
    public let id: Int64
    public let projectID: Int64
    public let issueID: Int64
    public let release: String
    /// The SDK's guard name.
    public let guardName: String
    /// "reportOnly" or "neutralize": what apps of the release get (a rule that already
    /// neutralised keeps doing so when report-only was asked for).
    public let policy: String
    /// "manual" or "auto".
    public let origin: String
    /// The class prefix the document's rule names (zombie guard), or nil.
    public let classPrefix: String?
    /// The configuration version that switched it (nil while auto-protect is publishing it).
    public let configVersion: Int64?
    public let createdAt: Date
}

/// A protection and what happened around it: the issue's crashes in the release before and
/// after the switch, and the guard's prevented crashes (incidents) in the release after it, by
/// event time.
public struct ProtectionSummary: Sendable, Hashable {
    public let protection: Protection
    public let crashesBefore: Int64
    public let crashesAfter: Int64
    public let incidentsAfter: Int64
}

/// A fatal issue's release that reached auto-protect's threshold of users.
public struct AutoProtectCandidate: Sendable, Hashable {
    public let issueID: Int64
    public let release: String
    public let users: Int64
}
