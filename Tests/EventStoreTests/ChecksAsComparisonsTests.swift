import EntitlementCore
import EventStore
import Testing

/// The checks that a column is one of a few constants are comparisons joined by OR
/// (migration 034): an INSERT builds no temporary index of the constants, and the
/// values accepted and refused are the same as the `IN (...)` lists' were.
@Suite struct ChecksAsComparisonsTests {
    /// The tables and the value each check was written for, with every value it accepts.
    static let checked: [(table: String, column: String, accepted: [String])] = [
        ("events", "kind", ["receipt", "notification", "transaction", "renewalInfo", "appTransaction", "usage", "grant", "grant_revoked", "credit", "link"]),
        ("changes", "cause", ["event", "rules", "merge", "time"]),
        ("transaction_finishes", "state", ["pending", "finished", "failed"]),
    ]

    /// A row of `table` with `value` in the checked column, every other column valid.
    static func insert(_ table: String, _ value: String, _ index: Int) -> String {
        switch table {
        case "events":
            """
            INSERT INTO events (seq, identity, kind, event_id, signed_date, received_at, raw, prev_hash, hash)
            VALUES (\(1_000 + index), 'check-\(index)', '\(value)', 'e', 0, 0, '{}', x'00', x'00')
            """
        case "changes":
            """
            INSERT INTO changes (customer_key, entitlement, active, effective_at, recorded_at, cause)
            VALUES ('check-\(index)', 'pro', 1, 0, 0, '\(value)')
            """
        default:
            """
            INSERT INTO transaction_finishes (transaction_id, environment, state, queued_at, next_attempt_at)
            VALUES ('check-\(index)', 'Sandbox', '\(value)', 0, 0)
            """
        }
    }

    @Test("a new database's checks are comparisons, and its INSERTs open no temporary index")
    func noListInTheChecks() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let connection = store.rawConnection
        for (table, column, _) in Self.checked {
            let sql = try connection.scalarString("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = '\(table)'") ?? ""
            #expect(sql.contains("\(column) = '"), "\(table): \(sql)")
            #expect(!sql.contains("\(column) IN ("), "\(table): \(sql)")
            let opcodes = try Self.opcodes(connection, insertingInto: table)
            #expect(opcodes.contains("Insert") || opcodes.contains("IdxInsert"), "\(table): \(opcodes)")
            #expect(!opcodes.contains("OpenEphemeral"), "\(table) builds a temporary index on every INSERT: \(opcodes)")
        }
    }

    @Test("the checks accept exactly the values the lists named")
    func sameValues() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let connection = store.rawConnection
        var index = 0
        for (table, _, accepted) in Self.checked {
            for value in accepted + ["other", "", "Event", "pending "] {
                index += 1
                let refused: Bool
                do {
                    try connection.execute(Self.insert(table, value, index))
                    refused = false
                } catch {
                    #expect("\(error)".contains("CHECK constraint failed"), "\(table) '\(value)': \(error)")
                    refused = true
                }
                #expect(refused == !accepted.contains(value), "\(table) '\(value)'")
            }
        }
    }

    @Test("migration 034 rewrites the lists of an older database in place, every row kept")
    func olderDatabase() throws {
        let path = StoreFixtures.temporaryDatabase()
        var before: [ChangeRecord] = []
        var head: (Int64, [UInt8])? = nil
        do {
            let older = try EventStore(path: path, hash: StoreFixtures.hash)
            for index in 1...3 { try ChangesCursorMigrationTests.appendOther(older, index, at: ChangeFeedStoreTests.received + Int64(index)) }
            before = try older.changes(after: 0)
            head = try Self.head(older)
            // As an engine before 034 left it: the lists, the migration not recorded.
            let connection = older.rawConnection
            try connection.execute("BEGIN IMMEDIATE")
            try connection.editingSchema {
                for (table, column, accepted) in Self.checked {
                    let comparisons = accepted.map { "\(column) = '\($0.replacingOccurrences(of: "'", with: "''"))'" }.joined(separator: " OR ")
                    let list = "\(column) IN (" + accepted.map { "'\($0)'" }.joined(separator: ", ") + ")"
                    try connection.execute(
                        """
                        UPDATE sqlite_master SET sql = replace(sql, '\(comparisons.replacingOccurrences(of: "'", with: "''"))',
                            '\(list.replacingOccurrences(of: "'", with: "''"))')
                        WHERE type = 'table' AND name = '\(table)'
                        """)
                }
            }
            try connection.execute("DELETE FROM schema_migrations WHERE identifier = '034_checks_as_comparisons'")
            try connection.execute("COMMIT")
            for (table, column, _) in Self.checked {
                let sql = try connection.scalarString("SELECT sql FROM sqlite_master WHERE name = '\(table)'") ?? ""
                #expect(sql.contains("\(column) IN ("), "the downgrade: \(sql)")
                #expect(try Self.opcodes(connection, insertingInto: table).contains("OpenEphemeral"), "what the lists cost: \(table)")
            }
        }
        let migrated = try EventStore(path: path, hash: StoreFixtures.hash)
        let connection = migrated.rawConnection
        for (table, column, _) in Self.checked {
            let sql = try connection.scalarString("SELECT sql FROM sqlite_master WHERE name = '\(table)'") ?? ""
            #expect(!sql.contains("\(column) IN ("), "\(table): \(sql)")
        }
        #expect(try connection.scalarString("PRAGMA integrity_check") == "ok")
        #expect(try migrated.changes(after: 0) == before)
        #expect(try Self.head(migrated).map { [$0.0] + $0.1.map(Int64.init) } == head.map { [$0.0] + $0.1.map(Int64.init) })
        let audit = try migrated.audit(verify: { _, _ in nil })
        #expect(audit.firstMismatch == nil)
        #expect(audit.triggersPresent)
        #expect(audit.events == 3)
    }

    /// The opcodes of an INSERT into `table`, as SQLite compiles it.
    static func opcodes(_ connection: Connection, insertingInto table: String) throws -> [String] {
        let plan = try connection.prepare("EXPLAIN " + insert(table, "x", 0))
        defer { plan.reset() }
        var opcodes: [String] = []
        while try plan.step() { opcodes.append(plan.string(1) ?? "") }
        return opcodes
    }

    /// The log's last seq and hash.
    static func head(_ store: EventStore) throws -> (Int64, [UInt8])? {
        let statement = try store.rawConnection.prepare("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1")
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return (statement.int64(0), statement.blob(1) ?? [])
    }
}
