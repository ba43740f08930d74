import EntitlementCore

extension EventStore {
    /// Keeps, in the current transaction, what `key`'s data contributes to the revenue
    /// ledger and the metrics (``RevenueFacts``), beside the projection's last event.
    /// - Parameters:
    ///   - state: Its state now; `nil` for a customer merged away (its row is removed).
    ///   - events: Its events, as the lifecycle read them.
    ///   - turns: Its subscriptions' turns, as its lifecycle derives them from the same data.
    func saveRevenueFacts(of key: CustomerKey, state: CustomerState?, events: [Event], turns: SubscriptionTurns) throws {
        guard let state else {
            let delete = try connection.cached("DELETE FROM revenue_facts WHERE customer_key = ?")
            try delete.bind(1, key)
            _ = try delete.step()
            delete.reset()
            return
        }
        let seq = try connection.cached(
            "SELECT last_event_seq FROM projections WHERE generation = (SELECT generation FROM engine_state WHERE id = 1) AND customer_key = ?")
        try seq.bind(1, key)
        let lastSeq: Int64? = try seq.step() ? seq.int64(0) : nil
        seq.reset()
        guard let lastSeq else { return }
        let facts = RevenueFacts.derive(state: state, events: events, turns: turns)
        try writeRevenueFacts(key: key, lastEventSeq: lastSeq, bytes: RevenueFactsCodec.encode(facts))
    }

    private func writeRevenueFacts(key: CustomerKey, lastEventSeq: Int64, bytes: [UInt8]) throws {
        let save = try connection.cached(
            "INSERT OR REPLACE INTO revenue_facts (customer_key, last_event_seq, facts) VALUES (?, ?, ?)")
        try save.bind(1, key)
        try save.bind(2, lastEventSeq)
        try save.bind(3, blob: bytes)
        _ = try save.step()
        save.reset()
    }

    /// Whether the database has the table of kept revenue facts (a database opened
    /// read-only may predate it).
    private func hasRevenueFactsTable() throws -> Bool {
        try connection.scalarInt("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'revenue_facts'") ?? 0 > 0
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
                SELECT p.customer_key, p.last_event_seq, r.last_event_seq, r.facts FROM projections p
                LEFT JOIN revenue_facts r ON r.customer_key = p.customer_key
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
                    try writeRevenueFacts(key: row.key, lastEventSeq: row.lastEventSeq, bytes: row.bytes)
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
    /// How many customers the current generation holds (one projection each).
    public func customerCount() throws(StoreError) -> Int64 {
        try mapped {
            try connection.scalarInt(
                "SELECT count(*) FROM projections WHERE generation = (SELECT generation FROM engine_state WHERE id = 1)") ?? 0
        }
    }
}
