internal import EventStore

extension Engine {
    /// Appends items already verified (with ``DocumentVerifier/verifiedItems(_:)``)
    /// in one transaction, for callers that verify on their own threads and
    /// commit many requests' items together (the HTTP server's batches).
    /// - Returns: one result per item, in order (without `input` numbers: the caller knows its documents).
    /// - Throws: ``EngineError`` when the batch could not be stored (then none of it was).
    public func append(verified items: [AppendItem], receivedAt: Int64? = nil) throws(EngineError) -> [IngestResult] {
        try appendRetryingBusy(items, receivedAt: receivedAt ?? Self.now()).map(Self.result)
    }

    /// Appends items already verified in one transaction, like `append(verified:receivedAt:)`,
    /// but returns once the batch is committed locally, without waiting for the replica: a
    /// caller that commits batches one after another commits the next while the replica
    /// confirms this one. Nothing of it may be acknowledged before ``confirmReplicated(_:)``
    /// of the ticket returned has returned; the threads waiting meanwhile share one request
    /// to Litestream. Without replication the ticket is confirmed at once.
    /// - Parameter giveUp: asked before a busy database is tried again: `true` (the server
    ///   is stopping) reports `DATABASE_BUSY` at once.
    /// - Throws: ``EngineError`` when the batch could not be stored (then none of it was).
    public func appendAwaitingConfirmation(
        verified items: [AppendItem], receivedAt: Int64? = nil, giveUp: () -> Bool = { false }
    ) throws(EngineError) -> (results: [IngestResult], ticket: ReplicationTicket) {
        let results = try appendRetryingBusy(items, receivedAt: receivedAt ?? Self.now(), confirming: false, giveUp: giveUp)
            .map(Self.result)
        return (results, replicationTicket())
    }
}

extension Engine {
    /// Appends items already verified in one transaction, on the engine's threads
    /// (see `append(verified:receivedAt:)`). Calls made at the same time share transactions
    /// as the `async` ``ingest(_:workers:receivedAt:)-(_,_,_)``'s do (group commit), each
    /// answered with its own results; with `receivedAt` given, the call is a transaction of
    /// its own.
    public func append(verified items: [AppendItem], receivedAt: Int64? = nil) async throws(EngineError) -> [IngestResult] {
        guard receivedAt == nil else {
            return try await onEngineThread { () throws(EngineError) in try self.append(verified: items, receivedAt: receivedAt) }
        }
        return try await committedTogether { ((), items) }.1.map(Self.result)
    }
}
