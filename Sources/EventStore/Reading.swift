import EntitlementCore

/// A customer's stored projection.
public struct StoredProjection: Sendable {
    public var state: CustomerState
    public var rulesVersion: String
    public var lastEventSeq: Int64
}

/// Which projection generation is current and the rules it was built under.
public struct EngineState: Sendable, Hashable {
    public var generation: Int64
    public var rulesVersion: String
    /// Canonical JSON of the rules; empty before anything was ingested.
    public var rulesJSON: String
}

extension EventStore {
    func currentEngineState() throws -> EngineState {
        let statement = try connection.cached("SELECT generation, rules_version, rules_json FROM engine_state WHERE id = 1")
        defer { statement.reset() }
        guard try statement.step() else {
            throw StoreError(code: .corrupt, message: "\(path) has no engine_state row; it was not made by this engine")
        }
        return EngineState(generation: statement.int64(0), rulesVersion: statement.string(1) ?? "", rulesJSON: statement.string(2) ?? "")
    }

    /// The current generation and rules.
    public func engineState() throws(StoreError) -> EngineState {
        try mapped { try currentEngineState() }
    }

    /// The stored projection of a customer in the current generation.
    public func projection(of key: CustomerKey) throws(StoreError) -> StoredProjection? {
        try withCurrentProjection(of: key) { statement throws in
            let state = try statement.withBlob(0) { bytes in try StateCodec.decode(bytes) }
            return StoredProjection(state: state, rulesVersion: statement.string(1) ?? "", lastEventSeq: statement.int64(2))
        }
    }

    /// What the customer may use at `at` under `rules`, from the stored projection
    /// (``Evaluation/evaluate(stateBytes:rules:at:)``: decoded only as far as
    /// evaluation at `at` reads it), or `nil` for a customer with no projection.
    public func view(of key: CustomerKey, rules: Rules, at: Int64) throws(StoreError) -> CustomerView? {
        try withCurrentProjection(of: key) { statement throws in
            try statement.withBlob(0) { bytes in try Evaluation.evaluate(stateBytes: bytes, rules: rules, at: at) }
        }
    }

    /// Runs `body` on the row of `key` in the current generation (columns: state,
    /// rules_version, last_event_seq), or gives `nil` when there is none.
    private func withCurrentProjection<T>(of key: CustomerKey, _ body: (Statement) throws -> T) throws(StoreError) -> T? {
        try mapped { () throws -> T? in
            // One statement reads the current generation and the projection from one
            // snapshot, without a BEGIN/COMMIT around it (a third of a query's SQLite work).
            // A customer number finds its row by number: the table's leaf alone.
            let row = try projectionRow(of: key)
            let statement = try connection.cached(
                row == nil
                    ? """
                    SELECT state, rules_version, last_event_seq FROM projections
                    WHERE generation = (SELECT generation FROM engine_state WHERE id = 1) AND customer_key = ?1
                    """
                    : """
                    SELECT state, rules_version, last_event_seq FROM projections
                    WHERE generation = (SELECT generation FROM engine_state WHERE id = 1) AND customer_key = ?1 AND row_id = ?2
                    """)
            defer { statement.reset() }
            try statement.bind(1, key)
            if let row { try statement.bind(2, row) }
            guard try statement.step() else {
                statement.reset()
                _ = try currentEngineState()  // a database without its engine_state row is corrupt
                return nil
            }
            return try body(statement)
        }
    }

    /// Customers that hold `originalTransactionId`.
    public func customers(originalTransactionId: String) throws(StoreError) -> [CustomerKey] {
        try lookup(kind: "originalTransactionId", value: originalTransactionId)
    }

    /// Customers whose signed data carried `appAccountToken` (compared case-insensitively).
    public func customers(appAccountToken: String) throws(StoreError) -> [CustomerKey] {
        try lookup(kind: "appAccountToken", value: appAccountToken.lowercased())
    }

