import EntitlementCore
import Entitlements
import Foundation

/// `entitlements sync` and `entitlements set-account-token` (specification section 10).
enum SyncCommand {
    static let help = """
        entitlements sync [--db PATH] --config PATH (--notifications [--start MS] [--only-failures] | --customer ID) [--environment E]

        Fetches from the App Store Server API (appStoreServerAPI in the configuration; Apple's
        production or sandbox host by environment, or baseURL) and ingests what it returns
        through the same verification as `ingest`. Each page is committed before the next is
        requested: a failure keeps everything fetched before it.

          --notifications   Get Notification History from --start (default: the end of the
                            last successful sync in the environment, with or without
                            --only-failures; else 180 days ago) to now, following
                            paginationToken; with --only-failures,
                            only the notifications Apple failed to deliver. On success with
                            nothing rejected the end is stored as the next start.
          --customer ID     any transaction id of the customer, or its appTransactionId: Get
                            Transaction History (v2) from the revision stored for the customer,
                            then Get All Subscription Statuses and Get App Transaction Info.

        Prints one line per page, {"request": "GET /inApps/...", "status": 200, "items": N},
        then {"appended": A, "duplicate": D, "rejected": R}. A 429 is retried after Retry-After
        (at most 3 times); any other error prints {"request", "status", "errorCode",
        "errorMessage", "error": {"code", "message"}} with Apple's errorCode, then the totals.
        Paging that would never end (a paginationToken given twice, a revision that does not
        advance, more than appStoreServerAPI.maxPages pages, default 10000) is PAGINATION_LOOP.

        OPTIONS
          --db PATH       database (default entitlements.sqlite; created if missing)
          --config PATH   configuration file with an appStoreServerAPI section (required)
          --start MS      start of the notification window: milliseconds or ISO 8601 UTC
          --environment E Production or Sandbox, one of the configuration's environments (default:
                          its first): which of Apple's hosts, and whose resume points

        EXIT CODES
          0 done; 1 an API error or a rejected item (everything before it is kept); 2 usage,
          configuration or key error; 3 the database could not be used
        """

    static let setAccountTokenHelp = """
        entitlements set-account-token [--db PATH] --config PATH --original-transaction-id ID --app-account-token UUID [--environment E]

        Calls Set App Account Token (PUT /inApps/v1/transactions/{ID}/appAccountToken): ties a
        purchase made outside the app (an offer code) or an account that changed hands to the
        user UUID. Then run `entitlements sync --customer ID` to ingest the re-signed data.

        Prints {"request": "PUT ...", "status": 200, "items": 0} and
        {"appended": 0, "duplicate": 0, "rejected": 0}; an error as `sync` prints it, exit 1.

        OPTIONS
          --db PATH                       accepted for symmetry with sync (no database is opened)
          --config PATH                   configuration file with an appStoreServerAPI section (required)
          --original-transaction-id ID    the purchase's originalTransactionId
          --app-account-token UUID        the user's UUID
          --environment E                 Production or Sandbox, one of the configuration's (default: its first)
        """

    static func sync(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(
            args, command: "sync", valued: ["--db", "--config", "--start", "--customer", "--environment"], switches: ["--notifications", "--only-failures"])
        if let extra = arguments.positional.first { throw UsageError(message: "unexpected argument \"\(extra)\"", command: "sync") }
        let notifications = arguments.flags.contains("--notifications")
        let customer = arguments.values["--customer"]
        guard notifications != (customer != nil) else {
            throw UsageError(message: "give exactly one of --notifications or --customer ID", command: "sync")
        }
        if customer != nil && (arguments.values["--start"] != nil || arguments.flags.contains("--only-failures")) {
            throw UsageError(message: "--start and --only-failures go with --notifications", command: "sync")
        }
        if let customer, customer.isEmpty || customer.contains("/") {
            throw UsageError(message: "--customer expects a transaction id or an appTransactionId, got \"\(customer)\"", command: "sync")
        }
        var start: Int64? = nil
        if let text = arguments.values["--start"] {
            do { start = try TimeArgument.parse(text) } catch { throw UsageError(message: "--start \(error.message)", command: "sync") }
        }
        guard let appStore = try openSync(arguments, command: "sync") else { return .usage }
        let (sync, failureCode) = appStore
        guard let sync else { return failureCode }
        let finisher = FinishTransactionCommand.startFinisher(sync.engine, command: "sync")
        defer { finisher?.stop() }
        let outcome =
            if let customer {
                sync.customer(customer) { page in printPage(page, sync) }
            } else {
                sync.notifications(start: start, onlyFailures: arguments.flags.contains("--only-failures")) { page in printPage(page, sync) }
            }
        try? sync.engine.checkpoint()
        return finish(outcome, command: "sync")
    }

