import EntitlementCore
import EventStore
import Foundation
import Testing

/// The lifecycle feed's storage (specification section 12): each id recorded once, in
/// the transaction of what caused it; time-driven events when due; nothing on replay.
@Suite struct LifecycleFeedTests {
    static let purchase: Int64 = 1_700_000_000_000
    static let expires: Int64 = 1_702_592_000_000
    static let day: Int64 = 86_400_000

    static func append(_ store: EventStore, _ inputs: [VerifiedInput], at receivedAt: Int64) throws {
        _ = try store.append(inputs.map { .verified($0) }, rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: receivedAt)
    }

    @Test("a batch records its events at once; an expiry when due; duplicates, reads and replays record nothing")
    func recordedOnceWhenDue() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let t1 = StoreFixtures.transaction(id: "t1", purchase: Self.purchase, expires: Self.expires)
        try Self.append(store, [t1], at: Self.purchase + 1_000)
        let first = try store.lifecycle(after: 0)
        #expect(first.map(\.id) == ["SUBSCRIPTION_STARTED:t1"])
        #expect(first.first?.cursor == 1)
        #expect(first.first?.recordedAt == Self.purchase + 1_000)
        #expect(first.first?.effectiveAt == Self.purchase)
        #expect(first.first?.fields["entitlements"] == ["pro"])
        #expect(first.first?.fields["environment"] == "Sandbox")

        // Not due yet; then due.
        #expect(try !store.hasDueLifecycle(now: Self.expires - 1))
        #expect(try store.recordDueLifecycle(rules: StoreFixtures.rules, now: Self.expires - 1) == 0)
        #expect(try store.hasDueLifecycle(now: Self.expires))
        #expect(try store.recordDueLifecycle(rules: StoreFixtures.rules, now: Self.expires + 5) == 1)
        #expect(try store.recordDueLifecycle(rules: StoreFixtures.rules, now: Self.expires + 10) == 0)
        let expiration = try store.lifecycle(after: 1)
        #expect(expiration.map(\.id) == ["EXPIRATION:1000:\(Self.expires)"])
        #expect(expiration.first?.effectiveAt == Self.expires)
        #expect(expiration.first?.recordedAt == Self.expires + 5)
        #expect(expiration.first?.fields["reason"] == .null)

        // The same data again, and a replay of it: nothing new.
        try Self.append(store, [t1, t1], at: Self.expires + 20)
        _ = try store.replay(rules: StoreFixtures.rules, rulesJSON: "{}", now: Self.expires + 30, collectDiff: false)
        #expect(try store.lastLifecycleCursor() == 2)

        // A late renewal adds its event (in the past), and a refund of it.
        let t2 = StoreFixtures.transaction(id: "t2", purchase: Self.expires, expires: Self.expires + 30 * Self.day, signed: Self.expires)
        let refunded = StoreFixtures.transaction(
            id: "t2", purchase: Self.expires, expires: Self.expires + 30 * Self.day, signed: Self.expires + Self.day,
            revocation: Self.expires + Self.day)
        try Self.append(store, [t2, refunded], at: Self.expires + 2 * Self.day)
        let late = try store.lifecycle(after: 2)
        #expect(late.map(\.id) == ["RENEWAL:t2", "REFUND:t2:\(Self.expires + Self.day)"])
        #expect(late.first?.effectiveAt == Self.expires)
        #expect(late.last?.fields["revocationType"] == "REFUND_FULL")
        // What the store derives now holds every id recorded but the EXPIRATION a late renewal made untrue.
        let derived = Set(try store.derivedLifecycle(of: "app-1", rules: StoreFixtures.rules).map(\.id))
        let recorded = Set(try store.lifecycle(after: 0).map(\.id))
        #expect(recorded.subtracting(derived) == ["EXPIRATION:1000:\(Self.expires)"])
        #expect(derived.subtracting(recorded).isEmpty)
    }

    @Test("an otid: customer merged into its appTransactionId records CUSTOMER_MERGED, dated by the linking object")
    func mergeIsRecorded() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        try Self.append(store, [StoreFixtures.transaction(id: "t1", app: nil)], at: Self.purchase + 1_000)
        #expect(try store.lifecycle(after: 0).map(\.appTransactionId) == ["otid:1000"])
        let linking = StoreFixtures.transaction(id: "t1", signed: Self.purchase + 7_000)
        try Self.append(store, [linking], at: Self.purchase + 9_000)
        let merged = try store.lifecycle(after: 1)
        #expect(merged.map(\.id) == ["CUSTOMER_MERGED:otid:1000:app-1"])
        #expect(merged.first?.appTransactionId == "app-1")
        #expect(merged.first?.effectiveAt == Self.purchase + 7_000)
        #expect(merged.first?.fields["from"] == "otid:1000")
        #expect(merged.first?.fields["originalTransactionId"] == "1000")
        // A link that arrives before any unlinked data merges nothing.
        let other = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        try Self.append(other, [StoreFixtures.transaction(id: "t1")], at: Self.purchase + 1_000)
        try Self.append(other, [StoreFixtures.transaction(id: "t1", app: nil, signed: Self.purchase + 100)], at: Self.purchase + 2_000)
        #expect(try other.lifecycle(after: 0).map(\.id) == ["SUBSCRIPTION_STARTED:t1"])
    }

    @Test("the feed's rows cannot be updated or deleted")
    func rowsAreImmutable() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        try Self.append(store, [StoreFixtures.transaction(id: "t1")], at: Self.purchase + 1_000)
        #expect(throws: (any Error).self) { try store.rawConnection.execute("UPDATE lifecycle_events SET recorded_at = 0") }
        #expect(throws: (any Error).self) { try store.rawConnection.execute("DELETE FROM lifecycle_events") }
        // The same id again (type 1, SUBSCRIPTION_STARTED, tail t1).
        #expect(throws: (any Error).self) {
            try store.rawConnection.execute(
                "INSERT INTO lifecycle_events (type, id_tail, customer_key, effective_at, recorded_at) VALUES (1, 't1', 'x', 0, 0)")
        }
        #expect(try store.lastLifecycleCursor() == 1)
    }

    /// (Its `reason` is read from the logged body, which a stand-in JWS does not have:
    /// the end-to-end tests check it with signed notifications.)
    @Test("a consumption request is recorded with its deadline and transaction")
    func consumptionRequestReason() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let t1 = StoreFixtures.transaction(id: "t1")
        guard case .transaction(let signed) = t1 else { return }
        let json: JSONValue = [
            "notificationType": "CONSUMPTION_REQUEST", "notificationUUID": "uuid-1", "signedDate": .int(Self.purchase + 5_000),
            "version": "2.0",
            "data": [
                "environment": "Sandbox", "bundleId": "com.example.app", "signedTransactionInfo": .string(signed.jws),
                "consumptionRequestReason": "UNINTENDED_PURCHASE",
            ],
        ]
        let notification = VerifiedInput.notification(
            SignedNotification(jws: "nheader." + JSONWriter.string(json) + ".nsig", payload: try NotificationPayload(json: json), transaction: signed))
        try Self.append(store, [notification], at: Self.purchase + 6_000)
        let request = try store.lifecycle(after: 0).first { $0.type == .consumptionRequest }
        #expect(request?.id == "CONSUMPTION_REQUEST:uuid-1")
        #expect(request?.fields["deadline"] == .int(Self.purchase + 5_000 + 12 * 3_600_000))
        #expect(request?.fields["transactionId"] == "t1")
    }
}
