import EntitlementCore
internal import EventStore

extension Engine {
    /// Records every lifecycle event that time has made due by `now` (default
    /// now): an EXPIRATION not yet recorded, most often (specification section 12).
    /// Costs one indexed read, and takes no write lock, when nothing is due.
    /// A ``DatabaseMode/readOnly`` engine (a read replica) records nothing: it
    /// answers with what the database's writer has recorded, and returns 0.
    /// - Returns: How many events were recorded.
    /// - Throws: ``EngineError`` when the database cannot be written.
    @discardableResult
    public func recordDueLifecycle(now: Int64? = nil) throws(EngineError) -> Int {
        try recordDue(
            now: now, isDue: { store, now throws(StoreError) in try store.hasDueLifecycle(now: now) },
            record: { store, rules, now throws(StoreError) in try store.recordDueLifecycle(rules: rules, now: now) })
    }

    /// The lifecycle events recorded after `cursor` (0: from the start), in the
    /// order they were recorded, at most `limit`; what time has made due by now
    /// is recorded first, so the feed is complete as of the moment it is read.
    /// - Parameters:
    ///   - cursor: the cursor of the last event already read; 0 for the start.
    ///   - limit: the most events returned; `nil` for all.
    ///   - now: the moment up to which time-driven events are recorded first (default now).
    /// - Throws: ``EngineError`` when the database cannot be used.
    public func lifecycle(since cursor: Int64 = 0, limit: Int? = nil, recordingDueAt now: Int64? = nil) throws(EngineError)
        -> [LifecycleRecord]
    {
        try recordDueLifecycle(now: now)
        return try read { store throws(StoreError) in try store.lifecycle(after: cursor, limit: limit) }
    }

    /// The last lifecycle cursor recorded (0 before any event): a cursor above it is from the future.
    public func lastLifecycleCursor() throws(EngineError) -> Int64 {
        try read { store throws(StoreError) in try store.lastLifecycleCursor() }
    }

    /// Every lifecycle event of `customer`'s data as known now, recorded or not
    /// (the pure function of section 12 applied to what the engine holds).
    public func derivedLifecycle(of customer: CustomerKey) throws(EngineError) -> [LifecycleEvent] {
        do {
            return try readers.withReader { store throws(StoreError) in
                try store.derivedLifecycle(of: try store.resolveCustomer(customer), rules: activeRules(store).rules)
            }
        } catch {
            throw EngineError(error)
        }
    }

    /// The lifecycle events recorded after `cursor`, on the engine's threads (see ``lifecycle(since:limit:recordingDueAt:)-(_,_,_)``).
    public func lifecycle(since cursor: Int64 = 0, limit: Int? = nil) async throws(EngineError) -> [LifecycleRecord] {
        try await onEngineThread { () throws(EngineError) in try self.lifecycle(since: cursor, limit: limit) }
    }

    /// The last lifecycle cursor recorded, on the engine's threads.
    public func lastLifecycleCursor() async throws(EngineError) -> Int64 {
        try await onEngineThread { () throws(EngineError) in try self.lastLifecycleCursor() }
    }

    /// The lifecycle feed from `cursor` on, as an `AsyncSequence` that never
    /// ends on its own: it yields each event once recorded (time-driven ones at
    /// most `pollInterval` late) until the task iterating it is cancelled.
    public func lifecycleFeed(since cursor: Int64 = 0, pollInterval: Duration = .milliseconds(250)) -> LifecycleFeed {
        LifecycleFeed(read: { cursor in try await self.lifecycle(since: cursor, limit: 1_000) }, cursor: cursor, pollInterval: pollInterval)
    }
}

extension Engine {
    /// Whether this engine's writes record the lifecycle feed (on unless switched off).
    /// A feed switched off misses what was written meanwhile, against specification
    /// section 12: the switch exists so that the benchmark can show what recording costs.
    package var recordsLifecycleForBenchmark: Bool {
        get { store.withLock { $0.recordsLifecycle } }
        set { store.withLock { $0.recordsLifecycle = newValue } }
    }
}
