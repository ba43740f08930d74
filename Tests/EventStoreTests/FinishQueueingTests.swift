import EntitlementCore
import EventStore
import Foundation
import Testing

/// Finish Transaction calls are queued in the transaction that appends their batch: the
/// queued rows and the events are committed together, or neither is.
@Suite struct FinishQueueingTests {
    /// One candidate per transaction an item appended (a notification's transaction included).
    static func candidates(_ items: [AppendItem], _ outcomes: [AppendOutcome]) -> [EventStore.FinishCandidate] {
        zip(items, outcomes).compactMap { item, outcome in
            guard case .verified(let input) = item, case .appended(_, _, _, let seq) = outcome else { return nil }
            let transaction: TransactionPayload?
            switch input {
            case .transaction(let signed): transaction = signed.payload
            case .notification(let signed): transaction = signed.transaction?.payload
            default: transaction = nil
            }
            return transaction.map { .init(transactionId: $0.transactionId, environment: $0.environment, seq: seq) }
        }
    }

    static func finishRows(_ store: EventStore) throws -> Int64 {
        try store.rawConnection.scalarInt("SELECT count(*) FROM transaction_finishes") ?? -1
    }

    @Test func finishesAreVisibleExactlyWhenTheirEventsAre() throws {
        let path = StoreFixtures.temporaryDatabase()
        let store = try EventStore(path: path, hash: StoreFixtures.hash)
        let reader = try EventStore(path: path, hash: StoreFixtures.hash)
        let items: [AppendItem] = [.verified(StoreFixtures.transaction(id: "t1")), .verified(StoreFixtures.transaction(id: "t2", original: "2000"))]
        var seenInside: (events: Int64, finishes: Int64)? = nil
        let (outcomes, queued) = try store.append(
            items, rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1,
            finishing: { outcomes, rules in
                #expect(rules == StoreFixtures.rules)
                // Inside the write: another connection sees neither the events nor (below) the finishes.
                seenInside = (try reader.eventCount(), try Self.finishRows(reader))
                return Self.candidates(items, outcomes)
            }, queuedAt: 5)
        #expect(seenInside?.events == 0)
        #expect(seenInside?.finishes == 0)
        #expect(queued == 2)
        #expect(outcomes.count == 2)
        #expect(try reader.eventCount() == 2)
        #expect(try Self.finishRows(reader) == 2)
        let row = try #require(try reader.transactionFinish("t1"))
        #expect(row.state == "pending")
        #expect(row.environment == "Sandbox")
    }

    @Test func aCrashBeforeTheCommitLosesBothTheBatchAndItsFinishes() throws {
        let path = StoreFixtures.temporaryDatabase()
        let store = try EventStore(path: path, hash: StoreFixtures.hash)
        let items: [AppendItem] = [.verified(StoreFixtures.transaction(id: "t1"))]
        // The last write of the transaction fails (as a crash before the commit would leave it).
        try store.rawConnection.execute(
            "CREATE TRIGGER crash AFTER INSERT ON transaction_finishes BEGIN SELECT RAISE(ABORT, 'crash point'); END;")
        #expect(throws: StoreError.self) {
            _ = try store.append(
                items, rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1,
                finishing: { outcomes, _ in Self.candidates(items, outcomes) }, queuedAt: 1)
        }
        #expect(try store.eventCount() == 0)
        #expect(try Self.finishRows(store) == 0)
        // A failure while choosing the candidates rolls the batch back too.
        struct Refused: Error {}
        #expect(throws: StoreError.self) {
            _ = try store.append(items, rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1, finishing: { _, _ in throw Refused() }, queuedAt: 1)
        }
        #expect(try store.eventCount() == 0)
        try store.rawConnection.execute("DROP TRIGGER crash")
        let (_, queued) = try store.append(
            items, rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 2,
            finishing: { outcomes, _ in Self.candidates(items, outcomes) }, queuedAt: 2)
        #expect(queued == 1)
        #expect(try store.eventCount() == 1)
        #expect(try Self.finishRows(store) == 1)
    }

    @Test func duplicatesAreNotQueued() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let t1 = StoreFixtures.transaction(id: "t1")
        // The same transaction twice in one batch, and in a notification: queued once.
        let first: [AppendItem] = [.verified(t1), .verified(t1), .verified(StoreFixtures.notification(uuid: "n-1", transaction: t1))]
        let (outcomes, queued) = try store.append(
            first, rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1,
            finishing: { outcomes, _ in Self.candidates(first, outcomes) }, queuedAt: 1)
        #expect(queued == 1)
        #expect(outcomes.filter { if case .appended = $0 { true } else { false } }.count == 2)
        // Again, with a new transaction: only the new one is queued.
        let second: [AppendItem] = [.verified(t1), .verified(StoreFixtures.transaction(id: "t3", signed: 1_700_000_000_700))]
        let (_, again) = try store.append(
            second, rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 2,
            finishing: { outcomes, _ in Self.candidates(second, outcomes) }, queuedAt: 2)
        #expect(again == 1)
        #expect(try Self.finishRows(store) == 2)
        #expect(try store.transactionFinish("t3")?.state == "pending")
    }
}
