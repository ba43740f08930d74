/// A compact, deterministic binary form of ``CustomerState``, for stored projections.
///
/// Equal states encode to equal bytes: transactions and renewal infos are
/// written sorted by id, and every version's ``RawRef`` is written (raws are
/// not: they stay in the log). Decoding a state therefore gives it back with
/// every `raw` `nil`. Layout (format version 3; version 2 is the same without
/// display facts, and is still written for a state that holds none, so that
/// states built before display facts keep their bytes; version 4 adds Apple's
/// 2025–2026 additions and is written only for a state that holds some; version 5
/// is version 4 with each operator record written field by field instead of as its
/// canonical JSON, and is written for every state that holds operator records, so
/// that a query of such a customer parses no JSON):
///
/// ```
/// u8 version = 5, 4, 3 or 2
/// count, then each distinct string once (byte count, UTF-8), in order of first use
/// string key
/// count, then per transaction (sorted by transactionId): ref, transaction facts
/// count, then per originalTransactionId (sorted): count, then per version (ascending signedDate): ref, renewal facts
/// u8 flags: 1 appTransaction, 2 accountToken, 4 lastNotification, 8 its subtype, 16 environments, 32 usages,
///    64 operator records, 128 consentRescindedAt (format 4)
/// [ref, app transaction facts] [string token, date signedDate, ref] [string uuid, type, [subtype], date signedDate]
/// [u8 environments (``EnvironmentSet``)] [count, then per usage record (sorted by usageId): usage facts]
/// [count, then per operator record (sorted by identity): its fields (format 5), or its canonical JSON as a string]
/// [date consentRescindedAt]
/// [u8 eventNeeds (``EventNeeds``)]
/// ```
///
/// The last byte, ``CustomerState/eventNeeds``, is absent from a state stored by a
/// build that did not keep it: such a state decodes with `eventNeeds` `nil` (unknown).
///
/// After the table, every string is its number in the table: a customer's ten
/// transactions repeat the same product, app transaction id and token, which
/// are then stored once and decoded into one shared `String`. Format 1 (the
/// same without the table, every string written in full) is still read.
///
/// Integers are LEB128 varints (signed ones zigzag), dates 8 bytes
/// little-endian, strings a byte count and UTF-8. The dictionary keys are not written: a transaction is keyed by its
/// `transactionId` and renewal versions by their `originalTransactionId`, as
/// the reducer keys them.
public enum StateCodec {
    /// The format version written by this build for a state with display facts (the first byte).
    public static let formatVersion: UInt8 = 3
    /// The format without display facts (still written for a state that has none).
    static let formatVersionWithoutDisplayFacts: UInt8 = 2
    /// The first format: strings written in full where they occur.
    static let formatVersionWithoutTable: UInt8 = 1
    /// The format of a state holding Apple's 2025–2026 additions (extensions of its
    /// facts, `originalPlatform`, a rescinded consent).
    public static let formatVersionWithExtensions: UInt8 = 4
    /// The format of a state holding operator records: version 4 with each record's
    /// fields (``FactsLayout/OperatorRecordFields``) instead of its canonical JSON.
    public static let formatVersionWithOperatorFields: UInt8 = 5

    private static let hasAppTransaction: UInt8 = 1
    private static let hasAccountToken: UInt8 = 2
    private static let hasLastNotification: UInt8 = 4
    private static let lastNotificationHasSubtype: UInt8 = 8
    private static let hasEnvironments: UInt8 = 16
    private static let hasUsages: UInt8 = 32
    private static let hasOperatorRecords: UInt8 = 64
    private static let hasConsentRescinded: UInt8 = 128
    private static let knownFlags: UInt8 = 127
    private static let knownFlagsWithExtensions: UInt8 = 255

