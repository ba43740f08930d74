internal import EventStore

/// The `async` API: each method runs its synchronous twin on the engine's own threads
/// (``EngineThreads``) and suspends the caller with a checked continuation, so a server's
/// request handlers never block a thread of Swift's cooperative pool.
///
/// Adding an async twin to new API (the pattern to follow):
/// ```swift
/// public func history(_ query: CustomerQuery, until: Int64? = nil) async throws(EngineError) -> [HistoryLine] {
///     try await onEngineThread { () throws(EngineError) in try self.history(query, until: until) }
/// }
/// ```
/// Use ``onEngineThread(_:)`` for work of milliseconds, ``onOwnThread(_:_:)`` for work
/// that may take minutes (it must not hold a pool thread that long). The arguments and
/// result must be `Sendable`; progress callbacks become `@Sendable` and are called on
/// the engine's thread. Cancelling the calling task does not stop work already started:
/// a batch handed to ingest is committed (or not) whole.
extension Engine {
    /// Verifies, appends and projects a batch in one transaction, on the engine's threads.
    /// See ``ingest(_:workers:receivedAt:)-(_,_,_)`` for the guarantees.
    ///
    /// Calls made at once (a server answering each webhook with its own call) are committed
    /// together: each call's documents are verified on their own, and what has been verified
    /// by the time a commit starts goes into that one transaction (group commit). Every call
    /// gets exactly its own results, in its own order, as if it had been alone; a failure to
    /// store the batch is every one of its calls' failure, and none of the batch is stored.
    /// With `receivedAt` given, the call is a transaction of its own.
    public func ingest(_ documents: [InputBytes], workers: Int = 1, receivedAt: Int64? = nil) async throws(EngineError) -> [IngestResult] {
        guard receivedAt == nil else {
            return try await onEngineThread { () throws(EngineError) in try self.ingest(documents, workers: workers, receivedAt: receivedAt) }
        }
        let (verified, outcomes) = try await committedTogether { [self] in
            let verified = verifyAll(documents, workers: workers)
            return ((items: verified.items, counts: verified.counts), verified.items)
        }
        return Self.results(outcomes, documents: documents, counts: verified.counts, items: verified.items)
    }

    /// Commits the items `prepare` makes (on an engine thread) together with those of the
    /// `async` calls made at the same time (``GroupCommit``), and returns once they are
    /// committed and, with replication, on the replica: what `prepare` made beside them, and
    /// one outcome per item.
    func committedTogether<Prepared: Sendable>(
        _ prepare: @escaping @Sendable () -> (Prepared, [AppendItem])
    ) async throws(EngineError) -> (Prepared, [AppendOutcome]) {
        let answer: Result<(Prepared, [AppendOutcome], ReplicationTicket), EngineError> = await withCheckedContinuation { continuation in
            threads.submit {
                let (prepared, items) = prepare()
                let job = GroupCommit.Job(items: items) { committed in
                    continuation.resume(returning: committed.map { (prepared, $0.outcomes, $0.ticket) })
                }
                self.groupCommit.submit(job) { (batch: [AppendItem]) throws(EngineError) in
                    // Confirmed by each call on its own (below), so the next batch commits meanwhile.
                    (try self.appendRetryingBusy(batch, receivedAt: Self.now(), confirming: false), self.replicationTicket())
                }
            }
        }
        let (prepared, outcomes, ticket) = try answer.get()
        if replication != nil {
            try await onEngineThread { () throws(EngineError) in try self.confirmReplicated(ticket) }
        }
        return (prepared, outcomes)
    }

    /// What the customer may use at `at` (default now), on the engine's threads.
    public func query(_ query: CustomerQuery, at: Int64? = nil) async throws(EngineError) -> QueryAnswer {
        try await onEngineThread { () throws(EngineError) in try self.query(query, at: at) }
    }

    /// Rebuilds every projection from the log, on a thread of its own. Ingests and queries
    /// issued meanwhile are not held up (the replay reads its own snapshot).
    public func replay(
        diff: Bool = false, now: Int64? = nil, progress: @escaping @Sendable (ReplayProgress) -> Void = { _ in }
    ) async throws(EngineError) -> ReplayReport {
        try await onOwnThread("entitlements.replay") { () throws(EngineError) in
            try self.replay(diff: diff, now: now, progress: progress)
        }
    }

    /// Audits the log (hash chain, signatures, facts), on a thread of its own, on its own
    /// snapshot: ingests issued meanwhile are not held up.
    public func audit(progress: @escaping @Sendable (Int64) -> Void = { _ in }) async throws(EngineError) -> AuditReport {
        try await onOwnThread("entitlements.audit") { () throws(EngineError) in try self.audit(progress: progress) }
    }

    /// Runs `work` on one of the engine's pool threads and suspends the caller until it is done.
    public func onEngineThread<T: Sendable>(_ work: @escaping @Sendable () throws(EngineError) -> T) async throws(EngineError) -> T {
        let result: Result<T, EngineError> = await withCheckedContinuation { continuation in
            threads.submit { continuation.resume(returning: Result { () throws(EngineError) in try work() }) }
        }
        return try result.get()
    }

    /// Runs long `work` on a new thread of its own and suspends the caller until it is done.
    public func onOwnThread<T: Sendable>(_ name: String, _ work: @escaping @Sendable () throws(EngineError) -> T) async throws(EngineError) -> T {
        let result: Result<T, EngineError> = await withCheckedContinuation { continuation in
            threads.detach(name: name) { continuation.resume(returning: Result { () throws(EngineError) in try work() }) }
        }
        return try result.get()
    }
}
