import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Limits of the ingest write queue (`IngestWriter`). Every limit must be at least 1
/// (`CollectorConfiguration.validate()`); `shield-collector serve` sets the first two with
/// `--ingest-queue-requests` and `--ingest-queue-bytes`.
public struct IngestQueueLimits: Sendable, Hashable {
    /// Requests waiting to be written or being written. Default 2,000.
    public var maxDepth: Int = 2_000
    /// Event and attachment bytes held by those requests. Default 64 MiB. A single request larger
    /// than this is still admitted when the queue holds no bytes (the request size limits of
    /// `IngestLimits` bound it).
    public var maxBytes: Int = 64 * 1024 * 1024
    /// Requests committed in one transaction at most. Default 256.
    public var maxBatch: Int = 256

    public init() {}

    public init(maxDepth: Int, maxBytes: Int, maxBatch: Int = 256) {
        self.maxDepth = maxDepth
        self.maxBytes = maxBytes
        self.maxBatch = maxBatch
    }
}

/// The single writer of a store: concurrent ingest requests hand it their validated writes; it
/// commits whatever has queued up since its last commit in one transaction (group commit) and
/// answers each request only after that transaction committed, so no acknowledged write can be
/// lost to a crash of the collector.
///
/// Memory is bounded: when `limits.maxDepth` requests or `limits.maxBytes` payload bytes are
/// queued, `submit` refuses at once with `ingest.queue_full` (HTTP 503, answered with
/// `Retry-After: 1`) instead of waiting, so a burst beyond what the database absorbs cannot pile
/// up requests in memory.
///
/// When a batch fails, each of its writes is retried in a transaction of its own, so one bad
/// write fails only its own request.
public final class IngestWriter: Sendable {
    private struct Pending {
        let write: IngestWrite
        let bytes: Int
        let continuation: CheckedContinuation<IngestWriteOutcome, any Error>
    }

    private struct State {
        var queue: [Pending] = []
        var queuedBytes = 0
        /// Requests taken off the queue and being committed.
        var committing = 0
        var draining = false
    }

    private let store: any CollectorStore
    private let metrics: CollectorMetrics
    let limits: IngestQueueLimits
    private let state = Mutex(State())
    /// Nanoseconds spent in `store.commitIngest` (batches and their one-by-one retries).
    private let busyNanoseconds = Atomic<UInt64>(0)
    /// CPU and wall-clock nanoseconds of the batches that ran on one thread from start to end (a
    /// batch whose task moved to another thread, or whose reading exceeds its wall time, is not
    /// counted). Meaningful for SQLite, whose statements run on the writer's thread; PostgreSQL's
    /// blocking calls run on a thread of their own, so its batches are rarely counted. Which
    /// batches qualify is not random (a batch that suspended is more likely to have moved), so
    /// only their CPU-to-wall ratio is used, never their CPU per write.
    private let measuredCPUNanoseconds = Atomic<UInt64>(0)
    private let measuredWallNanoseconds = Atomic<UInt64>(0)

    /// Where the drain task runs: a thread of its own, so that a SQLite commit (synchronous on its
    /// caller's thread) never holds one of the global pool's threads that the request handlers use.
    private let executor: WriterThreadExecutor

    public init(store: any CollectorStore, metrics: CollectorMetrics, limits: IngestQueueLimits = IngestQueueLimits()) {
        self.store = store
        self.metrics = metrics
        self.limits = limits
        self.executor = WriterThreadExecutor(name: "ingest-writer")
    }

    deinit { executor.stop() }

    /// Requests queued or being committed.
    public var depth: Int { state.withLock { $0.queue.count + $0.committing } }

    /// Wall-clock seconds this writer has spent committing since it was created. The writer
    /// commits one batch at a time, so `busySeconds / events` bounds the events per second one
    /// store can take, whatever the number of clients.
    public var busySeconds: Double { Double(busyNanoseconds.load(ordering: .relaxed)) / 1e9 }

    /// The share of its committing time the writer's thread was on a core (0...1), over the
    /// batches whose commit ran on one thread throughout (nil before any). `busySeconds` times
    /// this share estimates the writer's CPU time; the rest it waited for a core or for I/O.
    public var cpuShareOfBusyTime: Double? {
        let wall = measuredWallNanoseconds.load(ordering: .relaxed)
        guard wall > 0 else { return nil }
        return Double(measuredCPUNanoseconds.load(ordering: .relaxed)) / Double(wall)
    }

