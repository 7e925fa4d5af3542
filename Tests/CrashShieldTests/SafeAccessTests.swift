import Testing
@testable import CrashShield

extension RuntimeTests {
    @Suite struct SafeAccess {
        @Test func arrayIndexInAndOutOfBounds() throws {
            let array = [10, 20, 30]
            let incidents = try collectIncidents {
                try withGuards {
                    #expect(array[safe: 0] == 10)
                    #expect(array[safe: 2] == 30)
                    #expect(array[safe: 3] == nil)
                    #expect(array[safe: -1] == nil)
                    CrashShield.flushIncidents()
                }
            }
            #expect(incidents.count == 2)
            #expect(incidents.map(\.reason) == ["index 3 beyond count 3", "index -1 beyond count 3"])
            #expect(incidents.allSatisfy { $0.guardID == .swiftAccess && $0.className == "Swift.Array" })
            #expect(incidents.allSatisfy { $0.selector == "subscript(safe:)" && $0.count == 1 })
            // Two call sites on two lines: two fingerprints.
            #expect(Set(incidents.map(\.fingerprint)).count == 2)
        }

        @Test func sameCallSiteIsDeduplicated() throws {
            let array: [Int] = []
            try withGuards {
                for _ in 0..<10 { #expect(array[safe: 1] == nil) }
                #expect(CrashShield.statistics.recorded == 10)
                #expect(CrashShield.statistics.fingerprints == 1)
            }
        }

        @Test func arrayRangesMatchPlainSlicingWhenLegal() throws {
            let array = Array(0..<5)
            try withGuards {
                for lower in 0...5 {
                    for upper in lower...5 { #expect(array[safe: lower..<upper] == array[lower..<upper]) }
                }
                #expect(array[safe: 3..<6] == nil)
                #expect(array[safe: 5..<5]?.isEmpty == true)
                #expect(CrashShield.recordedCount(for: .swiftAccess) == 1)
            }
        }

        @Test func arraySetterIgnoresOutOfBoundsAndNil() throws {
            var array = [1, 2, 3]
            try withGuards {
                array[safe: 1] = 20
                array[safe: 3] = 40
                array[safe: 0] = nil
                #expect(array == [1, 20, 3])
                #expect(CrashShield.recordedCount(for: .swiftAccess) == 2)
            }
        }

        @Test func genericCollectionAccess() throws {
            let dictionaryValues = ["a": 1]
            let set: Set<Int> = [1]
            try withGuards {
                #expect(set[safe: set.startIndex] == 1)
                #expect(set[safe: set.endIndex] == nil)
                let values = dictionaryValues.values
                #expect(values[safe: values.startIndex] == 1)
                let slice = [1, 2, 3][1...]
                #expect(slice[safe: 0] == nil)  // ArraySlice indices start at 1: index 0 is outside
                #expect(slice[safe: 1] == 2)
                #expect(CrashShield.recordedCount(for: .swiftAccess) == 2)
            }
        }

        @Test func stringOffsets() throws {
            let text = "héllo👋"
            try withGuards {
                #expect(text[safeOffset: 1] == "é")
                #expect(text[safeOffset: 5] == "👋")
                #expect(text[safeOffset: 6] == nil)
                #expect(text[safeOffset: -1] == nil)
                #expect(text[safeOffsets: 1..<3] == "él")
                #expect(text[safeOffsets: 0..<6] == "héllo👋")
                #expect(text[safeOffsets: 6..<6] == "")
                #expect(text[safeOffsets: 4..<9] == nil)
                #expect(""[safeOffset: 0] == nil)
                #expect(CrashShield.recordedCount(for: .swiftAccess) == 4)
            }
        }

        @Test func policyOffRecordsNothing() throws {
            try withGuards {
                try CrashShield.setPolicy(.off, for: .swiftAccess)
                #expect([Int]()[safe: 0] == nil)
                #expect(CrashShield.recordedCount(for: .swiftAccess) == 0)
                #expect(CrashShield.status.first { $0.id == .swiftAccess }?.policy == .off)
            }
        }
    }
}
