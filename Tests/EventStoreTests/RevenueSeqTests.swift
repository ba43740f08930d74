import EntitlementCore
@testable import EventStore
import Testing
import TestSupport

/// An append keeps each customer's revenue facts at its projection's last event, taken
/// from the projection it has just written in the same transaction (not read back), and
/// forgets those numbers when the transaction ends.
@Suite struct RevenueSeqTests {
    /// Customers whose kept facts are not at their projection's last event, or who have a
    /// projection and no kept facts, or kept facts and no projection.
    static func mismatches(_ store: EventStore) throws -> Int64 {
        try store.rawConnection.scalarInt(
            """
            SELECT (SELECT count(*) FROM projections p LEFT JOIN customer_rows r USING (customer_key)
                    WHERE p.generation = (SELECT generation FROM engine_state WHERE id = 1)
                    AND r.revenue_seq IS NOT p.last_event_seq)
                 + (SELECT count(*) FROM customer_rows r WHERE r.revenue_seq IS NOT NULL AND NOT EXISTS (
                    SELECT 1 FROM projections p WHERE p.customer_key = r.customer_key AND p.last_event_seq = r.revenue_seq
                    AND p.generation = (SELECT generation FROM engine_state WHERE id = 1)))
            """) ?? -1
    }

    @Test("random batches with merges of otid: customers: the kept facts are at each projection's last event")
    func keptFactsFollowTheProjections() throws {
        var random = SplitMix64(seed: 0x5E0)
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        var next = 1
        for batch in 0..<40 {
            var items: [AppendItem] = []
            for _ in 0..<random.index(6) + 1 {
                let original = String(9_000 + random.index(8))
                // Without an appTransactionId the customer is `otid:<original>`; a later
                // transaction with one merges it into that customer.
                let app: String? = random.index(3) == 0 ? nil : "app-\(random.index(4))"
                let signed = 1_700_000_000_000 + Int64(next) * 1_000
                items.append(
                    .verified(
                        StoreFixtures.transaction(
                            id: String(20_000 + next), original: original, app: app, purchase: signed - 500, expires: signed + 86_400_000,
                            signed: signed)))
                next += 1
            }
            _ = try store.append(
                items, rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1_700_000_000_000 + Int64(batch))
            #expect(try Self.mismatches(store) == 0, "after batch \(batch)")
            #expect(store.projectedLastSeqs.isEmpty && !store.remembersProjectedSeqs)
        }
        #expect(try store.rawConnection.scalarInt("SELECT count(*) FROM customer_rows WHERE revenue_seq IS NOT NULL") ?? 0 > 3)
    }
}
