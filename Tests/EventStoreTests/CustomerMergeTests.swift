import EntitlementCore
@testable import EventStore
import Testing

/// Customers merging (specification section 5): a transaction without an
/// appTransactionId files its customer as `otid:<originalTransactionId>`; once
/// signed data links that originalTransactionId to an appTransactionId, the
/// `otid:` customer becomes an alias of it, and the feed says so (cause `merge`).
@Suite struct CustomerMergeTests {
    static let received: Int64 = 1_700_000_001_000

    /// A store with one purchase whose transaction carries no appTransactionId.
    static func storeWithAnUnlinkedPurchase() throws -> EventStore {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let outcome = try store.append(
            [.verified(StoreFixtures.transaction(id: "t1", original: "1000", app: nil))], rules: StoreFixtures.rules, rulesJSON: "{}",
            receivedAt: received)
        #expect(outcome == [.appended(eventId: "t1", kind: .transaction, customerKey: "otid:1000", seq: 1)])
        return store
    }

    /// A later transaction of the same subscription that names its appTransactionId.
    static func linking(app: String = "app-9", id: String = "t2", signed: Int64 = 1_700_000_000_900) -> VerifiedInput {
        StoreFixtures.transaction(id: id, original: "1000", app: app, signed: signed)
    }

    @Test func withoutAnAppTransactionIdTheCustomerIsItsOriginalTransactionId() throws {
        let store = try Self.storeWithAnUnlinkedPurchase()
        #expect(try store.customers(originalTransactionId: "1000") == ["otid:1000"])
        #expect(try store.projection(of: "otid:1000")?.state.transactions.keys.sorted() == ["t1"])
        #expect(try store.resolve("otid:1000") == "otid:1000")
        #expect(try store.sources(of: "otid:1000") == ["otid:1000"])
        let feed = try store.changes(after: 0)
        #expect(feed.map(\.appTransactionId) == ["otid:1000"])
        #expect(feed.first?.active == true && feed.first?.cause == .event)
    }

    @Test func aLinkMergesTheOtidCustomerIntoItsAppTransactionId() throws {
        let store = try Self.storeWithAnUnlinkedPurchase()
        let outcome = try store.append([.verified(Self.linking())], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: Self.received + 1_000)
        #expect(outcome == [.appended(eventId: "t2", kind: .transaction, customerKey: "app-9", seq: 2)])

        // One customer now: the appTransactionId, holding both transactions; the otid: projection is gone.
        #expect(try store.projection(of: "otid:1000") == nil)
        let merged = try #require(try store.projection(of: "app-9"))
        #expect(merged.state.transactions.keys.sorted() == ["t1", "t2"])
        #expect(try store.view(of: "app-9", rules: StoreFixtures.rules, at: Self.received)?.entitlement("pro")?.active == true)
        #expect(try store.view(of: "otid:1000", rules: StoreFixtures.rules, at: Self.received) == nil)
    }

    @Test func theOldKeyIsAnAliasOfTheSurvivor() throws {
        let store = try Self.storeWithAnUnlinkedPurchase()
        _ = try store.append([.verified(Self.linking())], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: Self.received + 1_000)
        // The otid: key and the originalTransactionId both lead to the appTransactionId.
        #expect(try store.resolve("otid:1000") == "app-9")
        #expect(try store.resolve("app-9") == "app-9")
        #expect(try store.customers(originalTransactionId: "1000").contains("app-9"))
        #expect(try store.link(of: "1000")?.appTransactionId == "app-9")
        // Facts filed under the old key still count for the survivor.
        #expect(try store.sources(of: "app-9") == ["app-9", "otid:1000"])
        // An event of that subscription belongs to the survivor from now on.
        let later = try store.append(
            [.verified(StoreFixtures.transaction(id: "t3", original: "1000", app: nil, signed: 1_700_000_002_000))], rules: StoreFixtures.rules,
            rulesJSON: "{}", receivedAt: Self.received + 2_000)
        #expect(later == [.appended(eventId: "t3", kind: .transaction, customerKey: "app-9", seq: 3)])
        #expect(try store.projection(of: "app-9")?.state.transactions.keys.sorted() == ["t1", "t2", "t3"])
        #expect(try store.projection(of: "otid:1000") == nil)
    }

    @Test func theMergeIsRecordedInTheFeed() throws {
        let store = try Self.storeWithAnUnlinkedPurchase()
        let before = try store.lastChangeCursor()
        _ = try store.append([.verified(Self.linking())], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: Self.received + 1_000)
        let merge = try store.changes(after: before)
        // The old key loses what it had, the survivor gains it: both with cause merge.
        #expect(merge.count == 2, "\(merge)")
        #expect(merge.allSatisfy { $0.cause == .merge && $0.entitlement == "pro" && $0.recordedAt == Self.received + 1_000 })
        let gone = try #require(merge.first { $0.appTransactionId == "otid:1000" })
        #expect(!gone.active && gone.expiresDate == nil)
        let gained = try #require(merge.first { $0.appTransactionId == "app-9" })
        #expect(gained.active && gained.expiresDate == 1_702_592_000_000)
        // The key merged away lost it when the merge was recorded; the survivor's access took
        // effect in its data at the purchase.
        #expect(gone.effectiveAt == Self.received + 1_000)
        #expect(gained.effectiveAt == 1_700_000_000_000)
        #expect(gone.cursor < gained.cursor)
        // The old key is no longer followed by time: only the survivor's expiry is due.
        #expect(try store.recordDueChanges(rules: StoreFixtures.rules, now: 1_702_592_000_000) == 1)
        let ended = try #require(try store.changes(after: gained.cursor).first)
        #expect(ended.appTransactionId == "app-9" && !ended.active && ended.cause == .time)
    }

    @Test func aSecondClaimOfTheSameLinkChangesNothing() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        _ = try store.append(
            [.verified(StoreFixtures.transaction(id: "t1", original: "1000", app: nil))], rules: StoreFixtures.rules, rulesJSON: "{}",
            receivedAt: Self.received)
        _ = try store.append([.verified(Self.linking())], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: Self.received + 1_000)
        // A second link claim of the same originalTransactionId to the same appTransactionId changes nothing.
        let cursor = try store.lastChangeCursor()
        _ = try store.append(
            [.verified(Self.linking(id: "t4", signed: 1_700_000_003_000))], rules: StoreFixtures.rules, rulesJSON: "{}",
            receivedAt: Self.received + 3_000)
        #expect(try store.changes(after: cursor).isEmpty)
        #expect(try store.resolve("otid:1000") == "app-9")
    }
}
