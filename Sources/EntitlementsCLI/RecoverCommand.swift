import EntitlementCore
import Entitlements
import Foundation

/// `entitlements recover`: after a database was restored from the replica (specification section 15).
enum RecoverCommand {
    static let help = """
        entitlements recover [--db PATH] --config PATH [--environment E] [--expect-head SEQ:HASH]

        For a database restored from its replica (`litestream restore`): audits it, then,
        with appStoreServerAPI in the configuration, fetches Apple's notification history
        from the last event's receipt time minus one hour to now and ingests it, so that
        what was not acknowledged before the loss comes back from Apple (which keeps 180
        days; what is already there is a `duplicate`). An empty log is caught up from 180
        days ago. Without appStoreServerAPI it audits only (appended 0), and says on
        standard error from when the senders must send again.

        The old machine's head tells how many events the restored log lacks: the head
        record beside the database (PATH-head, when restored in place) and --expect-head
        (what `audit` printed there, or the old PATH-head file's content). A log that is
        whole but ends before that head is not a failed audit here: recover prints
        "missing": N, makes the head record name the restored head, and catches up.

        Prints one line {"audit": "ok", "startDate": MS, "appended": A, "duplicate": D,
        "rejected": R}, with "missing": N after "audit" when N events are missing. An
        audit that fails otherwise prints {"audit": "failed", ...} with the first mismatch
        and fetches nothing; a failed fetch prints the error line as `sync` does.

        OPTIONS
          --db PATH              the restored database (default entitlements.sqlite; must exist)
          --config PATH          configuration file (required); with an appStoreServerAPI section, the catch-up
          --environment E        Production or Sandbox, one of the configuration's environments (default: its first)
          --expect-head SEQ:HASH the old machine's head (audit's headSeq:headHash, or its PATH-head)

        EXIT CODES
          0 audited and caught up (without appStoreServerAPI: audited, nothing known missing);
          1 the audit or the catch-up failed (Apple's error, an item rejected, or what it
          fetched not stored or not confirmed by the replica: REPLICATION_TIMEOUT), or events
          are known missing and nothing could fetch them; 2 usage or configuration error;
          3 the database could not be opened
        """

    /// How far before the last receipt the catch-up starts.
    static let overlap: Int64 = 3_600_000
    /// How far back Apple keeps notification history.
    static let appleKeeps: Int64 = 180 * 86_400_000

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let command = "recover"
        let arguments = try Arguments(args, command: command, valued: ["--db", "--config", "--environment", "--expect-head"], switches: [])
        if let extra = arguments.positional.first { throw UsageError(message: "unexpected argument \"\(extra)\"", command: command) }
        var expectedHead: LogHead? = nil
        if let text = arguments.values["--expect-head"] {
            guard let head = LogHead(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw UsageError(message: "--expect-head expects SEQ:HASH as audit prints them (headSeq, headHash), got \"\(text)\"", command: command)
            }
            expectedHead = head
        }
        // What the command needs is said before what it finds (the database).
        guard arguments.values["--config"] != nil else { throw UsageError(message: "--config PATH is required", command: command) }
        // The restored database must be there: recover never creates one.
        let database = arguments.values["--db"] ?? Commands.defaultDatabase
        guard FileManager.default.fileExists(atPath: database) else {
            Output.error("entitlements \(command): DATABASE_NOT_FOUND: no database at \(database): restore it first (litestream restore)")
            return .storage
        }
        guard let configuration = try SignCommand.loadConfiguration(arguments, command: command) else { return .usage }
        let sync: AppStoreSync?
        let engine: Engine
        if configuration.appStoreServerAPI != nil {
            guard let opened = try SyncCommand.openSync(arguments, command: command, configuration: configuration) else { return .usage }
            guard let opened = opened.0 else { return opened.1 }
            sync = opened
            engine = opened.engine
        } else {
            if let name = arguments.values["--environment"] {
                throw UsageError(message: "--environment \(name) chooses where to fetch from: it needs appStoreServerAPI in the configuration", command: command)
            }
            let (loaded, code) = try Commands.loadEngine(arguments, command: command)
            guard let loaded else { return code }
            sync = nil
            engine = loaded
        }
        let start: Int64
        let missing: Int64
        do {
            let report = try engine.audit(expectedHead: expectedHead)
            // Whole, but shorter than the old machine's head: what the catch-up is for.
            missing = report.missingEvents
            guard (report.firstMismatch == nil || missing > 0) && report.triggersPresent else {
                var object = JSONObject()
                object["audit"] = "failed"
                object["events"] = .int(report.events)
                if let mismatch = report.firstMismatch {
                    object["firstMismatch"] = [
                        "seq": .int(mismatch.seq), "identity": .string(mismatch.identity), "problem": .string(mismatch.problem),
                    ]
                }
                if !report.triggersPresent { object["triggersPresent"] = false }
                Output.line(.object(object))
                return .rejected
            }
            start = try engine.lastReceivedAt().map { $0 - overlap } ?? Engine.now() - appleKeeps
            if missing > 0 {
                try engine.resetHeadRecord()
                Output.error(
                    "entitlements \(command): the restored log ends at seq \(report.headSeq), \(missing) events before the old head: they were committed but never reached the replica\(sync == nil ? "" : "; catching them up from Apple")")
            }
        } catch {
            return Commands.storageFailure(command, error)
        }
        guard let sync else {
            // Nothing to fetch with: the audit's answer, and what the operator must do.
            try? engine.checkpoint()
            Output.line(summary(missing: missing, start: start, totals: SyncTotals()))
            Output.error(
                "entitlements \(command): no appStoreServerAPI in the configuration: nothing was fetched from Apple. What was received from \(TimeArgument.iso8601(start)) on and not acknowledged may be missing: configure appStoreServerAPI and run recover again, or have the senders send it again")
            return missing > 0 ? .rejected : .success
        }
        let outcome = sync.notifications(start: start, onlyFailures: false) { _ in }
        try? engine.checkpoint()
        if let failure = outcome.failure {
            Output.line(failure.json())
            Output.error("entitlements \(command): the catch-up from Apple failed: \(JSONWriter.string(failure.json()))")
            // A catch-up that could not be stored or acknowledged (REPLICATION_TIMEOUT,
            // DATABASE_BUSY) is a failed sync as well: 1, as for Apple's errors.
            return .rejected
        }
        Output.line(summary(missing: missing, start: start, totals: outcome.totals))
        if missing > Int64(outcome.totals.appended) {
            Output.error(
                "entitlements \(command): \(missing) events were missing and \(outcome.totals.appended) came back from Apple: the others were not notifications (usage and grants recorded by an operator, transactions posted directly); send those again from their source")
        }
        return outcome.totals.rejected == 0 ? .success : .rejected
    }

    /// `{"audit": "ok", ["missing": N,] "startDate": MS, "appended": A, "duplicate": D, "rejected": R}`.
    static func summary(missing: Int64, start: Int64, totals: SyncTotals) -> JSONValue {
        var object = JSONObject()
        object["audit"] = "ok"
        if missing > 0 { object["missing"] = .int(missing) }
        object["startDate"] = .int(start)
        object["appended"] = .int(Int64(totals.appended))
        object["duplicate"] = .int(Int64(totals.duplicate))
        object["rejected"] = .int(Int64(totals.rejected))
        return .object(object)
    }
}
