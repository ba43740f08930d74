/// What one customer can use at a moment: the answer to a `query`
/// (specification section 6), computed by ``Evaluation/evaluate(_:rules:at:)``.
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
    public var environment: String?
    /// The newest AppTransaction's `originalPurchaseDate` (`nil` without one).
    public var originalPurchaseDate: Int64?
    /// The newest AppTransaction's `originalApplicationVersion` (`nil` without one).
    public var originalApplicationVersion: String?
    /// The newest AppTransaction's `originalPlatform` (`nil` without one).
    public var originalPlatform: String?
    /// When a parent withdrew consent (the first RESCIND_CONSENT's `signedDate`), if by ``at``.
    public var consentRescindedAt: Int64?

    /// A view with exactly these fields (``Evaluation/evaluate(_:rules:at:)`` makes them).
    public init(
        appTransactionId: CustomerKey, at: Int64, appAccountToken: String? = nil, entitlements: [EntitlementView] = [],
        subscriptions: [SubscriptionView] = [], purchases: [PurchaseView] = [], balances: [CurrencyBalance] = [],
        environment: String? = nil, originalPurchaseDate: Int64? = nil, originalApplicationVersion: String? = nil,
        originalPlatform: String? = nil, consentRescindedAt: Int64? = nil
    ) {
        self.originalPlatform = originalPlatform
        self.consentRescindedAt = consentRescindedAt
        self.environment = environment
        self.originalPurchaseDate = originalPurchaseDate
        self.originalApplicationVersion = originalApplicationVersion
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
    /// The product of the source that sets ``expiresDate`` (a non-consumable
    /// when one grants; among equal sources the smallest `productId`); `nil`
    /// when nothing grants it.
    public var productId: String?
    /// The operator's grant that sets ``expiresDate`` (specification section 13), `nil`
    /// when a purchase does or nothing grants.
    public var grantId: String?

    /// An entitlement with exactly these fields.
    public init(name: String, active: Bool, expiresDate: Int64?, productId: String? = nil, grantId: String? = nil) {
        self.name = name
        self.active = active
        self.expiresDate = expiresDate
        self.productId = productId
        self.grantId = grantId
    }

    /// What sets ``expiresDate``: `purchase`, `grant` (an operator's), `nil` when nothing grants.
    public var source: String? {
        guard active else { return nil }
        return grantId == nil ? "purchase" : "grant"
    }
}

