import EntitlementCore
import EventStore
import Foundation
import Testing

/// How a writer's connection keeps the pages it reads and writes.
@Suite struct WriterCacheTests {
    static func customers(_ range: Range<Int>) -> [AppendItem] {
        range.map { index in
            .verified(StoreFixtures.transaction(id: "t\(index)", original: "o\(index)", app: "app-" + String(100_000 + index)))
        }
    }

    @Test func writersAreOpenedWithTheirCacheAndNoMap() throws {
        let path = StoreFixtures.temporaryDatabase()
        for mode in [EventStore.OpenMode.create, .existing] {
            let writer = try EventStore(path: path, hash: StoreFixtures.hash, mode: mode)
            #expect(try writer.rawConnection.scalarInt("PRAGMA cache_size") == -Int64(EventStore.writerCacheKibibytes))
            #expect(try writer.rawConnection.scalarInt("PRAGMA mmap_size") == 0)
        }
    }

    /// A batch that touches more pages than SQLite's default cache holds (2 MiB) keeps
    /// them all until its commit: none is written to the log early and read back.
    @Test func aBigBatchSpillsNothingBeforeItsCommit() throws {
        let batch = Self.customers(0..<3_000)
        let small = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        try small.setWriterCache(kibibytes: 2_000)
        _ = try small.append(batch, rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        // The batch is big enough to spill from the default cache...
        #expect(small.rawConnection.pageCacheCounters.spills > 0)

        let writer = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        _ = try writer.append(batch, rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        // ...and not from a writer's.
        #expect(writer.rawConnection.pageCacheCounters.spills == 0)
        // Both wrote the same.
        #expect(
            try writer.rawConnection.scalarInt("SELECT count(*) FROM projections")
                == small.rawConnection.scalarInt("SELECT count(*) FROM projections"))
        #expect(try writer.rawConnection.scalarInt("SELECT count(*) FROM projections") == 3_000)
    }

    /// A writer's later batches find the pages its earlier ones read: the cache outlives
    /// the writer's own commits.
    @Test func theCacheOutlivesTheWritersCommits() throws {
        let writer = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        _ = try writer.append(Self.customers(0..<500), rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        let before = writer.rawConnection.pageCacheCounters
        _ = try writer.append(Self.customers(500..<510), rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 2)
        let after = writer.rawConnection.pageCacheCounters
        // Every page the second batch needed was in the cache.
        #expect(after.misses == before.misses)
        #expect(after.hits > before.hits)
    }
}
