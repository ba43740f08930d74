import EntitlementCore
import EventStore
import Foundation
import Testing

/// What the store keeps of the lifecycle ids recorded per customer (`customer_rows.id_hashes`):
/// one row read per customer and batch, unioned at a merge, rebuilt where absent, and
/// never a reason to record an id twice or to miss one.
@Suite struct LifecycleRecordedTests {
    static let purchase = LifecycleFeedTests.purchase
    static let expires = LifecycleFeedTests.expires
    static let day = LifecycleFeedTests.day

    static func append(_ store: EventStore, _ inputs: [VerifiedInput], at receivedAt: Int64) throws {
        try LifecycleFeedTests.append(store, inputs, at: receivedAt)
    }

    /// How many ids the row of `key` holds, `nil` without a row.
    static func kept(_ store: EventStore, _ key: String) throws -> Int64? {
        try store.rawConnection.scalarInt("SELECT length(id_hashes) / 8 FROM customer_rows WHERE customer_key = '\(key)'")
    }

    @Test("each customer's recorded ids are kept in one row; a batch that adds nothing new leaves it as it was")
    func keptPerCustomer() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let t1 = StoreFixtures.transaction(id: "t1", purchase: Self.purchase, expires: Self.expires)
        try Self.append(store, [t1], at: Self.purchase + 1_000)
        #expect(try Self.kept(store, "app-1") == 1)
        let row = try store.rawConnection.scalarInt("SELECT count(*) FROM customer_rows WHERE id_hashes IS NOT NULL")
        #expect(row == 1)
        #expect(try store.recordDueLifecycle(rules: StoreFixtures.rules, now: Self.expires + 5) == 1)
        #expect(try Self.kept(store, "app-1") == 2)
        // The same data again: nothing recorded, the row unchanged.
        let before = try store.rawConnection.scalarString("SELECT hex(id_hashes) FROM customer_rows")
        try Self.append(store, [t1], at: Self.expires + 20)
        #expect(try store.rawConnection.scalarString("SELECT hex(id_hashes) FROM customer_rows") == before)
        #expect(try store.lastLifecycleCursor() == 2)
    }

    @Test("without its row (a database from before it, or a wrong one) each id is recorded once all the same")
    func absentOrWrongRows() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let t1 = StoreFixtures.transaction(id: "t1", purchase: Self.purchase, expires: Self.expires)
        try Self.append(store, [t1], at: Self.purchase + 1_000)
        #expect(try store.recordDueLifecycle(rules: StoreFixtures.rules, now: Self.expires + 5) == 1)

        // Absent: the ids are looked up one by one, nothing is recorded twice, and the row comes back whole.
        try store.rawConnection.execute("UPDATE customer_rows SET id_hashes = NULL")
        let t2 = StoreFixtures.transaction(id: "t2", purchase: Self.expires, expires: Self.expires + 30 * Self.day, signed: Self.expires)
        try Self.append(store, [t2], at: Self.expires + Self.day)
        #expect(try store.lifecycle(after: 0).map(\.id) == ["SUBSCRIPTION_STARTED:t1", "EXPIRATION:1000:\(Self.expires)", "RENEWAL:t2"])
        // (The late renewal makes the EXPIRATION no longer derived: the row holds what is derived and recorded.)
        #expect(try Self.kept(store, "app-1") == 2)

        // Wrong (empty): every id is tried again, none is recorded twice, the row is mended.
        try store.rawConnection.execute("UPDATE customer_rows SET id_hashes = x''")
        let refunded = StoreFixtures.transaction(
            id: "t2", purchase: Self.expires, expires: Self.expires + 30 * Self.day, signed: Self.expires + 2 * Self.day,
            revocation: Self.expires + 2 * Self.day)
        try Self.append(store, [refunded], at: Self.expires + 3 * Self.day)
        #expect(try store.lifecycle(after: 0).map(\.id) == [
            "SUBSCRIPTION_STARTED:t1", "EXPIRATION:1000:\(Self.expires)", "RENEWAL:t2", "REFUND:t2:\(Self.expires + 2 * Self.day)",
        ])
        #expect(try Self.kept(store, "app-1") == 3)
        // Replaying records nothing new, whatever the rows say.
        try store.rawConnection.execute("UPDATE customer_rows SET id_hashes = NULL")
        _ = try store.replay(rules: StoreFixtures.rules, rulesJSON: "{}", now: Self.expires + 3 * Self.day, collectDiff: false)
        let afterReplay = try store.lifecycle(after: 4).map(\.id)
        #expect(afterReplay == [])
    }

    @Test("a merge adds the otid: customer's recorded ids to its appTransactionId's and forgets its row")
    func mergeUnionsThem() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        try Self.append(store, [StoreFixtures.transaction(id: "t0", original: "2000")], at: Self.purchase + 500)
        try Self.append(store, [StoreFixtures.transaction(id: "t1", app: nil)], at: Self.purchase + 1_000)
        #expect(try Self.kept(store, "otid:1000") == 1)
        #expect(try Self.kept(store, "app-1") == 1)
        try Self.append(store, [StoreFixtures.transaction(id: "t1", signed: Self.purchase + 7_000)], at: Self.purchase + 9_000)
        #expect(try Self.kept(store, "otid:1000") == nil)
        #expect(try Self.kept(store, "app-1") == 2)
        #expect(try store.lifecycle(after: 0).map(\.id) == [
            "SUBSCRIPTION_STARTED:t0", "SUBSCRIPTION_STARTED:t1", "CUSTOMER_MERGED:otid:1000:app-1",
        ])
    }
}
