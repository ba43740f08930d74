import EntitlementCore
@testable import EventStore
import Foundation
import Testing

/// The rows of `customer_lookup` (originalTransactionId and appAccountToken to customer):
/// an event carrying the names its customer's previous event carried writes none, even
/// from a connection that remembers nothing, and every name stays found.
@Suite struct CustomerLookupWritesTests {
    static let signed: Int64 = 1_700_000_000_000

    /// Counts the inserts attempted into `customer_lookup` on `store`'s connection (ignored ones too).
    static func countAttempts(_ store: EventStore) throws {
        try store.rawConnection.execute(
            """
            CREATE TEMP TABLE lookup_attempts (value TEXT);
            CREATE TEMP TRIGGER lookup_attempted BEFORE INSERT ON main.customer_lookup BEGIN INSERT INTO lookup_attempts VALUES (new.value); END;
            """)
    }

    static func attempts(_ store: EventStore) throws -> [String] {
        let statement = try store.rawConnection.prepare("SELECT value FROM temp.lookup_attempts ORDER BY rowid")
        var values: [String] = []
        while try statement.step() { values.append(statement.string(0) ?? "") }
        statement.reset()
        try store.rawConnection.execute("DELETE FROM temp.lookup_attempts")
        return values
    }

    @Test("a renewal carrying its customer's names writes no lookup row from a fresh connection; a new name is written")
    func renewalsWriteNoLookups() throws {
        let path = StoreFixtures.temporaryDatabase()
        do {
            let first = try EventStore(path: path, hash: StoreFixtures.hash)
            try Self.countAttempts(first)
            try LifecycleFeedTests.append(
                first, [StoreFixtures.transaction(id: "t1", app: "app-A", signed: Self.signed + 1, token: "AAAA-1111")], at: Self.signed + 100)
            #expect(try Self.attempts(first) == ["1000", "aaaa-1111"])
        }
        // A new connection remembers no row: the previous event filed under app-A tells.
        let store = try EventStore(path: path, hash: StoreFixtures.hash)
        try Self.countAttempts(store)
        try LifecycleFeedTests.append(
            store, [StoreFixtures.transaction(id: "t2", app: "app-A", signed: Self.signed + 10, token: "aaaa-1111")], at: Self.signed + 200)
        #expect(try Self.attempts(store).isEmpty)
        // Another subscription of the same customer: its originalTransactionId is new, its token is not.
        try LifecycleFeedTests.append(
            store, [StoreFixtures.transaction(id: "t3", original: "2000", app: "app-A", signed: Self.signed + 20, token: "AAAA-1111")],
            at: Self.signed + 300)
        #expect(try Self.attempts(store) == ["2000"])
        // A new token on the next event is written; the one before it was not carried again.
        try LifecycleFeedTests.append(
            store, [StoreFixtures.transaction(id: "t4", original: "2000", app: "app-A", signed: Self.signed + 30, token: "bbbb-2222")],
            at: Self.signed + 400)
        #expect(try Self.attempts(store) == ["bbbb-2222"])

        #expect(try store.customers(originalTransactionId: "1000") == ["app-A"])
        #expect(try store.customers(originalTransactionId: "2000") == ["app-A"])
        #expect(try store.customers(appAccountToken: "AAAA-1111") == ["app-A"])
        #expect(try store.customers(appAccountToken: "bbbb-2222") == ["app-A"])
        #expect(try store.rawConnection.scalarInt("SELECT count(*) FROM customer_lookup") == 4)
    }

    @Test("an operator's record before the event does not count: the names it carries were given, and wrote no row")
    func operatorRecordsDoNotCount() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        try LifecycleFeedTests.append(store, [StoreFixtures.transaction(id: "t1", app: "app-A", signed: Self.signed + 1)], at: Self.signed + 100)
        let usage = UsageFacts(
            usageId: "u1", appTransactionId: "app-A", originalTransactionId: "7777", at: Self.signed + 150,
            amount: .consumed(transactionId: "t1", share: 50_000))
        guard case .appended = try store.appendUsage(usage, atGiven: true, rules: StoreFixtures.rules, receivedAt: Self.signed + 150) else {
            Issue.record("the usage record was not appended")
            return
        }
        #expect(try store.customers(originalTransactionId: "7777").isEmpty)
        try Self.countAttempts(store)
        try LifecycleFeedTests.append(
            store, [StoreFixtures.transaction(id: "t2", original: "7777", app: "app-A", signed: Self.signed + 200)], at: Self.signed + 300)
        #expect(try Self.attempts(store) == ["7777"])
        #expect(try store.customers(originalTransactionId: "7777") == ["app-A"])
    }

    @Test("a customer's events filed under its otid: key, then under its appTransactionId, write the rows of each key")
    func eachFilingKeyHasItsRows() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        try LifecycleFeedTests.append(store, [StoreFixtures.transaction(id: "t1", app: nil, signed: Self.signed + 1)], at: Self.signed + 100)
        #expect(try store.customers(originalTransactionId: "1000") == ["otid:1000"])
        let fresh = try EventStore(path: store.path, hash: StoreFixtures.hash)
        try LifecycleFeedTests.append(fresh, [StoreFixtures.transaction(id: "t2", app: "app-9", signed: Self.signed + 10)], at: Self.signed + 200)
        #expect(try fresh.customers(originalTransactionId: "1000").sorted() == ["app-9", "otid:1000"])
        #expect(try fresh.resolve("otid:1000") == "app-9")
    }
}
