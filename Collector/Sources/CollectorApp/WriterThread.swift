import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A serial `TaskExecutor` that runs its jobs on one thread of its own, for the ingest writer.
///
/// Why: SQLite runs a group commit synchronously on the thread that calls it. On Swift's global
/// pool, which has one thread per core (2 on the machine the benchmark runs on), a commit would hold
/// one of those threads for its whole duration, leaving the request handlers a single thread while
/// every client waits for that commit. On a thread of its own the commit competes for a core like
/// any other thread, and the pool keeps all its threads for the handlers.
///
/// Contract: jobs run one at a time, in the order they were enqueued. `stop()` ends the thread
/// once the jobs enqueued before it have run; jobs enqueued after `stop()` run on Swift's global
/// concurrent executor instead, so no job is ever dropped. With `lowPriority` the thread runs
/// below the default priority (`ThreadPriority`): the page threads of `SQLStore`'s page pool.
// @unchecked Sendable: mutable state in `Mutex`es; `wake` is an NSCondition (thread-safe); `name` immutable
final class WriterThreadExecutor: TaskExecutor, @unchecked Sendable {
    private struct State {
        var jobs: [UnownedJob] = []
        var stopping = false
        var stopped = false
    }
    private let state = Mutex(State())
    /// The executor's thread, set by that thread before it runs any job.
    private let thread = Mutex<pthread_t?>(nil)
    private let wake = NSCondition()
    private let name: String

    init(name: String, lowPriority: Bool = false) {
        self.name = name
        Thread { [self] in
            // Named from inside: Foundation on Linux does not apply a name set before `start`.
            Thread.current.name = name
            if lowPriority { ThreadPriority.lowerCurrentThreadForReads() }
            thread.withLock { $0 = pthread_self() }
            run()
            // A pthread_t is reused by later threads: an ended thread is nobody's.
            thread.withLock { $0 = nil }
        }.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let accepted = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.jobs.append(unowned)
            return true
        }
        if accepted {
            wake.lock()
            wake.signal()
            wake.unlock()
        } else {
            globalConcurrentExecutor.enqueue(unowned)
        }
    }

    /// True on the executor's own thread while it runs (false everywhere once it has ended).
    var isCurrentThread: Bool {
        guard let own = thread.withLock({ $0 }) else { return false }
        return pthread_equal(own, pthread_self()) != 0
    }

    /// Ends the thread after the jobs already enqueued; idempotent.
    func stop() {
        state.withLock { $0.stopping = true }
        wake.lock()
        wake.signal()
        wake.unlock()
    }

    private func run() {
        while true {
            wake.lock()
            var batch: [UnownedJob] = []
            var finished = false
            while true {
                (batch, finished) = state.withLock { state -> ([UnownedJob], Bool) in
                    let jobs = state.jobs
                    state.jobs.removeAll(keepingCapacity: true)
                    if jobs.isEmpty && state.stopping { state.stopped = true }
                    return (jobs, state.stopped)
                }
                if !batch.isEmpty || finished { break }
                wake.wait()
            }
            wake.unlock()
            if finished { return }
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }
}
