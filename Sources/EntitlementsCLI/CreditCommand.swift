import EntitlementCore
import Entitlements

/// `entitlements credit`: units of a currency added or taken by an operator (specification section 13).
enum CreditCommand {
    static let help = """
        entitlements credit [--db PATH] --config PATH --id ID (--app-transaction-id ID | --original-transaction-id ID | --transaction-id ID | --app-account-token UUID | --app-user-id U) --currency C --units N [--operator NAME] [--reason TEXT]

        Adds N units of currency C to a balance (N > 0), or takes them (N < 0), from now on:
        event kind "credit". A balance is never taken below zero by a credit.

        Refused, nothing recorded (exit 1): INSUFFICIENT_BALANCE (the balance would fall below
        zero), INVALID_CREDIT (N = 0), INVALID_APP_USER_ID, INVALID_ID (--id over 256 bytes),
        NOT_FOUND (unknown customer), ID_CONFLICT (the id was used for other content).

        OPTIONS
          --currency C      the currency (as rules.products names it, e.g. coins)
          --units N         how many: above 0 adds, below 0 takes
        \(OperatorOptions.commonHelp)
        """

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let command = "credit"
        let arguments = try Arguments(
            args, command: command,
            valued: Set(["--db", "--config", "--id", "--app-user-id", "--currency", "--units"] + OperatorOptions.selectors + OperatorOptions.context),
            switches: [])
        try OperatorOptions.noPositional(arguments, command: command)
        let id = try OperatorOptions.id(arguments, command: command)
        let target = try OperatorOptions.target(arguments, command: command)
        guard let currency = arguments.values["--currency"] else { throw UsageError(message: "--currency C is required", command: command) }
        guard let text = arguments.values["--units"] else { throw UsageError(message: "--units N is required", command: command) }
        let units = try Arguments.wholeNumber(
            text, flag: "--units", expects: "expects a whole number, above 0 to add or below 0 to take (got \"\(text)\")", command: command)
        let (loaded, code) = try Commands.loadEngine(arguments, command: command, mode: .existing)
        guard let engine = loaded else { return code }
        do {
            let answer = try engine.credit(
                id: id, target: target, currency: currency, units: units, context: OperatorOptions.context(arguments))
            return OperatorOptions.finish(answer, engine: engine)
        } catch {
            return Commands.storageFailure(command, error)
        }
    }
}
