/// A verified event as the reducers see it: its place in the log and its facts.
public struct Event: Sendable, Hashable {
    /// The event's sequence number in the log (its order of arrival, which the
    /// reducers never use to decide anything).
    public var seq: Int64
    public var body: EventBody
    /// The environment the event's data was signed for (`nil` for facts logged
    /// before events recorded it).
    public var environment: AppStoreEnvironment?

    public init(seq: Int64, body: EventBody, environment: AppStoreEnvironment? = nil) {
        self.seq = seq
        self.body = body
        self.environment = environment
    }

    public var kind: EventKind {
        switch body {
        case .notification: return .signed(.notification)
        case .transaction: return .signed(.transaction)
        case .renewalInfo: return .signed(.renewalInfo)
        case .appTransaction: return .signed(.appTransaction)
        case .receipt: return .signed(.receipt)
        case .usage: return .operatorRecord(.usage)
        case .operatorAction(let record): return .operatorRecord(record.kind)
        }
    }
}

/// What an event carries, by kind.
public enum EventBody: Sendable, Hashable {
    /// A notification with its nested facts, held in one box: a copy of the event retains
    /// one reference, not one for each of the facts' strings and payloads.
    indirect case notification(NotificationFacts)
    case transaction(Signed<TransactionFacts>)
    case renewalInfo(Signed<RenewalFacts>)
    case appTransaction(Signed<AppTransactionFacts>)
    /// A legacy app receipt's entries under one original transaction id (specification section 16).
    case receipt(ReceiptFacts)
    /// The operator's word on what the customer used (``UsageFacts``), not Apple's.
    case usage(UsageFacts)
    /// What an operator did (``OperatorRecord``): a grant, its revocation, a credit, a link. Not Apple's.
    case operatorAction(OperatorRecord)
}

/// The customer an event belongs to: `appTransactionId`, or
/// `otid:<originalTransactionId>` for data that carries none.
public typealias CustomerKey = String

extension Event {
    /// Builds the event for a verified input appended at `seq`, carrying each
    /// signed object's raw JWS.
    ///
    /// The input is borrowed (`__shared`), not copied: a copy of a notification would
    /// retain each of its strings and its nested payloads', only to read some of them.
    public init(seq: Int64, input: __shared VerifiedInput) {
        self.seq = seq
        self.environment = input.environment
        switch input {
        case .notification(let n):
            let appTransactionId = n.payload.json["data"]?["appTransactionId"].flatMap { value -> String? in
                if case .string(let text) = value, !text.isEmpty { return text }
                return nil
            }
            body = .notification(
                NotificationFacts(
                    notificationUUID: n.payload.notificationUUID, type: n.payload.notificationType,
                    subtype: n.payload.subtype, signedDate: n.payload.signedDate, appTransactionId: appTransactionId,
                    transaction: n.transaction.map {
                        Signed(TransactionFacts($0.payload), ref: RawRef(eventSeq: seq, slot: .nestedTransaction), raw: $0.jws)
                    },
                    renewalInfo: n.renewalInfo.map {
                        Signed(RenewalFacts($0.payload), ref: RawRef(eventSeq: seq, slot: .nestedRenewalInfo), raw: $0.jws)
                    },
                    appTransaction: n.appTransaction.flatMap { a in
                        a.payload.appTransactionId.map {
                            Signed(
                                AppTransactionFacts(
                                    appTransactionId: $0, originalPurchaseDate: a.payload.originalPurchaseDate,
                                    signedDate: a.payload.receiptCreationDate,
                                    originalApplicationVersion: a.payload.originalApplicationVersion,
                                    originalPlatform: a.payload.originalPlatform),
                                ref: RawRef(eventSeq: seq, slot: .nestedAppTransaction), raw: a.jws)
                        }
                    }))
        case .transaction(let t):
            body = .transaction(Signed(TransactionFacts(t.payload), ref: RawRef(eventSeq: seq, slot: .own), raw: t.jws))
        case .renewalInfo(let r):
            body = .renewalInfo(Signed(RenewalFacts(r.payload), ref: RawRef(eventSeq: seq, slot: .own), raw: r.jws))
        case .appTransaction(let a):
            body = .appTransaction(
                Signed(
                    AppTransactionFacts(
                        appTransactionId: a.payload.appTransactionId ?? "", originalPurchaseDate: a.payload.originalPurchaseDate,
                        signedDate: a.payload.receiptCreationDate,
                        originalApplicationVersion: a.payload.originalApplicationVersion,
                        originalPlatform: a.payload.originalPlatform),
                    ref: RawRef(eventSeq: seq, slot: .own), raw: a.jws))
        case .receipt(let part):
            let digest = part.receipt.sha256
            let created = part.receipt.payload.creationDate
            body = .receipt(
                ReceiptFacts(
                    receiptDigest: digest, creationDate: created, originalTransactionId: part.originalTransactionId,
                    transactions: part.entries.map {
                        Signed(
                            TransactionFacts(receiptEntry: $0, receiptDigest: digest, creationDate: created),
                            ref: RawRef(eventSeq: seq, slot: .own))
                    }))
        }
    }

