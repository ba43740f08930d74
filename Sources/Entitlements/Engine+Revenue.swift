import EntitlementCore
internal import EventStore

/// The answer of `Engine.revenue(from:to:)`: the ledger's lines in order.
public struct RevenueAnswer: Sendable, Encodable {
    /// The lines, ordered by `at`, then `transactionId`.
    public var lines: [LedgerLine]
    /// The currencies some line had no exchange rate for (their `reportingAmount` is null).
    public var currenciesWithoutRate: [String]

    /// The NDJSON lines `revenue` prints.
    public func json() -> [JSONValue] { lines.map { $0.json() } }

    /// `{"lines": [...], "currenciesWithoutRate": [...]}` (what `GET /revenue` answers).
    public func encode(to encoder: any Encoder) throws {
        let object: JSONValue = [
            "lines": .array(json()), "currenciesWithoutRate": .array(currenciesWithoutRate.map(JSONValue.string)),
        ]
        try object.encode(to: encoder)
    }
}

/// The answer of `Engine.metrics(from:to:interval:)`: one line per interval.
public struct MetricsAnswer: Sendable, Encodable {
    public var lines: [MetricsLine]
    /// The currencies a figure had no exchange rate for (left out of the sums and of MRR).
    public var currenciesWithoutRate: [String]

    /// The NDJSON lines `metrics` prints.
    public func json() -> [JSONValue] { lines.map { $0.json() } }

    /// `{"intervals": [...], "currenciesWithoutRate": [...]}` (what `GET /metrics/summary` answers).
    public func encode(to encoder: any Encoder) throws {
        let object: JSONValue = [
            "intervals": .array(json()), "currenciesWithoutRate": .array(currenciesWithoutRate.map(JSONValue.string)),
        ]
        try object.encode(to: encoder)
    }
}

extension EngineError.Code {
    /// `metrics`: `from` is after `to`.
    public static let invalidRange: EngineError.Code = "INVALID_RANGE"
    /// `metrics`: the range holds more than 10,000 intervals.
    public static let tooManyIntervals: EngineError.Code = "TOO_MANY_INTERVALS"
}

extension Engine {
    /// The revenue ledger (specification section 14): a `sale` at each Production
    /// transaction's purchase with a non-zero price owned `PURCHASED`, a `refund` at each
    /// revocation, a `refund_reversed` at each reversal, with the configured rates and
    /// commission applied; the lines at `from` ≤ `at` < `to`.
    /// - Throws: ``EngineError`` when the database cannot be read.
    public func revenue(from: Int64? = nil, to: Int64? = nil) throws(EngineError) -> RevenueAnswer {
        let settings = configuration.revenue
        do {
            return try readers.withReader { store throws(StoreError) -> RevenueAnswer in
                var customers: [RevenueFacts] = []
                let derived = try store.forEachRevenueFacts { customers.append($0) }
                keep(derived)
                let (lines, missing) = RevenueLedger.lines(
                    of: customers, settings: settings, from: from ?? Int64.min, to: to ?? Int64.max)
                var withStorefront = lines
                var storefronts: [RawRef: String?] = [:]
                for index in withStorefront.indices {
                    let ref = withStorefront[index].entry.ref
                    if storefronts[ref] == nil {
                        storefronts[ref] = .some(Self.storefront(inJWS: (try? store.rawJWS(ref)) ?? ""))
                    }
                    withStorefront[index].storefront = storefronts[ref] ?? nil
                }
                return RevenueAnswer(lines: withStorefront, currenciesWithoutRate: missing)
            }
        } catch {
            throw EngineError(error)
        }
    }

    /// Subscription metrics per interval (specification section 14): calendar-aligned UTC
    /// days, weeks from Monday or months over [`from`, `to`), the first and last cut,
    /// each evaluated at its end − 1.
    /// - Throws: ``EngineError`` `INVALID_RANGE` when `from` is after `to`,
    ///   `TOO_MANY_INTERVALS` past 10,000 intervals, or when the database cannot be read.
    public func metrics(from: Int64, to: Int64, interval: MetricsInterval = .month) throws(EngineError) -> MetricsAnswer {
        let intervals: [(from: Int64, to: Int64)]
        do {
            intervals = try MetricsIntervals.make(from: from, to: to, interval: interval)
        } catch {
            throw EngineError(code: error.code == .invalidRange ? .invalidRange : .tooManyIntervals, message: error.message)
        }
        let accumulator: MetricsAccumulator
        do {
            accumulator = try readers.withReader { store throws(StoreError) -> MetricsAccumulator in
                // Products' periods are the database's rules', as every answer's.
                var sums = MetricsAccumulator(intervals: intervals, settings: configuration.revenue, rules: try activeRules(store).rules)
                let derived = try store.forEachRevenueFacts { sums.add($0) }
                keep(derived)
                return sums
            }
        } catch {
            throw EngineError(error)
        }
        return MetricsAnswer(lines: accumulator.result(), currenciesWithoutRate: accumulator.currenciesWithoutRate.sorted())
    }

    /// One warning line per currency without a rate, for stderr.
    public func exchangeRateWarnings(_ currencies: [String]) -> [String] {
        let file = configuration.exchangeRatesPath.map { " in \($0)" } ?? " (no revenue.exchangeRates file is configured)"
        return currencies.map {
            "warning: no exchange rate for \($0) into \(configuration.revenue.reportingCurrency)\(file) on some day it is needed: those lines have reportingAmount null and are left out of revenue, proceeds and mrr"
        }
    }

    /// Keeps revenue facts derived while reading, when this engine may write (best effort:
    /// a busy database leaves them to be derived again next time).
    private func keep(_ derived: [DerivedRevenueFacts]) {
        guard !derived.isEmpty, mode != .readOnly else { return }
        try? store.withLock { store throws(StoreError) in try store.keepRevenueFacts(derived) }
    }

    /// The `storefront` of a signed transaction's payload, or `nil`.
    static func storefront(inJWS jws: String) -> String? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64.decodeURL(parts[1]),
            let json = try? JSONParser().parse(payload), case .string(let storefront)? = json["storefront"]
        else { return nil }
        return storefront
    }
}

extension Engine {
    /// The revenue ledger, on the engine's threads (see `revenue(from:to:)`).
    public func revenue(from: Int64? = nil, to: Int64? = nil) async throws(EngineError) -> RevenueAnswer {
        try await onOwnThread("entitlements.revenue") { () throws(EngineError) in try self.revenue(from: from, to: to) }
    }

    /// Subscription metrics per interval, on the engine's threads (see `metrics(from:to:interval:)`).
    public func metrics(from: Int64, to: Int64, interval: MetricsInterval = .month) async throws(EngineError) -> MetricsAnswer {
        try await onOwnThread("entitlements.metrics") { () throws(EngineError) in
            try self.metrics(from: from, to: to, interval: interval)
        }
    }
}
