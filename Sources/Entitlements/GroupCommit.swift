import EntitlementCore
internal import EventStore
import Synchronization

/// Commits the verified items of concurrent `async` ingests together (group commit).
///
/// A server that embeds the library answers each webhook with its own
/// `try await engine.ingest([body])`. Alone, each call would be one transaction, one
/// sync of the log and one pass over the store's fixed costs: many calls at once would
/// wait for each other's commits one after another. Here a call hands its verified
/// items over; when no call is committing, it commits everything handed over by then
/// (in the order it was handed over, up to ``maxItems`` items) in one transaction, tells
/// each call its own outcomes, and goes on while more has arrived. Calls that arrive during a
/// commit are the next batch, so their verification goes on beside the commit.
///
/// No thread of its own and nothing waits on a lock while another commits: the call that
/// found nobody committing does the committing, on the engine thread it runs on, and the
/// others return to their callers' continuations when their batch is done.
final class GroupCommit: Sendable {
    /// Items handed over together, and whom to tell once they are committed or could not be.
    struct Job: Sendable {
        let items: [AppendItem]
        /// Called once, on the committing thread, with the job's own outcomes in order and a
        /// ticket for the replica, or the batch's failure.
        let done: @Sendable (Result<(outcomes: [AppendOutcome], ticket: Engine.ReplicationTicket), EngineError>) -> Void
    }

    private struct State {
        var pending: [Job] = []
        var committing = false
        var submitted = 0
        var batches = 0
        var items = 0
    }

    private let state = Mutex(State())
    /// Items a transaction holds at most; a larger job is a batch of its own.
    let maxItems: Int

    init(maxItems: Int = 2048) {
        self.maxItems = max(1, maxItems)
    }

    /// Hands `job` over. When no call is committing, this one commits what is handed over
    /// (batch after batch) until nothing is; otherwise it returns at once and the committing
    /// call commits the job. Blocks while it commits: call it on an engine thread.
    /// - Parameter commit: appends a batch in one transaction, one outcome per item (every
    ///   call passes the same; the committing call's is used for all it commits).
    func submit(
        _ job: Job,
        commit: ([AppendItem]) throws(EngineError) -> (outcomes: [AppendOutcome], ticket: Engine.ReplicationTicket)
    ) {
        let leads = state.withLock { state in
            state.pending.append(job)
            state.submitted += 1
            guard !state.committing else { return false }
            state.committing = true
            return true
        }
        guard leads else { return }
        while let jobs = nextBatch() {
            var items: [AppendItem] = []
            items.reserveCapacity(jobs.reduce(0) { $0 + $1.items.count })
            for job in jobs { items += job.items }
            switch Result(catching: { () throws(EngineError) in try commit(items) }) {
            case .success(let committed):
                state.withLock { state in
                    state.batches += 1
                    state.items += items.count
                }
                // Each call told its own outcomes.
                let outcomes = CommitBatches.slices(committed.outcomes, sizes: jobs.map(\.items.count))
                for (job, own) in zip(jobs, outcomes) { job.done(.success((own, committed.ticket))) }
            case .failure(let error):
                for job in jobs { job.done(.failure(error)) }
            }
        }
    }

    /// The jobs of the next batch, taken from those pending; `nil` (and nobody committing)
    /// when none is.
    private func nextBatch() -> [Job]? {
        state.withLock { state -> [Job]? in
            guard !state.pending.isEmpty else {
                state.committing = false
                return nil
            }
            let taken = CommitBatches.taken(state.pending.lazy.map(\.items.count), maxItems: maxItems).jobs
            let jobs = Array(state.pending[..<taken])
            state.pending.removeFirst(taken)
            return jobs
        }
    }

    /// Jobs handed over so far, batches committed and the items they held.
    var statistics: GroupCommitStatistics {
        state.withLock { GroupCommitStatistics(submitted: $0.submitted, batches: $0.batches, items: $0.items) }
    }
}

/// The rule both group commits (this one and `serve`'s) take waiting jobs by, and give
/// each job its own part of a batch's results.
package enum CommitBatches {
    /// How many of the jobs waiting (their item counts, in order) the next batch takes, and
    /// their items: whole jobs in order, the first always (a job larger than `maxItems` is a
    /// batch of its own), then each that keeps the batch within `maxItems`.
    package static func taken(_ sizes: some Sequence<Int>, maxItems: Int) -> (jobs: Int, items: Int) {
        var jobs = 0
        var items = 0
        for size in sizes {
            guard jobs == 0 || items + size <= maxItems else { break }
            jobs += 1
            items += size
        }
        return (jobs, items)
    }

    /// `results` (one a job's item, the jobs' items one after the other) cut into each job's own.
    package static func slices<Element>(_ results: [Element], sizes: [Int]) -> [[Element]] {
        var offset = 0
        return sizes.map { size in
            defer { offset += size }
            return Array(results[offset..<(offset + size)])
        }
    }
}

/// How concurrent `async` ingests were committed (for tests and the benchmark).
package struct GroupCommitStatistics: Sendable, Equatable {
    /// Calls whose verified items were handed over to be committed.
    package var submitted: Int
    /// Transactions committed, and the items they held.
    package var batches: Int
    package var items: Int
}

extension Engine {
    /// How this engine's concurrent `async` ingests were committed so far.
    package var groupCommitStatistics: GroupCommitStatistics { groupCommit.statistics }
}
