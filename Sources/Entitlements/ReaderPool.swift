import AppStoreVerification
import EventStore
import Foundation

/// Database connections for queries, one per concurrent caller, so that
/// queries on different threads run in parallel instead of waiting for the
/// engine's write connection (in WAL mode readers never block each other or
/// the writer, and each sees the last committed state).
///
/// A connection is opened the first time a caller finds none idle, and up to
/// `keep` idle ones are kept for the next callers.
final class ReaderPool: @unchecked Sendable {
    private let lock = NSLock()
    private var idle: [EventStore] = []
    private let path: String
    private let keep: Int

    init(path: String, keep: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)) {
        self.path = path
        self.keep = keep
    }

    /// Runs `body` with a connection no other caller is using.
    func withReader<T>(_ body: (EventStore) throws(StoreError) -> T) throws(StoreError) -> T {
        lock.lock()
        let available = idle.popLast()
        lock.unlock()
        let reader: EventStore
        if let available {
            reader = available
        } else {
            reader = try EventStore(path: path, hash: { SHA256.hash($0) })
            try reader.prepareForQueries()
        }
        defer {
            lock.lock()
            if idle.count < keep { idle.append(reader) }
            lock.unlock()
        }
        return try body(reader)
    }
}
