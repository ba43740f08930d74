internal import EventStore

extension Engine {
    /// Sets the writer's page cache (KiB) and memory map (bytes), so that the benchmark
    /// can compare them with the settings a writer is opened with.
    package func setWriterCacheForBenchmark(kibibytes: Int, mapBytes: Int64) throws(EngineError) {
        do {
            try store.withLock { store throws(StoreError) in try store.setWriterCache(kibibytes: kibibytes, mapBytes: mapBytes) }
        } catch {
            throw EngineError(error)
        }
    }

    /// The writer's page cache since it opened: pages found in it, pages read into it
    /// (from the kernel's page cache or the disk), pages written out before their commit,
    /// and pages written out at all (the pages each commit changed, spills included).
    package var writerPageCacheForBenchmark: (hits: Int, misses: Int, spills: Int, writes: Int) {
        let counters = store.withLock { $0.rawConnection.pageCacheCounters }
        return (counters.hits, counters.misses, counters.spills, counters.writes)
    }
}