    private func lookup(kind: String, value: String) throws(StoreError) -> [CustomerKey] {
        try mapped {
            let statement = try connection.cached(
                "SELECT customer_key FROM customer_lookup WHERE kind = ? AND value = ? ORDER BY customer_key")
            defer { statement.reset() }
            try statement.bind(1, kind)
            try statement.bind(2, value)
            var keys: [CustomerKey] = []
            while try statement.step() { keys.append(statement.string(0) ?? "") }
            return keys
        }
    }

    /// Number of events in the log.
    public func eventCount() throws(StoreError) -> Int64 {
        try mapped { try connection.scalarInt("SELECT count(*) FROM events") ?? 0 }
    }

    /// Number of quarantined inputs.
    public func quarantineCount() throws(StoreError) -> Int64 {
        try mapped { try connection.scalarInt("SELECT count(*) FROM quarantine") ?? 0 }
    }

    /// The raw JWS of a signed object in the log: an event's own JWS, or one
    /// nested in a notification's payload.
    public func rawJWS(_ ref: RawRef) throws(StoreError) -> String {
        try mapped {
            guard let keys = StoredJWS.keys(of: ref.slot), let path = StoredJWS.path(of: ref.slot) else {
                return try loggedInput(seq: ref.eventSeq)
            }
            // The nested JWS as the log keeps it, on its own; else (kept whole) cut out of its notification.
            try requireLogInParts()
            if let nested = try nestedJWS(of: ref.eventSeq).first(where: { $0.path == path }) { return nested.jws.text }
            return try Self.nested(in: try loggedInput(seq: ref.eventSeq), path: keys, seq: ref.eventSeq)
        }
    }

    static func nested(in jws: String, path: [String], seq: Int64) throws(StoreError) -> String {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64.decodeURL(parts[1]), let json = try? JSONParser().parse(bytes) else {
            throw StoreError(code: .unreadable, message: "event \(seq) does not hold a readable JWS")
        }
        var value: JSONValue? = json
        for key in path { value = value?[key] }
        guard case .string(let nested)? = value else {
            throw StoreError(code: .unreadable, message: "event \(seq) has no \(path.joined(separator: "."))")
        }
        return nested
    }
}

extension EventStore {
    /// Sets this connection up for point queries: pages are read with `pread`, one
    /// page per miss, and up to `cacheKibibytes` of them stay cached in the connection
    /// (allocated only as pages are read). Only reads are affected; writes and their
    /// durability are not.
    ///
    /// A memory map is left off (`mapBytes` 0): a fault in a mapped file makes the
    /// kernel read around the page (`read_ahead_kb`, up to megabytes), so a query whose
    /// page was not in the kernel's page cache read ~480 KiB from the benchmark
    /// machine's disk instead of one 16 KiB page; and SQLite maps at most 2 GiB of a
    /// file. The cache's default, 128 MiB, holds every projection of ~100,000
    /// customers (about 1 KiB each) with the B-tree pages above them, so that warm
    /// queries on a big database find their pages here as they do on a small one,
    /// instead of copying them from the kernel. A commit by any writer empties the
    /// cache, which mapped pages outlived (Benchmarks/README.md, the `scale` mode).
    public func prepareForQueries(mapBytes: Int64 = 0, cacheKibibytes: Int = 131_072) throws(StoreError) {
        try mapped {
            try connection.execute("PRAGMA mmap_size = \(mapBytes)")
            try connection.execute("PRAGMA cache_size = -\(cacheKibibytes)")
        }
    }
}

extension EventStore {
    /// Copies every committed page from the write-ahead log into the database
    /// file and empties the log, so that the file alone holds everything
    /// committed (for copying it, or before a process exits). Committed data
    /// is durable either way; a checkpoint that readers hold back is left for later.
    public func checkpoint() throws(StoreError) {
        guard mode != .readOnly else { return }
        try mapped {
            // Never wait for other processes' readers (a long replay, say): what they
            // still need stays in the log, and the next checkpoint moves it. (The busy
            // handler stays the connection's own: `PRAGMA busy_timeout` would replace it.)
            _ = try connection.busyWait.withoutWaiting { () throws(SQLiteError) in
                try connection.scalarInt("PRAGMA wal_checkpoint(TRUNCATE)")
            }
        }
    }
}
