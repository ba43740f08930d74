/// How much of one purchase a customer consumed, as Send Consumption Information V2
/// asks (`consumptionPercentage`, thousandths of a percent; specification section 11).
public struct ConsumptionShare: Sendable, Hashable {
    /// 0...100000, or `nil` for an auto-renewable subscription (Apple computes it).
    public var percentage: Int64?
    /// How it was computed: `units` (a consumable), `window` (a pass), `recorded`
    /// (the latest `consumed` usage record), `none` (another product with no
    /// record: 0), `subscription` (an auto-renewable: omitted).
    public var basis: Basis
    /// For a consumable: the units attributed to it and the units it granted.
    public var unitsSpent: Int64?
    public var units: Int64?

    public enum Basis: String, Sendable, Hashable {
        case units, window, recorded, none, subscription
    }

    public init(percentage: Int64?, basis: Basis, unitsSpent: Int64? = nil, units: Int64? = nil) {
        self.percentage = percentage
        self.basis = basis
        self.unitsSpent = unitsSpent
        self.units = units
    }
}

/// Computes ``ConsumptionShare``s from a customer's state: pure, no clock.
public enum Consumption {
    /// 100%, in thousandths of a percent.
    public static let whole: Int64 = 100_000

    /// The consumed share of the purchase `transactionId`, or `nil` when the
    /// customer has no such transaction.
    ///
    /// - a consumable: the units spent from it (``UsageAttribution``, with
    ///   everything recorded up to `now`) over its quantity x units, floor;
    /// - a pass (a non-renewing subscription with `durationDays`): the elapsed
    ///   share of its window at `requestedAt` (the CONSUMPTION_REQUEST's
    ///   `signedDate`), floor, 0 before the window, 100000 after it;
    /// - another product (a non-consumable, a pass without a duration): the
    ///   latest `consumed` usage record for it dated up to `now` (by `at`, then
    ///   `usageId`), else 0;
    /// - an auto-renewable subscription: `nil` percentage (omitted from the body).
    public static func share(
        of transactionId: String, in state: CustomerState, rules: Rules, now: Int64, requestedAt: Int64
    ) -> ConsumptionShare? {
        guard let transaction = state.transactions[transactionId]?.facts else { return nil }
        let rule = rules.products[transaction.productId]
        switch transaction.evaluatedType(rule: rule) {
        case .autoRenewable:
            return ConsumptionShare(percentage: nil, basis: .subscription)
        case .consumable:
            let attribution = UsageAttribution.fifo(
                transactions: state.transactions.values.lazy.map(\.facts), usages: state.usages.values, rules: rules, at: now)
            let granted = BalanceSheet.granted(transaction, rule: rule)
            let spent = Int128(attribution.attributed[transactionId] ?? 0)
            let percentage = granted > 0 ? spent * Int128(whole) / granted : 0
            return ConsumptionShare(
                percentage: Int64(clamping: min(max(percentage, 0), Int128(whole))), basis: .units,
                unitsSpent: Int64(clamping: spent), units: Int64(clamping: granted))
        case .nonRenewing:
            if rule?.durationDays != nil, let window = passWindow(of: transaction, in: state, rules: rules, at: requestedAt) {
                return ConsumptionShare(percentage: elapsedShare(of: window, at: requestedAt), basis: .window)
            }
            return recorded(transactionId, in: state, now: now)
        case .nonConsumable, .unknown:
            return recorded(transactionId, in: state, now: now)
        }
    }

    /// The latest `consumed` record for `transactionId` dated up to `now` (one dated
    /// later has not happened yet, as a spend dated later does not count), else 0.
    static func recorded(_ transactionId: String, in state: CustomerState, now: Int64) -> ConsumptionShare {
        var latest: UsageFacts? = nil
        for usage in state.usages.values {
            guard case .consumed(let id, _) = usage.amount, id == transactionId, usage.at <= now else { continue }
            if let current = latest, !(current.at < usage.at || (current.at == usage.at && current.usageId.utf8Precedes(usage.usageId))) {
                continue
            }
            latest = usage
        }
        guard let latest, case .consumed(_, let share) = latest.amount else { return ConsumptionShare(percentage: 0, basis: .none) }
        return ConsumptionShare(percentage: min(max(share, 0), whole), basis: .recorded)
    }

    /// The window of the pass `transaction` as evaluation at `at` stacks it.
    static func passWindow(of transaction: TransactionFacts, in state: CustomerState, rules: Rules, at: Int64) -> PassWindow? {
        let passes = state.transactions.values.lazy.map(\.facts)
            .filter {
                $0.productId == transaction.productId && $0.purchaseDate <= max(at, transaction.purchaseDate)
                    && $0.evaluatedType(rules: rules) == .nonRenewing
            }
            .sorted(by: Evaluation.purchaseOrder)
        var stacker = PassStacker()
        for pass in passes {
            let window = stacker.window(for: pass, rule: rules.products[pass.productId], at: at)
            if pass.transactionId == transaction.transactionId { return window }
        }
        return nil
    }

    /// floor((at - start) x 100000 / (end - start)), within 0...100000.
    static func elapsedShare(of window: PassWindow, at: Int64) -> Int64 {
        if at <= window.start { return window.end <= window.start && at >= window.start ? whole : 0 }
        if at >= window.end { return whole }
        let elapsed = Int128(at) - Int128(window.start)
        let length = Int128(window.end) - Int128(window.start)
        return Int64(elapsed * Int128(whole) / length)
    }
}
