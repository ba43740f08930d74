import CSQLite
import Foundation

/// One SQLite connection, closed when released. Not thread-safe: use it from one
/// thread at a time (the engine opens one per worker).
public final class Connection {
    let handle: OpaquePointer
    private var cache: [String: Statement] = [:]
    /// The same statements by where their SQL text lies in memory: a statement written as a
    /// literal is found without hashing its text (a few hundred bytes, on every call). A hit
    /// is checked byte for byte, so a text that reuses the address of another finds its own.
    private var cacheByAddress: [Int: (length: Int, statement: Statement)] = [:]
    public let path: String
    /// How this connection was opened.
    public let mode: Mode
    /// How this connection waits for another's lock; abandoned from any thread when a
    /// server stops (see ``BusyWait``).
    public let busyWait: BusyWait
    /// The page size of databases this build creates.
    public static let newDatabasePageSize = 16_384
    /// How many of this connection's ``write(priority:_:)`` transactions rolled back:
    /// what a connection remembers of rows it wrote holds while this stays the same.
    public private(set) var rollbacks = 0

    /// How a connection is opened.
    public enum Mode: Sendable {
        /// Reads and writes; creates the file when it does not exist.
        case readWrite
        /// Reads and writes an existing file; a missing file is `SQLITE_CANTOPEN`.
        case readWriteExisting
        /// Reads only, through SQLite's shared-memory WAL index (the `-shm` and
        /// `-wal` files beside the database, created when missing and possible).
        case readOnly
        /// Reads only, as if the file could not change (`immutable=1`): no locks,
        /// no `-shm` or `-wal` created or read. Only correct while no other
        /// connection writes the file; see ``EventStore/OpenMode/readOnly``.
        case immutable
    }

    /// SQLite's process-wide memory statistics switched off before its first connection:
    /// the engine reads none of them, and with them on every allocation and free inside
    /// SQLite takes a process-wide mutex (about 4.5 % of an append's instructions). `false`
    /// when SQLite was initialized already (by a host application that opened a database
    /// first): it then keeps counting, and works as before.
    static let memoryStatisticsOff: Bool = csqlite_disable_memory_statistics() == SQLITE_OK

    /// Opens (and creates, in ``Mode/readWrite``) the database at `path`; writers
    /// in WAL mode with `synchronous = FULL` (a commit is on stable storage when it
    /// returns); all with a busy timeout.
    public init(path: String, mode: Mode = .readWrite, busyTimeoutMilliseconds: Int32 = 10_000) throws(SQLiteError) {
        _ = Self.memoryStatisticsOff
        var handle: OpaquePointer?
        let flags: Int32
        var name = path
        switch mode {
        case .readWrite: flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        case .readWriteExisting: flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX
        case .readOnly: flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX
        case .immutable:
            flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
            name = "file:" + Self.uriEscaped(path) + "?immutable=1"
        }
        let code = sqlite3_open_v2(name, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            let systemErrno = handle.map { sqlite3_system_errno($0) } ?? 0
            if let handle { sqlite3_close_v2(handle) }
            throw SQLiteError(
                code: ResultCode(rawValue: code), message: "cannot open database at \(path): \(message)", systemErrno: systemErrno)
        }
        self.handle = handle
        self.path = path
        self.mode = mode
        busyWait = BusyWait(timeoutMilliseconds: busyTimeoutMilliseconds)
        sqlite3_extended_result_codes(handle, 1)
        Self.installBusyHandler(handle, busyWait)
        _ = csqlite_enable_defensive(handle)
        if (mode == .readWrite || mode == .readWriteExisting) && path != ":memory:" {
            // A new database gets 16 KB pages (SQLite's default is 4 KB); an existing one
            // keeps its own, as SQLite ignores this once the file exists. Replay reads the
            // facts and projections scattered between the log's rows: with 4 KB pages
            // reading them cold took 10.8-11.3 s for 1,000,000 events, with 16 KB 6.5-7.0 s
            // (and the file is 29 % smaller). The cost is in writing: a commit writes whole
            // pages to the WAL, so a small transaction writes more bytes than with 4 KB
            // pages (see Benchmarks/README.md).
            try execute("PRAGMA page_size = \(Self.newDatabasePageSize)")
            // WAL is checked, not assumed.
            let journal = try scalarString("PRAGMA journal_mode = WAL")
            guard journal?.lowercased() == "wal" else {
                throw SQLiteError(code: .error, message: "database at \(path) refused WAL mode (journal_mode is \(journal ?? "unknown"))")
            }
            // FULL: every commit syncs the write-ahead log before it returns, so a commit
            // that has returned survives a power cut or an OS crash, and an answer given
            // after it acknowledges only what is on stable storage (specification section 18).
            // NORMAL synced only at checkpoints: a power cut lost every commit since the
            // last one. Writers commit a batch at a time, one sync for all it holds.
            try execute("PRAGMA synchronous = FULL")
            #if canImport(Darwin)
            // macOS's fsync leaves the data in the drive's cache: F_FULLFSYNC (used for
            // checkpoints too once this is on) is what reaches stable storage there.
            try execute("PRAGMA fullfsync = ON")
            #endif
            // Debian builds SQLite with SECURE_DELETE on, which rewrites every page a
            // DELETE frees with zeros: a replay's removal of the previous projections
            // generation then writes it all once more. FAST still zeroes deleted content
            // on pages written anyway; only whole freed pages keep their bytes until reused
            // (the only rows ever deleted are projections, derived from the log).
            try execute("PRAGMA secure_delete = FAST")
        }
        try execute("PRAGMA foreign_keys = ON")
    }

