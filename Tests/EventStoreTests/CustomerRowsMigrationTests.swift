import EntitlementCore
@testable import EventStore
import Foundation
import SchemaMigrations
import Testing

/// Migration 029 (`Migrations/sql/029_customer_rows.sql`): the rows of `reported_answers`,
/// `lifecycle_due`, `lifecycle_recorded` and `revenue_facts` moved into `customer_rows`,
/// one row per customer, and every answer the same after it.
@Suite struct CustomerRowsMigrationTests {
    static let purchase = LifecycleFeedTests.purchase
    static let expires = LifecycleFeedTests.expires
    static let day = LifecycleFeedTests.day

    /// The same history into any store: a subscriber, a customer merged from its `otid:`
    /// key, one known only by its originalTransactionId, and a refunded one.
    static func history(_ store: EventStore) throws {
        func append(_ inputs: [VerifiedInput], at receivedAt: Int64) throws { try LifecycleFeedTests.append(store, inputs, at: receivedAt) }
        try append([StoreFixtures.transaction(id: "t1", purchase: Self.purchase, expires: Self.expires)], at: Self.purchase + 1_000)
        try append([StoreFixtures.transaction(id: "t2", original: "2000", app: nil)], at: Self.purchase + 2_000)
        try append([StoreFixtures.transaction(id: "t3", original: "3000", app: nil)], at: Self.purchase + 3_000)
        try append([StoreFixtures.transaction(id: "t2", original: "2000", app: "app-2", signed: Self.purchase + 7_000)], at: Self.purchase + 9_000)
        try append(
            [
                StoreFixtures.transaction(
                    id: "t4", original: "4000", app: "app-4", signed: Self.purchase + 5 * Self.day, revocation: Self.purchase + 5 * Self.day)
            ], at: Self.purchase + 6 * Self.day)
    }

    /// The database as a build before migration 029 left it: the four tables with their rows.
    static let before029 = """
        CREATE TABLE reported_answers (customer_key TEXT PRIMARY KEY, answer ANY NOT NULL, next_change_at INTEGER) STRICT, WITHOUT ROWID;
        INSERT INTO reported_answers SELECT customer_key, answer, next_change_at FROM customer_rows WHERE answer IS NOT NULL;
        CREATE INDEX reported_answers_by_next_change ON reported_answers (next_change_at) WHERE next_change_at IS NOT NULL;
        CREATE TABLE lifecycle_due (customer_key TEXT PRIMARY KEY, next_due_at INTEGER NOT NULL) STRICT, WITHOUT ROWID;
        INSERT INTO lifecycle_due SELECT customer_key, next_due_at FROM customer_rows WHERE next_due_at IS NOT NULL;
        CREATE INDEX lifecycle_due_by_time ON lifecycle_due (next_due_at);
        CREATE TABLE revenue_facts (customer_key TEXT PRIMARY KEY, last_event_seq INTEGER NOT NULL, facts BLOB NOT NULL) STRICT, WITHOUT ROWID;
        INSERT INTO revenue_facts SELECT customer_key, revenue_seq, revenue_facts FROM customer_rows WHERE revenue_seq IS NOT NULL;
        CREATE TABLE lifecycle_recorded (customer_key TEXT PRIMARY KEY, id_hashes BLOB NOT NULL) STRICT, WITHOUT ROWID;
        INSERT INTO lifecycle_recorded SELECT customer_key, id_hashes FROM customer_rows WHERE id_hashes IS NOT NULL;
        DROP TABLE customer_rows;
        DELETE FROM schema_migrations WHERE identifier >= '029';
        """

    static func rows(_ store: EventStore) throws -> [String] {
        let statement = try store.rawConnection.prepare(
            """
            SELECT customer_key, quote(next_change_at), quote(next_due_at), quote(revenue_seq), typeof(answer), hex(answer),
                hex(id_hashes), hex(revenue_facts) FROM customer_rows ORDER BY customer_key
            """)
        var rows: [String] = []
        while try statement.step() { rows.append((0..<8).map { statement.string($0) ?? "" }.joined(separator: " ")) }
        statement.reset()
        return rows
    }

