import EntitlementCore
import Entitlements
import Foundation

/// `entitlements recover`: after a database was restored from the replica (specification section 15).
enum RecoverCommand {
    static let help = """
        entitlements recover [--db PATH] --config PATH [--environment E]

        For a database restored from its replica (`litestream restore`): audits it, then
        fetches Apple's notification history from the last event's receipt time minus one
        hour to now (appStoreServerAPI in the configuration) and ingests it, so that what
        was not acknowledged before the loss comes back from Apple (which keeps 180 days;
        what is already there is a `duplicate`). An empty log is caught up from 180 days ago.

        Prints one line {"audit": "ok", "startDate": MS, "appended": A, "duplicate": D,
        "rejected": R}. An audit that fails prints {"audit": "failed", ...} with the first
        mismatch and fetches nothing; a failed fetch prints the error line as `sync` does.

        OPTIONS
          --db PATH       the restored database (default entitlements.sqlite; must exist)
          --config PATH   configuration file with an appStoreServerAPI section (required)
          --environment E Production or Sandbox, one of the configuration's environments (default: its first)

        EXIT CODES
          0 audited and caught up; 1 the audit or the fetch failed, or an item was rejected;
          2 usage or configuration error; 3 the database could not be used
        """

    /// How far before the last receipt the catch-up starts.
    static let overlap: Int64 = 3_600_000
    /// How far back Apple keeps notification history.
    static let appleKeeps: Int64 = 180 * 86_400_000

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let command = "recover"
        let arguments = try Arguments(args, command: command, valued: ["--db", "--config", "--environment"], switches: [])
        if let extra = arguments.positional.first { throw UsageError(message: "unexpected argument \"\(extra)\"", command: command) }
        // The restored database must be there: recover never creates one.
        let database = arguments.values["--db"] ?? Commands.defaultDatabase
        guard FileManager.default.fileExists(atPath: database) else {
            Output.error("entitlements \(command): DATABASE_NOT_FOUND: no database at \(database): restore it first (litestream restore)")
            return .storage
        }
        guard let opened = try SyncCommand.openSync(arguments, command: command) else { return .usage }
        guard let sync = opened.0 else { return opened.1 }
        let engine = sync.engine
        let start: Int64
        do {
            let report = try engine.audit()
            guard report.firstMismatch == nil && report.triggersPresent else {
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
        } catch {
            return Commands.storageFailure(command, error)
        }
        let outcome = sync.notifications(start: start, onlyFailures: false) { _ in }
        try? engine.checkpoint()
        if let failure = outcome.failure {
            Output.line(failure.json())
            Output.error("entitlements \(command): the catch-up from Apple failed: \(JSONWriter.string(failure.json()))")
            if case .engine = failure { return .storage }
            return .rejected
        }
        var object = JSONObject()
        object["audit"] = "ok"
        object["startDate"] = .int(start)
        object["appended"] = .int(Int64(outcome.totals.appended))
        object["duplicate"] = .int(Int64(outcome.totals.duplicate))
        object["rejected"] = .int(Int64(outcome.totals.rejected))
        Output.line(.object(object))
        return outcome.totals.rejected == 0 ? .success : .rejected
    }
}
