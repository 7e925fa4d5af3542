import Foundation

/// Orders release names such as `my.app@2.4.1+310`, `2.10.0` or `2.0.0-rc.1`. The part after the
/// last `@` is `core[-pre-release][+build]`:
/// - the core's dot-separated components compare numerically where both are numbers, textually
///   otherwise (a missing component counts as `0`, so `1.0` equals `1.0.0`);
/// - when the core starts with a digit (or `v` and a digit), the text after its first `-` is a
///   pre-release, ordered by semver precedence: a version with a pre-release is older
///   than the same core without one (`2.0.0-beta` < `2.0.0`), and two pre-releases compare
///   identifier by identifier (numeric ones numerically, below alphanumeric ones, which compare
///   in ASCII order; more identifiers are newer when all before are equal):
///   `1.0.0-alpha` < `1.0.0-alpha.1` < `1.0.0-alpha.beta` < `1.0.0-beta.2` < `1.0.0-beta.11` <
///   `1.0.0-rc.1` < `1.0.0`. A core that does not start with a digit (`my-app-1.2`) has no
///   pre-release: its `-` separates components;
/// - a build number after `+` breaks ties (semver ignores it; releases named `1.0+2` and
///   `1.0+3` are distinct builds here).
/// Releases that share no version structure (for example two commit hashes) compare by text,
/// which is stable but arbitrary.
enum ReleaseOrder {
    static func compare(_ lhs: String, _ rhs: String) -> ComparisonResult {
        let left = Version(lhs)
        let right = Version(rhs)
        let coreOrder = compareComponents(left.core, right.core)
        if coreOrder != .orderedSame { return coreOrder }
        switch (left.preRelease, right.preRelease) {
        case (nil, nil): break
        case (nil, .some): return .orderedDescending
        case (.some, nil): return .orderedAscending
        case (.some(let l), .some(let r)):
            let order = comparePreRelease(l, r)
            if order != .orderedSame { return order }
        }
        return compareComponents(left.build, right.build)
    }

    /// `lhs` is a strictly later release than `rhs`.
    static func isNewer(_ lhs: String, than rhs: String) -> Bool { compare(lhs, rhs) == .orderedDescending }

    private struct Version {
        var core: [Substring]
        var preRelease: [Substring]?
        var build: [Substring]

        init(_ release: String) {
            let version = release.split(separator: "@", omittingEmptySubsequences: false).last ?? Substring(release)
            let parts = version.split(separator: "+", maxSplits: 1, omittingEmptySubsequences: false)
            let main = parts.first ?? ""
            build = parts.count > 1 ? parts[1].split(separator: ".") : []
            let digits = main.drop(while: { $0 == "v" || $0 == "V" })
            if digits.first?.isASCIIDigitCharacter == true, let dash = main.firstIndex(of: "-") {
                core = main[..<dash].split(separator: ".")
                preRelease = main[main.index(after: dash)...].split(separator: ".", omittingEmptySubsequences: false)
            } else {
                core = main.split(whereSeparator: { $0 == "." || $0 == "-" })
                preRelease = nil
            }
        }
    }

    private static func compareComponents(_ lhs: [Substring], _ rhs: [Substring]) -> ComparisonResult {
        for index in 0..<max(lhs.count, rhs.count) {
            let left = index < lhs.count ? lhs[index] : "0"
            let right = index < rhs.count ? rhs[index] : "0"
            if let l = UInt64(left), let r = UInt64(right) {
                if l != r { return l < r ? .orderedAscending : .orderedDescending }
            } else if left != right {
                return left < right ? .orderedAscending : .orderedDescending
            }
        }
        return .orderedSame
    }

    /// Pre-releases: identifier by identifier; numeric identifiers compare numerically and
    /// are older than alphanumeric ones, which compare in ASCII order; a shorter list that is a
    /// prefix of the longer one is older.
    private static func comparePreRelease(_ lhs: [Substring], _ rhs: [Substring]) -> ComparisonResult {
        for (left, right) in zip(lhs, rhs) {
            let leftNumber = isNumeric(left) ? left : nil
            let rightNumber = isNumeric(right) ? right : nil
            switch (leftNumber, rightNumber) {
            case (.some(let l), .some(let r)):
                // Numerically, whatever the length (no overflow): fewer digits once leading zeros are gone is smaller.
                let a = l.drop(while: { $0 == "0" }), b = r.drop(while: { $0 == "0" })
                if a.count != b.count { return a.count < b.count ? .orderedAscending : .orderedDescending }
                if a != b { return a.lexicographicallyPrecedes(b) ? .orderedAscending : .orderedDescending }
            case (.some, nil): return .orderedAscending
            case (nil, .some): return .orderedDescending
            case (nil, nil):
                if left != right {
                    return left.utf8.lexicographicallyPrecedes(right.utf8) ? .orderedAscending : .orderedDescending
                }
            }
        }
        if lhs.count != rhs.count { return lhs.count < rhs.count ? .orderedAscending : .orderedDescending }
        return .orderedSame
    }

    private static func isNumeric(_ identifier: Substring) -> Bool {
        !identifier.isEmpty && identifier.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}

private extension Character {
    var isASCIIDigitCharacter: Bool { isASCII && isNumber }
}
