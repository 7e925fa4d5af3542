@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

/// Ingest reads an event's facts straight from its bytes (`EventFacts.read`) instead of building
/// the whole tree (`StrictJSON.parse`) and reading it (`EventFacts(_:)`). Both must accept and
/// refuse the same documents and agree on every fact, for any input: these tests compare them on
/// generated events where every path ingest reads gets values of every kind (also repeated keys,
/// escaped keys and deep nesting), and on random mutations of those.
@Suite("Collector event facts")
struct EventFactsTests {
    /// The keys ingest reads at each level; `element` is what an array there holds.
    final class Shape: Sendable {
        let members: [String: Shape]
        let element: Shape?
        init(_ members: [String: Shape] = [:], element: Shape? = nil) {
            self.members = members
            self.element = element
        }
        static let leaf = Shape()
    }

    static let frame = Shape(["function": .leaf, "raw_function": .leaf, "instruction_addr": .leaf, "image_addr": .leaf, "package": .leaf,
                              "module": .leaf, "in_app": .leaf])
    static let exception = Shape([
        "type": .leaf, "value": .leaf,
        "mechanism": Shape(["type": .leaf, "handled": .leaf, "synthetic": .leaf, "data": Shape(["guard": .leaf])]),
        "stacktrace": Shape(["frames": Shape(element: frame)]),
    ])
    static let event = Shape([
        "event_id": .leaf, "level": .leaf, "platform": .leaf, "release": .leaf, "environment": .leaf, "timestamp": .leaf,
        "culprit": .leaf, "transaction": .leaf, "fingerprint": Shape(element: .leaf),
        "user": Shape(["id": .leaf, "email": .leaf, "username": .leaf, "ip_address": .leaf]),
        // Launch tags (`launch…`, `repair…`) too, and the list form (`[[key, value], ...]`).
        "tags": Shape(["crashshield.guard": .leaf, "guard": .leaf, "launch.phase": .leaf, "launch.consecutive_crashes": .leaf,
                       "launch": .leaf, "repair_step": .leaf, "lunch": .leaf, "relaunch": .leaf], element: Shape(element: .leaf)),
        "exception": Shape(["values": Shape(element: exception)], element: exception),
        "debug_meta": Shape(["images": Shape(element: Shape(["image_addr": .leaf, "image_size": .leaf, "code_file": .leaf]))]),
        "logentry": Shape(["formatted": .leaf, "message": .leaf]),
        "message": Shape(["formatted": .leaf, "message": .leaf]),
    ])

    struct Writer {
        var random: SeededGenerator
        var text = ""

        mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &random) < percent }
        mutating func space() { if chance(10) { text += [" ", "\n", "\t", "\r\n "].randomElement(using: &random)! } }

        mutating func key(_ name: String) {
            // Sometimes the same key written with an escape (the tree unescapes it).
            if chance(5), let first = name.unicodeScalars.first {
                text += "\"\\u" + String(format: "%04x", first.value) + String(name.unicodeScalars.dropFirst()) + "\""
            } else {
                text += "\"" + name + "\""
            }
        }

        mutating func scalar() {
            let choices = ["\"text\"", "\"\"", "\"0x5555000010\"", "\"App.Module.function\"", "\"<unknown>\"", "\"{{ default }}\"",
                           "\"caf\\u00e9 \\ud83d\\udca5\"", "\"naïve\"", "\"warning\"", "\"crashshield.guard\"", "\"launch.phase\"", "\"2026-11-23T06:00:00Z\"",
                           "0", "-1", "42", "93824992235576", "1.5", "1e3", "12345678901234567890", "true", "false", "null"]
            text += choices.randomElement(using: &random)!
        }

        mutating func value(_ shape: Shape, depth: Int) {
            space()
            let roll = Int.random(in: 0..<100, using: &random)
            if depth > 6 || (shape.members.isEmpty && shape.element == nil && roll < 80) {
                scalar()
            } else if !shape.members.isEmpty && roll < 75 {
                object(shape, depth: depth)
            } else if roll < 90 {
                text += "["
                let count = Int.random(in: 0..<4, using: &random)
                for index in 0..<count {
                    if index > 0 { text += "," }
                    value(shape.element ?? shape, depth: depth + 1)
                }
                text += "]"
            } else if roll < 95 {
                object(Shape(), depth: depth)
            } else {
                scalar()
            }
            space()
        }

        mutating func object(_ shape: Shape, depth: Int) {
            text += "{"
            var names = Array(shape.members.keys).filter { _ in chance(60) }
            names += ["contexts", "extra", "breadcrumbs", "id", "x"].filter { _ in chance(15) }
            if let repeated = names.randomElement(using: &random), chance(15) { names.append(repeated) }  // last value counts
            names.shuffle(using: &random)
            for (index, name) in names.enumerated() {
                if index > 0 { text += "," }
                space()
                key(name)
                space()
                text += ":"
                value(shape.members[name] ?? Shape(["x": .leaf]), depth: depth + 1)
            }
            text += "}"
        }
    }

    /// Both readers on `bytes`: the same acceptance, and the same facts when accepted.
    static func compare(_ bytes: [UInt8], _ label: @autoclosure () -> String) {
        let data = Data(bytes)
        let tree = try? StrictJSON.parse(data, rules: .lastKeyWins)
        let direct = Result { () throws(StrictJSON.Failure) -> EventFacts? in try EventFacts.read(data) }
        switch (tree, direct) {
        case (nil, .failure):
            break
        case (let tree?, .success(let facts)):
            if case .object = tree {
                #expect(facts == EventFacts(tree), "\(label())")
            } else {
                #expect(facts == nil, "\(label())")
            }
        default:
            Issue.record("tree accepted: \(tree != nil), direct accepted: \((try? direct.get()) != nil): \(label())")
        }
    }

    @Test(arguments: [UInt64(11), 12, 13, 14])
    func generatedEventsGiveTheSameFactsBothWays(seed: UInt64) {
        var writer = Writer(random: SeededGenerator(state: seed))
        var objects = 0
        for round in 0..<400 {
            writer.text = ""
            writer.object(Self.event, depth: 0)
            let bytes = Array(writer.text.utf8)
            #expect((try? StrictJSON.parse(Data(bytes), rules: .lastKeyWins)) != nil, "generated text is JSON: \(writer.text)")
            Self.compare(bytes, "seed \(seed) round \(round): \(writer.text)")
            if case .object? = try? StrictJSON.parse(Data(bytes), rules: .lastKeyWins) { objects += 1 }
            // Mutations: most make the text invalid, some change what is read.
            var mutated = bytes
            for _ in 0..<Int.random(in: 1...3, using: &writer.random) {
                guard !mutated.isEmpty else { break }
                let position = Int.random(in: 0..<mutated.count, using: &writer.random)
                switch Int.random(in: 0..<5, using: &writer.random) {
                case 0: mutated[position] = UInt8.random(in: 0...255, using: &writer.random)
                case 1: mutated.insert(Array("{}[],:\"\\ 0e-.tfnu".utf8).randomElement(using: &writer.random)!, at: position)
                case 2: mutated.remove(at: position)
                case 3: mutated = Array(mutated.prefix(position))
                default: mutated[position] = [0xC3, 0xFF, 0x80, 0xED, 0x00, 0x22].randomElement(using: &writer.random)!
                }
            }
            Self.compare(mutated, "seed \(seed) round \(round) mutated: \(String(decoding: mutated, as: UTF8.self))")
        }
        #expect(objects == 400)
    }

    @Test func nestingLimitsAndDocumentsThatAreNotObjectsAgree() {
        for depth in [254, 255, 256, 257] {
            let nested = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            Self.compare(Array(("{\"extra\":" + nested + "}").utf8), "extra nested \(depth)")
            Self.compare(Array(("{\"exception\":{\"values\":[{\"stacktrace\":{\"frames\":[{\"vars\":" + nested + "}]}}]}}").utf8),
                         "frame nested \(depth)")
            Self.compare(Array(nested.utf8), "top-level array nested \(depth)")
        }
        for text in ["", " ", "[]", "\"event\"", "12", "null", "{}", "{} {}", "{\"a\":1,}", "{\"event_id\":\"\\ud800\"}",
                     "{\"message\":\"a\u{0}b\"}", "{\"level\":1e999}", "{\"x\":1e999}", "{\"x\":-}", "{\"x\":01}", "\u{FEFF}{}"] {
            Self.compare(Array(text.utf8), text)
        }
        Self.compare([0x7B, 0x22, 0x78, 0x22, 0x3A, 0x22, 0xC3, 0x28, 0x22, 0x7D], "invalid UTF-8 in a skipped string")
        Self.compare([0x7B, 0x22, 0xC3, 0x28, 0x22, 0x3A, 0x31, 0x7D], "invalid UTF-8 in a key")
    }
}
