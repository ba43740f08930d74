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
    }

    static func remove(_ path: String) {
        for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    /// Checkpoints the WAL into the file and measures. Open no other connection meanwhile.
    static func measure(_ path: String, columns: Bool = true) throws -> Figures {
        let store = try EventStore(path: path, hash: { SHA256.hash($0) })
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
                "SELECT avg(length(raw)), avg(length(payload)), avg(coalesce(length(nested_payloads), 0)) FROM events")
            if try statement.step() {
                averages = [
                    ("raw", Double(statement.optionalInt64(0) ?? 0)), ("payload", Double(statement.optionalInt64(1) ?? 0)),
                    ("nested_payloads", Double(statement.optionalInt64(2) ?? 0)),
                ]
            }
            let facts = try connection.prepare("SELECT avg(length(facts)) FROM event_facts")
            if try facts.step() { averages.append(("event_facts.facts", Double(facts.optionalInt64(0) ?? 0))) }
            let states = try connection.prepare("SELECT avg(length(state)) FROM projections")
            if try states.step() { averages.append(("projections.state", Double(states.optionalInt64(0) ?? 0))) }
        }
        return Figures(
            events: events, fileBytes: fileBytes, bytesPerEvent: events > 0 ? Double(fileBytes) / Double(events) : 0,
            objects: objects, averageColumns: averages)
    }
}