    /// The bytes of `state`.
    public static func encode(_ state: CustomerState) -> [UInt8] {
        // Room for the whole body at once: growing it copies what was written.
        var renewalVersions = 0
        for versions in state.renewalInfos.values { renewalVersions += versions.count }
        var writer = ByteWriter(
            capacity: 64 + 64 * state.transactions.count + 48 * renewalVersions, numberingStrings: true)
        writer.string(state.key)

        // Positions sorted, not values: sorting the values would copy every version
        // (and retain every string in it) into a new array.
        // Keys read through `keys` and versions through `values`: a whole element read by
        // its index would retain both for every comparison.
        let transactions = state.transactions
        let transactionOrder = transactions.keys.indicesInUTF8Order()
        // The format version depends on what the facts hold: found while they are written.
        var display = state.appTransaction?.facts.hasDisplayFacts == true
        var extended = state.consentRescindedAt != nil || state.appTransaction?.facts.originalPlatform != nil
        writer.count(transactionOrder.count)
        for index in transactionOrder {
            let version = transactions.values[index]
            display = display || version.facts.hasDisplayFacts
            extended = extended || version.facts.hasExtensions
            writer.ref(version.ref)
            writer.transactionFacts(version.facts)
        }

        let renewalInfos = state.renewalInfos
        let groupOrder = renewalInfos.keys.indicesInUTF8Order().filter { !renewalInfos.values[$0].isEmpty }
        writer.count(groupOrder.count)
        for index in groupOrder {
            let versions = renewalInfos.values[index]
            writer.count(versions.count)
            for version in versions {
                extended = extended || version.facts.hasExtensions
                writer.ref(version.ref)
                writer.renewalFacts(version.facts)
            }
        }

        var flags: UInt8 = 0
        if state.appTransaction != nil { flags |= hasAppTransaction }
        if state.accountToken != nil { flags |= hasAccountToken }
        if !state.usages.isEmpty { flags |= hasUsages }
        if !state.operatorRecords.isEmpty { flags |= hasOperatorRecords }
        if let notification = state.lastNotification {
            flags |= hasLastNotification
            if notification.subtype != nil { flags |= lastNotificationHasSubtype }
        }
        if !state.environments.isEmpty { flags |= hasEnvironments }
        if state.consentRescindedAt != nil { flags |= hasConsentRescinded }
        writer.byte(flags)
        if let appTransaction = state.appTransaction {
            writer.ref(appTransaction.ref)
            writer.appTransactionFacts(appTransaction.facts)
        }
        if let claim = state.accountToken {
            writer.string(claim.token)
            writer.date(claim.signedDate)
            writer.ref(claim.ref)
        }
        if let notification = state.lastNotification {
            writer.string(notification.notificationUUID)
            writer.notificationType(notification.type)
            if let subtype = notification.subtype { writer.notificationSubtype(subtype) }
            writer.date(notification.signedDate)
        }
        if !state.environments.isEmpty { writer.byte(state.environments.rawValue) }
        if !state.usages.isEmpty {
            let usages = state.usages
            let usageOrder = usages.indices.sorted { usages[$0].key.utf8Precedes(usages[$1].key) }
            writer.count(usageOrder.count)
            for index in usageOrder { writer.usageFacts(usages[index].value) }
        }
        if !state.operatorRecords.isEmpty {
            let records = state.operatorRecords
            let order = records.indices.sorted { records[$0].key.utf8Precedes(records[$1].key) }
            writer.count(order.count)
            for index in order { writer.operatorRecordFields(records[index].value) }
        }
        if let moment = state.consentRescindedAt { writer.date(moment) }
        if let needs = state.eventNeeds { writer.byte(needs.rawValue) }
        let strings = writer.table?.strings ?? []
        var out = ByteWriter(capacity: writer.written + 2 + strings.reduce(2) { $0 + 1 + $1.utf8.count })
        out.byte(
            !state.operatorRecords.isEmpty
                ? formatVersionWithOperatorFields
                : extended ? formatVersionWithExtensions : display ? formatVersion : formatVersionWithoutDisplayFacts)
        out.count(strings.count)
        for string in strings { out.fullString(string) }
        out.append(writer)
        return out.bytes
    }

