import EntitlementCore
@testable import EventStore
import Foundation
import Testing

/// A projection's row numbered by its customer (`EventStore.projectionRowNumber(of:)` and
/// migration 032): a customer number's row is that number, found without the index;
/// every other key's row is below zero; the migration numbers rows by the same test.
@Suite struct ProjectionRowNumberTests {
    static let purchase: Int64 = 1_700_000_000_000

    @Test(
        "customer numbers: ASCII digits, no leading zero, at most Int64.max",
        arguments: [
            ("1", Int64(1)), ("704000000000000001", 704_000_000_000_000_001), ("9223372036854775807", Int64.max),
            ("1000000000000000000", 1_000_000_000_000_000_000),
        ])
    func numbers(key: String, number: Int64) {
        #expect(EventStore.projectionRowNumber(of: key) == number)
    }

    @Test(
        "keys that are no customer number",
        arguments: [
            "", "0", "0123", "9223372036854775808", "99999999999999999999", "12a", "a12", "-5", "+5", " 5", "5 ", "1.5",
            "\u{0665}", "\u{FF11}", "otid:704000000000000001", "app-1", "１２",
        ])
    func notNumbers(key: String) {
        #expect(EventStore.projectionRowNumber(of: key) == nil)
    }

    /// Customers of every kind of key: numbers (the smallest and the largest), keys past
    /// `Int64.max` or with a leading zero, names, and an `otid:` customer.
    static let numbered = ["704000000000000001", "704000000000000002", "1", "9223372036854775807"]
    static let unnumbered = ["9223372036854775808", "0123", "app-1"]

    static func history(_ store: EventStore) throws {
        var inputs: [VerifiedInput] = []
        for (index, key) in (numbered + unnumbered).enumerated() {
            inputs.append(
                StoreFixtures.transaction(
                    id: "t\(index)", original: "\(5000 + index)", app: key, purchase: purchase, expires: purchase + 30 * 86_400_000))
        }
        inputs.append(StoreFixtures.transaction(id: "t-otid", original: "6000", app: nil, purchase: purchase, expires: purchase + 86_400_000))
        try LifecycleFeedTests.append(store, inputs, at: purchase + 1_000)
    }

    static func expectNumbering(_ store: EventStore, _ comment: Comment? = nil) throws {
        let ids = try ProjectionRowsMigrationTests.rowIds(store)
        #expect(ids.count == numbered.count + unnumbered.count + 1, comment)
        for key in numbered { #expect(ids[key] == EventStore.projectionRowNumber(of: key), comment) }
        let below = ids.filter { !numbered.contains($0.key) }
        #expect(below.values.allSatisfy { $0 < 0 }, comment)
        #expect(Set(below.values).count == below.count, comment)
    }

    /// Every row numbered by its customer, `count` of them.
    static func expectNumbering(_ store: EventStore, count: Int) throws {
        let ids = try ProjectionRowsMigrationTests.rowIds(store)
        #expect(ids.count == count)
        #expect(ids.allSatisfy { $0.value == EventStore.projectionRowNumber(of: $0.key) })
    }

    @Test("ingest numbers a customer number's row by it and every other below zero; a query finds the row by its number; a replay numbers alike")
    func ingestQueryAndReplay() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        try Self.history(store)
        try Self.expectNumbering(store, "after ingest")
        let at = Self.purchase + 2_000
        var answers: [String: CustomerView] = [:]
        for key in Self.numbered + Self.unnumbered {
            let view = try store.view(of: key, rules: StoreFixtures.rules, at: at)
            #expect(view?.entitlements.isEmpty == false, "\(key)")
            answers[key] = view
        }

        // A further batch finds each row by its number and writes it in place.
        let before = try ProjectionRowsMigrationTests.rowIds(store)
        let renewal = StoreFixtures.transaction(
            id: "t0-renewal", original: "5000", app: Self.numbered[0], purchase: Self.purchase + 30 * 86_400_000,
            expires: Self.purchase + 60 * 86_400_000, signed: Self.purchase + 30 * 86_400_000)
        try LifecycleFeedTests.append(store, [renewal], at: Self.purchase + 3_000)
        #expect(try ProjectionRowsMigrationTests.rowIds(store) == before)
        #expect(
            try store.rawConnection.scalarInt("SELECT last_event_seq FROM projections WHERE customer_key = '\(Self.numbered[0])'")
                == store.rawConnection.scalarInt("SELECT max(seq) FROM event_facts WHERE customer_key = '\(Self.numbered[0])'"))

        // A replay writes the new generation numbered the same way, and changes no one.
        let report = try store.replay(rules: StoreFixtures.rules, rulesJSON: "{}", now: at, collectDiff: false)
        #expect(report.changed == 0)
        try Self.expectNumbering(store, "after a replay")
        for key in Self.numbered + Self.unnumbered where key != Self.numbered[0] {
            #expect(try store.view(of: key, rules: StoreFixtures.rules, at: at) == answers[key], "\(key)")
        }

