/// One interval of `metrics` (specification section 14).
public struct MetricsLine: Sendable, Hashable {
    public var from: Int64
    public var to: Int64
    /// Subscriptions `active` or `grace_period` at `to` − 1, not in a free trial.
    public var activeSubscriptions: Int64 = 0
    /// The same, in a free trial.
    public var activeTrials: Int64 = 0
    /// Monthly recurring revenue at `to` − 1, milliunits of the reporting currency.
    public var mrr: Int64 = 0
    /// Subscriptions whose first paid period began in the interval.
    public var newSubscriptions: Int64 = 0
    /// Subscriptions whose free trial began in the interval.
    public var newTrials: Int64 = 0
    public var trialConversions: Int64 = 0
    public var expirations: Int64 = 0
    public var expirationsVoluntary: Int64 = 0
    /// The ledger's refund lines in the interval.
    public var refunds: Int64 = 0
    /// The sums of the ledger's `reportingAmount` and `proceeds` in the interval (lines
    /// without a rate left out), milliunits of the reporting currency.
    public var revenue: Int64 = 0
    public var proceeds: Int64 = 0

    public init(from: Int64, to: Int64) {
        self.from = from
        self.to = to
    }

    /// The line as `metrics` prints it, fields in the specification's order.
    public func json() -> JSONValue {
        .object(
            JSONObject([
                ("from", .int(from)), ("to", .int(to)), ("activeSubscriptions", .int(activeSubscriptions)),
                ("activeTrials", .int(activeTrials)), ("mrr", .int(mrr)), ("newSubscriptions", .int(newSubscriptions)),
                ("newTrials", .int(newTrials)), ("trialConversions", .int(trialConversions)), ("expirations", .int(expirations)),
                ("expirationsVoluntary", .int(expirationsVoluntary)), ("refunds", .int(refunds)), ("revenue", .int(revenue)),
                ("proceeds", .int(proceeds)),
            ]))
    }
}

/// Sums every customer's ``RevenueFacts`` into the lines of a `metrics` range, one
/// customer at a time (so the figures never need every customer in memory at once).
public struct MetricsAccumulator: Sendable {
    public let settings: RevenueSettings
    public let rules: Rules
    private var lines: [MetricsLine]
    /// Each line's MRR in twelfths of a milliunit (summed exactly, rounded once).
    private var mrrTwelfths: [Int128]
    /// Each line's revenue and proceeds, summed exactly (a sum past 64 bits shows as the
    /// nearest 64-bit number, never wrapped).
    private var sums: [(revenue: Int128, proceeds: Int128)]
    /// Each interval's start, ascending (for binary search).
    private let starts: [Int64]
    /// Each interval's evaluation moment, `to` − 1, ascending.
    private let moments: [Int64]
    /// The currencies a counted figure had no rate for.
    public private(set) var currenciesWithoutRate = Set<String>()

    public init(intervals: [(from: Int64, to: Int64)], settings: RevenueSettings, rules: Rules) {
        self.settings = settings
        self.rules = rules
        self.lines = intervals.map { MetricsLine(from: $0.from, to: $0.to) }
        self.mrrTwelfths = Array(repeating: 0, count: intervals.count)
        self.sums = Array(repeating: (0, 0), count: intervals.count)
        self.starts = intervals.map(\.from)
        self.moments = intervals.map { $0.to - 1 }
    }

    /// The index of the interval holding `at`, if any.
    private func interval(of at: Int64) -> Int? {
        guard let first = starts.first, at >= first, let lastLine = lines.last, at < lastLine.to else { return nil }
        var low = 0
        var high = starts.count
        while low < high {
            let middle = (low + high) / 2
            if starts[middle] <= at { low = middle + 1 } else { high = middle }
        }
        return low - 1
    }

    /// The index of the first evaluation moment at or after `at`.
    private func firstMoment(atOrAfter at: Int64) -> Int {
        var low = 0
        var high = moments.count
        while low < high {
            let middle = (low + high) / 2
            if moments[middle] < at { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Adds one customer's contribution.
    public mutating func add(_ facts: RevenueFacts) {
        guard !lines.isEmpty else { return }
        for entry in facts.entries {
            guard let index = interval(of: entry.at) else { continue }
            if entry.type == .refund { lines[index].refunds += 1 }
            guard let reporting = settings.reportingAmount(entry.amount, currency: entry.currency, at: entry.at) else {
                currenciesWithoutRate.insert(entry.currency)
                continue
            }
            let commission = settings.commissionPercent(reduced: entry.reducedCommission)
            sums[index].revenue += Int128(reporting)
            sums[index].proceeds += Int128(RevenueSettings.proceeds(reporting, commissionPercent: commission))
        }
        for subscription in facts.subscriptions {
            if let at = subscription.firstPaidAt, let index = interval(of: at) { lines[index].newSubscriptions += 1 }
            if let at = subscription.firstTrialAt, let index = interval(of: at) { lines[index].newTrials += 1 }
            for at in subscription.trialConversions {
                if let index = interval(of: at) { lines[index].trialConversions += 1 }
            }
            for expiration in subscription.expirations {
                guard let index = interval(of: expiration.at) else { continue }
                lines[index].expirations += 1
                if expiration.voluntary { lines[index].expirationsVoluntary += 1 }
            }
            for span in subscription.activeSpans {
                var index = firstMoment(atOrAfter: span.from)
                guard index < moments.count, moments[index] < span.to else { continue }
                let monthly = span.trial ? nil : monthlyTwelfths(of: span)
                while index < moments.count, moments[index] < span.to {
                    if span.trial {
                        lines[index].activeTrials += 1
                    } else {
                        lines[index].activeSubscriptions += 1
                        if let monthly { mrrTwelfths[index] += monthly }
                    }
                    index += 1
                }
            }
        }
    }

    /// The current transaction's reportingAmount per month, in twelfths of a milliunit; `nil`
    /// when it has no price or its currency no rate on its purchase day.
    private mutating func monthlyTwelfths(of span: ActiveSpan) -> Int128? {
        guard let price = span.price, let currency = span.currency else { return nil }
        guard let reporting = settings.reportingAmount(price, currency: currency, at: span.purchaseDate) else {
            currenciesWithoutRate.insert(currency)
            return nil
        }
        let period = rules.products[span.productId]?.period ?? span.duration.map(BillingPeriod.nearest(toMilliseconds:)) ?? .oneMonth
        return Int128(reporting) * Int128(period.twelfthsPerMonthFactor)
    }

    /// The lines, MRR rounded half away from zero.
    public func result() -> [MetricsLine] {
        var result = lines
        for index in result.indices {
            result[index].mrr = Int64(clamping: Rounding.halfAwayFromZero(mrrTwelfths[index], dividedBy: 12))
            result[index].revenue = Int64(clamping: sums[index].revenue)
            result[index].proceeds = Int64(clamping: sums[index].proceeds)
        }
        return result
    }
}
