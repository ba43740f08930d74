extension EventStore {
    /// When the newest event was received (milliseconds since 1970), or `nil` for an empty log:
    /// where a database restored from a replica stops, for `recover`.
    public func lastReceivedAt() throws(StoreError) -> Int64? {
        try mapped { try connection.scalarInt("SELECT max(received_at) FROM events") }
    }
}

extension EventStore {
    /// The log's last event: its seq and when it was received (milliseconds since 1970),
    /// or `nil` for an empty log. One indexed read: what a read replica reports as its head.
    public func lastEventHead() throws(StoreError) -> (seq: Int64, receivedAt: Int64)? {
        try mapped {
            let statement = try connection.cached("SELECT seq, received_at FROM events ORDER BY seq DESC LIMIT 1")
            defer { statement.reset() }
            guard try statement.step() else { return nil }
            return (statement.int64(0), statement.int64(1))
        }
    }
}
