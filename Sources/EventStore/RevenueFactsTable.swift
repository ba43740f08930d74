import EntitlementCore

extension EventStore {
    /// What `key`'s data contributes to the revenue ledger and the metrics
    /// (``RevenueFacts``), as the columns of its row that keep it beside the projection's
    /// last event; none when it has no projection.
    /// - Parameters:
    ///   - state: Its state now.
    ///   - events: Its events, as the lifecycle read them.
    ///   - turns: Its subscriptions' turns, as its lifecycle derives them from the same data.
    func revenueFactsColumns(
        of key: CustomerKey, state: CustomerState, events: [Event], turns: SubscriptionTurns
    ) throws -> [(CustomerRowColumn, CustomerRowValue)] {
        guard let lastSeq = try projectedLastSeqs[key] ?? projectionLastSeq(of: key) else { return [] }
        let facts = RevenueFacts.derive(state: state, events: events, turns: turns)
        return [(.revenueSeq, .integer(lastSeq)), (.revenueFacts, .blob(RevenueFactsCodec.encode(facts)))]
    }

    /// The last event of `key`'s projection in the current generation, read from it; `nil` when it has none.
    private func projectionLastSeq(of key: CustomerKey) throws -> Int64? {
        let seq = try connection.cached(
            "SELECT last_event_seq FROM projections WHERE generation = (SELECT generation FROM engine_state WHERE id = 1) AND customer_key = ?")
        defer { seq.reset() }
        try seq.bind(1, key)
        return try seq.step() ? seq.int64(0) : nil
    }

    /// Whether the database has the table that keeps revenue facts (a database opened
    /// read-only may predate it: every customer's facts are then derived).
    private func hasRevenueFactsTable() throws -> Bool {
        try connection.scalarInt("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'customer_rows'") ?? 0 > 0
    }

    /// Calls `body` with every customer's ``RevenueFacts`` in the current generation, one
    /// at a time: the kept row when it is current (its last event is the projection's),
    /// else derived from the customer's state and events.
    /// - Returns: The customers whose facts were derived here, with the projection's last
    ///   event and the encoded facts (for ``keepRevenueFacts(_:)``).
    /// - Throws: ``StoreError`` when the database cannot be read.
    @discardableResult
    public func forEachRevenueFacts(_ body: (RevenueFacts) -> Void) throws(StoreError) -> [DerivedRevenueFacts] {
        try mapped { () throws -> [DerivedRevenueFacts] in
            let kept = try hasRevenueFactsTable()
            let sql =
                kept
                ? """
                SELECT p.customer_key, p.last_event_seq, r.revenue_seq, r.revenue_facts FROM projections p
                LEFT JOIN customer_rows r ON r.customer_key = p.customer_key
                WHERE p.generation = (SELECT generation FROM engine_state WHERE id = 1)
                """
                : """
                SELECT customer_key, last_event_seq, NULL, NULL FROM projections
                WHERE generation = (SELECT generation FROM engine_state WHERE id = 1)
                """
            let scan = try connection.prepare(sql)
            var stale: [(CustomerKey, Int64)] = []
            while try scan.step() {
                let lastSeq = scan.int64(1)
                if !scan.isNull(2), scan.int64(2) == lastSeq,
                    let facts = try? scan.withBlob(3, { bytes throws(CodecError) in try RevenueFactsCodec.decode(bytes) })
                {
                    body(facts)
                } else {
                    stale.append((scan.string(0) ?? "", lastSeq))
                }
            }
            scan.reset()
            var derived: [DerivedRevenueFacts] = []
            for (key, lastSeq) in stale {
                guard let projection = try projection(of: key) else { continue }
                let facts = RevenueFacts.derive(state: projection.state, events: try derivationEvents(of: key, state: projection.state))
                body(facts)
                if kept {
                    derived.append(DerivedRevenueFacts(key: key, lastEventSeq: lastSeq, bytes: RevenueFactsCodec.encode(facts)))
                }
            }
            return derived
        }
    }

    /// Keeps facts derived by ``forEachRevenueFacts(_:)`` (a writer's connection), so the
    /// next reading finds them; a row whose customer has changed since is left to be
    /// derived again.
    public func keepRevenueFacts(_ derived: [DerivedRevenueFacts]) throws(StoreError) {
        guard !derived.isEmpty else { return }
        try mapped {
            try connection.write { () throws -> ((), Connection.Completion) in
                let seq = try connection.cached(
                    "SELECT last_event_seq FROM projections WHERE generation = (SELECT generation FROM engine_state WHERE id = 1) AND customer_key = ?")
                for row in derived {
                    try seq.bind(1, row.key)
                    let current: Int64? = try seq.step() ? seq.int64(0) : nil
                    seq.reset()
                    guard current == row.lastEventSeq else { continue }
                    try writeCustomerRow(row.key, [(.revenueSeq, .integer(row.lastEventSeq)), (.revenueFacts, .blob(row.bytes))])
                }
                return ((), .commit)
            }
        }
    }
}

/// Revenue facts derived from the log while reading, to be kept (``EventStore/keepRevenueFacts(_:)``).
public struct DerivedRevenueFacts: Sendable {
    public var key: CustomerKey
    public var lastEventSeq: Int64
    public var bytes: [UInt8]
}

extension EventStore {
    /// How many customers the current generation holds (one projection each): appTransactionIds
    /// and unlinked `otid:` customers, not the app users holding an operator's grants or credits.
    public func customerCount() throws(StoreError) -> Int64 {
        try mapped {
            try connection.scalarInt(
                "SELECT count(*) FROM projections WHERE generation = (SELECT generation FROM engine_state WHERE id = 1) AND substr(customer_key, 1, 5) <> 'user:'") ?? 0
        }
    }
}
