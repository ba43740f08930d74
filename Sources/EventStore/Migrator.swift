import EntitlementCore
import SchemaMigrations
import Synchronization

/// Applies the schema migrations in order, each with its record in one transaction (all
/// of them in one for a new database).
public enum Migrator {
    /// Where a database's schema stands against the migrations this engine knows.
    public enum SchemaStatus: Sendable, Equatable {
        /// No engine schema yet (a new, empty file, or one being created right now).
        case empty
        /// Every known migration applied.
        case current
        /// Some known migrations not applied yet (a writer applies them on open).
        case behind(missing: [String])
    }

    /// The number a migration identifier starts with (`"004_projections_next"` -> 4).
    static func number(of identifier: String) -> Int {
        Int(identifier.prefix { $0.isNumber }) ?? 0
    }

    /// Reads, without writing or taking the write lock, where the schema stands.
    /// - Throws: ``StoreError`` `DATABASE_TOO_NEW` when the database records a
    ///   migration this engine does not know, or a `user_version` above the
    ///   highest migration number it knows: a newer engine wrote it, and this one
    ///   must not read or write it with an older idea of the schema.
    public static func status(_ connection: Connection, migrations: [SchemaMigrations.Migration]) throws -> SchemaStatus {
        let known = Set(migrations.map(\.identifier))
        let highest = migrations.map { number(of: $0.identifier) }.max() ?? 0
        let userVersion = try connection.scalarInt("PRAGMA user_version") ?? 0
        // One statement, one snapshot: read apart, another process could create the schema
        // between the two reads (no schema_migrations yet, then tables), and the file would
        // look like another program's database.
        let counts = try connection.prepare(
            "SELECT (SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'), (SELECT count(*) FROM sqlite_master)")
        guard try counts.step() else { throw StoreError(code: .sqlite, message: "cannot read the schema of \(connection.path)") }
        let hasRecord = counts.int64(0)
        let tablesSeen = counts.int64(1)
        counts.reset()
        var applied: [String] = []
        if hasRecord > 0 { applied = try appliedIdentifiers(connection) }
        let unknown = applied.filter { !known.contains($0) }.sorted()
        if !unknown.isEmpty || userVersion > Int64(highest) {
            let what = unknown.isEmpty
                ? "its schema version is \(userVersion), this engine knows up to \(highest)"
                : "it records migration\(unknown.count == 1 ? "" : "s") \(unknown.joined(separator: ", ")) that this engine does not know"
            throw StoreError(
                code: .tooNew,
                message: "the database \(connection.path) was written by a newer version of the engine (\(what)); nothing was read or written: run the newer engine, or restore a backup made by this version")
        }
        if hasRecord == 0 {
            if tablesSeen > 0 {
                throw StoreError(
                    code: .corrupt, message: "\(connection.path) is an SQLite database but not one made by this engine (it has no schema_migrations table)")
            }
            return .empty
        }
        let missing = migrations.map(\.identifier).filter { !applied.contains($0) }
        return missing.isEmpty ? .current : .behind(missing: missing)
    }

