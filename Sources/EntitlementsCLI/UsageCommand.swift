import EntitlementCore
import Entitlements

/// `entitlements usage`: what a customer used, in the operator's word (specification section 11).
enum UsageCommand {
    static let help = """
        entitlements usage [--db PATH] --config PATH --id ID (--app-transaction-id ID | --original-transaction-id ID | --transaction-id ID) (--currency C --units N | --transaction-id T --consumed MILLIPERCENT) [--at MS]

        Records what a customer used, as an event of kind "usage" in the same log as
        Apple's data (hash-chained, never changed, marked as the operator's word, not
        Apple's), and updates the customer's balances at once:
          --currency C --units N         N units of currency C spent (taken from the
                                         customer's purchases first in, first out);
          --transaction-id T --consumed S  share S (thousandths of a percent, 0-100000) of
                                         the purchase T consumed (a non-consumable, say);
                                         T names the customer too.
        The record is idempotent by --id: the same id and content again is a "duplicate"
        (without --at, the moment is not compared); other content is USAGE_CONFLICT.

        Prints one line:
          {"result":"appended","kind":"usage","eventId":"ID","appTransactionId":"...","at":MS,"currency":"coins","units":30,"balance":120}
          {"error":{"code":"INSUFFICIENT_BALANCE","message":"..."}}

        Refused, nothing recorded (exit 1): NOT_FOUND (unknown customer or transaction),
        UNKNOWN_CURRENCY, INSUFFICIENT_BALANCE (more than the balance at --at; nothing
        dated later is checked), USAGE_CONFLICT.
        A usage error, nothing recorded (exit 2): INVALID_USAGE (units of 0 or less, a
        share outside 0-100000, an --id over 256 bytes).

        OPTIONS
          --db PATH       database (default entitlements.sqlite; created if missing)
          --config PATH   configuration file (required)
          --id ID         the record's id, chosen by the caller: a retry with the same id is harmless
          --at MS         when it was used: milliseconds since 1970 or ISO 8601 UTC (default now)
        """

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(
            args, command: "usage",
            valued: [
                "--db", "--config", "--id", "--app-transaction-id", "--original-transaction-id", "--transaction-id", "--currency",
                "--units", "--consumed", "--at",
            ],
            switches: [])
        if let extra = arguments.positional.first { throw UsageError(message: "unexpected argument \(extra)", command: "usage") }
        let values = arguments.values
        guard let id = values["--id"], !id.isEmpty else { throw UsageError(message: "--id ID is required", command: "usage") }
        var at: Int64? = nil
        if let text = values["--at"] {
            do { at = try TimeArgument.parse(text) } catch { throw UsageError(message: "--at \(error.message)", command: "usage") }
        }

        let amount: UsageAmount
        let customer: UsageCustomer?
        let selectors = ["--app-transaction-id", "--original-transaction-id"].filter { values[$0] != nil }
        if let consumed = values["--consumed"] {
            guard values["--currency"] == nil, values["--units"] == nil else {
                throw UsageError(message: "give either --currency C --units N or --transaction-id T --consumed S, not both", command: "usage")
            }
            guard let transactionId = values["--transaction-id"] else {
                throw UsageError(message: "--consumed needs --transaction-id T (the purchase consumed)", command: "usage")
            }
            let share = try Arguments.wholeNumber(
                consumed, flag: "--consumed", expects: "expects thousandths of a percent, 0 to 100000 (got \"\(consumed)\")", bounds: 0...100_000,
                command: "usage")
            guard selectors.count <= 1 else {
                throw UsageError(message: "give at most one of --app-transaction-id, --original-transaction-id", command: "usage")
            }
            amount = .consumed(transactionId: transactionId, share: share)
            switch selectors.first {
            case "--app-transaction-id": customer = .appTransactionId(values["--app-transaction-id"]!)
            case "--original-transaction-id": customer = .originalTransactionId(values["--original-transaction-id"]!)
            default: customer = nil
            }
        } else {
            guard let currency = values["--currency"], let unitsText = values["--units"] else {
                throw UsageError(message: "give --currency C --units N (units spent) or --transaction-id T --consumed S", command: "usage")
            }
            let units = try Arguments.wholeNumber(
                unitsText, flag: "--units", expects: "expects a whole number above 0 (got \"\(unitsText)\")", command: "usage")
            let all = selectors + (values["--transaction-id"] != nil ? ["--transaction-id"] : [])
            guard all.count == 1 else {
                throw UsageError(
                    message: "give exactly one of --app-transaction-id, --original-transaction-id, --transaction-id", command: "usage")
            }
            amount = .spend(currency: currency, units: units)
            switch all[0] {
            case "--app-transaction-id": customer = .appTransactionId(values["--app-transaction-id"]!)
            case "--original-transaction-id": customer = .originalTransactionId(values["--original-transaction-id"]!)
            default: customer = .transactionId(values["--transaction-id"]!)
            }
        }

        let (loaded, code) = try Commands.loadEngine(arguments, command: "usage")
        guard let engine = loaded else { return code }
        do {
            let answer = try engine.usage(UsageRequest(id: id, customer: customer, amount: amount, at: at))
            Output.line(answer.json())
            try? engine.checkpoint()
            if case .refused(let refusal) = answer { return refusal.code == "INVALID_USAGE" ? .usage : .rejected }
            return .success
        } catch {
            return Commands.storageFailure("usage", error)
        }
    }
}
