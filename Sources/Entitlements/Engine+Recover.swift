internal import EventStore
import EntitlementCore

extension Engine {
    /// When the newest event in the log was received (milliseconds since 1970), or `nil` for
    /// an empty log: a restored database ends there, and `recover` asks Apple from an hour before.
    /// - Throws: ``EngineError`` when the database cannot be read.
    public func lastReceivedAt() throws(EngineError) -> Int64? {
        do {
            return try store.withLock { store throws(StoreError) in try store.lastReceivedAt() }
        } catch {
            throw EngineError(error)
        }
    }
}

extension Engine {
    /// Makes the head record beside the database (`PATH-head`) name the log's own head,
    /// whatever head it named before, and returns that head (`nil` for an empty log). For a
    /// database restored from its replica after its newest events were reported missing
    /// (``AuditReport/missingEvents``): the events caught up from Apple then take those
    /// sequence numbers, and the record follows them from here on.
    /// - Throws: ``EngineError`` when the log cannot be read or the record cannot be written.
    @discardableResult
    public func resetHeadRecord() throws(EngineError) -> LogHead? {
        do {
            return try store.withLock { store throws(StoreError) in try store.resetHeadRecord() }
        } catch {
            throw EngineError(error)
        }
    }
}
