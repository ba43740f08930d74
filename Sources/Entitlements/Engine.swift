import AppStoreVerification
import EntitlementCore
internal import EventStore
import Foundation
import Synchronization

/// The entitlement engine as a library: verify and ingest App Store signed
/// data, answer what a customer may use, rebuild state from the log.
///
/// An engine owns one database connection for writes, guarded by a lock, a
/// connection per concurrent query (queries on different threads run in
/// parallel), and a thread-safe verifier: share one engine across a server's
/// request handlers, or open one per worker thread for parallel writes
/// (SQLite serializes writers; each batch is one transaction).
public final class Engine: Sendable {
    public let configuration: EngineConfiguration
    /// Verification without storage (shared, thread-safe).
    public let documentVerifier: DocumentVerifier
    public var verifier: SignedDataVerifier { documentVerifier.verifier }
    public let databasePath: String
    let rulesJSON: String
    let store: LockedStore
    /// How the write connection waits for another process's lock (``abandonLockWaits()``),
    /// reached without taking the store's lock, which a waiting write holds.
    let writerBusyWait: BusyWait
    /// Connections for queries, beside the write connection.
    let readers: ReaderPool
    /// Products met that the rules do not name (``takeProductWarnings()``).
    let productWarnings = ProductWarnings()
    /// The database's active rules, parsed once per change (``activeRules()``).
    let activeRulesCache = ActiveRulesCache()
    /// Original transaction ids named by V1 notifications rejected (``takeV1SyncHints()``).
    let v1SyncHints = V1SyncHints()
    /// Threads on which the `async` API runs the work (started on first use).
    let threads = EngineThreads()
    /// Commits concurrent `async` ingests together.
    let groupCommit = GroupCommit()
    /// Wakes the ``TransactionFinisher`` when a batch queued Finish Transaction calls.
    let finishWakeup = Wakeup()
    /// Confirms commits with Litestream before they are acknowledged; `nil` without replication.
    let replication: ReplicationGate?

    /// How this engine opened its database.
    public let mode: DatabaseMode

    /// Opens the database at `databasePath` as `mode` allows.
    ///
    /// - Parameters:
    ///   - configuration: the app, the trusted roots, the environments and the rules.
    ///   - databasePath: the SQLite file of the log.
    ///   - mode: ``DatabaseMode/create`` (the default) creates the database when it
    ///     does not exist and applies pending migrations, for an engine that records
    ///     (ingest, usage, serve, sync); ``DatabaseMode/existing`` writes an existing
    ///     database (replay); ``DatabaseMode/readOnly`` only reads (query, audit,
    ///     history, changes): it never creates, migrates or writes anything, and
    ///     works on a read-only copy, as another user, and on a full disk.
    ///
    /// The first engine a process opens, before anything else in it has used SQLite,
    /// switches off SQLite's process-wide memory statistics (`SQLITE_CONFIG_MEMSTATUS`):
    /// the engine reads none, and counting them took a process-wide mutex on every
    /// allocation. A host application that reads `sqlite3_memory_used()` sees 0 then;
    /// one that used SQLite first keeps its statistics.
    /// - Throws: ``EngineError`` when the trust store or the database cannot be used:
    ///   `DATABASE_NOT_FOUND` (no file, for ``DatabaseMode/existing`` and
    ///   ``DatabaseMode/readOnly``), `DATABASE_TOO_NEW` (written by a newer engine),
    ///   and the other `DATABASE_*` codes.
    public init(configuration: EngineConfiguration, databasePath: String, mode: DatabaseMode = .create) throws(EngineError) {
        self.configuration = configuration
        self.databasePath = databasePath
        self.mode = mode
        self.rulesJSON = JSONWriter.string(configuration.rules.canonicalJSON)
        replication = configuration.replication.map { ReplicationGate(settings: $0.litestream, databasePath: databasePath) }
        documentVerifier = try DocumentVerifier(configuration: configuration)
        do {
            let opened = try EventStore(
                path: databasePath, hash: { SHA256.hash($0) }, hashParts: { SHA256.hash($0, $1) }, mode: mode.storeMode,
                busyTimeoutMilliseconds: configuration.storeBusyTimeout, appUsersFromAccountToken: configuration.appUsers.fromAppAccountToken)
            // With replication, Litestream alone checkpoints (specification section 15).
            if configuration.replication != nil { try opened.leaveCheckpointsToReplication() }
            // Before anything is read or written: the database must be this app's (section 2).
            // A read-only engine only checks; the binding is recorded by the next writer.
            try opened.bind(bundleId: configuration.bundleId, environments: configuration.environments, now: Self.now())
            // A fresh database takes the configuration's rules on first use (section 13).
            if mode != .readOnly { try opened.recordRulesIfNone(version: configuration.rules.version, json: rulesJSON) }
            // A database made before customers were linked keeps otid: customers apart
            // from their appTransactionId until rebuilt once (specification section 5).
            // A writer rebuilds it now, and a failure to is the engine's failure to open;
            // a read-only engine writes nothing and leaves it to the next writer.
            if mode != .readOnly, try opened.identityRebuildPending() {
                // Not a rules change: the rebuild keeps the database's active rules.
                let stored = try opened.engineState().rulesJSON
                let active = (stored.isEmpty ? nil : try? Rules(jsonText: stored)) ?? configuration.rules
                _ = try opened.replay(
                    rules: active, rulesJSON: stored.isEmpty ? rulesJSON : stored, now: Self.now(), collectDiff: false)
            }
            writerBusyWait = opened.busyWait
            store = LockedStore(opened)
            readers = ReaderPool(
                path: databasePath, busyTimeoutMilliseconds: configuration.storeBusyTimeout, readsFollowedCopy: mode == .readOnly,
                appUsersFromAccountToken: configuration.appUsers.fromAppAccountToken)
        } catch {
            throw EngineError(error)
        }
    }

    deinit { threads.stop() }

    /// Milliseconds since 1970, now.
    public static func now() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
}
