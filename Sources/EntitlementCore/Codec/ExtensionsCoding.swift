/// How ``TransactionExtensions`` and ``RenewalExtensions`` are laid out: each a
/// varint of flag bits saying which fields follow, then those fields in a fixed
/// order. Written only in event facts format 3 and state format 4.
enum ExtensionsLayout {
    enum Transaction {
        static let billingPlanType: UInt64 = 1 << 0
        static let commitment: UInt64 = 1 << 1
        static let previousOriginalTransactionId: UInt64 = 1 << 2
        static let items: UInt64 = 1 << 3
        static let known: UInt64 = (1 << 4) - 1
    }

    enum Commitment {
        static let billingPeriodNumber: UInt64 = 1 << 0
        static let totalBillingPeriods: UInt64 = 1 << 1
        static let commitmentExpiresDate: UInt64 = 1 << 2
        static let commitmentPrice: UInt64 = 1 << 3
        static let known: UInt64 = (1 << 4) - 1
    }

    enum Item {
        static let sku: UInt64 = 1 << 0
        static let price: UInt64 = 1 << 1
        static let revocationDate: UInt64 = 1 << 2
        static let refunds: UInt64 = 1 << 3
        static let known: UInt64 = (1 << 4) - 1
    }

    enum Refund {
        static let refundType: UInt64 = 1 << 0
        static let refundAmount: UInt64 = 1 << 1
        static let refundDate: UInt64 = 1 << 2
        static let refundReason: UInt64 = 1 << 3
        static let known: UInt64 = (1 << 4) - 1
    }

    enum Renewal {
        static let priceIncreaseStatus: UInt64 = 1 << 0
        static let renewalPrice: UInt64 = 1 << 1
        static let currency: UInt64 = 1 << 2
        static let eligibleWinBackOfferIds: UInt64 = 1 << 3
        static let renewalBillingPlanType: UInt64 = 1 << 4
        static let commitment: UInt64 = 1 << 5
        static let previousOriginalTransactionId: UInt64 = 1 << 6
        static let known: UInt64 = (1 << 7) - 1
    }

    enum RenewalCommitment {
        static let autoRenewProductId: UInt64 = 1 << 0
        static let autoRenewStatusKnown: UInt64 = 1 << 1
        static let autoRenewStatus: UInt64 = 1 << 2
        static let renewalBillingPlanType: UInt64 = 1 << 3
        static let renewalDate: UInt64 = 1 << 4
        static let renewalPrice: UInt64 = 1 << 5
        static let known: UInt64 = (1 << 6) - 1
    }
}

extension ByteWriter {
    mutating func transactionExtensions(_ value: TransactionExtensions) {
        typealias F = ExtensionsLayout.Transaction
        var flags: UInt64 = 0
        if value.billingPlanType != nil { flags |= F.billingPlanType }
        if value.commitment != nil { flags |= F.commitment }
        if value.previousOriginalTransactionId != nil { flags |= F.previousOriginalTransactionId }
        if value.items != nil { flags |= F.items }
        varint(flags)
        if let text = value.billingPlanType { string(text) }
        if let commitment = value.commitment {
            typealias C = ExtensionsLayout.Commitment
            var bits: UInt64 = 0
            if commitment.billingPeriodNumber != nil { bits |= C.billingPeriodNumber }
            if commitment.totalBillingPeriods != nil { bits |= C.totalBillingPeriods }
            if commitment.commitmentExpiresDate != nil { bits |= C.commitmentExpiresDate }
            if commitment.commitmentPrice != nil { bits |= C.commitmentPrice }
            varint(bits)
            if let number = commitment.billingPeriodNumber { int(number) }
            if let number = commitment.totalBillingPeriods { int(number) }
            if let moment = commitment.commitmentExpiresDate { date(moment) }
            if let number = commitment.commitmentPrice { int(number) }
        }
        if let text = value.previousOriginalTransactionId { string(text) }
        if let items = value.items {
            count(items.count)
            for item in items { commerceItem(item) }
        }
    }

