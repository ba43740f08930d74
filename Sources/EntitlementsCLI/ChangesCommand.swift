import EntitlementCore
import Entitlements
#if canImport(Glibc)
import Glibc
#endif

extension Commands {
    // MARK: changes

    /// `entitlements changes`: the feed of changes to active entitlements (contract section 8).
    static func changes(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(args, command: "changes", valued: ["--db", "--config", "--since", "--limit"], switches: ["--follow"])
        if !arguments.positional.isEmpty {
            throw UsageError(message: "unexpected argument \(arguments.positional[0])", command: "changes")
        }
        var since: Int64 = 0
        if let text = arguments.values["--since"] {
            guard let value = Int64(text), value >= 0 else {
                throw UsageError(message: "--since expects a cursor: a non-negative integer printed by an earlier line, got \"\(text)\"", command: "changes")
            }
            since = value
        }
        var limit: Int? = nil
        if let text = arguments.values["--limit"] {
            guard let value = Int(text), value >= 1 else {
                throw UsageError(message: "--limit expects a positive integer, got \"\(text)\"", command: "changes")
            }
            limit = value
        }
        let follow = arguments.flags.contains("--follow")
        if follow {
            // Runs until interrupted: whatever mask the parent left, SIGINT and SIGTERM end it.
            var signals = sigset_t()
            sigemptyset(&signals)
            sigaddset(&signals, SIGINT)
            sigaddset(&signals, SIGTERM)
            pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        }
        let (loaded, code) = try loadEngine(arguments, command: "changes", mode: .existing)
        guard let engine = loaded else { return code }
        do {
            // Everything due is recorded before the cursor is checked and anything printed.
            try engine.recordDueChanges()
            let last = try engine.lastChangeCursor()
            if since > last {
                throw UsageError(message: "--since \(since) is from the future: the last cursor recorded is \(last)", command: "changes")
            }
            var cursor = since
            var printed = 0
            while true {
                let want = limit.map { $0 - printed }
                let records = try engine.changes(since: cursor, limit: want.map { min($0, 1_000) } ?? 1_000)
                if !records.isEmpty {
                    Output.lines(records.map { $0.json() })
                    printed += records.count
                    cursor = records[records.count - 1].cursor
                }
                if let limit, printed >= limit { break }
                if records.count == 1_000 { continue }
                guard follow else { break }
                usleep(250_000)
            }
            return .success
        } catch let error as EngineError {
            return storageFailure("changes", error)
        } catch let error as UsageError {
            throw error
        } catch {
            return .storage
        }
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
                           a cursor above the last one recorded is a usage error
          --limit N        stop after N lines
          --follow         keep running and print new changes as they are recorded
                           (time-driven ones at most a second late) until interrupted
        """
}