        // The query reads a customer number's row by that number alone: moved to another
        // number (which nothing writes), the row is no longer found for it.
        try store.rawConnection.execute("UPDATE projections SET row_id = 42 WHERE customer_key = '\(Self.numbered[1])'")
        #expect(try store.view(of: Self.numbered[1], rules: StoreFixtures.rules, at: at) == nil)
        try store.rawConnection.execute("UPDATE projections SET row_id = -1000 WHERE customer_key = 'app-1'")
        #expect(try store.view(of: "app-1", rules: StoreFixtures.rules, at: at) == answers["app-1"])
    }

    @Test("a customer number's lookup searches the table by number, not the index")
    func plan() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let plan = try store.rawConnection.prepare(
            """
            EXPLAIN QUERY PLAN SELECT state FROM projections
            WHERE generation = (SELECT generation FROM engine_state WHERE id = 1) AND customer_key = '1' AND row_id = 1
            """)
        var details: [String] = []
        while try plan.step() { details.append(plan.string(3) ?? "") }
        plan.reset()
        #expect(details.first?.contains("SEARCH projections USING INTEGER PRIMARY KEY") == true, "\(details)")
    }

    @Test("migration 032 numbers the rows of an older database by the same test and drops other generations' rows")
    func migration() throws {
        let current = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        try Self.history(current)
        let expected = try ProjectionRowsMigrationTests.rows(current)
        #expect(expected.count == Self.numbered.count + Self.unnumbered.count + 1)

        let path = StoreFixtures.temporaryDatabase()
        do {
            // As a build before 032 left it: rows numbered in the order they came, a stale
            // generation beside the current one, and an unfinished replay's rows.
            let older = try EventStore(path: path, hash: StoreFixtures.hash)
            try Self.history(older)
            try older.rawConnection.execute(
                """
                CREATE TEMP TABLE moved AS SELECT generation, customer_key, rules_version, last_event_seq, state FROM projections;
                DELETE FROM projections;
                INSERT INTO projections (row_id, generation, customer_key, rules_version, last_event_seq, state)
                    SELECT row_number() OVER (ORDER BY customer_key), generation, customer_key, rules_version, last_event_seq, state FROM moved;
                INSERT INTO projections (generation, customer_key, rules_version, last_event_seq, state)
                    SELECT generation - 1, customer_key, rules_version, last_event_seq, state FROM moved;
                INSERT INTO projections_next (generation, customer_key, rules_version, last_event_seq, state)
                    SELECT generation + 1, customer_key, rules_version, last_event_seq, state FROM moved;
                DROP TABLE moved;
                DELETE FROM schema_migrations WHERE identifier >= '032';
                """)
            #expect(try older.rawConnection.scalarInt("SELECT count(*) FROM projections") == Int64(2 * expected.count))
        }
        // A reader before any writer migrates it finds every customer through the index.
        do {
            let reader = try EventStore(path: path, hash: StoreFixtures.hash, mode: .readOnly)
            for key in Self.numbered + Self.unnumbered {
                let view = try reader.view(of: key, rules: StoreFixtures.rules, at: Self.purchase + 2_000)
                #expect(view?.entitlements.isEmpty == false, "\(key)")
            }
        }
        let migrated = try EventStore(path: path, hash: StoreFixtures.hash)
        #expect(
            try migrated.rawConnection.scalarInt(
                "SELECT count(*) FROM schema_migrations WHERE identifier = '032_projections_by_customer_number'") == 1)
        #expect(try ProjectionRowsMigrationTests.rows(migrated) == expected)
        #expect(try ProjectionRowsMigrationTests.rows(migrated, table: "projections_next").isEmpty)
        #expect(try ProjectionRowsMigrationTests.isRowidTable(migrated, "projections"))
        #expect(try ProjectionRowsMigrationTests.isRowidTable(migrated, "projections_next"))
        try Self.expectNumbering(migrated)
        // The keys that are no number, below zero in the customers' order.
        let ids = try ProjectionRowsMigrationTests.rowIds(migrated)
        let below = ids.filter { !Self.numbered.contains($0.key) }.sorted { $0.key < $1.key }.map(\.value)
        #expect(below == (1...Int64(below.count)).map { -$0 })

        let at = Self.purchase + 2_000
        for key in Self.numbered + Self.unnumbered {
            #expect(try migrated.view(of: key, rules: StoreFixtures.rules, at: at) == current.view(of: key, rules: StoreFixtures.rules, at: at))
        }
        // A new customer of either kind after it: its number, or the next below zero.
        try LifecycleFeedTests.append(
            migrated,
            [
                StoreFixtures.transaction(id: "t-new", original: "7000", app: "704000000000000009", purchase: Self.purchase),
                StoreFixtures.transaction(id: "t-new-name", original: "7001", app: "app-9", purchase: Self.purchase),
            ], at: Self.purchase + 4_000)
        let after = try ProjectionRowsMigrationTests.rowIds(migrated)
        #expect(after["704000000000000009"] == 704_000_000_000_000_009)
        #expect(after["app-9"] == (below.min() ?? 0) - 1)
    }
}

