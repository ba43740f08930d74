/// How each kind of facts is laid out in stored bytes.
///
/// Each record starts with a varint of flag bits saying which optional fields
/// follow (and holding the booleans); required fields come first, optional
/// ones after, in a fixed order. Unknown flag bits are refused on reading.
enum FactsLayout {
    enum Transaction {
        static let appTransactionId: UInt64 = 1 << 0
        static let subscriptionGroupIdentifier: UInt64 = 1 << 1
        static let expiresDate: UInt64 = 1 << 2
        static let revocationDate: UInt64 = 1 << 3
        static let revocationType: UInt64 = 1 << 4
        static let revocationPercentage: UInt64 = 1 << 5
        static let isUpgraded: UInt64 = 1 << 6
        static let ownership: UInt64 = 1 << 7
        static let appAccountToken: UInt64 = 1 << 8
        /// `originalTransactionId` equals `transactionId` and is not repeated.
        static let originalIsSelf: UInt64 = 1 << 9
        /// `quantity` is not 1 and follows.
        static let quantity: UInt64 = 1 << 10
        static let known: UInt64 = (1 << 11) - 1
        // Display facts (event facts format 2, state format 3).
        static let originalPurchaseDate: UInt64 = 1 << 11
        static let offerType: UInt64 = 1 << 12
        static let offerDiscountType: UInt64 = 1 << 13
        static let offerPeriod: UInt64 = 1 << 14
        static let price: UInt64 = 1 << 15
        static let currency: UInt64 = 1 << 16
        /// Apple's 2025–2026 additions follow (event facts format 3, state format 4).
        static let extensions: UInt64 = 1 << 17
        // A legacy receipt's facts (specification section 16): written only in the newer formats.
        static let receiptDigest: UInt64 = 1 << 18
        static let webOrderLineItemId: UInt64 = 1 << 19
        static let knownWithDisplay: UInt64 = ((1 << 17) - 1) | receiptDigest | webOrderLineItemId
        static let knownWithExtensions: UInt64 = (1 << 20) - 1
    }

    enum Renewal {
        static let appTransactionId: UInt64 = 1 << 0
        static let productId: UInt64 = 1 << 1
        static let autoRenewProductId: UInt64 = 1 << 2
        static let autoRenewStatusKnown: UInt64 = 1 << 3
        static let autoRenewStatus: UInt64 = 1 << 4
        static let isInBillingRetryPeriod: UInt64 = 1 << 5
        static let gracePeriodExpiresDate: UInt64 = 1 << 6
        static let expirationIntent: UInt64 = 1 << 7
        static let appAccountToken: UInt64 = 1 << 8
        /// `autoRenewProductId` equals `productId` and is not repeated.
        static let autoRenewIsProduct: UInt64 = 1 << 9
        // In a notification, fields equal to the nested transaction's are not
        // repeated (sharing the string saves an allocation on decoding).
        static let originalFromTransaction: UInt64 = 1 << 10
        static let productFromTransaction: UInt64 = 1 << 11
        static let appTransactionIdFromTransaction: UInt64 = 1 << 12
        static let tokenFromTransaction: UInt64 = 1 << 13
        static let shared: UInt64 = originalFromTransaction | productFromTransaction | appTransactionIdFromTransaction | tokenFromTransaction
        static let known: UInt64 = (1 << 14) - 1
        /// ``RenewalExtensions`` follow (event facts format 3, state format 4).
        static let extensions: UInt64 = 1 << 14
        static let knownWithExtensions: UInt64 = (1 << 15) - 1
    }

    enum AppTransaction {
        static let originalPurchaseDate: UInt64 = 1 << 0
        static let known: UInt64 = (1 << 1) - 1
        // Display facts (event facts format 2, state format 3).
        static let originalApplicationVersion: UInt64 = 1 << 1
        static let knownWithDisplay: UInt64 = (1 << 2) - 1
        // Event facts format 3, state format 4.
        static let originalPlatform: UInt64 = 1 << 2
        static let knownWithExtensions: UInt64 = (1 << 3) - 1
    }

    enum Notification {
        static let subtype: UInt64 = 1 << 0
        static let appTransactionId: UInt64 = 1 << 1
        static let transaction: UInt64 = 1 << 2
        static let renewalInfo: UInt64 = 1 << 3
        static let appTransaction: UInt64 = 1 << 4
        static let known: UInt64 = (1 << 5) - 1
    }
}

