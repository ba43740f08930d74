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
}
