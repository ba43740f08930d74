import EntitlementCore
import Entitlements
#if canImport(Glibc)
import Glibc
#endif

extension Commands {
    // MARK: lifecycle

    /// `entitlements lifecycle`: the feed of what happened to each customer (contract section 12).
    static func lifecycle(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(args, command: "lifecycle", valued: ["--db", "--config", "--since", "--limit"], switches: ["--follow"])
        if !arguments.positional.isEmpty {
            throw UsageError(message: "unexpected argument \(arguments.positional[0])", command: "lifecycle")
        }
        var since: Int64 = 0
        if let text = arguments.values["--since"] {
            guard let value = Int64(text), value >= 0 else {
                throw UsageError(message: "--since expects a cursor: a non-negative integer printed by an earlier line, got \"\(text)\"", command: "lifecycle")
            }
            since = value
        }
        var limit: Int? = nil
        if let text = arguments.values["--limit"] {
            guard let value = Int(text), value >= 1 else {
                throw UsageError(message: "--limit expects a positive integer, got \"\(text)\"", command: "lifecycle")
            }
            limit = value
        }
        let follow = arguments.flags.contains("--follow")
        if follow {
            // Runs until interrupted: whatever mask the parent left, SIGINT and SIGTERM end it.
            var signals = sigset_t()
            sigemptyset(&signals)
            sigaddset(&signals, SIGINT)
            sigaddset(&signals, SIGTERM)
            pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        }
        let (loaded, code) = try loadEngine(arguments, command: "lifecycle", mode: .existing)
        guard let engine = loaded else { return code }
        do {
            // Everything due is recorded before the cursor is checked and anything printed.
            try engine.recordDueLifecycle()
            let last = try engine.lastLifecycleCursor()
            if since > last {
                throw UsageError(message: "--since \(since) is from the future: the last cursor recorded is \(last)", command: "lifecycle")
            }
            var cursor = since
            var printed = 0
            while true {
                let want = limit.map { $0 - printed }
                let records = try engine.lifecycle(since: cursor, limit: want.map { min($0, 1_000) } ?? 1_000)
                if !records.isEmpty {
                    Output.lines(records.map { $0.json() })
                    printed += records.count
                    cursor = records[records.count - 1].cursor
                }
                if let limit, printed >= limit { break }
                if records.count == 1_000 { continue }
                guard follow else { break }
                usleep(250_000)
            }
            return .success
        } catch let error as EngineError {
            return storageFailure("lifecycle", error)
        } catch let error as UsageError {
            throw error
        } catch {
            return .storage
        }
    }
}

extension Help {
    static let lifecycle = """
        entitlements lifecycle [--db PATH] --config PATH [--since CURSOR] [--limit N] [--follow]

        Prints, as NDJSON in the order they were recorded, what happened to each customer:
          {"cursor":12,"id":"RENEWAL:2000000000000042","type":"RENEWAL","appTransactionId":"704...",
           "originalTransactionId":"2000...","transactionId":"2000000000000042",
           "productId":"com.example.pro.monthly","entitlements":["pro"],"environment":"Production",
           "price":9990,"currency":"USD","periodType":"NORMAL","isTrialConversion":true,
           "effectiveAt":1766275200000,"recordedAt":1766275201234}
        Types: SUBSCRIPTION_STARTED, RENEWAL, PRODUCT_CHANGE, AUTO_RENEW_DISABLED,
        AUTO_RENEW_ENABLED, BILLING_ISSUE, EXPIRATION, PURCHASE, REFUND, FAMILY_REVOKE,
        REFUND_REVERSED, CONSUMPTION_REQUEST, CONSENT_RESCINDED, CUSTOMER_MERGED.
        The events are a pure function of a customer's data, each with an `id` recorded
        once, ever: after each batch of ingest or usage, after a replay's swap, after a
        merge, and when time makes one due (an EXPIRATION: recorded before anything is
        printed, so the feed is complete as of the moment it is read). Nothing recorded is
        retracted; data that arrives late adds events with an `effectiveAt` in the past.
        `entitlements` are the product's under the rules at recording.

        OPTIONS
          --db PATH        database (default entitlements.sqlite)
          --config PATH    configuration file (required)
          --since CURSOR   print only what was recorded after CURSOR (default 0: everything);
                           a cursor above the last one recorded is a usage error
          --limit N        stop after N lines
          --follow         keep running and print new events as they are recorded
                           (time-driven ones at most a second late) until interrupted
        """
}
