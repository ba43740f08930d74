import Foundation
internal import EventStore

/// The engine's own threads, on which the `async` API runs the (blocking) work while
/// the caller is suspended: Swift's cooperative pool is never blocked by SQLite, OpenSSL
/// or a lock. They are the event store's ``WorkerThread``s (the package's one thread
/// mechanism).
///
/// Short work (ingest, query) runs on a small pool, started on first use and grown up
/// to ``limit`` threads while all are busy; long work (replay, audit) runs on a thread
/// of its own, so it never holds a pool thread for minutes. The pool's threads end when
/// the engine is released.
struct EngineThreads: Sendable {
    private let pool: WorkerThread
    let limit: Int

    init(limit: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)) {
        self.limit = limit
        pool = WorkerThread(pool: "entitlements.engine", limit: limit)
    }

    /// Runs `job` on a pool thread.
    func submit(_ job: @escaping @Sendable () -> Void) { pool.submit(job) }

    /// Runs `job` on a new thread of its own (long work).
    func detach(name: String, _ job: @escaping @Sendable () -> Void) { WorkerThread.detach(name: name, job) }

    /// Lets the pool's threads end once the queued work is done.
    func stop() { pool.stop() }
}
