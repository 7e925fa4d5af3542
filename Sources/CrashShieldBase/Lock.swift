#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The SDK's one lock: a pthread mutex and the value it protects. `Value` is read and written only
/// inside `withLock`; `Locked()` (a `Void` value) is a plain lock for state kept elsewhere.
///
/// A pthread mutex, not `Mutex` (Synchronization needs macOS 15 / iOS 18; the package declares
/// macOS 13 / iOS 16), and not `NSLock`, so that it can be recursive (`recursive: true`) and be
/// re-created in the child of a `fork` (`reinitializeInForkedChild()`), which an NSLock cannot.
/// Not async-signal-safe: never take it in a signal handler.
package final class Locked<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is touched only while `mutex` is held (withLock), and the
    // mutex pointer itself never changes after init.
    // Visible to inlined code only: the other modules call withLock/lock/unlock inlined and
    // specialised (the lock is taken on paths such as incident delivery and scope updates).
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    /// A lock protecting `value`. `recursive`: the thread holding it may take it again (each
    /// `lock()` needs its `unlock()`); `withLock` must not be nested then (its `inout` access to
    /// the value would overlap), so a recursive lock is used through `lock()`/`unlock()`.
    package init(_ value: Value, recursive: Bool = false) {
        self.value = value
        mutex = .allocate(capacity: 1)
        if recursive {
            var attributes = pthread_mutexattr_t()
            pthread_mutexattr_init(&attributes)
            pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE))
            pthread_mutex_init(mutex, &attributes)
            pthread_mutexattr_destroy(&attributes)
        } else {
            pthread_mutex_init(mutex, nil)
        }
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock.
    @inlinable
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Takes the lock, for a critical section that `withLock` cannot express (one that ends in a
    /// different scope, a fork handler's prepare step). Every call needs its `unlock()`.
    @inlinable
    package func lock() { pthread_mutex_lock(mutex) }

    /// Releases the lock taken by `lock()` on this thread.
    @inlinable
    package func unlock() { pthread_mutex_unlock(mutex) }

    /// In the child of a `fork` whose prepare handler took this lock (the only thread left held
    /// it): re-creates the mutex unlocked, in place. Non-recursive locks only.
    package func reinitializeInForkedChild() { pthread_mutex_init(mutex, nil) }
}

extension Locked where Value == Void {
    /// A lock with no value of its own: it protects state that its owner keeps elsewhere.
    package convenience init(recursive: Bool = false) { self.init((), recursive: recursive) }
}
