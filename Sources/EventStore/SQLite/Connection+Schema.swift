import CSQLite

extension Connection {
    /// Runs `body` with `sqlite_master` writable, inside the caller's transaction,
    /// then bumps the schema version so that every connection (this one too)
    /// re-reads the schema.
    ///
    /// This is SQLite's documented way to loosen a CHECK constraint without
    /// rebuilding the table (ALTER TABLE, "making other kinds of table schema
    /// changes"): rows, their `seq` and hash chain, indexes and triggers stay
    /// exactly as they are. Defensive mode, which forbids it, is off only for the
    /// length of `body`.
    package func editingSchema(_ body: () throws -> Void) throws {
        precondition(isInTransaction, "edit the schema inside a write transaction")
        let version = try scalarInt("PRAGMA schema_version") ?? 0
        _ = csqlite_set_defensive(handle, 0)
        defer {
            try? execute("PRAGMA writable_schema = OFF")
            _ = csqlite_set_defensive(handle, 1)
        }
        try execute("PRAGMA writable_schema = ON")
        try body()
        try execute("PRAGMA schema_version = \(version + 1)")
    }
}
