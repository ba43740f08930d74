/// Which purchases the units a customer spent came from (specification section 11).
///
/// Units spent of a currency are taken from the customer's consumable purchases
/// of that currency first in, first out: spends in order of their `at` (then
/// `usageId`), each from the purchases bought by then in `purchaseDate` then
/// `transactionId` order. A purchase revoked by the spend's moment is skipped,
/// whatever the revocation (a REFUND_PRORATED too: the units it leaves in the
/// balance are spent, but from no purchase); one not revoked then gives at most its
/// quantity x units, minus what earlier spends took from it. A purchase refunded
/// after it was spent keeps what was spent from it.
///
/// A pure function of the state, the rules and `at` (spends after `at` do not count).
public struct UsageAttribution: Sendable, Hashable {
    /// Units attributed to each consumable purchase, by `transactionId` (purchases
    /// nothing was taken from are absent).
    public var attributed: [String: Int64]
    /// Units spent that no purchase could give, by currency (the store refuses spending
    /// beyond the balance at the spend's own moment, so only when a refund, a spend
    /// dated before spends already recorded, spending from the operator's credits, or
    /// from what a prorated refund left of a skipped purchase, left the purchases too
    /// little).
    public var unattributed: [String: Int64]

    /// Attributes the spends at or before `at` in `usages` to the consumables among `transactions`.
    public static func fifo(
        transactions: some Sequence<TransactionFacts>, usages: some Sequence<UsageFacts>, rules: Rules, at: Int64
    ) -> UsageAttribution {
        var purchasesByCurrency: [String: [TransactionFacts]] = [:]
        for transaction in transactions where transaction.purchaseDate <= at {
            let rule = rules.products[transaction.productId]
            // Consumables as evaluation types them (a receipt's one-time entry is one when its rule names a currency).
            guard transaction.evaluatedType(rule: rule) == .consumable else { continue }
            purchasesByCurrency[BalanceSheet.currency(of: transaction, rule: rule), default: []].append(transaction)
        }
        for currency in purchasesByCurrency.keys { purchasesByCurrency[currency]?.sort(by: Evaluation.purchaseOrder) }

        var spends: [(at: Int64, usageId: String, currency: String, units: Int64)] = []
        for usage in usages where usage.at <= at {
            if case .spend(let currency, let units) = usage.amount, units > 0 {
                spends.append((usage.at, usage.usageId, currency, units))
            }
        }
        spends.sort { $0.at != $1.at ? $0.at < $1.at : $0.usageId.utf8Precedes($1.usageId) }

        var taken: [String: Int128] = [:]
        var unattributed: [String: Int128] = [:]
        for spend in spends {
            var left = Int128(spend.units)
            for purchase in purchasesByCurrency[spend.currency] ?? [] {
                guard left > 0 else { break }
                guard purchase.purchaseDate <= spend.at else { break }
                let rule = rules.products[purchase.productId]
                // Purchases revoked by then are skipped.
                let capacity = purchase.isRevoked(at: spend.at) ? 0 : BalanceSheet.granted(purchase, rule: rule)
                let already = taken[purchase.transactionId] ?? 0
                guard capacity > already else { continue }
                let share = min(left, capacity - already)
                taken[purchase.transactionId] = already + share
                left -= share
            }
            if left > 0 { unattributed[spend.currency, default: 0] += left }
        }
        return UsageAttribution(
            attributed: taken.mapValues { Int64(clamping: $0) }, unattributed: unattributed.mapValues { Int64(clamping: $0) })
    }
}
