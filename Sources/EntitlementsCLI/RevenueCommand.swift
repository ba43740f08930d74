import EntitlementCore
import Entitlements

extension Commands {
    // MARK: revenue

    /// `entitlements revenue`: the revenue ledger as NDJSON (specification section 14).
    static func revenue(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(args, command: "revenue", valued: ["--db", "--config", "--from", "--to"], switches: [])
        if !arguments.positional.isEmpty {
            throw UsageError(message: "unexpected argument \(arguments.positional[0])", command: "revenue")
        }
        let from = try time(arguments, "--from", command: "revenue")
        let to = try time(arguments, "--to", command: "revenue")
        if let from, let to, from > to {
            throw UsageError(
                message: "--from \(CivilTime.iso8601(from)) is after --to \(CivilTime.iso8601(to)): give the earlier moment first",
                command: "revenue")
        }
        let (loaded, code) = try loadEngine(arguments, command: "revenue", mode: .readOnly)
        guard let engine = loaded else { return code }
        do {
            let answer = try engine.revenue(from: from, to: to)
            for warning in engine.exchangeRateWarnings(answer.currenciesWithoutRate) { Output.error(warning) }
            Output.lines(answer.json())
            return .success
        } catch {
            return storageFailure("revenue", error)
        }
    }

    // MARK: metrics

    /// `entitlements metrics`: subscription metrics per day, week or month (specification section 14).
    static func metrics(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(
            args, command: "metrics", valued: ["--db", "--config", "--from", "--to", "--interval"], switches: [])
        if !arguments.positional.isEmpty {
            throw UsageError(message: "unexpected argument \(arguments.positional[0])", command: "metrics")
        }
        guard let from = try time(arguments, "--from", command: "metrics") else {
            throw UsageError(message: "--from TIME is required", command: "metrics")
        }
        guard let to = try time(arguments, "--to", command: "metrics") else {
            throw UsageError(message: "--to TIME is required", command: "metrics")
        }
        var interval = MetricsInterval.month
        if let text = arguments.values["--interval"] {
            guard let parsed = MetricsInterval(rawValue: text) else {
                throw UsageError(message: "--interval: expected day, week or month, got \"\(text)\"", command: "metrics")
            }
            interval = parsed
        }
        // The range is checked before the database is opened: a bad range is a usage error.
        do {
            _ = try MetricsIntervals.make(from: from, to: to, interval: interval)
        } catch {
            throw UsageError(message: "\(error.code.rawValue): \(error.message)", command: "metrics")
        }
        let (loaded, code) = try loadEngine(arguments, command: "metrics", mode: .readOnly)
        guard let engine = loaded else { return code }
        do {
            let answer = try engine.metrics(from: from, to: to, interval: interval)
            for warning in engine.exchangeRateWarnings(answer.currenciesWithoutRate) { Output.error(warning) }
            Output.lines(answer.json())
            return .success
        } catch {
            if error.code == .invalidRange || error.code == .tooManyIntervals {
                Output.error("entitlements metrics: \(error.code): \(error.message)")
                return .usage
            }
            return storageFailure("metrics", error)
        }
    }

    /// A TIME option, or `nil` when absent.
    private static func time(_ arguments: Arguments, _ option: String, command: String) throws(UsageError) -> Int64? {
        guard let text = arguments.values[option] else { return nil }
        do { return try TimeArgument.parse(text) } catch {
            throw UsageError(message: "\(option): \(error.message)", command: command)
        }
    }
}

extension Help {
    static let revenue = """
        entitlements revenue [--db PATH] --config PATH [--from TIME] [--to TIME]

        Prints the revenue ledger as NDJSON, ordered by "at" then "transactionId", the lines
        with --from <= at < --to:
          a "sale" at each Production transaction's purchaseDate with a non-zero price, owned PURCHASED;
          a "refund" at its revocationDate: minus the price, or for a prorated refund minus
            price x revocationPercentage / 100000 (rounded half away from zero);
          a "refund_reversed" at the reversal's signedDate: the refund's amount with the sign turned.
          {"at":...,"type":"sale","transactionId":"...","originalTransactionId":"...","appTransactionId":"...",
           "productId":"...","storefront":"USA","currency":"EUR","amount":9990,"reportingAmount":10832,
           "commissionRate":0.3,"proceeds":7582}
        amount is in milliunits of the transaction's currency, as Apple signs prices;
        reportingAmount is amount x the exchange rate of that UTC day (configuration "revenue":
        reportingCurrency, exchangeRates, a CSV file date,currency,rate), rounded half away from
        zero, null without a rate (one warning per currency on stderr); commissionRate is 0.15 with
        the Small Business Program or for an auto-renewable transaction bought 365 days or more
        after its subscription's first paid transaction, else 0.30; proceeds is
        reportingAmount x (1 - commissionRate), rounded the same way. Taxes are not estimated.

        OPTIONS
          --db PATH       database (default entitlements.sqlite)
          --config PATH   configuration file (required)
          --from TIME     the first moment (milliseconds since 1970 or ISO 8601 UTC); default: the beginning
          --to TIME       the end, exclusive; default: no end
        """

    static let metrics = """
        entitlements metrics [--db PATH] --config PATH --from TIME --to TIME [--interval day|week|month]

        Prints one NDJSON line per interval [from, to): calendar-aligned UTC days, weeks from
        Monday or months (default month), the first and the last cut to --from and --to, each
        evaluated at to - 1 on Production data of auto-renewable subscriptions owned PURCHASED:
          {"from":...,"to":...,"activeSubscriptions":120,"activeTrials":14,"mrr":1198800,
           "newSubscriptions":9,"newTrials":20,"trialConversions":7,"expirations":5,
           "expirationsVoluntary":3,"refunds":1,"revenue":1305120,"proceeds":913584}
        activeSubscriptions and activeTrials: status active or grace_period at to - 1, outside or
        in a free trial; mrr: the sum over the active subscriptions of the current transaction's
        reportingAmount per month (period from the product's "period" in the rules, P1W P1M P2M
        P3M P6M P1Y, else from expiresDate - purchaseDate), rounded once; newSubscriptions and
        newTrials: subscriptions whose first paid period or free trial began in the interval;
        trialConversions: RENEWAL and PRODUCT_CHANGE with isTrialConversion; expirations and
        expirationsVoluntary: EXPIRATION events, and those with reason VOLUNTARY; over all
        products, refunds (the ledger's refund lines), revenue and proceeds (sums of the
        ledger's reportingAmount and proceeds, lines without a rate left out), in milliunits
        of the reporting currency.

        A --from after --to, or more than 10000 intervals, is a usage error (exit 2).

        OPTIONS
          --db PATH         database (default entitlements.sqlite)
          --config PATH     configuration file (required)
          --from TIME       the range's start (milliseconds since 1970 or ISO 8601 UTC), required
          --to TIME         the range's end, exclusive, required
          --interval UNIT   day, week or month (default month)
        """
}
