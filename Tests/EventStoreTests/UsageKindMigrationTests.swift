import EntitlementCore
import EventStore
import SchemaMigrations
import Testing

/// Migration 011 lets the log take usage records by loosening the check on `events.kind`
/// in place; the migrations after it rebuild the table (012) and rewrite its checks (034).
/// A database made before 011 by the migrations of its time, then opened by this engine,
/// ends with the check every new database has.
@Suite struct UsageKindMigrationTests {
    @Test("a database made before 011 refuses usage records, and takes them once this engine has opened it")
    func loosenedFromBefore011() throws {
        let path = StoreFixtures.temporaryDatabase()
        do {
            let connection = try Connection(path: path)
            let older = SchemaMigrations.migrations.filter { $0.identifier < "011" }
            #expect(try Migrator.migrate(connection, migrations: older).count == older.count)
            #expect(try connection.scalarInt("SELECT count(*) FROM schema_migrations WHERE identifier LIKE '011%'") == 0)
            // The row as the table before 011 has it (`payload` then required): refused by the check alone.
            let before011 = """
                INSERT INTO events (seq, identity, kind, event_id, signed_date, received_at, payload, raw, prev_hash, hash)
                VALUES (1, 'usage-check-1', 'usage', 'e1', 0, 0, '{}', '{}', x'00', x'00')
                """
            do {
                try connection.execute(before011)
                Issue.record("a usage record accepted before 011")
            } catch {
                #expect("\(error)".contains("CHECK constraint failed"), "\(error)")
            }
        }
        let store = try EventStore(path: path, hash: StoreFixtures.hash)
        let connection = store.rawConnection
        #expect(try connection.scalarInt("SELECT count(*) FROM schema_migrations WHERE identifier = '011_usage'") == 1)
        try connection.execute(ChecksAsComparisonsTests.insert("events", "usage", 2))
        #expect(try connection.scalarInt("SELECT count(*) FROM events WHERE kind = 'usage'") == 1)
        // The same check as a new database's: every kind a new database accepts, and no other.
        let fresh = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let table = "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'events'"
        #expect(try connection.scalarString(table) == fresh.rawConnection.scalarString(table))
    }
}