    private static func threadCPUNanoseconds() -> UInt64 {
        var time = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time) == 0 else { return 0 }
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Stores `write` in the next group commit and returns its outcome once committed.
    /// - Throws: `ingest.queue_full` (503) when the queue is at its limits; the store's error
    ///   when the write could not be committed.
    public func submit(_ write: IngestWrite) async throws -> IngestWriteOutcome {
        let bytes = write.payloadBytes
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<IngestWriteOutcome, any Error>) in
            enum Admission { case refused, queued, queuedAndStartDrain }
            let (admission, depth) = state.withLock { state -> (Admission, Int) in
                let depth = state.queue.count + state.committing
                if depth >= limits.maxDepth || (state.queuedBytes > 0 && state.queuedBytes + bytes > limits.maxBytes) {
                    return (.refused, depth)
                }
                state.queue.append(Pending(write: write, bytes: bytes, continuation: continuation))
                state.queuedBytes += bytes
                if state.draining { return (.queued, depth + 1) }
                state.draining = true
                return (.queuedAndStartDrain, depth + 1)
            }
            metrics.setQueueDepth(depth)
            switch admission {
            case .refused:
                continuation.resume(throwing: CollectorError(
                    code: "ingest.queue_full", message: "the collector is storing as fast as it can; retry in a second", status: 503))
            case .queued:
                break
            case .queuedAndStartDrain:
                Task(executorPreference: executor) { await self.drain() }
            }
        }
    }

    /// One write of the batch being committed is answered: it leaves `depth` before its request
    /// resumes, so a request that was answered is never counted.
    private func finishOne() {
        state.withLock { $0.committing = max(0, $0.committing - 1) }
    }

    /// Commits batches until the queue is empty. Only one drain runs at a time (`draining`).
    private func drain() async {
        while true {
            let batch = state.withLock { state -> [Pending] in
                state.committing = 0
                guard !state.queue.isEmpty else {
                    state.draining = false
                    return []
                }
                let count = min(limits.maxBatch, state.queue.count)
                let batch = Array(state.queue.prefix(count))
                state.queue.removeFirst(count)
                state.queuedBytes -= batch.reduce(0) { $0 + $1.bytes }
                state.committing = count
                return batch
            }
            guard !batch.isEmpty else {
                metrics.setQueueDepth(depth)
                return
            }
            let clock = ContinuousClock()
            let started = clock.now
            let thread = pthread_self()
            let cpuStarted = Self.threadCPUNanoseconds()
            defer {
                let elapsed = (clock.now - started).components
                let wall = UInt64(elapsed.seconds) * 1_000_000_000 + UInt64(elapsed.attoseconds / 1_000_000_000)
                busyNanoseconds.add(wall, ordering: .relaxed)
                // A thread's CPU time cannot exceed the wall time between two readings; a reading
                // that does is not this batch's alone (the backend's blocking calls ran elsewhere).
                let cpu = Self.threadCPUNanoseconds()
                if pthread_equal(thread, pthread_self()) != 0, cpu >= cpuStarted, cpu - cpuStarted <= wall {
                    measuredCPUNanoseconds.add(cpu - cpuStarted, ordering: .relaxed)
                    measuredWallNanoseconds.add(wall, ordering: .relaxed)
                }
            }
            do {
                let outcomes = try await store.commitIngest(batch.map(\.write))
                metrics.committed(writes: batch.count)
                for (pending, outcome) in zip(batch, outcomes) {
                    finishOne()
                    pending.continuation.resume(returning: outcome)
                }
            } catch {
                // A failure with Retry-After (the database busy, shutting down, unreachable or
                // full) is not one write's fault: retrying each write alone would fail again.
                if batch.count == 1 || (error as? CollectorError)?.retryAfter != nil {
                    for pending in batch {
                        finishOne()
                        pending.continuation.resume(throwing: error)
                    }
                } else {
                    for pending in batch {
                        do {
                            let outcome = try await store.commitIngest([pending.write])
                            metrics.committed(writes: 1)
                            finishOne()
                            pending.continuation.resume(returning: outcome.first ?? IngestWriteOutcome(event: nil))
                        } catch {
                            finishOne()
                            pending.continuation.resume(throwing: error)
                        }
                    }
                }
            }
            metrics.setQueueDepth(depth)
        }
    }
}
