import EntitlementCore
import Entitlements

/// What the operator commands (`grant`, `revoke-grant`, `credit`, `link`) share: the
/// customer selector, `--operator` and `--reason`, and how an answer is printed.
enum OperatorOptions {
    /// The customer selector flags.
    static let selectors = ["--app-transaction-id", "--original-transaction-id", "--transaction-id", "--app-account-token"]
    /// `--operator` and `--reason`, taken by every operator command.
    static let context = ["--operator", "--reason"]

    /// The one customer selector given, as a query; `nil` when none is.
    static func customer(_ arguments: Arguments, command: String) throws(UsageError) -> CustomerQuery? {
        let given = selectors.filter { arguments.values[$0] != nil }
        guard given.count <= 1 else {
            throw UsageError(message: "give one customer selector, not \(given.joined(separator: " and "))", command: command)
        }
        guard let flag = given.first, let value = arguments.values[flag] else { return nil }
        switch flag {
        case "--app-transaction-id": return .appTransactionId(value)
        case "--original-transaction-id": return .originalTransactionId(value)
        case "--transaction-id": return .transactionId(value)
        default: return .appAccountToken(value)
        }
    }

    /// A customer selector or `--app-user-id U`, exactly one.
    static func target(_ arguments: Arguments, command: String) throws(UsageError) -> OperatorTarget {
        let customer = try customer(arguments, command: command)
        switch (customer, arguments.values["--app-user-id"]) {
        case (let query?, nil): return .customer(query)
        case (nil, let user?): return .appUser(user)
        case (_?, _?): throw UsageError(message: "give a customer selector or --app-user-id U, not both", command: command)
        case (nil, nil):
            throw UsageError(
                message: "name whom it is for: --app-user-id U, or one of " + selectors.joined(separator: ", "), command: command)
        }
    }

    /// `--id ID`, required and not empty.
    static func id(_ arguments: Arguments, command: String) throws(UsageError) -> String {
        guard let id = arguments.values["--id"], !id.isEmpty else { throw UsageError(message: "--id ID is required", command: command) }
        return id
    }

    /// `--operator NAME` and `--reason TEXT`.
    static func context(_ arguments: Arguments) -> OperatorContext {
        OperatorContext(operatorName: arguments.values["--operator"], reason: arguments.values["--reason"])
    }

    /// Refuses positional arguments.
    static func noPositional(_ arguments: Arguments, command: String) throws(UsageError) {
        if let extra = arguments.positional.first { throw UsageError(message: "unexpected argument \(extra)", command: command) }
    }

    /// Prints the answer's line; exit 0 when recorded (appended or duplicate), 1 when refused.
    static func finish(_ answer: OperatorAnswer, engine: Engine) -> ExitCode {
        Output.line(answer.json())
        try? engine.checkpoint()
        if case .refused = answer { return .rejected }
        return .success
    }

    /// The text the help of every operator command ends with. An operator acts on a
    /// database that is there: a missing file is a typo (`DATABASE_NOT_FOUND`, nothing
    /// created; only `ingest`, `usage`, `serve` and `sync` create one).
    static let commonHelp = """
          --db PATH         an existing database (default entitlements.sqlite; DATABASE_NOT_FOUND,
                            exit 3, when missing)
          --config PATH     configuration file (required)
          --id ID           the action's id, chosen by the caller: the same again is harmless
          --operator NAME   who does it (recorded with the event)
          --reason TEXT     why (recorded with the event)

        Prints one line: {"result":"appended","id":"ID"} (or "duplicate" for the same action
        again), else {"error":{"code":...,"message":...}} and exit 1 with nothing recorded.
        The event is logged beside Apple's data, hash-chained and audited, and marked as the
        operator's word ("source": "operator"), never taken for what Apple signed.
        """
}
