import EntitlementCore

extension EventStore {
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
        // Another process replayed under other rules since the caller read them.
        return try Rules(jsonText: engine.rulesJSON)
    }
}