    private mutating func commerceItem(_ item: AdvancedCommerceTransactionItem) {
        typealias F = ExtensionsLayout.Item
        var flags: UInt64 = 0
        if item.sku != nil { flags |= F.sku }
        if item.price != nil { flags |= F.price }
        if item.revocationDate != nil { flags |= F.revocationDate }
        if !item.refunds.isEmpty { flags |= F.refunds }
        varint(flags)
        if let text = item.sku { string(text) }
        if let number = item.price { int(number) }
        if let moment = item.revocationDate { date(moment) }
        if !item.refunds.isEmpty {
            count(item.refunds.count)
            for refund in item.refunds {
                typealias R = ExtensionsLayout.Refund
                var bits: UInt64 = 0
                if refund.refundType != nil { bits |= R.refundType }
                if refund.refundAmount != nil { bits |= R.refundAmount }
                if refund.refundDate != nil { bits |= R.refundDate }
                if refund.refundReason != nil { bits |= R.refundReason }
                varint(bits)
                if let text = refund.refundType { string(text) }
                if let number = refund.refundAmount { int(number) }
                if let moment = refund.refundDate { date(moment) }
                if let text = refund.refundReason { string(text) }
            }
        }
    }

    mutating func renewalExtensions(_ value: RenewalExtensions) {
        typealias F = ExtensionsLayout.Renewal
        var flags: UInt64 = 0
        if value.priceIncreaseStatus != nil { flags |= F.priceIncreaseStatus }
        if value.renewalPrice != nil { flags |= F.renewalPrice }
        if value.currency != nil { flags |= F.currency }
        if value.eligibleWinBackOfferIds != nil { flags |= F.eligibleWinBackOfferIds }
        if value.renewalBillingPlanType != nil { flags |= F.renewalBillingPlanType }
        if value.commitment != nil { flags |= F.commitment }
        if value.previousOriginalTransactionId != nil { flags |= F.previousOriginalTransactionId }
        varint(flags)
        if let number = value.priceIncreaseStatus { int(number) }
        if let number = value.renewalPrice { int(number) }
        if let text = value.currency { string(text, repeating: .renewalCurrency) }
        if let ids = value.eligibleWinBackOfferIds {
            count(ids.count)
            for id in ids { string(id) }
        }
        if let text = value.renewalBillingPlanType { string(text) }
        if let commitment = value.commitment {
            typealias C = ExtensionsLayout.RenewalCommitment
            var bits: UInt64 = 0
            if commitment.commitmentAutoRenewProductId != nil { bits |= C.autoRenewProductId }
            if let status = commitment.commitmentAutoRenewStatus {
                bits |= C.autoRenewStatusKnown
                if status == 1 { bits |= C.autoRenewStatus }
            }
            if commitment.commitmentRenewalBillingPlanType != nil { bits |= C.renewalBillingPlanType }
            if commitment.commitmentRenewalDate != nil { bits |= C.renewalDate }
            if commitment.commitmentRenewalPrice != nil { bits |= C.renewalPrice }
            varint(bits)
            if let text = commitment.commitmentAutoRenewProductId { string(text) }
            if let text = commitment.commitmentRenewalBillingPlanType { string(text) }
            if let moment = commitment.commitmentRenewalDate { date(moment) }
            if let number = commitment.commitmentRenewalPrice { int(number) }
        }
        if let text = value.previousOriginalTransactionId { string(text) }
    }
}

extension ByteReader {
    mutating func transactionExtensions() throws(CodecError) -> TransactionExtensions {
        typealias F = ExtensionsLayout.Transaction
        let flags = try self.flags(known: F.known)
        // Fields first, stored once: each change of a stored value would make new storage.
        var value = TransactionExtensions.Fields()
        if flags & F.billingPlanType != 0 { value.billingPlanType = try string() }
        if flags & F.commitment != 0 {
            typealias C = ExtensionsLayout.Commitment
            let bits = try self.flags(known: C.known)
            var commitment = TransactionCommitmentInfo()
            if bits & C.billingPeriodNumber != 0 { commitment.billingPeriodNumber = try int() }
            if bits & C.totalBillingPeriods != 0 { commitment.totalBillingPeriods = try int() }
            if bits & C.commitmentExpiresDate != 0 { commitment.commitmentExpiresDate = try date() }
            if bits & C.commitmentPrice != 0 { commitment.commitmentPrice = try int() }
            value.commitment = commitment
        }
        if flags & F.previousOriginalTransactionId != 0 { value.previousOriginalTransactionId = try string() }
        if flags & F.items != 0 {
            let itemCount = try count()
            var items: [AdvancedCommerceTransactionItem] = []
            items.reserveCapacity(itemCount)
            for _ in 0..<itemCount { items.append(try commerceItem()) }
            value.items = items
        }
        return TransactionExtensions(fields: value)
    }