extension ByteWriter {
    mutating func transactionFacts(_ facts: TransactionFacts) {
        typealias F = FactsLayout.Transaction
        var flags: UInt64 = 0
        if facts.appTransactionId != nil { flags |= F.appTransactionId }
        if facts.subscriptionGroupIdentifier != nil { flags |= F.subscriptionGroupIdentifier }
        if facts.expiresDate != nil { flags |= F.expiresDate }
        if facts.revocationDate != nil { flags |= F.revocationDate }
        if facts.revocationType != nil { flags |= F.revocationType }
        if facts.revocationPercentage != nil { flags |= F.revocationPercentage }
        if facts.isUpgraded { flags |= F.isUpgraded }
        if facts.ownership != nil { flags |= F.ownership }
        if facts.appAccountToken != nil { flags |= F.appAccountToken }
        let originalIsSelf = facts.originalTransactionId == facts.transactionId
        if originalIsSelf { flags |= F.originalIsSelf }
        if facts.quantity != 1 { flags |= F.quantity }
        if facts.originalPurchaseDate != nil { flags |= F.originalPurchaseDate }
        if facts.offerType != nil { flags |= F.offerType }
        if facts.offerDiscountType != nil { flags |= F.offerDiscountType }
        if facts.offerPeriod != nil { flags |= F.offerPeriod }
        if facts.price != nil { flags |= F.price }
        if facts.currency != nil { flags |= F.currency }
        if facts.hasExtensions { flags |= F.extensions }
        if facts.receiptDigest != nil { flags |= F.receiptDigest }
        if facts.webOrderLineItemId != nil { flags |= F.webOrderLineItemId }
        varint(flags)
        string(facts.transactionId)
        if !originalIsSelf { string(facts.originalTransactionId, repeating: .originalTransactionId) }
        string(facts.productId, repeating: .productId)
        productType(facts.type)
        date(facts.purchaseDate)
        date(facts.signedDate)
        if facts.quantity != 1 { int(facts.quantity) }
        if let value = facts.appTransactionId { string(value, repeating: .appTransactionId) }
        if let value = facts.subscriptionGroupIdentifier { string(value, repeating: .subscriptionGroupIdentifier) }
        if let value = facts.expiresDate { date(value) }
        if let value = facts.revocationDate { date(value) }
        if let value = facts.revocationType { revocationType(value) }
        if let value = facts.revocationPercentage { int(value) }
        if let value = facts.ownership { ownership(value) }
        if let value = facts.appAccountToken { string(value, repeating: .appAccountToken) }
        if let value = facts.originalPurchaseDate { date(value) }
        if let value = facts.offerType { int(value) }
        if let value = facts.offerDiscountType { string(value) }
        if let value = facts.offerPeriod { string(value) }
        if let value = facts.price { int(value) }
        if let value = facts.currency { string(value, repeating: .currency) }
        if let value = facts.extensions { transactionExtensions(value) }
        if let value = facts.receiptDigest { string(value) }
        if let value = facts.webOrderLineItemId { string(value) }
    }

    /// - Parameter transaction: In a notification, the nested transaction,
    ///   whose equal fields are then not repeated.
    mutating func renewalFacts(_ facts: RenewalFacts, sharing transaction: TransactionFacts? = nil) {
        typealias F = FactsLayout.Renewal
        var flags: UInt64 = 0
        let originalShared = transaction?.originalTransactionId == facts.originalTransactionId
        let productShared = facts.productId != nil && transaction?.productId == facts.productId
        let appShared = facts.appTransactionId != nil && transaction?.appTransactionId == facts.appTransactionId
        let tokenShared = facts.appAccountToken != nil && transaction?.appAccountToken == facts.appAccountToken
        if originalShared { flags |= F.originalFromTransaction }
        if productShared { flags |= F.productFromTransaction } else if facts.productId != nil { flags |= F.productId }
        if appShared { flags |= F.appTransactionIdFromTransaction } else if facts.appTransactionId != nil { flags |= F.appTransactionId }
        if tokenShared { flags |= F.tokenFromTransaction } else if facts.appAccountToken != nil { flags |= F.appAccountToken }
        let autoRenewIsProduct = facts.autoRenewProductId != nil && facts.autoRenewProductId == facts.productId
        if autoRenewIsProduct { flags |= F.autoRenewIsProduct } else if facts.autoRenewProductId != nil { flags |= F.autoRenewProductId }
        if let status = facts.autoRenewStatus {
            flags |= F.autoRenewStatusKnown
            if status { flags |= F.autoRenewStatus }
        }
        if facts.isInBillingRetryPeriod { flags |= F.isInBillingRetryPeriod }
        if facts.gracePeriodExpiresDate != nil { flags |= F.gracePeriodExpiresDate }
        if facts.expirationIntent != nil { flags |= F.expirationIntent }
        if facts.hasExtensions { flags |= F.extensions }
        varint(flags)
        if !originalShared { string(facts.originalTransactionId, repeating: .renewalOriginalTransactionId) }
        date(facts.signedDate)
        if !appShared, let value = facts.appTransactionId { string(value, repeating: .renewalAppTransactionId) }
        if !productShared, let value = facts.productId { string(value, repeating: .renewalProductId) }
        if !autoRenewIsProduct, let value = facts.autoRenewProductId { string(value, repeating: .autoRenewProductId) }
        if let value = facts.gracePeriodExpiresDate { date(value) }
        if let value = facts.expirationIntent { int(value) }
        if !tokenShared, let value = facts.appAccountToken { string(value, repeating: .renewalAppAccountToken) }
        if let value = facts.extensions { renewalExtensions(value) }
    }

