internal import EventStore

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
