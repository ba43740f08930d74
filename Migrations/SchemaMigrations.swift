import Foundation

/// The SQL schema of the event store, as ordered migrations read from `Migrations/sql/NNN_name.sql`.
public enum SchemaMigrations {
    /// A migration: its identifier (the file name without `.sql`) and its SQL.
    public struct Migration: Sendable, Equatable {
        public var identifier: String
        public var sql: String
    }

    /// All migrations, in the order their numeric prefixes give.
    public static func all() throws -> [Migration] {
        guard let folder = Bundle.module.url(forResource: "sql", withExtension: nil) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "the Migrations/sql resource is missing from the build"])
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".sql") }
            .sorted()
        return try names.map { name in
            let sql = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            return Migration(identifier: String(name.dropLast(4)), sql: sql)
        }
    }
}