    /// The state in `bytes`, every `raw` `nil`.
    /// - Throws: ``CodecError`` for bytes that are truncated, corrupted, or of
    ///   another format version; never traps.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(CodecError) -> CustomerState {
        try decode(bytes, standingAt: nil, into: CustomerState.self)
    }

    /// Decodes `bytes` into `Sink`. With `at`, of each `originalTransactionId`'s
    /// renewal info versions only the one that stands at `at` (the latest signed
    /// at or before `at`, else the earliest) is built; the others are read past.
    static func decode<Sink: StateSink>(
        _ bytes: UnsafeRawBufferPointer, standingAt at: Int64?, into _: Sink.Type
    ) throws(CodecError) -> Sink {
        var reader = ByteReader(bytes)
        let version = try reader.byte()
        switch version {
        case formatVersionWithOperatorFields, formatVersionWithExtensions, formatVersion, formatVersionWithoutDisplayFacts:
            // Evaluation reads some of the strings only: the others are checked, not made.
            try reader.stringTable(lazily: at != nil && Sink.takesCurrentPeriodsOnly)
        case formatVersionWithoutTable: break
        default: throw CodecError(code: .unsupportedVersion, offset: 0, message: "state format version \(version)")
        }
        reader.displayFacts = version >= formatVersion
        reader.extendedFacts = version >= formatVersionWithExtensions
        reader.operatorRecordsAsFields = version >= formatVersionWithOperatorFields
        let key = try reader.string()
        let transactionCount = try reader.count()
        var state = Sink(key: key, transactions: transactionCount)
        if let at, Sink.takesCurrentPeriodsOnly {
            try decodeCurrentPeriods(transactionCount, at: at, from: &reader, into: &state)
        } else {
            for _ in 0..<transactionCount {
                let start = reader.offset
                let ref = try reader.ref()
                try state.transaction(try reader.transactionFacts(), ref: ref, at: start)
            }
        }

        let groupCount = try reader.count()
        for _ in 0..<groupCount {
            let start = reader.offset
            let versionCount = try reader.count()
            guard versionCount > 0 else {
                throw CodecError(code: .inconsistent, offset: start, message: "renewal info group without versions")
            }
            var versions: [Signed<RenewalFacts>] = []
            if let at {
                // Read past every version (checking their order), then build the standing one.
                var standing = reader.offset
                var previous: (originalTransactionId: String, signedDate: Int64)? = nil
                var runs = RenewalRuns()
                for index in 0..<versionCount {
                    let versionStart = reader.offset
                    _ = try reader.ref()
                    let head = try reader.skipRenewalFacts()
                    try Self.checkOrder(previous, (head.originalTransactionId, head.signedDate), at: versionStart)
                    previous = (head.originalTransactionId, head.signedDate)
                    if index == 0 || head.signedDate <= at {
                        standing = versionStart
                        runs.append(signedDate: head.signedDate, autoRenewOff: head.autoRenewOff, billingRetry: head.billingRetry)
                    }
                }
                let end = reader.offset
                reader.seek(to: standing)
                let ref = try reader.ref()
                versions.append(Signed(try reader.renewalFacts(), ref: ref))
                reader.seek(to: end)
                state.renewalRuns(runs)
            } else {
                versions.reserveCapacity(versionCount)
                for _ in 0..<versionCount {
                    let versionStart = reader.offset
                    let ref = try reader.ref()
                    let facts = try reader.renewalFacts()
                    try Self.checkOrder(
                        versions.last.map { ($0.facts.originalTransactionId, $0.facts.signedDate) },
                        (facts.originalTransactionId, facts.signedDate), at: versionStart)
                    versions.append(Signed(facts, ref: ref))
                }
            }
            try state.renewalInfos(versions, at: start)
        }

        let flagsOffset = reader.offset
        let flags = try reader.byte()
        let known = reader.extendedFacts ? knownFlagsWithExtensions : knownFlags
        guard flags & ~known == 0, flags & lastNotificationHasSubtype == 0 || flags & hasLastNotification != 0 else {
            throw CodecError(code: .invalidTag, offset: flagsOffset, message: "unknown state flags \(flags)")
        }
        if flags & hasAppTransaction != 0 {
            let ref = try reader.ref()
            state.appTransaction = Signed(try reader.appTransactionFacts(), ref: ref)
        }
        if flags & hasAccountToken != 0 {
            let token = try reader.string()
            let signedDate = try reader.date()
            state.accountToken = AccountTokenClaim(token: token, signedDate: signedDate, ref: try reader.ref())
        }
        if flags & hasLastNotification != 0 {
            let uuid = try reader.string()
            let type = try reader.notificationType()
            let subtype = flags & lastNotificationHasSubtype != 0 ? try reader.notificationSubtype() : nil
            state.lastNotification = NotificationSummaryFacts(
                notificationUUID: uuid, type: type, subtype: subtype, signedDate: try reader.date())
        }
        if flags & hasEnvironments != 0 {
            let offset = reader.offset
            let bits = try reader.byte()
            guard bits != 0, bits & ~EnvironmentSet.known == 0 else {
                throw CodecError(code: .invalidTag, offset: offset, message: "unknown environments \(bits)")
            }
            state.environments = EnvironmentSet(rawValue: bits)
        }
        if flags & hasUsages != 0 {
            let count = try reader.count()
            guard count > 0 else { throw CodecError(code: .inconsistent, offset: reader.offset, message: "usage flag without usages") }
            for _ in 0..<count {
                let start = reader.offset
                try state.usage(try reader.usageFacts(), at: start)
            }
        }
        if flags & hasOperatorRecords != 0 {
            let count = try reader.count()
            guard count > 0 else {
                throw CodecError(code: .inconsistent, offset: reader.offset, message: "operator record flag without records")
            }
            for _ in 0..<count {
                let start = reader.offset
                try state.operatorRecord(try reader.operatorRecord(), at: start)
            }
        }
        if flags & hasConsentRescinded != 0 { state.consentRescindedAt = try reader.date() }
        if !reader.isAtEnd {
            let offset = reader.offset
            let bits = try reader.byte()
            guard bits & ~EventNeeds.known == 0 else {
                throw CodecError(code: .invalidTag, offset: offset, message: "unknown event needs \(bits)")
            }
            state.eventNeeds = EventNeeds(rawValue: bits)
        } else {
            state.eventNeeds = nil
        }
        try reader.finish()
        return state
    }

    /// Renewal info versions are of one `originalTransactionId`, in ascending `signedDate`.
    private static func checkOrder(
        _ previous: (originalTransactionId: String, signedDate: Int64)?,
        _ next: (originalTransactionId: String, signedDate: Int64), at offset: Int
    ) throws(CodecError) {
        guard let previous else { return }
        guard previous.originalTransactionId == next.originalTransactionId, previous.signedDate < next.signedDate else {
            throw CodecError(
                code: .inconsistent, offset: offset,
                message: "renewal info versions not of one originalTransactionId in ascending signedDate")
        }
    }

    /// Decodes `count` transactions for evaluation at `at`: every one but the plain
    /// auto-renewable periods (``ByteReader/periodHead(start:)``), whose heads are read
    /// first; of those bought by `at`, each subscription's current one
    /// (``SubscriptionEvaluation/currentIndex(among:idPrecedes:)``) is then read whole, and the
    /// others' products are handed over. Periods bought after `at` are read past.
    private static func decodeCurrentPeriods<Sink: StateSink>(
        _ count: Int, at: Int64, from reader: inout ByteReader, into state: inout Sink
    ) throws(CodecError) {
        var periods: [TransactionHead] = []
        periods.reserveCapacity(count)
        for _ in 0..<count {
            let start = reader.offset
            let ref = try reader.ref()
            let factsStart = reader.offset
            if let head = try reader.periodHead(start: start) {
                if head.purchaseDate <= at { periods.append(head) }
            } else {
                reader.seek(to: factsStart)
                try state.transaction(try reader.transactionFacts(), ref: ref, at: start)
            }
        }
        guard !periods.isEmpty else { return }
        let end = reader.offset
        // One subscription's periods share the number of its id; several subscriptions
        // (or an id the table holds twice) are compared by their ids, made for it.
        var ids: [String] = []
        if periods.contains(where: { $0.originalTransactionId != periods[0].originalTransactionId }) {
            var keyed = periods.map { (id: reader.tableString($0.originalTransactionId), head: $0) }
            keyed.sort { $0.id < $1.id }
            periods = keyed.map(\.head)
            ids = keyed.map(\.id)
        }
        var first = 0
        while first < periods.count {
            var next = first + 1
            while next < periods.count, ids.isEmpty || ids[next] == ids[first] { next += 1 }
            let current = SubscriptionEvaluation.currentIndex(among: periods[first..<next]) { lhs, rhs in
                lhs.transactionId != rhs.transactionId
                    && transactionIdPrecedes(reader.tableString(lhs.transactionId), reader.tableString(rhs.transactionId))
            }!
            // The current period's product is mentioned with it; a run of another product once.
            let currentProduct = periods[current].productId
            var mentioned = currentProduct
            for index in first..<next where periods[index].productId != currentProduct && periods[index].productId != mentioned {
                mentioned = periods[index].productId
                state.passedOver(productId: reader.tableString(periods[index].productId))
            }
            reader.seek(to: periods[current].offset)
            let ref = try reader.ref()
            try state.transaction(try reader.transactionFacts(), ref: ref, at: periods[current].offset)
            first = next
        }
        reader.seek(to: end)
    }

    /// The state in `bytes` (see the `UnsafeRawBufferPointer` overload).
    /// - Throws: ``CodecError``.
    public static func decode(_ bytes: [UInt8]) throws(CodecError) -> CustomerState {
        try withRawBytes(bytes) { buffer throws(CodecError) in try decode(buffer) }
    }

    /// The state in `bytes` (see the `UnsafeRawBufferPointer` overload).
    /// - Throws: ``CodecError``.
    public static func decode<Bytes: Collection>(_ bytes: Bytes) throws(CodecError) -> CustomerState
    where Bytes.Element == UInt8 {
        try withRawBytes(bytes) { buffer throws(CodecError) in try decode(buffer) }
    }
}

