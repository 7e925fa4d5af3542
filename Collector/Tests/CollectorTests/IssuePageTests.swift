@testable import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

/// The issue page's reads: an issue's event with its neighbours.
@Suite("Issue page")
struct IssuePageTests {
    /// Neighbours follow received time, then storage order, also among events received at the
    /// same instant; an event of another issue is not found.
    @Test func neighboursFollowReceivedTimeThenStorageOrder() async throws {
        try await TestDatabase.withStore { store in
            let project = try await store.createProject(name: "p")
            let base = Date(timeIntervalSince1970: 1_800_000_000.25)
            // Stored in this order; received: t+2, t, t+1, t+1, t+1.
            let offsets: [Double] = [2, 0, 1, 1, 1]
            let ids = offsets.map { _ in Fixtures.eventID() }
            for (id, offset) in zip(ids, offsets) {
                let json = Fixtures.exceptionEvent(id: id, fingerprint: ["same"])
                let record = try EventRecord.extract(projectID: project.id, payload: json.jsonData(), json: json, fallbackEventID: nil,
                                                     received: base.addingTimeInterval(offset))
                _ = try await store.insertEvent(record)
            }
            let issue = try #require(try await store.issues(projectID: project.id).first)
            // Newest first: t+2; then the three at t+1, latest stored first; then t.
            let expected = [ids[0], ids[4], ids[3], ids[2], ids[1]]
            var walked: [String] = []
            var position = try await store.issueEvent(issueID: issue.id, projectID: project.id, eventID: nil)
            while let current = position {
                walked.append(current.event.summary.eventID)
                #expect(current.newest == (walked.count == 1 ? nil : expected[0]))
                #expect(current.oldest == (walked.count == expected.count ? nil : expected.last))
                guard let older = current.older else { break }
                position = try await store.issueEvent(issueID: issue.id, projectID: project.id, eventID: older)
                #expect(position?.newer == current.event.summary.eventID)
            }
            #expect(walked == expected)
            #expect(try await store.issueEvent(issueID: issue.id + 1, projectID: project.id, eventID: ids[0]) == nil)
            #expect(try await store.issueEvent(issueID: issue.id + 1, projectID: project.id, eventID: nil) == nil)
        }
    }
}
