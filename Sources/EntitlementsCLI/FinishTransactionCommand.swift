import EntitlementCore
import Entitlements
import Foundation

/// `entitlements finish-transaction` and the finisher that `ingest`, `serve` and `sync` run
/// with `appStoreServerAPI.finishTransactions` (specification section 10.5).
enum FinishTransactionCommand {
    static let help = """
        entitlements finish-transaction [--db PATH] --config PATH --transaction-id T [--environment E]

        Calls Finish Transaction (POST /inApps/v1/transactions/{T}/finish): tells the App Store
        that this server has delivered what the transaction bought. When the database exists,
        the call is recorded there, so that appStoreServerAPI.finishTransactions never calls
        again for T (no database is created).

        With "finishTransactions": true in appStoreServerAPI, `ingest`, `serve` and `sync` do it
        themselves while they run: each transaction they append for the first time that grants
        an entitlement or units under the rules is finished once, the call made with no
        database lock held and recorded in the database (a restart does not call again; a call
        that got no answer, 401, 429 or 5xx is made again later, up to 8 times; any other
        refusal is recorded as failed and reported on stderr).

        Prints {"request": "POST ...", "transactionId", "environment", "status": 200,
        "finished": true, "state": "finished"}; a refusal adds "errorCode" and "message".

        OPTIONS
          --db PATH            database the call is recorded in, when it exists (default entitlements.sqlite)
          --config PATH        configuration file with an appStoreServerAPI section (required)
          --transaction-id T   the transaction to finish
          --environment E      Production or Sandbox, one of the configuration's (default: its first)

        EXIT CODES
          0 finished; 1 Apple refused it or did not answer; 2 usage, configuration or key error;
          3 the database could not be used
        """

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let command = "finish-transaction"
        let arguments = try Arguments(args, command: command, valued: ["--db", "--config", "--transaction-id", "--environment"], switches: [])
        if let extra = arguments.positional.first { throw UsageError(message: "unexpected argument \"\(extra)\"", command: command) }
        let transactionId = try APICommands.identifier(arguments, "--transaction-id", command: command)
        guard let configuration = try SignCommand.loadConfiguration(arguments, command: command) else { return .usage }
        guard configuration.appStoreServerAPI != nil else {
            _ = SignCommand.signer(configuration, command: command)  // prints what is missing
            return .usage
        }
        let environment = try SyncCommand.chosenEnvironment(arguments, configuration, command: command) ?? configuration.environment
        let client: AppStoreServerAPIClient
        do {
            client = try AppStoreSync.client(for: configuration, environment: environment, transport: nil)
        } catch {
            Output.error("entitlements \(command): \(error.code): \(error.message)")
            return .usage
        }
        let database = arguments.values["--db"] ?? Commands.defaultDatabase
        let result: FinishResult
        if FileManager.default.fileExists(atPath: database) {
            let (loaded, code) = try Commands.loadEngine(arguments, command: command, mode: .existing)
            guard let engine = loaded else { return code }
            result = AppStoreSync(engine: engine, client: client, environment: environment).finishTransaction(transactionId)
            if !result.recorded { Output.error("entitlements \(command): warning: the answer could not be recorded in \(database)") }
        } else {
            result = finishUnrecorded(transactionId, client: client, environment: environment)
        }
        Output.line(result.json())
        if result.state != .finished {
            Output.error("entitlements \(command): \(result.request): \(result.message ?? "not finished")")
            return .rejected
        }
        return .success
    }

    /// Finish Transaction without a database to record it in.
    static func finishUnrecorded(_ transactionId: String, client: AppStoreServerAPIClient, environment: AppStoreEnvironment) -> FinishResult {
        let request = APIRequest.finishTransaction(transactionId: transactionId)
        var result = FinishResult(transactionId: transactionId, environment: environment.rawValue, request: request.description)
        do {
            result.status = try client.send(request).status
            result.state = .finished
        } catch {
            result.status = error.status
            result.errorCode = error.apiErrorCode
            result.message = error.message
        }
        return result
    }

    /// The finisher of an engine whose configuration asks for it, started; `nil` otherwise.
    /// Calls that fail are reported on stderr.
    static func startFinisher(_ engine: Engine, command: String) -> TransactionFinisher? {
        guard engine.finishesTransactions, engine.mode != .readOnly else { return nil }
        do {
            let finisher = try TransactionFinisher(engine: engine) { result in
                guard result.state != .finished else { return }
                Output.error("entitlements \(command): Finish Transaction \(result.transactionId) \(result.state.rawValue): \(result.message ?? "")")
            }
            finisher.start()
            return finisher
        } catch {
            Output.error("entitlements \(command): warning: finishTransactions is on but no finisher could start: \(error.code): \(error.message)")
            return nil
        }
    }
}
