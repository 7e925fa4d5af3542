import CrashShieldBase
import Foundation

/// A dotted numeric version such as "2.4.1" or "16", optionally with a pre-release suffix
/// ("2.5.0-beta.2") and build metadata ("2.4.0+build.77").
///
/// Ordering: numeric components compare as numbers, a missing component counts as 0 ("2.4" ==
/// "2.4.0"). A pre-release sorts before the same version without one ("2.5.0-rc.1" < "2.5.0");
/// two pre-releases compare identifier by identifier as in Semantic Versioning 2.0 (numeric
/// identifiers as numbers and below alphanumeric ones, otherwise in ASCII order; a shorter list
/// of equal leading identifiers is lower). Build metadata is ignored by comparison and equality.
public struct DottedVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The numeric components, trailing zeros removed (so equal versions have equal components).
    public let components: [UInt64]
    /// The pre-release identifiers after '-' ([] for a release).
    public let preRelease: [String]
    /// The text the version was parsed from.
    public let text: String

    /// Parses `text`; nil unless it is digits separated by single dots, then optionally
    /// `-identifiers` and `+metadata` (identifiers: letters, digits, '-', separated by dots).
    public init?(_ text: String) {
        var main = Substring(text)
        if let plus = main.firstIndex(of: "+") {
            let metadata = main[main.index(after: plus)...]
            guard DottedVersion.validIdentifiers(metadata) else { return nil }
            main = main[..<plus]
        }
        var preRelease: [String] = []
        if let dash = main.firstIndex(of: "-") {
            let suffix = main[main.index(after: dash)...]
            guard DottedVersion.validIdentifiers(suffix) else { return nil }
            preRelease = suffix.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            main = main[..<dash]
        }
        let parts = main.split(separator: ".", omittingEmptySubsequences: false)
        guard !parts.isEmpty else { return nil }
        var numbers: [UInt64] = []
        for part in parts {
            guard !part.isEmpty, part.allSatisfy({ $0.isASCII && $0.isNumber }), let value = UInt64(part) else { return nil }
            numbers.append(value)
        }
        while numbers.count > 1 && numbers.last == 0 { numbers.removeLast() }
        self.components = numbers
        self.preRelease = preRelease
        self.text = text
    }

    private static func validIdentifiers(_ text: Substring) -> Bool {
        guard !text.isEmpty else { return false }
        return text.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { identifier in
            !identifier.isEmpty && identifier.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        }
    }

    public var description: String { text }

    public static func == (lhs: DottedVersion, rhs: DottedVersion) -> Bool {
        lhs.components == rhs.components && lhs.preRelease == rhs.preRelease
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(components)
        hasher.combine(preRelease)
    }

    public static func < (lhs: DottedVersion, rhs: DottedVersion) -> Bool {
        let count = max(lhs.components.count, rhs.components.count)
        for index in 0..<count {
            let left = index < lhs.components.count ? lhs.components[index] : 0
            let right = index < rhs.components.count ? rhs.components[index] : 0
            if left != right { return left < right }
        }
        // Same numbers: a release is above every pre-release of it.
        if lhs.preRelease.isEmpty { return false }
        if rhs.preRelease.isEmpty { return true }
        for (left, right) in zip(lhs.preRelease, rhs.preRelease) where left != right {
            switch (UInt64(left), UInt64(right)) {
            case let (l?, r?): return l < r
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return left < right
            }
        }
        return lhs.preRelease.count < rhs.preRelease.count
    }
}

/// A version constraint: comparisons joined by commas, all of which must hold
/// (">=2.4.0, <2.5.0"). Operators: `=`, `!=`, `>`, `>=`, `<`, `<=`; a bare version means `=`.
/// Spaces around operators, versions and commas are allowed. Versions compare as `DottedVersion`
/// does (missing components are 0; a pre-release is below its release, so ">=2.5.0" does not
/// match "2.5.0-beta" while ">=2.5.0-0" does).
public struct VersionConstraint: Sendable, Hashable, CustomStringConvertible {
    public enum Operator: String, Sendable, Hashable, CaseIterable {
        case equal = "="
        case notEqual = "!="
        case greater = ">"
        case greaterOrEqual = ">="
        case less = "<"
        case lessOrEqual = "<="
    }

    /// One comparison of a constraint.
    public struct Clause: Sendable, Hashable {
        public let op: Operator
        public let version: DottedVersion

        public init(op: Operator, version: DottedVersion) {
            self.op = op
            self.version = version
        }

        public func matches(_ candidate: DottedVersion) -> Bool {
            switch op {
            case .equal: return candidate == version
            case .notEqual: return candidate != version
            case .greater: return candidate > version
            case .greaterOrEqual: return candidate >= version
            case .less: return candidate < version
            case .lessOrEqual: return candidate <= version
            }
        }
    }

    public let clauses: [Clause]
    /// The text the constraint was parsed from (kept for serialisation).
    public let text: String

    /// Why a constraint string was refused. `code` is stable across versions.
    public struct SyntaxError: CodedError {
        public let code: String
        public let message: String
    }

    /// Parses `text`.
    /// - Throws: `SyntaxError` with code "version_constraint.empty" (no clause, or an empty clause
    ///   between commas) or "version_constraint.version" (a clause whose version is not a dotted
    ///   numeric version).
    public init(_ text: String) throws(SyntaxError) {
        var clauses: [Clause] = []
        for rawClause in text.split(separator: ",", omittingEmptySubsequences: false) {
            var clause = Substring(rawClause.trimmingCharacters(in: .whitespaces))
            guard !clause.isEmpty else {
                throw SyntaxError(code: "version_constraint.empty", message: "an empty comparison in \"\(text)\"")
            }
            var op = Operator.equal
            for candidate in [Operator.greaterOrEqual, .lessOrEqual, .notEqual, .greater, .less, .equal]
            where clause.hasPrefix(candidate.rawValue) {
                op = candidate
                clause = clause.dropFirst(candidate.rawValue.count)
                break
            }
            let versionText = clause.trimmingCharacters(in: .whitespaces)
            guard let version = DottedVersion(versionText) else {
                throw SyntaxError(code: "version_constraint.version",
                                  message: "\"\(versionText)\" in \"\(text)\" is not a dotted numeric version")
            }
            clauses.append(Clause(op: op, version: version))
        }
        self.clauses = clauses
        self.text = text
    }

    /// True when every clause holds for `version`; false for a version that does not parse.
    public func matches(_ version: String) -> Bool {
        guard let parsed = DottedVersion(version) else { return false }
        return matches(parsed)
    }

    public func matches(_ version: DottedVersion) -> Bool { clauses.allSatisfy { $0.matches(version) } }

    public var description: String { text }

    public static func == (lhs: VersionConstraint, rhs: VersionConstraint) -> Bool { lhs.clauses == rhs.clauses }
    public func hash(into hasher: inout Hasher) { hasher.combine(clauses) }
}
