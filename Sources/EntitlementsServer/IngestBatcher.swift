import Entitlements
import Foundation

/// Commits the verified items of concurrent requests together: a request
/// hands its items over and waits; one thread takes everything that has
/// arrived, appends it in one transaction, and wakes each request with its
/// own results once the batch is committed (group commit). Requests arriving
/// while a batch commits form the next batch. With replication, each request
/// then waits for the replica's confirmation on its own thread, so the next
/// batch commits while the replica confirms this one, and the requests waiting
/// meanwhile share one confirmation.
final class IngestBatcher: @unchecked Sendable {
    private final class Job {
        let items: [AppendItem]
        var result: Result<[IngestResult], EngineError>?
        /// What to wait for before the result is acknowledged (the replica's confirmation).
        var ticket: Engine.ReplicationTicket?
        init(items: [AppendItem]) { self.items = items }
    }

    private let engine: Engine
    private let budget: QuarantineBudget
    private let condition = NSCondition()
    private var pending: [Job] = []
    private var finishing = false
    private var finished = false
    /// Items per transaction at most (a batch larger than this waits for the next).
    private let maxItems: Int
    /// Batches committed and items in them (for tests and the benchmark).
    private(set) var batches = 0
    private(set) var committedItems = 0

    init(engine: Engine, budget: QuarantineBudget, maxItems: Int = 2048) {
        self.engine = engine
        self.budget = budget
        self.maxItems = maxItems
        let thread = Thread { [self] in run() }
        thread.name = "entitlements.serve.commit"
        thread.start()
    }

    /// Appends `items` with the requests arriving meanwhile; returns once they are committed
    /// and, with replication, on the replica.
    func commit(_ items: [AppendItem]) -> Result<[IngestResult], EngineError> {
        let job = Job(items: items)
        condition.lock()
        guard !finished else {
            condition.unlock()
            return .failure(EngineError(code: .shuttingDown, message: "the server is stopping; send the input again"))
        }
        pending.append(job)
        condition.broadcast()
        while job.result == nil { condition.wait() }
        let result = job.result!
        let ticket = job.ticket
        condition.unlock()
        guard case .success = result, let ticket else { return result }
        // Committed: acknowledged once on the replica (at once without replication).
        do throws(EngineError) {
            try engine.confirmReplicated(ticket)
        } catch {
            return .failure(error)
        }
        return result
    }

    /// Wakes the committing thread to look at the quarantine summaries (inputs were just left unkept).
    func nudge() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Commits what is pending and the quarantine summaries, then ends the thread; waits for both.
    func finish() {
        condition.lock()
        finishing = true
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
    }

    /// Batches committed so far and the items they held.
    var statistics: (batches: Int, items: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (batches, committedItems)
    }

    private func run() {
        condition.lock()
        while true {
            while pending.isEmpty && !finishing {
                if let wait = budget.millisecondsUntilSummary(now: Engine.now()) {
                    if wait == 0 { break }
                    _ = condition.wait(until: Date(timeIntervalSinceNow: Double(wait) / 1000))
                } else {
                    condition.wait()
                }
            }
            var jobs: [Job] = []
            var count = 0
            while let job = pending.first, jobs.isEmpty || count + job.items.count <= maxItems {
                jobs.append(job)
                count += job.items.count
                pending.removeFirst()
            }
            let stopping = finishing && pending.isEmpty
            condition.unlock()

            let summaries = budget.takeSummaries(now: Engine.now(), force: stopping)
            var outcome: Result<[IngestResult], EngineError> = .success([])
            var ticket: Engine.ReplicationTicket? = nil
            if count + summaries.count > 0 {
                do {
                    let appended = try engine.appendAwaitingConfirmation(verified: jobs.flatMap(\.items) + summaries.map { .rejected($0) })
                    outcome = .success(appended.results)
                    ticket = appended.ticket
                } catch {
                    outcome = .failure(error)
                }
            }

            condition.lock()
            switch outcome {
            case .success(let results):
                var offset = 0
                for job in jobs {
                    job.result = .success(Array(results[offset..<(offset + job.items.count)]))
                    job.ticket = ticket
                    offset += job.items.count
                }
                if !jobs.isEmpty {
                    batches += 1
                    committedItems += count
                }
            case .failure(let error):
                for job in jobs { job.result = .failure(error) }
            }
            condition.broadcast()
            if stopping {
                finished = true
                condition.broadcast()
                condition.unlock()
                return
            }
        }
    }
}
