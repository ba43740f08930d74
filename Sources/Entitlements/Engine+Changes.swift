import EntitlementCore
internal import EventStore

extension Engine {
    /// Records every change that time has brought about by `now` (default now):
    /// expiries not yet recorded, cause `time` (specification section 8). Costs one
    /// indexed read, and takes no write lock, when nothing is due.
    /// A ``DatabaseMode/readOnly`` engine (a read replica) records nothing: it
    /// answers with what the database's writer has recorded, and returns 0.
    /// - Returns: How many changes were recorded.
    /// - Throws: ``EngineError`` when the database cannot be written.
    @discardableResult
    public func recordDueChanges(now: Int64? = nil) throws(EngineError) -> Int {
        try recordDue(
            now: now, isDue: { store, now throws(StoreError) in try store.hasDueChanges(now: now) },
            record: { store, rules, now throws(StoreError) in try store.recordDueChanges(rules: rules, now: now) })
    }

    /// The changes recorded after `cursor` (0: from the start), in the order
    /// they were recorded, at most `limit`; what time has brought about by now
    /// is recorded first, so the feed is complete as of the moment it is read.
    /// - Parameters:
    ///   - cursor: the cursor of the last change already read; 0 for the start.
    ///   - limit: the most changes returned; `nil` for all.
    ///   - now: the moment up to which time-driven changes are recorded first (default now).
    /// - Throws: ``EngineError`` when the database cannot be used.
    public func changes(since cursor: Int64 = 0, limit: Int? = nil, recordingDueAt now: Int64? = nil) throws(EngineError)
        -> [ChangeRecord]
    {
        try recordDueChanges(now: now)
        return try read { store throws(StoreError) in try store.changes(after: cursor, limit: limit) }
    }

    /// The last cursor recorded (0 before any change): a cursor above it is from the future.
    public func lastChangeCursor() throws(EngineError) -> Int64 {
        try read { store throws(StoreError) in try store.lastChangeCursor() }
    }

    /// The changes recorded after `cursor`, on the engine's threads (see ``changes(since:limit:recordingDueAt:)-(_,_,_)``).
    public func changes(since cursor: Int64 = 0, limit: Int? = nil) async throws(EngineError) -> [ChangeRecord] {
        try await onEngineThread { () throws(EngineError) in try self.changes(since: cursor, limit: limit) }
    }

    /// The feed from `cursor` on, as an `AsyncSequence` that never ends on its
    /// own: it yields each change once recorded (time-driven ones at most
    /// `pollInterval` late) until the task iterating it is cancelled.
    public func changeFeed(since cursor: Int64 = 0, pollInterval: Duration = .milliseconds(250)) -> ChangeFeed {
        ChangeFeed(read: { cursor in try await self.changes(since: cursor, limit: 1_000) }, cursor: cursor, pollInterval: pollInterval)
    }
}
