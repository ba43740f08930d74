/// The payload of a legacy PKCS#7 app receipt, decoded from Apple's ASN.1 receipt
/// format (specification section 16): the fields the engine reads.
public struct ReceiptPayload: Sendable, Hashable {
    /// Field 0, as signed: `Production`, `ProductionSandbox`, `Xcode`; `nil` when absent
    /// (the earliest receipts carry none).
    public var environmentName: String?
    /// Field 2: the app's bundle identifier.
    public var bundleId: String
    /// Field 3: the app version the receipt was made for.
    public var applicationVersion: String?
    /// Field 19: the version of the app first purchased.
    public var originalApplicationVersion: String?
    /// Field 12: when the receipt was created, in ms.
    public var creationDate: Int64
    /// Field 17, each: the in-app purchase entries, in the order signed.
    public var inApp: [ReceiptInAppEntry]

    public init(
        environmentName: String? = nil, bundleId: String, applicationVersion: String? = nil,
        originalApplicationVersion: String? = nil, creationDate: Int64, inApp: [ReceiptInAppEntry] = []
    ) {
        self.environmentName = environmentName
        self.bundleId = bundleId
        self.applicationVersion = applicationVersion
        self.originalApplicationVersion = originalApplicationVersion
        self.creationDate = creationDate
        self.inApp = inApp
    }

    /// The environment the receipt was signed for: `ProductionSandbox` is Sandbox, no
    /// field 0 is Production.
    public var environment: AppStoreEnvironment? {
        switch environmentName {
        case nil, "Production": return .production
        case "ProductionSandbox", "Sandbox": return .sandbox
        case "Xcode": return .xcode
        case let other?: return AppStoreEnvironment(rawValue: other)
        }
    }

    /// The receipt as JSON, with the names `verifyReceipt` used for its fields.
    public var json: JSONValue {
        var object = JSONObject()
        object["receipt_type"] = environmentName.map(JSONValue.string) ?? .null
        object["bundle_id"] = .string(bundleId)
        object["application_version"] = applicationVersion.map(JSONValue.string) ?? .null
        object["original_application_version"] = originalApplicationVersion.map(JSONValue.string) ?? .null
        object["receipt_creation_date_ms"] = .int(creationDate)
        object["in_app"] = .array(inApp.map(\.json))
        return .object(object)
    }
}

/// One in-app purchase entry of a receipt (field 17).
public struct ReceiptInAppEntry: Sendable, Hashable {
    /// Field 1701.
    public var quantity: Int64
    /// Field 1702.
    public var productId: String
    /// Field 1703.
    public var transactionId: String
    /// Field 1705.
    public var originalTransactionId: String
    /// Field 1704, in ms.
    public var purchaseDate: Int64
    /// Field 1706, in ms.
    public var originalPurchaseDate: Int64?
    /// Field 1708, in ms: auto-renewable subscriptions only.
    public var expiresDate: Int64?
    /// Field 1711.
    public var webOrderLineItemId: String?
    /// Field 1712, in ms: Apple support refunded the purchase.
    public var cancellationDate: Int64?
    /// Field 1713.
    public var isTrialPeriod: Bool
    /// Field 1719.
    public var isInIntroOfferPeriod: Bool

    public init(
        quantity: Int64 = 1, productId: String, transactionId: String, originalTransactionId: String, purchaseDate: Int64,
        originalPurchaseDate: Int64? = nil, expiresDate: Int64? = nil, webOrderLineItemId: String? = nil,
        cancellationDate: Int64? = nil, isTrialPeriod: Bool = false, isInIntroOfferPeriod: Bool = false
    ) {
        self.quantity = quantity
        self.productId = productId
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.webOrderLineItemId = webOrderLineItemId
        self.cancellationDate = cancellationDate
        self.isTrialPeriod = isTrialPeriod
        self.isInIntroOfferPeriod = isInIntroOfferPeriod
    }

    /// The entry as JSON, with `verifyReceipt`'s names.
    public var json: JSONValue {
        var object = JSONObject()
        object["quantity"] = .int(quantity)
        object["product_id"] = .string(productId)
        object["transaction_id"] = .string(transactionId)
        object["original_transaction_id"] = .string(originalTransactionId)
        object["purchase_date_ms"] = .int(purchaseDate)
        object["original_purchase_date_ms"] = originalPurchaseDate.map { .int($0) } ?? .null
        object["expires_date_ms"] = expiresDate.map { .int($0) } ?? .null
        object["web_order_line_item_id"] = webOrderLineItemId.map(JSONValue.string) ?? .null
        object["cancellation_date_ms"] = cancellationDate.map { .int($0) } ?? .null
        object["is_trial_period"] = .bool(isTrialPeriod)
        object["is_in_intro_offer_period"] = .bool(isInIntroOfferPeriod)
        return .object(object)
    }
}
