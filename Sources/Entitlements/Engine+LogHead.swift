internal import EventStore

/// Where the log ends: the seq of its last event and when that event was received.
public struct LogHeadPosition: Sendable, Hashable {
    /// The seq of the last event; 0 for an empty log.
    public var seq: Int64
    /// When the last event was received (milliseconds since 1970); `nil` for an empty log.
    public var receivedAt: Int64?

    public init(seq: Int64, receivedAt: Int64?) {
        self.seq = seq
        self.receivedAt = receivedAt
    }
}

extension Engine {
    /// The log's head as the engine's readers see it now (one indexed read): on a read
    /// replica, how far it has followed the primary (`serve --read-only`, specification section 15).
    /// - Throws: ``EngineError`` when the database cannot be read.
    public func logHead() throws(EngineError) -> LogHeadPosition {
        do {
            let last = try readers.withReader { store throws(StoreError) in try store.lastEventHead() }
            return LogHeadPosition(seq: last?.seq ?? 0, receivedAt: last?.receivedAt)
        } catch {
            throw EngineError(error)
        }
    }
}
