import EntitlementCore
import Foundation
internal import EventStore

/// What an operator watches: the log's size, the customers, and the business now.
public struct EngineStatistics: Sendable, Hashable {
    /// The seq of the last event (the log's length).
    public var events: Int64
    /// The customers (appTransactionIds and unlinked `otid:` customers).
    public var customers: Int64
    /// The database file and its write-ahead log, in bytes.
    public var databaseBytes: Int64
    /// `metrics`' activeSubscriptions, activeTrials and mrr at `at`.
    public var activeSubscriptions: Int64
    public var activeTrials: Int64
    public var mrr: Int64
    /// When the figures were read, ms since 1970.
    public var at: Int64
}

extension Engine {
    /// The log's size, the customers, and the active subscriptions and MRR at `now` (default
    /// now), as `GET /metrics` exposes them.
    /// - Throws: ``EngineError`` when the database cannot be read.
    public func statistics(now: Int64? = nil) throws(EngineError) -> EngineStatistics {
        let now = now ?? Self.now()
        let head = try logHead()
        let customers: Int64
        do {
            customers = try readers.withReader { store throws(StoreError) in try store.customerCount() }
        } catch {
            throw EngineError(error)
        }
        let business = try metrics(from: now, to: now + 1, interval: .day).lines.first
        var bytes: Int64 = 0
        for suffix in ["", "-wal"] {
            if let size = (try? FileManager.default.attributesOfItem(atPath: databasePath + suffix))?[.size] as? NSNumber {
                bytes += size.int64Value
            }
        }
        return EngineStatistics(
            events: head.seq, customers: customers, databaseBytes: bytes, activeSubscriptions: business?.activeSubscriptions ?? 0,
            activeTrials: business?.activeTrials ?? 0, mrr: business?.mrr ?? 0, at: now)
    }

    /// The same, on the engine's threads.
    public func statistics(now: Int64? = nil) async throws(EngineError) -> EngineStatistics {
        try await onOwnThread("entitlements.statistics") { () throws(EngineError) in try self.statistics(now: now) }
    }
}
