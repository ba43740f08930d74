/// Why an event's stored facts could not be applied.
public enum StoredFactsFailure: Error, Sendable, Hashable {
    /// The bytes are not facts this build reads (see ``EventCodec``).
    case undecodable(CodecError)
    /// A tie between two versions needs raw JWS (see ``MissingRawJWS``).
    case missingRawJWS(MissingRawJWS)
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
        var transaction: Signed<TransactionFacts>? = nil
        var renewalInfo: Signed<RenewalFacts>? = nil
        var appTransaction: Signed<AppTransactionFacts>? = nil
        // A notification's UUID stays bytes: it is made into a `String` only when the
        // notification is the latest so far (``noteNotification(uuid:type:subtype:signedDate:)``).
        var summary:
            (uuid: UnsafeRawBufferPointer, type: NotificationType, subtype: NotificationSubtype?, signedDate: Int64)? = nil
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
                    summary = (uuid, type, subtype, signedDate)
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
        if let summary {
            noteNotification(uuid: summary.uuid, type: summary.type, subtype: summary.subtype, signedDate: summary.signedDate)
        }
        environments.formUnion(EnvironmentSet(environment))
        if let usage { apply(usage: usage) }
        if let record { apply(operatorRecord: record) }
    }
}
