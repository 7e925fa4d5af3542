import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing
@testable import CrashShield

// Models at file scope so their names are stable ("LenientProfile", not a local context).

struct PlainProfile: Codable, Equatable {
    let id: Int
    var name: String
    var age: Int
    var score: Double
    var active: Bool
    var tags: [String]
    var nickname: String?
}

struct LenientProfile: Codable, Equatable {
    let id: Int
    @Lenient var name: String
    @Lenient var age: Int
    @Lenient var score: Double
    @Lenient var active: Bool
    @Lenient var tags: [String]
    @Lenient var nickname: String?
}

enum AccountStatus: String, Codable, Equatable {
    case active, suspended, unknown
}

enum UnknownAccountStatus: LenientDefaultProvider {
    static let defaultValue = AccountStatus.unknown
}

enum DefaultsToTrue: LenientDefaultProvider {
    static let defaultValue = true
}

struct LenientAccount: Codable, Equatable {
    @LenientWith<UnknownAccountStatus> var status: AccountStatus
    @LenientWith<DefaultsToTrue> var notifications: Bool
}

struct LenientStreet: Codable, Equatable {
    @Lenient var street: String
    let number: Int
}

struct LenientCustomer: Codable, Equatable {
    let address: LenientStreet
}

struct LenientItem: Codable, Equatable {
    @Lenient var title: String
}

struct LenientOrder: Codable, Equatable {
    let customer: LenientCustomer
    let items: [LenientItem]
}

private func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
    try JSONDecoder().decode(type, from: Data(json.utf8))
}

extension RuntimeTests {
    @Suite struct LenientDecoding {
        static let wellFormed = """
            {"id": 7, "name": "Ada", "age": 36, "score": 9.5, "active": true, "tags": ["a", "b"], "nickname": "countess"}
            """

        @Test func wellFormedJSONDecodesExactlyAsPlainCodable() throws {
            try withGuards {
                let incidents = try collectIncidents {
                    let plain = try decode(PlainProfile.self, Self.wellFormed)
                    let lenient = try decode(LenientProfile.self, Self.wellFormed)
                    #expect(lenient.id == plain.id)
                    #expect(lenient.name == plain.name)
                    #expect(lenient.age == plain.age)
                    #expect(lenient.score == plain.score)
                    #expect(lenient.active == plain.active)
                    #expect(lenient.tags == plain.tags)
                    #expect(lenient.nickname == plain.nickname)
                    // Encoding is the plain shape too.
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = .sortedKeys
                    #expect(try encoder.encode(lenient) == encoder.encode(plain))
                }
                #expect(incidents.isEmpty)
                #expect(CrashShieldSDK.recordedCount(for: .decoding) == 0)
            }
        }

        @Test func encodingMatchesPlainCodableForNilOptionals() throws {
            let json = #"{"id": 2, "name": "b", "age": 3, "score": 1.5, "active": false, "tags": []}"#
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            let plain = try encoder.encode(try decode(PlainProfile.self, json))
            let lenient = try encoder.encode(try decode(LenientProfile.self, json))
            #expect(String(decoding: lenient, as: UTF8.self) == String(decoding: plain, as: UTF8.self))
            #expect(!String(decoding: lenient, as: UTF8.self).contains("nickname"))
        }

        @Test func nullsMissingKeysAndWrongTypesBecomeDefaultsWithOneIncidentPerField() throws {
            let json = """
                {"id": 7, "name": null, "age": "thirty", "score": true, "tags": null}
                """
            try withGuards {
                var profile: LenientProfile?
                let incidents = try collectIncidents { profile = try decode(LenientProfile.self, json) }
                let decoded = try #require(profile)
                #expect(decoded.id == 7)
                #expect(decoded.name == "")
                #expect(decoded.age == 0)
                #expect(decoded.score == 0)
                #expect(decoded.active == false)
                #expect(decoded.tags == [])
                #expect(decoded.nickname == nil)  // missing optional: legal, no incident

                #expect(incidents.count == 5)
                #expect(incidents.allSatisfy { $0.guardID == .decoding && $0.className == "LenientProfile" })
                #expect(incidents.allSatisfy { $0.policy == .neutralize && !$0.isClassMethod && $0.count == 1 })
                let reasons = Dictionary(uniqueKeysWithValues: incidents.map { ($0.selector, $0.reason) })
                #expect(
                    reasons == [
                        "name": "null where String expected: default used",
                        "age": "wrong type where an integer expected: default used",
                        "score": "wrong type where a number expected: default used",
                        "active": "missing key where Bool expected: default used",
                        "tags": "null where an array expected: default used",
                    ])
                #expect(CrashShieldSDK.recordedCount(for: .decoding) == 5)
            }
        }

        @Test func strictFieldsStillFailAsCodableDoes() throws {
            try withGuards {
                #expect {
                    try decode(LenientProfile.self, #"{"id": null, "name": "x"}"#)
                } throws: { error in
                    guard case DecodingError.valueNotFound = error else { return false }
                    return true
                }
                #expect {
                    try decode(LenientProfile.self, #"{"id": "seven"}"#)
                } throws: { error in
                    guard case DecodingError.typeMismatch = error else { return false }
                    return true
                }
                #expect {
                    try decode(LenientProfile.self, #"{"name": "x"}"#)
                } throws: { error in
                    guard case DecodingError.keyNotFound(let key, _) = error else { return false }
                    return key.stringValue == "id"
                }
            }
        }

