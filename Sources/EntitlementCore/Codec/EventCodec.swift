/// A compact binary form of an event's facts, read back (a million times) on replay.
///
/// Raw JWS are not written (they stay in the log), nor are ``RawRef``s: they
/// are rebuilt from the event's `seq` and each object's place in the event.
/// Layout (format version 3; version 2 is the same without Apple's 2025–2026
/// additions, ``TransactionExtensions`` and the like; version 1 also without display facts):
///
/// ```
/// u8 version = 1, 2 or 3
/// u8 kind: 0 notification, 1 transaction, 2 renewalInfo, 3 appTransaction, 4 usage, 5 an operator record (its canonical JSON), in the low 4 bits;
///    the high 4 bits the environment: 0 not recorded, 1 Production, 2 Sandbox, 3 Xcode, 4 LocalTesting
/// notification: flags, string notificationUUID, type, [subtype], date signedDate,
///               [string appTransactionId], [transaction facts], [renewal facts], [app transaction facts]
/// otherwise:    the facts of that kind
/// ```
///
/// Decoding reads in place from an `UnsafeRawBufferPointer` (a SQLite blob,
/// say) and allocates nothing but the strings it returns.
public enum EventCodec {
    /// The format version written by this build for events that carry display
    /// facts (``TransactionFacts/price`` and the like: flag bits that format 1
    /// does not know). An event without any is written in format 1, byte for
    /// byte as earlier builds wrote it.
    public static let formatVersion: UInt8 = 2
    /// The first format: no display facts.
    public static let formatVersionWithoutDisplayFacts: UInt8 = 1
    /// The format of events that carry Apple's 2025–2026 additions
    /// (``TransactionExtensions``, ``RenewalExtensions``, `originalPlatform`). An
    /// event without any is written in format 2 or 1, as earlier builds wrote it.
    public static let formatVersionWithExtensions: UInt8 = 3
    /// The format of an operator's record (a grant, its revocation, a credit, a link):
    /// its fields (``FactsLayout/OperatorRecordFields``), where formats 1 to 3 kept its
    /// canonical JSON (the event's raw still is that JSON).
    public static let formatVersionWithOperatorFields: UInt8 = 4

    private enum KindCode {
        static let notification: UInt8 = 0
        static let transaction: UInt8 = 1
        static let renewalInfo: UInt8 = 2
        static let appTransaction: UInt8 = 3
        static let usage: UInt8 = 4
        static let operatorRecord: UInt8 = 5
        /// A legacy receipt's part (specification section 16); the codes below it are left
        /// to operator records.
        static let receipt: UInt8 = 12
    }

    /// The bytes of `event`'s facts (its `seq` and raws are not written).
    public static func encode(_ event: Event) -> [UInt8] { encode(event, operatorRecordsAsFields: true) }

    private static func encode(_ event: Event, operatorRecordsAsFields: Bool) -> [UInt8] {
        var writer = ByteWriter(capacity: 160)
        if case .operatorAction = event.body, operatorRecordsAsFields {
            writer.byte(formatVersionWithOperatorFields)
        } else {
            writer.byte(
                event.hasExtensions ? formatVersionWithExtensions : event.hasDisplayFacts ? formatVersion : formatVersionWithoutDisplayFacts)
        }
        switch event.body {
        case .notification(let notification):
            typealias F = FactsLayout.Notification
            writer.byte(KindCode.notification | environmentBits(event.environment))
            var flags: UInt64 = 0
            if notification.subtype != nil { flags |= F.subtype }
            if notification.appTransactionId != nil { flags |= F.appTransactionId }
            if notification.transaction != nil { flags |= F.transaction }
            if notification.renewalInfo != nil { flags |= F.renewalInfo }
            if notification.appTransaction != nil { flags |= F.appTransaction }
            writer.varint(flags)
            writer.string(notification.notificationUUID)
            writer.notificationType(notification.type)
            if let subtype = notification.subtype { writer.notificationSubtype(subtype) }
            writer.date(notification.signedDate)
            if let value = notification.appTransactionId { writer.string(value) }
            if let value = notification.transaction { writer.transactionFacts(value.facts) }
            if let value = notification.renewalInfo {
                writer.renewalFacts(value.facts, sharing: notification.transaction?.facts)
            }
            if let value = notification.appTransaction { writer.appTransactionFacts(value.facts) }
        case .transaction(let transaction):
            writer.byte(KindCode.transaction | environmentBits(event.environment))
            writer.transactionFacts(transaction.facts)
        case .renewalInfo(let renewalInfo):
            writer.byte(KindCode.renewalInfo | environmentBits(event.environment))
            writer.renewalFacts(renewalInfo.facts)
        case .appTransaction(let appTransaction):
            writer.byte(KindCode.appTransaction | environmentBits(event.environment))
            writer.appTransactionFacts(appTransaction.facts)
        case .receipt(let receipt):
            writer.byte(KindCode.receipt | environmentBits(event.environment))
            writer.receiptFacts(receipt)
        case .usage(let usage):
            writer.byte(KindCode.usage | environmentBits(event.environment))
            writer.usageFacts(usage)
        case .operatorAction(let record):
            writer.byte(KindCode.operatorRecord | environmentBits(event.environment))
            if operatorRecordsAsFields { writer.operatorRecordFields(record) } else { writer.operatorRecordJSON(record) }
        }
        return writer.bytes
    }

