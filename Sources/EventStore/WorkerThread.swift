import Foundation

/// Threads of their own that run submitted work: the package's one thread mechanism.
///
/// Work that a caller then waits for must not depend on Dispatch's shared
/// pool (nor on Swift's cooperative pool): a server whose handlers fill that pool
/// would leave it waiting (or, when the handlers themselves wait on the caller,
/// waiting forever). A dedicated thread always makes progress.
///
/// Two shapes, one queue:
/// - ``init(name:)``: one thread, started at once, that runs the jobs in the order
///   they were submitted (the store's replay reducer and writer). Call ``finish()``
///   when done.
/// - ``init(pool:limit:)``: up to `limit` threads, started as work arrives while
///   all are busy and named `pool.1`, `pool.2`...; the jobs start in order but run
///   side by side (the facade's `async` API). ``stop()`` lets them end.
///
/// ``detach(name:_:)`` runs one long job on a thread of its own.
/// Every thread records its name under ``labelKey`` in its thread dictionary.
package final class WorkerThread: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var pending = 0
    private var threads = 0
    private var idle = 0
    private var stopping = false
    private let name: String
    private let limit: Int
    private let numbered: Bool

    /// Starts one thread named `name` that runs the jobs in order.
    package init(name: String) {
        self.name = name
        limit = 1
        numbered = false
        condition.lock()
        startThread()
        condition.unlock()
    }

    /// A pool of up to `limit` threads named `pool.N`, started on demand.
    package init(pool: String, limit: Int) {
        name = pool
        self.limit = max(1, limit)
        numbered = true
    }

    /// The key under which each of these threads records its name in its thread dictionary
    /// (`Thread.current.threadDictionary["entitlements.thread"]`): tools and tests can tell
    /// the package's threads from others (on Linux a `Thread`'s name may not reach the OS).
    package static let labelKey = "entitlements.thread"

    /// Names the calling thread `name`, in its dictionary too (``labelKey``).
    package static func label(_ name: String) {
        Thread.current.name = name
        Thread.current.threadDictionary[labelKey] = name
    }

    /// Runs `job` on a new thread of its own named `name` (long work).
    package static func detach(name: String, _ job: @escaping @Sendable () -> Void) {
        Thread {
            label(name)
            job()
        }.start()
    }

    /// Runs `job` after the jobs submitted before it have started (with one thread: after
    /// they have run); starts a thread when the jobs queued outnumber the idle threads and
    /// the limit allows.
    package func submit(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        precondition(!stopping, "work submitted to a finished WorkerThread")
        jobs.append(job)
        pending += 1
        // An idle thread takes one queued job: while more are queued than threads wait
        // (several submitted before the idle one woke), another is started.
        if jobs.count > idle && threads < limit { startThread() }
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until every job submitted so far has run.
    package func drain() {
        condition.lock()
        while pending > 0 { condition.wait() }
        condition.unlock()
    }

    /// Lets the threads end once the queued work is done; does not wait.
    package func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    /// Runs what was submitted, then ends the threads; waits for both. Idempotent.
    package func finish() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while threads > 0 { condition.wait() }
        condition.unlock()
    }

    /// Called with the lock held.
    private func startThread() {
        threads += 1
        let threadName = numbered ? "\(name).\(threads)" : name
        Thread { [self] in
            Self.label(threadName)
            run()
        }.start()
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
                condition.broadcast()
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job()
            condition.lock()
            pending -= 1
            condition.broadcast()
        }
    }
}
