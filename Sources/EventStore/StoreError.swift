#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the event store could not do what was asked, in words a person can act on.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The database file cannot be opened or is not an SQLite database.
        case cannotOpen = "DATABASE_UNAVAILABLE"
        /// The database is read-only.
        case readOnly = "DATABASE_READ_ONLY"
        /// The disk (or the database's page limit) is full.
        case full = "DATABASE_FULL"
        /// The database file is damaged.
        case corrupt = "DATABASE_CORRUPT"
        /// The log holds something the engine cannot read back.
        case unreadable = "LOG_UNREADABLE"
        /// Another writer held the database past the busy timeout; retrying the batch is safe.
        case busy = "DATABASE_BUSY"
        /// The database belongs to another app, or holds the other class of data
        /// (signed or unsigned), than the configuration names (specification section 2).
        case mismatch = "DATABASE_MISMATCH"
        /// Anything else SQLite reported.
        case sqlite = "DATABASE_ERROR"
        /// A command that only reads (or must not create one) found no database file.
        case notFound = "DATABASE_NOT_FOUND"
        /// The database was written by a newer engine (a migration this one does not know).
        case tooNew = "DATABASE_TOO_NEW"
        /// A reader needs a migration that only a writer applies (an older engine's database).
        case notMigrated = "DATABASE_NOT_MIGRATED"
    }

    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// Maps an SQLite failure to the code a user needs.
    public init(_ error: SQLiteError, path: String) {
        if Self.isOutOfSpace(error, path: path) {
            self.init(code: .full, message: "the disk holding \(path) is full; nothing was written (\(error.message))")
            return
        }
        switch error.code {
        case ResultCode.readOnly:
            self.init(code: .readOnly, message: "the database \(path) is read-only; nothing was written (\(error.message))")
        case ResultCode.full:
            self.init(code: .full, message: "the disk holding \(path) is full; the batch was rolled back and nothing was written (\(error.message))")
        case ResultCode.corrupt, ResultCode.notADatabase:
            self.init(code: .corrupt, message: "\(path) is not a valid engine database or is damaged (\(error.message))")
        case ResultCode.busy, ResultCode.locked:
            self.init(code: .busy, message: "the database \(path) stayed locked by another writer past the busy timeout (\(error.message))")
        case ResultCode.cantOpen where Self.existsButCannotBeWritten(path):
            // A WAL database needs its folder writable too (for -wal and -shm): say so, not just "cannot open".
            self.init(
                code: .readOnly,
                message: "the database \(path) is on a read-only file system, or it or its folder is not writable (SQLite creates \(path)-wal and -shm beside it); nothing was written (\(error.message))")
        case ResultCode.cantOpen:
            self.init(code: .cannotOpen, message: "cannot open the database \(path) (\(error.message))")
        default:
            self.init(code: .sqlite, message: error.description)
        }
    }

    /// Whether an I/O failure came from the disk (or a quota, or the file-size limit)
    /// running out: SQLite reports a `-shm` file that cannot grow on a full disk as
    /// `SQLITE_IOERR_SHMSIZE`, with `errno` `ENOSPC`.
    /// SQLite's record of `errno` can be overwritten by the calls it makes after
    /// the failure, so an I/O error is also taken for a full disk when the disk
    /// holding the database has less than 1 MiB left, or its file-size limit
    /// (`ulimit -f`) is within 1 MiB of the database or its `-wal`.
    static func isOutOfSpace(_ error: SQLiteError, path: String) -> Bool {
        guard ResultCode.ioError ~= error.code || ResultCode.cantOpen ~= error.code else { return false }
        switch error.systemErrno {
        case ENOSPC, EDQUOT, EFBIG: return true
        default: break
        }
        guard ResultCode.ioError ~= error.code else { return false }
        let folder = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        var disk = statvfs()
        if statvfs(folder.isEmpty ? "/" : folder, &disk) == 0, UInt64(disk.f_bavail) * UInt64(disk.f_frsize) < 1 << 20 { return true }
        var limit = rlimit()
        #if canImport(Darwin)
        let fileSize = RLIMIT_FSIZE
        #else
        let fileSize = Int32(RLIMIT_FSIZE.rawValue)
        #endif
        if getrlimit(fileSize, &limit) == 0, limit.rlim_cur != rlim_t.max {
            var info = stat()
            for file in [path, path + "-wal"] where stat(file, &info) == 0 {
                if UInt64(info.st_size) + (1 << 20) >= UInt64(limit.rlim_cur) { return true }
            }
        }
        return false
    }

    /// Whether `path` is an existing file that this process cannot write, or whose folder it cannot write.
    static func existsButCannotBeWritten(_ path: String) -> Bool {
        guard access(path, F_OK) == 0 else { return false }
        let folder = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        return access(path, W_OK) != 0 || access(folder.isEmpty ? "/" : folder, W_OK) != 0
    }
}
