internal import _CrashShieldIncidents

// Swift counterparts of the container and string guards (SPEC §2.11).
//
// Swift traps (index out of range, force unwrap, overflow) cannot be intercepted by a library:
// they are captured as crashes. These accessors do the same job without trapping: an access
// outside the bounds returns nil and records an incident (guard `.swiftAccess`).
//
// Policy: `.neutralize` and `.reportOnly` both return nil and record (there is no original
// behaviour to fall back to but a trap); `.off` returns nil without recording.

extension Collection {
    /// The element at `index`, or nil (and an incident) when `index` is outside
    /// `startIndex..<endIndex`.
    public subscript(shielded index: Index, file: StaticString = #fileID, line: UInt = #line) -> Element? {
        guard index >= startIndex && index < endIndex else {
            SwiftAccessGuard.record("Swift.Collection", "subscript(shielded:)", "index outside startIndex..<endIndex", file, line)
            return nil
        }
        return self[index]
    }

    /// The elements in `bounds`, or nil (and an incident) when `bounds` is not within
    /// `startIndex...endIndex`.
    public subscript(shielded bounds: Range<Index>, file: StaticString = #fileID, line: UInt = #line) -> SubSequence? {
        guard bounds.lowerBound >= startIndex && bounds.upperBound <= endIndex else {
            SwiftAccessGuard.record("Swift.Collection", "subscript(shielded:)", "range outside startIndex...endIndex", file, line)
            return nil
        }
        return self[bounds]
    }
}

extension MutableCollection {
    /// Reads like `Collection[shielded:]`. Assigning through an index outside the bounds (or assigning
    /// nil) changes nothing and records an incident.
    public subscript(shielded index: Index, file: StaticString = #fileID, line: UInt = #line) -> Element? {
        get {
            guard index >= startIndex && index < endIndex else {
                SwiftAccessGuard.record("Swift.MutableCollection", "subscript(shielded:)", "index outside startIndex..<endIndex", file, line)
                return nil
            }
            return self[index]
        }
        set {
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
        get {
            guard index >= 0 && index < count else {
                SwiftAccessGuard.record("Swift.Array", "subscript(shielded:)", "index {} beyond count {}", file, line, index, count)
                return nil
            }
            return self[index]
        }
        set {
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
        guard bounds.lowerBound >= 0 && bounds.upperBound <= count else {
            SwiftAccessGuard.record("Swift.Array", "subscript(shielded:)", "range end {} beyond count {}", file, line, bounds.upperBound, count)
            return nil
        }
        return self[bounds]
    }
}

extension StringProtocol {
    /// The character at `offset` characters from the start, or nil (and an incident) when the
    /// string is shorter. Negative offsets are out of range.
    public subscript(shieldedOffset offset: Int, file: StaticString = #fileID, line: UInt = #line) -> Character? {
        guard offset >= 0, let index = self.index(startIndex, offsetBy: offset, limitedBy: endIndex), index < endIndex else {
            SwiftAccessGuard.record("Swift.String", "subscript(shieldedOffset:)", "offset {} beyond the end", file, line, offset)
            return nil
        }
        return self[index]
    }

    /// The characters at offsets `bounds`, or nil (and an incident) when the range does not lie
    /// within the string.
    public subscript(shieldedOffsets bounds: Range<Int>, file: StaticString = #fileID, line: UInt = #line) -> SubSequence? {
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

/// Records Swift-side incidents through the same C pipeline as the Objective-C guards.
/// All strings are static: nothing is formatted on the calling thread.
enum SwiftAccessGuard {
    static let guardName: StaticString = "swift"

    static func record(
        _ typeName: StaticString, _ selector: StaticString, _ reason: StaticString, _ file: StaticString, _ line: UInt,
        _ first: Int? = nil, _ second: Int? = nil
    ) {
        let policy = cs_swift_guard_policy(CS_SWIFT_GUARD_ACCESS)
        guard policy != CS_POLICY_OFF else { return }
        guardName.withCString { guardPointer in
            typeName.withCString { typePointer in
                selector.withCString { selectorPointer in
                    reason.withCString { reasonPointer in
                        file.withCString { filePointer in
                            var site = cs_incident_site()
                            site.guard_name = guardPointer
                            site.policy = policy
                            site.class_name = typePointer
                            site.selector_name = selectorPointer
                            site.is_class_method = false
                            site.reason = reasonPointer
                            site.args = (
                                UInt64(bitPattern: Int64(first ?? 0)), UInt64(bitPattern: Int64(second ?? 0))
                            )
                            site.arg_count = second != nil ? 2 : (first != nil ? 1 : 0)
                            site.caller = nil
                            site.site_file = filePointer
                            site.site_line = UInt32(truncatingIfNeeded: line)
                            cs_incident_record(&site)
                        }
                    }
                }
            }
        }
    }
}

extension StaticString {
    /// StaticString literals are NUL-terminated UTF-8 in the binary, so the pointer is static.
    fileprivate func withCString<R>(_ body: (UnsafePointer<CChar>) -> R) -> R {
        utf8Start.withMemoryRebound(to: CChar.self, capacity: utf8CodeUnitCount + 1, body)
    }
}
