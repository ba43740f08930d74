import SchemaMigrations
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension EventStore {
    /// How a command opens the database: whether it may create it, write it, migrate it.
    public enum OpenMode: Sendable, Hashable {
        /// Creates the database when it does not exist, and applies pending
        /// migrations: for commands that record (`ingest`, `usage`, `serve`, `sync`).
        case create
        /// Writes an existing database (applying pending migrations) but never
        /// creates one: a missing file is `DATABASE_NOT_FOUND` (`replay`).
        case existing
        /// Reads only: never creates, never migrates, never writes, and never
        /// leaves a `-wal` or `-shm` file that the database owner's writer could
        /// not use (`query`, `audit`, `history`, `changes`, `consumption`). Works
        /// on a read-only file, folder or file system, and on a full disk.
        case readOnly
    }

    /// How many times opening is retried when another writer holds the lock past
    /// the busy timeout (creating the database, or applying a migration): a busy
    /// database never fails a command.
    static let busyAttempts = 50

    /// Opens the connection for `mode`, retrying whole while the database is busy.
    static func openConnection(
        path: String, mode: OpenMode, busyTimeoutMilliseconds: Int32, readsFollowedCopy: Bool = true
    ) throws(StoreError) -> (Connection, ReadSnapshot?) {
        var attempt = 0
        while true {
            do {
                return try openOnce(path: path, mode: mode, busyTimeoutMilliseconds: busyTimeoutMilliseconds, readsFollowedCopy: readsFollowedCopy)
            } catch let error where error.code == .busy && attempt < busyAttempts {
                attempt += 1
                usleep(UInt32(20_000 * min(attempt, 10)))
            }
        }
    }

    private static func openOnce(
        path: String, mode: OpenMode, busyTimeoutMilliseconds: Int32, readsFollowedCopy: Bool
    ) throws(StoreError) -> (Connection, ReadSnapshot?) {
        let migrations: [SchemaMigrations.Migration]
        do { migrations = try SchemaMigrations.all() } catch {
            throw StoreError(code: .cannotOpen, message: "cannot prepare the database \(path): \(error)")
        }
        var info = stat()
        if stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR {
            // SQLite would say only "disk I/O error" or "unable to open database file".
            throw StoreError(code: .cannotOpen, message: "\(path) is a folder, not a database file: --db names the SQLite file")
        }
        if mode != .create {
            if stat(path, &info) != 0 && errno == ENOENT {
                throw StoreError(
                    code: .notFound,
                    message: "no database at \(path): nothing was created there (check --db; this command reads or changes a database and never creates one: ingest or sync create it)")
            }
        }
        if mode != .readOnly, let problem = unwritable(path) {
            // Opened anyway, SQLite would fall back to reading, and leave -wal and -shm
            // files of this user behind that the owner's writer could not use.
            throw StoreError(code: .readOnly, message: "the database \(path) cannot be written by this user (\(problem)); nothing was written")
        }
        do {
            switch mode {
            case .create, .existing:
                let connection = try Connection(
                    path: path, mode: mode == .create ? .readWrite : .readWriteExisting, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
                try Migrator.migrate(connection, migrations: migrations)
                try connection.execute("PRAGMA cache_size = -\(writerCacheKibibytes)")
                return (connection, nil)
            case .readOnly:
                return try openReadOnly(
                    path: path, migrations: migrations, busyTimeoutMilliseconds: busyTimeoutMilliseconds, readsFollowedCopy: readsFollowedCopy)
            }
        } catch let error as SQLiteError {
            throw StoreError(error, path: path)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(code: .cannotOpen, message: "cannot open the database \(path): \(error)")
        }
    }

    /// Why a writer could not write the existing database at `path` (the file, or
    /// its folder where the `-wal` and `-shm` files are still to be created), or
    /// `nil` when it can or the file does not exist yet.
    static func unwritable(_ path: String) -> String? {
        guard access(path, F_OK) == 0 else { return nil }
        if access(path, W_OK) != 0 { return "the file is not writable: \(String(cString: strerror(errno)))" }
        let folder = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        let sideFilesExist = access(path + "-wal", F_OK) == 0 && access(path + "-shm", F_OK) == 0
        if !sideFilesExist && access(folder.isEmpty ? "/" : folder, W_OK) != 0 {
            return "its folder is not writable, and SQLite creates \(path)-wal and -shm there: \(String(cString: strerror(errno)))"
        }
        // One call each: a side file that another connection's close removes meanwhile is
        // missing (ENOENT), not unwritable.
        for suffix in ["-wal", "-shm"] where access(path + suffix, W_OK) != 0 && errno != ENOENT {
            return "\(path)\(suffix) is not writable by this user: \(String(cString: strerror(errno)))"
        }
        return nil
    }

    /// A reader's connection.
    ///
    /// SQLite reads a WAL database through a shared index in `PATH-shm` (and
    /// opens `PATH-wal`), creating both when they are missing, and a read-only
    /// connection leaves them behind when it closes. Created by another user,
    /// they would lock the owner's writer out (`DATABASE_READ_ONLY`); on a full
    /// disk, a read-only folder or file system they cannot be created at all.
    /// So a reader uses them when they exist (whoever made them), creates them
    /// only where its files would belong to the database's owner (it is the
    /// owner, or root, for whom SQLite hands them to the owner), and otherwise,
    /// or when creating them fails, reads the file as immutable: no lock, no
    /// side file. That is correct only while nobody writes the file, which
    /// holds here: every writer needs `-shm`, which does not exist, and the
    /// engine's writers leave the database file itself whole (their checkpoint
    /// moves everything committed into it, the `-wal` left empty). Should a
    /// writer start all the same, the change is seen (``ReadSnapshot``) and the
    /// read is done again on a fresh connection. A `-wal` that still holds
    /// commits (a writer was killed) is never read as immutable, as that would
    /// miss them. A copy that Litestream follows (`litestream restore -f`) is always read as
    /// immutable: see ``FollowedCopy``.
    private static func openReadOnly(
        path: String, migrations: [SchemaMigrations.Migration], busyTimeoutMilliseconds: Int32, readsFollowedCopy: Bool
    ) throws -> (Connection, ReadSnapshot?) {
        if readsFollowedCopy && FollowedCopy.isFollowed(path) {
            // A copy Litestream follows: never through SQLite's locks (see ``FollowedCopy``).
            _ = FollowedCopy.waitUntilQuiet(path)
            let before = ReadSnapshot(path: path, follower: true)
            let connection = try Connection(path: path, mode: .immutable, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
            return (try schemaChecked(connection, path: path, migrations: migrations), before)
        }
        let before = ReadSnapshot(path: path)
        let sideFilesExist = before.walSize >= 0 && before.shmExists
        let createsOwnersFiles = geteuid() == 0 || geteuid() == before.owner
        if sideFilesExist || createsOwnersFiles {
            do {
                let connection = try Connection(path: path, mode: .readOnly, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
                let checked = try schemaChecked(connection, path: path, migrations: migrations)
                // An empty stand-in is current only until a writer creates the schema.
                return (checked, checked === connection ? nil : ReadSnapshot(path: path))
            } catch let error as SQLiteError where isSideFileFailure(error) && before.walSize <= 0 {
                // A full disk, a read-only folder or file system: fall through to immutable.
            }
        } else if before.walSize > 0 {
            throw StoreError(
                code: .cannotOpen,
                message: "\(path)-wal holds commits not yet in the database file (a writer was stopped before its checkpoint), and reading them as this user would leave \(path)-shm owned by this user, which the database's owner could not write: run any engine command on it once as its owner")
        }
        let connection = try Connection(path: path, mode: .immutable, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        return (try schemaChecked(connection, path: path, migrations: migrations), before)
    }

    /// `connection` when its schema is one this engine can read; for a database
    /// with no schema yet (new, or being created right now), an empty database in
    /// memory with the whole schema, which answers as an empty log does.
    private static func schemaChecked(
        _ connection: Connection, path: String, migrations: [SchemaMigrations.Migration]
    ) throws -> Connection {
        switch try Migrator.status(connection, migrations: migrations) {
        case .current, .behind:
            // Behind: a writer applies the missing migrations when it next opens; a reader
            // reads what is there, and never migrates.
            return connection
        case .empty:
            let empty = try Connection(path: ":memory:", mode: .readWrite)
            try Migrator.migrate(empty, migrations: migrations)
            return empty
        }
    }

    /// Failures that mean the `-shm`/`-wal` files could not be created or grown.
    private static func isSideFileFailure(_ error: SQLiteError) -> Bool {
        ResultCode.ioError ~= error.code || ResultCode.cantOpen ~= error.code || ResultCode.readOnly ~= error.code
            || ResultCode.full ~= error.code
    }
}

/// What a reader that opened the database as immutable saw of the files at the
/// time: if any of it changes, a writer has been at work, and what was read may
/// mix two states; the read is then done again on a fresh connection.
public struct ReadSnapshot: Sendable, Equatable {
    var device: UInt64 = 0
    var inode: UInt64 = 0
    var size: Int64 = -1
    var modifiedSeconds: Int = 0
    var modifiedNanoseconds: Int = 0
    var owner: UInt32 = 0
    /// The size of `-wal`, or -1 when there is none.
    var walSize: Int64 = -1
    var shmExists = false
    /// For a reader of a followed copy (see ``FollowedCopy``): whether the copy is still
    /// followed, and whether the follower was writing it (what is read then may mix two
    /// states, and is never current). Both false for any other reader.
    var followed = false
    var applying = false

    /// What the files look like now; with `follower`, also whether Litestream follows the
    /// copy and is writing it (which opens the file: only where this process holds no lock on it).
    init(path: String, follower: Bool = false) {
        var info = stat()
        if stat(path, &info) == 0 {
            device = UInt64(truncatingIfNeeded: info.st_dev)
            inode = UInt64(truncatingIfNeeded: info.st_ino)
            size = Int64(info.st_size)
            #if canImport(Darwin)
            modifiedSeconds = Int(info.st_mtimespec.tv_sec)
            modifiedNanoseconds = Int(info.st_mtimespec.tv_nsec)
            #else
            modifiedSeconds = Int(info.st_mtim.tv_sec)
            modifiedNanoseconds = Int(info.st_mtim.tv_nsec)
            #endif
            owner = info.st_uid
        }
        if stat(path + "-wal", &info) == 0 { walSize = Int64(info.st_size) }
        shmExists = access(path + "-shm", F_OK) == 0
        if follower {
            followed = FollowedCopy.isFollowed(path)
            applying = followed && FollowedCopy.isApplying(path)
        }
    }
}

extension EventStore {
    /// Whether what this connection reads is still the database's current state.
    /// Always true for a connection that reads through SQLite's locks; for an
    /// immutable one (see ``OpenMode/readOnly``), true while nothing has changed
    /// the files since it was opened.
    public var isCurrent: Bool {
        guard let snapshot else {
            // Through SQLite's locks, on a copy Litestream has begun to follow since: its lock would hold the follower.
            return !(mode == .readOnly && readsFollowedCopy && FollowedCopy.isFollowed(path))
        }
        return !snapshot.applying && ReadSnapshot(path: path, follower: snapshot.followed) == snapshot
    }
}
