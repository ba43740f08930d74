import CSQLite
@testable import EventStore
import Foundation
import Testing

/// SQLite's process-wide memory statistics are off: its allocations take no global
/// mutex. Nothing in this process initializes SQLite before a ``Connection`` does.
@Suite struct MemoryStatisticsTests {
    @Test("switched off before the first connection: SQLite counts no memory, and works as before")
    func memoryStatisticsAreOff() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("memory-statistics-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let connection = try Connection(path: folder.appendingPathComponent("m.sqlite").path)
        #expect(Connection.memoryStatisticsOff)
        try connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)")
        let insert = try connection.prepare("INSERT INTO t (body) VALUES (?)")
        for size in [10, 5_000, 70_000] {
            insert.reset()
            try insert.bind(1, blob: [UInt8](repeating: 7, count: size))
            try insert.step()
        }
        #expect(try connection.scalarInt("SELECT sum(length(body)) FROM t") == 75_010)
        // Counted, SQLite's memory in use would be hundreds of kilobytes by now.
        #expect(sqlite3_memory_used() == 0)
        #expect(sqlite3_memory_highwater(0) == 0)
        // Asked again now that SQLite runs, the setting is refused: it holds for the process.
        #expect(csqlite_disable_memory_statistics() == SQLITE_MISUSE)
    }
}
