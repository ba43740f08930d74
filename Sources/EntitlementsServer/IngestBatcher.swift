import Entitlements
import Foundation

/// Commits the verified items of concurrent requests together: requests hand
/// their items over, one thread takes everything that has arrived (however
/// much: up to `maxItems` items), appends it in one transaction (one sync of
/// the log), and tells each request its own results once the batch is
/// committed (group commit). Items handed over while a batch commits form the
/// next batch, so verification of the next requests goes on beside the commit.
///
/// Only the committing thread waits on the batcher's condition: a request is
/// woken alone, by its own ``Job/done`` (no request is woken for another's
/// batch). With replication, each request waits for the replica's confirmation
/// on its own thread after its wake-up (``Engine/confirmReplicated(_:)``), so
/// the next batch commits while the replica confirms this one.
final class IngestBatcher: @unchecked Sendable {
    /// Items handed over together, and whom to tell once they are committed.
    struct Job: Sendable {
        let items: [AppendItem]
        /// Called once, on the committing thread (or at once when the server is
        /// stopping), with the job's own results in order, or the batch's failure,
        /// and what to wait for before the results may be acknowledged.
        let done: @Sendable (Result<[IngestResult], EngineError>, Engine.ReplicationTicket?) -> Void
    }

    private let engine: Engine
    private let budget: QuarantineBudget
    /// Waited on by the committing thread (and by ``finish()``), never by a request.
    private let condition = NSCondition()
    private var pending: [Job] = []
    private var finishing = false
    private var finished = false
    /// Items per transaction at most (a batch larger than this waits for the next).
    private let maxItems: Int
    /// Batches committed and items in them (for tests and the benchmark).
    private var batches = 0
    private var committedItems = 0

    init(engine: Engine, budget: QuarantineBudget, maxItems: Int = 2048) {
        self.engine = engine
        self.budget = budget
        self.maxItems = maxItems
        let thread = Thread { [self] in run() }
        thread.name = "entitlements.serve.commit"
        thread.start()
    }

    static let stoppingError = EngineError(code: .shuttingDown, message: "the server is stopping; send the input again")

    /// Hands `jobs` over to be committed with whatever else arrives; returns at once.
    /// Each job's `done` is called once they are committed (or could not be).
    func submit(_ jobs: [Job]) {
        guard !jobs.isEmpty else { return }
        condition.lock()
        guard !finished else {
            condition.unlock()
            for job in jobs { job.done(.failure(Self.stoppingError), nil) }
            return
        }
        pending.append(contentsOf: jobs)
        condition.broadcast()
        condition.unlock()
    }

    /// Appends `items` with the requests arriving meanwhile; returns once they are committed
    /// and, with replication, on the replica.
    func commit(_ items: [AppendItem]) -> Result<[IngestResult], EngineError> {
        let answer = Answer<(Result<[IngestResult], EngineError>, Engine.ReplicationTicket?)>()
        submit([Job(items: items) { result, ticket in answer.give((result, ticket)) }])
        let (result, ticket) = answer.wait()
        return Self.confirmed(result, ticket: ticket, engine: engine)
    }

    /// `result` once the replica holds what it acknowledges (at once without replication).
    static func confirmed<Value>(
        _ result: Result<Value, EngineError>, ticket: Engine.ReplicationTicket?, engine: Engine
    ) -> Result<Value, EngineError> {
        guard case .success = result, let ticket else { return result }
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

    /// Whether the server is stopping: set by the server once it is made (``stopsWith(_:)``).
    private var serverStopping: @Sendable () -> Bool = { false }

    /// Makes a busy database's retries end once `stopping` says the server stops.
    func stopsWith(_ stopping: @escaping @Sendable () -> Bool) {
        condition.lock()
        serverStopping = stopping
        condition.unlock()
    }

    /// Whether ``finish()`` was called or the server is stopping.
    private var isStopping: Bool {
        condition.lock()
        let (finishing, stopping) = (finishing, serverStopping)
        condition.unlock()
        return finishing || stopping()
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
            let (taken, count) = CommitBatches.taken(pending.lazy.map(\.items.count), maxItems: maxItems)
            let jobs = Array(pending[..<taken])
            pending.removeFirst(taken)
            let stopping = finishing && pending.isEmpty
            condition.unlock()

            let summaries = budget.takeSummaries(now: Engine.now(), force: stopping)
            var outcome: Result<[IngestResult], EngineError> = .success([])
            var ticket: Engine.ReplicationTicket? = nil
            if count + summaries.count > 0 {
                var items: [AppendItem] = []
                items.reserveCapacity(count + summaries.count)
                for job in jobs { items.append(contentsOf: job.items) }
                for summary in summaries { items.append(.rejected(summary)) }
                do {
                    // A busy database is tried again for three busy timeouts (at least a second), so that
                    // Apple hears 503 while it still waits, and not at all once the server stops.
                    let giveUpAt = Engine.now() + max(1_000, 3 * Int64(engine.configuration.busyTimeoutMilliseconds))
                    let appended = try engine.appendAwaitingConfirmation(
                        verified: items, giveUp: { [self] in isStopping || Engine.now() >= giveUpAt })
                    outcome = .success(appended.results)
                    ticket = appended.ticket
                } catch {
                    outcome = .failure(error)
                }
            }

            condition.lock()
            if case .success = outcome, !jobs.isEmpty {
                batches += 1
                committedItems += count
            }
            condition.unlock()
            // Each request woken alone, with its own results.
            switch outcome {
            case .success(let results):
                let own = CommitBatches.slices(results, sizes: jobs.map(\.items.count))
                for (job, results) in zip(jobs, own) { job.done(.success(results), ticket) }
            case .failure(let error):
                for job in jobs { job.done(.failure(error), nil) }
            }
            condition.lock()
            if stopping {
                finished = true
                // Handed over after the last look: too late to be committed.
                let late = pending
                pending = []
                condition.broadcast()
                condition.unlock()
                for job in late { job.done(.failure(Self.stoppingError), nil) }
                return
            }
        }
    }
}

/// A value one thread waits for and another gives, once.
final class Answer<Value>: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private var value: Value?

    /// Gives the value and wakes the waiting thread.
    func give(_ value: Value) {
        self.value = value
        semaphore.signal()
    }

    /// Waits for the value.
    func wait() -> Value {
        semaphore.wait()
        return value!
    }
}