    deinit {
        cache.removeAll()
        cacheByAddress.removeAll()
        // The handler's context is `busyWait`, released with this object: a handle whose close
        // SQLite defers (a statement not yet finalized) must not call it.
        sqlite3_busy_handler(handle, nil, nil)
        sqlite3_close_v2(handle)
    }

    /// A busy handler that polls often: SQLite's own (`sqlite3_busy_timeout`) sleeps
    /// 1, 2, 5, 10, 15, 20, 25 … 100 ms between tries, so a writer that met a lock
    /// held for a few milliseconds could sleep through many free moments and wait
    /// for tens of milliseconds more. This one sleeps 100 µs for the first 20 ms,
    /// then 1 ms, and gives up (`SQLITE_BUSY`) once the timeout has passed, or at once
    /// when `wait` says so (waits abandoned, or none wanted).
    ///
    /// `wait` is the connection's own; the handler is removed before the handle is closed.
    private static func installBusyHandler(_ handle: OpaquePointer, _ wait: BusyWait) {
        sqlite3_busy_handler(handle, { context, count in
            guard let context else { return 0 }
            let wait = Unmanaged<BusyWait>.fromOpaque(context).takeUnretainedValue()
            let tries = Int64(count)
            let short: Int64 = 200  // 200 tries of 100 µs: the first 20 ms
            let waited = tries < short ? tries * 100 : short * 100 + (tries - short) * 1_000
            guard wait.shouldWait(waited: waited) else { return 0 }
            usleep(tries < short ? 100 : 1_000)
            return 1
        }, Unmanaged.passUnretained(wait).toOpaque())
    }

    /// `path` as the path part of an SQLite `file:` URI (`%`, `?` and `#` escaped).
    static func uriEscaped(_ path: String) -> String {
        var out = ""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"), 0..<0x20, 0x7F...:
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (byte < 16 ? "0" + hex : hex)
            default:
                out.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return out
    }

    var lastMessage: String { String(cString: sqlite3_errmsg(handle)) }

    /// The operating system's error number behind the last failure (`ENOSPC` for a full disk), or 0.
    var lastSystemErrno: Int32 { sqlite3_system_errno(handle) }

    /// Runs one or more SQL statements that return no rows.
    public func execute(_ sql: String) throws(SQLiteError) {
        var error: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &error)
        if code != SQLITE_OK {
            let message = error.map { String(cString: $0) } ?? lastMessage
            sqlite3_free(error)
            throw SQLiteError(
                code: ResultCode(rawValue: sqlite3_extended_errcode(handle)), message: message, sql: sql, systemErrno: lastSystemErrno)
        }
    }

    /// A prepared statement for `sql`, from the connection's cache.
    public func cached(_ sql: String) throws(SQLiteError) -> Statement {
        let address = sql.utf8.withContiguousStorageIfAvailable { Int(bitPattern: $0.baseAddress) } ?? 0
        if address != 0, let (length, statement) = cacheByAddress[address], length == sql.utf8.count, statement.sql == sql {
            statement.reset()
            return statement
        }
        let statement: Statement
        if let cachedStatement = cache[sql] {
            statement = cachedStatement
            statement.reset()
        } else {
            statement = try Statement(connection: self, sql: sql)
            cache[sql] = statement
        }
        if address != 0 && cacheByAddress.count < 512 { cacheByAddress[address] = (sql.utf8.count, statement) }
        return statement
    }

    /// A new prepared statement (not cached), for one-off or long-lived cursors.
    public func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        try Statement(connection: self, sql: sql)
    }

    public func scalarString(_ sql: String) throws(SQLiteError) -> String? {
        let statement = try prepare(sql)
        return try statement.step() ? statement.string(0) : nil
    }

    public func scalarInt(_ sql: String) throws(SQLiteError) -> Int64? {
        let statement = try prepare(sql)
        return try statement.step() ? statement.optionalInt64(0) : nil
    }

    /// The rowid of the last row inserted on this connection.
    public var lastInsertRowid: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the last statement.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// Whether the connection is inside a transaction.
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// What a transaction body decides.
    public enum Completion: Sendable { case commit, rollback }

    /// Runs `body` in a transaction begun `IMMEDIATE` (takes the write lock at
    /// once, so it never fails half-way for a lock). A throw rolls back.
    ///
    /// A ``WriterPriority/background`` transaction first lets the process's waiting
    /// foreground writers of the same database go (see ``WriterPriority``).
    public func write<T>(priority: WriterPriority = .foreground, _ body: () throws -> (T, Completion)) throws -> T {
        switch priority {
        case .foreground:
            WriterPriority.enter(path)
            defer { WriterPriority.leave(path) }
            return try writeNow(body)
        case .background:
            WriterPriority.deferToForeground(path)
            return try writeNow(body)
        }
    }

    private func writeNow<T>(_ body: () throws -> (T, Completion)) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let (value, completion) = try body()
            switch completion {
            case .commit: try execute("COMMIT")
            case .rollback:
                rollbacks += 1
                try execute("ROLLBACK")
            }
            return value
        } catch {
            rollbacks += 1
            if isInTransaction { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// Runs `body` in a read transaction: one consistent snapshot (WAL).
    public func read<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN DEFERRED")
        defer { try? execute("COMMIT") }
        return try body()
    }
}
