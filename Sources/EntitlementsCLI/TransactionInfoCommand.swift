import EntitlementCore
import Entitlements

/// `entitlements transaction-info` (specification section 10.5).
enum TransactionInfoCommand {
    static let help = """
        entitlements transaction-info [--db PATH] --config PATH --transaction-id T [--environment E]

        Calls Get Transaction Info (GET /inApps/v1/transactions/{T}) and ingests the signed
        transaction it returns through the same verification as `ingest` (a Production 4040010
        is asked again of Sandbox when the configuration accepts both).

        Prints {"request": "GET /inApps/v1/transactions/T", "status": 200, "items": 1}, then
        {"transaction": {...}} (the signed payload, decoded; not for a transaction that fails
        verification, which is quarantined and counted rejected), then
        {"appended": A, "duplicate": D, "rejected": R}. An error prints {"request", "status",
        "errorCode", "errorMessage", "error": {"code", "message"}} with Apple's errorCode, then the totals.

        OPTIONS
          --db PATH            database (default entitlements.sqlite; created if missing)
          --config PATH        configuration file with an appStoreServerAPI section (required)
          --transaction-id T   any transaction id
          --environment E      Production or Sandbox, one of the configuration's (default: its first)

        EXIT CODES
          0 ingested; 1 an API error or a rejected transaction; 2 usage, configuration or key
          error; 3 the database could not be used
        """

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let command = "transaction-info"
        let arguments = try Arguments(args, command: command, valued: ["--db", "--config", "--transaction-id", "--environment"], switches: [])
        if let extra = arguments.positional.first { throw UsageError(message: "unexpected argument \"\(extra)\"", command: command) }
        let transactionId = try APICommands.identifier(arguments, "--transaction-id", command: command)
        guard let opened = try SyncCommand.openSync(arguments, command: command) else { return .usage }
        guard let sync = opened.0 else { return opened.1 }
        let finisher = FinishTransactionCommand.startFinisher(sync.engine, command: command)
        defer { finisher?.stop() }
        let (outcome, transaction) = sync.transactionInfo(transactionId) { page in SyncCommand.printPage(page, sync) }
        if let transaction { Output.line(["transaction": transaction]) }
        try? sync.engine.checkpoint()
        return SyncCommand.finish(outcome, command: command)
    }
}
