/// How far a migration that rewrites the log has come.
public struct MigrationProgress: Sendable, Hashable {
    /// The migration's identifier (`012_compact_log`).
    public var migration: String
    /// The database being migrated.
    public var path: String
    public var eventsDone: Int64
    public var eventsTotal: Int64

    public init(migration: String, path: String, eventsDone: Int64, eventsTotal: Int64) {
        self.migration = migration
        self.path = path
        self.eventsDone = eventsDone
        self.eventsTotal = eventsTotal
    }
}