    /// Brings the database up to date. Safe to run from several processes at once:
    /// each step re-checks, under the write lock, whether it was already applied.
    /// A database written by a newer engine is refused before anything is written.
    /// - Returns: the identifiers applied by this call.
    @discardableResult
    public static func migrate(_ connection: Connection, migrations: [SchemaMigrations.Migration]) throws -> [String] {
        // Up to date already (every open but the first): a read, no write lock. Opening
        // must not queue behind writers, or a query could fail on a busy database.
        let before = try status(connection, migrations: migrations)
        if before == .current { return [] }
        let startedEmpty = before == .empty
        try connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (identifier TEXT PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT")
        // Each step rewrites the schema's pages into the write-ahead log: checkpointed only
        // at the end, a new database's log held every step's pages, more than a small disk
        // has. While migrating, a commit that leaves the log past a few pages checkpoints it
        // (SQLite then writes the log again from its start); unless checkpoints are left to
        // a replicator (0), which decides them alone.
        let autoCheckpoint = try connection.scalarInt("PRAGMA wal_autocheckpoint") ?? 0
        if autoCheckpoint > Self.migratingCheckpointPages {
            try connection.execute("PRAGMA wal_autocheckpoint = \(Self.migratingCheckpointPages)")
        }
        defer {
            if autoCheckpoint > Self.migratingCheckpointPages { _ = try? connection.execute("PRAGMA wal_autocheckpoint = \(autoCheckpoint)") }
        }
        var applied: [String] = []
        if startedEmpty {
            // A new database: every step in one transaction, one commit (a step per commit
            // cost a new database tens of milliseconds of syncs before its first event).
            // Another engine creating it at the same moment is seen under the write lock: the
            // steps it applied are skipped, as below.
            applied = try connection.write {
                var done: [String] = []
                for migration in migrations where try apply(migration, on: connection, migrations: migrations) {
                    done.append(migration.identifier)
                }
                return (done, .commit)
            }
        } else {
            for migration in migrations {
                let didApply: Bool = try connection.write {
                    (try apply(migration, on: connection, migrations: migrations), .commit)
                }
                if didApply { applied.append(migration.identifier) }
                if didApply && migration.sql.contains(Self.stepMarker) {
                    // A rewrite of the log left a write-ahead log as large as the log: move it into
                    // the database and give its space back now, not at some later checkpoint.
                    _ = try? connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                }
            }
        }
        if !applied.isEmpty {
            // Each step rewrote the schema's pages in the write-ahead log (a new database's
            // log held every page about twice): move them into the database and give the
            // space back, as a database on a small disk needs.
            _ = try? connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        return applied
    }

    /// Applies `migration` in the caller's write transaction, with its record and the
    /// schema version; `false` when it was applied already.
    private static func apply(_ migration: SchemaMigrations.Migration, on connection: Connection, migrations: [SchemaMigrations.Migration]) throws -> Bool {
        // Under the write lock: another engine may have got there first, newer or not.
        _ = try status(connection, migrations: migrations)
        let check = try connection.cached("SELECT 1 FROM schema_migrations WHERE identifier = ?")
        // A stepped statement pins a read snapshot until reset: reset it at once.
        defer { check.reset() }
        try check.bind(1, migration.identifier)
        if try check.step() { return false }
        if migration.sql.contains(Self.editsSchemaMarker) {
            try connection.editingSchema { try connection.execute(migration.sql) }
        } else if let step = migration.sql.range(of: Self.stepMarker) {
            // SQL, then the engine's step named on the marker line, then the rest of the SQL.
            let after = migration.sql[step.upperBound...]
            let name = after.prefix { !$0.isNewline }.trimmingCharacters(in: .whitespaces)
            try connection.execute(String(migration.sql[..<step.lowerBound]))
            let known = try Self.runStep(name, on: connection) { done, total in
                Self.progressHandler.withLock { $0 }?(MigrationProgress(
                    migration: migration.identifier, path: connection.path, eventsDone: done, eventsTotal: total))
            }
            guard known else {
                throw StoreError(code: .corrupt, message: "migration \(migration.identifier) names an unknown step \(name)")
            }
            try connection.execute(String(after.drop { !$0.isNewline }))
        } else {
            try connection.execute(migration.sql)
        }
        let record = try connection.cached(
            "INSERT INTO schema_migrations (identifier, applied_at) VALUES (?, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))")
        try record.bind(1, migration.identifier)
        try record.step()
        // The schema version says how far this database has come, so that an older
        // engine refuses it (DATABASE_TOO_NEW) even before reading schema_migrations.
        let number = Self.number(of: migration.identifier)
        if (try connection.scalarInt("PRAGMA user_version") ?? 0) < Int64(number) {
            try connection.execute("PRAGMA user_version = \(number)")
        }
        return true
    }

    /// The write-ahead log's pages past which a commit checkpoints it while migrating.
    static let migratingCheckpointPages: Int64 = 16

    /// A migration holding this line (followed by a step's name) runs its SQL up
    /// to the line, then the step (Swift code of the engine's: rewriting rows as SQL
    /// cannot), then the rest, all in its one transaction.
    static let stepMarker = "-- migrator: step "

    /// Runs the step a migration names; `false` when no step has that name.
    static func runStep(_ name: String, on connection: Connection, progress: CompactLogMigration.Progress) throws -> Bool {
        switch name {
        case "compact-log":
            try CompactLogMigration.run(connection, progress: progress)
            return true
        default:
            return false
        }
    }

    /// Told how a long migration goes (a rewrite of the log), when set: the
    /// command line prints it on standard error. Process-wide.
    public static let progressHandler = Mutex<(@Sendable (MigrationProgress) -> Void)?>(nil)

    /// A migration holding this line edits `sqlite_master` (loosening a CHECK
    /// without rebuilding a table): it runs with the schema writable (see
    /// `Connection.editingSchema`).
    static let editsSchemaMarker = "-- migrator: edits sqlite_master"

    /// The identifiers recorded as applied.
    private static func appliedIdentifiers(_ connection: Connection) throws -> [String] {
        let statement = try connection.prepare("SELECT identifier FROM schema_migrations")
        defer { statement.reset() }
        var identifiers: [String] = []
        while try statement.step() { identifiers.append(statement.string(0) ?? "") }
        return identifiers
    }
}
