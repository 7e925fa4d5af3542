@testable import CollectorApp
import Foundation
import Testing

/// While ingest runs, pages pause in proportion to their CPU time (`PageBudget`), so a user
/// reloading back to back takes at most a fifth of a core from ingest; with ingest idle they
/// never pause.
@Suite("Page budget")
struct PageBudgetTests {
    static func spin(milliseconds: UInt64) {
        let end = PageBudget.threadCPUNanoseconds() + milliseconds * 1_000_000
        var x: UInt64 = 0
        while PageBudget.threadCPUNanoseconds() < end { x &+= 1 }
        _ = x
    }

    @Test func pagesPauseOnlyWhileIngestRuns() async throws {
        let budget = PageBudget()
        budget.charge(50_000_000)
        #expect(budget.pauseRemainingNanoseconds == 0 && budget.chargedNanoseconds == 0, "no ingest: no pause")
        budget.ingestCommitted()
        #expect(budget.ingestRunning)
        budget.charge(50_000_000)
        #expect(budget.chargedNanoseconds == 50_000_000)
        let pause = budget.pauseRemainingNanoseconds
        #expect(pause > 0 && pause <= 50_000_000 * PageBudget.pauseFactor, "\(pause)")
        let started = ContinuousClock.now
        await budget.waitTurn()
        #expect(ContinuousClock.now - started >= .nanoseconds(Int64(pause) - 1_000_000))
        #expect(budget.pauseRemainingNanoseconds == 0)
    }

    /// The charge is decided at the page's start or end: a page that began while ingest ran is
    /// charged even after the ingest window closed; one that began and ended outside it is not.
    @Test func aPageThatBeganWhileIngestRanIsCharged() {
        let budget = PageBudget()
        budget.charge(5_000_000, ingestRanAtStart: false)
        #expect(budget.chargedNanoseconds == 0 && budget.pauseRemainingNanoseconds == 0)
        budget.charge(5_000_000, ingestRanAtStart: true)
        #expect(budget.chargedNanoseconds == 5_000_000)
        #expect(budget.pauseRemainingNanoseconds > 0)
    }

    /// A store's ingest commits mark ingest as running, and its pages are charged their thread's
    /// CPU time while it runs, not otherwise. A page that starts while ingest runs is charged even
    /// when the ingest window closes before it ends (a page thread runs at nice 10: on a loaded
    /// machine its 30 ms of CPU can take more than the window's second).
    @Test func aStoresPagesAreChargedWhileIngestRuns() async throws {
        try await TestDatabase.withStore { store in
            let project = try await store.createProject(name: "p")
            try await store.withPageRead { Self.spin(milliseconds: 30) }
            #expect(store.pageBudget.chargedNanoseconds == 0, "no ingest yet")
            _ = try await store.insertEvent(StoreTests.record(project: project.id))
            #expect(store.pageBudget.ingestRunning, "a commit marks ingest running")
            store.pageBudget.ingestCommitted()  // the commit's second may have passed on a loaded machine
            try await store.withPageRead { Self.spin(milliseconds: 30) }
            #expect(store.pageBudget.chargedNanoseconds >= 30_000_000)
        }
    }
}
