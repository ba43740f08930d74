import EntitlementCore
import Entitlements

/// `entitlements grant`: an entitlement given by an operator for a while (specification section 13).
enum GrantCommand {
    static let help = """
        entitlements grant [--db PATH] --config PATH --id ID (--app-transaction-id ID | --original-transaction-id ID | --transaction-id ID | --app-account-token UUID | --app-user-id U) --entitlement E (--until TIME | --days N) [--from TIME] [--force] [--operator NAME] [--reason TEXT]

        Gives entitlement E to a customer or an app user (the team's own account id) from
        --from (default now) until --until, or for --days N days (event kind "grant"). In
        query answers the entitlement then says "source": "grant" and "grantId": "ID"; when a
        purchase grants it too, the later expiresDate decides (the purchase on a tie).
        Lifecycle: GRANT_STARTED at its start, GRANT_ENDED when --until passes.

        Refused, nothing recorded (exit 1): INVALID_GRANT (--until not after --from),
        UNKNOWN_ENTITLEMENT (no product in rules.products gives E: a typo? --force grants it
        anyway), INVALID_APP_USER_ID (empty, or over 256 bytes), INVALID_ID (--id over 256 bytes),
        NOT_FOUND (unknown customer), GRANT_CONFLICT (the id was used for another grant).

        OPTIONS
          --entitlement E   the entitlement, as rules.products names it
          --until TIME      when it ends: milliseconds since 1970 or ISO 8601 UTC
          --days N          or: how many days it lasts from its start
          --from TIME       when it starts (default now)
          --force           grant an entitlement no product gives
        \(OperatorOptions.commonHelp)
        """

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let command = "grant"
        let arguments = try Arguments(
            args, command: command,
            valued: Set(["--db", "--config", "--id", "--app-user-id", "--entitlement", "--until", "--days", "--from"]
                + OperatorOptions.selectors + OperatorOptions.context),
            switches: ["--force"])
        try OperatorOptions.noPositional(arguments, command: command)
        let id = try OperatorOptions.id(arguments, command: command)
        let target = try OperatorOptions.target(arguments, command: command)
        guard let entitlement = arguments.values["--entitlement"] else {
            throw UsageError(message: "--entitlement E is required", command: command)
        }
        let from = try arguments.time("--from", command: command)
        let length: GrantRequest.Length
        switch (try arguments.time("--until", command: command), arguments.values["--days"]) {
        case (let until?, nil): length = .until(until)
        case (nil, let text?):
            let days = try Arguments.wholeNumber(
                text, flag: "--days", expects: "expects a whole number of days (got \"\(text)\")", bounds: 1...36_500, command: command)
            length = .days(days)
        case (_?, _?): throw UsageError(message: "give --until TIME or --days N, not both", command: command)
        case (nil, nil): throw UsageError(message: "give --until TIME or --days N: how long the grant lasts", command: command)
        }
        let force = arguments.flags.contains("--force")

        let (loaded, code) = try Commands.loadEngine(arguments, command: command, mode: .existing)
        guard let engine = loaded else { return code }
        do {
            let answer = try engine.grant(
                GrantRequest(
                    id: id, target: target, entitlement: entitlement, from: from, length: length, force: force,
                    context: OperatorOptions.context(arguments)))
            // Only for what was granted, and against the rules the grant was checked under.
            if force, case .recorded(.appended, _) = answer,
                let warning = OperatorCheck.unknownEntitlementWarning(entitlement, rules: try engine.activeRules())
            {
                Output.error(warning)
            }
            return OperatorOptions.finish(answer, engine: engine)
        } catch {
            return Commands.storageFailure(command, error)
        }
    }
}
