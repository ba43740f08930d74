/// A decoded signed renewal info (`JWSRenewalInfoDecodedPayload`), with Apple's field names.
public struct RenewalInfoPayload: Sendable, Hashable {
    public var json: JSONValue
    public var expirationIntent: Int64?
    public var originalTransactionId: String
    public var autoRenewProductId: String?
    public var productId: String?
    /// 1 when the subscription renews automatically, 0 when the customer turned it off.
    public var autoRenewStatus: Int64?
    public var isInBillingRetryPeriod: Bool?
    public var priceIncreaseStatus: Int64?
    public var gracePeriodExpiresDate: Int64?
    public var offerType: Int64?
    public var offerIdentifier: String?
    public var signedDate: Int64
    public var environment: String
    public var recentSubscriptionStartDate: Int64?
    public var renewalDate: Int64?
    public var currency: String?
    public var renewalPrice: Int64?
    public var offerDiscountType: String?
    public var eligibleWinBackOfferIds: [String]?
    public var appTransactionId: String?
    public var offerPeriod: String?
    public var appAccountToken: String?
    /// The billing plan of the next period: `BILLED_UPFRONT`, `MONTHLY`, or a value Apple adds later.
    public var renewalBillingPlanType: String?
    /// What a 12-month commitment renews to, and whether it does.
    public var commitmentInfo: RenewalCommitmentInfo?
    /// The SKUs an Advanced Commerce subscription renews with.
    public var advancedCommerceInfo: AdvancedCommerceRenewalInfo?
    /// The `originalTransactionId` of the subscription this one was migrated from.
    public var previousOriginalTransactionId: String?

    public init(json: JSONValue) throws(PayloadDecodingError) {
        let r = try FieldReader(json)
        self.json = json
        expirationIntent = try r.int("expirationIntent")
        originalTransactionId = try r.requiredString("originalTransactionId")
        autoRenewProductId = try r.string("autoRenewProductId")
        productId = try r.string("productId")
        autoRenewStatus = try r.int("autoRenewStatus", in: 0...1)
        isInBillingRetryPeriod = try r.bool("isInBillingRetryPeriod")
        priceIncreaseStatus = try r.int("priceIncreaseStatus")
        gracePeriodExpiresDate = try r.date("gracePeriodExpiresDate")
        offerType = try r.int("offerType")
        offerIdentifier = try r.string("offerIdentifier")
        signedDate = try r.requiredDate("signedDate")
        environment = try r.requiredString("environment")
        recentSubscriptionStartDate = try r.date("recentSubscriptionStartDate")
        renewalDate = try r.date("renewalDate")
        currency = try r.string("currency")
        renewalPrice = try r.int("renewalPrice")
        offerDiscountType = try r.string("offerDiscountType")
        eligibleWinBackOfferIds = try r.stringArray("eligibleWinBackOfferIds")
        appTransactionId = try r.string("appTransactionId").flatMap { $0.isEmpty ? nil : $0 }
        offerPeriod = try r.string("offerPeriod")
        appAccountToken = try r.string("appAccountToken").flatMap { $0.isEmpty ? nil : $0 }
        renewalBillingPlanType = try r.string("renewalBillingPlanType")
        commitmentInfo = try r.nested("commitmentInfo").map { reader throws(PayloadDecodingError) in
            try RenewalCommitmentInfo(reader)
        }
        advancedCommerceInfo = try r.nested("advancedCommerceInfo").map { reader throws(PayloadDecodingError) in
            try AdvancedCommerceRenewalInfo(reader)
        }
        previousOriginalTransactionId = try r.string("previousOriginalTransactionId").flatMap { $0.isEmpty ? nil : $0 }
    }
}
