import EntitlementCore
import Entitlements

/// `entitlements revoke-grant`: an operator's grant ended early (specification section 13).
enum RevokeGrantCommand {
    static let help = """
        entitlements revoke-grant [--db PATH] --config PATH --id ID [--at TIME] [--operator NAME] [--reason TEXT]

        Ends the grant ID at --at (default now): event kind "grant_revoked". The entitlement
        is no longer given from then on (earlier moments still see the grant); lifecycle
        GRANT_REVOKED, and the changes feed records the access it takes.

        Refused, nothing recorded (exit 1): NOT_FOUND (no grant with this id), INVALID_ID
        (--id over 256 bytes), ID_CONFLICT (the grant was revoked before at another moment).

        OPTIONS
          --at TIME         when it ends: milliseconds since 1970 or ISO 8601 UTC (default now)
        \(OperatorOptions.commonHelp)
        """

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let command = "revoke-grant"
        let arguments = try Arguments(
            args, command: command, valued: Set(["--db", "--config", "--id", "--at"] + OperatorOptions.context), switches: [])
        try OperatorOptions.noPositional(arguments, command: command)
        let id = try OperatorOptions.id(arguments, command: command)
        let at = try arguments.time("--at", command: command)
        let (loaded, code) = try Commands.loadEngine(arguments, command: command, mode: .existing)
        guard let engine = loaded else { return code }
        do {
            return OperatorOptions.finish(try engine.revokeGrant(id: id, at: at, context: OperatorOptions.context(arguments)), engine: engine)
        } catch {
            return Commands.storageFailure(command, error)
        }
    }
}
