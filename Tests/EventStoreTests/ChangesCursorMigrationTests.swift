import EntitlementCore
import EventStore
import Testing

/// The change feed's cursor is the table's rowid without AUTOINCREMENT (migration 033):
/// a new database numbers lines one past the largest, and an older database keeps every
/// cursor it gave out and goes on after the largest.
@Suite struct ChangesCursorMigrationTests {
    static func definition(_ store: EventStore) throws -> String {
        try store.rawConnection.scalarString("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'changes'") ?? ""
    }

    static func sequenceRows(_ store: EventStore) throws -> Int64 {
        try store.rawConnection.scalarInt("SELECT count(*) FROM sqlite_sequence WHERE name = 'changes'") ?? -1
    }

    /// A purchase of another customer, appended at `at`: one more line in the feed.
    static func appendOther(_ store: EventStore, _ index: Int, at: Int64) throws {
        _ = try store.append(
            [.verified(StoreFixtures.transaction(id: "other-\(index)", original: "\(5_000 + index)", app: "app-other-\(index)"))],
            rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: at)
    }

    @Test("a new database numbers the feed's lines by rowid, without AUTOINCREMENT or a sqlite_sequence row")
    func newDatabase() throws {
        let store = try ChangeFeedStoreTests.storeWithOnePurchase()
        #expect(try !Self.definition(store).contains("AUTOINCREMENT"))
        #expect(try Self.definition(store).contains("cursor        INTEGER PRIMARY KEY,"))
        #expect(try Self.sequenceRows(store) == 0)
        try Self.appendOther(store, 1, at: ChangeFeedStoreTests.received + 1_000)
        _ = try store.append([.verified(ChangeFeedStoreTests.renewal())], rules: StoreFixtures.rules, rulesJSON: "{}",
            receivedAt: ChangeFeedStoreTests.expires + 1_000)
        let cursors = try store.changes(after: 0).map(\.cursor)
        #expect(cursors.count >= 3)
        #expect(cursors == Array(1...Int64(cursors.count)), "one past the largest, every time")
    }

    @Test("migration 033 keeps every cursor of a database numbered with AUTOINCREMENT and goes on after the largest")
    func olderDatabase() throws {
        let path = StoreFixtures.temporaryDatabase()
        var before: [ChangeRecord] = []
        do {
            let older = try EventStore(path: path, hash: StoreFixtures.hash)
            for index in 1...5 { try Self.appendOther(older, index, at: ChangeFeedStoreTests.received + Int64(index)) }
            before = try older.changes(after: 0)
            // As an engine before 033 left it: the keyword in the definition, the table's
            // row in sqlite_sequence at the largest cursor, the migration not recorded.
            let connection = older.rawConnection
            try connection.execute("BEGIN IMMEDIATE")
            try connection.editingSchema {
                try connection.execute(
                    """
                    UPDATE sqlite_master SET sql = replace(sql, 'cursor        INTEGER PRIMARY KEY,', 'cursor        INTEGER PRIMARY KEY AUTOINCREMENT,')
                    WHERE type = 'table' AND name = 'changes'
                    """)
            }
            try connection.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('changes', \(before.count))")
            try connection.execute("DELETE FROM schema_migrations WHERE identifier = '033_changes_cursor_rowid'")
            try connection.execute("COMMIT")
            #expect(try Self.definition(older).contains("AUTOINCREMENT"))
            #expect(try Self.sequenceRows(older) == 1)
        }
        #expect(before.map(\.cursor) == [1, 2, 3, 4, 5])

        let migrated = try EventStore(path: path, hash: StoreFixtures.hash)
        #expect(try migrated.rawConnection.scalarInt(
            "SELECT count(*) FROM schema_migrations WHERE identifier = '033_changes_cursor_rowid'") == 1)
        #expect(try !Self.definition(migrated).contains("AUTOINCREMENT"))
        #expect(try Self.sequenceRows(migrated) == 0)
        #expect(try migrated.rawConnection.scalarString("PRAGMA integrity_check") == "ok")
        #expect(try migrated.changes(after: 0) == before)
        try Self.appendOther(migrated, 6, at: ChangeFeedStoreTests.received + 100)
        #expect(try migrated.changes(after: 0).map(\.cursor) == [1, 2, 3, 4, 5, 6])
        #expect(try migrated.lastChangeCursor() == 6)
    }
}