    mutating func appTransactionFacts(_ facts: AppTransactionFacts) {
        typealias F = FactsLayout.AppTransaction
        var flags: UInt64 = facts.originalPurchaseDate != nil ? F.originalPurchaseDate : 0
        if facts.originalApplicationVersion != nil { flags |= F.originalApplicationVersion }
        if facts.originalPlatform != nil { flags |= F.originalPlatform }
        varint(flags)
        string(facts.appTransactionId)
        date(facts.signedDate)
        if let value = facts.originalPurchaseDate { date(value) }
        if let value = facts.originalApplicationVersion { string(value) }
        if let value = facts.originalPlatform { string(value) }
    }
}

extension ByteReader {
    mutating func transactionFacts() throws(CodecError) -> TransactionFacts {
        typealias F = FactsLayout.Transaction
        let flags = try self.flags(known: extendedFacts ? F.knownWithExtensions : displayFacts ? F.knownWithDisplay : F.known)
        let transactionId = try string()
        let originalTransactionId = flags & F.originalIsSelf != 0 ? transactionId : try string()
        let productId = try string()
        let type = try productType()
        let purchaseDate = try date()
        let signedDate = try date()
        let quantity = flags & F.quantity != 0 ? try int() : 1
        let appTransactionId = flags & F.appTransactionId != 0 ? try string() : nil
        let subscriptionGroupIdentifier = flags & F.subscriptionGroupIdentifier != 0 ? try string() : nil
        let expiresDate = flags & F.expiresDate != 0 ? try date() : nil
        let revocationDate = flags & F.revocationDate != 0 ? try date() : nil
        let revocationType = flags & F.revocationType != 0 ? try revocationType() : nil
        let revocationPercentage = flags & F.revocationPercentage != 0 ? try int() : nil
        let ownership = flags & F.ownership != 0 ? try ownership() : nil
        let appAccountToken = flags & F.appAccountToken != 0 ? try string() : nil
        let originalPurchaseDate = flags & F.originalPurchaseDate != 0 ? try date() : nil
        let offerType = flags & F.offerType != 0 ? try int() : nil
        let offerDiscountType = flags & F.offerDiscountType != 0 ? try string() : nil
        let offerPeriod = flags & F.offerPeriod != 0 ? try string() : nil
        let price = flags & F.price != 0 ? try int() : nil
        let currency = flags & F.currency != 0 ? try string() : nil
        let extensions = flags & F.extensions != 0 ? try transactionExtensions() : nil
        let receiptDigest = flags & F.receiptDigest != 0 ? try string() : nil
        let webOrderLineItemId = flags & F.webOrderLineItemId != 0 ? try string() : nil
        return TransactionFacts(
            transactionId: transactionId, originalTransactionId: originalTransactionId,
            appTransactionId: appTransactionId, productId: productId,
            subscriptionGroupIdentifier: subscriptionGroupIdentifier, type: type, purchaseDate: purchaseDate,
            expiresDate: expiresDate, quantity: quantity, signedDate: signedDate, revocationDate: revocationDate,
            revocationType: revocationType, revocationPercentage: revocationPercentage,
            isUpgraded: flags & F.isUpgraded != 0, ownership: ownership, appAccountToken: appAccountToken,
            originalPurchaseDate: originalPurchaseDate, offerType: offerType, offerDiscountType: offerDiscountType,
            offerPeriod: offerPeriod, price: price, currency: currency, extensions: extensions,
            receiptDigest: receiptDigest, webOrderLineItemId: webOrderLineItemId)
    }

