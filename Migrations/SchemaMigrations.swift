/// The SQL schema of the event store, as ordered migrations compiled into the program
/// from `Migrations/sql/NNN_name.sql` (by `scripts/embed-resources.sh`: no resource
/// bundle is read at run time, so a binary copied alone still creates databases).
public enum SchemaMigrations {
    /// A migration: its identifier (the file name without `.sql`) and its SQL.
    public struct Migration: Sendable, Equatable {
        public var identifier: String
        public var sql: String

        public init(identifier: String, sql: String) {
            self.identifier = identifier
            self.sql = sql
        }
    }

    /// All migrations, in the order their numeric prefixes give.
    public static let migrations: [Migration] = embedded.sorted { $0.identifier < $1.identifier }

    /// All migrations, in the order their numeric prefixes give (kept for callers of the
    /// former bundle-reading version; it no longer throws).
    public static func all() throws -> [Migration] { migrations }
}
