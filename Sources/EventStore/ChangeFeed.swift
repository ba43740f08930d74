import EntitlementCore

extension EventStore {
    /// Records, in the current transaction, the changes between the answer last
    /// reported for `key` and its answer at `now` (specification section 8), and keeps
    /// the next moment that answer changes by time alone.
    ///
    /// - Parameters:
    ///   - key: The customer.
    ///   - state: Its state now; `nil` for a customer that no longer answers
    ///     under this key (merged away): every active entitlement is then reported inactive.
    ///   - cause: Why the answer may have changed.
    /// - Returns: How many changes were recorded.
    @discardableResult
    func recordChanges(of key: CustomerKey, state: CustomerState?, rules: Rules, now: Int64, cause: ChangeCause) throws -> Int {
        assert(heldCustomerRows[key] == nil, "the answer read is not the one last written")
        let load = try connection.cached("SELECT answer, next_change_at FROM customer_rows WHERE customer_key = ?")
        try load.bind(1, key)
        var reported = ReportedAnswer()
        var storedNext: Int64? = nil
        var hasRow = false
        if try load.step(), !load.isNull(0) {
            hasRow = true
            reported = Self.reportedAnswer(load, column: 0)
            storedNext = load.isNull(1) ? nil : load.int64(1)
        }
        load.reset()

        let timeline = state.map { AnswerTimeline(state: $0, rules: rules, now: now) }
        let answer = timeline?.answer ?? ReportedAnswer()
        let differences = answer.differences(from: reported)
        if !differences.isEmpty {
            var effective: [String: Int64] = [:]
            // The date in the data that brought each change about: for an event, the
            // clock, or the survivor of a merge (what it gained took effect when it was
            // bought); a change of rules has none, nor a key merged away (no state).
            if let timeline, cause != .rules {
                effective = timeline.effectiveAt(of: differences.map(\.entitlement))
            }
            let insert = try connection.cached(
                "INSERT INTO changes (customer_key, entitlement, active, expires_date, effective_at, recorded_at, cause) VALUES (?, ?, ?, ?, ?, ?, ?)")
            for difference in differences {
                let effectiveAt = effective[difference.entitlement] ?? now
                insert.reset()
                try insert.bind(1, key)
                try insert.bind(2, difference.entitlement)
                try insert.bind(3, Int64(difference.active ? 1 : 0))
                try insert.bind(4, difference.expiresDate)
                try insert.bind(5, effectiveAt)
                try insert.bind(6, now)
                try insert.bind(7, cause.rawValue)
                try insert.step()
            }
            insert.reset()
        }

        let next = timeline?.nextChange()
        if state == nil || (answer.active.isEmpty && next == nil) {
            // Nothing to remember: no row (a customer who never had anything costs nothing).
            if hasRow { try writeCustomerRow(key, [(.answer, .null), (.nextChangeAt, .null)]) }
        } else if !hasRow || !differences.isEmpty {
            try writeCustomerRow(key, [(.answer, .blob(answer.encoded())), (.nextChangeAt, CustomerRowValue(next))])
        } else if next != storedNext {
            try writeCustomerRow(key, [(.nextChangeAt, CustomerRowValue(next))])
        }
        return differences.count
    }

    /// Records the changes of a merge, in the current transaction (for the
    /// identity code, which merges `otid:` customers into their appTransactionId):
    /// every entitlement `alias` reported active is reported inactive under
    /// `alias`, and the survivor's changes under `survivor`, both with cause `merge`.
    /// - Parameter survivorState: The merged customer's state.
    func recordMerge(from alias: CustomerKey, into survivor: CustomerKey, survivorState: CustomerState?, rules: Rules, now: Int64) throws {
        try recordChanges(of: alias, state: nil, rules: rules, now: now, cause: .merge)
        try recordChanges(of: survivor, state: survivorState, rules: rules, now: now, cause: .merge)
    }

    /// Whether some customer's answer has changed by time alone by `now` and was not recorded yet.
    /// A read of one index entry: nothing else is touched when nothing is due.
    public func hasDueChanges(now: Int64) throws(StoreError) -> Bool {
        try mapped {
            let statement = try connection.cached(
                "SELECT 1 FROM customer_rows WHERE next_change_at IS NOT NULL AND next_change_at <= ? LIMIT 1")
            defer { statement.reset() }
            try statement.bind(1, now)
            return try statement.step()
        }
    }

    /// Records every change that time has brought about by `now` (cause `time`),
    /// in one transaction; begins none when nothing is due.
    /// - Returns: How many changes were recorded.
    public func recordDueChanges(rules: Rules, now: Int64) throws(StoreError) -> Int {
        guard try hasDueChanges(now: now) else { return 0 }
        return try mapped {
            try connection.write { () throws -> (Int, Connection.Completion) in
                let due = try connection.cached(
                    "SELECT customer_key FROM customer_rows WHERE next_change_at IS NOT NULL AND next_change_at <= ? ORDER BY next_change_at, customer_key")
                try due.bind(1, now)
                var keys: [CustomerKey] = []
                while try due.step() { keys.append(due.string(0) ?? "") }
                due.reset()
                var recorded = 0
                for key in keys {
                    recorded += try recordChanges(of: key, state: try currentState(of: key), rules: rules, now: now, cause: .time)
                }
                return (recorded, .commit)
            }
        }
    }

