/// What picks a subscription's current transaction, read from a stored
/// transaction without building its facts: enough to choose, among a
/// subscription's periods, the one whose whole facts an evaluation reads.
/// Its strings are numbers into the state's table, made only when needed
/// (``ByteReader/tableString(_:)``).
struct TransactionHead: SubscriptionPeriod {
    var transactionId: Int
    var originalTransactionId: Int
    var productId: Int
    var purchaseDate: Int64
    var expiresDate: Int64?
    var isUpgraded: Bool
    /// Where the transaction's record starts (its raw reference first), to read it whole later.
    var offset: Int
}

extension ByteReader {
    /// Reads past one stored transaction, with the checks ``transactionFacts()``
    /// makes, and returns its head, if it is a plain auto-renewable period: of
    /// type `Auto-Renewable Subscription`, without Apple's 2025–2026 additions
    /// (whose Advanced Commerce items name SKUs) and not read from a receipt
    /// (whose type the rules may change), in a format whose strings are numbers.
    /// Returns `nil` for any other transaction, leaving the reader where it was
    /// partway: the caller reads it whole from where it started.
    /// - Parameter start: The offset of the record (its raw reference), kept in the head.
    mutating func periodHead(start: Int) throws(CodecError) -> TransactionHead? {
        typealias F = FactsLayout.Transaction
        guard stringsAreNumbered else { return nil }
        let flags = try self.flags(known: extendedFacts ? F.knownWithExtensions : displayFacts ? F.knownWithDisplay : F.known)
        guard flags & (F.extensions | F.receiptDigest) == 0 else { return nil }
        let transactionId = try stringNumber()
        let originalTransactionId = flags & F.originalIsSelf != 0 ? transactionId : try stringNumber()
        let productId = try stringNumber()
        guard try productType() == .autoRenewable else { return nil }
        let purchaseDate = try date()
        _ = try date()  // signedDate
        if flags & F.quantity != 0 { _ = try int() }
        if flags & F.appTransactionId != 0 { try skipString() }
        if flags & F.subscriptionGroupIdentifier != 0 { try skipString() }
        let expiresDate = flags & F.expiresDate != 0 ? try date() : nil
        if flags & F.revocationDate != 0 { _ = try date() }
        if flags & F.revocationType != 0 { _ = try revocationType() }
        if flags & F.revocationPercentage != 0 { _ = try int() }
        if flags & F.ownership != 0 { _ = try ownership() }
        if flags & F.appAccountToken != 0 { try skipString() }
        if flags & F.originalPurchaseDate != 0 { _ = try date() }
        if flags & F.offerType != 0 { _ = try int() }
        if flags & F.offerDiscountType != 0 { try skipString() }
        if flags & F.offerPeriod != 0 { try skipString() }
        if flags & F.price != 0 { _ = try int() }
        if flags & F.currency != 0 { try skipString() }
        if flags & F.webOrderLineItemId != 0 { try skipString() }
        return TransactionHead(
            transactionId: transactionId, originalTransactionId: originalTransactionId, productId: productId,
            purchaseDate: purchaseDate, expiresDate: expiresDate, isUpgraded: flags & F.isUpgraded != 0, offset: start)
    }
}
