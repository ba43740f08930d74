import EntitlementCore
internal import EventStore

/// A line of a feed the engine records in order: a change (section 8) or a
/// lifecycle event (section 12), each with its cursor.
public protocol FeedRecord: Sendable {
    /// Strictly increasing, in the order the lines were recorded.
    var cursor: Int64 { get }
}

extension ChangeRecord: FeedRecord {}
extension LifecycleRecord: FeedRecord {}

/// A feed from a cursor, as an `AsyncSequence` that never ends on its own.
///
/// Each element is a line recorded after the previous one; iteration polls the
/// database (one indexed read per poll when nothing is new, time-driven lines
/// recorded first) and ends when its task is cancelled. A database failure
/// ends it with the error. ``Engine/changeFeed(since:pollInterval:)`` and
/// ``Engine/lifecycleFeed(since:pollInterval:)`` make one.
public struct PolledFeed<Record: FeedRecord>: AsyncSequence, Sendable {
    public typealias Element = Record

    let read: @Sendable (_ cursor: Int64) async throws -> [Record]
    let cursor: Int64
    let pollInterval: Duration

    public func makeAsyncIterator() -> Iterator {
        Iterator(read: read, cursor: cursor, pollInterval: pollInterval)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let read: @Sendable (_ cursor: Int64) async throws -> [Record]
        var cursor: Int64
        let pollInterval: Duration
        var buffer: [Record] = []

        public mutating func next() async throws -> Record? {
            while buffer.isEmpty {
                if Task.isCancelled { return nil }
                buffer = try await read(cursor)
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

/// The change feed from a cursor (see ``Engine/changeFeed(since:pollInterval:)``).
public typealias ChangeFeed = PolledFeed<ChangeRecord>

/// The lifecycle feed from a cursor (see ``Engine/lifecycleFeed(since:pollInterval:)``).
public typealias LifecycleFeed = PolledFeed<LifecycleRecord>

extension Engine {
    /// What reading a feed does first: records the lines time has made due by
    /// `now` (default now), in one write, when a reader sees any due; nothing is
    /// locked when none is. A read-only engine records nothing and returns 0.
    func recordDue(
        now: Int64?, isDue: (EventStore, Int64) throws(StoreError) -> Bool,
        record: (EventStore, Rules, Int64) throws(StoreError) -> Int
    ) throws(EngineError) -> Int {
        guard mode != .readOnly else { return 0 }
        let now = now ?? Self.now()
        do {
            guard try readers.withReader({ store throws(StoreError) in try isDue(store, now) }) else { return 0 }
            return try store.withLock { store throws(StoreError) in try record(store, activeRules(store).rules, now) }
        } catch {
            throw EngineError(error)
        }
    }

    /// One read on a reader, its store error as an ``EngineError``.
    func read<T>(_ body: (EventStore) throws(StoreError) -> T) throws(EngineError) -> T {
        do {
            return try readers.withReader(body)
        } catch {
            throw EngineError(error)
        }
    }
}
