/// Where `entitlements sync` resumes (table `sync_state`, migration 010): small text
/// values under keys the caller names. Not part of the event log.
extension EventStore {
    /// The value stored under `key`, else `nil`.
    public func syncState(_ key: String) throws(StoreError) -> String? {
        try mapped {
            let statement = try connection.cached("SELECT value FROM sync_state WHERE key = ?")
            defer { statement.reset() }
            try statement.bind(1, key)
            return try statement.step() ? statement.string(0) : nil
        }
    }

    /// Stores `value` under each of `keys` (replacing what was there), in one transaction.
    public func setSyncState(_ value: String, keys: [String], at time: Int64) throws(StoreError) {
        try mapped {
            try connection.write {
                let statement = try connection.cached(
                    "INSERT INTO sync_state (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"
                )
                for key in keys {
                    defer { statement.reset() }
                    try statement.bind(1, key)
                    try statement.bind(2, value)
                    try statement.bind(3, time)
                    _ = try statement.step()
                }
                return ((), .commit)
            }
        }
    }
}
