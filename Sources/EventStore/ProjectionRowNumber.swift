import EntitlementCore

extension EventStore {
    /// The number of `key`'s projection row (its `row_id`), when `key` is a customer
    /// number: only the ASCII digits 0-9, the first not 0, and no more than `Int64.max`
    /// (an appTransactionId; Apple's have 18 digits). `nil` for every other key, whose
    /// row is numbered below zero and found through the index on (generation, customer).
    ///
    /// A lookup by this number reads the table's leaf alone; by the index, a leaf of the
    /// index first (Migrations/sql/032_projections_by_customer_number.sql, which numbers
    /// the rows of databases from before it by the same test).
    static func projectionRowNumber(of key: CustomerKey) -> Int64? {
        // The bytes read in place: a view's iterator costs several times the arithmetic.
        var key = key
        return key.withUTF8 { projectionRowNumber(digits: $0) }
    }

    /// ``projectionRowNumber(of:)`` of a key's UTF-8 bytes.
    private static func projectionRowNumber(digits: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard let first = digits.first, first >= UInt8(ascii: "1"), first <= UInt8(ascii: "9") else { return nil }
        var number = Int64(first - UInt8(ascii: "0"))
        for byte in digits.dropFirst() {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflowed) = number.multipliedReportingOverflow(by: 10)
            let (sum, overflowedAgain) = times10.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            guard !overflowed, !overflowedAgain else { return nil }
            number = sum
        }
        return number
    }

    /// The number to find or write `key`'s projection row by on this connection's
    /// database: ``projectionRowNumber(of:)`` once migration 032 numbered its rows so;
    /// `nil` before (a reader of a database no writer has migrated yet finds every row
    /// through the index, as that database was written).
    func projectionRow(of key: CustomerKey) throws -> Int64? {
        if knownProjectionsNumbered == nil {
            // Once true, always: no migration is undone. A connection that found it false
            // keeps using the index, which finds every row of either numbering.
            knownProjectionsNumbered =
                try connection.scalarInt(
                    "SELECT count(*) FROM schema_migrations WHERE identifier = '032_projections_by_customer_number'") == 1
        }
        return knownProjectionsNumbered == true ? Self.projectionRowNumber(of: key) : nil
    }
}
