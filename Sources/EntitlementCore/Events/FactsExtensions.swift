/// What a transaction carries of Apple's 2025–2026 additions (event facts format 3,
/// state format 4): the billing plan and 12-month commitment, the items of an
/// Advanced Commerce purchase, and the subscription a migrated one came from.
public struct TransactionExtensions: Sendable, Hashable {
    /// The fields, shared between copies until one is changed (see ``FactsStorage``).
    struct Fields: Sendable, Hashable {
        var billingPlanType: String?
        var commitment: TransactionCommitmentInfo?
        var previousOriginalTransactionId: String?
        var items: [AdvancedCommerceTransactionItem]?
    }

    private var storage: FactsStorage<Fields>

    /// `billingPlanType`, as signed (a value the engine does not know is kept).
    public var billingPlanType: String? {
        get { storage.fields.billingPlanType }
        set { storage = storage.changed { $0.billingPlanType = newValue } }
    }
    /// `commitmentInfo`: present for a month of a 12-month commitment.
    public var commitment: TransactionCommitmentInfo? {
        get { storage.fields.commitment }
        set { storage = storage.changed { $0.commitment = newValue } }
    }
    /// `previousOriginalTransactionId`.
    public var previousOriginalTransactionId: String? {
        get { storage.fields.previousOriginalTransactionId }
        set { storage = storage.changed { $0.previousOriginalTransactionId = newValue } }
    }
    /// `advancedCommerceInfo.items`; `nil` for a purchase not made through the Advanced Commerce API.
    public var items: [AdvancedCommerceTransactionItem]? {
        get { storage.fields.items }
        set { storage = storage.changed { $0.items = newValue } }
    }

    public init(
        billingPlanType: String? = nil, commitment: TransactionCommitmentInfo? = nil,
        previousOriginalTransactionId: String? = nil, items: [AdvancedCommerceTransactionItem]? = nil
    ) {
        storage = FactsStorage(
            Fields(
                billingPlanType: billingPlanType, commitment: commitment,
                previousOriginalTransactionId: previousOriginalTransactionId, items: items))
    }

    init(fields: Fields) { storage = FactsStorage(fields) }

    public static func == (lhs: TransactionExtensions, rhs: TransactionExtensions) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(storage.fields) }

    /// The extensions `payload` carries, `nil` when it carries none.
    init?(_ p: __shared TransactionPayload) {
        self.init(
            billingPlanType: p.billingPlanType, commitment: p.commitmentInfo,
            previousOriginalTransactionId: p.previousOriginalTransactionId, items: p.advancedCommerceInfo?.items)
        if isEmpty { return nil }
    }

    var isEmpty: Bool { billingPlanType == nil && commitment == nil && previousOriginalTransactionId == nil && items == nil }
}

/// What a renewal info carries beyond the facts of the first formats (event facts
/// format 3, state format 4): display fields of the view and the commitment's renewal.
public struct RenewalExtensions: Sendable, Hashable {
    /// The fields, shared between copies until one is changed (see ``FactsStorage``).
    struct Fields: Sendable, Hashable {
        var priceIncreaseStatus: Int64?
        var renewalPrice: Int64?
        var currency: String?
        var eligibleWinBackOfferIds: [String]?
        var renewalBillingPlanType: String?
        var commitment: RenewalCommitmentInfo?
        var previousOriginalTransactionId: String?
    }

    private var storage: FactsStorage<Fields>

    public var priceIncreaseStatus: Int64? {
        get { storage.fields.priceIncreaseStatus }
        set { storage = storage.changed { $0.priceIncreaseStatus = newValue } }
    }
    public var renewalPrice: Int64? {
        get { storage.fields.renewalPrice }
        set { storage = storage.changed { $0.renewalPrice = newValue } }
    }
    /// The renewal info's `currency` (of ``renewalPrice``).
    public var currency: String? {
        get { storage.fields.currency }
        set { storage = storage.changed { $0.currency = newValue } }
    }
    public var eligibleWinBackOfferIds: [String]? {
        get { storage.fields.eligibleWinBackOfferIds }
        set { storage = storage.changed { $0.eligibleWinBackOfferIds = newValue } }
    }
    /// `renewalBillingPlanType`, as signed.
    public var renewalBillingPlanType: String? {
        get { storage.fields.renewalBillingPlanType }
        set { storage = storage.changed { $0.renewalBillingPlanType = newValue } }
    }
    /// `commitmentInfo`.
    public var commitment: RenewalCommitmentInfo? {
        get { storage.fields.commitment }
        set { storage = storage.changed { $0.commitment = newValue } }
    }
    public var previousOriginalTransactionId: String? {
        get { storage.fields.previousOriginalTransactionId }
        set { storage = storage.changed { $0.previousOriginalTransactionId = newValue } }
    }

    public init(
        priceIncreaseStatus: Int64? = nil, renewalPrice: Int64? = nil, currency: String? = nil,
        eligibleWinBackOfferIds: [String]? = nil, renewalBillingPlanType: String? = nil,
        commitment: RenewalCommitmentInfo? = nil, previousOriginalTransactionId: String? = nil
    ) {
        storage = FactsStorage(
            Fields(
                priceIncreaseStatus: priceIncreaseStatus, renewalPrice: renewalPrice, currency: currency,
                eligibleWinBackOfferIds: eligibleWinBackOfferIds, renewalBillingPlanType: renewalBillingPlanType,
                commitment: commitment, previousOriginalTransactionId: previousOriginalTransactionId))
    }

    init(fields: Fields) { storage = FactsStorage(fields) }

    public static func == (lhs: RenewalExtensions, rhs: RenewalExtensions) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(storage.fields) }

    /// The extensions `payload` carries, `nil` when it carries none.
    init?(_ p: RenewalInfoPayload) {
        self.init(
            priceIncreaseStatus: p.priceIncreaseStatus, renewalPrice: p.renewalPrice, currency: p.currency,
            eligibleWinBackOfferIds: p.eligibleWinBackOfferIds, renewalBillingPlanType: p.renewalBillingPlanType,
            commitment: p.commitmentInfo, previousOriginalTransactionId: p.previousOriginalTransactionId)
        if isEmpty { return nil }
    }

    var isEmpty: Bool {
        priceIncreaseStatus == nil && renewalPrice == nil && currency == nil && eligibleWinBackOfferIds == nil
            && renewalBillingPlanType == nil && commitment == nil && previousOriginalTransactionId == nil
    }
}

extension TransactionFacts {
    /// Whether this transaction is one month of a 12-month commitment: `billingPlanType`
    /// `MONTHLY`, or a `commitmentInfo` without a billing plan.
    public var isCommitmentMonth: Bool {
        guard let extensions else { return false }
        if let plan = extensions.billingPlanType { return plan == "MONTHLY" }
        return extensions.commitment != nil
    }

    /// The same facts without the extensions (as formats before them stored them).
    var withoutExtensions: TransactionFacts {
        guard hasExtensions else { return self }
        var copy = self
        copy.extensions = nil
        return copy
    }
}

extension RenewalFacts {
    /// The renewal info's `commitmentInfo.commitmentAutoRenewStatus`, when it carries one.
    public var commitmentAutoRenewStatus: Bool? {
        extensions?.commitment?.commitmentAutoRenewStatus.map { $0 == 1 }
    }

    var withoutExtensions: RenewalFacts {
        guard hasExtensions else { return self }
        var copy = self
        copy.extensions = nil
        return copy
    }
}

extension AppTransactionFacts {
    var withoutExtensions: AppTransactionFacts {
        var copy = self
        copy.originalPlatform = nil
        return copy
    }
}
