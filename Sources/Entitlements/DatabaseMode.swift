internal import EventStore

/// How an ``Engine`` opens its database: whether it may create it, write it, migrate it.
public enum DatabaseMode: Sendable, Hashable {
    /// Creates the database when it does not exist and applies pending migrations:
    /// for an engine that records (`ingest`, `usage`, `serve`, `sync`).
    case create
    /// Writes an existing database (applying pending migrations) but never creates
    /// one: a missing file is `DATABASE_NOT_FOUND` (`replay`).
    case existing
    /// Only reads: never creates (a missing file is `DATABASE_NOT_FOUND`), never
    /// migrates, never writes, and never leaves a `-wal` or `-shm` file that the
    /// database owner's writer could not use. Works on a read-only file, folder or
    /// file system, for another user than the owner, and on a full disk (`query`,
    /// `audit`, `history`, `changes`, `consumption`). Ingest and replay on such an
    /// engine fail with `DATABASE_READ_ONLY`.
    case readOnly

    var storeMode: EventStore.OpenMode {
        switch self {
        case .create: return .create
        case .existing: return .existing
        case .readOnly: return .readOnly
        }
    }
}
