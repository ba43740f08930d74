import EntitlementCore

extension EventStore {
    /// What an operator event writes beside its body: the log row's columns that differ
    /// between a usage record and the other operator records.
    struct OperatorEventRow {
        var identity: String
        var kind: String
        var eventId: String
        var customerKey: CustomerKey
        var appTransactionId: String?
        var originalTransactionId: String?
        var signedDate: Int64
        /// The record's canonical JSON: the row's `raw`, and what the chain hashes.
        var raw: String
    }

    /// Appends an operator event at the end of the log, inside the caller's write
    /// transaction: its row, chained to the last event, and its facts. Returns the event
    /// and the log's head after it, for the head record once the transaction commits.
    func insertOperatorEvent(_ row: OperatorEventRow, body: EventBody, receivedAt: Int64) throws -> (event: Event, head: LogHead) {
        let last = try connection.cached("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1")
        var (lastSeq, prevHash): (Int64, [UInt8]) = (0, [UInt8](repeating: 0, count: 32))
        if try last.step() { (lastSeq, prevHash) = (last.int64(0), last.blob(1) ?? []) }
        last.reset()
        let seq = lastSeq + 1
        let event = Event(seq: seq, body: body)
        let hash = chainHash(
            prevHash: prevHash, seq: seq, identity: row.identity, raw: row.raw, digest: nil, digestFrom: try chainDigestFrom(),
            material: &chainMaterial)
        let logRow = LogRow(
            seq: seq, identity: row.identity, kind: row.kind, customerKey: row.customerKey,
            filing: LogFiling(
                eventId: row.eventId, appTransactionId: row.appTransactionId, originalTransactionId: row.originalTransactionId,
                signedDate: row.signedDate),
            receivedAt: receivedAt, content: .whole(raw: row.raw, body: nil), prevHash: prevHash, hash: hash)
        try Self.insert(logRow, into: "events", on: connection, headers: jwsHeaders, form: try logColumnForm())
        let facts = try connection.cached("INSERT INTO event_facts (customer_key, seq, facts) VALUES (?, ?, ?)")
        try facts.bind(1, row.customerKey)
        try facts.bind(2, seq)
        try facts.bind(3, blob: EventCodec.encode(event))
        try facts.step()
        return (event, LogHead(seq: seq, hash: Self.hex(hash)))
    }
}
