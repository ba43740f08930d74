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
            let result = Result { () throws(EngineError) in try commit(items) }
            if case .success = result {
                state.withLock { state in
                    state.batches += 1
                    state.items += items.count
                }
            }
            // Each call told its own outcomes.
            var offset = 0
            for job in jobs {
                let count = job.items.count
                job.done(result.map { (Array($0.outcomes[offset..<(offset + count)]), $0.ticket) })
                offset += count
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
            var taken = 0
            var count = 0
            for job in state.pending {
                guard taken == 0 || count + job.items.count <= maxItems else { break }
                taken += 1
                count += job.items.count
            }
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
