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
        guard mode != .readOnly else { return 0 }
        let now = now ?? Self.now()
        do {
            // A reader first: nothing due, nothing locked.
            guard try readers.withReader({ store throws(StoreError) in try store.hasDueChanges(now: now) }) else { return 0 }
            return try store.withLock { store throws(StoreError) in try store.recordDueChanges(rules: activeRules(store).rules, now: now) }
        } catch {
            throw EngineError(error)
        }
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
        do {
            return try readers.withReader { store throws(StoreError) in try store.changes(after: cursor, limit: limit) }
        } catch {
            throw EngineError(error)
        }
    }

    /// The last cursor recorded (0 before any change): a cursor above it is from the future.
    public func lastChangeCursor() throws(EngineError) -> Int64 {
        do {
            return try readers.withReader { store throws(StoreError) in try store.lastChangeCursor() }
        } catch {
            throw EngineError(error)
        }
    }

    /// The changes recorded after `cursor`, on the engine's threads (see ``changes(since:limit:recordingDueAt:)-(_,_,_)``).
    public func changes(since cursor: Int64 = 0, limit: Int? = nil) async throws(EngineError) -> [ChangeRecord] {
        try await onEngineThread { () throws(EngineError) in try self.changes(since: cursor, limit: limit) }
    }

    /// The feed from `cursor` on, as an `AsyncSequence` that never ends on its
    /// own: it yields each change once recorded (time-driven ones at most
    /// `pollInterval` late) until the task iterating it is cancelled.
    public func changeFeed(since cursor: Int64 = 0, pollInterval: Duration = .milliseconds(250)) -> ChangeFeed {
        ChangeFeed(engine: self, cursor: cursor, pollInterval: pollInterval)
    }
}

/// The change feed from a cursor, as an `AsyncSequence` (see ``Engine/changeFeed(since:pollInterval:)``).
///
/// Each element is a ``ChangeRecord``; iteration waits for new records by
/// polling the database (one indexed read per poll when nothing is new) and
/// ends when its task is cancelled. A database failure ends it with the error.
public struct ChangeFeed: AsyncSequence, Sendable {
    public typealias Element = ChangeRecord

    let engine: Engine
    let cursor: Int64
    let pollInterval: Duration

    public func makeAsyncIterator() -> Iterator {
        Iterator(engine: engine, cursor: cursor, pollInterval: pollInterval)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let engine: Engine
        var cursor: Int64
        let pollInterval: Duration
        var buffer: [ChangeRecord] = []

        public mutating func next() async throws -> ChangeRecord? {
            while buffer.isEmpty {
                if Task.isCancelled { return nil }
                let engine = self.engine
                let cursor = self.cursor
                buffer = try await engine.changes(since: cursor, limit: 1_000)
                if buffer.isEmpty {
                    do { try await Task.sleep(for: pollInterval) } catch { return nil }
                }
            }
            let record = buffer.removeFirst()
            cursor = record.cursor
            return record
        }

    }
}
