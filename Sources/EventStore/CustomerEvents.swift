import EntitlementCore

extension EventStore {
    /// The events of customer `customer`, in log order, decoded from their
    /// stored facts (every `raw` `nil`): those filed under every key its data
    /// may be filed under (its own, and `otid:<X>` of each X linked to it).
    /// What a customer's history reads.
    /// - Throws: ``StoreError`` when the log cannot be read or a fact does not decode.
    public func events(of customer: CustomerKey) throws(StoreError) -> [Event] {
        try mapped { try loadEvents(of: customer) }
    }

    /// ``events(of:)`` inside the caller's transaction (the lifecycle feed reads them while it records).
    func loadEvents(of customer: CustomerKey) throws -> [Event] {
        let statement = try connection.cached("SELECT seq, facts FROM event_facts WHERE customer_key = ? ORDER BY seq")
        var events: [Event] = []
        let keys = try sources(of: customer)
        for key in keys {
            statement.reset()
            try statement.bind(1, key)
            while try statement.step() {
                let seq = statement.int64(0)
                events.append(try statement.withBlob(1) { bytes in try EventCodec.decode(bytes, seq: seq) })
            }
        }
        statement.reset()
        // One key's rows come in seq order already.
        return keys.count == 1 ? events : events.sorted { $0.seq < $1.seq }
    }
}
