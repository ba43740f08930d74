import EntitlementCore
@testable import EventStore
import Foundation
import Testing

/// `writeCustomerRow`: each set of columns written by a statement of its own (made once
/// per set and found again by the columns' codes), whatever order the sets come in.
@Suite struct CustomerRowWritesTests {
    static func row(_ store: EventStore, _ key: String) throws -> String? {
        try store.rawConnection.scalarString(
            """
            SELECT quote(next_change_at) || ' ' || quote(next_due_at) || ' ' || quote(revenue_seq) || ' ' || quote(answer)
                || ' ' || quote(id_hashes) || ' ' || quote(revenue_facts) FROM customer_rows WHERE customer_key = '\(key)'
            """)
    }

    @Test("sets of columns that differ in order, in length or in setting against clearing each write their own columns")
    func everySetWritesItsOwnColumns() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        // [answer, nextChangeAt] cleared and [nextChangeAt] set would share a number if the
        // kind of statement were not a digit of its own; so would [answer, x] and [x].
        try store.writeCustomerRow("a", [(.nextChangeAt, .integer(5))])
        #expect(try Self.row(store, "a") == "5 NULL NULL NULL NULL NULL")
        try store.writeCustomerRow("a", [(.answer, .blob([1])), (.nextChangeAt, .integer(6))])
        #expect(try Self.row(store, "a") == "6 NULL NULL X'01' NULL NULL")
        try store.writeCustomerRow("a", [(.nextChangeAt, .integer(7)), (.answer, .blob([2]))])
        #expect(try Self.row(store, "a") == "7 NULL NULL X'02' NULL NULL")
        try store.writeCustomerRow("a", [(.revenueSeq, .integer(9)), (.revenueFacts, .blob([3, 4]))])
        #expect(try Self.row(store, "a") == "7 NULL 9 X'02' NULL X'0304'")
        try store.writeCustomerRow("a", [(.answer, .null), (.nextChangeAt, .null)])
        #expect(try Self.row(store, "a") == "NULL NULL 9 NULL NULL X'0304'")
        try store.writeCustomerRow("a", [(.nextDueAt, .integer(11)), (.idHashes, .blob([5])), (.revenueSeq, .null), (.revenueFacts, .null)])
        #expect(try Self.row(store, "a") == "NULL 11 NULL NULL X'05' NULL")
        // The same sets again, on another customer: found by their numbers, the same rows.
        try store.writeCustomerRow("b", [(.nextChangeAt, .integer(5))])
        try store.writeCustomerRow("b", [(.answer, .blob([1])), (.nextChangeAt, .integer(6))])
        #expect(try Self.row(store, "b") == "6 NULL NULL X'01' NULL NULL")
        // A row with none of its columns left set is deleted.
        try store.writeCustomerRow("a", [(.nextDueAt, .null), (.idHashes, .null), (.revenueSeq, .null), (.revenueFacts, .null)])
        #expect(try Self.row(store, "a") == nil)
        #expect(store.customerRowSQL.count == 7)
    }

    @Test("held columns are written with the customer's next write, or by writeHeldCustomerRows; an error drops them")
    func heldColumns() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        try store.holdingCustomerRows {
            try store.writeCustomerRow("a", [(.answer, .blob([1])), (.nextChangeAt, .integer(6))])
            try store.writeCustomerRow("b", [(.nextChangeAt, .integer(8))])
            // A second write while held joins the first, the later value of a column winning.
            try store.writeCustomerRow("b", [(.nextChangeAt, .integer(9)), (.nextDueAt, .integer(10))])
        }
        #expect(try Self.row(store, "a") == nil)
        #expect(try Self.row(store, "b") == nil)
        // The next write of `a` carries its held columns, in one statement.
        try store.writeCustomerRow("a", [(.nextDueAt, .integer(11)), (.idHashes, .blob([5]))])
        #expect(try Self.row(store, "a") == "6 11 NULL X'01' X'05' NULL")
        #expect(try Self.row(store, "b") == nil)
        try store.writeHeldCustomerRows()
        #expect(try Self.row(store, "b") == "9 10 NULL NULL NULL NULL")
        #expect(store.heldCustomerRows.isEmpty)
        // A write with nothing of its own still writes what was held.
        try store.holdingCustomerRows { try store.writeCustomerRow("c", [(.nextChangeAt, .integer(3))]) }
        try store.writeCustomerRow("c", [])
        #expect(try Self.row(store, "c") == "3 NULL NULL NULL NULL NULL")
        // What is held when the body throws goes: nothing of it is written later.
        struct Failure: Error {}
        #expect(throws: Failure.self) {
            try store.holdingCustomerRows {
                try store.writeCustomerRow("d", [(.nextChangeAt, .integer(4))])
                throw Failure()
            }
        }
        #expect(store.heldCustomerRows.isEmpty)
        try store.writeHeldCustomerRows()
        #expect(try Self.row(store, "d") == nil)
    }

    @Test("an append writes each customer's row once, the change feed's columns with the lifecycle's", arguments: [true, false])
    func oneWriteACustomer(lifecycle: Bool) throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        store.recordsLifecycle = lifecycle
        try store.rawConnection.execute(
            """
            CREATE TEMP TABLE row_writes (customer_key TEXT);
            CREATE TEMP TRIGGER row_inserted AFTER INSERT ON main.customer_rows
            BEGIN INSERT INTO row_writes VALUES (new.customer_key); END;
            CREATE TEMP TRIGGER row_updated AFTER UPDATE ON main.customer_rows
            BEGIN INSERT INTO row_writes VALUES (new.customer_key); END;
            """)
        let purchase: Int64 = 1_700_000_000_000
        let inputs = (1...6).map { index in
            StoreFixtures.transaction(id: "t\(index)", original: "\(1_000 + index)", app: "app-\(index)", purchase: purchase)
        }
        try LifecycleFeedTests.append(store, inputs, at: purchase + 1_000)
        let writes = try store.rawConnection.scalarString(
            "SELECT group_concat(customer_key || ':' || n, ' ') FROM (SELECT customer_key, count(*) AS n FROM row_writes GROUP BY customer_key ORDER BY customer_key)")
        #expect(writes == (1...6).map { "app-\($0):1" }.joined(separator: " "))
        // Each row holds the feed's answer (and, with the lifecycle, what it keeps).
        for index in 1...6 {
            let row = try store.rawConnection.scalarString(
                """
                SELECT next_change_at || ' ' || (answer IS NOT NULL) || ' ' || (id_hashes IS NOT NULL)
                FROM customer_rows WHERE customer_key = 'app-\(index)'
                """)
            #expect(row == "1702592000000 1 \(lifecycle ? 1 : 0)", "the next change is the expiry; the answer kept; the ids with the lifecycle")
        }
        #expect(store.heldCustomerRows.isEmpty)
        #expect(try store.changes(after: 0).count == 6)
    }
}
