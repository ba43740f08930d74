/// The facts of a signed transaction that the reducers read: a compact,
/// rules-independent subset of ``TransactionPayload``.
public struct TransactionFacts: Sendable, Hashable {
    public var transactionId: String
    public var originalTransactionId: String
    public var appTransactionId: String?
    public var productId: String
    public var subscriptionGroupIdentifier: String?
    public var type: ProductType
    public var purchaseDate: Int64
    public var expiresDate: Int64?
    public var quantity: Int64
    public var signedDate: Int64
    public var revocationDate: Int64?
    public var revocationType: RevocationType?
    /// Thousandths of a percent (100000 = all).
    public var revocationPercentage: Int64?
    public var isUpgraded: Bool
    public var ownership: OwnershipType?
    public var appAccountToken: String?
    // Display facts (state format 3, event facts format 2): read by the
    // customer view, never by the decisions of section 5.
    /// The `originalPurchaseDate`, as signed.
    public var originalPurchaseDate: Int64?
    /// Apple's `offerType`: 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    public var offerType: Int64?
    /// Apple's `offerDiscountType`, e.g. `FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`.
    public var offerDiscountType: String?
    /// The `offerPeriod` (ISO 8601 duration), as signed.
    public var offerPeriod: String?
    /// The `price` in milliunits of ``currency``, as signed.
    public var price: Int64?
    /// The ISO 4217 `currency` of ``price``.
    public var currency: String?
    /// Apple's 2025–2026 additions (event facts format 3, state format 4), `nil` when none.
    public var extensions: TransactionExtensions?
    /// For a transaction read from a legacy app receipt (specification section 16): the
    /// SHA-256 of that receipt, lowercase hex; `nil` for signed V2 data, which always
    /// wins over a receipt's version of the same transaction.
    public var receiptDigest: String?
    /// The `web_order_line_item_id` of a receipt's entry.
    public var webOrderLineItemId: String?

    public init(
        transactionId: String, originalTransactionId: String, appTransactionId: String? = nil, productId: String,
        subscriptionGroupIdentifier: String? = nil, type: ProductType, purchaseDate: Int64, expiresDate: Int64? = nil,
        quantity: Int64 = 1, signedDate: Int64, revocationDate: Int64? = nil, revocationType: RevocationType? = nil,
        revocationPercentage: Int64? = nil, isUpgraded: Bool = false, ownership: OwnershipType? = nil,
        appAccountToken: String? = nil, originalPurchaseDate: Int64? = nil, offerType: Int64? = nil,
        offerDiscountType: String? = nil, offerPeriod: String? = nil, price: Int64? = nil, currency: String? = nil,
        extensions: TransactionExtensions? = nil, receiptDigest: String? = nil, webOrderLineItemId: String? = nil
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.appTransactionId = appTransactionId
        self.productId = productId
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.type = type
        self.purchaseDate = purchaseDate
        self.expiresDate = expiresDate
        self.quantity = quantity
        self.signedDate = signedDate
        self.revocationDate = revocationDate
        self.revocationType = revocationType
        self.revocationPercentage = revocationPercentage
        self.isUpgraded = isUpgraded
        self.ownership = ownership
        self.appAccountToken = appAccountToken
        self.originalPurchaseDate = originalPurchaseDate
        self.offerType = offerType
        self.offerDiscountType = offerDiscountType
        self.offerPeriod = offerPeriod
        self.price = price
        self.currency = currency
        self.extensions = extensions
        self.receiptDigest = receiptDigest
        self.webOrderLineItemId = webOrderLineItemId
    }

    /// Whether any display fact (written only by the newer formats) is present.
    var hasDisplayFacts: Bool {
        originalPurchaseDate != nil || offerType != nil || offerDiscountType != nil || offerPeriod != nil || price != nil
            || currency != nil || receiptDigest != nil || webOrderLineItemId != nil
    }

    /// The same facts without the display facts (as the first formats stored them; a
    /// receipt's facts need the newer formats and keep their receipt fields).
    var withoutDisplayFacts: TransactionFacts {
        var copy = self
        copy.originalPurchaseDate = nil
        copy.offerType = nil
        copy.offerDiscountType = nil
        copy.offerPeriod = nil
        copy.price = nil
        copy.currency = nil
        copy.extensions = nil
        return copy
    }

    public init(_ p: TransactionPayload) {
        self.init(
            transactionId: p.transactionId, originalTransactionId: p.originalTransactionId,
            appTransactionId: p.appTransactionId, productId: p.productId,
            subscriptionGroupIdentifier: p.subscriptionGroupIdentifier, type: p.type, purchaseDate: p.purchaseDate,
            expiresDate: p.expiresDate, quantity: p.quantity, signedDate: p.signedDate,
            revocationDate: p.revocationDate, revocationType: p.revocationType,
            revocationPercentage: p.revocationPercentage, isUpgraded: p.isUpgraded, ownership: p.inAppOwnershipType,
            appAccountToken: p.appAccountToken, originalPurchaseDate: p.originalPurchaseDate, offerType: p.offerType,
            offerDiscountType: p.offerDiscountType, offerPeriod: p.offerPeriod, price: p.price, currency: p.currency,
            extensions: TransactionExtensions(p))
    }
}

