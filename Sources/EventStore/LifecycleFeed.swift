import EntitlementCore

extension EventStore {
    /// Records, in the current transaction, every lifecycle event of `key`'s data
    /// (specification section 12) whose `effectiveAt` is at or before `now` and whose id
    /// is not recorded yet, and keeps the next moment one becomes due by time alone.
    ///
    /// - Parameters:
    ///   - key: The customer.
    ///   - state: Its state now; `nil` for a customer that no longer answers under
    ///     this key (merged away): nothing is recorded and nothing is due.
    /// - Returns: How many events were recorded.
    @discardableResult
    func recordLifecycle(of key: CustomerKey, state: CustomerState?, rules: Rules, now: Int64) throws -> Int {
        guard recordsLifecycle else { return 0 }
        guard let state else {
            // A customer merged away keeps nothing: its row goes.
            try writeCustomerRow(key, [(.nextDueAt, .null), (.idHashes, .null), (.revenueSeq, .null), (.revenueFacts, .null)])
            return 0
        }
        let events = try derivationEvents(of: key, state: state)
        // What is recorded already and the next moment due, read with one row; without
        // the recorded ids, each id is looked up.
        let (known, storedDue) = try lifecycleKept(of: key)
        // Only the events due and not recorded are built; the others are known by their ids' hashes.
        let unrecorded = LifecycleEvents.unrecorded(
            state: state, events: events, consumptionReasons: try consumptionReasons(in: events), rules: rules, now: now,
            accountTokenUsers: appUsersFromAccountToken, isRecorded: { known?.contains($0) ?? false })
        // The customer's row is written once, with only what changed.
        var row = try revenueFactsColumns(of: key, state: state, events: events, turns: unrecorded.turns)
        var added: [UInt64] = []
        var recorded = 0
        for event in unrecorded.events {
            // Exactly once rests on the row's UNIQUE id, not on the hashes: a recorded id is ignored.
            if try recordLifecycleEvent(event, rules: rules, now: now) { recorded += 1 }
            added.append(RecordedLifecycleIds.hash(event.id))
        }
        if known == nil || !added.isEmpty {
            var ids = known ?? RecordedLifecycleIds()
            ids.formUnion(added)
            row.append((.idHashes, .blob(ids.bytes)))
        }
        // Most batches leave the next moment due as it was: its index is then not written.
        if storedDue != unrecorded.nextDue { row.append((.nextDueAt, CustomerRowValue(unrecorded.nextDue))) }
        try writeCustomerRow(key, row)
        return recorded
    }

    /// The lifecycle ids kept as recorded for `key`'s data (`nil` when none are kept) and
    /// the next moment one of its events becomes due (`nil` when none will by time).
    private func lifecycleKept(of key: CustomerKey) throws -> (RecordedLifecycleIds?, Int64?) {
        let load = try connection.cached("SELECT id_hashes, next_due_at FROM customer_rows WHERE customer_key = ?")
        defer { load.reset() }
        try load.bind(1, key)
        guard try load.step() else { return (nil, nil) }
        let ids = load.isNull(0) ? nil : load.withBlob(0) { RecordedLifecycleIds(bytes: $0) }
        return (ids, load.optionalInt64(1))
    }

    /// The events the lifecycle and revenue derivations need of `key`'s data: none when
    /// its state says they read nothing from them (``CustomerState/derivationsNeedEvents``).
    func derivationEvents(of key: CustomerKey, state: CustomerState) throws -> [Event] {
        state.derivationsNeedEvents ? try loadEvents(of: key) : []
    }

    /// Records one event unless its id is recorded already.
    /// - Returns: Whether it was recorded now.
    func recordLifecycleEvent(_ event: LifecycleEvent, rules: Rules, now: Int64) throws -> Bool {
        try insertLifecycleEvent(event, rules: rules, now: now)
    }

