import Foundation

/// A thread of its own that runs submitted work in order.
///
/// Work that a caller then waits for must not depend on Dispatch's shared
/// pool: a server whose handlers fill that pool would leave it waiting (or,
/// when the handlers themselves wait on the caller, waiting forever). A
/// dedicated thread always makes progress. Call ``finish()`` when done.
package final class WorkerThread: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var pending = 0
    private var stopping = false
    private var stopped = false

    /// Starts the thread.
    package init(name: String) {
        let thread = Thread { self.run() }
        thread.name = name
        thread.start()
    }

    /// Runs `job` on the thread after the jobs submitted before it.
    package func submit(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        precondition(!stopping, "work submitted to a finished WorkerThread")
        jobs.append(job)
        pending += 1
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until every job submitted so far has run.
    package func drain() {
        condition.lock()
        while pending > 0 { condition.wait() }
        condition.unlock()
    }

    /// Runs what was submitted, then ends the thread; waits for both. Idempotent.
    package func finish() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !stopped { condition.wait() }
        condition.unlock()
    }

    private func run() {
        condition.lock()
        while true {
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty {
                stopped = true
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
