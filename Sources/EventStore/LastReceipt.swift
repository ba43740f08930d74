extension EventStore {
    /// When the newest event was received (milliseconds since 1970), or `nil` for an empty log:
    /// where a database restored from a replica stops, for `recover`.
    public func lastReceivedAt() throws(StoreError) -> Int64? {
        try mapped { try connection.scalarInt("SELECT max(received_at) FROM events") }
    }
}
