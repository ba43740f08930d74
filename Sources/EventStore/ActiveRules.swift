import EntitlementCore

/// What identifies the database's active rules without reading them: a replay
/// moves to a new generation, and a fresh database's first rules change the length
/// of the recorded text from 0.
public struct ActiveRulesKey: Sendable, Hashable {
    public var generation: Int64
    public var version: String
    public var length: Int64
}

extension EventStore {
    /// The key of the active rules (``ActiveRulesKey``), read without the rules' text
    /// (inside ``withOneSnapshot(_:)``, the key read in that snapshot).
    public func activeRulesKey() throws(StoreError) -> ActiveRulesKey {
        if let held = snapshotRulesKey { return held }
        return try mapped {
            let statement = try connection.cached(Self.activeRulesKeySQL)
            defer { statement.reset() }
            guard try statement.step() else {
                throw StoreError(code: .corrupt, message: "\(path) has no engine_state row; it was not made by this engine")
            }
            return Self.activeRulesKey(statement)
        }
    }

    /// Runs `body` with every read it makes on this connection taken from one snapshot
    /// of the database: commits made meanwhile by other connections are seen after it
    /// returns, not halfway through.
    ///
    /// Outside an explicit transaction SQLite gives each statement a read transaction of
    /// its own, begun with the write-ahead log's read lock (two `fcntl` calls and an
    /// `fstat`) and ended when the statement is reset. Here the active rules' row is read
    /// first and its statement left unfinished until `body` returns, so the statements
    /// `body` runs join that one transaction: a query's rules and its customer's
    /// projection are of the same commit, and the lock is taken once (a `BEGIN` and
    /// `COMMIT` inside, the audit's, leave the snapshot as it is while the statement is
    /// unfinished). ``Connection/read(_:)`` gives the same snapshot with a `BEGIN` and a
    /// `COMMIT` around it: two statements more, which made a query ~15 % slower (Benchmarks
    /// README). Meanwhile ``activeRulesKey()`` answers the key read then. A database
    /// without the row (not the engine's) runs `body` as before, each statement on its
    /// own. Calls inside `body` run in the snapshot held.
    public func withOneSnapshot<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        guard snapshotRulesKey == nil else { return try body() }
        let statement = try mapped { try connection.cached(Self.activeRulesKeySQL) }
        defer {
            snapshotRulesKey = nil
            statement.reset()
        }
        guard try mapped({ try statement.step() }) else { return try body() }
        snapshotRulesKey = Self.activeRulesKey(statement)
        return try body()
    }

    private static let activeRulesKeySQL = "SELECT generation, rules_version, length(rules_json) FROM engine_state WHERE id = 1"

    /// The key in the row `statement` (``activeRulesKeySQL``) stands on.
    private static func activeRulesKey(_ statement: Statement) -> ActiveRulesKey {
        ActiveRulesKey(generation: statement.int64(0), version: statement.string(1) ?? "", length: statement.int64(2))
    }

    /// Records `json` (canonical rules, of `version`) as the database's active rules
    /// when it has none yet: a fresh database takes the rules of its first user.
    /// Rules recorded before are left as they are; only ``replay(rules:rulesJSON:now:collectDiff:chunkSize:progress:)``
    /// replaces them.
    public func recordRulesIfNone(version: String, json: String) throws(StoreError) {
        try requireWritable()
        try mapped {
            guard try currentEngineState().rulesJSON.isEmpty else { return }
            try connection.write { () throws -> ((), Connection.Completion) in
                let record = try connection.cached("UPDATE engine_state SET rules_version = ?, rules_json = ? WHERE id = 1 AND rules_json = ''")
                try record.bind(1, version)
                try record.bind(2, json)
                try record.step()
                return ((), .commit)
            }
        }
    }

    /// The rules a write in the current transaction projects under: the database's
    /// active rules, or `rules` (canonical JSON `rulesJSON`) while it has none, which
    /// are then recorded as its active rules.
    func activeRulesInTransaction(_ rules: Rules, rulesJSON: String, engine: EngineState) throws -> Rules {
        if engine.rulesJSON.isEmpty {
            let record = try connection.cached("UPDATE engine_state SET rules_version = ?, rules_json = ? WHERE id = 1")
            try record.bind(1, rules.version)
            try record.bind(2, rulesJSON)
            try record.step()
            return rules
        }
        if engine.rulesJSON == rulesJSON { return rules }
        // Another process replayed under other rules since the caller read them (a text
        // that does not read back, never written so, leaves the caller's rules in charge).
        return (try? Rules(jsonText: engine.rulesJSON)) ?? rules
    }
}
