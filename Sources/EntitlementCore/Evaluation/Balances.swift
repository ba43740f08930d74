/// Consumable balances per currency (contract section 5).
///
/// A consumable credits quantity x units of its product's currency (a product
/// missing from the rules, or a rule without a currency, credits 1 unit per
/// quantity of a currency named after its `productId`; a rule without units
/// credits 1 unit per quantity). A revocation at or before `at` takes back:
/// - all of it for REFUND_FULL, FAMILY_REVOKE, no `revocationType` (or one
///   Apple adds later), and for a REFUND_PRORATED without a percentage;
/// - round-half-up(quantity x units x revocationPercentage / 100000) for
///   REFUND_PRORATED, in exact integer arithmetic.
struct BalanceSheet {
    private var amounts: [String: Int128] = [:]

    mutating func credit(_ transaction: TransactionFacts, rule: ProductRule?, at: Int64) {
        let currency = rule?.currency ?? transaction.productId
        let granted = Int128(transaction.quantity) * Int128(rule?.units ?? 1)
        let taken: Int128
        switch transaction.revocationShare(at: at) {
        case .none: taken = 0
        case .all: taken = granted
        case .prorated(let percentage):
            taken = Self.roundHalfUp(granted * Int128(percentage), dividedBy: Int128(RevocationShare.whole))
        }
        amounts[currency, default: 0] += granted - taken
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