    @Test("Migration 029: the four tables' rows move into one row per customer; the feeds and the revenue facts answer the same")
    func movesRowsAndKeepsAnswers() throws {
        let current = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        try Self.history(current)
        let expected = try Self.rows(current)
        #expect(expected.count == 4)  // app-1, app-2, otid:3000, app-4 (otid:2000 merged away keeps no row)
        #expect(!expected.contains { $0.hasPrefix("otid:2000") })

        let path = StoreFixtures.temporaryDatabase()
        do {
            let older = try EventStore(path: path, hash: StoreFixtures.hash)
            try Self.history(older)
            try older.rawConnection.execute(Self.before029)
            // A reported answer kept as JSON text (as before migration 014) moves as it is.
            try older.rawConnection.execute(#"UPDATE reported_answers SET answer = '[["pro",1702592000000]]' WHERE customer_key = 'app-1'"#)
            #expect(try older.rawConnection.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'customer_rows'") == 0)
        }
        let migrated = try EventStore(path: path, hash: StoreFixtures.hash)
        #expect(try migrated.rawConnection.scalarInt("SELECT count(*) FROM schema_migrations WHERE identifier = '029_customer_rows'") == 1)
        for name in ["reported_answers", "lifecycle_due", "lifecycle_recorded", "revenue_facts"] {
            #expect(try migrated.rawConnection.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = '\(name)'") == 0)
        }
        let moved = try Self.rows(migrated)
        #expect(moved.count == expected.count)
        for (row, want) in zip(moved, expected) {
            if row.hasPrefix("app-1 ") {
                #expect(try migrated.rawConnection.scalarString("SELECT answer FROM customer_rows WHERE customer_key = 'app-1'") == #"[["pro",1702592000000]]"#)
                #expect(row.split(separator: " ").enumerated().filter { ![4, 5].contains($0.offset) }.map(\.element)
                    == want.split(separator: " ").enumerated().filter { ![4, 5].contains($0.offset) }.map(\.element))
            } else {
                #expect(row == want)
            }
        }

        // The revenue facts kept are current: none derived again, the same facts.
        var factsBefore: [RevenueFacts] = []
        var factsAfter: [RevenueFacts] = []
        #expect(try current.forEachRevenueFacts { factsBefore.append($0) }.isEmpty)
        #expect(try migrated.forEachRevenueFacts { factsAfter.append($0) }.isEmpty)
        #expect(factsAfter.count == factsBefore.count && !factsAfter.isEmpty)
        #expect(factsAfter.map { RevenueFactsCodec.encode($0) } == factsBefore.map { RevenueFactsCodec.encode($0) })

        // Nothing due before the expiry; at it, the same changes and lifecycle lines.
        #expect(try migrated.hasDueChanges(now: Self.expires - 1) == false)
        #expect(try migrated.hasDueLifecycle(now: Self.expires - 1) == false)
        for store in [current, migrated] {
            #expect(try store.hasDueChanges(now: Self.expires + 5))
            #expect(try store.hasDueLifecycle(now: Self.expires + 5))
            #expect(try store.recordDueChanges(rules: StoreFixtures.rules, now: Self.expires + 5) > 0)
            #expect(try store.recordDueLifecycle(rules: StoreFixtures.rules, now: Self.expires + 5) > 0)
        }
        #expect(try migrated.changes(after: 0) == current.changes(after: 0))
        #expect(try migrated.lifecycle(after: 0) == current.lifecycle(after: 0))
        #expect(try migrated.hasDueChanges(now: Self.expires + 5) == false)
        #expect(try migrated.hasDueLifecycle(now: Self.expires + 5) == false)

        // A further batch answers the same in both, and the JSON answer is written as the codec's bytes.
        let renewal = StoreFixtures.transaction(id: "t5", purchase: Self.expires, expires: Self.expires + 30 * Self.day, signed: Self.expires + 10)
        for store in [current, migrated] { try LifecycleFeedTests.append(store, [renewal], at: Self.expires + Self.day) }
        #expect(try migrated.changes(after: 0) == current.changes(after: 0))
        #expect(try migrated.lifecycle(after: 0) == current.lifecycle(after: 0))
        #expect(try Self.rows(migrated) == Self.rows(current))
    }

    @Test("a customer merged away leaves no row; the due moments are found by their indexes")
    func mergedAwayAndIndexed() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        try Self.history(store)
        #expect(try store.rawConnection.scalarInt("SELECT count(*) FROM customer_rows WHERE customer_key = 'otid:2000'") == 0)
        for (column, index) in [("next_change_at", "customer_rows_by_next_change"), ("next_due_at", "customer_rows_by_next_due")] {
            let plan = try store.rawConnection.prepare(
                "EXPLAIN QUERY PLAN SELECT customer_key FROM customer_rows WHERE \(column) IS NOT NULL AND \(column) <= 5 ORDER BY \(column), customer_key")
            var details: [String] = []
            while try plan.step() { details.append(plan.string(3) ?? "") }
            plan.reset()
            #expect(details.contains { $0.contains(index) }, "\(details)")
        }
    }
}
