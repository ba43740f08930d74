/// What one customer can use at a moment: the answer to a `query`
/// (contract section 6), computed by ``Evaluation/evaluate(_:rules:at:)``.
public struct CustomerView: Sendable, Hashable {
    /// The customer's key: `appTransactionId`, or `otid:<originalTransactionId>`.
    public var appTransactionId: CustomerKey
    /// The moment evaluated, in milliseconds since 1970.
    public var at: Int64
    /// The `appAccountToken` of the latest-signed transaction or renewal info carrying one.
    public var appAccountToken: String?
    /// Every entitlement that a purchase counted at ``at`` maps to, sorted by name.
    public var entitlements: [EntitlementView]
    /// The auto-renewable subscriptions with a counted transaction, by `originalTransactionId`.
    public var subscriptions: [SubscriptionView]
    /// The other counted transactions, by `purchaseDate` then `transactionId`.
    public var purchases: [PurchaseView]
    /// Consumable balances, sorted by currency.
    public var balances: [CurrencyBalance]
    /// The environment the customer's data came from (`Production`, `Sandbox`,
    /// ...; several joined by commas), `nil` when no event recorded one.
    public var environment: String? = nil

    /// A view with exactly these fields (``Evaluation/evaluate(_:rules:at:)`` makes them).
    public init(
        appTransactionId: CustomerKey, at: Int64, appAccountToken: String? = nil, entitlements: [EntitlementView] = [],
        subscriptions: [SubscriptionView] = [], purchases: [PurchaseView] = [], balances: [CurrencyBalance] = []
    ) {
        self.appTransactionId = appTransactionId
        self.at = at
        self.appAccountToken = appAccountToken
        self.entitlements = entitlements
        self.subscriptions = subscriptions
        self.purchases = purchases
        self.balances = balances
    }

    /// The names of the entitlements active at ``at``, sorted: handy to
    /// compare two evaluations (a replay under new rules, for example).
    public var activeEntitlements: [String] {
        entitlements.filter(\.active).map(\.name)
    }

    /// The entitlement named `name`, if a counted purchase maps to it.
    public func entitlement(_ name: String) -> EntitlementView? {
        entitlements.first { $0.name == name }
    }

    /// The balance of `currency` (0 when no counted consumable credits it).
    public func balance(_ currency: String) -> Int64 {
        balances.first { $0.currency == currency }?.amount ?? 0
    }

    /// The subscription with `originalTransactionId`, if one has a counted transaction.
    public func subscription(_ originalTransactionId: String) -> SubscriptionView? {
        subscriptions.first { $0.originalTransactionId == originalTransactionId }
    }
}

/// One entitlement at a moment.
public struct EntitlementView: Sendable, Hashable {
    /// The entitlement, as the rules name it.
    public var name: String
    /// Whether some source grants it at the moment evaluated.
    public var active: Bool
    /// The latest expiry among the sources that grant it: a subscription's
    /// `expiresDate` (its `gracePeriodExpiresDate` while it grants in grace), a
    /// pass window's end. `nil` when a non-consumable grants it (no end), or
    /// when nothing grants it.
    public var expiresDate: Int64?

    /// An entitlement with exactly these fields.
    public init(name: String, active: Bool, expiresDate: Int64?) {
        self.name = name
        self.active = active
        self.expiresDate = expiresDate
    }
}

/// The status of an auto-renewable subscription at a moment, in the order
/// they are decided (contract section 5).
public enum SubscriptionStatus: String, Sendable, Hashable, CaseIterable {
    /// The current transaction was refunded or revoked at or before the moment.
    case revoked
    /// The current transaction's `expiresDate` is after the moment.
    case active
    /// Renewal failed and the billing grace period has not ended.
    case gracePeriod = "grace_period"
    /// Renewal failed; Apple keeps retrying.
    case billingRetry = "billing_retry"
    /// Nothing of the above.
    case expired
}

/// One auto-renewable subscription (one `originalTransactionId`) at a moment.
public struct SubscriptionView: Sendable, Hashable {
    /// The subscription: the `originalTransactionId` all its renewals share.
    public var originalTransactionId: String
    /// The current transaction's product.
    public var productId: String
    /// The current transaction's subscription group.
    public var subscriptionGroupIdentifier: String?
    /// The status at the moment evaluated.
    public var status: SubscriptionStatus
    /// The current transaction's `expiresDate`.
    public var expiresDate: Int64?
    /// The renewal info's `gracePeriodExpiresDate`.
    public var gracePeriodExpiresDate: Int64?
    /// The renewal info's `autoRenewStatus`.
    public var autoRenewStatus: Bool?
    /// The product the subscription renews to (differs from ``productId`` after a downgrade is scheduled).
    public var autoRenewProductId: String?
    /// `PURCHASED` or `FAMILY_SHARED`.
    public var ownership: String?
    /// The current transaction's `revocationType` when ``status`` is ``SubscriptionStatus/revoked``.
    public var revocationType: String?
    /// The `transactionId` of the current transaction (not in the query JSON).
    public var currentTransactionId: String
    /// Whether the subscription grants its product's entitlements at the moment (not in the query JSON).
    public var grants: Bool

    /// A subscription with exactly these fields.
    public init(
        originalTransactionId: String, productId: String, subscriptionGroupIdentifier: String?,
        status: SubscriptionStatus, expiresDate: Int64?, gracePeriodExpiresDate: Int64?, autoRenewStatus: Bool?,
        autoRenewProductId: String?, ownership: String?, revocationType: String?, currentTransactionId: String,
        grants: Bool
    ) {
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.status = status
        self.expiresDate = expiresDate
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.autoRenewStatus = autoRenewStatus
        self.autoRenewProductId = autoRenewProductId
        self.ownership = ownership
        self.revocationType = revocationType
        self.currentTransactionId = currentTransactionId
        self.grants = grants
    }
}

/// One counted transaction that is not an auto-renewable subscription:
/// consumable, non-consumable or non-renewing subscription (pass).
public struct PurchaseView: Sendable, Hashable {
    /// The transaction.
    public var transactionId: String
    /// The product bought.
    public var productId: String
    /// Apple's `type` string, e.g. `Non-Consumable`.
    public var type: String
    /// How many were bought in this transaction.
    public var quantity: Int64
    /// Whether its `revocationDate` is at or before the moment.
    public var revoked: Bool
    /// The `revocationType`, when revoked.
    public var revocationType: String?
    /// The `revocationPercentage` (thousandths of a percent), when revoked.
    public var revocationPercentage: Int64?
    /// For a pass: its window's end. Else `nil`.
    public var expiresDate: Int64?
    /// For a pass: its window's start (not in the query JSON).
    public var startsDate: Int64?

    /// A purchase with exactly these fields.
    public init(
        transactionId: String, productId: String, type: String, quantity: Int64, revoked: Bool,
        revocationType: String?, revocationPercentage: Int64?, expiresDate: Int64?, startsDate: Int64? = nil
    ) {
        self.transactionId = transactionId
        self.productId = productId
        self.type = type
        self.quantity = quantity
        self.revoked = revoked
        self.revocationType = revocationType
        self.revocationPercentage = revocationPercentage
        self.expiresDate = expiresDate
        self.startsDate = startsDate
    }
}

/// A consumable currency's balance.
public struct CurrencyBalance: Sendable, Hashable {
    /// The currency, as the rules name it (else the consumable's `productId`).
    public var currency: String
    /// Units granted by counted purchases, minus units revoked by the moment evaluated.
    public var amount: Int64

    /// A balance with exactly these fields.
    public init(currency: String, amount: Int64) {
        self.currency = currency
        self.amount = amount
    }
}
