import Foundation

/// Orders release names such as `my.app@2.4.1+310`, `2.10.0` or `1.0-beta`: the part after the
/// last `@` is split into dot-separated components compared numerically where both are numbers,
/// textually otherwise; a build number after `+` breaks ties. Releases that share no version
/// structure (for example two commit hashes) compare by text, which is stable but arbitrary.
enum ReleaseOrder {
    static func compare(_ lhs: String, _ rhs: String) -> ComparisonResult {
        let (leftVersion, leftBuild) = split(lhs)
        let (rightVersion, rightBuild) = split(rhs)
        let versionOrder = compareComponents(leftVersion, rightVersion)
        if versionOrder != .orderedSame { return versionOrder }
        return compareComponents(leftBuild, rightBuild)
    }

    /// `lhs` is a strictly later release than `rhs`.
    static func isNewer(_ lhs: String, than rhs: String) -> Bool { compare(lhs, rhs) == .orderedDescending }

    private static func split(_ release: String) -> ([Substring], [Substring]) {
        let version = release.split(separator: "@").last.map(Substring.init) ?? Substring(release)
        let parts = version.split(separator: "+", maxSplits: 1)
        let core = parts.first ?? ""
        let build = parts.count > 1 ? parts[1] : ""
        return (core.split(whereSeparator: { $0 == "." || $0 == "-" }), build.split(separator: "."))
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
}
