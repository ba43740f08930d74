import SchemaMigrations

/// Applies the schema migrations in order, each with its record in one transaction.
public enum Migrator {
    /// Brings the database up to date. Safe to run from several processes at once:
    /// each step re-checks, under the write lock, whether it was already applied.
    /// - Returns: the identifiers applied by this call.
    @discardableResult
    public static func migrate(_ connection: Connection, migrations: [SchemaMigrations.Migration]) throws -> [String] {
        // Up to date already (every open but the first): a read, no write lock. Opening
        // must not queue behind writers, or a query could fail on a busy database.
        if let done = try? appliedIdentifiers(connection), migrations.allSatisfy({ done.contains($0.identifier) }) {
            return []
        }
        try connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (identifier TEXT PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT")
        var applied: [String] = []
        for migration in migrations {
            let didApply: Bool = try connection.write {
                let check = try connection.cached("SELECT 1 FROM schema_migrations WHERE identifier = ?")
                // A stepped statement pins a read snapshot until reset: reset it at once.
                defer { check.reset() }
                try check.bind(1, migration.identifier)
                if try check.step() { return (false, .commit) }
                if migration.sql.contains(Self.editsSchemaMarker) {
                    try connection.editingSchema { try connection.execute(migration.sql) }
                } else {
                    try connection.execute(migration.sql)
                }
                let record = try connection.cached(
                    "INSERT INTO schema_migrations (identifier, applied_at) VALUES (?, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))")
                try record.bind(1, migration.identifier)
                try record.step()
                return (true, .commit)
            }
            if didApply { applied.append(migration.identifier) }
        }
        return applied
    }

    /// A migration holding this line edits `sqlite_master` (loosening a CHECK
    /// without rebuilding a table): it runs with the schema writable (see
    /// `Connection.editingSchema`).
    static let editsSchemaMarker = "-- migrator: edits sqlite_master"

    /// The identifiers recorded as applied (throws when there is no record table yet).
    private static func appliedIdentifiers(_ connection: Connection) throws -> Set<String> {
        let statement = try connection.prepare("SELECT identifier FROM schema_migrations")
        defer { statement.reset() }
        var identifiers: Set<String> = []
        while try statement.step() { identifiers.insert(statement.string(0) ?? "") }
        return identifiers
    }
}
