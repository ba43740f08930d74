import EntitlementCore
import Entitlements

/// `entitlements link`: a customer linked to an app user (specification section 13).
enum LinkCommand {
    static let help = """
        entitlements link [--db PATH] --config PATH --id ID --app-user-id U (--app-transaction-id ID | --original-transaction-id ID | --transaction-id ID | --app-account-token UUID) [--operator NAME] [--reason TEXT]

        Links the customer to app user U, the team's own account id (event kind "link"):
        `query --app-user-id U` then answers for it. A customer linked to another app user
        before moves to U when appUsers.transfer is "transfer" (the default; lifecycle
        TRANSFER with "from" and "to"), and stays where it is when it is "keep" (LINK_CONFLICT).
        With "appUsers": {"fromAppAccountToken": true}, signed data's appAccountToken links
        its customer to the app user of the same lowercase UUID without a command.

        Refused, nothing recorded (exit 1): INVALID_APP_USER_ID (empty, or over 256 bytes),
        INVALID_ID (--id over 256 bytes), NOT_FOUND (unknown customer), LINK_CONFLICT,
        ID_CONFLICT (the id was used for other content).

        OPTIONS
          --app-user-id U   the team's account id (1 to 256 bytes)
        \(OperatorOptions.commonHelp)
        """

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let command = "link"
        let arguments = try Arguments(
            args, command: command,
            valued: Set(["--db", "--config", "--id", "--app-user-id"] + OperatorOptions.selectors + OperatorOptions.context), switches: [])
        try OperatorOptions.noPositional(arguments, command: command)
        let id = try OperatorOptions.id(arguments, command: command)
        guard let appUserId = arguments.values["--app-user-id"] else { throw UsageError(message: "--app-user-id U is required", command: command) }
        guard let customer = try OperatorOptions.customer(arguments, command: command) else {
            throw UsageError(message: "name the customer: one of " + OperatorOptions.selectors.joined(separator: ", "), command: command)
        }
        let (loaded, code) = try Commands.loadEngine(arguments, command: command, mode: .existing)
        guard let engine = loaded else { return code }
        do {
            let answer = try engine.link(id: id, appUserId: appUserId, customer: customer, context: OperatorOptions.context(arguments))
            return OperatorOptions.finish(answer, engine: engine)
        } catch {
            return Commands.storageFailure(command, error)
        }
    }
}