    /// The environment's code in the kind byte's high bits.
    static func environmentBits(_ environment: AppStoreEnvironment?) -> UInt8 {
        switch environment {
        case nil: return 0
        case .production?: return 1 << 4
        case .sandbox?: return 2 << 4
        case .xcode?: return 3 << 4
        case .localTesting?: return 4 << 4
        }
    }

    /// The event at `seq` whose facts are `bytes`, every `raw` `nil`.
    /// - Throws: ``CodecError`` for bytes that are truncated, corrupted, or of
    ///   another format version; never traps.
    public static func decode(_ bytes: UnsafeRawBufferPointer, seq: Int64) throws(CodecError) -> Event {
        try decode(bytes, seq: seq, sharing: nil)
    }

    /// The event at `seq` whose facts are `bytes`, every `raw` `nil`, its
    /// strings shared through `interner` with the events decoded before it
    /// (for decoding many events on one thread, as replay does).
    /// - Throws: ``CodecError``.
    public static func decode(
        _ bytes: UnsafeRawBufferPointer, seq: Int64, interner: inout StringInterner
    ) throws(CodecError) -> Event {
        let result: Result<Event, CodecError> = withUnsafeMutablePointer(to: &interner) { pointer in
            do throws(CodecError) { return .success(try decode(bytes, seq: seq, sharing: pointer)) } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private static func decode(
        _ bytes: UnsafeRawBufferPointer, seq: Int64, sharing interner: UnsafeMutablePointer<StringInterner>?
    ) throws(CodecError) -> Event {
        var reader = ByteReader(bytes, interner: interner)
        let (kind, environment) = try readHeader(&reader)
        let event: Event
        switch kind {
        case .signed(.notification):
            typealias F = FactsLayout.Notification
            let flags = try reader.flags(known: F.known)
            let uuid = try reader.string()
            let type = try reader.notificationType()
            let subtype = flags & F.subtype != 0 ? try reader.notificationSubtype() : nil
            let signedDate = try reader.date()
            let appTransactionId = flags & F.appTransactionId != 0 ? try reader.string() : nil
            let transaction = flags & F.transaction != 0 ? try reader.transactionFacts() : nil
            let renewalInfo = flags & F.renewalInfo != 0 ? try reader.renewalFacts(sharing: transaction) : nil
            let appTransaction = flags & F.appTransaction != 0 ? try reader.appTransactionFacts() : nil
            try reader.finish()
            event = Event(
                seq: seq,
                body: .notification(
                    NotificationFacts(
                        notificationUUID: uuid, type: type, subtype: subtype, signedDate: signedDate,
                        appTransactionId: appTransactionId,
                        transaction: transaction.map { Signed($0, ref: RawRef(eventSeq: seq, slot: .nestedTransaction)) },
                        renewalInfo: renewalInfo.map { Signed($0, ref: RawRef(eventSeq: seq, slot: .nestedRenewalInfo)) },
                        appTransaction: appTransaction.map {
                            Signed($0, ref: RawRef(eventSeq: seq, slot: .nestedAppTransaction))
                        })))
        case .signed(.transaction):
            let facts = try reader.transactionFacts()
            try reader.finish()
            event = Event(seq: seq, body: .transaction(Signed(facts, ref: RawRef(eventSeq: seq, slot: .own))))
        case .signed(.renewalInfo):
            let facts = try reader.renewalFacts()
            try reader.finish()
            event = Event(seq: seq, body: .renewalInfo(Signed(facts, ref: RawRef(eventSeq: seq, slot: .own))))
        case .signed(.appTransaction):
            let facts = try reader.appTransactionFacts()
            try reader.finish()
            event = Event(seq: seq, body: .appTransaction(Signed(facts, ref: RawRef(eventSeq: seq, slot: .own))))
        case .signed(.receipt):
            let facts = try reader.receiptFacts(seq: seq)
            try reader.finish()
            event = Event(seq: seq, body: .receipt(facts))
        case .operatorRecord(.usage):
            let facts = try reader.usageFacts()
            try reader.finish()
            event = Event(seq: seq, body: .usage(facts))
        case .operatorRecord:
            let record = try reader.operatorRecord()
            try reader.finish()
            event = Event(seq: seq, body: .operatorAction(record))
        }
        var decoded = event
        decoded.environment = environment
        return decoded
    }

    /// Reads the format version and the event's kind.
    static func readHeader(_ reader: inout ByteReader) throws(CodecError) -> (EventKind, AppStoreEnvironment?) {
        let version = try reader.byte()
        guard version >= formatVersionWithoutDisplayFacts, version <= formatVersionWithOperatorFields else {
            throw CodecError(code: .unsupportedVersion, offset: 0, message: "event format version \(version)")
        }
        reader.displayFacts = version >= formatVersion
        reader.extendedFacts = version >= formatVersionWithExtensions
        reader.operatorRecordsAsFields = version >= formatVersionWithOperatorFields
        let byte = try reader.byte()
        let environment: AppStoreEnvironment?
        switch byte >> 4 {
        case 0: environment = nil
        case 1: environment = .production
        case 2: environment = .sandbox
        case 3: environment = .xcode
        case 4: environment = .localTesting
        default: throw CodecError(code: .invalidTag, offset: 1, message: "unknown environment code \(byte >> 4)")
        }
        switch byte & 0x0F {
        case KindCode.notification: return (.signed(.notification), environment)
        case KindCode.transaction: return (.signed(.transaction), environment)
        case KindCode.renewalInfo: return (.signed(.renewalInfo), environment)
        case KindCode.appTransaction: return (.signed(.appTransaction), environment)
        case KindCode.usage: return (.operatorRecord(.usage), environment)
        // The record's own kind is in its JSON; `grant` stands for the family until it is read.
        case KindCode.operatorRecord: return (.operatorRecord(.grant), environment)
        case KindCode.receipt: return (.signed(.receipt), environment)
        default: throw CodecError(code: .invalidTag, offset: 1, message: "unknown event kind \(byte & 0x0F)")
        }
    }

    /// The format version of the stored facts `bytes` (their first byte), if any.
    public static func formatVersion(of bytes: UnsafeRawBufferPointer) -> UInt8? { bytes.first }

    /// The bytes of `event`'s facts as format `version` writes them: format 1
    /// leaves out the display facts, format 2 Apple's 2025–2026 additions, and formats
    /// 1 to 3 keep an operator's record as its canonical JSON (for comparing with facts
    /// an earlier build stored).
    public static func encode(_ event: Event, formatVersion version: UInt8) -> [UInt8] {
        let fields = version >= formatVersionWithOperatorFields
        switch version {
        case formatVersionWithoutDisplayFacts: return encode(event.withoutDisplayFacts, operatorRecordsAsFields: fields)
        case formatVersion: return encode(event.withoutExtensions, operatorRecordsAsFields: fields)
        default: return encode(event, operatorRecordsAsFields: fields)
        }
    }

    /// The event at `seq` whose facts are `bytes` (see the `UnsafeRawBufferPointer` overload).
    /// - Throws: ``CodecError``.
    public static func decode(_ bytes: [UInt8], seq: Int64) throws(CodecError) -> Event {
        try withRawBytes(bytes) { buffer throws(CodecError) in try decode(buffer, seq: seq) }
    }

    /// The event at `seq` whose facts are `bytes` (see the `UnsafeRawBufferPointer` overload).
    /// - Throws: ``CodecError``.
    public static func decode<Bytes: Collection>(_ bytes: Bytes, seq: Int64) throws(CodecError) -> Event
    where Bytes.Element == UInt8 {
        try withRawBytes(bytes) { buffer throws(CodecError) in try decode(buffer, seq: seq) }
    }
}

extension Event {
    /// Whether any of the event's signed objects carries display facts.
    var hasDisplayFacts: Bool {
        switch body {
        case .notification(let n):
            return n.transaction?.facts.hasDisplayFacts == true || n.appTransaction?.facts.hasDisplayFacts == true
        case .transaction(let t): return t.facts.hasDisplayFacts
        case .renewalInfo, .usage, .operatorAction: return false
        case .appTransaction(let a): return a.facts.hasDisplayFacts
        case .receipt: return true
        }
    }

    /// Whether any of the event's signed objects carries Apple's 2025–2026 additions.
    var hasExtensions: Bool {
        switch body {
        case .notification(let n):
            return n.transaction?.facts.extensions != nil || n.renewalInfo?.facts.extensions != nil
                || n.appTransaction?.facts.originalPlatform != nil
        case .transaction(let t): return t.facts.extensions != nil
        case .renewalInfo(let r): return r.facts.extensions != nil
        case .appTransaction(let a): return a.facts.originalPlatform != nil
        case .usage, .operatorAction, .receipt: return false
        }
    }

    /// The event without Apple's 2025–2026 additions, as builds before them stored it.
    var withoutExtensions: Event {
        mappingFacts(transaction: \.withoutExtensions, renewalInfo: \.withoutExtensions, appTransaction: \.withoutExtensions)
    }

    /// The event without display facts, as builds before them stored it.
    var withoutDisplayFacts: Event {
        mappingFacts(transaction: \.withoutDisplayFacts, renewalInfo: \.withoutExtensions, appTransaction: \.withoutDisplayFacts)
    }

    /// The event with each signed object's facts, nested ones included, passed through the given function.
    private func mappingFacts(
        transaction: (TransactionFacts) -> TransactionFacts, renewalInfo: (RenewalFacts) -> RenewalFacts,
        appTransaction: (AppTransactionFacts) -> AppTransactionFacts
    ) -> Event {
        var copy = self
        switch body {
        case .notification(var n):
            if let facts = n.transaction?.facts { n.transaction?.facts = transaction(facts) }
            if let facts = n.renewalInfo?.facts { n.renewalInfo?.facts = renewalInfo(facts) }
            if let facts = n.appTransaction?.facts { n.appTransaction?.facts = appTransaction(facts) }
            copy.body = .notification(n)
        case .transaction(var t):
            t.facts = transaction(t.facts)
            copy.body = .transaction(t)
        case .renewalInfo(var r):
            r.facts = renewalInfo(r.facts)
            copy.body = .renewalInfo(r)
        case .appTransaction(var a):
            a.facts = appTransaction(a.facts)
            copy.body = .appTransaction(a)
        case .usage, .operatorAction, .receipt:
            break
        }
        return copy
    }
}

extension ByteWriter {
    /// A receipt's part: flags (bit 0: an original transaction id follows), the digest, the
    /// creation date, then the count and each entry's transaction facts without the
    /// digest and with the creation date (both the part's).
    mutating func receiptFacts(_ facts: ReceiptFacts) {
        varint(facts.originalTransactionId != nil ? 1 : 0)
        string(facts.receiptDigest)
        date(facts.creationDate)
        if let value = facts.originalTransactionId { string(value) }
        varint(UInt64(facts.transactions.count))
        for transaction in facts.transactions {
            var entry = transaction.facts
            entry.receiptDigest = nil
            transactionFacts(entry)
        }
    }
}

extension ByteReader {
    mutating func receiptFacts(seq: Int64) throws(CodecError) -> ReceiptFacts {
        let start = offset
        let flags = try self.flags(known: 1)
        let digest = try string()
        let creationDate = try date()
        let originalTransactionId = flags & 1 != 0 ? try string() : nil
        let count = try varint()
        guard count <= UInt64(remaining) else {
            throw CodecError(code: .invalidTag, offset: start, message: "receipt entry count \(count) exceeds the bytes left")
        }
        var transactions: [Signed<TransactionFacts>] = []
        transactions.reserveCapacity(Int(count))
        for _ in 0..<count {
            var facts = try transactionFacts()
            facts.receiptDigest = digest
            transactions.append(Signed(facts, ref: RawRef(eventSeq: seq, slot: .own)))
        }
        return ReceiptFacts(
            receiptDigest: digest, creationDate: creationDate, originalTransactionId: originalTransactionId,
            transactions: transactions)
    }
}
