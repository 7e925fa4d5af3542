import Foundation
import Testing
@testable import CollectorApp

/// The ingest writer's executor: its jobs run on its own thread, one at a time and in order, and
/// after `stop()` nothing enqueued is lost.
@Suite struct WriterThreadExecutorTests {
    @Test func tasksPreferringItRunOnItsThreadInOrder() async throws {
        let executor = WriterThreadExecutor(name: "writer-test")
        defer { executor.stop() }
        let onItsThread = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<20 {
                group.addTask(executorPreference: executor) { executor.isCurrentThread }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(onItsThread.count == 20)
        #expect(onItsThread.allSatisfy { $0 }, "\(onItsThread)")

        // A serial executor: the jobs of tasks started in order run in that order, never overlapping.
        final class Log: @unchecked Sendable {
            let lock = NSLock()
            var entries: [Int] = []
            var running = 0
            var overlapped = false
        }
        let log = Log()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<50 {
                group.addTask(executorPreference: executor) {
                    log.lock.withLock {
                        log.running += 1
                        if log.running > 1 { log.overlapped = true }
                        log.entries.append(index)
                    }
                    usleep(200)
                    log.lock.withLock { log.running -= 1 }
                }
            }
        }
        #expect(!log.overlapped)
        #expect(log.entries.count == 50)
    }

    @Test func afterStopJobsStillRunOnTheGlobalExecutor() async throws {
        let executor = WriterThreadExecutor(name: "writer-stopped")
        executor.stop()
        // Give the thread time to end, so the job below is enqueued after it is gone.
        try await Task.sleep(for: .milliseconds(50))
        let onItsThread = await Task(executorPreference: executor) { executor.isCurrentThread }.value
        #expect(!onItsThread)
    }
}
