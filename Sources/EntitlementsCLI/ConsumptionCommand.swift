import EntitlementCore
import Entitlements
import Foundation

/// `entitlements consumption`: answering Apple's CONSUMPTION_REQUEST (Send Consumption
/// Information V2, specification section 11).
enum ConsumptionCommand {
    static let help = """
        entitlements consumption [--db PATH] --config PATH (--transaction-id T [--customer-consented] [--sample-content-provided] [--delivery-status S] [--refund-preference DECLINE|GRANT_FULL|GRANT_PRORATED] [--send] | --pending)

        --transaction-id T prints the ConsumptionRequest V2 body for the purchase T, from
        what the engine knows:
          {"customerConsented":false,"consumptionPercentage":25000,"deliveryStatus":"DELIVERED","sampleContentProvided":false}
        consumptionPercentage (thousandths of a percent): for a consumable, the units spent
        from it (first in, first out) over its units; for a pass, the elapsed share of its
        window when Apple asked (the request's signedDate), rounded down; for another
        product, the latest share recorded with `usage --consumed`, else 0; left out for
        an auto-renewable subscription (Apple computes it).
        A request whose 12-hour window has closed is reported on standard error (Apple no
        longer accepts an answer); --send then refuses to send it (DEADLINE_PASSED, exit 1).
        With --send the body is PUT to /inApps/v2/transactions/consumption/T through the
        App Store Server API (configuration section appStoreServerAPI), and the answer is
        recorded and printed: {"request":"PUT ...","status":202,"accepted":true}.

        --pending lists, as NDJSON, the CONSUMPTION_REQUEST notifications not yet answered
        whose 12-hour window is open, oldest first:
          {"transactionId":"...","appTransactionId":"...","reason":"UNINTENDED_PURCHASE","requestedAt":MS,"deadline":MS}

        OPTIONS
          --db PATH                    database (default entitlements.sqlite; must exist)
          --config PATH                configuration file (required)
          --customer-consented         the customer consented to share consumption data (default false)
          --sample-content-provided    a free sample or trial was offered (default false)
          --delivery-status S          DELIVERED (default: the engine granted it), UNDELIVERED_QUALITY_ISSUE,
                                       UNDELIVERED_WRONG_ITEM, UNDELIVERED_SERVER_OUTAGE, UNDELIVERED_OTHER
          --refund-preference P        DECLINE, GRANT_FULL or GRANT_PRORATED (left out when not given)

        EXIT CODES
          0 printed (or sent and accepted); 1 NOT_FOUND, DEADLINE_PASSED, or Apple refused it;
          2 usage or configuration error; 3 the database could not be used
        """

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(
            args, command: "consumption", valued: ["--db", "--config", "--transaction-id", "--delivery-status", "--refund-preference"],
            switches: ["--customer-consented", "--sample-content-provided", "--pending", "--send"])
        if let extra = arguments.positional.first { throw UsageError(message: "unexpected argument \(extra)", command: "consumption") }
        let values = arguments.values
        let pending = arguments.flags.contains("--pending")
        guard pending != (values["--transaction-id"] != nil) else {
            throw UsageError(message: "give exactly one of --transaction-id T, --pending", command: "consumption")
        }
        if pending {
            let answerFlags = ["--customer-consented", "--sample-content-provided", "--send"].filter { arguments.flags.contains($0) }
                + ["--delivery-status", "--refund-preference"].filter { values[$0] != nil }
            if let flag = answerFlags.first { throw UsageError(message: "\(flag) goes with --transaction-id, not --pending", command: "consumption") }
        }
        var options = ConsumptionOptions(
            customerConsented: arguments.flags.contains("--customer-consented"),
            sampleContentProvided: arguments.flags.contains("--sample-content-provided"))
        if let status = values["--delivery-status"] {
            guard ConsumptionOptions.deliveryStatuses.contains(status) else {
                throw UsageError(
                    message: "--delivery-status expects one of \(ConsumptionOptions.deliveryStatuses.joined(separator: ", ")) (got \"\(status)\")",
                    command: "consumption")
            }
            options.deliveryStatus = status
        }
        if let preference = values["--refund-preference"] {
            guard ConsumptionOptions.refundPreferences.contains(preference) else {
                throw UsageError(
                    message: "--refund-preference expects one of \(ConsumptionOptions.refundPreferences.joined(separator: ", ")) (got \"\(preference)\")",
                    command: "consumption")
            }
            options.refundPreference = preference
        }

        // Reading only, unless --send records Apple's answer; never creates the database.
        let (loaded, code) = try Commands.loadEngine(
            arguments, command: "consumption", mode: arguments.flags.contains("--send") ? .existing : .readOnly)
        guard let engine = loaded else { return code }
        do {
            if pending {
                Output.lines(try engine.pendingConsumptionRequests().map { $0.json() })
                return .success
            }
            let transactionId = values["--transaction-id"]!
            guard let info = try engine.consumptionInfo(for: transactionId) else {
                Output.line(["error": ["code": "NOT_FOUND", "message": .string("no customer holds transaction \(transactionId)")]])
                return .rejected
            }
            let expired = info.pastDeadline && !info.answered
            if expired, let request = info.request {
                Output.error(
                    "entitlements consumption: the CONSUMPTION_REQUEST for \(transactionId) of \(TimeArgument.iso8601(request.requestedAt)) passed its deadline \(TimeArgument.iso8601(request.deadline)): Apple no longer accepts an answer to it")
            }
            guard arguments.flags.contains("--send") else {
                Output.line(info.body(options))
                return .success
            }
            if expired {
                Output.line([
                    "error": [
                        "code": "DEADLINE_PASSED",
                        "message": .string("the consumption request for \(transactionId) passed its deadline \(info.deadline.map(TimeArgument.iso8601) ?? ""); nothing was sent"),
                    ]
                ])
                return .rejected
            }
            guard engine.configuration.appStoreServerAPI != nil else {
                _ = SignCommand.signer(engine.configuration, command: "consumption")  // prints what is missing
                return .usage
            }
            // An answer about Sandbox data goes to Sandbox; one about Production data is asked
            // again of Sandbox on Production's 4040010 when Sandbox is configured too, as
            // every request about a transaction is.
            let client: AppStoreServerAPIClient
            do {
                client = try AppStoreSync.client(
                    for: engine.configuration, environment: info.environments == .sandbox ? .sandbox : .production, transport: nil)
            } catch {
                Output.error("entitlements consumption: \(error.code): \(error.message)")
                return .usage
            }
            let result = try engine.sendConsumptionInformation(info, options: options, client: client)
            Output.line(result.json())
            try? engine.checkpoint()
            return result.error == nil ? .success : .rejected
        } catch {
            return Commands.storageFailure("consumption", error)
        }
    }
}
