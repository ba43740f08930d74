import EventStore
import Foundation
import Synchronization
import Testing

/// The pool of threads the engine's `async` API runs on.
@Suite struct WorkerThreadTests {
    @Test("jobs queued behind a busy one start on another thread, up to the limit, whatever wakes first")
    func queuedJobsGetThreadsUpToTheLimit() throws {
        for round in 0..<50 {
            let pool = WorkerThread(pool: "test.pool.\(round)", limit: 2)
            defer { pool.finish() }
            // One thread started and idle again.
            pool.submit {}
            pool.drain()

            // A job that holds its thread, and right behind it one that must not wait for it
            // (submitted before the idle thread may have woken up for the first).
            let release = DispatchSemaphore(value: 0)
            let second = DispatchSemaphore(value: 0)
            pool.submit { release.wait() }
            pool.submit { second.signal() }
            let ran = second.wait(timeout: .now() + 60) == .success
            release.signal()
            #expect(ran, "round \(round): the second job waited behind the first")
            if !ran { return }
        }
    }

    @Test("never more threads than the limit at once")
    func limitHolds() throws {
        let pool = WorkerThread(pool: "test.limit", limit: 2)
        defer { pool.finish() }
        let running = Mutex((now: 0, most: 0))
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        for _ in 0..<6 {
            pool.submit {
                running.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                started.signal()
                release.wait()
                running.withLock { $0.now -= 1 }
            }
        }
        // Two start; the others wait for a thread.
        for _ in 0..<2 { #expect(started.wait(timeout: .now() + 60) == .success) }
        #expect(running.withLock { $0.now } == 2)
        for _ in 0..<6 { release.signal() }
        pool.drain()
        #expect(running.withLock { $0.most } == 2)
    }
}
