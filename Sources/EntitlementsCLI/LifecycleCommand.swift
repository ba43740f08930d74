import EntitlementCore
import Entitlements

extension Commands {
    /// `entitlements lifecycle`: the feed of what happened to each customer (specification section 12).
    static func lifecycle(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        try printFeed(
            args,
            Feed(
                command: "lifecycle", recordDue: { engine throws(EngineError) in _ = try engine.recordDueLifecycle() },
                lastCursor: { engine throws(EngineError) in try engine.lastLifecycleCursor() },
                page: { engine, cursor, limit throws(EngineError) in
                    let records = try engine.lifecycle(since: cursor, limit: limit)
                    return (records.map { $0.json() }, records.last?.cursor)
                }))
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
                           a cursor above the last one recorded prints nothing yet,
                           with a warning on standard error
          --limit N        stop after N lines
          --follow         keep running and print new events as they are recorded
                           (time-driven ones at most a second late) until interrupted
        """
}
