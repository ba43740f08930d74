import EntitlementCore
import Entitlements

/// What the App Store Server API commands share.
enum APICommands {
    /// The value of `flag`, required: an id with no `/` (it goes into a path).
    static func identifier(_ arguments: Arguments, _ flag: String, command: String) throws(UsageError) -> String {
        guard let value = arguments.values[flag] else { throw UsageError(message: "\(flag) is required", command: command) }
        guard !value.isEmpty, !value.contains("/"), value.utf8.count <= 256 else {
            throw UsageError(message: "\(flag) expects an identifier (no \"/\"), got \"\(value)\"", command: command)
        }
        return value
    }

    /// The API client alone (no database), or `nil` and the exit code after printing why not.
    static func client(_ arguments: Arguments, command: String) throws(UsageError) -> (AppStoreServerAPIClient?, ExitCode) {
        guard let configuration = try SignCommand.loadConfiguration(arguments, command: command) else { return (nil, .usage) }
        guard configuration.appStoreServerAPI != nil else {
            _ = SignCommand.signer(configuration, command: command)  // prints what is missing
            return (nil, .usage)
        }
        let environment = try SyncCommand.chosenEnvironment(arguments, configuration, command: command)
        do {
            return (try AppStoreSync.client(for: configuration, environment: environment, transport: nil), .success)
        } catch {
            Output.error("entitlements \(command): \(error.code): \(error.message)")
            return (nil, .usage)
        }
    }

    /// Prints an API failure (the line on stdout, the reason on stderr); exit 1.
    static func failed(_ error: APIError, command: String) -> ExitCode {
        Output.line(error.json())
        Output.error("entitlements \(command): \(error.code.rawValue): \(error.request): \(error.message)")
        return .rejected
    }
}
