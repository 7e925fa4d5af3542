import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How much CPU the dashboard's pages and management API reads may take while ingest runs
/// (the bound: ingest with a dashboard user reloading the heaviest page loses ≤ 10 % of its
/// rate).
///
/// Why: the page threads run at nice 10 (`ThreadPriority`), which keeps them off a core an ingest
/// thread is waiting for only when both run on that core. On a machine of 2 cores a page thread
/// kept busy (a user reloading back to back) holds one core, and the kernel wakes the ingest
/// threads (short bursts) on the other, where they queue behind each other: measured, the page
/// thread got 84–94 % of a core at nice 10 while the ingest writer, at nice 0, waited for a core
/// 30 % of its time.
///
/// What: while ingest has committed within the last second (at a page's start or end), each
/// page's CPU time (its thread's) is charged, and the next page starts no earlier than
/// `pauseFactor` times that CPU time after the page ended: pages together take at most
/// 1 / (1 + `pauseFactor`) of a core then, a fifth. A user who reads a page and then clicks is
/// not delayed (the pause is over before the click); one who reloads back to back waits (a 75 ms
/// page then comes every 0.4–0.5 s). With ingest idle, pages are not paused. Measured on the
/// benchmark's quiet 2-core machine (8 clients, a user reloading the prevented-crash page): ingest
/// lost 26–39 % without a pause (6 runs), 14 % and 29 % with `pauseFactor` 2 on the quietest
/// runs, −14 to +4.5 % with 4 (5 runs).
final class PageBudget: Sendable {
    /// Pause after a page, per unit of its CPU time, while ingest runs.
    static let pauseFactor: UInt64 = 4
    /// How long after a commit ingest counts as running.
    static let ingestWindowNanoseconds: UInt64 = 1_000_000_000

    private let ingestActiveUntil = Atomic<UInt64>(0)
    private let nextPageAt = Atomic<UInt64>(0)
    private let charged = Atomic<UInt64>(0)

    /// Records an ingest commit.
    func ingestCommitted() {
        ingestActiveUntil.store(Self.monotonicNanoseconds() + Self.ingestWindowNanoseconds, ordering: .relaxed)
    }

    /// Waits until the next page may start.
    func waitTurn() async {
        let now = Self.monotonicNanoseconds()
        let next = nextPageAt.load(ordering: .relaxed)
        guard next > now else { return }
        try? await Task.sleep(for: .nanoseconds(Int64(next - now)))
    }

    /// Runs `body` (on the page's thread), charging its thread CPU time when ingest ran at the
    /// page's start or end. (A page that started while ingest ran is charged however long it took:
    /// a slow page on a loaded machine is the case the pause is for.)
    func measure<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        let ranAtStart = ingestRunning
        let start = Self.threadCPUNanoseconds()
        defer { charge(Self.threadCPUNanoseconds() &- start, ingestRanAtStart: ranAtStart) }
        return try await body()
    }

    /// Charges `cpu` nanoseconds of page work: while ingest runs (or ran when the page started:
    /// `ingestRanAtStart`), the next page waits `pauseFactor` times as long from now (or from the
    /// end of the pause already due).
    func charge(_ cpu: UInt64, ingestRanAtStart: Bool = false) {
        let now = Self.monotonicNanoseconds()
        guard ingestRanAtStart || now < ingestActiveUntil.load(ordering: .relaxed), cpu > 0, cpu < 60_000_000_000 else { return }
        charged.add(cpu, ordering: .relaxed)
        var current = nextPageAt.load(ordering: .relaxed)
        while true {
            let next = max(current, now) + cpu * Self.pauseFactor
            let (exchanged, original) = nextPageAt.compareExchange(expected: current, desired: next, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    /// Whether ingest counts as running (it committed within the last second), for tests.
    var ingestRunning: Bool { Self.monotonicNanoseconds() < ingestActiveUntil.load(ordering: .relaxed) }

    /// The page CPU time charged so far, in nanoseconds, for tests.
    var chargedNanoseconds: UInt64 { charged.load(ordering: .relaxed) }

    /// The nanoseconds until the next page may start (0: now), for tests.
    var pauseRemainingNanoseconds: UInt64 {
        let now = Self.monotonicNanoseconds(), next = nextPageAt.load(ordering: .relaxed)
        return next > now ? next - now : 0
    }

    static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    static func threadCPUNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