/// Where ``StateCodec`` puts what it decodes: a whole ``CustomerState``, or
/// only what ``Evaluation`` reads (for a query, without building dictionaries).
protocol StateSink {
    init(key: CustomerKey, transactions: Int)
    mutating func transaction(_ facts: TransactionFacts, ref: RawRef, at offset: Int) throws(CodecError)
    /// One `originalTransactionId`'s versions, ascending by `signedDate` (at least one).
    mutating func renewalInfos(_ versions: [Signed<RenewalFacts>], at offset: Int) throws(CodecError)
    var appTransaction: Signed<AppTransactionFacts>? { get set }
    var accountToken: AccountTokenClaim? { get set }
    var lastNotification: NotificationSummaryFacts? { get set }
    var environments: EnvironmentSet { get set }
    /// The first RESCIND_CONSENT notification's `signedDate`.
    var consentRescindedAt: Int64? { get set }
    /// What of the events the derivations read; `nil` for a state stored without it.
    var eventNeeds: EventNeeds? { get set }
    /// With a moment to decode for: the runs up to the standing version of
    /// the `originalTransactionId` whose versions are handed over next.
    mutating func renewalRuns(_ runs: RenewalRuns)
    /// One usage record (each `usageId` once).
    mutating func usage(_ facts: UsageFacts, at offset: Int) throws(CodecError)
    /// One operator record (each identity once).
    mutating func operatorRecord(_ record: OperatorRecord, at offset: Int) throws(CodecError)
    /// Whether, decoded for a moment, the sink takes of each subscription's plain
    /// periods bought by then only the current one, the others as heads
    /// (``passedOver(productId:)``), and none of those bought later.
    static var takesCurrentPeriodsOnly: Bool { get }
    /// The product of a period bought by the moment decoded for that is not its
    /// subscription's current one (a run of periods of one product once).
    mutating func passedOver(productId: String)
}

