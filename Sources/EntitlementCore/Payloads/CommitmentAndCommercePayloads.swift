/// `commitmentInfo` of a transaction: one month of a monthly subscription with a
/// 12-month commitment (`TransactionCommitmentInfo`).
public struct TransactionCommitmentInfo: Sendable, Hashable {
    /// Which month of the commitment this transaction pays for (1-based).
    public var billingPeriodNumber: Int64?
    /// How many months the commitment has.
    public var totalBillingPeriods: Int64?
    /// When the whole commitment ends (access still follows each month's `expiresDate`).
    public var commitmentExpiresDate: Int64?
    /// The price of the whole commitment, in milliunits.
    public var commitmentPrice: Int64?

    public init(
        billingPeriodNumber: Int64? = nil, totalBillingPeriods: Int64? = nil, commitmentExpiresDate: Int64? = nil,
        commitmentPrice: Int64? = nil
    ) {
        self.billingPeriodNumber = billingPeriodNumber
        self.totalBillingPeriods = totalBillingPeriods
        self.commitmentExpiresDate = commitmentExpiresDate
        self.commitmentPrice = commitmentPrice
    }

    init(_ r: FieldReader) throws(PayloadDecodingError) {
        billingPeriodNumber = try r.int("billingPeriodNumber")
        totalBillingPeriods = try r.int("totalBillingPeriods")
        commitmentExpiresDate = try r.date("commitmentExpiresDate")
        commitmentPrice = try r.int("commitmentPrice")
    }
}

/// `commitmentInfo` of a renewal info: what the commitment renews to (`RenewalCommitmentInfo`).
public struct RenewalCommitmentInfo: Sendable, Hashable {
    public var commitmentAutoRenewProductId: String?
    /// 1 when the commitment renews into a new one, 0 when the customer cancelled it.
    public var commitmentAutoRenewStatus: Int64?
    /// `BILLED_UPFRONT`, `MONTHLY`, or a value Apple adds later (kept as signed).
    public var commitmentRenewalBillingPlanType: String?
    public var commitmentRenewalDate: Int64?
    public var commitmentRenewalPrice: Int64?

    public init(
        commitmentAutoRenewProductId: String? = nil, commitmentAutoRenewStatus: Int64? = nil,
        commitmentRenewalBillingPlanType: String? = nil, commitmentRenewalDate: Int64? = nil, commitmentRenewalPrice: Int64? = nil
    ) {
        self.commitmentAutoRenewProductId = commitmentAutoRenewProductId
        self.commitmentAutoRenewStatus = commitmentAutoRenewStatus
        self.commitmentRenewalBillingPlanType = commitmentRenewalBillingPlanType
        self.commitmentRenewalDate = commitmentRenewalDate
        self.commitmentRenewalPrice = commitmentRenewalPrice
    }

    init(_ r: FieldReader) throws(PayloadDecodingError) {
        commitmentAutoRenewProductId = try r.string("commitmentAutoRenewProductId")
        commitmentAutoRenewStatus = try r.int("commitmentAutoRenewStatus", in: 0...1)
        commitmentRenewalBillingPlanType = try r.string("commitmentRenewalBillingPlanType")
        commitmentRenewalDate = try r.date("commitmentRenewalDate")
        commitmentRenewalPrice = try r.int("commitmentRenewalPrice")
    }
}

/// `advancedCommerceInfo` of a transaction bought through the Advanced Commerce API
/// (`AdvancedCommerceTransactionInfo`): the SKUs the app sold, each with its own refunds.
public struct AdvancedCommerceTransactionInfo: Sendable, Hashable {
    public var items: [AdvancedCommerceTransactionItem]
    /// The period the transaction pays for (`P1M`, ...), as signed.
    public var period: String?
    public var taxExclusivePrice: Int64?
    public var estimatedTax: Int64?
    public var requestReferenceId: String?

