#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A copy of the database that Litestream keeps following (`litestream restore -f`), as a read
/// replica reads it.
///
/// The follower writes the replica's pages straight into the database file, holding the
/// locks SQLite's own writer would hold (a write lock on the pending byte and the shared
/// range), and waits for them while any reader holds a shared lock. A reader in WAL mode
/// holds its shared lock for as long as its connection is open, and a reader pool keeps its
/// connections open: the follower would wait for ever. So a followed copy is always read as
/// immutable (no lock, no `-wal` or `-shm` created), and a read counts only when the
/// follower was not writing when it began and the file is unchanged when it ends
/// (``ReadSnapshot``); otherwise it is done again on a fresh connection.
enum FollowedCopy {
    /// Whether Litestream follows the database at `path`: its follower keeps the transaction
    /// id it has reached in `PATH-txid`, beside the copy, and writes no `-wal`. A `-wal` that
    /// holds commits means a SQLite writer is at work (a copy promoted to primary, with the
    /// follower's file left behind): that database is read through SQLite's locks as usual.
    static func isFollowed(_ path: String) -> Bool {
        guard access(path + "-txid", F_OK) == 0 else { return false }
        var info = stat()
        return stat(path + "-wal", &info) != 0 || info.st_size == 0
    }

    /// SQLite's pending byte (the lock byte at 1 GiB), which a writer locks first.
    static let pendingByte: Int64 = 0x4000_0000

    /// Whether another process holds a write lock on the pending byte of `path`: the follower
    /// is writing pages. Asked with `F_GETLK`, which takes no lock.
    ///
    /// Opening and closing a descriptor of the file releases every POSIX lock this process
    /// holds on it: call it only where this process reads the file without locks (every
    /// connection to a followed copy is immutable).
    static func isApplying(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var query = flock()
        query.l_type = Int16(F_RDLCK)
        query.l_whence = Int16(SEEK_SET)
        query.l_start = off_t(pendingByte)
        query.l_len = 1
        guard fcntl(fd, F_GETLK, &query) == 0 else { return false }
        return query.l_type != Int16(F_UNLCK)
    }

    /// Waits (bounded by `milliseconds`) until the follower is not writing; true when it is not.
    static func waitUntilQuiet(_ path: String, milliseconds: Int = 5_000) -> Bool {
        var waited = 0
        while isApplying(path) {
            if waited >= milliseconds { return false }
            usleep(2_000)
            waited += 2
        }
        return true
    }
}