/// The status of an auto-renewable subscription at a moment, in the order
/// they are decided (specification section 5).
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
    /// The `transactionId` of the current transaction (`transactionId` in the query JSON).
    public var currentTransactionId: String
    /// Whether the subscription grants its product's entitlements at the moment (not in the query JSON).
    public var grants: Bool
    /// The current transaction's `purchaseDate`.
    public var purchaseDate: Int64
    /// The current transaction's `originalPurchaseDate`.
    public var originalPurchaseDate: Int64?
    /// `trial` when the current transaction's `offerDiscountType` is `FREE_TRIAL`,
    /// else by its `offerType`: `intro`, `promotional`, `offer_code`, `win_back`, none `normal`.
    public var periodType: String
    /// The current transaction's `offerPeriod` (ISO 8601 duration, as signed).
    public var offerPeriod: String?
    /// `autoRenewStatus` is on and the status is active, grace period or billing retry.
    public var willRenew: Bool
    /// The current transaction's `revocationDate`, when at or before the moment.
    public var revocationDate: Int64?
    /// The current transaction's `price` (milliunits, as signed).
    public var price: Int64?
    /// The current transaction's `currency`.
    public var currency: String?
    /// When the standing renewal info says auto-renew is off: the `signedDate` of
    /// the earliest version in the unbroken run of versions saying so.
    public var unsubscribeDetectedAt: Int64?
    /// The same for `isInBillingRetryPeriod`.
    public var billingIssueDetectedAt: Int64?
    /// The current transaction's `billingPlanType` (`BILLED_UPFRONT`, `MONTHLY`, or as signed).
    public var billingPlanType: String?
    /// The 12-month commitment the current month belongs to, `nil` for another plan.
    public var commitment: CommitmentView?
    /// The standing renewal info's `expirationIntent`.
    public var expirationIntent: Int64?
    /// The standing renewal info's `priceIncreaseStatus`.
    public var priceIncreaseStatus: Int64?
    /// The standing renewal info's `renewalPrice` (milliunits).
    public var renewalPrice: Int64?
    /// The standing renewal info's `currency` (of ``renewalPrice``).
    public var renewalCurrency: String?
    /// The current transaction's `offerDiscountType`.
    public var offerDiscountType: String?
    /// The standing renewal info's `eligibleWinBackOfferIds`.
    public var eligibleWinBackOfferIds: [String]?
    /// The current transaction's Advanced Commerce items, `nil` for a purchase not
    /// made through the Advanced Commerce API (not in the query JSON).
    public var advancedCommerceItems: [AdvancedCommerceTransactionItem]?

    /// A subscription with exactly these fields.
    public init(
        originalTransactionId: String, productId: String, subscriptionGroupIdentifier: String?,
        status: SubscriptionStatus, expiresDate: Int64?, gracePeriodExpiresDate: Int64?, autoRenewStatus: Bool?,
        autoRenewProductId: String?, ownership: String?, revocationType: String?, currentTransactionId: String,
        grants: Bool, purchaseDate: Int64 = 0, originalPurchaseDate: Int64? = nil, periodType: String = "normal",
        offerPeriod: String? = nil, willRenew: Bool = false, revocationDate: Int64? = nil, price: Int64? = nil,
        currency: String? = nil, unsubscribeDetectedAt: Int64? = nil, billingIssueDetectedAt: Int64? = nil,
        billingPlanType: String? = nil, commitment: CommitmentView? = nil, expirationIntent: Int64? = nil,
        priceIncreaseStatus: Int64? = nil, renewalPrice: Int64? = nil, renewalCurrency: String? = nil,
        offerDiscountType: String? = nil, eligibleWinBackOfferIds: [String]? = nil,
        advancedCommerceItems: [AdvancedCommerceTransactionItem]? = nil
    ) {
        self.advancedCommerceItems = advancedCommerceItems
        self.billingPlanType = billingPlanType
        self.commitment = commitment
        self.expirationIntent = expirationIntent
        self.priceIncreaseStatus = priceIncreaseStatus
        self.renewalPrice = renewalPrice
        self.renewalCurrency = renewalCurrency
        self.offerDiscountType = offerDiscountType
        self.eligibleWinBackOfferIds = eligibleWinBackOfferIds
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.periodType = periodType
        self.offerPeriod = offerPeriod
        self.willRenew = willRenew
        self.revocationDate = revocationDate
        self.price = price
        self.currency = currency
        self.unsubscribeDetectedAt = unsubscribeDetectedAt
        self.billingIssueDetectedAt = billingIssueDetectedAt
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

/// The 12-month commitment a subscription's current month belongs to: from the
/// month's `commitmentInfo` and the standing renewal info's.
public struct CommitmentView: Sendable, Hashable {
    public var billingPeriodNumber: Int64?
    public var totalBillingPeriods: Int64?
    public var commitmentExpiresDate: Int64?
    public var commitmentPrice: Int64?
    /// `commitmentAutoRenewStatus`: whether the commitment renews into a new one.
    public var autoRenewStatus: Bool?
    /// `commitmentAutoRenewProductId`.
    public var autoRenewProductId: String?
    /// `commitmentRenewalDate`.
    public var renewalDate: Int64?
    /// `commitmentRenewalPrice`.
    public var renewalPrice: Int64?

    public init(
        billingPeriodNumber: Int64?, totalBillingPeriods: Int64?, commitmentExpiresDate: Int64?, commitmentPrice: Int64?,
        autoRenewStatus: Bool?, autoRenewProductId: String?, renewalDate: Int64?, renewalPrice: Int64?
    ) {
        self.billingPeriodNumber = billingPeriodNumber
        self.totalBillingPeriods = totalBillingPeriods
        self.commitmentExpiresDate = commitmentExpiresDate
        self.commitmentPrice = commitmentPrice
        self.autoRenewStatus = autoRenewStatus
        self.autoRenewProductId = autoRenewProductId
        self.renewalDate = renewalDate
        self.renewalPrice = renewalPrice
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
    /// The `purchaseDate`.
    public var purchaseDate: Int64
    /// The `revocationDate`, when at or before the moment.
    public var revocationDate: Int64?
    /// The `price` (milliunits, as signed).
    public var price: Int64?
    /// The `currency` of ``price``.
    public var currency: String?
    /// The transaction's Advanced Commerce items, `nil` for a purchase not made through
    /// the Advanced Commerce API (not in the query JSON).
    public var advancedCommerceItems: [AdvancedCommerceTransactionItem]?

    /// A purchase with exactly these fields.
    public init(
        transactionId: String, productId: String, type: String, quantity: Int64, revoked: Bool,
        revocationType: String?, revocationPercentage: Int64?, expiresDate: Int64?, startsDate: Int64? = nil,
        purchaseDate: Int64 = 0, revocationDate: Int64? = nil, price: Int64? = nil, currency: String? = nil,
        advancedCommerceItems: [AdvancedCommerceTransactionItem]? = nil
    ) {
        self.advancedCommerceItems = advancedCommerceItems
        self.purchaseDate = purchaseDate
        self.revocationDate = revocationDate
        self.price = price
        self.currency = currency
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
