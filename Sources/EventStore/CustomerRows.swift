import EntitlementCore

/// A column of `customer_rows`: what the change feed, the lifecycle feed and the revenue
/// ledger keep of one customer, in one row so that a batch changes one leaf per customer.
enum CustomerRowColumn: String {
    /// The change feed's last reported answer (``ReportedAnswer``, codec bytes or older JSON text).
    case answer
    /// The next moment the reported answer changes by time alone (indexed).
    case nextChangeAt = "next_change_at"
    /// The next moment a lifecycle event of the customer's data becomes due (indexed).
    case nextDueAt = "next_due_at"
    /// The hashes of the lifecycle event ids recorded (``RecordedLifecycleIds``).
    case idHashes = "id_hashes"
    /// The projection's last event the revenue facts were derived at.
    case revenueSeq = "revenue_seq"
    /// The revenue facts (``RevenueFactsCodec``).
    case revenueFacts = "revenue_facts"

    /// A number of its own, 1 to 6 (for naming a set of columns in a few bits).
    var code: Int {
        switch self {
        case .answer: 1
        case .nextChangeAt: 2
        case .nextDueAt: 3
        case .idHashes: 4
        case .revenueSeq: 5
        case .revenueFacts: 6
        }
    }
}

/// A value written into a column of `customer_rows`.
enum CustomerRowValue {
    case null
    case integer(Int64)
    case blob([UInt8])

    init(_ value: Int64?) { self = value.map { .integer($0) } ?? .null }
}

extension EventStore {
    /// Writes `values` into `key`'s row of `customer_rows`, in the current transaction,
    /// leaving its other columns as they are; creates the row when there is none, and
    /// deletes it when none of its columns is left set.
    ///
    /// Only the columns named are written, so an index on a column not named is not touched.
    ///
    /// Columns held back for `key` (``holdingCustomerRows(_:)``) are written with these,
    /// in one statement; while rows are held, these are held too.
    func writeCustomerRow(_ key: CustomerKey, _ values: [(CustomerRowColumn, CustomerRowValue)]) throws {
        var values = values
        if let held = heldCustomerRows.removeValue(forKey: key) {
            values = held.filter { column, _ in !values.contains { $0.0 == column } } + values
        }
        guard !values.isEmpty else { return }
        if holdsCustomerRows {
            heldCustomerRows[key] = values
            return
        }
        let clearsSome = values.contains { if case .null = $0.1 { true } else { false } }
        let setsSome = values.contains { if case .null = $0.1 { false } else { true } }
        // The statement's text depends on the columns alone, and a feed writes the same few
        // sets of columns for every customer: made once, it is found by a number, the
        // columns' codes as octal digits after a leading digit for the kind of statement.
        let signature = values.reduce(setsSome ? 2 : 1) { $0 * 8 + $1.0.code }
        let sql: String
        if let made = customerRowSQL[signature] {
            sql = made
        } else {
            sql = Self.customerRowSQL(names: values.map(\.0.rawValue), setsSome: setsSome)
            customerRowSQL[signature] = sql
        }
        let write = try connection.cached(sql)
        defer { write.reset() }
        try write.bind(1, key)
        if setsSome {
            for (index, (_, value)) in values.enumerated() {
                let position = Int32(index + 2)
                switch value {
                case .null: try write.bind(position, nil as Int64?)
                case .integer(let number): try write.bind(position, number)
                case .blob(let bytes): try write.bind(position, blob: bytes)
                }
            }
        }
        try write.step()
        if clearsSome {
            let delete = try connection.cached(
                """
                DELETE FROM customer_rows WHERE customer_key = ? AND next_change_at IS NULL AND next_due_at IS NULL
                    AND revenue_seq IS NULL AND answer IS NULL AND id_hashes IS NULL AND revenue_facts IS NULL
                """)
            defer { delete.reset() }
            try delete.bind(1, key)
            try delete.step()
        }
    }

    /// Runs `body` (in the caller's transaction) with the writes of customers' rows held
    /// back: each customer's columns are written at its next write after `body`, with what
    /// that write sets (the change feed's answer with the lifecycle's columns: one leaf
    /// rewritten a customer instead of two), or by ``writeHeldCustomerRows()``.
    ///
    /// Rows read while columns are held show them as they were: `body`, and what runs
    /// before the held columns are written, read none of the columns they hold.
    func holdingCustomerRows(_ body: () throws -> Void) throws {
        precondition(!holdsCustomerRows && heldCustomerRows.isEmpty, "customer rows are held already")
        holdsCustomerRows = true
        defer { holdsCustomerRows = false }
        do {
            try body()
        } catch {
            heldCustomerRows.removeAll()
            throw error
        }
    }

    /// Writes every customer's columns still held back (``holdingCustomerRows(_:)``), in
    /// the customers' order, in the caller's transaction.
    func writeHeldCustomerRows() throws {
        for key in heldCustomerRows.keys.sorted() {
            guard let values = heldCustomerRows.removeValue(forKey: key) else { continue }
            try writeCustomerRow(key, values)
        }
    }

    /// The text of the statement that writes the columns `names` of a customer's row:
    /// an upsert when some are set (`setsSome`), else an update that clears them.
    private static func customerRowSQL(names: [String], setsSome: Bool) -> String {
        setsSome
            ? "INSERT INTO customer_rows (customer_key, \(names.joined(separator: ", "))) VALUES (?\(String(repeating: ", ?", count: names.count))) "
                + "ON CONFLICT (customer_key) DO UPDATE SET \(names.map { "\($0) = excluded.\($0)" }.joined(separator: ", "))"
            : "UPDATE customer_rows SET \(names.map { "\($0) = NULL" }.joined(separator: ", ")) WHERE customer_key = ?"
    }
}
