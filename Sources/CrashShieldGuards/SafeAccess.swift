import CrashShieldBase
package import _CrashShieldIncidents

// Swift counterparts of the container and string guards.
//
// Swift traps (index out of range, force unwrap, overflow) cannot be intercepted by a library:
// they are captured as crashes. These accessors do the same job without trapping: an access
// outside the bounds returns nil and records an incident (guard `.swiftAccess`).
//
// Policy: `.neutralize` and `.reportOnly` both return nil and record (there is no original
// behaviour to fall back to but a trap); `.off` returns nil without recording.
//
// Every accessor is `@inline(never)` and calls `SwiftAccessGuard.record` itself: the incident's
// stack starts at the accessor's return address, the app's call site, in debug and release
// builds (cross-module optimisation never inlines an accessor into the app).

extension Collection {
    /// The element at `index`, or nil (and an incident) when `index` is outside
    /// `startIndex..<endIndex`.
    public subscript(shielded index: Index, file: StaticString = #fileID, line: UInt = #line) -> Element? {
        @inline(never) get {
            guard index >= startIndex && index < endIndex else {
                SwiftAccessGuard.record("Swift.Collection", "subscript(shielded:)", "index outside startIndex..<endIndex", file, line)
                return nil
            }
            return self[index]
        }
    }

    /// The elements in `bounds`, or nil (and an incident) when `bounds` is not within
    /// `startIndex...endIndex`.
    public subscript(shielded bounds: Range<Index>, file: StaticString = #fileID, line: UInt = #line) -> SubSequence? {
        @inline(never) get {
            guard bounds.lowerBound >= startIndex && bounds.upperBound <= endIndex else {
                SwiftAccessGuard.record("Swift.Collection", "subscript(shielded:)", "range outside startIndex...endIndex", file, line)
                return nil
            }
            return self[bounds]
        }
    }
}

extension MutableCollection {
    /// Reads like `Collection[shielded:]`. Assigning through an index outside the bounds (or assigning
    /// nil) changes nothing and records an incident.
    public subscript(shielded index: Index, file: StaticString = #fileID, line: UInt = #line) -> Element? {
        @inline(never) get {
            guard index >= startIndex && index < endIndex else {
                SwiftAccessGuard.record("Swift.MutableCollection", "subscript(shielded:)", "index outside startIndex..<endIndex", file, line)
                return nil
            }
            return self[index]
        }
        @inline(never) set {
            guard index >= startIndex && index < endIndex else {
                SwiftAccessGuard.record("Swift.MutableCollection", "subscript(shielded:)=", "index outside startIndex..<endIndex", file, line)
                return
            }
            guard let newValue else {
                SwiftAccessGuard.record("Swift.MutableCollection", "subscript(shielded:)=", "nil assigned to an element", file, line)
                return
            }
            self[index] = newValue
        }
    }
}

extension Array {
    /// The element at `index`, or nil (and an incident naming the index and count).
    public subscript(shielded index: Int, file: StaticString = #fileID, line: UInt = #line) -> Element? {
        @inline(never) get {
            guard index >= 0 && index < count else {
                SwiftAccessGuard.record("Swift.Array", "subscript(shielded:)", "index {} beyond count {}", file, line, index, count)
                return nil
            }
            return self[index]
        }
        @inline(never) set {
            guard index >= 0 && index < count else {
                SwiftAccessGuard.record("Swift.Array", "subscript(shielded:)=", "index {} beyond count {}", file, line, index, count)
                return
            }
            guard let newValue else {
                SwiftAccessGuard.record("Swift.Array", "subscript(shielded:)=", "nil assigned to an element", file, line)
                return
            }
            self[index] = newValue
        }
    }

    /// The elements in `bounds`, or nil (and an incident) when `bounds` is not within `0...count`.
    public subscript(shielded bounds: Range<Int>, file: StaticString = #fileID, line: UInt = #line) -> ArraySlice<Element>? {
        @inline(never) get {
            guard bounds.lowerBound >= 0 && bounds.upperBound <= count else {
                SwiftAccessGuard.record("Swift.Array", "subscript(shielded:)", "range end {} beyond count {}", file, line, bounds.upperBound, count)
                return nil
            }
            return self[bounds]
        }
    }
}

extension StringProtocol {
    /// The character at `offset` characters from the start, or nil (and an incident) when the
    /// string is shorter. Negative offsets are out of range.
    public subscript(shieldedOffset offset: Int, file: StaticString = #fileID, line: UInt = #line) -> Character? {
        @inline(never) get {
            guard offset >= 0, let index = self.index(startIndex, offsetBy: offset, limitedBy: endIndex), index < endIndex else {
                SwiftAccessGuard.record("Swift.String", "subscript(shieldedOffset:)", "offset {} beyond the end", file, line, offset)
                return nil
            }
            return self[index]
        }
    }

    /// The characters at offsets `bounds`, or nil (and an incident) when the range does not lie
    /// within the string.
    public subscript(shieldedOffsets bounds: Range<Int>, file: StaticString = #fileID, line: UInt = #line) -> SubSequence? {
        @inline(never) get {
            guard bounds.lowerBound >= 0,
                let lower = self.index(startIndex, offsetBy: bounds.lowerBound, limitedBy: endIndex),
                let upper = self.index(lower, offsetBy: bounds.count, limitedBy: endIndex)
            else {
                SwiftAccessGuard.record("Swift.String", "subscript(shieldedOffsets:)", "range {}..<{} beyond the end", file, line, bounds.lowerBound, bounds.upperBound)
                return nil
            }
            return self[lower..<upper]
        }
    }
}

/// Records Swift-side incidents through the same C pipeline as the Objective-C guards.
/// All strings are static: nothing is formatted on the calling thread.
enum SwiftAccessGuard {
    static let guardName: StaticString = "swift"

    /// Called directly by the public accessor whose caller made the misuse: the incident's stack
    /// starts at that caller (the accessor's return address), in debug and release builds, and
    /// `file`/`line` (the caller's `#fileID`/`#line`) stand in for it in the fingerprint. Never
    /// inlined, so that the frames above it are exactly this function and the accessor.
    @inline(never)
    static func record(
        _ typeName: StaticString, _ selector: StaticString, _ reason: StaticString, _ file: StaticString, _ line: UInt,
        _ first: Int? = nil, _ second: Int? = nil
    ) {
        let policy = cs_swift_guard_policy(CS_SWIFT_GUARD_ACCESS)
        guard policy != CS_POLICY_OFF else { return }
        var site = cs_incident_site()
        site.guard_name = guardName.cString
        site.policy = policy
        site.class_name = typeName.cString
        site.selector_name = selector.cString
        site.is_class_method = false
        site.reason = reason.cString
        site.args = (UInt64(bitPattern: Int64(first ?? 0)), UInt64(bitPattern: Int64(second ?? 0)))
        site.arg_count = second != nil ? 2 : (first != nil ? 1 : 0)
        site.caller = nil
        site.site_file = file.cString
        site.site_line = UInt32(truncatingIfNeeded: line)
        cs_incident_record_above_caller(&site, 1)
    }
}

extension StaticString {
    /// The literal's NUL-terminated UTF-8 in the binary (static, so the pointer stays valid), or
    /// "??" for a literal of one Unicode scalar, which has no such storage.
    fileprivate var cString: UnsafePointer<CChar> {
        guard hasPointerRepresentation else { return StaticString.unknown.cString }
        return UnsafeRawPointer(utf8Start).assumingMemoryBound(to: CChar.self)
    }

    private static let unknown: StaticString = "??"
}
