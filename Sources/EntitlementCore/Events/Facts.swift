/// The facts of a signed transaction that the reducers read: a compact,
/// rules-independent subset of ``TransactionPayload``.
public struct TransactionFacts: Sendable, Hashable {
    /// The fields, shared between copies until one is changed (see ``FactsStorage``).
    struct Fields: Sendable, Hashable {
        var transactionId: String
        var originalTransactionId: String
        var appTransactionId: String?
        var productId: String
        var subscriptionGroupIdentifier: String?
        var type: ProductType
        var purchaseDate: Int64
        var expiresDate: Int64?
        var quantity: Int64
        var signedDate: Int64
        var revocationDate: Int64?
        var revocationType: RevocationType?
        var revocationPercentage: Int64?
        var isUpgraded: Bool
        var ownership: OwnershipType?
        var appAccountToken: String?
        var originalPurchaseDate: Int64?
        var offerType: Int64?
        var offerDiscountType: String?
        var offerPeriod: String?
        var price: Int64?
        var currency: String?
        var extensions: TransactionExtensions?
        var receiptDigest: String?
        var webOrderLineItemId: String?
    }

    private(set) var storage: FactsStorage<Fields>

    public var transactionId: String {
        get { storage.fields.transactionId }
        set { storage = storage.changed { $0.transactionId = newValue } }
    }
    public var originalTransactionId: String {
        get { storage.fields.originalTransactionId }
        set { storage = storage.changed { $0.originalTransactionId = newValue } }
    }
    public var appTransactionId: String? {
        get { storage.fields.appTransactionId }
        set { storage = storage.changed { $0.appTransactionId = newValue } }
    }
    public var productId: String {
        get { storage.fields.productId }
        set { storage = storage.changed { $0.productId = newValue } }
    }
    public var subscriptionGroupIdentifier: String? {
        get { storage.fields.subscriptionGroupIdentifier }
        set { storage = storage.changed { $0.subscriptionGroupIdentifier = newValue } }
    }
    public var type: ProductType {
        get { storage.fields.type }
        set { storage = storage.changed { $0.type = newValue } }
    }
    public var purchaseDate: Int64 {
        get { storage.fields.purchaseDate }
        set { storage = storage.changed { $0.purchaseDate = newValue } }
    }
    public var expiresDate: Int64? {
        get { storage.fields.expiresDate }
        set { storage = storage.changed { $0.expiresDate = newValue } }
    }
    public var quantity: Int64 {
        get { storage.fields.quantity }
        set { storage = storage.changed { $0.quantity = newValue } }
    }
    public var signedDate: Int64 {
        get { storage.fields.signedDate }
        set { storage = storage.changed { $0.signedDate = newValue } }
    }
    public var revocationDate: Int64? {
        get { storage.fields.revocationDate }
        set { storage = storage.changed { $0.revocationDate = newValue } }
    }
    public var revocationType: RevocationType? {
        get { storage.fields.revocationType }
        set { storage = storage.changed { $0.revocationType = newValue } }
    }
    /// Thousandths of a percent (100000 = all).
    public var revocationPercentage: Int64? {
        get { storage.fields.revocationPercentage }
        set { storage = storage.changed { $0.revocationPercentage = newValue } }
    }
    public var isUpgraded: Bool {
        get { storage.fields.isUpgraded }
        set { storage = storage.changed { $0.isUpgraded = newValue } }
    }
    public var ownership: OwnershipType? {
        get { storage.fields.ownership }
        set { storage = storage.changed { $0.ownership = newValue } }
    }
    public var appAccountToken: String? {
        get { storage.fields.appAccountToken }
        set { storage = storage.changed { $0.appAccountToken = newValue } }
    }
    // Display facts (state format 3, event facts format 2): read by the
    // customer view, never by the decisions of section 5.
    /// The `originalPurchaseDate`, as signed.
    public var originalPurchaseDate: Int64? {
        get { storage.fields.originalPurchaseDate }
        set { storage = storage.changed { $0.originalPurchaseDate = newValue } }
    }
    /// Apple's `offerType`: 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    public var offerType: Int64? {
        get { storage.fields.offerType }
        set { storage = storage.changed { $0.offerType = newValue } }
    }
    /// Apple's `offerDiscountType`, e.g. `FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`.
    public var offerDiscountType: String? {
        get { storage.fields.offerDiscountType }
        set { storage = storage.changed { $0.offerDiscountType = newValue } }
    }
    /// The `offerPeriod` (ISO 8601 duration), as signed.
    public var offerPeriod: String? {
        get { storage.fields.offerPeriod }
        set { storage = storage.changed { $0.offerPeriod = newValue } }
    }
    /// The `price` in milliunits of ``currency``, as signed.
    public var price: Int64? {
        get { storage.fields.price }
        set { storage = storage.changed { $0.price = newValue } }
    }
    /// The ISO 4217 `currency` of ``price``.
    public var currency: String? {
        get { storage.fields.currency }
        set { storage = storage.changed { $0.currency = newValue } }
    }
    /// Apple's 2025–2026 additions (event facts format 3, state format 4), `nil` when none.
    public var extensions: TransactionExtensions? {
        get { storage.fields.extensions }
        set { storage = storage.changed { $0.extensions = newValue } }
    }
    /// For a transaction read from a legacy app receipt (specification section 16): the
    /// SHA-256 of that receipt, lowercase hex; `nil` for signed V2 data, which always
    /// wins over a receipt's version of the same transaction.
    public var receiptDigest: String? {
        get { storage.fields.receiptDigest }
        set { storage = storage.changed { $0.receiptDigest = newValue } }
    }
    /// The `web_order_line_item_id` of a receipt's entry.
    public var webOrderLineItemId: String? {
        get { storage.fields.webOrderLineItemId }
        set { storage = storage.changed { $0.webOrderLineItemId = newValue } }
    }

    public init(
        transactionId: String, originalTransactionId: String, appTransactionId: String? = nil, productId: String,
        subscriptionGroupIdentifier: String? = nil, type: ProductType, purchaseDate: Int64, expiresDate: Int64? = nil,
        quantity: Int64 = 1, signedDate: Int64, revocationDate: Int64? = nil, revocationType: RevocationType? = nil,
        revocationPercentage: Int64? = nil, isUpgraded: Bool = false, ownership: OwnershipType? = nil,
        appAccountToken: String? = nil, originalPurchaseDate: Int64? = nil, offerType: Int64? = nil,
        offerDiscountType: String? = nil, offerPeriod: String? = nil, price: Int64? = nil, currency: String? = nil,
        extensions: TransactionExtensions? = nil, receiptDigest: String? = nil, webOrderLineItemId: String? = nil
    ) {
        storage = FactsStorage(
            Fields(
                transactionId: transactionId, originalTransactionId: originalTransactionId,
                appTransactionId: appTransactionId, productId: productId,
                subscriptionGroupIdentifier: subscriptionGroupIdentifier, type: type, purchaseDate: purchaseDate,
                expiresDate: expiresDate, quantity: quantity, signedDate: signedDate, revocationDate: revocationDate,
                revocationType: revocationType, revocationPercentage: revocationPercentage, isUpgraded: isUpgraded,
                ownership: ownership, appAccountToken: appAccountToken, originalPurchaseDate: originalPurchaseDate,
                offerType: offerType, offerDiscountType: offerDiscountType, offerPeriod: offerPeriod, price: price,
                currency: currency, extensions: extensions, receiptDigest: receiptDigest,
                webOrderLineItemId: webOrderLineItemId))
    }

    public static func == (lhs: TransactionFacts, rhs: TransactionFacts) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(storage.fields) }

    /// Whether any display fact (written only by the newer formats) is present.
    var hasDisplayFacts: Bool {
        let stored = storage
        return stored.fields.originalPurchaseDate != nil || stored.fields.offerType != nil
            || stored.fields.offerDiscountType != nil || stored.fields.offerPeriod != nil || stored.fields.price != nil
            || stored.fields.currency != nil || stored.fields.receiptDigest != nil || stored.fields.webOrderLineItemId != nil
    }

    /// Whether ``extensions`` holds any (read in place, not copied).
    var hasExtensions: Bool { storage.fields.extensions != nil }

    /// The same facts without the display facts (as the first formats stored them; a
    /// receipt's facts need the newer formats and keep their receipt fields).
    var withoutDisplayFacts: TransactionFacts {
        var copy = self
        copy.storage = storage.changed {
            $0.originalPurchaseDate = nil
            $0.offerType = nil
            $0.offerDiscountType = nil
            $0.offerPeriod = nil
            $0.price = nil
            $0.currency = nil
            $0.extensions = nil
        }
        return copy
    }

    public init(_ p: __shared TransactionPayload) {
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
    /// The fields, shared between copies until one is changed (see ``FactsStorage``).
    struct Fields: Sendable, Hashable {
        var originalTransactionId: String
        var appTransactionId: String?
        var productId: String?
        var autoRenewProductId: String?
        var autoRenewStatus: Bool?
        var isInBillingRetryPeriod: Bool
        var gracePeriodExpiresDate: Int64?
        var expirationIntent: Int64?
        var signedDate: Int64
        var appAccountToken: String?
        var extensions: RenewalExtensions?
    }

    private(set) var storage: FactsStorage<Fields>

    public var originalTransactionId: String {
        get { storage.fields.originalTransactionId }
        set { storage = storage.changed { $0.originalTransactionId = newValue } }
    }
    public var appTransactionId: String? {
        get { storage.fields.appTransactionId }
        set { storage = storage.changed { $0.appTransactionId = newValue } }
    }
    public var productId: String? {
        get { storage.fields.productId }
        set { storage = storage.changed { $0.productId = newValue } }
    }
    public var autoRenewProductId: String? {
        get { storage.fields.autoRenewProductId }
        set { storage = storage.changed { $0.autoRenewProductId = newValue } }
    }
    public var autoRenewStatus: Bool? {
        get { storage.fields.autoRenewStatus }
        set { storage = storage.changed { $0.autoRenewStatus = newValue } }
    }
    public var isInBillingRetryPeriod: Bool {
        get { storage.fields.isInBillingRetryPeriod }
        set { storage = storage.changed { $0.isInBillingRetryPeriod = newValue } }
    }
    public var gracePeriodExpiresDate: Int64? {
        get { storage.fields.gracePeriodExpiresDate }
        set { storage = storage.changed { $0.gracePeriodExpiresDate = newValue } }
    }
    public var expirationIntent: Int64? {
        get { storage.fields.expirationIntent }
        set { storage = storage.changed { $0.expirationIntent = newValue } }
    }
    public var signedDate: Int64 {
        get { storage.fields.signedDate }
        set { storage = storage.changed { $0.signedDate = newValue } }
    }
    public var appAccountToken: String? {
        get { storage.fields.appAccountToken }
        set { storage = storage.changed { $0.appAccountToken = newValue } }
    }
    /// Fields of event facts format 3 (state format 4), `nil` when none.
    public var extensions: RenewalExtensions? {
        get { storage.fields.extensions }
        set { storage = storage.changed { $0.extensions = newValue } }
    }

    public init(
        originalTransactionId: String, appTransactionId: String? = nil, productId: String? = nil,
        autoRenewProductId: String? = nil, autoRenewStatus: Bool? = nil, isInBillingRetryPeriod: Bool = false,
        gracePeriodExpiresDate: Int64? = nil, expirationIntent: Int64? = nil, signedDate: Int64,
        appAccountToken: String? = nil, extensions: RenewalExtensions? = nil
    ) {
        storage = FactsStorage(
            Fields(
                originalTransactionId: originalTransactionId, appTransactionId: appTransactionId,
                productId: productId, autoRenewProductId: autoRenewProductId, autoRenewStatus: autoRenewStatus,
                isInBillingRetryPeriod: isInBillingRetryPeriod, gracePeriodExpiresDate: gracePeriodExpiresDate,
                expirationIntent: expirationIntent, signedDate: signedDate, appAccountToken: appAccountToken,
                extensions: extensions))
    }

    public static func == (lhs: RenewalFacts, rhs: RenewalFacts) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(storage.fields) }

    /// Whether ``extensions`` holds any (read in place, not copied).
    var hasExtensions: Bool { storage.fields.extensions != nil }

    public init(_ p: __shared RenewalInfoPayload) {
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
