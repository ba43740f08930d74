/// Everything known about one customer, as a pure function of the *set* of
/// verified events: the latest version of every signed object.
///
/// It holds no rules and no time: ``Evaluation`` applies both. Because each
/// slot keeps the greatest version by (`signedDate`, raw JWS), applying the
/// same events in any order, with duplicates, gives an equal state.
public struct CustomerState: Sendable, Hashable {
    /// The fields, in one box shared by every copy of the state until one of them changes
    /// (then that copy takes a box of its own): the feeds, the projection and the history
    /// pass a customer's state around many times per event, and a copy is one reference
    /// counted, not one per field.
    private final class Storage: @unchecked Sendable {
        @exclusivity(unchecked) var key: CustomerKey
        @exclusivity(unchecked) var transactions: [String: Signed<TransactionFacts>]
        @exclusivity(unchecked) var renewalInfos: [String: [Signed<RenewalFacts>]]
        @exclusivity(unchecked) var appTransaction: Signed<AppTransactionFacts>?
        @exclusivity(unchecked) var accountToken: AccountTokenClaim?
        @exclusivity(unchecked) var lastNotification: NotificationSummaryFacts?
        @exclusivity(unchecked) var environments: EnvironmentSet
        @exclusivity(unchecked) var usages: [String: UsageFacts]
        @exclusivity(unchecked) var consentRescindedAt: Int64?
        @exclusivity(unchecked) var operatorRecords: [String: OperatorRecord]
        @exclusivity(unchecked) var eventNeeds: EventNeeds?

        init(key: CustomerKey) {
            self.key = key
            self.transactions = [:]
            self.renewalInfos = [:]
            self.appTransaction = nil
            self.accountToken = nil
            self.lastNotification = nil
            self.environments = []
            self.usages = [:]
            self.consentRescindedAt = nil
            self.operatorRecords = [:]
            self.eventNeeds = []
        }

        /// A box of its own with the same fields.
        init(copying other: Storage) {
            key = other.key
            transactions = other.transactions
            renewalInfos = other.renewalInfos
            appTransaction = other.appTransaction
            accountToken = other.accountToken
            lastNotification = other.lastNotification
            environments = other.environments
            usages = other.usages
            consentRescindedAt = other.consentRescindedAt
            operatorRecords = other.operatorRecords
            eventNeeds = other.eventNeeds
        }
    }

    // Mutated only through `unique()`: a box shared by several states is never written, so
    // the `@unchecked Sendable` above holds as a value type's would, and the fields need no
    // checks of exclusive access at run time (`@exclusivity(unchecked)`): a state's own
    // accesses are checked where the state is, as a struct's fields are.
    private var storage: Storage

    /// Gives this state a box of its own before a field changes, when it shares one.
    private mutating func unique() {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(copying: storage) }
    }

    /// `appTransactionId`, or `otid:<originalTransactionId>`.
    public var key: CustomerKey {
        get { storage.key }
        set {
            unique()
            storage.key = newValue
        }
        _modify {
            unique()
            yield &storage.key
        }
    }

    /// The latest version of each transaction, by `transactionId`.
    public var transactions: [String: Signed<TransactionFacts>] {
        get { storage.transactions }
        set {
            unique()
            storage.transactions = newValue
        }
        _modify {
            unique()
            yield &storage.transactions
        }
    }

    /// Every version of the renewal info, by `originalTransactionId`, sorted
    /// by `signedDate` ascending, one per `signedDate` (evaluation at a past
    /// moment needs the one that was current then).
    public var renewalInfos: [String: [Signed<RenewalFacts>]] {
        get { storage.renewalInfos }
        set {
            unique()
            storage.renewalInfos = newValue
        }
        _modify {
            unique()
            yield &storage.renewalInfos
        }
    }

    /// The latest AppTransaction.
    public var appTransaction: Signed<AppTransactionFacts>? {
        get { storage.appTransaction }
        set {
            unique()
            storage.appTransaction = newValue
        }
        _modify {
            unique()
            yield &storage.appTransaction
        }
    }

    /// The latest-signed `appAccountToken` among transactions and renewal infos.
    public var accountToken: AccountTokenClaim? {
        get { storage.accountToken }
        set {
            unique()
            storage.accountToken = newValue
        }
        _modify {
            unique()
            yield &storage.accountToken
        }
    }

    /// The latest-signed notification, for display.
    public var lastNotification: NotificationSummaryFacts? {
        get { storage.lastNotification }
        set {
            unique()
            storage.lastNotification = newValue
        }
        _modify {
            unique()
            yield &storage.lastNotification
        }
    }

    /// The environments of the customer's events (specification section 2).
    public var environments: EnvironmentSet {
        get { storage.environments }
        set {
            unique()
            storage.environments = newValue
        }
        _modify {
            unique()
            yield &storage.environments
        }
    }

    /// The usage records (the operator's word, specification section 11), by `usageId`.
    public var usages: [String: UsageFacts] {
        get { storage.usages }
        set {
            unique()
            storage.usages = newValue
        }
        _modify {
            unique()
            yield &storage.usages
        }
    }

    /// The `signedDate` of the earliest RESCIND_CONSENT notification about this
    /// customer (a parent withdrew consent), `nil` when none.
    public var consentRescindedAt: Int64? {
        get { storage.consentRescindedAt }
        set {
            unique()
            storage.consentRescindedAt = newValue
        }
        _modify {
            unique()
            yield &storage.consentRescindedAt
        }
    }

    /// What operators did (grants, their revocations, credits, links; specification
    /// section 13), by ``OperatorRecord/identity``.
    public var operatorRecords: [String: OperatorRecord] {
        get { storage.operatorRecords }
        set {
            unique()
            storage.operatorRecords = newValue
        }
        _modify {
            unique()
            yield &storage.operatorRecords
        }
    }

    /// What of the customer's events the lifecycle and revenue derivations read
    /// (see ``derivationsNeedEvents``); `nil` when unknown (a state stored by an
    /// older build, which did not keep it).
    public var eventNeeds: EventNeeds? {
        get { storage.eventNeeds }
        set {
            unique()
            storage.eventNeeds = newValue
        }
        _modify {
            unique()
            yield &storage.eventNeeds
        }
    }

    public init(key: CustomerKey) {
        storage = Storage(key: key)
    }

    public static func == (lhs: CustomerState, rhs: CustomerState) -> Bool {
        if lhs.storage === rhs.storage { return true }
        let (l, r) = (lhs.storage, rhs.storage)
        return l.key == r.key
            && l.transactions == r.transactions
            && l.renewalInfos == r.renewalInfos
            && l.appTransaction == r.appTransaction
            && l.accountToken == r.accountToken
            && l.lastNotification == r.lastNotification
            && l.environments == r.environments
            && l.usages == r.usages
            && l.consentRescindedAt == r.consentRescindedAt
            && l.operatorRecords == r.operatorRecords
            && l.eventNeeds == r.eventNeeds
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage.key)
        hasher.combine(storage.transactions)
        hasher.combine(storage.renewalInfos)
        hasher.combine(storage.appTransaction)
        hasher.combine(storage.accountToken)
        hasher.combine(storage.lastNotification)
        hasher.combine(storage.environments)
        hasher.combine(storage.usages)
        hasher.combine(storage.consentRescindedAt)
        hasher.combine(storage.operatorRecords)
        hasher.combine(storage.eventNeeds)
    }
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
