import Foundation
import Synchronization

/// Who goes first when two writers of one process want the same database.
///
/// SQLite has one write lock per database and no queue: a writer that finds it
/// taken sleeps in its busy handler and retries, so a background writer that
/// commits batch after batch (a replay writing its new generation) can take the
/// lock again before a waiting ingest wakes. Foreground writes (ingest, usage,
/// merges) announce themselves here before they ask for the lock; a background
/// batch waits until none is waiting or writing before it begins. Writers in other
/// processes are served by the busy handler's short polls (``Connection``).
public enum WriterPriority: Sendable {
    /// Goes first: the engine's own writes, answered to a caller who waits.
    case foreground
    /// Yields to foreground writes between its transactions (a replay's batches).
    case background

    /// Background transactions deferring to foreground writers now, by database path.
    private static let deferring = Mutex<[String: Int]>([:])

    /// Background transactions of `path` in this process deferring to foreground
    /// writers now (for diagnostics and tests).
    public static func deferringWriters(of path: String) -> Int {
        deferring.withLock { $0[path] ?? 0 }
    }

    /// Foreground writers waiting for or holding the lock, by database path.
    private static let foregroundWriters = Mutex<[String: Int]>([:])

    /// The longest a background batch defers to foreground writers before it goes
    /// anyway, so a stream of ingests cannot starve a replay.
    static let longestDeferral: Duration = .seconds(2)

    static func enter(_ path: String) {
        foregroundWriters.withLock { $0[path, default: 0] += 1 }
    }

    static func leave(_ path: String) {
        foregroundWriters.withLock { writers in
            let left = (writers[path] ?? 1) - 1
            writers[path] = left > 0 ? left : nil
        }
    }

    static func foregroundWaiting(_ path: String) -> Bool {
        foregroundWriters.withLock { $0[path] != nil }
    }

    /// Foreground writers of `path` in this process waiting for the write lock or
    /// holding it now (for diagnostics and tests).
    public static func foregroundWriters(of path: String) -> Int {
        foregroundWriters.withLock { $0[path] ?? 0 }
    }

    /// Blocks the calling (non-cooperative) thread while foreground writers of
    /// `path` wait or write, at most ``longestDeferral``.
    static func deferToForeground(_ path: String) {
        guard foregroundWaiting(path) else { return }
        deferring.withLock { $0[path, default: 0] += 1 }
        defer {
            deferring.withLock { counts in
                let left = (counts[path] ?? 1) - 1
                counts[path] = left > 0 ? left : nil
            }
        }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: longestDeferral)
        while foregroundWaiting(path) && clock.now < deadline {
            usleep(200)
        }
    }
}
