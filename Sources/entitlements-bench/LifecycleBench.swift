import AppStoreVerification
import EntitlementCore
import Entitlements
import EventStore
import Foundation
import TestPKI

/// `Engine.lifecycle(since:recordingDueAt:)` with nothing due, on a database of
/// `customers` customers whose subscriptions all run (each one's expiry pending in
/// the next-due table): what `lifecycle --since <last>` costs when there is nothing to say.
enum LifecycleBench {
    struct Figures {
        var customers: Int
        /// Customers with an event that time will make due (rows of `customer_rows` with a `next_due_at`).
        var pending: Int64
        var recorded: Int64
        var buildSeconds: Double
        /// Each call's seconds, sorted.
        var calls: [Double]
        var median: Double { calls[calls.count / 2] }
        var max: Double { calls.last ?? 0 }
    }

    /// 2025-01-15: every customer of the plan bought its first month on 1 or 2 January 2025.
    static let midJanuary2025 = TestPayloads.january2025 + 14 * 86_400_000

    static func measure(path: String, corpus: Corpus, customers: Int, calls: Int = 50) throws -> Figures {
        // One SUBSCRIBED notification per customer, received mid-month: all active, every expiry pending.
        let plan = HistoryPlan(total: customers, customers: customers, customerMajor: true)
        let built = try BigDatabase.build(
            path: path, plan: plan, header: .compact, pki: corpus.pki, receivedAt: midJanuary2025, progress: { _ in })
        let store = try EventStore(path: path, hash: { SHA256.hash($0) }, mode: .readOnly)
        let pending = try store.rawConnection.scalarInt("SELECT count(*) FROM customer_rows WHERE next_due_at IS NOT NULL") ?? 0
        let recorded = try store.rawConnection.scalarInt("SELECT count(*) FROM lifecycle") ?? 0
        let engine = try Engine(configuration: corpus.configuration, databasePath: path)
        let last = try engine.lastLifecycleCursor()
        var times: [Double] = []
        for call in 0..<calls {
            let start = Clock.now()
            let lines = try engine.lifecycle(since: last, recordingDueAt: midJanuary2025 + Int64(call) * 1_000)
            times.append(Clock.now() - start)
            guard lines.isEmpty else { throw BenchFailure("lifecycle with nothing due returned \(lines.count) lines") }
        }
        Storage.remove(path)
        return Figures(customers: built.customers, pending: pending, recorded: recorded, buildSeconds: built.seconds, calls: times.sorted())
    }
}
