import CrashShieldProtocol
import CrashShield
import Foundation

/// Misuse scenarios for guards implemented in Swift (no Objective-C hooks), run by `shield demo`
/// next to the Objective-C table. Unguarded means the guard's policy is off: plain Swift
/// behaviour, where a thrown Swift error is reported as `exception:<type name>`.
struct SwiftScenario: Sendable {
    let name: String
    let guardID: GuardID
    /// Performs the misuse; returns true when the value it got back is the neutralised one.
    let run: @Sendable () throws -> Bool
}

private struct DemoProfile: Decodable {
    let id: Int
    @Lenient var name: String
    @Lenient var age: Int
    @Lenient var tags: [String]
}

private func decodeProfile(_ json: String) throws -> DemoProfile {
    try JSONDecoder().decode(DemoProfile.self, from: Data(json.utf8))
}

enum SwiftScenarios {
    static let all: [SwiftScenario] = [
        SwiftScenario(name: "decoding.lenient.null", guardID: .decoding) {
            try decodeProfile(#"{"id": 1, "name": null, "age": 3, "tags": []}"#).name == ""
        },
        SwiftScenario(name: "decoding.lenient.typeMismatch", guardID: .decoding) {
            try decodeProfile(#"{"id": 1, "name": "a", "age": "three", "tags": []}"#).age == 0
        },
        SwiftScenario(name: "decoding.lenient.missingKey", guardID: .decoding) {
            try decodeProfile(#"{"id": 1, "name": "a", "age": 3}"#).tags == []
        },
    ]

    static func named(_ name: String) -> SwiftScenario? { all.first { $0.name == name } }

    /// Same protocol as the Objective-C scenarios: prints `RESULT <outcome> <incidents>`.
    static func runChild(_ scenario: SwiftScenario, guarded: Bool) -> Int32 {
        do {
            if guarded { try CrashShieldSDK.start(.guardsOnly) } else { try CrashShieldSDK.setPolicy(.off, for: scenario.guardID) }
        } catch {
            print("RESULT start-failed:\(error) 0")
            return 1
        }
        let text: String
        do {
            text = try scenario.run() ? "ok" : "unexpected-result"
        } catch {
            text = "exception:\(type(of: error))"
        }
        CrashShieldSDK.flushIncidents()
        print("RESULT \(text) \(CrashShieldSDK.recordedCount(for: scenario.guardID))")
        fflush(nil)
        return 0
    }
}
