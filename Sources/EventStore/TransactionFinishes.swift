/// Finish Transaction bookkeeping (table `transaction_finishes`, migration 020): which
/// transactions the engine queued for a call to Apple's Finish Transaction, and what Apple
/// answered. Not part of the event log.
extension EventStore {
    /// A transaction to finish.
    public struct FinishCandidate: Sendable, Hashable {
        public var transactionId: String
        /// `Production` or `Sandbox`.
        public var environment: String
        /// The seq of the event that brought it in this batch.
        public var seq: Int64

        public init(transactionId: String, environment: String, seq: Int64) {
            self.transactionId = transactionId
            self.environment = environment
            self.seq = seq
        }
    }

    /// One row of `transaction_finishes`.
    public struct TransactionFinish: Sendable, Hashable {
        public var transactionId: String
        public var environment: String
        /// `pending`, `finished` or `failed`.
        public var state: String
        public var attempts: Int64
        public var finishedAt: Int64?
    }

    /// Queues each candidate whose transaction appears in the log first at the candidate's
    /// seq (it was appended for the first time in this batch) and that has no row yet, in
    /// one short transaction; returns how many were queued.
    public func queueFinishes(_ candidates: [FinishCandidate], at time: Int64) throws(StoreError) -> Int {
        guard !candidates.isEmpty else { return 0 }
        try requireWritable()
        return try mapped {
            try connection.write { (try insertFinishes(candidates, at: time), .commit) }
        }
    }

    /// The inserts of ``queueFinishes(_:at:)``, in the caller's transaction.
    func insertFinishes(_ candidates: [FinishCandidate], at time: Int64) throws -> Int {
        guard !candidates.isEmpty else { return 0 }
        let first = try connection.cached("SELECT min(seq) FROM events WHERE transaction_id = ?")
        let insert = try connection.cached(
            "INSERT OR IGNORE INTO transaction_finishes (transaction_id, environment, state, queued_at, next_attempt_at) VALUES (?, ?, 'pending', ?, ?)"
        )
        var queued = 0
        for candidate in candidates {
            defer { first.reset() }
            try first.bind(1, candidate.transactionId)
            guard try first.step(), first.optionalInt64(0) == candidate.seq else { continue }
            first.reset()
            defer { insert.reset() }
            try insert.bind(1, candidate.transactionId)
            try insert.bind(2, candidate.environment)
            try insert.bind(3, time)
            try insert.bind(4, time)
            _ = try insert.step()
            queued += connection.changes
        }
        return queued
    }

    /// Pending finishes due by `now`, oldest first, at most `limit`.
    public func dueFinishes(now: Int64, limit: Int) throws(StoreError) -> [(transactionId: String, environment: String, attempts: Int64)] {
        try mapped {
            let statement = try connection.cached(
                "SELECT transaction_id, environment, attempts FROM transaction_finishes WHERE state = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, transaction_id LIMIT ?"
            )
            defer { statement.reset() }
            try statement.bind(1, now)
            try statement.bind(2, Int64(limit))
            var rows: [(String, String, Int64)] = []
            while try statement.step() { rows.append((statement.string(0) ?? "", statement.string(1) ?? "", statement.int64(2))) }
            return rows
        }
    }

    /// The earliest `next_attempt_at` of a pending finish, or `nil` when none is pending.
    public func nextFinishDue() throws(StoreError) -> Int64? {
        try mapped {
            try connection.scalarInt("SELECT min(next_attempt_at) FROM transaction_finishes WHERE state = 'pending'")
        }
    }

    /// Records Apple's answer for `transactionId`: `state` `finished` (with `finishedAt`),
    /// `failed` (given up), or `pending` again with `nextAttemptAt`. A row is made when
    /// there is none (a finish called by hand).
    public func recordFinish(
        transactionId: String, environment: String, state: String, at time: Int64, nextAttemptAt: Int64?, status: Int?,
        errorCode: Int64?, errorMessage: String?
    ) throws(StoreError) {
        try requireWritable()
        try mapped {
            try connection.write {
                let statement = try connection.cached(
                    """
                    INSERT INTO transaction_finishes (transaction_id, environment, state, queued_at, attempts, next_attempt_at,
                        finished_at, status, error_code, error_message)
                    VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?7, ?8, ?9)
                    ON CONFLICT (transaction_id) DO UPDATE SET state = ?3, attempts = attempts + 1, next_attempt_at = ?5,
                        finished_at = coalesce(?6, finished_at), status = ?7, error_code = ?8, error_message = ?9
                    """)
                defer { statement.reset() }
                try statement.bind(1, transactionId)
                try statement.bind(2, environment)
                try statement.bind(3, state)
                try statement.bind(4, time)
                try statement.bind(5, nextAttemptAt ?? time)
                try statement.bind(6, state == "finished" ? time : nil)
                try statement.bind(7, status.map { Int64($0) })
                try statement.bind(8, errorCode)
                try statement.bind(9, errorMessage)
                _ = try statement.step()
                return ((), .commit)
            }
        }
    }

    /// The row of `transactionId`, or `nil`.
    public func transactionFinish(_ transactionId: String) throws(StoreError) -> TransactionFinish? {
        try mapped {
            let statement = try connection.cached(
                "SELECT transaction_id, environment, state, attempts, finished_at FROM transaction_finishes WHERE transaction_id = ?")
            defer { statement.reset() }
            try statement.bind(1, transactionId)
            guard try statement.step() else { return nil }
            return TransactionFinish(
                transactionId: statement.string(0) ?? "", environment: statement.string(1) ?? "", state: statement.string(2) ?? "",
                attempts: statement.int64(3), finishedAt: statement.optionalInt64(4))
        }
    }
}
