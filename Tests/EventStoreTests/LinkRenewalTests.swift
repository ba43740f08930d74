import EntitlementCore
@testable import EventStore
import Foundation
import Testing

/// A later claim of the same link (a renewal names the same appTransactionId for its
/// originalTransactionId) moves the link's signed date and reference forward in place;
/// a conflicting claim is still judged against the latest one.
@Suite struct LinkRenewalTests {
    static let signed: Int64 = 1_700_000_000_000

    static func appIndexEntries(_ store: EventStore, _ app: String) throws -> [String] {
        let statement = try store.rawConnection.prepare(
            "SELECT original_transaction_id FROM customer_links INDEXED BY customer_links_by_app_transaction WHERE app_transaction_id = ?")
        try statement.bind(1, app)
        var otids: [String] = []
        while try statement.step() { otids.append(statement.string(0) ?? "") }
        statement.reset()
        return otids
    }

    @Test("a renewal's claim updates the link's signed date and reference; a conflicting claim signed between them loses")
    func renewalMovesTheLinkForward() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        try LifecycleFeedTests.append(store, [StoreFixtures.transaction(id: "t1", app: "app-A", signed: Self.signed + 1)], at: Self.signed + 100)
        let first = try #require(try store.link(of: "1000"))
        try LifecycleFeedTests.append(store, [StoreFixtures.transaction(id: "t2", app: "app-A", signed: Self.signed + 10)], at: Self.signed + 200)
        let renewed = try #require(try store.link(of: "1000"))
        #expect(renewed.appTransactionId == "app-A")
        #expect(renewed.signedDate == Self.signed + 10)
        #expect(renewed.ref.eventSeq > first.ref.eventSeq)
        #expect(try Self.appIndexEntries(store, "app-A") == ["1000"])
        #expect(try store.rawConnection.scalarInt("SELECT count(*) FROM customer_links") == 1)

        // Signed after the first claim but before the renewal's: the renewal's link stands.
        try LifecycleFeedTests.append(store, [StoreFixtures.transaction(id: "t3", app: "app-B", signed: Self.signed + 5)], at: Self.signed + 300)
        #expect(try store.link(of: "1000")?.appTransactionId == "app-A")
        #expect(try store.resolve("otid:1000") == "app-A")
        // Signed after both: it takes the link, and the index follows.
        try LifecycleFeedTests.append(store, [StoreFixtures.transaction(id: "t4", app: "app-B", signed: Self.signed + 20)], at: Self.signed + 400)
        #expect(try store.link(of: "1000")?.appTransactionId == "app-B")
        #expect(try Self.appIndexEntries(store, "app-A").isEmpty)
        #expect(try Self.appIndexEntries(store, "app-B") == ["1000"])
        #expect(try store.rawConnection.scalarString("PRAGMA integrity_check") == "ok")
    }
}
