/// One line of the revenue ledger (specification section 14), with the rates applied.
public struct LedgerLine: Sendable, Hashable {
    public var entry: LedgerEntry
    /// The customer (`appTransactionId`, or `otid:<originalTransactionId>`).
    public var appTransactionId: CustomerKey
    /// The transaction's `storefront` (ISO 3166-1 alpha-3), when read.
    public var storefront: String?
    /// ``LedgerEntry/amount`` in milliunits of the reporting currency at the rate of the
    /// line's UTC day, rounded half away from zero; `nil` without a rate.
    public var reportingAmount: Int64?
    /// Apple's commission in hundredths: 15 or 30.
    public var commissionPercent: Int64
    /// ``reportingAmount`` × (1 − commission), rounded half away from zero.
    public var proceeds: Int64?

    public init(
        entry: LedgerEntry, appTransactionId: CustomerKey, storefront: String? = nil, reportingAmount: Int64?,
        commissionPercent: Int64, proceeds: Int64?
    ) {
        self.entry = entry
        self.appTransactionId = appTransactionId
        self.storefront = storefront
        self.reportingAmount = reportingAmount
        self.commissionPercent = commissionPercent
        self.proceeds = proceeds
    }

    /// The line as `revenue` prints it, fields in the specification's order.
    public func json() -> JSONValue {
        .object(
            JSONObject([
                ("at", .int(entry.at)), ("type", .string(entry.type.rawValue)), ("transactionId", .string(entry.transactionId)),
                ("originalTransactionId", .string(entry.originalTransactionId)), ("appTransactionId", .string(appTransactionId)),
                ("productId", .string(entry.productId)), ("storefront", storefront.map(JSONValue.string) ?? .null),
                ("currency", .string(entry.currency)), ("amount", .int(entry.amount)),
                ("reportingAmount", reportingAmount.map(JSONValue.int) ?? .null),
                ("commissionRate", .double(Double(commissionPercent) / 100)), ("proceeds", proceeds.map(JSONValue.int) ?? .null),
            ]))
    }
}

/// The revenue ledger: every customer's ``LedgerEntry`` lines with the rates and the
/// commission applied, in the ledger's order.
public enum RevenueLedger {
    /// One line with the rates applied.
    public static func line(_ entry: LedgerEntry, customer: CustomerKey, settings: RevenueSettings) -> LedgerLine {
        let reporting = settings.reportingAmount(entry.amount, currency: entry.currency, at: entry.at)
        let commission = settings.commissionPercent(reduced: entry.reducedCommission)
        return LedgerLine(
            entry: entry, appTransactionId: customer, reportingAmount: reporting, commissionPercent: commission,
            proceeds: reporting.map { RevenueSettings.proceeds($0, commissionPercent: commission) })
    }

    /// The lines at `from` ≤ `at` < `to`, ordered by `at`, then `transactionId`.
    /// - Returns: The lines, and the currencies some line had no rate for (sorted).
    public static func lines(
        of customers: some Sequence<RevenueFacts>, settings: RevenueSettings, from: Int64 = Int64.min, to: Int64 = Int64.max
    ) -> (lines: [LedgerLine], currenciesWithoutRate: [String]) {
        var lines: [LedgerLine] = []
        var missing = Set<String>()
        for facts in customers {
            for entry in facts.entries where entry.at >= from && entry.at < to {
                let line = line(entry, customer: facts.customer, settings: settings)
                if line.reportingAmount == nil { missing.insert(entry.currency) }
                lines.append(line)
            }
        }
        lines.sort { LedgerEntry.precedes($0.entry, $1.entry) }
        return (lines, missing.sorted())
    }
}