    init(_ r: FieldReader) throws(PayloadDecodingError) {
        var items: [AdvancedCommerceTransactionItem] = []
        for item in try r.objects("items") ?? [] { items.append(try AdvancedCommerceTransactionItem(item)) }
        self.items = items
        period = try r.string("period")
        taxExclusivePrice = try r.int("taxExclusivePrice")
        estimatedTax = try r.int("estimatedTax")
        requestReferenceId = try r.string("requestReferenceId")
    }
}

/// One item of an Advanced Commerce transaction (`AdvancedCommerceTransactionItem`).
public struct AdvancedCommerceTransactionItem: Sendable, Hashable {
    /// The app's own SKU (`SKU` in the payload).
    public var sku: String?
    public var price: Int64?
    /// When this item alone was revoked.
    public var revocationDate: Int64?
    public var refunds: [AdvancedCommerceRefund]

    public init(sku: String?, price: Int64? = nil, revocationDate: Int64? = nil, refunds: [AdvancedCommerceRefund] = []) {
        self.sku = sku
        self.price = price
        self.revocationDate = revocationDate
        self.refunds = refunds
    }

    init(_ r: FieldReader) throws(PayloadDecodingError) {
        sku = try r.string("SKU").flatMap { $0.isEmpty ? nil : $0 }
        price = try r.int("price")
        revocationDate = try r.date("revocationDate")
        var refunds: [AdvancedCommerceRefund] = []
        for refund in try r.objects("refunds") ?? [] { refunds.append(try AdvancedCommerceRefund(refund)) }
        self.refunds = refunds
    }
}

/// One refund of an Advanced Commerce item (`AdvancedCommerceRefund`).
public struct AdvancedCommerceRefund: Sendable, Hashable {
    /// `FULL`, `PRORATED`, `CUSTOM`, or a value Apple adds later (kept as signed).
    public var refundType: String?
    public var refundAmount: Int64?
    public var refundDate: Int64?
    public var refundReason: String?

    public init(refundType: String? = nil, refundAmount: Int64? = nil, refundDate: Int64? = nil, refundReason: String? = nil) {
        self.refundType = refundType
        self.refundAmount = refundAmount
        self.refundDate = refundDate
        self.refundReason = refundReason
    }

    init(_ r: FieldReader) throws(PayloadDecodingError) {
        refundType = try r.string("refundType")
        refundAmount = try r.int("refundAmount")
        refundDate = try r.date("refundDate")
        refundReason = try r.string("refundReason")
    }
}

/// `advancedCommerceInfo` of a renewal info (`AdvancedCommerceRenewalInfo`).
public struct AdvancedCommerceRenewalInfo: Sendable, Hashable {
    public var items: [AdvancedCommerceRenewalItem]
    public var period: String?
    public var requestReferenceId: String?
    public var consistencyToken: String?

    init(_ r: FieldReader) throws(PayloadDecodingError) {
        var items: [AdvancedCommerceRenewalItem] = []
        for item in try r.objects("items") ?? [] { items.append(try AdvancedCommerceRenewalItem(item)) }
        self.items = items
        period = try r.string("period")
        requestReferenceId = try r.string("requestReferenceId")
        consistencyToken = try r.string("consistencyToken")
    }
}

/// One item an Advanced Commerce subscription renews with (`AdvancedCommerceRenewalItem`).
public struct AdvancedCommerceRenewalItem: Sendable, Hashable {
    public var sku: String?
    public var price: Int64?
    /// `priceIncreaseInfo.status` (`PENDING`, `ACCEPTED`, `SCHEDULED`, ...), as signed.
    public var priceIncreaseStatus: String?
    /// `priceIncreaseInfo.price`.
    public var priceIncreasePrice: Int64?
    /// `priceIncreaseInfo.dependentSKUs`.
    public var dependentSKUs: [String]?

    init(_ r: FieldReader) throws(PayloadDecodingError) {
        sku = try r.string("SKU")
        price = try r.int("price")
        let increase = try r.nested("priceIncreaseInfo")
        priceIncreaseStatus = try increase?.string("status")
        priceIncreasePrice = try increase?.int("price")
        dependentSKUs = try increase?.stringArray("dependentSKUs")
    }
}
