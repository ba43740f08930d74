internal import EventStore
import Foundation

/// The engine's database connection behind a lock: one caller at a time.
final class LockedStore: @unchecked Sendable {
    private let lock = NSLock()
    private let store: EventStore

    init(_ store: EventStore) { self.store = store }

    func withLock<T, E: Error>(_ body: (EventStore) throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(store)
    }
}