    /// - Parameter transaction: In a notification, the nested transaction
    ///   whose fields the renewal info may share.
    mutating func renewalFacts(sharing transaction: TransactionFacts? = nil) throws(CodecError) -> RenewalFacts {
        typealias F = FactsLayout.Renewal
        let start = offset
        let flags = try self.flags(known: extendedFacts ? F.knownWithExtensions : F.known)
        func contradiction() -> CodecError {
            CodecError(code: .invalidTag, offset: start, message: "renewal info flags contradict each other")
        }
        let shared = flags & F.shared
        if shared != 0 {
            guard let transaction else { throw contradiction() }
            if flags & F.productFromTransaction != 0, flags & F.productId != 0 { throw contradiction() }
            if flags & F.appTransactionIdFromTransaction != 0,
                flags & F.appTransactionId != 0 || transaction.appTransactionId == nil
            {
                throw contradiction()
            }
            if flags & F.tokenFromTransaction != 0, flags & F.appAccountToken != 0 || transaction.appAccountToken == nil {
                throw contradiction()
            }
        }
        let hasProduct = flags & (F.productId | F.productFromTransaction) != 0
        if flags & F.autoRenewIsProduct != 0, !hasProduct || flags & F.autoRenewProductId != 0 { throw contradiction() }
        if flags & F.autoRenewStatus != 0, flags & F.autoRenewStatusKnown == 0 { throw contradiction() }

        let originalTransactionId =
            flags & F.originalFromTransaction != 0 ? transaction!.originalTransactionId : try string()
        let signedDate = try date()
        let appTransactionId =
            flags & F.appTransactionIdFromTransaction != 0
            ? transaction!.appTransactionId : flags & F.appTransactionId != 0 ? try string() : nil
        let productId =
            flags & F.productFromTransaction != 0 ? transaction!.productId : flags & F.productId != 0 ? try string() : nil
        let autoRenewProductId =
            flags & F.autoRenewIsProduct != 0 ? productId : flags & F.autoRenewProductId != 0 ? try string() : nil
        let gracePeriodExpiresDate = flags & F.gracePeriodExpiresDate != 0 ? try date() : nil
        let expirationIntent = flags & F.expirationIntent != 0 ? try int() : nil
        let appAccountToken =
            flags & F.tokenFromTransaction != 0
            ? transaction!.appAccountToken : flags & F.appAccountToken != 0 ? try string() : nil
        let extensions = flags & F.extensions != 0 ? try renewalExtensions() : nil
        return RenewalFacts(
            originalTransactionId: originalTransactionId, appTransactionId: appTransactionId, productId: productId,
            autoRenewProductId: autoRenewProductId,
            autoRenewStatus: flags & F.autoRenewStatusKnown != 0 ? flags & F.autoRenewStatus != 0 : nil,
            isInBillingRetryPeriod: flags & F.isInBillingRetryPeriod != 0,
            gracePeriodExpiresDate: gracePeriodExpiresDate, expirationIntent: expirationIntent, signedDate: signedDate,
            appAccountToken: appAccountToken, extensions: extensions)
    }

    /// Reads past one renewal info record written without sharing (as in a
    /// stored state), building only its `originalTransactionId`.
    mutating func skipRenewalFacts() throws(CodecError) -> (
        originalTransactionId: String, signedDate: Int64, autoRenewOff: Bool, billingRetry: Bool
    ) {
        typealias F = FactsLayout.Renewal
        let start = offset
        let flags = try self.flags(known: extendedFacts ? F.knownWithExtensions : F.known)
        guard flags & F.shared == 0 else {
            throw CodecError(code: .invalidTag, offset: start, message: "renewal info flags contradict each other")
        }
        let originalTransactionId = try string()
        let signedDate = try date()
        if flags & F.appTransactionId != 0 { try skipString() }
        if flags & F.productId != 0 { try skipString() }
        if flags & F.autoRenewProductId != 0 { try skipString() }
        if flags & F.gracePeriodExpiresDate != 0 { _ = try date() }
        if flags & F.expirationIntent != 0 { _ = try int() }
        if flags & F.appAccountToken != 0 { try skipString() }
        if flags & F.extensions != 0 { try skipRenewalExtensions() }
        let autoRenewOff = flags & F.autoRenewStatusKnown != 0 && flags & F.autoRenewStatus == 0
        return (originalTransactionId, signedDate, autoRenewOff, flags & F.isInBillingRetryPeriod != 0)
    }

    mutating func appTransactionFacts() throws(CodecError) -> AppTransactionFacts {
        typealias F = FactsLayout.AppTransaction
        let flags = try self.flags(known: extendedFacts ? F.knownWithExtensions : displayFacts ? F.knownWithDisplay : F.known)
        let appTransactionId = try string()
        let signedDate = try date()
        let originalPurchaseDate = flags & F.originalPurchaseDate != 0 ? try date() : nil
        let originalApplicationVersion = flags & F.originalApplicationVersion != 0 ? try string() : nil
        let originalPlatform = flags & F.originalPlatform != 0 ? try string() : nil
        return AppTransactionFacts(
            appTransactionId: appTransactionId, originalPurchaseDate: originalPurchaseDate, signedDate: signedDate,
            originalApplicationVersion: originalApplicationVersion, originalPlatform: originalPlatform)
    }
}
