import EntitlementCore
import EventStore
import Foundation
import Testing

/// The audit hands the stored JWS over a batch at a time (to be re-verified side by
/// side) and checks everything else in the log's order: it reads every event once,
/// and finds the same first mismatch whatever the batch size.
@Suite struct AuditBatchTests {
    static func store(events: Int) throws -> (EventStore, String) {
        let path = StoreFixtures.temporaryDatabase()
        let store = try EventStore(path: path, hash: StoreFixtures.hash)
        _ = try store.append(
            (1...events).map { .verified(StoreFixtures.transaction(id: "t\($0)", signed: 1_700_000_000_000 + Int64($0))) },
            rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        return (store, path)
    }

    @Test(arguments: [1, 2, 3, 7, 512])
    func everyEventIsCheckedOnceWhateverTheBatchSize(batchSize: Int) throws {
        let (store, _) = try Self.store(events: 7)
        var handed: [Int] = []
        let report = try store.audit(
            reverifyBatch: { items in
                handed.append(items.count)
                return items.map { _ in (nil, nil) }
            }, batchSize: batchSize)
        #expect(report.events == 7)
        #expect(report.firstMismatch == nil)
        #expect(report.headSeq == 7)
        let sizes = handed
        #expect(sizes.reduce(0, +) == 7)
        #expect(sizes.allSatisfy { $0 <= batchSize })
    }

    @Test(arguments: [1, 2, 4, 512])
    func theFirstMismatchIsTheSameWhateverTheBatchSize(batchSize: Int) throws {
        let (store, path) = try Self.store(events: 6)
        // Event 5's JWS no longer verifies, and event 3 was edited: event 3 is reported.
        let raw = try Connection(path: path)
        try raw.execute("DROP TRIGGER events_are_immutable_update")
        try raw.execute("UPDATE events SET raw = replace(raw, 'sig-t3', 'sig-XX') WHERE seq = 3")
        let report = try store.audit(
            reverifyBatch: { items in items.map { $0.1.contains("sig-t5") ? ("forged", nil) : (nil, nil) } }, batchSize: batchSize)
        #expect(report.firstMismatch?.seq == 3)
        #expect(report.firstMismatch?.problem.contains("hash does not match") == true)
        #expect(report.events == 3)
        // Only the forged signature left: event 5 is reported, as one at a time finds it.
        let (clean, _) = try Self.store(events: 6)
        let forged = try clean.audit(
            reverifyBatch: { items in items.map { $0.1.contains("sig-t5") ? ("forged", nil) : (nil, nil) } }, batchSize: batchSize)
        let serial = try clean.audit(verify: { _, raw in raw.contains("sig-t5") ? "forged" : nil })
        #expect(forged.firstMismatch?.seq == 5)
        #expect(forged.firstMismatch == serial.firstMismatch)
        #expect(forged.events == serial.events)
    }
}
