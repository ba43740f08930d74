import EntitlementCore
@testable import EventStore
import Foundation
import Testing

/// Migration 031 (`Migrations/sql/031_projections_rowid.sql`): `projections` and
/// `projections_next` as rowid tables with (generation, customer) UNIQUE, every
/// projection the same after it, and a projection written again keeping its row.
@Suite struct ProjectionRowsMigrationTests {
    /// The database as a build before migration 031 left it: both tables `WITHOUT ROWID`,
    /// keyed by (generation, customer), and a retired generation in `projections_next`.
    static let before031 = """
        CREATE TABLE projections_old (
            generation INTEGER NOT NULL, customer_key TEXT NOT NULL, rules_version TEXT NOT NULL,
            last_event_seq INTEGER NOT NULL, state BLOB NOT NULL, PRIMARY KEY (generation, customer_key)
        ) STRICT, WITHOUT ROWID;
        INSERT INTO projections_old SELECT generation, customer_key, rules_version, last_event_seq, state FROM projections;
        DROP TABLE projections;
        ALTER TABLE projections_old RENAME TO projections;
        DROP TABLE projections_next;
        CREATE TABLE projections_next (
            generation INTEGER NOT NULL, customer_key TEXT NOT NULL, rules_version TEXT NOT NULL,
            last_event_seq INTEGER NOT NULL, state BLOB NOT NULL, PRIMARY KEY (generation, customer_key)
        ) STRICT, WITHOUT ROWID;
        INSERT INTO projections_next SELECT generation - 1, customer_key, rules_version, last_event_seq, state FROM projections;
        DELETE FROM schema_migrations WHERE identifier >= '031';
        """

    static func rows(_ store: EventStore, table: String = "projections") throws -> [String] {
        let statement = try store.rawConnection.prepare(
            "SELECT generation, customer_key, rules_version, last_event_seq, hex(state) FROM \(table) ORDER BY generation, customer_key")
        var rows: [String] = []
        while try statement.step() { rows.append((0..<5).map { statement.string($0) ?? "" }.joined(separator: " ")) }
        statement.reset()
        return rows
    }

    static func rowIds(_ store: EventStore) throws -> [String: Int64] {
        let statement = try store.rawConnection.prepare("SELECT customer_key, row_id FROM projections")
        var ids: [String: Int64] = [:]
        while try statement.step() { ids[statement.string(0) ?? ""] = statement.int64(1) }
        statement.reset()
        return ids
    }

    static func isRowidTable(_ store: EventStore, _ name: String) throws -> Bool {
        let sql = try store.rawConnection.scalarString("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = '\(name)'") ?? ""
        let index = try store.rawConnection.scalarInt(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = '\(name)' AND name = 'sqlite_autoindex_\(name)_1'")
        return sql.contains("row_id") && !sql.uppercased().contains("WITHOUT ROWID") && index == 1
    }

    @Test("Migration 031: the projections move into rowid tables and answer the same; a replay's swap keeps both shapes")
    func movesRowsAndKeepsAnswers() throws {
        let current = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        try CustomerRowsMigrationTests.history(current)
        let expected = try Self.rows(current)
        #expect(expected.count == 4)

        let path = StoreFixtures.temporaryDatabase()
        do {
            let older = try EventStore(path: path, hash: StoreFixtures.hash)
            try CustomerRowsMigrationTests.history(older)
            try older.rawConnection.execute(Self.before031)
            #expect(try !Self.isRowidTable(older, "projections"))
            #expect(try Self.rows(older, table: "projections_next").count == expected.count)
        }
        let migrated = try EventStore(path: path, hash: StoreFixtures.hash)
        #expect(try migrated.rawConnection.scalarInt("SELECT count(*) FROM schema_migrations WHERE identifier = '031_projections_rowid'") == 1)
        #expect(try Self.isRowidTable(migrated, "projections"))
        #expect(try Self.isRowidTable(migrated, "projections_next"))
        #expect(try Self.rows(migrated) == expected)
        // The retired generation is gone; these customers' keys are not numbers, so after
        // migration 032 their rows are numbered below zero, in the customers' order.
        #expect(try Self.rows(migrated, table: "projections_next").isEmpty)
        let ids = try Self.rowIds(migrated)
        #expect(ids.sorted { $0.key < $1.key }.map(\.value) == (1...Int64(expected.count)).map { -$0 })

        let at = CustomerRowsMigrationTests.expires - 1
        for key in ["app-1", "app-2", "otid:3000", "app-4"] {
            let want = try current.view(of: key, rules: StoreFixtures.rules, at: at)
            #expect(want != nil)
            #expect(try migrated.view(of: key, rules: StoreFixtures.rules, at: at) == want)
        }

        // A further batch answers the same in both, and its customer keeps its row.
        let renewal = StoreFixtures.transaction(
            id: "t5", purchase: CustomerRowsMigrationTests.expires, expires: CustomerRowsMigrationTests.expires + 30 * CustomerRowsMigrationTests.day,
            signed: CustomerRowsMigrationTests.expires + 10)
        for store in [current, migrated] {
            try LifecycleFeedTests.append(store, [renewal], at: CustomerRowsMigrationTests.expires + CustomerRowsMigrationTests.day)
        }
        #expect(try Self.rows(migrated) == Self.rows(current))
        #expect(try Self.rowIds(migrated) == ids)

        // A replay builds the next generation in the other table and swaps them: both keep
        // their shape, and the new generation answers as the old one did.
        let report = try migrated.replay(rules: StoreFixtures.rules, rulesJSON: "{}", now: at, collectDiff: false)
        #expect(report.changed == 0)
        #expect(try Self.isRowidTable(migrated, "projections"))
        #expect(try Self.isRowidTable(migrated, "projections_next"))
        let replayed = try Self.rows(migrated).map { $0.split(separator: " ", maxSplits: 1)[1] }
        #expect(try replayed == Self.rows(current).map { $0.split(separator: " ", maxSplits: 1)[1] })
    }

    @Test("a projection written again keeps its row; a new customer's key that is no number takes the next below zero; the lookup reads the index")
    func upsertKeepsTheRow() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        try CustomerRowsMigrationTests.history(store)
        let before = try Self.rowIds(store)
        let lowest = before.values.min() ?? 0
        #expect(lowest < 0)
        let renewal = StoreFixtures.transaction(
            id: "t5", purchase: CustomerRowsMigrationTests.expires, expires: CustomerRowsMigrationTests.expires + 30 * CustomerRowsMigrationTests.day,
            signed: CustomerRowsMigrationTests.expires + 10)
        try LifecycleFeedTests.append(store, [renewal, StoreFixtures.transaction(id: "t9", original: "9000", app: "app-9")], at: CustomerRowsMigrationTests.expires + 1)
        let after = try Self.rowIds(store)
        #expect(after.filter { before[$0.key] != nil } == before)
        #expect(after["app-9"] == lowest - 1)
        #expect(try store.rawConnection.scalarInt("SELECT last_event_seq FROM projections WHERE customer_key = 'app-1'")
            == store.rawConnection.scalarInt("SELECT max(seq) FROM event_facts WHERE customer_key = 'app-1'"))

        let plan = try store.rawConnection.prepare(
            "EXPLAIN QUERY PLAN SELECT state FROM projections WHERE generation = 1 AND customer_key = 'app-1'")
        var details: [String] = []
        while try plan.step() { details.append(plan.string(3) ?? "") }
        plan.reset()
        #expect(details.contains { $0.contains("sqlite_autoindex_projections_1") }, "\(details)")
    }
}
