import Foundation

/// A value behind a lock.
package final class LockedBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    package init(_ value: Value) { self.value = value }
    package func get() -> Value { lock.lock(); defer { lock.unlock() }; return value }
    package func set(_ newValue: Value) { lock.lock(); value = newValue; lock.unlock() }
    package func update(_ body: (inout Value) -> Void) { lock.lock(); body(&value); lock.unlock() }
}
