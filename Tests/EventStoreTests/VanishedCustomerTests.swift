import EntitlementCore
@testable import EventStore
import Testing

/// A customer the change feed reported that no longer has a projection is reported
/// inactive; a row kept for another feed alone (no answer reported) is not a customer gone.
@Suite struct VanishedCustomerTests {
    static let received: Int64 = 1_700_000_001_000

    @Test func onlyCustomersWithAReportedAnswerAndNoProjectionAreReportedGone() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        for (id, original, app) in [("t1", "1000", "app-1"), ("t2", "2000", "app-2"), ("t3", "3000", "app-3")] {
            _ = try store.append(
                [.verified(StoreFixtures.transaction(id: id, original: original, app: app))], rules: StoreFixtures.rules,
                rulesJSON: "{}", receivedAt: Self.received)
        }
        // app-2's projection gone behind the engine's back; a row with nothing reported but a due moment.
        try store.connection.execute("DELETE FROM projections WHERE customer_key = 'app-2'")
        try store.connection.execute("INSERT INTO customer_rows (customer_key, next_due_at) VALUES ('ghost', 1)")
        let before = try store.lastChangeCursor()
        try store.connection.write { () throws -> ((), Connection.Completion) in
            try store.recordChangesOfVanished(rules: StoreFixtures.rules, now: Self.received + 10, cause: .event)
            return ((), .commit)
        }
        let changes = try store.changes(after: before)
        #expect(changes.map(\.appTransactionId) == ["app-2"], "\(changes)")
        #expect(changes.allSatisfy { !$0.active && $0.entitlement == "pro" && $0.cause == .event })
        // The row kept for the other feed is left as it was.
        #expect(try store.connection.scalarString(
            "SELECT quote(next_due_at) || ' ' || quote(answer) FROM customer_rows WHERE customer_key = 'ghost'") == "1 NULL")
        // Reported once: its answer is now the empty one.
        let again = try store.lastChangeCursor()
        try store.connection.write { () throws -> ((), Connection.Completion) in
            try store.recordChangesOfVanished(rules: StoreFixtures.rules, now: Self.received + 20, cause: .event)
            return ((), .commit)
        }
        #expect(try store.lastChangeCursor() == again)
    }
}
