/// Why a usage record is refused before anything is recorded (specification section 11).
public struct UsageRefusal: Error, Sendable, Hashable {
    /// `UNKNOWN_CURRENCY`, `INSUFFICIENT_BALANCE`, `NOT_FOUND` or `INVALID_USAGE`.
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
}

/// The checks a usage record passes before it is logged: pure functions of the
/// customer's state and the rules.
public enum UsageCheck {
    /// The currencies the customer's consumables credit, and every currency the rules name.
    public static func knownCurrencies(in state: CustomerState?, rules: Rules) -> Set<String> {
        var currencies = Set(rules.products.values.compactMap(\.currency))
        for transaction in state?.transactions.values ?? [:].values where transaction.facts.type == .consumable {
            currencies.insert(BalanceSheet.currency(of: transaction.facts, rule: rules.products[transaction.facts.productId]))
        }
        return currencies
    }

    /// `nil` when `usage` may be logged for the customer whose state is `state`, else why not:
    /// - a spend: its units are more than 0, its currency is one the rules or the
    ///   customer's consumables name, and the balance at its `at` covers it (the
    ///   balance ``Evaluation`` gives at that moment: purchases less what refunds and
    ///   revocations took back, the operator's credits, less the spends, all dated at
    ///   or before `at`). Only that moment is checked: with a refund, or a spend
    ///   already recorded, dated after `at`, a later balance may fall below zero;
    /// - a consumed share: 0...100000, of a transaction the customer holds.
    public static func refusal(for usage: UsageFacts, state: CustomerState, rules: Rules) -> UsageRefusal? {
        switch usage.amount {
        case .spend(let currency, let units):
            guard units > 0 else {
                return UsageRefusal(code: "INVALID_USAGE", message: "units must be a whole number above 0 (got \(units))")
            }
            guard knownCurrencies(in: state, rules: rules).contains(currency) else {
                let known = knownCurrencies(in: state, rules: rules).sorted()
                return UsageRefusal(
                    code: "UNKNOWN_CURRENCY",
                    message: "no product credits currency \"\(currency)\" (the rules and this customer's purchases know: \(known.isEmpty ? "none" : known.joined(separator: ", ")))")
            }
            let balance = Evaluation.evaluate(state, rules: rules, at: usage.at).balance(currency)
            guard balance >= units else {
                return UsageRefusal(
                    code: "INSUFFICIENT_BALANCE",
                    message: "the balance of \(currency) at \(usage.at) is \(balance): spending \(units) would take it below zero; nothing was recorded")
            }
            return nil
        case .consumed(let transactionId, let share):
            guard (0...Consumption.whole).contains(share) else {
                return UsageRefusal(code: "INVALID_USAGE", message: "--consumed is thousandths of a percent, 0 to 100000 (got \(share))")
            }
            guard state.transactions[transactionId] != nil else {
                return UsageRefusal(code: "NOT_FOUND", message: "customer \(state.key) holds no transaction \(transactionId)")
            }
            return nil
        }
    }

    /// Whether `new` says what the logged `existing` says (a retry, not a conflict). The
    /// moment is compared only when `new`'s was given (`--at`): a retry without it is
    /// dated when it is made.
    public static func sameContent(_ existing: UsageFacts, _ new: UsageFacts, atGiven: Bool) -> Bool {
        existing.usageId == new.usageId && existing.customerKey == new.customerKey && existing.amount == new.amount
            && (!atGiven || existing.at == new.at)
    }
}
