/// ``RevenueFacts`` in the engine's binary codec, as the store keeps them per customer.
public enum RevenueFactsCodec {
    /// The first byte of every encoding. 2: a month marked upgraded stays in the active
    /// spans until its upgrade is bought (facts kept under 1 are derived again).
    public static let formatVersion: UInt8 = 2

    public static func encode(_ facts: RevenueFacts) -> [UInt8] {
        var writer = ByteWriter(capacity: 64 + facts.entries.count * 48 + facts.subscriptions.count * 64)
        writer.byte(formatVersion)
        writer.string(facts.customer)
        writer.count(facts.entries.count)
        for entry in facts.entries {
            writer.byte(UInt8(entry.type.rank) | (entry.reducedCommission ? 0x10 : 0))
            writer.date(entry.at)
            writer.string(entry.transactionId)
            if entry.originalTransactionId == entry.transactionId {
                writer.byte(0)
            } else {
                writer.byte(1)
                writer.string(entry.originalTransactionId)
            }
            writer.string(entry.productId)
            writer.string(entry.currency)
            writer.int(entry.amount)
            writer.ref(entry.ref)
        }
        writer.count(facts.subscriptions.count)
        for subscription in facts.subscriptions {
            writer.string(subscription.originalTransactionId)
            optionalDate(&writer, subscription.firstPaidAt)
            optionalDate(&writer, subscription.firstTrialAt)
            writer.count(subscription.activeSpans.count)
            for span in subscription.activeSpans {
                writer.date(span.from)
                writer.date(span.to)
                writer.byte(span.trial ? 1 : 0)
                writer.string(span.productId)
                if let price = span.price {
                    writer.byte(1)
                    writer.int(price)
                } else {
                    writer.byte(0)
                }
                writer.string(span.currency ?? "")
                writer.date(span.purchaseDate)
                if let duration = span.duration {
                    writer.byte(1)
                    writer.int(duration)
                } else {
                    writer.byte(0)
                }
            }
            writer.count(subscription.trialConversions.count)
            for at in subscription.trialConversions { writer.date(at) }
            writer.count(subscription.expirations.count)
            for expiration in subscription.expirations {
                writer.date(expiration.at)
                writer.byte(expiration.voluntary ? 1 : 0)
            }
        }
        return writer.bytes
    }

    private static func optionalDate(_ writer: inout ByteWriter, _ value: Int64?) {
        if let value {
            writer.byte(1)
            writer.date(value)
        } else {
            writer.byte(0)
        }
    }

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(CodecError) -> RevenueFacts {
        var reader = ByteReader(bytes)
        let version = try reader.byte()
        guard version == formatVersion else {
            throw CodecError(code: .unsupportedVersion, offset: 0, message: "revenue facts format version \(version)")
        }
        var facts = RevenueFacts(customer: try reader.string())
        let entryCount = try reader.count()
        facts.entries.reserveCapacity(entryCount)
        for _ in 0..<entryCount {
            let tag = try reader.byte()
            let type: LedgerEntryType
            switch tag & 0x0F {
            case 0: type = .sale
            case 1: type = .refund
            case 2: type = .refundReversed
            default: throw reader.fail(.invalidTag, "unknown ledger line type \(tag & 0x0F)")
            }
            let at = try reader.date()
            let transactionId = try reader.string()
            let originalTransactionId = try reader.bool() ? try reader.string() : transactionId
            let productId = try reader.string()
            let currency = try reader.string()
            let amount = try reader.int()
            let ref = try reader.ref()
            facts.entries.append(
                LedgerEntry(
                    at: at, type: type, transactionId: transactionId, originalTransactionId: originalTransactionId,
                    productId: productId, currency: currency, amount: amount, reducedCommission: tag & 0x10 != 0, ref: ref))
        }
        let subscriptionCount = try reader.count()
        facts.subscriptions.reserveCapacity(subscriptionCount)
        for _ in 0..<subscriptionCount {
            var subscription = SubscriptionRevenueFacts(originalTransactionId: try reader.string())
            subscription.firstPaidAt = try reader.bool() ? try reader.date() : nil
            subscription.firstTrialAt = try reader.bool() ? try reader.date() : nil
            let spanCount = try reader.count()
            for _ in 0..<spanCount {
                let from = try reader.date()
                let to = try reader.date()
                let trial = try reader.bool()
                let productId = try reader.string()
                let price: Int64? = try reader.bool() ? try reader.int() : nil
                let currency = try reader.string()
                let purchaseDate = try reader.date()
                let duration: Int64? = try reader.bool() ? try reader.int() : nil
                subscription.activeSpans.append(
                    ActiveSpan(
                        from: from, to: to, trial: trial, productId: productId, price: price,
                        currency: currency.isEmpty ? nil : currency, purchaseDate: purchaseDate, duration: duration))
            }
            let conversionCount = try reader.count()
            for _ in 0..<conversionCount { subscription.trialConversions.append(try reader.date()) }
            let expirationCount = try reader.count()
            for _ in 0..<expirationCount {
                let at = try reader.date()
                subscription.expirations.append(.init(at: at, voluntary: try reader.bool()))
            }
            facts.subscriptions.append(subscription)
        }
        try reader.finish()
        return facts
    }

    public static func decode(_ bytes: [UInt8]) throws(CodecError) -> RevenueFacts {
        try withRawBytes(bytes) { buffer throws(CodecError) in try decode(buffer) }
    }
}
