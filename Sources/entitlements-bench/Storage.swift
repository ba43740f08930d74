import AppStoreVerification
import EntitlementCore
import EventStore
import Foundation

/// Bytes on disk: the database file after a WAL checkpoint, per event, and where
/// they go (SQLite's `dbstat` table, where the system library has it).
enum Storage {
    struct Figures {
        var events: Int64
        var fileBytes: Int64
        var bytesPerEvent: Double
        /// Bytes per object (table or index), largest first.
        var objects: [(name: String, bytes: Int64)]
        /// Average length of the big columns of `events`, in bytes.
        var averageColumns: [(name: String, bytes: Double)]
        /// Bytes of row and index-entry content (SQLite's `dbstat` payload, no page
        /// overhead) per event, leaving out what is shared: the schema, the engine's
        /// own rows and the JWS headers (stored once per signing certificate).
        var contentBytesPerEvent: Double = 0
        /// The JWS headers stored (distinct), and their bytes with their index.
        var headers: Int64 = 0
        var headerBytes: Int64 = 0
    }

    /// The objects whose content does not grow with the events.
    static let shared = [
        "sqlite_schema", "sqlite_master", "schema_migrations", "sqlite_autoindex_schema_migrations_1", "engine_state", "app_binding",
        "change_feed_state", "sync_state", "sqlite_sequence", "jws_headers", "sqlite_autoindex_jws_headers_1",
    ]

    static func remove(_ path: String) {
        for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    /// Checkpoints the WAL into the file and measures. Open no other connection meanwhile.
    static func measure(_ path: String, columns: Bool = true) throws -> Figures {
        let store = try EventStore(path: path, hash: { SHA256.hash($0) }, hashParts: { SHA256.hash($0, $1) })
        let connection = store.rawConnection
        try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        let events = try store.eventCount()
        let fileBytes = Machine.fileSize(path) + Machine.fileSize(path + "-wal")
        var objects: [(String, Int64)] = []
        if let statement = try? connection.prepare("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC") {
            while (try? statement.step()) == true { objects.append((statement.string(0) ?? "?", statement.int64(1))) }
        }
        var averages: [(String, Double)] = []
        if columns {
            let statement = try connection.prepare(
                """
                SELECT avg(coalesce(length(body), 0)), avg(coalesce(length(signature), 0)), avg(coalesce(length(raw), 0)),
                    (SELECT coalesce(sum(length(payload) + length(signature)), 0) FROM jws_nested) * 1.0 / max(count(*), 1)
                FROM events
                """)
            if try statement.step() {
                averages = [
                    ("body", Double(statement.optionalInt64(0) ?? 0)), ("signature", Double(statement.optionalInt64(1) ?? 0)),
                    ("raw (kept whole)", Double(statement.optionalInt64(2) ?? 0)),
                    ("jws_nested payload + signature", Double(statement.optionalInt64(3) ?? 0)),
                ]
            }
            let facts = try connection.prepare("SELECT avg(length(facts)) FROM event_facts")
            if try facts.step() { averages.append(("event_facts.facts", Double(facts.optionalInt64(0) ?? 0))) }
            let states = try connection.prepare("SELECT avg(length(state)) FROM projections")
            if try states.step() { averages.append(("projections.state", Double(states.optionalInt64(0) ?? 0))) }
        }
        var figures = Figures(
            events: events, fileBytes: fileBytes, bytesPerEvent: events > 0 ? Double(fileBytes) / Double(events) : 0,
            objects: objects, averageColumns: averages)
        if let content = try? connection.prepare(
            "SELECT coalesce(sum(payload), 0) FROM dbstat WHERE name NOT IN (" + shared.map { "'\($0)'" }.joined(separator: ", ") + ")"),
            (try? content.step()) == true, events > 0
        {
            figures.contentBytesPerEvent = Double(content.int64(0)) / Double(events)
        }
        if let headers = try? connection.prepare(
            "SELECT count(*), coalesce(sum(length(header)), 0) * 2 FROM jws_headers"), (try? headers.step()) == true
        {
            figures.headers = headers.int64(0)
            figures.headerBytes = headers.int64(1)
        }
        return figures
    }
}
