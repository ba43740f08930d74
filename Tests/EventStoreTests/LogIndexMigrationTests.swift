import EntitlementCore
@testable import EventStore
import Foundation
import Testing

/// Migration 030 (`Migrations/sql/030_drop_events_by_customer.sql`): the log's index by
/// customer dropped, since a customer's events are read from `event_facts` by the same
/// key; a database that had it opens, loses it, and answers the same.
@Suite struct LogIndexMigrationTests {
    /// The database as a build before migration 030 left it: the index in place.
    static let before030 = """
        CREATE INDEX events_by_customer ON events (customer_key, seq);
        DELETE FROM schema_migrations WHERE identifier >= '030';
        """

    static func indexExists(_ store: EventStore) throws -> Bool {
        try store.rawConnection.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'events_by_customer'") ?? 0 > 0
    }

    /// What a customer's reads give back: its events, its projection, the customers
    /// found by originalTransactionId, and the feeds.
    static func answers(_ store: EventStore) throws -> [String] {
        var answers: [String] = []
        for key in ["app-1", "app-2", "otid:2000", "otid:3000", "app-4"] {
            let events = try store.events(of: key)
            answers.append("\(key) events \(events.map(\.seq)) \(events.map { EventCodec.encode($0) })")
            answers.append("\(key) projection \(try store.projection(of: key).map { "\($0.lastEventSeq) \($0.state)" } ?? "none")")
        }
        for otid in ["1000", "2000", "3000", "4000"] {
            answers.append("\(otid) customers \(try store.customers(originalTransactionId: otid))")
        }
        answers.append("changes \(try store.changes(after: 0))")
        answers.append("lifecycle \(try store.lifecycle(after: 0))")
        return answers
    }

    @Test("Migration 030: the index by customer is dropped; events, projections, feeds and the audit answer the same")
    func dropsIndexAndKeepsAnswers() throws {
        let current = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        try CustomerRowsMigrationTests.history(current)
        #expect(try Self.indexExists(current) == false)
        let expected = try Self.answers(current)

        let path = StoreFixtures.temporaryDatabase()
        do {
            let older = try EventStore(path: path, hash: StoreFixtures.hash)
            try CustomerRowsMigrationTests.history(older)
            try older.rawConnection.execute(Self.before030)
            #expect(try Self.indexExists(older))
            #expect(try Self.answers(older) == expected)
        }
        let migrated = try EventStore(path: path, hash: StoreFixtures.hash)
        #expect(try Self.indexExists(migrated) == false)
        #expect(
            try migrated.rawConnection.scalarInt(
                "SELECT count(*) FROM schema_migrations WHERE identifier = '030_drop_events_by_customer'") == 1)
        #expect(try Self.answers(migrated) == expected)
        let audit = try migrated.audit(verify: { _, _ in nil })
        #expect(audit.firstMismatch == nil)
        let logged = try migrated.rawConnection.scalarInt("SELECT count(*) FROM events") ?? 0
        #expect(audit.events == Int64(logged))
        #expect(logged > 0)

        // A further batch, a merge among it, answers the same in both.
        let renewal = StoreFixtures.transaction(
            id: "t5", purchase: CustomerRowsMigrationTests.expires, expires: CustomerRowsMigrationTests.expires + 30 * CustomerRowsMigrationTests.day,
            signed: CustomerRowsMigrationTests.expires + 10)
        let merging = StoreFixtures.transaction(
            id: "t6", original: "3000", app: "app-3", signed: CustomerRowsMigrationTests.expires + 20)
        for store in [current, migrated] {
            try LifecycleFeedTests.append(store, [renewal, merging], at: CustomerRowsMigrationTests.expires + CustomerRowsMigrationTests.day)
        }
        #expect(try Self.answers(migrated) == Self.answers(current))
        #expect(try migrated.events(of: "app-3").map(\.seq) == current.events(of: "app-3").map(\.seq))
        #expect(try migrated.events(of: "app-3").isEmpty == false)
    }

    @Test("a customer's events are read through event_facts' key, never a scan of the log")
    func customerReadsUseTheFactsKey() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        try CustomerRowsMigrationTests.history(store)
        let plan = try store.rawConnection.prepare("EXPLAIN QUERY PLAN SELECT seq, facts FROM event_facts WHERE customer_key = ? ORDER BY seq")
        var details: [String] = []
        while try plan.step() { details.append(plan.string(3) ?? "") }
        plan.reset()
        #expect(details.contains { $0.contains("SEARCH") && $0.contains("PRIMARY KEY (customer_key=?)") }, "\(details)")
        #expect(!details.contains { $0.contains("TEMP B-TREE") }, "\(details)")
    }
}
