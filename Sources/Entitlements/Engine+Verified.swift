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
}

extension Engine {
    /// Appends items already verified in one transaction, on the engine's threads
    /// (see ``append(verified:receivedAt:)-(_,_)``).
    public func append(verified items: [AppendItem], receivedAt: Int64? = nil) async throws(EngineError) -> [IngestResult] {
        try await onEngineThread { () throws(EngineError) in try self.append(verified: items, receivedAt: receivedAt) }
    }
}
