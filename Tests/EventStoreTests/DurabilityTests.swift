import EntitlementCore
import EventStore
import Foundation
import Testing

/// A commit that has returned is on stable storage (specification section 18): writers sync
/// the write-ahead log at every commit. A replay's batches, which answer no one, are the
/// one exception, and only until its swap.
@Suite struct DurabilityTests {
    @Test("a writer's connection syncs every commit (synchronous = FULL), and is left so by a replay")
    func writersSyncEveryCommit() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        #expect(try store.rawConnection.scalarInt("PRAGMA synchronous") == 2)
        for i in 1...4 {
            let input = StoreFixtures.transaction(id: "t\(i)", original: "o\(i % 2)", app: "app-\(i % 2)", signed: 1_700_000_000_000 + Int64(i))
            _ = try store.append([.verified(input)], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        }
        let report = try store.replay(rules: StoreFixtures.rules, rulesJSON: "{}", now: 1_701_000_000_000, collectDiff: false)
        #expect(report.customers == 2)
        #expect(try store.rawConnection.scalarInt("PRAGMA synchronous") == 2)
        // Appends after the replay are synced as before.
        let later = StoreFixtures.transaction(id: "t9", original: "o1", app: "app-1", signed: 1_700_000_000_009)
        _ = try store.append([.verified(later)], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 2)
        #expect(try store.rawConnection.scalarInt("PRAGMA synchronous") == 2)
    }

    @Test("a replay keeps the writer's page cache small while it writes, and gives it back, whatever it was")
    func replayGivesBackTheWritersPageCache() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        #expect(try store.rawConnection.scalarInt("PRAGMA cache_size") == -Int64(EventStore.writerCacheKibibytes))
        for i in 1...4 {
            let input = StoreFixtures.transaction(id: "t\(i)", original: "o\(i % 2)", app: "app-\(i % 2)", signed: 1_700_000_000_000 + Int64(i))
            _ = try store.append([.verified(input)], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        }
        var seen: [Int64] = []
        _ = try store.replay(rules: StoreFixtures.rules, rulesJSON: "{}", now: 1_701_000_000_000, collectDiff: false) { _ in
            seen.append((try? store.rawConnection.scalarInt("PRAGMA cache_size")) ?? 0)
        }
        #expect(!seen.isEmpty)
        #expect(seen.allSatisfy { $0 == -Int64(EventStore.replayWriterCacheKibibytes) })
        #expect(try store.rawConnection.scalarInt("PRAGMA cache_size") == -Int64(EventStore.writerCacheKibibytes))
        // A cache set otherwise is given back as it was.
        try store.setWriterCache(kibibytes: 1_024)
        _ = try store.replay(rules: StoreFixtures.rules, rulesJSON: "{}", now: 1_701_000_000_000, collectDiff: false)
        #expect(try store.rawConnection.scalarInt("PRAGMA cache_size") == -1_024)
    }
}
