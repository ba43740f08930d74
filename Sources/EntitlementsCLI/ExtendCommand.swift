import EntitlementCore
import Entitlements
import Foundation

/// `entitlements extend` (specification section 10.5): renewal date extensions.
enum ExtendCommand {
    static let help = """
        entitlements extend --config PATH --original-transaction-id X --days N --reason 0-3 --request-id R [--environment E]
        entitlements extend --config PATH --mass --product P --days N --reason 0-3 [--storefront CC]... [--request-id R] [--environment E]
        entitlements extend --config PATH --status --product P --request-id R [--environment E]

        Extends subscription renewal dates with the App Store Server API, e.g. after an outage.
        The re-signed transactions and renewal info then arrive by notification
        (RENEWAL_EXTENDED, RENEWAL_EXTENSION) or `sync`; nothing is written here.

          --original-transaction-id X   Extend a Subscription Renewal Date
                                        (PUT /inApps/v1/subscriptions/extend/{X}) for one customer;
                                        prints {"request", "status", "originalTransactionId",
                                        "webOrderLineItemId", "success", "effectiveDate", "requestIdentifier"}
          --mass                        Extend Subscription Renewal Dates for All Active Subscribers
                                        (POST /inApps/v1/subscriptions/extend/mass) of --product,
                                        limited to the storefronts given (ISO 3166-1 alpha-3 codes such
                                        as USA; --storefront may repeat; none: every storefront);
                                        prints {"request", "status", "requestIdentifier", "productId",
                                        "generated"}: without --request-id a UUID is generated and printed
          --status                      Get Status of Subscription Renewal Date Extensions
                                        (GET /inApps/v1/subscriptions/extend/mass/{P}/{R}); prints
                                        {"request", "status", "requestIdentifier", "complete",
                                        "completeDate", "succeededCount", "failedCount"}

        OPTIONS
          --days N          extendByDays: 1 to 90 (Apple's limit)
          --reason 0-3      extendReasonCode: 0 undeclared, 1 customer satisfaction, 2 other,
                            3 service issue or outage
          --request-id R    requestIdentifier: your id for the request (at most 128 characters);
                            Apple answers a repeated id with the first request's result
          --product P       the auto-renewable subscription's productId
          --storefront CC   limit a mass extension to this storefront (repeatable)
          --config PATH     configuration file with an appStoreServerAPI section (required)
          --environment E   Production or Sandbox, one of the configuration's (default: its first)

        Days outside 1-90 and a reason outside 0-3 are usage errors, before any request.
        An API error prints {"request", "status", "errorCode", "errorMessage", "error": {"code", "message"}}.

        EXIT CODES
          0 done; 1 an API error, or Apple answered "success": false; 2 usage, configuration or key error
        """

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let command = "extend"
        let arguments = try Arguments(
            args, command: command,
            valued: ["--db", "--config", "--original-transaction-id", "--days", "--reason", "--request-id", "--product", "--storefront", "--environment"],
            switches: ["--mass", "--status"])
        if let extra = arguments.positional.first { throw UsageError(message: "unexpected argument \"\(extra)\"", command: command) }
        let single = arguments.values["--original-transaction-id"] != nil
        let mass = arguments.flags.contains("--mass"), status = arguments.flags.contains("--status")
        guard [single, mass, status].filter({ $0 }).count == 1 else {
            throw UsageError(message: "give exactly one of --original-transaction-id X, --mass or --status", command: command)
        }
        var requestId = try requestIdentifier(arguments, command: command)
        if status {
            for flag in ["--days", "--reason", "--storefront"] where arguments.values[flag] != nil {
                throw UsageError(message: "\(flag) does not go with --status", command: command)
            }
            let product = try APICommands.identifier(arguments, "--product", command: command)
            guard let requestId else { throw UsageError(message: "--status needs --request-id R (the mass extension's)", command: command) }
            return try send(.massExtensionStatus(productId: product, requestIdentifier: requestId), arguments, command: command) { response in
                var line = JSONObject()
                for field in ["requestIdentifier", "complete", "completeDate", "succeededCount", "failedCount"] {
                    line[field] = response[field] ?? .null
                }
                return (line, true)
            }
        }
        let days = try bounded(arguments, "--days", 1...AppStoreServerAPIClient.maximumExtensionDays, command: command, hint: "extendByDays: Apple extends by 1 to 90 days")
        let reason = try bounded(
            arguments, "--reason", 0...3, command: command,
            hint: "extendReasonCode: 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage")
        if single {
            if arguments.values["--product"] != nil || arguments.values["--storefront"] != nil {
                throw UsageError(message: "--product and --storefront go with --mass", command: command)
            }
            let original = try APICommands.identifier(arguments, "--original-transaction-id", command: command)
            guard let requestId else {
                throw UsageError(message: "--request-id R is required: your id for this extension (Apple answers a repeat with the first result)", command: command)
            }
            let request = APIRequest.extendRenewalDate(
                originalTransactionId: original, extendByDays: days, extendReasonCode: reason, requestIdentifier: requestId)
            return try send(request, arguments, command: command) { response in
                var line = JSONObject()
                for field in ["originalTransactionId", "webOrderLineItemId", "success", "effectiveDate"] { line[field] = response[field] ?? .null }
                line["requestIdentifier"] = .string(requestId)
                return (line, response["success"] == .bool(true))
            }
        }
        let product = try APICommands.identifier(arguments, "--product", command: command)
        var storefronts: [String] = []
        for code in arguments.repeated["--storefront"] ?? [] {
            guard code.utf8.count == 3, code.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) || ("a"..."z").contains($0) }) else {
                throw UsageError(message: "--storefront expects an ISO 3166-1 alpha-3 country code such as USA, got \"\(code)\"", command: command)
            }
            if !storefronts.contains(code.uppercased()) { storefronts.append(code.uppercased()) }
        }
        let generated = requestId == nil
        if requestId == nil { requestId = UUID().uuidString.lowercased() }
        let identifier = requestId!
        let request = APIRequest.massExtendRenewalDate(
            productId: product, extendByDays: days, extendReasonCode: reason, requestIdentifier: identifier, storefrontCountryCodes: storefronts)
        if generated { Output.error("entitlements extend: request id \(identifier) (generated): check it with `entitlements extend --status --product \(product) --request-id \(identifier)`") }
        return try send(request, arguments, command: command) { response in
            var line = JSONObject()
            line["requestIdentifier"] = response["requestIdentifier"] ?? .string(identifier)
            line["productId"] = .string(product)
            line["generated"] = .bool(generated)
            return (line, true)
        }
    }

    /// `--request-id`, when given: 1 to 128 characters.
    static func requestIdentifier(_ arguments: Arguments, command: String) throws(UsageError) -> String? {
        guard let value = arguments.values["--request-id"] else { return nil }
        guard !value.isEmpty, value.count <= 128, !value.contains("/") else {
            throw UsageError(message: "--request-id expects 1 to 128 characters without \"/\", got \"\(value)\"", command: command)
        }
        return value
    }

    static func bounded(_ arguments: Arguments, _ flag: String, _ range: ClosedRange<Int>, command: String, hint: String) throws(UsageError) -> Int {
        guard let text = arguments.values[flag] else { throw UsageError(message: "\(flag) is required (\(hint))", command: command) }
        guard let value = Int(text), range.contains(value) else {
            throw UsageError(message: "\(flag) expects \(range.lowerBound) to \(range.upperBound), got \"\(text)\" (\(hint))", command: command)
        }
        return value
    }

    /// Sends `request` and prints `{"request", "status", ...}` with the fields `line` picks
    /// from Apple's answer; `line` also says whether the answer is a success.
    static func send(
        _ request: APIRequest, _ arguments: Arguments, command: String, line: (JSONValue) -> (JSONObject, Bool)
    ) throws(UsageError) -> ExitCode {
        let (loaded, code) = try APICommands.client(arguments, command: command)
        guard let client = loaded else { return code }
        let response: APIResponse
        do { response = try client.send(request) } catch { return APICommands.failed(error, command: command) }
        let (fields, success) = line(response.json ?? .object(JSONObject()))
        var printed = JSONObject([("request", .string(request.description)), ("status", .int(Int64(response.status)))])
        for (key, value) in fields.members { printed[key] = value }
        Output.line(.object(printed))
        if !success { Output.error("entitlements \(command): Apple answered \"success\": false: the renewal date was not extended") }
        return success ? .success : .rejected
    }
}
