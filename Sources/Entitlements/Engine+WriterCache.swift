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
}