    static func setAccountToken(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let command = "set-account-token"
        let arguments = try Arguments(
            args, command: command, valued: ["--db", "--config", "--original-transaction-id", "--app-account-token", "--environment"], switches: [])
        if let extra = arguments.positional.first { throw UsageError(message: "unexpected argument \"\(extra)\"", command: command) }
        guard let original = arguments.values["--original-transaction-id"] else {
            throw UsageError(message: "--original-transaction-id ID is required", command: command)
        }
        guard !original.isEmpty, !original.contains("/") else {
            throw UsageError(message: "--original-transaction-id expects an original transaction id, got \"\(original)\"", command: command)
        }
        guard let tokenText = arguments.values["--app-account-token"] else {
            throw UsageError(message: "--app-account-token UUID is required", command: command)
        }
        guard let token = UUID(uuidString: tokenText) else {
            throw UsageError(message: "--app-account-token expects a UUID, got \"\(tokenText)\"", command: command)
        }
        // Nothing is read from or written to a database: the answer is Apple's.
        guard let configuration = try SignCommand.loadConfiguration(arguments, command: command) else { return .usage }
        guard configuration.appStoreServerAPI != nil else {
            _ = SignCommand.signer(configuration, command: command)  // prints what is missing
            return .usage
        }
        let environment = try chosenEnvironment(arguments, configuration, command: command)
        let client: AppStoreServerAPIClient
        do {
            client = try AppStoreSync.client(for: configuration, environment: environment, transport: nil)
        } catch {
            Output.error("entitlements \(command): \(error.code): \(error.message)")
            return .usage
        }
        let request = APIRequest.setAppAccountToken(originalTransactionId: original, appAccountToken: token.uuidString.lowercased())
        var outcome = SyncOutcome(totals: SyncTotals(), failure: nil)
        do {
            let response = try client.send(request)
            Output.line(SyncPage(request: request.description, status: response.status, items: 0, results: []).json())
        } catch {
            outcome.failure = .api(error)
        }
        return finish(outcome, command: command)
    }

    /// `--environment`, which must be one of the configuration's; `nil` when not given.
    static func chosenEnvironment(_ arguments: Arguments, _ configuration: EngineConfiguration, command: String) throws(UsageError)
        -> AppStoreEnvironment?
    {
        guard let name = arguments.values["--environment"] else { return nil }
        guard let chosen = AppStoreEnvironment(rawValue: name), configuration.environments.contains(chosen) else {
            let accepted = configuration.environments.map(\.rawValue).joined(separator: ", ")
            throw UsageError(message: "--environment \(name) is not one of the configuration's environments (\(accepted))", command: command)
        }
        return chosen
    }

    /// A page's line, then the warnings for products the rules do not name.
    static func printPage(_ page: SyncPage, _ sync: AppStoreSync) {
        Output.line(page.json())
        for warning in sync.engine.takeProductWarnings() { Output.error(warning) }
    }

    /// The engine and the API client, or `nil` and the exit code after printing why not
    /// (`configuration`: the command's configuration when it has read it already).
    static func openSync(
        _ arguments: Arguments, command: String, configuration loaded: EngineConfiguration? = nil
    ) throws(UsageError) -> (AppStoreSync?, ExitCode)? {
        let read = try loaded == nil ? SignCommand.loadConfiguration(arguments, command: command) : loaded
        guard let configuration = read else { return nil }
        guard configuration.appStoreServerAPI != nil else {
            _ = SignCommand.signer(configuration, command: command)  // prints what is missing
            return nil
        }
        let environment = try chosenEnvironment(arguments, configuration, command: command)
        let (loaded, code) = try Commands.loadEngine(arguments, command: command)
        guard let engine = loaded else { return (nil, code) }
        do {
            return (try AppStoreSync(engine: engine, environment: environment), .success)
        } catch {
            Output.error("entitlements \(command): \(error.code): \(error.message)")
            return nil
        }
    }

    /// Prints the error (if any) and the totals; the exit code.
    static func finish(_ outcome: SyncOutcome, command: String) -> ExitCode {
        if let failure = outcome.failure {
            Output.line(failure.json())
            if case .api(let error) = failure {
                Output.error("entitlements \(command): \(error.code.rawValue): \(error.request): \(error.message)")
            } else if case .engine(let error) = failure {
                Output.error("entitlements \(command): \(error.code): \(error.message)")
            }
        }
        Output.line(outcome.totals.json())
        if case .engine? = outcome.failure { return .storage }
        return outcome.failure == nil && outcome.totals.rejected == 0 ? .success : .rejected
    }
}