        @Test func nestedFieldsAreNamedByTheirCodingPath() throws {
            let json = """
                {"customer": {"address": {"street": null, "number": 4}},
                 "items": [{"title": "ok"}, {"title": 12}, {}]}
                """
            try withGuards {
                var order: LenientOrder?
                let incidents = try collectIncidents { order = try decode(LenientOrder.self, json) }
                let decoded = try #require(order)
                #expect(decoded.customer.address.street == "")
                #expect(decoded.customer.address.number == 4)
                #expect(decoded.items.map(\.title) == ["ok", "", ""])
                let found = Set(incidents.map { "\($0.className) \($0.selector) \($0.reason)" })
                #expect(
                    found == [
                        "LenientStreet customer.address.street null where String expected: default used",
                        "LenientItem items[1].title wrong type where String expected: default used",
                        "LenientItem items[2].title missing key where String expected: default used",
                    ])
            }
        }

        @Test func optionalFieldsAcceptNullButNotWrongTypes() throws {
            try withGuards {
                let incidents = try collectIncidents {
                    let null = try decode(LenientProfile.self, #"{"id": 1, "name": "a", "age": 1, "score": 1, "active": true, "tags": [], "nickname": null}"#)
                    #expect(null.nickname == nil)
                    let wrong = try decode(LenientProfile.self, #"{"id": 1, "name": "a", "age": 1, "score": 1, "active": true, "tags": [], "nickname": 5}"#)
                    #expect(wrong.nickname == nil)
                }
                #expect(incidents.map(\.selector) == ["nickname"])
                #expect(incidents.first?.reason == "wrong type where String expected: default used")
            }
        }

        @Test func aProviderDeclaresTheDefault() throws {
            try withGuards {
                var account: LenientAccount?
                let incidents = try collectIncidents {
                    account = try decode(LenientAccount.self, #"{"status": "banned"}"#)
                    let good = try decode(LenientAccount.self, #"{"status": "suspended", "notifications": false}"#)
                    #expect(good == LenientAccount(status: .suspended, notifications: false))
                }
                #expect(account == LenientAccount(status: .unknown, notifications: true))
                let reasons = Dictionary(uniqueKeysWithValues: incidents.map { ($0.selector, $0.reason) })
                #expect(
                    reasons == [
                        "status": "invalid value where a value expected: default used",
                        "notifications": "missing key where Bool expected: default used",
                    ])
                #expect(incidents.allSatisfy { $0.className == "LenientAccount" })
            }
        }

        @Test func reportOnlyRecordsThenThrowsWhatCodableThrows() throws {
            var options = CrashShieldOptions()
            options.policies[.decoding] = .reportOnly
            try withGuards(options) {
                #expect(CrashShieldSDK.status.first { $0.id == .decoding }?.policy == .reportOnly)
                let incidents = collectIncidents {
                    #expect {
                        try decode(LenientProfile.self, #"{"id": 1, "name": null}"#)
                    } throws: { error in
                        guard case DecodingError.valueNotFound = error else { return false }
                        return true
                    }
                }
                #expect(incidents.map(\.selector) == ["name"])
                #expect(incidents.first?.policy == .reportOnly)
            }
        }

        @Test func offIsPlainCodableWithoutIncidents() throws {
            try withGuards {
                try CrashShieldSDK.setPolicy(.off, for: .decoding)
                #expect(CrashShieldSDK.status.first { $0.id == .decoding }?.policy == .off)
                #expect(throws: DecodingError.self) {
                    try decode(LenientProfile.self, #"{"id": 1, "name": null}"#)
                }
                #expect(CrashShieldSDK.recordedCount(for: .decoding) == 0)
                try CrashShieldSDK.setPolicy(.neutralize, for: .decoding)
                let profile = try decode(LenientProfile.self, #"{"id": 1}"#)
                #expect(profile.name == "")
            }
        }

        @Test func concurrentDecodingRecordsEveryField() async throws {
            CrashShieldSDK._resetForTesting()
            try CrashShieldSDK.start(.guardsOnly)
            defer { CrashShieldSDK._resetForTesting() }
            let json = Data(#"{"id": 3, "name": null, "age": 1, "score": 2, "active": true, "tags": 4}"#.utf8)
            let decoded = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        var ok = true
                        for _ in 0..<200 {
                            let profile = try? JSONDecoder().decode(LenientProfile.self, from: json)
                            ok = ok && profile?.name == "" && profile?.tags == [] && profile?.id == 3
                        }
                        return ok
                    }
                }
                var all = true
                for await ok in group { all = all && ok }
                return all
            }
            #expect(decoded)
            #expect(CrashShieldSDK.recordedCount(for: .decoding) == 8 * 200 * 2)
        }

        @Test func codingPathRendering() {
            struct Key: CodingKey {
                var stringValue: String
                var intValue: Int?
                init(stringValue: String) { self.stringValue = stringValue }
                init(intValue: Int) {
                    self.stringValue = "Index \(intValue)"
                    self.intValue = intValue
                }
            }
            let path: [any CodingKey] = [Key(stringValue: "order"), Key(stringValue: "items"), Key(intValue: 2),
                                         Key(stringValue: "name")]
            #expect(LenientDecodingEngine.pathString(path) == "order.items[2].name")
        }
    }
}