    private mutating func commerceItem() throws(CodecError) -> AdvancedCommerceTransactionItem {
        typealias F = ExtensionsLayout.Item
        let flags = try self.flags(known: F.known)
        var item = AdvancedCommerceTransactionItem(sku: nil)
        if flags & F.sku != 0 { item.sku = try string() }
        if flags & F.price != 0 { item.price = try int() }
        if flags & F.revocationDate != 0 { item.revocationDate = try date() }
        if flags & F.refunds != 0 {
            let start = offset
            let refundCount = try count()
            guard refundCount > 0 else { throw CodecError(code: .inconsistent, offset: start, message: "refunds flag without refunds") }
            for _ in 0..<refundCount {
                typealias R = ExtensionsLayout.Refund
                let bits = try self.flags(known: R.known)
                var refund = AdvancedCommerceRefund()
                if bits & R.refundType != 0 { refund.refundType = try string() }
                if bits & R.refundAmount != 0 { refund.refundAmount = try int() }
                if bits & R.refundDate != 0 { refund.refundDate = try date() }
                if bits & R.refundReason != 0 { refund.refundReason = try string() }
                item.refunds.append(refund)
            }
        }
        return item
    }

    mutating func renewalExtensions() throws(CodecError) -> RenewalExtensions {
        typealias F = ExtensionsLayout.Renewal
        let flags = try self.flags(known: F.known)
        // Fields first, stored once: each change of a stored value would make new storage.
        var value = RenewalExtensions.Fields()
        if flags & F.priceIncreaseStatus != 0 { value.priceIncreaseStatus = try int() }
        if flags & F.renewalPrice != 0 { value.renewalPrice = try int() }
        if flags & F.currency != 0 { value.currency = try string() }
        if flags & F.eligibleWinBackOfferIds != 0 {
            let idCount = try count()
            var ids: [String] = []
            ids.reserveCapacity(idCount)
            for _ in 0..<idCount { ids.append(try string()) }
            value.eligibleWinBackOfferIds = ids
        }
        if flags & F.renewalBillingPlanType != 0 { value.renewalBillingPlanType = try string() }
        if flags & F.commitment != 0 {
            typealias C = ExtensionsLayout.RenewalCommitment
            let bits = try renewalCommitmentFlags()
            var commitment = RenewalCommitmentInfo()
            if bits & C.autoRenewProductId != 0 { commitment.commitmentAutoRenewProductId = try string() }
            if bits & C.autoRenewStatusKnown != 0 { commitment.commitmentAutoRenewStatus = bits & C.autoRenewStatus != 0 ? 1 : 0 }
            if bits & C.renewalBillingPlanType != 0 { commitment.commitmentRenewalBillingPlanType = try string() }
            if bits & C.renewalDate != 0 { commitment.commitmentRenewalDate = try date() }
            if bits & C.renewalPrice != 0 { commitment.commitmentRenewalPrice = try int() }
            value.commitment = commitment
        }
        if flags & F.previousOriginalTransactionId != 0 { value.previousOriginalTransactionId = try string() }
        return RenewalExtensions(fields: value)
    }

    /// Reads past a renewal info's extensions as ``renewalExtensions()`` reads them, with the
    /// same checks, making none of their values (a version the query path reads past).
    mutating func skipRenewalExtensions() throws(CodecError) {
        typealias F = ExtensionsLayout.Renewal
        typealias C = ExtensionsLayout.RenewalCommitment
        let flags = try self.flags(known: F.known)
        if flags & F.priceIncreaseStatus != 0 { _ = try int() }
        if flags & F.renewalPrice != 0 { _ = try int() }
        if flags & F.currency != 0 { try skipString() }
        if flags & F.eligibleWinBackOfferIds != 0 {
            for _ in 0..<(try count()) { try skipString() }
        }
        if flags & F.renewalBillingPlanType != 0 { try skipString() }
        if flags & F.commitment != 0 {
            let bits = try renewalCommitmentFlags()
            if bits & C.autoRenewProductId != 0 { try skipString() }
            if bits & C.renewalBillingPlanType != 0 { try skipString() }
            if bits & C.renewalDate != 0 { _ = try date() }
            if bits & C.renewalPrice != 0 { _ = try int() }
        }
        if flags & F.previousOriginalTransactionId != 0 { try skipString() }
    }

    /// The flags of a renewal commitment, refused when they say the auto-renew status is
    /// on without saying it is known.
    private mutating func renewalCommitmentFlags() throws(CodecError) -> UInt64 {
        typealias C = ExtensionsLayout.RenewalCommitment
        let start = offset
        let bits = try self.flags(known: C.known)
        if bits & C.autoRenewStatus != 0, bits & C.autoRenewStatusKnown == 0 {
            throw CodecError(code: .invalidTag, offset: start, message: "commitment flags contradict each other")
        }
        return bits
    }
}
