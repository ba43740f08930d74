import EntitlementCore
import Entitlements

/// `entitlements test-notification` (specification section 10.5): the webhook path checked end to end.
enum TestNotificationCommand {
    static let help = """
        entitlements test-notification [--db PATH] --config PATH [--wait SECONDS] [--environment E]

        Calls Request a Test Notification (POST /inApps/v1/notifications/test), then waits (up to
        60 s) until Apple's TEST notification has reached this engine's log through its own
        webhook: `entitlements serve` on the same database, behind the URL set in App Store
        Connect. Meanwhile it asks Get Test Notification Status
        (GET /inApps/v1/notifications/test/{token}) for Apple's send attempts. The copy of the
        notification in that answer is never ingested: only the webhook path counts.

        Prints {"testNotificationToken", "notificationUUID", "arrived": true, "receivedAt",
        "waitedMilliseconds", "sendAttempts": [{"attemptDate", "sendAttemptResult"}]}; when it
        did not arrive, "arrived": false and the attempts Apple reports (e.g. NO_RESPONSE,
        TLS_ISSUE, UNSUCCESSFUL_HTTP_RESPONSE_CODE) say where the path breaks.

        OPTIONS
          --db PATH         the database `serve` writes (default entitlements.sqlite; must exist)
          --config PATH     configuration file with an appStoreServerAPI section (required)
          --wait SECONDS    how long to wait for the notification: 1 to 600 (default 60)
          --environment E   Production or Sandbox, one of the configuration's (default: its first):
                            Apple sends the test to that environment's notification URL

        EXIT CODES
          0 it arrived; 1 it did not arrive in time, or an API error; 2 usage, configuration or key
          error; 3 the database could not be read
        """

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let command = "test-notification"
        let arguments = try Arguments(args, command: command, valued: ["--db", "--config", "--wait", "--environment"], switches: [])
        if let extra = arguments.positional.first { throw UsageError(message: "unexpected argument \"\(extra)\"", command: command) }
        var wait = 60.0
        if let text = arguments.values["--wait"] {
            guard let value = Int(text), (1...600).contains(value) else {
                throw UsageError(message: "--wait expects 1 to 600 seconds, got \"\(text)\"", command: command)
            }
            wait = Double(value)
        }
        guard let configuration = try SignCommand.loadConfiguration(arguments, command: command) else { return .usage }
        guard configuration.appStoreServerAPI != nil else {
            _ = SignCommand.signer(configuration, command: command)  // prints what is missing
            return .usage
        }
        let environment = try SyncCommand.chosenEnvironment(arguments, configuration, command: command)
        // Only reads: `serve` writes the log this command watches.
        let (loaded, code) = try Commands.loadEngine(arguments, command: command, mode: .readOnly)
        guard let engine = loaded else { return code }
        let sync: AppStoreSync
        do { sync = try AppStoreSync(engine: engine, environment: environment) } catch {
            Output.error("entitlements \(command): \(error.code): \(error.message)")
            return .usage
        }
        let report = sync.testNotification(timeout: wait)
        if let failure = report.failure {
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
        Output.line(report.json())
        guard report.arrived else {
            let attempts = report.sendAttempts.compactMap { attempt -> String? in
                guard case .string(let result)? = attempt["sendAttemptResult"] else { return nil }
                return result
            }
            Output.error(
                "entitlements \(command): TEST_NOTIFICATION_NOT_RECEIVED: the TEST notification did not reach \(engine.databasePath) within \(Int(wait)) s"
                    + (attempts.isEmpty ? " and Apple reports no send attempt yet" : "; Apple's send attempts: \(attempts.joined(separator: ", "))")
                    + ": check the notification URL in App Store Connect points at `entitlements serve`'s POST /notifications (through its TLS proxy) on this database")
            return .rejected
        }
        return .success
    }
}
