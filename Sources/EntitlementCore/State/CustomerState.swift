/// Everything known about one customer, as a pure function of the *set* of
/// verified events: the latest version of every signed object.
///
/// It holds no rules and no time: ``Evaluation`` applies both. Because each
/// slot keeps the greatest version by (`signedDate`, raw JWS), applying the
/// same events in any order, with duplicates, gives an equal state.
public struct CustomerState: Sendable, Hashable {
    /// `appTransactionId`, or `otid:<originalTransactionId>`.
    public var key: CustomerKey
    /// The latest version of each transaction, by `transactionId`.
    public var transactions: [String: Signed<TransactionFacts>]
    /// Every version of the renewal info, by `originalTransactionId`, sorted
    /// by `signedDate` ascending, one per `signedDate` (evaluation at a past
    /// moment needs the one that was current then).
    public var renewalInfos: [String: [Signed<RenewalFacts>]]
    /// The latest AppTransaction.
    public var appTransaction: Signed<AppTransactionFacts>?
    /// The latest-signed `appAccountToken` among transactions and renewal infos.
    public var accountToken: AccountTokenClaim?
    /// The latest-signed notification, for display.
    public var lastNotification: NotificationSummaryFacts?
    /// The environments of the customer's events (specification section 2).
    public var environments: EnvironmentSet
    /// The usage records (the operator's word, specification section 11), by `usageId`.
    public var usages: [String: UsageFacts]
    /// The `signedDate` of the earliest RESCIND_CONSENT notification about this
    /// customer (a parent withdrew consent), `nil` when none.
    public var consentRescindedAt: Int64?
    /// What operators did (grants, their revocations, credits, links; specification
    /// section 13), by ``OperatorRecord/identity``.
    public var operatorRecords: [String: OperatorRecord]
    /// What of the customer's events the lifecycle and revenue derivations read
    /// (see ``derivationsNeedEvents``); `nil` when unknown (a state stored by an
    /// older build, which did not keep it).
    public var eventNeeds: EventNeeds?

    public init(key: CustomerKey) {
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
