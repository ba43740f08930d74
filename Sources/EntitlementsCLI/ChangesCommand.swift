import EntitlementCore
import Entitlements

extension Commands {
    /// `entitlements changes`: the feed of changes to active entitlements (specification section 8).
    static func changes(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        try printFeed(
            args,
            Feed(
                command: "changes", recordDue: { engine throws(EngineError) in _ = try engine.recordDueChanges() },
                lastCursor: { engine throws(EngineError) in try engine.lastChangeCursor() },
                page: { engine, cursor, limit throws(EngineError) in
                    let records = try engine.changes(since: cursor, limit: limit)
                    return (records.map { $0.json() }, records.last?.cursor)
                }))
    }
}

extension Help {
    static let changes = """
        entitlements changes [--db PATH] --config PATH [--since CURSOR] [--limit N] [--follow]

        Prints, as NDJSON in the order they were recorded, every change to a customer's
        active entitlements:
          {"cursor":41,"appTransactionId":"704...","entitlement":"pro","active":false,"expiresDate":null,
           "effectiveAt":1766275200000,"recordedAt":1766275201234,"cause":"time"}
        A change is recorded in the same transaction as what caused it: a batch of ingest
        ("event"), a replay ("rules" when the rules changed, else "event"), two customers
        merging ("merge"), or time passing an expiry ("time": recorded before anything is
        printed, so the feed is complete as of the moment it is read). A customer's changes,
        read in order from the start, end in exactly what `query` answers now.

        OPTIONS
          --db PATH        database (default entitlements.sqlite)
          --config PATH    configuration file (required)
          --since CURSOR   print only what was recorded after CURSOR (default 0: everything);
                           a cursor above the last one recorded prints nothing yet,
                           with a warning on standard error
          --limit N        stop after N lines
          --follow         keep running and print new changes as they are recorded
                           (time-driven ones at most a second late) until interrupted
        """
}
