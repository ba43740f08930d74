/// A non-renewing subscription's (a pass's) window of access: `start` <= t < `end`.
struct PassWindow: Hashable {
    var start: Int64
    var end: Int64

    func contains(_ at: Int64) -> Bool { start <= at && at < end }
}

/// Stacks the passes of each product (specification section 5).
///
/// Fed purchases in `purchaseDate` then `transactionId` order, each purchase's
/// window starts at max(its `purchaseDate`, the end of the previous window of
/// the same product) and lasts the product's `durationDays`:
/// - a purchase revoked at or before `at` by REFUND_FULL, FAMILY_REVOKE, no
///   `revocationType` (or one Apple adds later) lasts 0;
/// - a purchase revoked at or before `at` by REFUND_PRORATED lasts
///   duration x (100000 - revocationPercentage) / 100000 milliseconds,
///   rounded down to the millisecond (integer division, so a pass never
///   lasts longer than the share not refunded); a REFUND_PRORATED without a
///   percentage lasts 0.
///
/// A product with no `durationDays` in the rules (not in the rules at all, or
/// a rule without it) has no window: its purchases grant nothing, do not push
/// the windows of later purchases, and show no `expiresDate`. A
/// `durationDays` of 0 or less gives windows of length 0.
struct PassStacker {
    /// The end of the last window, by `productId`.
    private var ends: [String: Int64] = [:]

    /// One day, in milliseconds.
    static let day: Int64 = 86_400_000

    mutating func window(for transaction: TransactionFacts, rule: ProductRule?, at: Int64) -> PassWindow? {
        guard let days = rule?.durationDays else { return nil }
        let (product, overflow) = max(days, 0).multipliedReportingOverflow(by: Self.day)
        let duration = overflow ? Int64.max : product
        let length: Int64
        switch transaction.revocationShare(at: at) {
        case .none: length = duration
        case .all: length = 0
        case .prorated(let percentage):
            length = Int64(Int128(duration) * Int128(RevocationShare.whole - percentage) / Int128(RevocationShare.whole))
        }
        let start = max(transaction.purchaseDate, ends[transaction.productId] ?? Int64.min)
        let (sum, endOverflow) = start.addingReportingOverflow(length)
        let end = endOverflow ? Int64.max : sum
        ends[transaction.productId] = end
        return PassWindow(start: start, end: end)
    }
}
