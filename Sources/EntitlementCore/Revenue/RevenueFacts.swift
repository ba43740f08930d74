/// What one customer's data contributes to the revenue ledger and the metrics
/// (specification section 14), before any rate or rule is applied: a pure function of
/// the customer's data alone, so it can be kept per customer and recomputed only when
/// that customer's data changes. Rates, the commission program and the rules' billing
/// periods apply when the figures are read (``RevenueLedger``, ``MetricsAccumulator``).
public struct RevenueFacts: Sendable, Hashable {
    /// The customer (`appTransactionId`, or `otid:<originalTransactionId>`).
    public var customer: CustomerKey
    /// The ledger's lines of this customer, derived in the ledger's order (``LedgerEntry/precedes(_:_:)``); kept facts of older builds may hold them in any order.
    public var entries: [LedgerEntry]
    /// The Production auto-renewable subscriptions owned `PURCHASED`.
    public var subscriptions: [SubscriptionRevenueFacts]

    public init(customer: CustomerKey, entries: [LedgerEntry] = [], subscriptions: [SubscriptionRevenueFacts] = []) {
        self.customer = customer
        self.entries = entries
        self.subscriptions = subscriptions
    }
}

/// The type of a ledger line.
public enum LedgerEntryType: String, Sendable, Hashable, CaseIterable {
    case sale
    case refund
    case refundReversed = "refund_reversed"

    /// Order among lines at the same moment of the same transaction.
    var rank: Int {
        switch self {
        case .sale: return 0
        case .refund: return 1
        case .refundReversed: return 2
        }
    }
}

/// One line of the ledger in the transaction's own currency.
public struct LedgerEntry: Sendable, Hashable {
    public var at: Int64
    public var type: LedgerEntryType
    public var transactionId: String
    public var originalTransactionId: String
    public var productId: String
    /// ISO 4217 code of ``amount``.
    public var currency: String
    /// Milliunits of ``currency``: positive for a sale and a reversal, negative for a refund.
    public var amount: Int64
    /// An auto-renewable transaction bought 365 days or more after its subscription's
    /// first paid transaction (Apple keeps 15 % then).
    public var reducedCommission: Bool
    /// Where the transaction's latest version lives (its `storefront` is read from it).
    public var ref: RawRef

    public init(
        at: Int64, type: LedgerEntryType, transactionId: String, originalTransactionId: String, productId: String,
        currency: String, amount: Int64, reducedCommission: Bool, ref: RawRef
    ) {
        self.at = at
        self.type = type
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.currency = currency
        self.amount = amount
        self.reducedCommission = reducedCommission
        self.ref = ref
    }

    /// The ledger's order: `at`, then `transactionId`, then sale before refund before reversal.
    public static func precedes(_ lhs: LedgerEntry, _ rhs: LedgerEntry) -> Bool {
        if lhs.at != rhs.at { return lhs.at < rhs.at }
        if lhs.transactionId != rhs.transactionId { return transactionIdPrecedes(lhs.transactionId, rhs.transactionId) }
        return lhs.type.rank < rhs.type.rank
    }
}

/// One Production auto-renewable subscription owned `PURCHASED`: when it was active,
/// when it started, converted and expired.
public struct SubscriptionRevenueFacts: Sendable, Hashable {
    public var originalTransactionId: String
    /// The `purchaseDate` of its first transaction that is not a free trial.
    public var firstPaidAt: Int64?
    /// The `purchaseDate` of its first free-trial transaction.
    public var firstTrialAt: Int64?
    /// The spans in which its status was `active` or `grace_period`, ascending, not overlapping.
    public var activeSpans: [ActiveSpan]
    /// The `effectiveAt` of its RENEWAL and PRODUCT_CHANGE lifecycle events with `isTrialConversion`.
    public var trialConversions: [Int64]
    /// Its EXPIRATION lifecycle events: when, and whether the reason was `VOLUNTARY`.
    public var expirations: [Expiration]

    public struct Expiration: Sendable, Hashable {
        public var at: Int64
        public var voluntary: Bool
        public init(at: Int64, voluntary: Bool) {
            self.at = at
            self.voluntary = voluntary
        }
    }

    public init(
        originalTransactionId: String, firstPaidAt: Int64? = nil, firstTrialAt: Int64? = nil, activeSpans: [ActiveSpan] = [],
        trialConversions: [Int64] = [], expirations: [Expiration] = []
    ) {
        self.originalTransactionId = originalTransactionId
        self.firstPaidAt = firstPaidAt
        self.firstTrialAt = firstTrialAt
        self.activeSpans = activeSpans
        self.trialConversions = trialConversions
        self.expirations = expirations
    }
}

/// A span [``from``, ``to``) in which a subscription's status was `active` or
/// `grace_period` with one current transaction.
public struct ActiveSpan: Sendable, Hashable {
    public var from: Int64
    /// Exclusive; `Int64.max` when it lasts.
    public var to: Int64
    /// The current transaction is a free trial (`offerDiscountType` `FREE_TRIAL`).
    public var trial: Bool
    /// The current transaction's product.
    public var productId: String
    /// The current transaction's `price` (milliunits) and `currency`; `nil` when not signed.
    public var price: Int64?
    public var currency: String?
    /// The current transaction's `purchaseDate` (the day its price converts at).
    public var purchaseDate: Int64
    /// The current transaction's `expiresDate` - `purchaseDate`, when it has an expiry.
    public var duration: Int64?

    public init(
        from: Int64, to: Int64, trial: Bool, productId: String, price: Int64?, currency: String?, purchaseDate: Int64,
        duration: Int64?
    ) {
        self.from = from
        self.to = to
        self.trial = trial
        self.productId = productId
        self.price = price
        self.currency = currency
        self.purchaseDate = purchaseDate
        self.duration = duration
    }
}
