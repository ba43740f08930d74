/// One row of the quarantine (migration 002): an input that was rejected, and why.
public struct QuarantineRow: Sendable, Equatable {
    public var id: Int64
    public var receivedAt: Int64
    public var code: String
    public var message: String
    /// The input's size in bytes as received.
    public var size: Int64
    /// SHA-256 of the input.
    public var inputHash: [UInt8]
    /// The first bytes of the input as kept.
    public var head: [UInt8]
}

extension EventStore {
    /// The latest quarantined inputs, newest first, each with at most `headBytes` of its input.
    public func latestQuarantine(limit: Int, headBytes: Int) throws(StoreError) -> [QuarantineRow] {
        try mapped {
            let statement = try connection.cached(
                "SELECT id, received_at, code, message, size, input_hash, substr(raw, 1, ?) FROM quarantine ORDER BY id DESC LIMIT ?")
            defer { statement.reset() }
            try statement.bind(1, Int64(headBytes))
            try statement.bind(2, Int64(limit))
            var rows: [QuarantineRow] = []
            while try statement.step() {
                rows.append(
                    QuarantineRow(
                        id: statement.int64(0), receivedAt: statement.int64(1), code: statement.string(2) ?? "",
                        message: statement.string(3) ?? "", size: statement.int64(4), inputHash: statement.blob(5) ?? [],
                        head: statement.blob(6) ?? []))
            }
            return rows
        }
    }
}