/// The facts of a signed renewal info that the reducers read.
public struct RenewalFacts: Sendable, Hashable {
    public var originalTransactionId: String
    public var appTransactionId: String?
    public var productId: String?
    public var autoRenewProductId: String?
    public var autoRenewStatus: Bool?
    public var isInBillingRetryPeriod: Bool
    public var gracePeriodExpiresDate: Int64?
    public var expirationIntent: Int64?
    public var signedDate: Int64
    public var appAccountToken: String?
    /// Fields of event facts format 3 (state format 4), `nil` when none.
    public var extensions: RenewalExtensions?

    public init(
        originalTransactionId: String, appTransactionId: String? = nil, productId: String? = nil,
        autoRenewProductId: String? = nil, autoRenewStatus: Bool? = nil, isInBillingRetryPeriod: Bool = false,
        gracePeriodExpiresDate: Int64? = nil, expirationIntent: Int64? = nil, signedDate: Int64,
        appAccountToken: String? = nil, extensions: RenewalExtensions? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.appTransactionId = appTransactionId
        self.productId = productId
        self.autoRenewProductId = autoRenewProductId
        self.autoRenewStatus = autoRenewStatus
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.expirationIntent = expirationIntent
        self.signedDate = signedDate
        self.appAccountToken = appAccountToken
        self.extensions = extensions
    }

    public init(_ p: RenewalInfoPayload) {
        self.init(
            originalTransactionId: p.originalTransactionId, appTransactionId: p.appTransactionId,
            productId: p.productId, autoRenewProductId: p.autoRenewProductId,
            autoRenewStatus: p.autoRenewStatus.map { $0 == 1 }, isInBillingRetryPeriod: p.isInBillingRetryPeriod ?? false,
            gracePeriodExpiresDate: p.gracePeriodExpiresDate, expirationIntent: p.expirationIntent,
            signedDate: p.signedDate, appAccountToken: p.appAccountToken, extensions: RenewalExtensions(p))
    }
}

/// The facts of a signed AppTransaction that the reducers read.
public struct AppTransactionFacts: Sendable, Hashable {
    public var appTransactionId: String
    public var originalPurchaseDate: Int64?
    /// `receiptCreationDate`: when the AppTransaction was signed.
    public var signedDate: Int64
    /// The `originalApplicationVersion` (a display fact, event facts format 2).
    public var originalApplicationVersion: String?
    /// The `originalPlatform` (event facts format 3, state format 4).
    public var originalPlatform: String?

    public init(
        appTransactionId: String, originalPurchaseDate: Int64? = nil, signedDate: Int64,
        originalApplicationVersion: String? = nil, originalPlatform: String? = nil
    ) {
        self.appTransactionId = appTransactionId
        self.originalPurchaseDate = originalPurchaseDate
        self.signedDate = signedDate
        self.originalApplicationVersion = originalApplicationVersion
        self.originalPlatform = originalPlatform
    }

    /// Whether any display fact is present.
    var hasDisplayFacts: Bool { originalApplicationVersion != nil || originalPlatform != nil }

    /// The same facts without the display facts.
    var withoutDisplayFacts: AppTransactionFacts {
        var copy = self
        copy.originalApplicationVersion = nil
        copy.originalPlatform = nil
        return copy
    }
}

/// The facts of a notification: its identity and type, and the facts of what it carries.
public struct NotificationFacts: Sendable, Hashable {
    public var notificationUUID: String
    public var type: NotificationType
    public var subtype: NotificationSubtype?
    public var signedDate: Int64
    /// `data.appTransactionId` when the notification has no transaction to key it by.
    public var appTransactionId: String?
    public var transaction: Signed<TransactionFacts>?
    public var renewalInfo: Signed<RenewalFacts>?
    public var appTransaction: Signed<AppTransactionFacts>?

    public init(
        notificationUUID: String, type: NotificationType, subtype: NotificationSubtype? = nil, signedDate: Int64,
        appTransactionId: String? = nil, transaction: Signed<TransactionFacts>? = nil,
        renewalInfo: Signed<RenewalFacts>? = nil, appTransaction: Signed<AppTransactionFacts>? = nil
    ) {
        self.notificationUUID = notificationUUID
        self.type = type
        self.subtype = subtype
        self.signedDate = signedDate
        self.appTransactionId = appTransactionId
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.appTransaction = appTransaction
    }
}
