import EntitlementCore
import Entitlements

/// `entitlements lookup-order` (specification section 10.5): how support finds a customer.
enum LookupOrderCommand {
    static let help = """
        entitlements lookup-order [--db PATH] --config PATH --order-id O [--at TIME] [--pretty] [--environment E]

        Calls Look Up Order ID (GET /inApps/v1/lookup/{O}) with the order number from the
        customer's receipt email (e.g. MQ5Y1Z2X3W), ingests the signed transactions Apple
        returns through the same verification as `ingest`, and prints the view of the customer
        they belong to: the object `query` prints (one line per customer, should an order hold
        several). The requests and totals go to stderr.

        An order Apple does not know (status 1, invalid) prints
        {"error": {"code": "NOT_FOUND", "message": ...}}; an API error prints {"request",
        "status", "errorCode", "errorMessage", "error": {"code", "message"}} with Apple's errorCode.

        OPTIONS
          --db PATH         database (default entitlements.sqlite; created if missing)
          --config PATH     configuration file with an appStoreServerAPI section (required)
          --order-id O      the order ID from the receipt email
          --at TIME         evaluate the view at this moment (milliseconds or ISO 8601 UTC; default now)
          --pretty          indent the view
          --environment E   Production or Sandbox, one of the configuration's (default: its first)

        EXIT CODES
          0 found; 1 not found, an API error or a rejected transaction; 2 usage, configuration or
          key error; 3 the database could not be used
        """

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let command = "lookup-order"
        let arguments = try Arguments(
            args, command: command, valued: ["--db", "--config", "--order-id", "--at", "--environment"], switches: ["--pretty"])
        if let extra = arguments.positional.first { throw UsageError(message: "unexpected argument \"\(extra)\"", command: command) }
        let orderId = try APICommands.identifier(arguments, "--order-id", command: command)
        let at = try arguments.time("--at", command: command)
        guard let opened = try SyncCommand.openSync(arguments, command: command) else { return .usage }
        guard let sync = opened.0 else { return opened.1 }
        let finisher = FinishTransactionCommand.startFinisher(sync.engine, command: command)
        defer { finisher?.stop() }
        let lookup = sync.lookUpOrder(orderId, at: at) { page in
            Output.error(JSONWriter.string(page.json()))
            for warning in sync.engine.takeProductWarnings() { Output.error(warning) }
        }
        try? sync.engine.checkpoint()
        let outcome = lookup.outcome
        if let failure = outcome.failure {
            Output.line(failure.json())
            switch failure {
            case .api(let error):
                Output.error("entitlements \(command): \(error.code.rawValue): \(error.request): \(error.message)")
                return .rejected
            case .engine(let error):
                Output.error("entitlements \(command): \(error.code): \(error.message)")
                return .storage
            }
        }
        Output.error(JSONWriter.string(outcome.totals.json()))
        guard !lookup.views.isEmpty else {
            let message =
                lookup.status == 0
                ? "order \(orderId) holds no transaction this engine could ingest"
                : "Apple knows no order \(orderId) (Look Up Order ID answered status \(lookup.status.map(String.init) ?? "?"): invalid); check the order ID on the receipt email"
            Output.line(["error": ["code": "NOT_FOUND", "message": .string(message)]])
            return .rejected
        }
        for view in lookup.views {
            if arguments.flags.contains("--pretty") { print(Output.pretty(view.json())) } else { Output.line(view.json()) }
        }
        return outcome.totals.rejected == 0 ? .success : .rejected
    }
}
