import EntitlementCore

/// The step of migration 012 (`Migrations/sql/012_compact_log.sql`) that SQL
/// alone cannot do: rewriting every logged JWS into its parts (``StoredJWS``).
///
/// It runs inside the migration's one transaction, between the SQL that makes
/// the new tables and the SQL that makes the view: interrupted (killed, a full
/// disk), the transaction rolls back and the database is as it was. Every row
/// keeps its `seq`, identity, `prev_hash` and `hash`; an event is split only when
/// its parts give back its stored JWS byte for byte (checked here, row by row),
/// else it is kept whole. The old table's indexes and triggers are made again on
/// the new one with their SQL unchanged.
enum CompactLogMigration {
    /// Reports (events done, events in all) now and then while the log is rewritten.
    typealias Progress = (Int64, Int64) -> Void


    static func run(_ connection: Connection, progress: Progress) throws {
        let total = try connection.scalarInt("SELECT count(*) FROM events") ?? 0
        progress(0, total)
        // The old table's own indexes and triggers (the UNIQUE index SQLite made has no SQL).
        let objects = try connection.prepare(
            "SELECT sql FROM sqlite_master WHERE tbl_name = 'events' AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY type, name")
        var recreate: [String] = []
        while try objects.step() { recreate.append(objects.string(0) ?? "") }
        objects.reset()

        let headers = JWSHeaders()
        let scan = try connection.prepare(
            """
            SELECT seq, identity, kind, event_id, customer_key, app_transaction_id, original_transaction_id, transaction_id,
                notification_type, subtype, signed_date, received_at, raw, prev_hash, hash, payload
            FROM events ORDER BY seq
            """)
        var done: Int64 = 0
        while try scan.step() {
            let seq = scan.int64(0)
            let kind = scan.string(2) ?? ""
            let raw = scan.string(12) ?? ""
            var row = LogRow(
                seq: seq, identity: scan.string(1) ?? "", kind: kind, customerKey: scan.string(4),
                filing: LogFiling(
                    eventId: scan.string(3) ?? "", appTransactionId: scan.string(5), originalTransactionId: scan.string(6),
                    transactionId: scan.string(7), notificationType: scan.string(8), subtype: scan.string(9),
                    signedDate: scan.int64(10)),
                receivedAt: scan.int64(11), content: .whole(raw: raw, body: nil), prevHash: scan.blob(13) ?? [],
                hash: scan.blob(14) ?? [])
            if kind != OperatorKind.usage.rawValue {
                row.content = content(of: raw, decoded: scan.textBytes(15))
            }
            try EventStore.insert(row, into: "events_compact", on: connection, headers: headers, form: .text)
            done += 1
            if done & 0x3FFF == 0 { progress(done, total) }
        }
        scan.reset()

        // Views an operator made on `events` would stop the rename (SQLite checks the whole
        // schema while it renames): the legacy rename leaves them be, and they read the new
        // table by its name.
        try connection.execute("DROP TABLE events")
        try connection.execute("PRAGMA legacy_alter_table = ON")
        defer { try? connection.execute("PRAGMA legacy_alter_table = OFF") }
        try connection.execute("ALTER TABLE events_compact RENAME TO events")
        for sql in recreate { try connection.execute(sql) }
        progress(done, total)
    }

    /// How the logged JWS `raw` is kept: in parts when they give it back exactly,
    /// else whole (with the payload decoded earlier, for people reading the database).
    static func content(of raw: String, decoded: [UInt8]?) -> LogRow.Content {
        guard let outer = StoredJWS.Parts(Substring(raw)) else { return .whole(raw: raw, body: decoded) }
        let candidates = StoredJWS.nestedCandidates(inPayload: outer.payload)
        let stored = StoredJWS(outer: outer, nested: candidates)
        guard stored.jws == raw else { return .whole(raw: raw, body: outer.payload) }
        return .parts(stored)
    }
}
