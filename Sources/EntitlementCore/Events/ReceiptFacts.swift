/// The facts of one `receipt` event: a verified legacy app receipt's entries under one
/// original transaction id (specification section 16), each a transaction fact.
public struct ReceiptFacts: Sendable, Hashable {
    /// The SHA-256 of the receipt's bytes, lowercase hex.
    public var receiptDigest: String
    /// The receipt's creation date: the `signedDate` of every fact it carries.
    public var creationDate: Int64
    /// The original transaction id of the entries (`nil` for a receipt without any).
    public var originalTransactionId: String?
    /// The entries, as transaction facts (``TransactionFacts/receiptDigest`` set), in the receipt's order.
    public var transactions: [Signed<TransactionFacts>]

    public init(
        receiptDigest: String, creationDate: Int64, originalTransactionId: String?, transactions: [Signed<TransactionFacts>]
    ) {
        self.receiptDigest = receiptDigest
        self.creationDate = creationDate
        self.originalTransactionId = originalTransactionId
        self.transactions = transactions
    }
}

extension TransactionFacts {
    /// The facts of a receipt's in-app entry: signed at the receipt's creation date; an
    /// entry with an expiry is an auto-renewable subscription, any other a one-time
    /// purchase (``Evaluation`` gives it the type its product's rule implies); a
    /// cancellation is a revocation; the trial flag is a free-trial introductory offer.
    public init(receiptEntry entry: ReceiptInAppEntry, receiptDigest: String, creationDate: Int64) {
        self.init(
            transactionId: entry.transactionId, originalTransactionId: entry.originalTransactionId,
            productId: entry.productId, type: entry.expiresDate != nil ? .autoRenewable : .nonConsumable,
            purchaseDate: entry.purchaseDate, expiresDate: entry.expiresDate, quantity: entry.quantity,
            signedDate: creationDate, revocationDate: entry.cancellationDate,
            originalPurchaseDate: entry.originalPurchaseDate,
            offerType: entry.isTrialPeriod || entry.isInIntroOfferPeriod ? 1 : nil,
            offerDiscountType: entry.isTrialPeriod ? "FREE_TRIAL" : nil, receiptDigest: receiptDigest,
            webOrderLineItemId: entry.webOrderLineItemId)
    }

    /// The type to evaluate this transaction as: a receipt's one-time purchase takes the
    /// type its product's rule implies (a `currency`: consumable; a `durationDays`:
    /// non-renewing), as receipts do not say; any other transaction its signed type.
    public func evaluatedType(rule: ProductRule?) -> ProductType {
        guard receiptDigest != nil, expiresDate == nil, let rule else { return type }
        if rule.durationDays != nil { return .nonRenewing }
        if rule.currency != nil { return .consumable }
        return type
    }

    /// ``evaluatedType(rule:)`` with the product's rule looked up in `rules` only where it
    /// can matter (a receipt's one-time purchase).
    public func evaluatedType(rules: Rules) -> ProductType {
        guard receiptDigest != nil, expiresDate == nil else { return type }
        return evaluatedType(rule: rules.products[productId])
    }
}
