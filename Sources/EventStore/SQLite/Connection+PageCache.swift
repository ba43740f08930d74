import CSQLite

extension Connection {
    /// What this connection's page cache has done since it opened: pages found in it
    /// (`hits`), pages read into it (`misses`), dirty pages written out before their
    /// transaction committed, because the cache was full (`spills`), and dirty pages
    /// written out at all (`writes`: to the WAL at each commit, spills included).
    package struct PageCacheCounters: Sendable, Equatable {
        package var hits: Int
        package var misses: Int
        package var spills: Int
        package var writes: Int
    }

    /// This connection's ``PageCacheCounters``.
    package var pageCacheCounters: PageCacheCounters {
        func counter(_ operation: Int32) -> Int {
            var current: Int32 = 0
            var highest: Int32 = 0
            _ = sqlite3_db_status(handle, operation, &current, &highest, 0)
            return Int(current)
        }
        return PageCacheCounters(
            hits: counter(SQLITE_DBSTATUS_CACHE_HIT), misses: counter(SQLITE_DBSTATUS_CACHE_MISS),
            spills: counter(SQLITE_DBSTATUS_CACHE_SPILL), writes: counter(SQLITE_DBSTATUS_CACHE_WRITE))
    }
}
