@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

/// The ingest endpoints' answer, written without JSONEncoder: it must stay valid JSON with the
/// event id as given, whatever characters the id holds.
@Suite("Collector ingest answer")
struct IngestAnswerTests {
    @Test func answerWithoutAnEventIsAnEmptyObject() throws {
        #expect(try JSONValue.parse(Data(CollectorRoutes.ingestAnswer(eventID: nil).utf8)) == .object([:]))
    }

    @Test(arguments: ["0123456789abcdef0123456789abcdef", "", "quote\" back\\slash", "line\nfeed\r\ttab\u{01}\u{1F}", "é😀/", " ~\u{7F}"])
    func answerCarriesTheIDExactly(_ id: String) throws {
        let text = CollectorRoutes.ingestAnswer(eventID: id)
        #expect(try JSONValue.parse(Data(text.utf8)) == ["id": .string(id)])
        #expect(!text.contains("\n"))
    }
}
