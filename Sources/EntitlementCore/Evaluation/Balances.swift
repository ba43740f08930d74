/// Consumable balances per currency (specification section 5): granted - revoked - used.
///
/// A consumable credits quantity x units of its product's currency (a product
/// missing from the rules, or a rule without a currency, credits 1 unit per
/// quantity of a currency named after its `productId`; a rule without units
/// credits 1 unit per quantity). A revocation at or before `at` takes back:
/// - all of it for REFUND_FULL, FAMILY_REVOKE, no `revocationType` (or one
///   Apple adds later), and for a REFUND_PRORATED without a percentage;
/// - round-half-up(quantity x units x revocationPercentage / 100000) for
///   REFUND_PRORATED, in exact integer arithmetic.
///
/// A usage record spending units of a currency at or before `at` takes them
/// (``debit(_:units:)``); a later refund, or a spend dated before spends
/// already recorded, may leave a balance below zero.
struct BalanceSheet {
    private var amounts: [String: Int128] = [:]

    mutating func credit(_ transaction: TransactionFacts, rule: ProductRule?, at: Int64) {
        amounts[Self.currency(of: transaction, rule: rule), default: 0] += Self.remaining(transaction, rule: rule, at: at)
    }

    /// Adds a balance worked out elsewhere (another customer's, summed for an app user).
    mutating func add(_ balance: CurrencyBalance) {
        amounts[balance.currency, default: 0] += Int128(balance.amount)
    }

    /// Takes `units` spent of `currency`.
    mutating func debit(_ currency: String, units: Int64) {
        amounts[currency, default: 0] -= Int128(units)
    }

    /// The currency a consumable credits: its rule's, else one named after its product.
    static func currency(of transaction: TransactionFacts, rule: ProductRule?) -> String {
        rule?.currency ?? transaction.productId
    }

    /// What a consumable credits before any refund: quantity x units.
    static func granted(_ transaction: TransactionFacts, rule: ProductRule?) -> Int128 {
        Int128(transaction.quantity) * Int128(rule?.units ?? 1)
    }

    /// What a consumable still credits at `at`: granted minus what a revocation
    /// at or before `at` took back.
    static func remaining(_ transaction: TransactionFacts, rule: ProductRule?, at: Int64) -> Int128 {
        let granted = granted(transaction, rule: rule)
        switch transaction.revocationShare(at: at) {
        case .none: return granted
        case .all: return 0
        case .prorated(let percentage):
            return granted - roundHalfUp(granted * Int128(percentage), dividedBy: Int128(RevocationShare.whole))
        }
    }

    /// `numerator / denominator` rounded to the nearest integer, halves up
    /// (toward positive infinity), for a positive `denominator`.
    static func roundHalfUp(_ numerator: Int128, dividedBy denominator: Int128) -> Int128 {
        floorDivide(2 * numerator + denominator, by: 2 * denominator)
    }

    static func floorDivide(_ numerator: Int128, by denominator: Int128) -> Int128 {
        let quotient = numerator / denominator
        let remainder = numerator % denominator
        return (remainder != 0 && (remainder < 0) != (denominator < 0)) ? quotient - 1 : quotient
    }

    func balances() -> [CurrencyBalance] {
        amounts.map { currency, amount in
            CurrencyBalance(currency: currency, amount: Int64(clamping: amount))
        }
        .sorted { $0.currency.utf8Precedes($1.currency) }
    }
}
