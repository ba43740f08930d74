extension FactsLayout {
    /// A usage record: flags, string usageId, [string appTransactionId],
    /// [string originalTransactionId], date at, then string currency and int units
    /// (a spend) or string transactionId and int share (`consumed`).
    enum Usage {
        static let appTransactionId: UInt64 = 1 << 0
        static let originalTransactionId: UInt64 = 1 << 1
        /// A consumed share, not a spend.
        static let consumed: UInt64 = 1 << 2
        static let known: UInt64 = (1 << 3) - 1
    }
}

extension ByteWriter {
    mutating func usageFacts(_ facts: UsageFacts) {
        typealias F = FactsLayout.Usage
        var flags: UInt64 = 0
        if facts.appTransactionId != nil { flags |= F.appTransactionId }
        if facts.originalTransactionId != nil { flags |= F.originalTransactionId }
        if case .consumed = facts.amount { flags |= F.consumed }
        varint(flags)
        string(facts.usageId)
        if let value = facts.appTransactionId { string(value) }
        if let value = facts.originalTransactionId { string(value) }
        date(facts.at)
        switch facts.amount {
        case .spend(let currency, let units):
            string(currency)
            int(units)
        case .consumed(let transactionId, let share):
            string(transactionId)
            int(share)
        }
    }
}

extension ByteReader {
    mutating func usageFacts() throws(CodecError) -> UsageFacts {
        typealias F = FactsLayout.Usage
        let flags = try self.flags(known: F.known)
        let usageId = try string()
        let appTransactionId = flags & F.appTransactionId != 0 ? try string() : nil
        let originalTransactionId = flags & F.originalTransactionId != 0 ? try string() : nil
        let at = try date()
        let amount: UsageAmount
        if flags & F.consumed != 0 {
            let transactionId = try string()
            amount = .consumed(transactionId: transactionId, share: try int())
        } else {
            let currency = try string()
            amount = .spend(currency: currency, units: try int())
        }
        return UsageFacts(
            usageId: usageId, appTransactionId: appTransactionId, originalTransactionId: originalTransactionId, at: at,
            amount: amount)
    }
}