extension StateSink {
    mutating func renewalRuns(_ runs: RenewalRuns) {}
    static var takesCurrentPeriodsOnly: Bool { false }
    mutating func passedOver(productId: String) {}
}

extension CustomerState: StateSink {
    init(key: CustomerKey, transactions: Int) {
        self.init(key: key)
        self.transactions.reserveCapacity(transactions)
    }

    mutating func transaction(_ facts: TransactionFacts, ref: RawRef, at offset: Int) throws(CodecError) {
        let id = facts.transactionId
        guard transactions.updateValue(Signed(facts, ref: ref), forKey: id) == nil else {
            throw CodecError(code: .inconsistent, offset: offset, message: "transaction \(id) twice")
        }
    }

    mutating func renewalInfos(_ versions: [Signed<RenewalFacts>], at offset: Int) throws(CodecError) {
        let key = versions[0].facts.originalTransactionId
        guard renewalInfos.updateValue(versions, forKey: key) == nil else {
            throw CodecError(code: .inconsistent, offset: offset, message: "renewal infos of \(key) twice")
        }
    }

    mutating func usage(_ facts: UsageFacts, at offset: Int) throws(CodecError) {
        guard usages.updateValue(facts, forKey: facts.usageId) == nil else {
            throw CodecError(code: .inconsistent, offset: offset, message: "usage \(facts.usageId) twice")
        }
    }

    mutating func operatorRecord(_ record: OperatorRecord, at offset: Int) throws(CodecError) {
        guard operatorRecords.updateValue(record, forKey: record.identity) == nil else {
            throw CodecError(code: .inconsistent, offset: offset, message: "operator record \(record.identity) twice")
        }
    }
}
