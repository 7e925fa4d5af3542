import CrashShieldBase
import CrashShieldProtocol
import Testing
@testable import CrashShield
@testable import CrashShieldRecording
@testable import CrashShieldSentry

extension RuntimeTests {
    @Suite struct SafeAccess {
        @Test func arrayIndexInAndOutOfBounds() throws {
            let array = [10, 20, 30]
            let incidents = try collectIncidents {
                try withGuards {
                    #expect(array[shielded: 0] == 10)
                    #expect(array[shielded: 2] == 30)
                    #expect(array[shielded: 3] == nil)
                    #expect(array[shielded: -1] == nil)
                    CrashShieldSDK.flushIncidents()
                }
            }
            #expect(incidents.count == 2)
            #expect(incidents.map(\.reason) == ["index 3 beyond count 3", "index -1 beyond count 3"])
            #expect(incidents.allSatisfy { $0.guardID == .swiftAccess && $0.className == "Swift.Array" })
            #expect(incidents.allSatisfy { $0.selector == "subscript(shielded:)" && $0.count == 1 })
            // Two call sites on two lines: two fingerprints.
            #expect(Set(incidents.map(\.fingerprint)).count == 2)
        }

        /// A Swift accessor's incident starts its stack at the code that called
        /// the accessor, in this debug build too (before: the 32 frames began inside the SDK's
        /// nested closures and cs_incident_record). Members: a generic Collection accessor, the
        /// setter, a string accessor.
        @Test func aSwiftAccessorsIncidentStartsAtItsCaller() throws {
            var items = [1, 2, 3]
            let incidents = try collectIncidents {
                try withGuards {
                    #expect(shieldedArrayReadAtAKnownCallSite(items) == nil)
                    #expect(shieldedCollectionReadAtAKnownCallSite(items[...]) == nil)
                    shieldedArrayWriteAtAKnownCallSite(&items)
                    #expect(shieldedStringReadAtAKnownCallSite("abc") == nil)
                    CrashShieldSDK.flushIncidents()
                }
            }
            #expect(incidents.count == 4)
            let callers = ["shieldedArrayReadAtAKnownCallSite", "shieldedCollectionReadAtAKnownCallSite",
                           "shieldedArrayWriteAtAKnownCallSite", "shieldedStringReadAtAKnownCallSite"]
            for (incident, caller) in zip(incidents, callers) {
                let frame = try #require(incident.frames.first)
                let offset = try #require(frame.imageOffset)
                let symbol = ExternalSymbolizer.symbolize(path: frame.imagePath, offsets: [UInt64(offset) - 1])?.first ?? nil
                #expect(symbol?.function.contains(caller) == true, "\(caller): first frame in \(symbol?.function ?? "?")")
                #expect(symbol?.file?.hasSuffix("SafeAccessTests.swift") == true, "\(caller): \(symbol?.file ?? "?")")
            }
        }

        @Test func sameCallSiteIsDeduplicated() throws {
            let array: [Int] = []
            try withGuards {
                for _ in 0..<10 { #expect(array[shielded: 1] == nil) }
                #expect(CrashShieldSDK.statistics.recorded == 10)
                #expect(CrashShieldSDK.statistics.fingerprints == 1)
            }
        }

        @Test func arrayRangesMatchPlainSlicingWhenLegal() throws {
            let array = Array(0..<5)
            try withGuards {
                for lower in 0...5 {
                    for upper in lower...5 { #expect(array[shielded: lower..<upper] == array[lower..<upper]) }
                }
                #expect(array[shielded: 3..<6] == nil)
                #expect(array[shielded: 5..<5]?.isEmpty == true)
                #expect(CrashShieldSDK.recordedCount(for: .swiftAccess) == 1)
            }
        }

        @Test func arraySetterIgnoresOutOfBoundsAndNil() throws {
            var array = [1, 2, 3]
            try withGuards {
                array[shielded: 1] = 20
                array[shielded: 3] = 40
                array[shielded: 0] = nil
                #expect(array == [1, 20, 3])
                #expect(CrashShieldSDK.recordedCount(for: .swiftAccess) == 2)
            }
        }

        @Test func genericCollectionAccess() throws {
            let dictionaryValues = ["a": 1]
            let set: Set<Int> = [1]
            try withGuards {
                #expect(set[shielded: set.startIndex] == 1)
                #expect(set[shielded: set.endIndex] == nil)
                let values = dictionaryValues.values
                #expect(values[shielded: values.startIndex] == 1)
                let slice = [1, 2, 3][1...]
                #expect(slice[shielded: 0] == nil)  // ArraySlice indices start at 1: index 0 is outside
                #expect(slice[shielded: 1] == 2)
                #expect(CrashShieldSDK.recordedCount(for: .swiftAccess) == 2)
            }
        }

        @Test func stringOffsets() throws {
            let text = "héllo👋"
            try withGuards {
                #expect(text[shieldedOffset: 1] == "é")
                #expect(text[shieldedOffset: 5] == "👋")
                #expect(text[shieldedOffset: 6] == nil)
                #expect(text[shieldedOffset: -1] == nil)
                #expect(text[shieldedOffsets: 1..<3] == "él")
                #expect(text[shieldedOffsets: 0..<6] == "héllo👋")
                #expect(text[shieldedOffsets: 6..<6] == "")
                #expect(text[shieldedOffsets: 4..<9] == nil)
                #expect(""[shieldedOffset: 0] == nil)
                #expect(CrashShieldSDK.recordedCount(for: .swiftAccess) == 4)
            }
        }

        @Test func policyOffRecordsNothing() throws {
            try withGuards {
                try CrashShieldSDK.setPolicy(.off, for: .swiftAccess)
                #expect([Int]()[shielded: 0] == nil)
                #expect(CrashShieldSDK.recordedCount(for: .swiftAccess) == 0)
                #expect(CrashShieldSDK.status.first { $0.id == .swiftAccess }?.policy == .off)
            }
        }
    }
}

@inline(never) func shieldedArrayReadAtAKnownCallSite(_ items: [Int]) -> Int? { items[shielded: 7] }
@inline(never) func shieldedCollectionReadAtAKnownCallSite(_ items: ArraySlice<Int>) -> Int? { items[shielded: 9] }
@inline(never) func shieldedArrayWriteAtAKnownCallSite(_ items: inout [Int]) { items[shielded: 8] = 1 }
@inline(never) func shieldedStringReadAtAKnownCallSite(_ text: String) -> Character? { text[shieldedOffset: 5] }
