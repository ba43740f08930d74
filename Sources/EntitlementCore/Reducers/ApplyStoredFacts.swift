/// Why an event's stored facts could not be applied.
public enum StoredFactsFailure: Error, Sendable, Hashable {
    /// The bytes are not facts this build reads (see ``EventCodec``).
    case undecodable(CodecError)
    /// A tie between two versions needs raw JWS (see ``MissingRawJWS``).
    case missingRawJWS(MissingRawJWS)
}

/// One event's stored facts among others in one buffer (a replay reads a customer's
/// events one after the other into one): its sequence number and where its bytes are.
public struct StoredFactsRow: Sendable, Hashable {
    public var seq: Int64
    /// The offset of its first byte in the buffer.
    public var start: Int
    /// How many bytes it has.
    public var count: Int

    public init(seq: Int64, start: Int, count: Int) {
        self.seq = seq
        self.start = start
        self.count = count
    }
}

/// Why the row at ``index`` of a customer's stored facts could not be applied.
public struct StoredFactsRowFailure: Error, Sendable, Hashable {
    /// The row's place in the rows given.
    public var index: Int
    public var failure: StoredFactsFailure

    public init(index: Int, failure: StoredFactsFailure) {
        self.index = index
        self.failure = failure
    }
}

extension CustomerState {
    /// Applies the event at `seq` whose stored facts are `bytes`: the same as
    /// decoding them with ``EventCodec/decode(_:seq:interner:)`` and calling
    /// ``apply(_:rules:)``, without building the ``Event`` in between (replay
    /// applies a million of them).
    ///
    /// The facts are decoded whole before anything is applied, so on any
    /// throw the state is exactly as it was.
    ///
    /// - Parameters:
    ///   - bytes: The facts, as ``EventCodec/encode(_:)`` wrote them.
    ///   - seq: The event's sequence number (its raws' ``RawRef``s point there).
    ///   - rules: The business rules (the state does not depend on them).
    ///   - interner: Shares the strings of the events one thread decodes.
    /// - Throws: ``StoredFactsFailure``.
    public mutating func apply(
        facts bytes: UnsafeRawBufferPointer, seq: Int64, rules: Rules, interner: inout StringInterner
    ) throws(StoredFactsFailure) {
        _ = rules
        if let notification = try applyStored(facts: bytes, seq: seq, interner: &interner) { keepIfLatest(notification) }
    }

