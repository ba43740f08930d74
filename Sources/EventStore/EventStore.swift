import EntitlementCore
import SchemaMigrations

/// The SQLite event store: the append-only log of verified events, the
/// quarantine of rejected inputs, and the per-customer projections.
///
/// One instance wraps one connection: use it from one thread at a time, and
/// open one per worker or process. Many processes may share one database file.
public final class EventStore {
    public let path: String
    let connection: Connection
    let hash: @Sendable ([UInt8]) -> [UInt8]

    /// The hash used to chain events (SHA-256): supplied by the caller, so the
    /// store needs no crypto library of its own.
    public typealias HashFunction = @Sendable ([UInt8]) -> [UInt8]

    /// Opens the database at `path`, creating it and applying migrations as needed.
    /// - Throws: ``StoreError`` with a code a person can act on (read-only, corrupt, cannot open).
    public init(path: String, hash: @escaping HashFunction, busyTimeoutMilliseconds: Int32 = 10_000) throws(StoreError) {
        self.path = path
        self.hash = hash
        do {
            connection = try Connection(path: path, mode: .readWrite, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
            try Migrator.migrate(connection, migrations: try SchemaMigrations.all())
        } catch let error as SQLiteError {
            throw StoreError(error, path: path)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(code: .cannotOpen, message: "cannot prepare the database \(path): \(error)")
        }
    }

    /// Runs `body`, turning SQLite failures into ``StoreError``.
    func mapped<T>(_ body: () throws -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch let error as SQLiteError {
            throw StoreError(error, path: path)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(code: .sqlite, message: "\(error)")
        }
    }

    /// The underlying connection, for tests and tools that inspect the schema.
    public var rawConnection: Connection { connection }

    /// Applied migrations, in order.
    public func appliedMigrations() throws(StoreError) -> [String] {
        try mapped {
            let statement = try connection.prepare("SELECT identifier FROM schema_migrations ORDER BY identifier")
            var identifiers: [String] = []
            while try statement.step() { identifiers.append(statement.string(0) ?? "") }
            return identifiers
        }
    }
}
