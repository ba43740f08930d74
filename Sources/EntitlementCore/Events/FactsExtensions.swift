/// What a transaction carries of Apple's 2025–2026 additions (event facts format 3,
/// state format 4): the billing plan and 12-month commitment, the items of an
/// Advanced Commerce purchase, and the subscription a migrated one came from.
public struct TransactionExtensions: Sendable, Hashable {
    /// `billingPlanType`, as signed (a value the engine does not know is kept).
    public var billingPlanType: String?
    /// `commitmentInfo`: present for a month of a 12-month commitment.
    public var commitment: TransactionCommitmentInfo?
    /// `previousOriginalTransactionId`.
    public var previousOriginalTransactionId: String?
    /// `advancedCommerceInfo.items`; `nil` for a purchase not made through the Advanced Commerce API.
    public var items: [AdvancedCommerceTransactionItem]?

    public init(
        billingPlanType: String? = nil, commitment: TransactionCommitmentInfo? = nil,
        previousOriginalTransactionId: String? = nil, items: [AdvancedCommerceTransactionItem]? = nil
    ) {
        self.billingPlanType = billingPlanType
        self.commitment = commitment
        self.previousOriginalTransactionId = previousOriginalTransactionId
        self.items = items
    }

    /// The extensions `payload` carries, `nil` when it carries none.
    init?(_ p: TransactionPayload) {
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
    public var priceIncreaseStatus: Int64?
    public var renewalPrice: Int64?
    /// The renewal info's `currency` (of ``renewalPrice``).
    public var currency: String?
    public var eligibleWinBackOfferIds: [String]?
    /// `renewalBillingPlanType`, as signed.
    public var renewalBillingPlanType: String?
    /// `commitmentInfo`.
    public var commitment: RenewalCommitmentInfo?
    public var previousOriginalTransactionId: String?

    public init(
        priceIncreaseStatus: Int64? = nil, renewalPrice: Int64? = nil, currency: String? = nil,
        eligibleWinBackOfferIds: [String]? = nil, renewalBillingPlanType: String? = nil,
        commitment: RenewalCommitmentInfo? = nil, previousOriginalTransactionId: String? = nil
    ) {
        self.priceIncreaseStatus = priceIncreaseStatus
        self.renewalPrice = renewalPrice
        self.currency = currency
        self.eligibleWinBackOfferIds = eligibleWinBackOfferIds
        self.renewalBillingPlanType = renewalBillingPlanType
        self.commitment = commitment
        self.previousOriginalTransactionId = previousOriginalTransactionId
    }

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
