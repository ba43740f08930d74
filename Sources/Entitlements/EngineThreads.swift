import Foundation

/// The engine's own threads, on which the `async` API runs the (blocking) work while
/// the caller is suspended: Swift's cooperative pool is never blocked by SQLite, OpenSSL
/// or a lock.
///
/// Short work (ingest, query) runs on a small pool, started on first use and grown up
/// to ``limit`` threads while all are busy; long work (replay, audit) runs on a thread
/// of its own, so it never holds a pool thread for minutes. The pool's threads end when
/// the engine is released.
final class EngineThreads: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var threads = 0
    private var idle = 0
    private var stopping = false
    let limit: Int

    init(limit: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)) { self.limit = limit }

    /// Runs `job` on a pool thread.
    func submit(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        if idle == 0 && threads < limit {
            threads += 1
            let name = "entitlements.engine.\(threads)"
            Thread { [self] in
                Self.label(name)
                run()
            }.start()
        }
        condition.signal()
        condition.unlock()
    }

    /// Runs `job` on a new thread of its own (long work).
    func detach(name: String, _ job: @escaping @Sendable () -> Void) {
        Thread {
            Self.label(name)
            job()
        }.start()
    }

    /// The key under which each of these threads records its name in its thread dictionary
    /// (`Thread.current.threadDictionary["entitlements.thread"]`): tools and tests can tell
    /// the engine's threads from others (on Linux a `Thread`'s name may not reach the OS).
    static let labelKey = "entitlements.thread"

    static func label(_ name: String) {
        Thread.current.name = name
        Thread.current.threadDictionary[labelKey] = name
    }

    /// Lets the pool's threads end once the queued work is done.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    private func run() {
        condition.lock()
        while true {
            while jobs.isEmpty && !stopping {
                idle += 1
                condition.wait()
                idle -= 1
            }
            if jobs.isEmpty {
                threads -= 1
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job()
            condition.lock()
        }
    }
}
