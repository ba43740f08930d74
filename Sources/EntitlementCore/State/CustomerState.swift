/// Everything known about one customer, as a pure function of the *set* of
/// verified events: the latest version of every signed object.
///
/// It holds no rules and no time: ``Evaluation`` applies both. Because each
/// slot keeps the greatest version by (`signedDate`, raw JWS), applying the
/// same events in any order, with duplicates, gives an equal state.
public struct CustomerState: Sendable, Hashable {
    /// The state's fields, as a plain value.
    private struct Fields: Hashable {
        var key: CustomerKey
        var transactions: [String: Signed<TransactionFacts>]
        var renewalInfos: [String: [Signed<RenewalFacts>]]
        var appTransaction: Signed<AppTransactionFacts>?
        var accountToken: AccountTokenClaim?
        var lastNotification: NotificationSummaryFacts?
        var environments: EnvironmentSet
        var usages: [String: UsageFacts]
        var consentRescindedAt: Int64?
        var operatorRecords: [String: OperatorRecord]
        var eventNeeds: EventNeeds?
    }

    /// The fields in one box, shared by every copy of the state until one of them changes
    /// (that copy then takes a box of its own): the projection and the feeds pass a
    /// customer's state around many times an event, and a copy is then one reference
    /// counted, not one per field.
    ///
    /// A box shared by several states is never written (see ``writable``), so it is
    /// `Sendable` as a value is, and its fields need no check of exclusive access at run
    /// time: a state's own accesses are checked where the state is, as a struct's are.
    private final class Storage: @unchecked Sendable {
        @exclusivity(unchecked) var fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private var storage: Storage

    /// The fields for a change, in a box of this state's own.
    private var writable: Fields {
        get { storage.fields }
        _modify {
            if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.fields) }
            yield &storage.fields
        }
    }

    /// `appTransactionId`, or `otid:<originalTransactionId>`.
    public var key: CustomerKey {
        get { storage.fields.key }
        _modify { yield &writable.key }
    }

    /// The latest version of each transaction, by `transactionId`.
    public var transactions: [String: Signed<TransactionFacts>] {
        get { storage.fields.transactions }
        _modify { yield &writable.transactions }
    }

    /// Every version of the renewal info, by `originalTransactionId`, sorted
    /// by `signedDate` ascending, one per `signedDate` (evaluation at a past
    /// moment needs the one that was current then).
    public var renewalInfos: [String: [Signed<RenewalFacts>]] {
        get { storage.fields.renewalInfos }
        _modify { yield &writable.renewalInfos }
    }

    /// The latest AppTransaction.
    public var appTransaction: Signed<AppTransactionFacts>? {
        get { storage.fields.appTransaction }
        _modify { yield &writable.appTransaction }
    }

    /// The latest-signed `appAccountToken` among transactions and renewal infos.
    public var accountToken: AccountTokenClaim? {
        get { storage.fields.accountToken }
        _modify { yield &writable.accountToken }
    }

    /// The latest-signed notification, for display.
    public var lastNotification: NotificationSummaryFacts? {
        get { storage.fields.lastNotification }
        _modify { yield &writable.lastNotification }
    }

    /// The environments of the customer's events (specification section 2).
    public var environments: EnvironmentSet {
        get { storage.fields.environments }
        _modify { yield &writable.environments }
    }

    /// The usage records (the operator's word, specification section 11), by `usageId`.
    public var usages: [String: UsageFacts] {
        get { storage.fields.usages }
        _modify { yield &writable.usages }
    }

    /// The `signedDate` of the earliest RESCIND_CONSENT notification about this
    /// customer (a parent withdrew consent), `nil` when none.
    public var consentRescindedAt: Int64? {
        get { storage.fields.consentRescindedAt }
        _modify { yield &writable.consentRescindedAt }
    }

    /// What operators did (grants, their revocations, credits, links; specification
    /// section 13), by ``OperatorRecord/identity``.
    public var operatorRecords: [String: OperatorRecord] {
        get { storage.fields.operatorRecords }
        _modify { yield &writable.operatorRecords }
    }

    /// What of the customer's events the lifecycle and revenue derivations read
    /// (see ``derivationsNeedEvents``); `nil` when unknown (a state stored by an
    /// older build, which did not keep it).
    public var eventNeeds: EventNeeds? {
        get { storage.fields.eventNeeds }
        _modify { yield &writable.eventNeeds }
    }

    public init(key: CustomerKey) {
        storage = Storage(
            Fields(
                key: key,
                transactions: [:],
                renewalInfos: [:],
                appTransaction: nil,
                accountToken: nil,
                lastNotification: nil,
                environments: [],
                usages: [:],
                consentRescindedAt: nil,
                operatorRecords: [:],
                eventNeeds: []))
    }

    public static func == (lhs: CustomerState, rhs: CustomerState) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(storage.fields) }
}

/// An `appAccountToken` and the signed object that carried it.
public struct AccountTokenClaim: Sendable, Hashable {
    public var token: String
    public var signedDate: Int64
    public var ref: RawRef
    public var raw: String?

    public init(token: String, signedDate: Int64, ref: RawRef, raw: String? = nil) {
        self.token = token
        self.signedDate = signedDate
        self.ref = ref
        self.raw = raw
    }

    public static func == (lhs: AccountTokenClaim, rhs: AccountTokenClaim) -> Bool {
        lhs.token == rhs.token && lhs.signedDate == rhs.signedDate
    }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(token)
        hasher.combine(signedDate)
    }
}

/// Type, subtype and time of a notification (the latest one is kept for display).
public struct NotificationSummaryFacts: Sendable, Hashable {
    public var notificationUUID: String
    public var type: NotificationType
    public var subtype: NotificationSubtype?
    public var signedDate: Int64

    public init(notificationUUID: String, type: NotificationType, subtype: NotificationSubtype?, signedDate: Int64) {
        self.notificationUUID = notificationUUID
        self.type = type
        self.subtype = subtype
        self.signedDate = signedDate
    }
}