    /// Applies each of `rows`, in order, whose facts are in `buffer`: the same as
    /// ``apply(facts:seq:rules:interner:)`` for each row, except that of the notifications
    /// only the latest is made into a ``NotificationSummaryFacts`` (a replay applies a
    /// customer's events in `seq` order, where each is usually the latest so far).
    ///
    /// On a throw the state is that of the rows before the one that failed.
    ///
    /// - Parameters:
    ///   - buffer: The rows' facts, each as ``EventCodec/encode(_:)`` wrote them.
    ///   - rows: Where each row's facts are in `buffer`, and its `seq`.
    ///   - rules: The business rules (the state does not depend on them).
    ///   - interner: Shares the strings of the events one thread decodes.
    /// - Throws: ``StoredFactsRowFailure``, naming the row.
    public mutating func apply(
        facts buffer: UnsafeRawBufferPointer, rows: [StoredFactsRow], rules: Rules, interner: inout StringInterner
    ) throws(StoredFactsRowFailure) {
        _ = rules
        var latest: StoredNotification? = nil
        defer { if let latest { keepIfLatest(latest) } }
        for (index, row) in rows.enumerated() {
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[row.start..<(row.start + row.count)])
            let notification: StoredNotification?
            do {
                notification = try applyStored(facts: bytes, seq: row.seq, interner: &interner)
            } catch {
                throw StoredFactsRowFailure(index: index, failure: error)
            }
            if let notification, latest.map({ notification.isLater(than: $0) }) ?? true { latest = notification }
        }
    }

    /// Applies the facts in `bytes` but for keeping the latest notification: the
    /// notification they hold, if any, is returned for the caller to keep
    /// (``keepIfLatest(_:)``), its UUID pointing into `bytes`.
    private mutating func applyStored(
        facts bytes: UnsafeRawBufferPointer, seq: Int64, interner: inout StringInterner
    ) throws(StoredFactsFailure) -> StoredNotification? {
        var transaction: Signed<TransactionFacts>? = nil
        var renewalInfo: Signed<RenewalFacts>? = nil
        var appTransaction: Signed<AppTransactionFacts>? = nil
        // A notification's UUID stays bytes: it is made into a `String` only when the
        // notification is kept (``keepIfLatest(_:)``).
        var summary: StoredNotification? = nil
        var environment: AppStoreEnvironment? = nil
        var usage: UsageFacts? = nil
        var record: OperatorRecord? = nil
        var receipt: ReceiptFacts? = nil
        do throws(CodecError) {
            try withUnsafeMutablePointer(to: &interner) { (pointer) throws(CodecError) in
                var reader = ByteReader(bytes, interner: pointer)
                let (kind, recorded) = try EventCodec.readHeader(&reader)
                environment = recorded
                switch kind {
                case .signed(.notification):
                    typealias F = FactsLayout.Notification
                    let flags = try reader.flags(known: F.known)
                    let uuid = try reader.fullStringBytes()
                    let type = try reader.notificationType()
                    let subtype = flags & F.subtype != 0 ? try reader.notificationSubtype() : nil
                    let signedDate = try reader.date()
                    if flags & F.appTransactionId != 0 { _ = try reader.string() }
                    if flags & F.transaction != 0 {
                        transaction = Signed(try reader.transactionFacts(), ref: RawRef(eventSeq: seq, slot: .nestedTransaction))
                    }
                    if flags & F.renewalInfo != 0 {
                        renewalInfo = Signed(
                            try reader.renewalFacts(sharing: transaction?.facts), ref: RawRef(eventSeq: seq, slot: .nestedRenewalInfo))
                    }
                    if flags & F.appTransaction != 0 {
                        appTransaction = Signed(try reader.appTransactionFacts(), ref: RawRef(eventSeq: seq, slot: .nestedAppTransaction))
                    }
                    summary = StoredNotification(uuid: uuid, type: type, subtype: subtype, signedDate: signedDate)
                case .signed(.transaction):
                    transaction = Signed(try reader.transactionFacts(), ref: RawRef(eventSeq: seq, slot: .own))
                case .signed(.renewalInfo):
                    renewalInfo = Signed(try reader.renewalFacts(), ref: RawRef(eventSeq: seq, slot: .own))
                case .signed(.appTransaction):
                    appTransaction = Signed(try reader.appTransactionFacts(), ref: RawRef(eventSeq: seq, slot: .own))
                case .signed(.receipt):
                    receipt = try reader.receiptFacts(seq: seq)
                case .operatorRecord(.usage):
                    usage = try reader.usageFacts()
                case .operatorRecord(.grant), .operatorRecord(.grantRevoked), .operatorRecord(.credit), .operatorRecord(.link):
                    record = try reader.operatorRecord()
                }
                try reader.finish()
            }
        } catch {
            throw .undecodable(error)
        }
        do {
            try applySigned(transaction: transaction, renewalInfo: renewalInfo, appTransaction: appTransaction)
            for entry in receipt?.transactions ?? [] { try applySigned(transaction: entry, renewalInfo: nil, appTransaction: nil) }
        } catch {
            throw .missingRawJWS(error)
        }
        if let summary { noteNeeds(of: summary) }
        environments.formUnion(EnvironmentSet(environment))
        if let usage { apply(usage: usage) }
        if let record { apply(operatorRecord: record) }
        return summary
    }
}
