import EntitlementCore
import Entitlements

/// `entitlements refund-history` (specification section 10.5).
enum RefundHistoryCommand {
    static let help = """
        entitlements refund-history [--db PATH] --config PATH --customer ID [--environment E]

        Calls Get Refund History (v2) (GET /inApps/v2/refund/lookup/{ID}) from its first page,
        following revision while hasMore, and ingests every refunded transaction through the
        same verification as `ingest`: the customer's view then shows each refund.

        Prints one line per page, {"request": "GET /inApps/v2/refund/lookup/ID", "status": 200,
        "items": N}, then one line per refunded transaction that verified, {"refund": {"transactionId",
        "originalTransactionId", "appTransactionId", "productId", "purchaseDate",
        "revocationDate", "revocationReason", "revocationType", "revocationPercentage", "price",
        "currency"}}, then {"appended": A, "duplicate": D, "rejected": R}. Paging that would
        never end (a revision that does not advance, more than appStoreServerAPI.maxPages
        pages) is PAGINATION_LOOP; an API error prints it as `sync` does.

        OPTIONS
          --db PATH         database (default entitlements.sqlite; created if missing)
          --config PATH     configuration file with an appStoreServerAPI section (required)
          --customer ID     any transaction id of the customer, or its appTransactionId
          --environment E   Production or Sandbox, one of the configuration's (default: its first)

        EXIT CODES
          0 done; 1 an API error or a rejected item (what came before is kept); 2 usage,
          configuration or key error; 3 the database could not be used
        """

    static let refundFields = [
        "transactionId", "originalTransactionId", "appTransactionId", "productId", "purchaseDate", "revocationDate",
        "revocationReason", "revocationType", "revocationPercentage", "price", "currency",
    ]

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let command = "refund-history"
        let arguments = try Arguments(args, command: command, valued: ["--db", "--config", "--customer", "--environment"], switches: [])
        if let extra = arguments.positional.first { throw UsageError(message: "unexpected argument \"\(extra)\"", command: command) }
        let customer = try APICommands.identifier(arguments, "--customer", command: command)
        guard let opened = try SyncCommand.openSync(arguments, command: command) else { return .usage }
        guard let sync = opened.0 else { return opened.1 }
        let finisher = FinishTransactionCommand.startFinisher(sync.engine, command: command)
        defer { finisher?.stop() }
        let (outcome, refunds) = sync.refundHistory(customer) { page in SyncCommand.printPage(page, sync) }
        Output.lines(
            refunds.map { payload in
                .object(JSONObject(refundFields.map { field in (field, payload[field] ?? .null) }))
            }.map { ["refund": $0] })
        try? sync.engine.checkpoint()
        return SyncCommand.finish(outcome, command: command)
    }
}
