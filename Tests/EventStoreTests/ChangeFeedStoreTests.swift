import EntitlementCore
import EventStore
import Testing

/// The change feed as the store keeps it (specification section 8): what an append
/// records, how cursors page through it, and what time alone brings about.
@Suite struct ChangeFeedStoreTests {
    static let purchase: Int64 = 1_700_000_000_000
    static let expires: Int64 = 1_702_592_000_000
    static let renewedExpires: Int64 = 1_705_270_400_000
    /// When the first purchase is ingested: inside its period.
    static let received: Int64 = 1_700_000_001_000

    /// A store holding one monthly purchase of `app-1`, ingested at ``received``.
    static func storeWithOnePurchase() throws -> EventStore {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        _ = try store.append([.verified(StoreFixtures.transaction(id: "t1"))], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: received)
        return store
    }

    /// The renewal of ``storeWithOnePurchase()``'s purchase, ingested at its expiry.
    static func renewal() -> VerifiedInput {
        StoreFixtures.transaction(id: "t2", purchase: expires, expires: renewedExpires, signed: expires + 500)
    }

    @Test func anEmptyStoreHasAnEmptyFeed() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        #expect(try store.lastChangeCursor() == 0)
        #expect(try store.changes(after: 0).isEmpty)
        #expect(try store.hasDueChanges(now: Int64.max) == false)
        #expect(try store.recordDueChanges(rules: StoreFixtures.rules, now: Int64.max) == 0)
    }

    @Test func anAppendRecordsTheEntitlementItGrants() throws {
        let store = try Self.storeWithOnePurchase()
        let changes = try store.changes(after: 0)
        try #require(changes.count == 1, "\(changes)")
        let change = changes[0]
        #expect(change.cursor == 1)
        #expect(change.appTransactionId == "app-1")
        #expect(change.entitlement == "pro")
        #expect(change.active)
        #expect(change.expiresDate == Self.expires)
        #expect(change.effectiveAt == Self.purchase, "a purchase takes effect when it was made")
        #expect(change.recordedAt == Self.received)
        #expect(change.cause == .event)
        #expect(try store.lastChangeCursor() == 1)
    }

    @Test func anAppendThatChangesNoAnswerRecordsNothing() throws {
        let store = try Self.storeWithOnePurchase()
        // The same transaction again (a duplicate), and another version of it saying the same.
        _ = try store.append([.verified(StoreFixtures.transaction(id: "t1"))], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: Self.received + 1)
        _ = try store.append(
            [.verified(StoreFixtures.transaction(id: "t1", signed: Self.received + 2))], rules: StoreFixtures.rules, rulesJSON: "{}",
            receivedAt: Self.received + 2)
        #expect(try store.lastChangeCursor() == 1)
        #expect(try store.changes(after: 0).count == 1)
    }

    @Test func cursorsPageThroughTheFeedInOrder() throws {
        let store = try Self.storeWithOnePurchase()
        _ = try store.append([.verified(Self.renewal())], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: Self.expires + 1_000)
        let all = try store.changes(after: 0)
        try #require(all.count == 2, "\(all)")
        #expect(all.map(\.cursor) == [1, 2])
        // The renewal moved the end of access: still active, a later expiresDate.
        #expect(all[1].active && all[1].expiresDate == Self.renewedExpires && all[1].cause == .event)
        #expect(all[1].recordedAt == Self.expires + 1_000)
        #expect(try store.lastChangeCursor() == 2)

        // Each cursor gives what follows it; the last gives nothing.
        #expect(try store.changes(after: 1) == [all[1]])
        #expect(try store.changes(after: 2).isEmpty)
        #expect(try store.changes(after: 99).isEmpty)
        // A limit cuts the page; paging by the last cursor seen gives everything once.
        #expect(try store.changes(after: 0, limit: 1) == [all[0]])
        #expect(try store.changes(after: 0, limit: 5) == all)
        #expect(try store.changes(after: 0, limit: 0).isEmpty)
        var paged: [ChangeRecord] = []
        var cursor: Int64 = 0
        while true {
            let page = try store.changes(after: cursor, limit: 1)
            guard let last = page.last else { break }
            paged += page
            cursor = last.cursor
        }
        #expect(paged == all)
    }

    @Test func timeAloneEndsAccessWhenItIsDue() throws {
        let store = try Self.storeWithOnePurchase()
        let rules = StoreFixtures.rules
        // Nothing is due before the expiry.
        #expect(try store.hasDueChanges(now: Self.received) == false)
        #expect(try store.hasDueChanges(now: Self.expires - 1) == false)
        #expect(try store.recordDueChanges(rules: rules, now: Self.expires - 1) == 0)
        #expect(try store.lastChangeCursor() == 1)
        // At the expiry the answer changes by time alone.
        #expect(try store.hasDueChanges(now: Self.expires) == true)
        #expect(try store.recordDueChanges(rules: rules, now: Self.expires + 5) == 1)
        let ended = try #require(try store.changes(after: 1).first)
        #expect(ended.appTransactionId == "app-1" && ended.entitlement == "pro")
        #expect(!ended.active && ended.expiresDate == nil)
        #expect(ended.cause == .time)
        #expect(ended.effectiveAt == Self.expires, "access ended at the expiry, not when it was noticed")
        #expect(ended.recordedAt == Self.expires + 5)
        // Recorded once: nothing is due any more.
        #expect(try store.hasDueChanges(now: Self.expires + 10) == false)
        #expect(try store.recordDueChanges(rules: rules, now: Self.expires + 10) == 0)
        #expect(try store.lastChangeCursor() == 2)
    }

    @Test func aRenewalIngestedBeforeItStartsTakesEffectWhenItIsDue() throws {
        let store = try Self.storeWithOnePurchase()
        let rules = StoreFixtures.rules
        // Known a second before it starts: the answer now is still the first period's.
        _ = try store.append([.verified(Self.renewal())], rules: rules, rulesJSON: "{}", receivedAt: Self.expires - 1_000)
        #expect(try store.lastChangeCursor() == 1)
        #expect(try store.hasDueChanges(now: Self.expires - 1) == false)
        // At the first period's end the renewal's end of access takes over: still active, by time alone.
        #expect(try store.hasDueChanges(now: Self.expires) == true)
        #expect(try store.recordDueChanges(rules: rules, now: Self.expires + 1) == 1)
        let extended = try #require(try store.changes(after: 1).first)
        #expect(extended.active && extended.expiresDate == Self.renewedExpires, "\(extended)")
        #expect(extended.cause == .time && extended.effectiveAt == Self.expires)
        // The next thing due is the renewal's end.
        #expect(try store.hasDueChanges(now: Self.renewedExpires - 1) == false)
        #expect(try store.recordDueChanges(rules: rules, now: Self.renewedExpires) == 1)
        let ended = try #require(try store.changes(after: extended.cursor).first)
        #expect(!ended.active && ended.cause == .time && ended.effectiveAt == Self.renewedExpires)
        #expect(try store.lastChangeCursor() == 3)
    }

    @Test func aRevocationIsRecordedWhenItTookEffect() throws {
        let store = try Self.storeWithOnePurchase()
        let revokedAt = Self.purchase + 86_400_000
        _ = try store.append(
            [.verified(StoreFixtures.transaction(id: "t1", signed: revokedAt + 500, revocation: revokedAt))], rules: StoreFixtures.rules,
            rulesJSON: "{}", receivedAt: revokedAt + 60_000)
        let changes = try store.changes(after: 1)
        try #require(changes.count == 1, "\(changes)")
        #expect(!changes[0].active && changes[0].cause == .event)
        #expect(changes[0].effectiveAt == revokedAt)
        #expect(changes[0].recordedAt == revokedAt + 60_000)
        // Nothing left for time to change.
        #expect(try store.hasDueChanges(now: Self.expires + 1) == false)
    }
}
