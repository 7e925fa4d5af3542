import Synchronization

/// A mutual-exclusion lock for async code: `withLock` runs its body with no other body of the
/// same lock running, across suspension points (unlike an actor, which is re-entrant at every
/// `await`). Waiters are served first come, first served.
final class AsyncLock: Sendable {
    private struct State {
        var locked = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    init() {}

    func withLock<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await lock()
        defer { unlock() }
        return try await body()
    }

    private func lock() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let acquired = state.withLock { state -> Bool in
                if !state.locked {
                    state.locked = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if acquired { continuation.resume() }
        }
    }

    private func unlock() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.locked = false
                return nil
            }
            return state.waiters.removeFirst()  // ownership passes to the next waiter
        }
        next?.resume()
    }
}
