import EntitlementCore
import Entitlements

extension Commands {
    // MARK: history

    /// `entitlements history`: one customer's timeline as NDJSON (specification section 7).
    static func history(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(
            args, command: "history",
            valued: ["--db", "--config", "--app-transaction-id", "--original-transaction-id", "--transaction-id", "--until"],
            switches: [])
        let selectors = ["--app-transaction-id", "--original-transaction-id", "--transaction-id"].filter { arguments.values[$0] != nil }
        guard selectors.count == 1 else {
            throw UsageError(
                message: "give exactly one of --app-transaction-id, --original-transaction-id, --transaction-id", command: "history")
        }
        var until: Int64? = nil
        if let text = arguments.values["--until"] {
            do { until = try TimeArgument.parse(text) } catch {
                throw UsageError(message: "--until: \(error.message)", command: "history")
            }
        }
        if !arguments.positional.isEmpty {
            throw UsageError(message: "unexpected argument \(arguments.positional[0])", command: "history")
        }
        let (loaded, code) = try loadEngine(arguments, command: "history", mode: .readOnly)
        guard let engine = loaded else { return code }
        let subject: CustomerQuery
        switch selectors[0] {
        case "--app-transaction-id": subject = .appTransactionId(arguments.values["--app-transaction-id"]!)
        case "--original-transaction-id": subject = .originalTransactionId(arguments.values["--original-transaction-id"]!)
        default: subject = .transactionId(arguments.values["--transaction-id"]!)
        }
        do {
            let answer = try engine.history(subject, until: until)
            for warning in engine.takeProductWarnings() { Output.error(warning) }
            Output.lines(answer.json())
            if case .notFound = answer { return .rejected }
            return .success
        } catch {
            return storageFailure("history", error)
        }
    }
}

extension Help {
    static let history = """
        entitlements history [--db PATH] --config PATH (--app-transaction-id ID | --original-transaction-id ID | --transaction-id ID) [--until MS]

        Prints the customer's timeline as NDJSON, oldest first: every moment (up to --until,
        default now) at which what the customer may use changed, one line per difference
        between the answer a millisecond before and the answer at that moment (both with
        everything known now):
          {"at":...,"entitlement":"pro","active":true,"expiresDate":...,"productId":"...","cause":{...}}
          {"at":...,"subscription":"<originalTransactionId>","status":"grace_period","previous":"active","cause":{...}}
          {"at":...,"balance":"coins","value":100,"previous":150,"cause":{...}}
        At a moment, entitlement lines come first (by name), then subscriptions (by
        originalTransactionId), then balances (by currency). "cause" names the signed object
        whose date it is: {"kind":"transaction","id":"<transactionId>","field":"expiresDate"}
        or {"kind":"renewalInfo","id":"<originalTransactionId>","signedDate":...}, with the
        "notificationType" and "subtype" of the notification that brought it, if one did.
        An unknown customer prints {"error":{"code":"NOT_FOUND",...}} and exits 1.

        OPTIONS
          --db PATH       database (default entitlements.sqlite)
          --config PATH   configuration file (required)
          --until MS      the last moment to show: milliseconds since 1970 or ISO 8601 UTC
                          (2026-11-23T10:00:00Z); default now
        """
}