    /// The customer this event belongs to, or `nil` for events about no customer
    /// (a TEST notification, a renewal-extension summary).
    public var customerKey: CustomerKey? {
        switch body {
        case .notification(let n):
            if let id = n.transaction?.facts.appTransactionId ?? n.renewalInfo?.facts.appTransactionId
                ?? n.appTransactionId ?? n.appTransaction?.facts.appTransactionId
            {
                return id
            }
            if let otid = n.transaction?.facts.originalTransactionId ?? n.renewalInfo?.facts.originalTransactionId {
                return "otid:" + otid
            }
            return nil
        case .transaction(let t):
            return t.facts.appTransactionId ?? "otid:" + t.facts.originalTransactionId
        case .renewalInfo(let r):
            return r.facts.appTransactionId ?? "otid:" + r.facts.originalTransactionId
        case .appTransaction(let a):
            return a.facts.appTransactionId.isEmpty ? nil : a.facts.appTransactionId
        case .receipt(let r):
            return r.originalTransactionId.map { "otid:" + $0 }
        case .usage(let u):
            return u.customerKey
        case .operatorAction(let record):
            return record.customerKey
        }
    }

    /// The `originalTransactionId` the event is about, if any.
    public var originalTransactionId: String? {
        switch body {
        case .notification(let n): return n.transaction?.facts.originalTransactionId ?? n.renewalInfo?.facts.originalTransactionId
        case .transaction(let t): return t.facts.originalTransactionId
        case .renewalInfo(let r): return r.facts.originalTransactionId
        case .appTransaction: return nil
        case .receipt(let r): return r.originalTransactionId
        case .usage(let u): return u.originalTransactionId
        case .operatorAction(let record): return record.originalTransactionId
        }
    }

    /// The `transactionId` the event is about, if any.
    public var transactionId: String? {
        switch body {
        case .notification(let n): return n.transaction?.facts.transactionId
        case .transaction(let t): return t.facts.transactionId
        case .renewalInfo, .appTransaction, .receipt, .usage, .operatorAction: return nil
        }
    }

    /// When the event's outermost object was signed.
    public var signedDate: Int64 {
        switch body {
        case .notification(let n): return n.signedDate
        case .transaction(let t): return t.facts.signedDate
        case .renewalInfo(let r): return r.facts.signedDate
        case .appTransaction(let a): return a.facts.signedDate
        case .receipt(let r): return r.creationDate
        case .usage(let u): return u.at
        case .operatorAction(let record): return record.recordedAt
        }
    }

    /// The `appAccountToken`s this event's signed objects carry.
    public var appAccountTokens: [String] {
        switch body {
        case .notification(let n):
            return [n.transaction?.facts.appAccountToken, n.renewalInfo?.facts.appAccountToken].compactMap { $0 }
        case .transaction(let t): return [t.facts.appAccountToken].compactMap { $0 }
        case .renewalInfo(let r): return [r.facts.appAccountToken].compactMap { $0 }
        case .appTransaction, .receipt, .usage, .operatorAction: return []
        }
    }
}
