internal import EventStore

extension Engine {
    /// Tells `handler` how a long schema migration goes: one that rewrites the log
    /// (migration 012 puts every logged JWS into parts), reported when it starts,
    /// every 16,384 events and when it ends. Process-wide; `nil` stops the reports.
    /// The command line prints them on standard error.
    public static func setMigrationProgressHandler(_ handler: (@Sendable (MigrationProgress) -> Void)?) {
        Migrator.progressHandler.withLock { $0 = handler }
    }
}