/// A replay's customers made of several keys (gathered, reduced after the scan) under
/// customer numbers: their rows hold their place in key order, so that the new generation
/// is written at the end of its table as the others are, not into full leaves.
@Suite struct ReplayHeldPlacesTests {
    static let received: Int64 = 1_700_000_001_000

    /// `count` numbered customers of eight monthly transactions each (a few dozen states to
    /// a leaf); every fourth bought first without its
    /// appTransactionId (an `otid:` customer), then was linked by a later transaction:
    /// merged, gathered by a replay.
    static func store(customers count: Int) throws -> EventStore {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let month: Int64 = 30 * 86_400_000
        var first: [VerifiedInput] = []
        var second: [VerifiedInput] = []
        for index in 0..<count {
            let app = String(704_000_000_000_000_000 + index)
            let original = String(9_000 + index)
            for renewal in 0..<Int64(7) {
                let purchase = 1_700_000_000_000 + renewal * month
                first.append(
                    StoreFixtures.transaction(
                        id: "a\(index)-\(renewal)", original: original, app: index % 4 == 0 ? nil : app, purchase: purchase,
                        expires: purchase + month, signed: purchase + 100))
            }
            let purchase = 1_700_000_000_000 + 7 * month
            second.append(
                StoreFixtures.transaction(
                    id: "b\(index)", original: original, app: app, purchase: purchase, expires: purchase + month, signed: purchase + 100))
        }
        _ = try store.append(first.map { .verified($0) }, rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: received)
        _ = try store.append(second.map { .verified($0) }, rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: received + 1)
        return store
    }

    static func leaves(_ store: EventStore) throws -> Int64 {
        try store.rawConnection.scalarInt("SELECT count(*) FROM dbstat WHERE name = 'projections' AND pagetype = 'leaf'") ?? 0
    }

    @Test("gathered customers' rows are written over the places they held; the new generation fills its leaves")
    func heldPlaces() throws {
        let count = 600
        let store = try Self.store(customers: count)
        let before = try ProjectionRowsMigrationTests.rows(store).map { $0.split(separator: " ", maxSplits: 1)[1] }
        #expect(before.count == count)

        // Twice: the first replay's previous generation was written by ingest, the second's by a replay.
        for _ in 0..<2 {
            let report = try store.replay(rules: StoreFixtures.rules, rulesJSON: "{}", now: Self.received + 2, collectDiff: false)
            #expect(report.changed == 0)
            #expect(report.customers == count)
            let after = try ProjectionRowsMigrationTests.rows(store).map { $0.split(separator: " ", maxSplits: 1)[1] }
            #expect(after == before)
            try ProjectionRowNumberTests.expectNumbering(store, count: count)
        }
        // The rows a leaf holds, written in key order: each leaf full but the last. With the
        // gathered customers' rows written only at the end, one in four would have gone into
        // full leaves and split them (18 leaves here instead of 16).
        let rowsPerLeaf = try store.rawConnection.scalarInt(
            "SELECT max(ncell) FROM dbstat WHERE name = 'projections' AND pagetype = 'leaf'") ?? 1
        let packed = (Int64(count) + rowsPerLeaf - 1) / rowsPerLeaf
        let leaves = try Self.leaves(store)
        #expect(leaves <= packed + 1, "\(leaves) leaves for \(count) rows of \(rowsPerLeaf) a leaf")
    }
}

extension ReplayHeldPlacesTests {
    @Test("a place held for a key whose rows all went to another customer is taken away again")
    func untakenPlaceRemoved() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let first = "704000000000000100", second = "704000000000000200"
        // The subscription is linked to the first appTransactionId, then, by a later-signed
        // transaction, to the second: the first key's rows all belong to the second customer.
        _ = try store.append(
            [.verified(StoreFixtures.transaction(id: "t1", original: "5000", app: first, signed: 1_700_000_000_100))],
            rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: Self.received)
        _ = try store.append(
            [.verified(StoreFixtures.transaction(id: "t2", original: "5000", app: second, signed: 1_700_000_000_200))],
            rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: Self.received + 1)
        // A previous generation that still holds the first key (as one written before the relink would).
        try store.rawConnection.execute(
            """
            INSERT OR IGNORE INTO projections (row_id, generation, customer_key, rules_version, last_event_seq, state)
                SELECT \(first), generation, '\(first)', rules_version, last_event_seq, state FROM projections WHERE customer_key = '\(second)'
            """)
        #expect(try store.rawConnection.scalarInt("SELECT count(*) FROM projections WHERE customer_key = '\(first)'") == 1)
        let report = try store.replay(rules: StoreFixtures.rules, rulesJSON: "{}", now: Self.received + 2, collectDiff: true)
        #expect(try store.rawConnection.scalarInt("SELECT count(*) FROM projections WHERE customer_key = '\(first)'") == 0)
        #expect(report.diffs.contains { $0.customerKey == first && $0.removed }, "\(report.diffs)")
        #expect(try store.projection(of: second)?.state.transactions.keys.sorted() == ["t1", "t2"])
    }
}
