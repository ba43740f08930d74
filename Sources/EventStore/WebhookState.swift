/// Where webhook delivery stands (tables `webhook_positions`, `webhook_failed_lines` and
/// `webhook_lease`, migration 016): bookkeeping beside the log, written by the one
/// deliverer of the database on its own connection, in short transactions that never
/// wait on the network.
public struct WebhookPosition: Sendable, Equatable {
    public var endpoint: String
    public var feed: String
    /// Every line at or below it was delivered or marked failed.
    public var deliveredCursor: Int64 = 0
    /// The line being retried, while one is.
    public var failingCursor: Int64? = nil
    /// The first attempt at the failing line (ms).
    public var failingSince: Int64? = nil
    /// Failed attempts at the failing line.
    public var attempts: Int = 0
    /// When the failing line is tried again (ms).
    public var nextAttemptAt: Int64? = nil
    public var lastError: String? = nil
    /// Lines marked failed so far (read, never written, through this type).
    public var failedLines: Int = 0

    public init(endpoint: String, feed: String) {
        self.endpoint = endpoint
        self.feed = feed
    }
}

extension EventStore {
    /// Where `endpoint` stands in `feed` (a fresh position, cursor 0, when none is stored).
    public func webhookPosition(endpoint: String, feed: String) throws(StoreError) -> WebhookPosition {
        try mapped {
            let statement = try connection.cached(
                "SELECT delivered_cursor, failing_cursor, failing_since, attempts, next_attempt_at, last_error, (SELECT count(*) FROM webhook_failed_lines f WHERE f.endpoint = p.endpoint AND f.feed = p.feed) FROM webhook_positions p WHERE endpoint = ? AND feed = ?"
            )
            defer { statement.reset() }
            try statement.bind(1, endpoint)
            try statement.bind(2, feed)
            var position = WebhookPosition(endpoint: endpoint, feed: feed)
            if try statement.step() {
                position.deliveredCursor = statement.int64(0)
                position.failingCursor = statement.optionalInt64(1)
                position.failingSince = statement.optionalInt64(2)
                position.attempts = Int(statement.int64(3))
                position.nextAttemptAt = statement.optionalInt64(4)
                position.lastError = statement.string(5)
                position.failedLines = Int(statement.int64(6))
            }
            return position
        }
    }