    /// Inserts one event's row (`lifecycle_events`, see ``LifecycleRow``); an id recorded
    /// already is left as it was (`INSERT OR IGNORE`: the cursor is the rowid, so an
    /// ignored insert uses up none, and needs no look-up before it).
    /// - Returns: Whether it was recorded now.
    private func insertLifecycleEvent(_ event: LifecycleEvent, rules: Rules, now: Int64) throws -> Bool {
        guard let tail = Self.idTail(event.id, after: event.type.rawValue) else {
            throw StoreError(code: .sqlite, message: "the lifecycle event id \(event.id) does not begin with its type and a colon")
        }
        let shape = try lifecycleShapes.number(of: LifecycleShape(of: event, entitlements: event.entitlements(under: rules)), on: connection)
        let rowValues = LifecycleShape.rowValues(of: event)
        let insert = try connection.cached(
            """
            INSERT OR IGNORE INTO lifecycle_events (type, id_tail, customer_key, effective_at, recorded_at, shape,
                original_transaction_id, transaction_id, price, extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        defer { insert.reset() }
        try insert.bind(1, LifecycleRow.code(of: event.type))
        try LifecycleRow.bind(insert, 2, numberOrText: tail)
        try LifecycleRow.bind(insert, 3, numberOrText: event.customerKey)
        try insert.bind(4, event.effectiveAt)
        try insert.bind(5, now)
        try insert.bind(6, shape)
        try LifecycleRow.bind(insert, 7, numberOrText: event.originalTransactionId)
        if event.transactionId == tail {
            try insert.bind(8, blob: [])
        } else {
            try LifecycleRow.bind(insert, 8, numberOrText: event.transactionId)
        }
        try insert.bind(9, event.price)
        try insert.bind(10, rowValues.isEmpty ? nil : JSONWriter.string(.array(rowValues)))
        try insert.step()
        return connection.changes > 0
    }

    /// What follows `type` and a colon at the start of `id` (the row's `id_tail`), `nil` when
    /// `id` does not begin so. Compared byte by byte, in place.
    static func idTail(_ id: String, after type: String) -> String? {
        var id = id
        var type = type
        return id.withUTF8 { id in
            type.withUTF8 { type -> String? in
                guard id.count > type.count, id[type.count] == UInt8(ascii: ":"),
                    UnsafeBufferPointer(rebasing: id[..<type.count]).elementsEqual(type)
                else { return nil }
                return String(decoding: UnsafeBufferPointer(rebasing: id[(type.count + 1)...]), as: UTF8.self)
            }
        }
    }

    /// The `consumptionRequestReason` of each CONSUMPTION_REQUEST among `events`, by
    /// notificationUUID, read from the logged body (the facts do not keep it).
    private func consumptionReasons(in events: [Event]) throws -> [String: String] {
        var reasons: [String: String] = [:]
        for event in events {
            guard case .notification(let n) = event.body, n.type == .consumptionRequest else { continue }
            let read = try connection.cached(
                "SELECT json_extract(body, '$.data.consumptionRequestReason') FROM events WHERE seq = ? AND body IS NOT NULL")
            defer { read.reset() }
            try read.bind(1, event.seq)
            if try read.step(), let reason = read.string(0) { reasons[n.notificationUUID] = reason }
        }
        return reasons
    }

    /// Records the lifecycle of a batch, in its transaction: `CUSTOMER_MERGED` for
    /// each `otid:` customer merged into an appTransactionId, then the events of
    /// every customer the batch touched.
    /// - Parameter states: the states the batch wrote, by customer.
    func recordLifecycle(
        ofBatch keys: [CustomerKey], merges: [CustomerMerge], states: [CustomerKey: CustomerState], rules: Rules, now: Int64
    ) throws {
        guard recordsLifecycle else { return }
        for merge in merges where merge.from.hasPrefix("otid:") && !merge.into.hasPrefix("otid:") {
            let otid = String(merge.from.dropFirst(5))
            let survivor = try states[merge.into] ?? currentState(of: merge.into)
            let event = LifecycleEvent(
                id: "CUSTOMER_MERGED:\(merge.from):\(merge.into)", type: .customerMerged, customerKey: merge.into,
                originalTransactionId: otid, environment: survivor?.environments.displayName,
                extra: JSONObject([("from", .string(merge.from))]), effectiveAt: try link(of: otid)?.signedDate ?? now)
            _ = try recordLifecycleEvent(event, rules: rules, now: now)
        }
        for merge in merges { try mergeRecordedLifecycleIds(from: merge.from, into: merge.into) }
        var seen = Set<CustomerKey>()
        for key in keys + merges.flatMap({ [$0.from, $0.into] }) where seen.insert(key).inserted {
            try recordLifecycle(of: key, state: try states[key] ?? currentState(of: key), rules: rules, now: now)
        }
    }

    /// Records the lifecycle after a replay's swap, in its transaction: of every
    /// customer when the feed had not followed this database from its start (then
    /// it has), else of `keys` (the customers whose state changed). Ids recorded
    /// before are skipped: replaying the same events records nothing.
    func recordLifecycleAfterReplay(keys: some Sequence<CustomerKey>, rules: Rules, now: Int64) throws {
        let complete = (try connection.scalarInt("SELECT complete FROM lifecycle_feed_state WHERE id = 1") ?? 1) != 0
        guard !complete else {
            for key in Set(keys).sorted() { try recordLifecycle(of: key, state: try currentState(of: key), rules: rules, now: now) }
            return
        }
        let scan = try connection.prepare(
            "SELECT customer_key, state FROM projections WHERE generation = (SELECT generation FROM engine_state WHERE id = 1) ORDER BY customer_key")
        // Streamed: the scan reads projections while the loop writes other tables.
        while try scan.step() {
            let key = scan.string(0) ?? ""
            let state = try scan.withBlob(1) { bytes in try StateCodec.decode(bytes) }
            try recordLifecycle(of: key, state: state, rules: rules, now: now)
        }
        scan.reset()
        try connection.execute("UPDATE lifecycle_feed_state SET complete = 1 WHERE id = 1")
    }

    /// Whether some customer has a lifecycle event that time has made due by `now`,
    /// not recorded yet. A read of one index entry.
    public func hasDueLifecycle(now: Int64) throws(StoreError) -> Bool {
        try mapped {
            let statement = try connection.cached("SELECT 1 FROM customer_rows WHERE next_due_at IS NOT NULL AND next_due_at <= ? LIMIT 1")
            defer { statement.reset() }
            try statement.bind(1, now)
            return try statement.step()
        }
    }

    /// Records every lifecycle event that time has made due by `now` (an
    /// EXPIRATION, most often), in one transaction; begins none when nothing is due.
    /// - Returns: How many events were recorded.
    public func recordDueLifecycle(rules: Rules, now: Int64) throws(StoreError) -> Int {
        guard try hasDueLifecycle(now: now) else { return 0 }
        return try mapped {
            try connection.write { () throws -> (Int, Connection.Completion) in
                let due = try connection.cached(
                    "SELECT customer_key FROM customer_rows WHERE next_due_at IS NOT NULL AND next_due_at <= ? ORDER BY next_due_at, customer_key")
                try due.bind(1, now)
                var keys: [CustomerKey] = []
                while try due.step() { keys.append(due.string(0) ?? "") }
                due.reset()
                var recorded = 0
                for key in keys { recorded += try recordLifecycle(of: key, state: try currentState(of: key), rules: rules, now: now) }
                return (recorded, .commit)
            }
        }
    }

    /// The lifecycle events recorded after `cursor`, in order, at most `limit`.
    public func lifecycle(after cursor: Int64, limit: Int? = nil) throws(StoreError) -> [LifecycleRecord] {
        try mapped {
            let statement = try connection.cached(
                """
                SELECT cursor, type, id_tail, customer_key, effective_at, recorded_at, shape, original_transaction_id,
                    transaction_id, price, extra FROM lifecycle_events WHERE cursor > ? ORDER BY cursor LIMIT ?
                """)
            defer { statement.reset() }
            try statement.bind(1, cursor)
            try statement.bind(2, Int64(limit ?? -1))
            var records: [LifecycleRecord] = []
            while try statement.step() {
                let cursor = statement.int64(0)
                guard let record = try lifecycleRecord(statement) else {
                    throw StoreError(code: .unreadable, message: "the lifecycle event at cursor \(cursor) cannot be read back")
                }
                records.append(record)
            }
            return records
        }
    }

    /// The line a `lifecycle_events` row keeps (columns in the table's order), `nil`
    /// when its values are not of the form the table keeps.
    private func lifecycleRecord(_ row: Statement) throws -> LifecycleRecord? {
        guard let type = LifecycleRow.type(code: row.int64(1)), let tail = LifecycleRow.numberOrText(row, 2) else { return nil }
        let values: JSONValue?
        if row.isNull(6) {
            // A row recorded before the table kept shapes: its values as they were kept.
            values = row.string(10).flatMap { try? JSONParser().parse($0) }
        } else {
            let shape = try lifecycleShapes.shape(row.int64(6), on: connection)
            var rowValues: [JSONValue] = []
            if let text = row.string(10) {
                guard case .array(let parsed) = try? JSONParser().parse(text) else { return nil }
                rowValues = parsed
            }
            values = shape.storedValues(
                originalTransactionId: LifecycleRow.numberOrText(row, 7),
                transactionId: row.isBlob(8) ? tail : LifecycleRow.numberOrText(row, 8),
                price: row.optionalInt64(9), rowValues: rowValues)
        }
        guard let values else { return nil }
        return LifecycleRecord(
            cursor: row.int64(0), id: type.rawValue + ":" + tail, type: type, appTransactionId: LifecycleRow.numberOrText(row, 3) ?? "",
            effectiveAt: row.int64(4), recordedAt: row.int64(5), storedValues: values)
    }

    /// The last lifecycle cursor recorded (0 before any event).
    public func lastLifecycleCursor() throws(StoreError) -> Int64 {
        try mapped { try connection.scalarInt("SELECT coalesce(max(cursor), 0) FROM lifecycle_events") ?? 0 }
    }

    /// Every lifecycle event of `customer`'s data as known now, recorded or not
    /// (the pure function of section 12, for tests and audits).
    public func derivedLifecycle(of customer: CustomerKey, rules: Rules) throws(StoreError) -> [LifecycleEvent] {
        try mapped {
            guard let state = try currentState(of: customer) else { return [] }
            let events = try loadEvents(of: customer)
            return LifecycleEvents.all(
                state: state, events: events, consumptionReasons: try consumptionReasons(in: events), rules: rules,
                accountTokenUsers: appUsersFromAccountToken)
        }
    }
}
