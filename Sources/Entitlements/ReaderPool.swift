import AppStoreVerification
internal import EventStore
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
    private let busyTimeoutMilliseconds: Int32
    /// Whether a copy Litestream follows is read without locks: only where the engine only reads.
    private let readsFollowedCopy: Bool
    /// `appUsers.fromAppAccountToken`, for the lifecycle a reader derives.
    private let appUsersFromAccountToken: Bool

    init(
        path: String, keep: Int = max(2, ProcessInfo.processInfo.activeProcessorCount), busyTimeoutMilliseconds: Int32,
        readsFollowedCopy: Bool, appUsersFromAccountToken: Bool = false
    ) {
        self.path = path
        self.appUsersFromAccountToken = appUsersFromAccountToken
        self.keep = keep
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        self.readsFollowedCopy = readsFollowedCopy
    }

    /// Runs `body` with a connection no other caller is using, every read it makes from one
    /// snapshot of the database (``EventStore/withOneSnapshot(_:)``).
    ///
    /// Readers open the database read-only (``EventStore/OpenMode/readOnly``):
    /// they never create, migrate or write it. A reader that had to read the file
    /// as immutable is used only while the files are unchanged: when a writer has
    /// been at work meanwhile, it is dropped, and `body` runs again on a fresh one.
    func withReader<T>(_ body: (EventStore) throws(StoreError) -> T) throws(StoreError) -> T {
        var attempt = 0
        while true {
            lock.lock()
            var available = idle.popLast()
            lock.unlock()
            if let reader = available, !reader.isCurrent { available = nil }
            let reader: EventStore
            if let available {
                reader = available
            } else {
                reader = try EventStore(
                    path: path, hash: { SHA256.hash($0) }, hashParts: { SHA256.hash($0, $1) }, mode: .readOnly,
                    busyTimeoutMilliseconds: busyTimeoutMilliseconds, readsFollowedCopy: readsFollowedCopy,
                    appUsersFromAccountToken: appUsersFromAccountToken)
                try reader.prepareForQueries()
            }
            let result: Result<T, StoreError>
            // Everything `body` reads is of one commit (and the log's read lock is taken once).
            do throws(StoreError) {
                result = .success(try reader.withOneSnapshot { () throws(StoreError) in try body(reader) })
            } catch {
                result = .failure(error)
            }
            attempt += 1
            if !reader.isCurrent && attempt < Self.attempts { continue }
            lock.lock()
            if idle.count < keep && reader.isCurrent { idle.append(reader) }
            lock.unlock()
            return try result.get()
        }
    }

    /// How many times a read is done again when the file changed under an immutable reader.
    static let attempts = 5
}