    /// Stores `position` (replacing what was there), and with it, when given, a line
    /// marked failed, in one transaction.
    /// - Parameter expected: when given, the position as its writer last read it: if the
    ///   stored one has moved since (a redelivery was asked for), nothing is written.
    /// - Returns: Whether it was written.
    @discardableResult
    public func saveWebhookPosition(
        _ position: WebhookPosition, failedLine: WebhookFailedLine? = nil, expected: WebhookPosition? = nil, at time: Int64
    ) throws(StoreError) -> Bool {
        try requireWritable()
        return try mapped {
            try connection.write { () throws -> (Bool, Connection.Completion) in
                if let expected {
                    let check = try connection.cached(
                        "SELECT delivered_cursor, failing_cursor, attempts FROM webhook_positions WHERE endpoint = ? AND feed = ?")
                    try check.bind(1, position.endpoint)
                    try check.bind(2, position.feed)
                    var stored: (Int64, Int64?, Int64) = (0, nil, 0)
                    if try check.step() { stored = (check.int64(0), check.optionalInt64(1), check.int64(2)) }
                    check.reset()
                    guard stored == (expected.deliveredCursor, expected.failingCursor, Int64(expected.attempts)) else {
                        return (false, .rollback)
                    }
                }
                let save = try connection.cached(
                    "INSERT OR REPLACE INTO webhook_positions (endpoint, feed, delivered_cursor, failing_cursor, failing_since, attempts, next_attempt_at, last_error, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                )
                defer { save.reset() }
                try save.bind(1, position.endpoint)
                try save.bind(2, position.feed)
                try save.bind(3, position.deliveredCursor)
                try save.bind(4, position.failingCursor)
                try save.bind(5, position.failingSince)
                try save.bind(6, Int64(position.attempts))
                try save.bind(7, position.nextAttemptAt)
                try save.bind(8, position.lastError)
                try save.bind(9, time)
                _ = try save.step()
                if let line = failedLine {
                    let insert = try connection.cached(
                        "INSERT OR REPLACE INTO webhook_failed_lines (endpoint, feed, cursor, webhook_id, first_attempt_at, failed_at, attempts, last_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                    )
                    defer { insert.reset() }
                    try insert.bind(1, position.endpoint)
                    try insert.bind(2, position.feed)
                    try insert.bind(3, line.cursor)
                    try insert.bind(4, line.webhookId)
                    try insert.bind(5, line.firstAttemptAt)
                    try insert.bind(6, time)
                    try insert.bind(7, Int64(line.attempts))
                    try insert.bind(8, line.lastError)
                    _ = try insert.step()
                }
                return (true, .commit)
            }
        }
    }

    /// The lines of `endpoint` and `feed` marked failed, in cursor order.
    public func webhookFailedLines(endpoint: String, feed: String) throws(StoreError) -> [WebhookFailedLine] {
        try mapped {
            let statement = try connection.cached(
                "SELECT cursor, webhook_id, first_attempt_at, attempts, last_error FROM webhook_failed_lines WHERE endpoint = ? AND feed = ? ORDER BY cursor"
            )
            defer { statement.reset() }
            try statement.bind(1, endpoint)
            try statement.bind(2, feed)
            var lines: [WebhookFailedLine] = []
            while try statement.step() {
                lines.append(
                    WebhookFailedLine(
                        cursor: statement.int64(0), webhookId: statement.string(1) ?? "", firstAttemptAt: statement.int64(2),
                        attempts: Int(statement.int64(3)), lastError: statement.string(4)))
            }
            return lines
        }
    }

    // MARK: The lease

    /// Takes (or renews) the deliverer's lease for `holder` until `now + duration`, when it
    /// is free, expired, already `holder`'s, or held by someone `isGone` says has ended.
    /// - Returns: Whether `holder` holds the lease now.
    public func acquireWebhookLease(holder: String, now: Int64, duration: Int64, isGone: (String) -> Bool = { _ in false }) throws(StoreError)
        -> Bool
    {
        try requireWritable()
        return try mapped {
            try connection.write { () throws -> (Bool, Connection.Completion) in
                let read = try connection.cached("SELECT holder, expires_at FROM webhook_lease WHERE id = 1")
                var current: (holder: String, expiresAt: Int64)? = nil
                if try read.step() { current = (read.string(0) ?? "", read.int64(1)) }
                read.reset()
                if let current, current.holder != holder, current.expiresAt > now, !isGone(current.holder) {
                    return (false, .rollback)
                }
                let write = try connection.cached("INSERT OR REPLACE INTO webhook_lease (id, holder, expires_at) VALUES (1, ?, ?)")
                defer { write.reset() }
                try write.bind(1, holder)
                try write.bind(2, now + duration)
                _ = try write.step()
                return (true, .commit)
            }
        }
    }

    /// Gives the lease up, if `holder` holds it.
    public func releaseWebhookLease(holder: String) throws(StoreError) {
        try requireWritable()
        try mapped {
            try connection.write {
                let delete = try connection.cached("DELETE FROM webhook_lease WHERE id = 1 AND holder = ?")
                defer { delete.reset() }
                try delete.bind(1, holder)
                _ = try delete.step()
                return ((), .commit)
            }
        }
    }

    /// Who holds the lease and until when, if anyone does.
    public func webhookLease() throws(StoreError) -> (holder: String, expiresAt: Int64)? {
        try mapped {
            let read = try connection.cached("SELECT holder, expires_at FROM webhook_lease WHERE id = 1")
            defer { read.reset() }
            return try read.step() ? (read.string(0) ?? "", read.int64(1)) : nil
        }
    }
}

/// A line retried until its 24 hours were up, and given up on.
public struct WebhookFailedLine: Sendable, Equatable {
    public var cursor: Int64
    public var webhookId: String
    public var firstAttemptAt: Int64
    public var attempts: Int
    public var lastError: String?

    public init(cursor: Int64, webhookId: String, firstAttemptAt: Int64, attempts: Int, lastError: String?) {
        self.cursor = cursor
        self.webhookId = webhookId
        self.firstAttemptAt = firstAttemptAt
        self.attempts = attempts
        self.lastError = lastError
    }
}
