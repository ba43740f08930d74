extension EventStore {
    /// The most a writer's connection keeps of the database's pages, in KiB (allocated
    /// only as pages are read): SQLite's default is 2 MiB.
    public static let writerCacheKibibytes = 65_536

    /// Sets this writer's page cache to `kibibytes` and its memory map to `mapBytes`
    /// (the benchmark compares settings with it; a writer is opened with
    /// ``writerCacheKibibytes`` and no map).
    package func setWriterCache(kibibytes: Int, mapBytes: Int64 = 0) throws(StoreError) {
        try mapped {
            try connection.execute("PRAGMA cache_size = -\(kibibytes)")
            try connection.execute("PRAGMA mmap_size = \(mapBytes)")
        }
    }
}
