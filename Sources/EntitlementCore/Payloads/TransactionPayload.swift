/// A decoded signed transaction (`JWSTransactionDecodedPayload`), with Apple's field names.
///
/// ``json`` keeps the whole payload, unknown fields included.
public struct TransactionPayload: Sendable, Hashable {
    public var json: JSONValue
    public var transactionId: String
    public var originalTransactionId: String
    public var webOrderLineItemId: String?
    public var bundleId: String
    public var productId: String
    public var subscriptionGroupIdentifier: String?
    public var purchaseDate: Int64
    public var originalPurchaseDate: Int64?
    public var expiresDate: Int64?
    public var quantity: Int64
    public var type: ProductType
    public var appAccountToken: String?
    public var inAppOwnershipType: OwnershipType?
    public var signedDate: Int64
    public var revocationReason: Int64?
    public var revocationDate: Int64?
    public var isUpgraded: Bool
    public var offerType: Int64?
    public var offerIdentifier: String?
    public var environment: String
    public var storefront: String?
    public var storefrontId: String?
    public var transactionReason: String?
    public var currency: String?
    public var price: Int64?
    public var offerDiscountType: String?
    public var appTransactionId: String?
    public var offerPeriod: String?
    public var revocationType: RevocationType?
    /// Share of the purchase revoked, in thousandths of a percent (100000 = all).
    /// A payload carrying whole-percent `refundPercentage` instead is read as that x 1000.
    public var revocationPercentage: Int64?
    /// `BILLED_UPFRONT`, `MONTHLY` (one month of a 12-month commitment), or a value
    /// Apple adds later, kept as signed.
    public var billingPlanType: String?
    /// The commitment this month belongs to, for `billingPlanType` `MONTHLY`.
    public var commitmentInfo: TransactionCommitmentInfo?
    /// The SKUs of a purchase made through the Advanced Commerce API.
    public var advancedCommerceInfo: AdvancedCommerceTransactionInfo?
    /// The `originalTransactionId` of the subscription this one was migrated from.
    public var previousOriginalTransactionId: String?

    public init(json: JSONValue) throws(PayloadDecodingError) {
        let r = try FieldReader(json)
        self.json = json
        transactionId = try r.requiredString("transactionId")
        originalTransactionId = try r.requiredString("originalTransactionId")
        webOrderLineItemId = try r.string("webOrderLineItemId")
        bundleId = try r.requiredString("bundleId")
        productId = try r.requiredString("productId")
        subscriptionGroupIdentifier = try r.string("subscriptionGroupIdentifier")
        purchaseDate = try r.requiredDate("purchaseDate")
        originalPurchaseDate = try r.date("originalPurchaseDate")
        expiresDate = try r.date("expiresDate")
        quantity = try r.int("quantity", in: 1...1_000_000) ?? 1
        type = ProductType(rawValue: try r.requiredString("type"))
        appAccountToken = try r.string("appAccountToken").flatMap { $0.isEmpty ? nil : $0 }
        inAppOwnershipType = try r.string("inAppOwnershipType").map(OwnershipType.init(rawValue:))
        signedDate = try r.requiredDate("signedDate")
        revocationReason = try r.int("revocationReason")
        revocationDate = try r.date("revocationDate")
        isUpgraded = try r.bool("isUpgraded") ?? false
        offerType = try r.int("offerType")
        offerIdentifier = try r.string("offerIdentifier")
        environment = try r.requiredString("environment")
        storefront = try r.string("storefront")
        storefrontId = try r.string("storefrontId")
        transactionReason = try r.string("transactionReason")
        currency = try r.string("currency")
        price = try r.int("price")
        offerDiscountType = try r.string("offerDiscountType")
        appTransactionId = try r.string("appTransactionId").flatMap { $0.isEmpty ? nil : $0 }
        offerPeriod = try r.string("offerPeriod")
        revocationType = try r.string("revocationType").map(RevocationType.init(rawValue:))
        if let permille = try r.int("revocationPercentage", in: 0...100_000) {
            revocationPercentage = permille
        } else if let percent = try r.int("refundPercentage", in: 0...100) {
            revocationPercentage = percent * 1000
        } else {
            revocationPercentage = nil
        }
        billingPlanType = try r.string("billingPlanType")
        commitmentInfo = try r.nested("commitmentInfo").map { reader throws(PayloadDecodingError) in
            try TransactionCommitmentInfo(reader)
        }
        advancedCommerceInfo = try r.nested("advancedCommerceInfo").map { reader throws(PayloadDecodingError) in
            try AdvancedCommerceTransactionInfo(reader)
        }
        previousOriginalTransactionId = try r.string("previousOriginalTransactionId").flatMap { $0.isEmpty ? nil : $0 }
    }
}
