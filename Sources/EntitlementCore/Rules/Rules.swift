/// The business rules: which product grants what, and how billing states count.
///
/// Rules shape evaluation only; the log never depends on them, so changing
/// them and replaying rebuilds every customer's state.
public struct Rules: Sendable, Hashable {
    /// A label for this set of rules, recorded with every projection.
    public var version: String
    /// Whether a subscription in its billing grace period grants its entitlements.
    public var gracePeriodGrantsAccess: Bool
    /// Whether a subscription in billing retry (after grace) grants its entitlements.
    public var billingRetryGrantsAccess: Bool
    /// What each product grants, by `productId`.
    public var products: [String: ProductRule]
    /// What each Advanced Commerce SKU grants, by `SKU` (only `entitlements` is read).
    public var skus: [String: ProductRule]
    /// Whether a RESCIND_CONSENT (a parent withdrew consent) ends the customer's entitlements.
    public var consentRescindedRevokesAccess: Bool

    public init(
        version: String, gracePeriodGrantsAccess: Bool = true, billingRetryGrantsAccess: Bool = false,
        products: [String: ProductRule] = [:], skus: [String: ProductRule] = [:], consentRescindedRevokesAccess: Bool = false
    ) {
        self.version = version
        self.gracePeriodGrantsAccess = gracePeriodGrantsAccess
        self.billingRetryGrantsAccess = billingRetryGrantsAccess
        self.products = products
        self.skus = skus
        self.consentRescindedRevokesAccess = consentRescindedRevokesAccess
    }
}

/// What one product grants.
public struct ProductRule: Sendable, Hashable {
    /// Entitlements the product grants while it counts.
    public var entitlements: [String]
    /// For a non-renewing subscription: how long one purchase lasts.
    public var durationDays: Int64?
    /// For a consumable: the currency it credits.
    public var currency: String?
    /// For a consumable: units credited per quantity 1.
    public var units: Int64?
    /// For an auto-renewable subscription: its billing period, which `metrics` reads to
    /// turn a price into monthly recurring revenue (without it, the period is read from
    /// the transaction's `expiresDate` - `purchaseDate`).
    public var period: BillingPeriod?

    public init(
        entitlements: [String] = [], durationDays: Int64? = nil, currency: String? = nil, units: Int64? = nil,
        period: BillingPeriod? = nil
    ) {
        self.entitlements = entitlements
        self.durationDays = durationDays
        self.currency = currency
        self.units = units
        self.period = period
    }
}
