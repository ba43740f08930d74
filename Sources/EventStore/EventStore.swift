import EntitlementCore

/// The SQLite event store: the append-only log of verified events, the
/// quarantine of rejected inputs, and the per-customer projections.
///
/// One instance wraps one connection: use it from one thread at a time, and
/// open one per worker or process. Many processes may share one database file.
public final class EventStore {
    public let path: String
    let connection: Connection
    let hash: @Sendable ([UInt8]) -> [UInt8]
    /// `hash` of two byte ranges one after the other (see ``HashPartsFunction``).
    let hashParts: HashPartsFunction
    /// The JWS headers this connection has met (see ``JWSHeaders``).
    let jwsHeaders = JWSHeaders()
    /// The form this connection writes signatures and paths in, once looked up (see ``LogColumns``).
    private var knownLogColumnForm: LogColumns.Form?
    /// Whether this connection's database numbers projection rows by customer, once
    /// looked up (see ``projectionRowNumber(of:)``).
    var knownProjectionsNumbered: Bool?
    /// The `customer_lookup` rows this connection has written or seen committed (see ``KnownLookups``).
    let knownLookups = KnownLookups()
    /// The `lifecycle_shapes` rows this connection has met (see ``LifecycleShapes``).
    let lifecycleShapes = LifecycleShapes()
    /// The bytes before the JWS that the last appended event's chain hash covered, kept
    /// for their capacity (see ``chainHash(prevHash:seq:identity:raw:digest:digestFrom:material:)``).
    var chainMaterial: [UInt8] = []
    /// The statements that write `customer_rows`, by the columns they write (see
    /// ``writeCustomerRow(_:_:)``): their text made once, not at every write.
    var customerRowSQL: [Int: String] = [:]
    /// The columns of `customer_rows` held back while ``holdsCustomerRows`` (see
    /// ``writeCustomerRow(_:_:)``), by customer: written with the customer's next write.
    var heldCustomerRows: [CustomerKey: [(CustomerRowColumn, CustomerRowValue)]] = [:]
    /// Whether ``writeCustomerRow(_:_:)`` holds its columns back instead of writing them.
    var holdsCustomerRows = false
    /// The last event of each projection written in the current generation while an
    /// append's transaction runs (``remembersProjectedSeqs``): the revenue facts are kept
    /// at it, without reading back the row just written. Emptied when that transaction ends.
    var projectedLastSeqs: [CustomerKey: Int64] = [:]
    /// Whether ``writeProjection(key:stateBytes:generation:rulesVersion:lastSeq:table:)`` fills ``projectedLastSeqs``.
    var remembersProjectedSeqs = false
    /// The active rules' key read by ``withOneSnapshot(_:)`` while its snapshot is held.
    var snapshotRulesKey: ActiveRulesKey?
    /// Whether writes record the lifecycle feed (specification section 12), as they must.
    /// Off only in the benchmark that measures what recording it costs the ingest.
    package var recordsLifecycle = true
    /// Whether an `appAccountToken` makes its customer the app user of that UUID
    /// (`appUsers.fromAppAccountToken`, specification section 13): the lifecycle then
    /// reports a change of token, and an operator's first link away from it, as a TRANSFER.
    public let appUsersFromAccountToken: Bool

    /// The hash used to chain events (SHA-256): supplied by the caller, so the
    /// store needs no crypto library of its own.
    public typealias HashFunction = @Sendable ([UInt8]) -> [UInt8]

    /// The same hash of `first` followed by `second`, taken without joining them: the
    /// chain hash covers each event's JWS (5-20 KB) after a few dozen bytes of its own,
    /// and the JWS is hashed where it lies.
    public typealias HashPartsFunction = @Sendable (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> [UInt8]

    /// How this store was opened.
    public let mode: OpenMode
    /// For a reader that reads the file as immutable, what the files looked like when it opened.
    let snapshot: ReadSnapshot?
    /// Whether a ``OpenMode/readOnly`` store reads a copy Litestream follows as immutable
    /// (see ``FollowedCopy``); false for the readers of an engine that writes the database.
    let readsFollowedCopy: Bool

    /// Opens the database at `path` as `mode` allows: creating it and applying
    /// migrations (``OpenMode/create``, the default), writing an existing one
    /// (``OpenMode/existing``), or only reading it (``OpenMode/readOnly``).
    /// Another writer holding the lock while the database is created or migrated
    /// is waited for, never reported.
    /// - Throws: ``StoreError`` with a code a person can act on (`DATABASE_NOT_FOUND`,
    ///   `DATABASE_TOO_NEW`, read-only, corrupt, cannot open).
    /// - Parameters:
    ///   - hashParts: `hash` of two byte ranges in a row; by default they are
    ///     joined and given to `hash`.
    ///   - readsFollowedCopy: for ``OpenMode/readOnly``, whether a copy that Litestream
    ///     follows (`PATH-txid` beside it) is read as immutable, without SQLite's locks
    ///     (the default). A process that also writes the database passes false.
    public init(
        path: String, hash: @escaping HashFunction, hashParts: HashPartsFunction? = nil, mode: OpenMode = .create,
        busyTimeoutMilliseconds: Int32 = 10_000, readsFollowedCopy: Bool = true, appUsersFromAccountToken: Bool = false
    ) throws(StoreError) {
        self.path = path
        self.appUsersFromAccountToken = appUsersFromAccountToken
        self.hash = hash
        self.hashParts = hashParts ?? { first, second in hash(Array(first) + Array(second)) }
        self.mode = mode
        self.readsFollowedCopy = readsFollowedCopy
        (connection, snapshot) = try Self.openConnection(
            path: path, mode: mode, busyTimeoutMilliseconds: busyTimeoutMilliseconds, readsFollowedCopy: readsFollowedCopy)
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

    /// Throws `DATABASE_READ_ONLY` for a store opened ``OpenMode/readOnly``.
    func requireWritable() throws(StoreError) {
        guard mode == .readOnly else { return }
        throw StoreError(
            code: .readOnly, message: "the database \(path) was opened read-only (for a command that only reads); nothing was written")
    }

    /// The underlying connection, for tests and tools that inspect the schema.
    public var rawConnection: Connection { connection }

    /// How this store's connection waits for another's lock: abandoned from any thread
    /// (``BusyWait/abandon()``) when what waits is stopping.
    public var busyWait: BusyWait { connection.busyWait }

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

extension EventStore {
    /// The form this connection's log is written in (see ``LogColumns``).
    func logColumnForm() throws -> LogColumns.Form {
        if let knownLogColumnForm { return knownLogColumnForm }
        let form = try LogColumns.form(on: connection)
        knownLogColumnForm = form
        return form
    }
}
