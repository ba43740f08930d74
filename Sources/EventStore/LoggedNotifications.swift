/// Questions about notifications in the log, for `test-notification`: whether one arrived.
extension EventStore {
    /// The greatest seq in the log (0 when it is empty).
    public func lastSeq() throws(StoreError) -> Int64 {
        try mapped { try connection.scalarInt("SELECT max(seq) FROM events") ?? 0 }
    }

    /// The notification logged with `notificationUUID`: its `received_at`, else `nil`.
    public func notificationReceivedAt(uuid: String) throws(StoreError) -> Int64? {
        try mapped {
            let statement = try connection.cached("SELECT received_at FROM events WHERE identity = ?")
            defer { statement.reset() }
            try statement.bind(1, "notification:" + uuid)
            return try statement.step() ? statement.int64(0) : nil
        }
    }

    /// Notifications of `notificationType` logged after seq `after`, oldest first:
    /// their `notificationUUID` and `received_at`.
    public func notifications(ofType notificationType: String, after: Int64) throws(StoreError) -> [(uuid: String, receivedAt: Int64)] {
        try mapped {
            let statement = try connection.cached(
                "SELECT event_id, received_at FROM events WHERE seq > ? AND kind = 'notification' AND notification_type = ? ORDER BY seq")
            defer { statement.reset() }
            try statement.bind(1, after)
            try statement.bind(2, notificationType)
            var rows: [(String, Int64)] = []
            while try statement.step() { rows.append((statement.string(0) ?? "", statement.int64(1))) }
            return rows
        }
    }
}
