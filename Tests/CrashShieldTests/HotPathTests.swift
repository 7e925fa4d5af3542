import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing
@testable import CrashShield
import _CrashShieldScenarios

extension RuntimeTests {
    /// The fast hooks (CS_DEFINE_FAST_HOOK_1) and the receiver-measure cache's field form.
    @Suite struct HotPath {
        /// Field width the cache reads from `code` (0: not a plain getter), and the offset.
        private func field(_ code: [UInt8]) -> (width: Int32, offset: Int32) {
            var offset: Int32 = -1
            let width = code.withUnsafeBufferPointer { cs_test_getter_field($0.baseAddress, &offset) }
            return (width, offset)
        }

        @Test func plainFieldGettersAreRecognisedFromTheirCode() {
            // mov 0x10(%rdi),%eax; ret — GNUstep's -[GSArray count]: a 32-bit field.
            #expect(field([0x8b, 0x47, 0x10, 0xc3]) == (4, 16))
            // mov 0x8(%rdi),%rax; ret — a 64-bit field.
            #expect(field([0x48, 0x8b, 0x47, 0x08, 0xc3]) == (8, 8))
            // endbr64; mov 0x100(%rdi),%eax; ret — a 32-bit displacement.
            #expect(field([0xf3, 0x0f, 0x1e, 0xfa, 0x8b, 0x87, 0x00, 0x01, 0x00, 0x00, 0xc3]) == (4, 256))
        }

        /// GNUstep's arrays answer -count from a plain field: cached in their home bucket, in
        /// field form, and the field read agrees with the implementation.
        @Test func aSystemArrayClassIsCachedInFieldForm() {
            #expect(cs_test_measure_cache_entry() == 0x1f)
        }

        @Test func anythingElseKeepsCallingTheImplementation() {
            #expect(field([0x8b, 0x47, 0x10, 0x90, 0xc3]).width == 0) // more than a load before ret
            #expect(field([0x8b, 0x47, 0x00, 0xc3]).width == 0) // the isa is no count
            #expect(field([0x8b, 0x47, 0xf8, 0xc3]).width == 0) // negative offset
            #expect(field([0x8b, 0x07, 0xc3]).width == 0) // (%rdi): the isa again
            #expect(field([0x8b, 0x46, 0x10, 0xc3]).width == 0) // another base register
            #expect(field([0x8b, 0x4f, 0x10, 0xc3]).width == 0) // loads into ecx, not the result
            #expect(field([0x8b, 0x47, 0x10, 0xe9, 0, 0, 0, 0]).width == 0) // a tail call, not ret
            #expect(field([0xf3, 0x0f, 0x1e, 0xfb, 0x8b, 0x47, 0x10, 0xc3]).width == 0) // not endbr64
            #expect(field([0x55, 0x48, 0x89, 0xe5]).width == 0) // a frame: a real method body
        }

        /// A misuse that fails the fast predicate's field check is decided by the full body,
        /// called with the slot's return address: the incident names the sender's code as its
        /// first frame, not the slot.
        @Test func fastHookMisusesAreNeutralisedAndNameTheirCallSite() throws {
            var neutralised: UInt32 = 0
            var start: UInt = 0
            let incidents = try collectIncidents {
                try withGuards {
                    start = UInt(cs_test_fast_hook_misuses(&neutralised))
                    CrashShieldSDK.flushIncidents()
                }
            }
            #expect(neutralised == 4)
            #expect(incidents.map(\.selector).sorted()
                        == ["characterAtIndex:", "objectAtIndex:", "objectAtIndexedSubscript:", "substringWithRange:"])
            for incident in incidents {
                let first = try #require(incident.frames.first).address
                #expect(first > start && first - start < 4096, "\(incident.selector): first frame \(first) start \(start)")
            }
            #expect(Set(incidents.map(\.fingerprint)).count == 4)
        }

        /// The selector guard's per-thread memo of the last (class, selector) pair its dispatch
        /// table answers: a legal call in between never leaves an unknown selector unmarked.
        @Test func performSelectorAfterALegalCallStillAnswersUnknownSelectors() throws {
            let incidents = try collectIncidents {
                try withGuards {
                    #expect(cs_test_perform_after_memo() == 0x7f)
                    CrashShieldSDK.flushIncidents()
                }
            }
            #expect(incidents.filter { $0.guardID == .selector }.count == 3)
        }

        @Test func legalPerformSelectorResultsAreTheSameWithAndWithoutGuards() throws {
            CrashShieldSDK._resetForTesting()
            let unguarded = cs_test_perform_legal_only()
            let guarded = try withGuards { cs_test_perform_legal_only() }
            #expect(unguarded == 0x51)
            #expect(guarded == unguarded)
        }
    }
}