    /// The state of `key` in the current generation, read inside the caller's transaction.
    func currentState(of key: CustomerKey) throws -> CustomerState? {
        let load = try connection.cached(
            "SELECT state FROM projections WHERE generation = (SELECT generation FROM engine_state WHERE id = 1) AND customer_key = ?")
        defer { load.reset() }
        try load.bind(1, key)
        guard try load.step() else { return nil }
        return try load.withBlob(0) { bytes in try StateCodec.decode(bytes) }
    }

    /// Records the changes of every customer of the current generation (a
    /// replay under new rules, or the start of the feed for a database that
    /// held events before it), in the current transaction.
    func recordChangesOfEveryone(rules: Rules, now: Int64, cause: ChangeCause) throws {
        let scan = try connection.prepare(
            "SELECT customer_key, state FROM projections WHERE generation = (SELECT generation FROM engine_state WHERE id = 1) ORDER BY customer_key")
        // Streamed: the scan reads projections while the loop writes other tables.
        while try scan.step() {
            let key = scan.string(0) ?? ""
            let state = try scan.withBlob(1) { bytes in try StateCodec.decode(bytes) }
            try recordChanges(of: key, state: state, rules: rules, now: now, cause: cause)
        }
        scan.reset()
        try recordChangesOfVanished(rules: rules, now: now, cause: cause)
        try connection.execute("UPDATE change_feed_state SET complete = 1 WHERE id = 1")
    }

    /// Whether the feed has followed the log from its start.
    func changeFeedComplete() throws -> Bool {
        (try connection.scalarInt("SELECT complete FROM change_feed_state WHERE id = 1") ?? 1) != 0
    }

    /// The changes recorded after `cursor`, in order, at most `limit`.
    public func changes(after cursor: Int64, limit: Int? = nil) throws(StoreError) -> [ChangeRecord] {
        try mapped {
            let statement = try connection.cached(
                "SELECT cursor, customer_key, entitlement, active, expires_date, effective_at, recorded_at, cause FROM changes WHERE cursor > ? ORDER BY cursor LIMIT ?")
            defer { statement.reset() }
            try statement.bind(1, cursor)
            try statement.bind(2, Int64(limit ?? -1))
            var records: [ChangeRecord] = []
            while try statement.step() {
                records.append(
                    ChangeRecord(
                        cursor: statement.int64(0), appTransactionId: statement.string(1) ?? "",
                        entitlement: statement.string(2) ?? "", active: statement.int64(3) != 0,
                        expiresDate: statement.isNull(4) ? nil : statement.int64(4), effectiveAt: statement.int64(5),
                        recordedAt: statement.int64(6), cause: ChangeCause(rawValue: statement.string(7) ?? "") ?? .event))
            }
            return records
        }
    }

    /// The last cursor recorded (0 before any change).
    public func lastChangeCursor() throws(StoreError) -> Int64 {
        try mapped { try connection.scalarInt("SELECT coalesce(max(cursor), 0) FROM changes") ?? 0 }
    }
}

extension EventStore {
    /// The customers a batch's events may have changed: the owner of each event
    /// now, and both sides of every link the batch changed.
    /// - Parameter owners: owners already resolved in this transaction, and where more are kept.
    func affectedCustomers(batch events: [Event], changes: IdentityChanges, owners: inout [String: CustomerKey]) throws -> [CustomerKey] {
        var keys: [CustomerKey] = []
        var seen = Set<CustomerKey>()
        func add(_ key: CustomerKey?) { if let key, seen.insert(key).inserted { keys.append(key) } }
        for event in events { add(try owner(of: event, cache: &owners)) }
        for (otid, before) in changes.before {
            if before != nil { add(try ownerBefore(ofOriginalTransactionId: otid, changes: changes)) }
            add(try owner(ofOriginalTransactionId: otid))
        }
        return keys
    }

    /// Reports inactive every customer the feed reported that no longer has a
    /// projection (an `otid:` customer merged into its appTransactionId: cause `merge`).
    ///
    /// The customers without a projection are found from the two indexes of customers
    /// alone (a few dozen MB at 1,000,000 customers), and only their rows are read for an
    /// answer, by ``recordChanges(of:state:rules:now:cause:)`` itself (a row with none, kept
    /// for another feed, records and writes nothing): a test of `answer` in the same
    /// statement read every row (1.6 GB).
    func recordChangesOfVanished(rules: Rules, now: Int64, cause: ChangeCause) throws {
        let missing = try connection.prepare(
            "SELECT r.customer_key FROM customer_rows r WHERE NOT EXISTS (SELECT 1 FROM projections p WHERE p.generation = (SELECT generation FROM engine_state WHERE id = 1) AND p.customer_key = r.customer_key)")
        var candidates: [CustomerKey] = []
        while try missing.step() { if let key = missing.string(0) { candidates.append(key) } }
        missing.reset()
        for key in candidates {
            try recordChanges(of: key, state: nil, rules: rules, now: now, cause: key.hasPrefix("otid:") ? .merge : cause)
        }
    }
}

extension EventStore {
    /// The reported answer in `column`: the binary codec's bytes, or, in a row written
    /// before the answers were kept in the codec, its JSON text. An answer that cannot be
    /// read counts as none reported (the feed then reports the customer's whole answer).
    static func reportedAnswer(_ statement: Statement, column: Int32) -> ReportedAnswer {
        if statement.isText(column) {
            guard let text = statement.string(column), let json = try? JSONParser().parse(Array(text.utf8)) else { return ReportedAnswer() }
            return ReportedAnswer(json: json) ?? ReportedAnswer()
        }
        return statement.blob(column).flatMap { try? ReportedAnswer(encoded: $0) } ?? ReportedAnswer()
    }
}
