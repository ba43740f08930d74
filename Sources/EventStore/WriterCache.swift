extension EventStore {
    /// The most a writer's connection keeps of the database's pages, in KiB (allocated
    /// only as pages are read). SQLite's default, 2 MiB, is 125 pages of 16 KiB: fewer
    /// than a batch of 256 notifications changes in a big database (about ten leaves
    /// each, spread over the file), so the batch spilled pages before its commit and
    /// no B-tree's upper pages outlived it. With 64 MiB a batch spills nothing and the
    /// upper pages stay cached between batches: at 1,000,000 events the writer reads
    /// ~7 pages a notification instead of ~46 (Benchmarks/README.md, the `scale` mode).
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
