import EntitlementCore
import EventStore
import Foundation
import Testing

/// Replay builds the next generation beside the current one and swaps it in
/// one transaction: these tests stand in for a replay killed midway and for a
/// writer ingesting while a replay runs.
@Suite struct ReplaySafetyTests {
    func seeded(_ path: String, customers: Int = 5, perCustomer: Int = 4) throws -> EventStore {
        let store = try EventStore(path: path, hash: StoreFixtures.hash)
        var inputs: [AppendItem] = []
        for c in 0..<customers {
            for n in 0..<perCustomer {
                inputs.append(
                    .verified(
                        StoreFixtures.transaction(
                            id: "t\(c)-\(n)", original: "o\(c)", app: "app-\(c)", purchase: 1_700_000_000_000 + Int64(n) * 2_592_000_000,
                            expires: 1_700_000_000_000 + Int64(n + 1) * 2_592_000_000, signed: 1_700_000_000_000 + Int64(n) * 2_592_000_000 + 1)))
            }
        }
        _ = try store.append(inputs, rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        return store
    }

    @Test func aReplayKilledBeforeItsSwapLeavesThePreviousStateQueryable() throws {
        let path = StoreFixtures.temporaryDatabase()
        let store = try seeded(path)
        let before = try store.projection(of: "app-1")?.state
        // What a replay killed after writing part of the next generation leaves behind:
        // rows of generation 2 (garbage state), while engine_state still says generation 1.
        let raw = try Connection(path: path)
        try raw.execute(
            "INSERT INTO projections (generation, customer_key, rules_version, last_event_seq, state) SELECT 2, customer_key, 'half', 0, x'00' FROM projections WHERE generation = 1")
        #expect(try store.engineState().generation == 1)
        #expect(try store.projection(of: "app-1")?.state == before)
        // The next replay clears the leftovers and completes.
        let report = try store.replay(rules: StoreFixtures.rules, rulesJSON: "{}", now: 1_701_000_000_000, collectDiff: false)
        #expect(report.customers == 5)
        #expect(report.changed == 0)
        #expect(try store.engineState().generation == 2)
        #expect(try store.projection(of: "app-1")?.state == before)
        #expect(try raw.scalarInt("SELECT count(*) FROM projections") == 5)
    }

    @Test func aReplayKilledWhileFillingTheNextTableLeavesNothingBehind() throws {
        let path = StoreFixtures.temporaryDatabase()
        let store = try seeded(path)
        let before = try store.projection(of: "app-2")?.state
        // A replay killed midway leaves part of the next generation in `projections_next`.
        let raw = try Connection(path: path)
        try raw.execute(
            "INSERT INTO projections_next (generation, customer_key, rules_version, last_event_seq, state) SELECT 2, customer_key, 'half', 0, x'00' FROM projections")
        #expect(try store.projection(of: "app-2")?.state == before)
        let report = try store.replay(rules: StoreFixtures.rules, rulesJSON: "{}", now: 1_701_000_000_000, collectDiff: false)
        #expect(report.changed == 0)
        #expect(try store.projection(of: "app-2")?.state == before)
        // The swap renamed the tables: the half-built rows are gone, and the retired
        // generation waits in `projections_next`, read by nothing, for the next replay.
        #expect(try raw.scalarInt("SELECT count(*) FROM projections WHERE generation = 2") == 5)
        #expect(try raw.scalarInt("SELECT count(*) FROM projections_next WHERE rules_version = 'half'") == 0)
        #expect(try raw.scalarInt("SELECT count(*) FROM projections_next WHERE generation = 1") == 5)
        // The next replay empties it first, and starts from that state again.
        let again = try store.replay(rules: StoreFixtures.rules, rulesJSON: "{}", now: 1_701_000_000_000, collectDiff: false)
        #expect(again.changed == 0)
        #expect(try raw.scalarInt("SELECT count(*) FROM projections WHERE generation = 3") == 5)
        #expect(try raw.scalarInt("SELECT count(*) FROM projections_next WHERE generation = 2") == 5)
        #expect(try raw.scalarInt("SELECT count(*) FROM projections_next WHERE generation = 1") == 0)
        #expect(try store.projection(of: "app-2")?.state == before)
    }

    @Test func eventsAppendedDuringAReplayAreAppliedBeforeTheSwap() throws {
        let path = StoreFixtures.temporaryDatabase()
        let store = try seeded(path)
        let writer = try EventStore(path: path, hash: StoreFixtures.hash)
        var appendedDuringReplay = false
        let report = try store.replay(
            rules: StoreFixtures.rules, rulesJSON: "{}", now: 1_701_000_000_000, collectDiff: false, chunkSize: 2,
            progress: { progress in
                // The last progress report comes after the scan, before the swap.
                guard progress.eventsDone == progress.eventsTotal, !appendedDuringReplay else { return }
                appendedDuringReplay = true
                let outcomes: [AppendOutcome]?
                do { outcomes = try writer.append(
                    [
                        .verified(StoreFixtures.transaction(id: "late-1", original: "o1", app: "app-1", signed: 1_800_000_000_000)),
                        .verified(StoreFixtures.transaction(id: "new-1", original: "o9", app: "app-9", signed: 1_800_000_000_001)),
                    ], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 2)
                } catch {
                    Issue.record("append during replay failed: \(error)")
                    outcomes = nil
                }
                #expect(outcomes?.count == 2)
            })
        #expect(appendedDuringReplay)
        #expect(report.caughtUp == 2)
        #expect(report.events == 22)
        // Both late events are in the new generation: nothing was lost by the swap.
        #expect(try store.projection(of: "app-1")?.state.transactions["late-1"] != nil)
        #expect(try store.projection(of: "app-9")?.state.transactions["new-1"] != nil)
        // And a fresh replay agrees with what ingest-during-replay produced.
        let again = try store.replay(rules: StoreFixtures.rules, rulesJSON: "{}", now: 1_701_000_000_000, collectDiff: false)
        #expect(again.changed == 0)
        #expect(again.customers == 6)
    }
}

@Suite struct CheckpointTests {
    /// A checkpoint moves what it can and never waits for another connection's
    /// readers (a replay in another process holds a snapshot for its whole scan).
    @Test func aCheckpointNeverWaitsForReaders() throws {
        let path = StoreFixtures.temporaryDatabase()
        let store = try EventStore(path: path, hash: StoreFixtures.hash)
        _ = try store.append(
            [.verified(StoreFixtures.transaction(id: "c-1", original: "o1", app: "app-1", signed: 1_700_000_000_000))],
            rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        let reader = try Connection(path: path)
        try reader.execute("BEGIN")
        #expect(try reader.scalarInt("SELECT count(*) FROM events") == 1)
        _ = try store.append(
            [.verified(StoreFixtures.transaction(id: "c-2", original: "o1", app: "app-1", signed: 1_700_000_000_001))],
            rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 2)
        let clock = ContinuousClock()
        let waited = try clock.measure { try store.checkpoint() }
        #expect(waited < .seconds(5), "the checkpoint waited \(waited) for a reader (busy timeout 10 s)")
        // The reader still sees its snapshot; once it ends, the log empties.
        #expect(try reader.scalarInt("SELECT count(*) FROM events") == 1)
        try reader.execute("COMMIT")
        try store.checkpoint()
        let wal = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        #expect(wal == 0)
        #expect(try store.eventCount() == 2)
    }
}
