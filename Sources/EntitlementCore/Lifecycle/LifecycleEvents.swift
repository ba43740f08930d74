/// A customer's lifecycle events (specification section 12) as a pure function of
/// its data: the state (the latest version of every signed object, every
/// renewal-info version) and its events (every version of every transaction
/// as it was logged, and the notifications), and the rules.
///
/// The same data, in any order and with any duplicates, gives the same events:
/// the state is order-independent, and of the events only the set of versions
/// and notifications is read, never the order of arrival.
///
/// `CUSTOMER_MERGED` is not derived here: whether an `otid:` customer existed
/// before its link arrived depends on the order of arrival, so the store
/// records it at the merge.
public enum LifecycleEvents {
    /// How long after a CONSUMPTION_REQUEST the answer may be sent.
    public static let consumptionAnswerWindow: Int64 = 12 * 3_600_000

    /// Every lifecycle event of the data whose `effectiveAt` is at or before
    /// `now`, ordered by `effectiveAt`, then `id`.
    /// - Parameters:
    ///   - state: The customer's state (everything known).
    ///   - events: The customer's events, any order, duplicates allowed (events of
    ///     other customers may be among them: only the state's transactions are read).
    ///   - consumptionReasons: The `consumptionRequestReason` of CONSUMPTION_REQUEST
    ///     notifications, by `notificationUUID` (the facts do not keep it).
    ///   - rules: The rules.
    ///   - now: The moment of reading, in ms since 1970.
    public static func due(
        state: CustomerState, events: some Collection<Event>, consumptionReasons: [String: String] = [:], rules: Rules,
        now: Int64
    ) -> [LifecycleEvent] {
        all(state: state, events: events, consumptionReasons: consumptionReasons, rules: rules).filter { $0.effectiveAt <= now }
    }

    /// The earliest `effectiveAt` after `now` among `events` (when time alone
    /// makes the next event due), or `nil`.
    public static func nextDue(in events: [LifecycleEvent], after now: Int64) -> Int64? {
        events.lazy.map(\.effectiveAt).filter { $0 > now }.min()
    }

    /// Every lifecycle event of the data, whatever its `effectiveAt` (those
    /// after now are the ones time will bring), ordered by `effectiveAt`, then `id`.
    /// - Parameter accountTokenUsers: whether an `appAccountToken` makes its customer
    ///   the app user of that UUID (`appUsers.fromAppAccountToken`): an operator's first
    ///   link to another app user is then a TRANSFER from it.
    public static func all(
        state: CustomerState, events: some Collection<Event>, consumptionReasons: [String: String] = [:], rules: Rules,
        accountTokenUsers: Bool = false
    ) -> [LifecycleEvent] {
        // One array, read concretely from here on (a caller in another module reaches this generic entry unspecialized).
        var derivation = Derivation(
            state: state, events: Array(events), consumptionReasons: consumptionReasons, building: .all,
            accountTokenUsers: accountTokenUsers)
        derivation.run()
        return derivation.ordered()
    }

    /// What recording the feed needs of a customer's data: of every event of
    /// ``all(state:events:consumptionReasons:rules:accountTokenUsers:)``, those due by `now` whose id is not
    /// recorded yet, built in full; the earliest `effectiveAt` after `now`; and the
    /// subscriptions' turns the revenue facts read. Only the events returned are built:
    /// of the others only the id's hash (``LifecycleIdHash``) and `effectiveAt` are computed.
    /// - Parameters:
    ///   - state: The customer's state (everything known).
    ///   - events: The customer's events, any order, duplicates allowed.
    ///   - consumptionReasons: The `consumptionRequestReason` of CONSUMPTION_REQUEST
    ///     notifications, by `notificationUUID`.
    ///   - rules: The rules.
    ///   - now: The moment of recording, in ms since 1970.
    ///   - isRecorded: Whether the id of this hash is recorded already.
    ///   - accountTokenUsers: as ``all(state:events:consumptionReasons:rules:accountTokenUsers:)``.
    public static func unrecorded(
        state: CustomerState, events: [Event], consumptionReasons: [String: String] = [:], rules: Rules, now: Int64,
        accountTokenUsers: Bool = false, isRecorded: (UInt64) -> Bool
    ) -> UnrecordedLifecycle {
        withoutActuallyEscaping(isRecorded) { isRecorded in
            var derivation = Derivation(
                state: state, events: events, consumptionReasons: consumptionReasons,
                building: .unrecorded(now: now, isRecorded: isRecorded), accountTokenUsers: accountTokenUsers)
            derivation.run()
            derivation.turns.subscriptions = derivation.subscriptionTransactions
            return UnrecordedLifecycle(events: derivation.ordered(), nextDue: derivation.nextDue, turns: derivation.turns)
        }
    }

    /// The subscriptions' turns the revenue facts read (trial conversions and
    /// expirations), as ``all(state:events:consumptionReasons:rules:accountTokenUsers:)`` derives them,
    /// without building the events.
    public static func turns(state: CustomerState, events: [Event]) -> SubscriptionTurns {
        var derivation = Derivation(
            state: state, events: events, consumptionReasons: [:], building: .none, accountTokenUsers: false)
        derivation.subscriptions()
        derivation.expirations()
        derivation.turns.subscriptions = derivation.subscriptionTransactions
        return derivation.turns
    }

    /// `periodType` of a transaction (specification section 12).
    public static func periodType(of transaction: TransactionFacts) -> String {
        if transaction.offerDiscountType == "FREE_TRIAL" { return "TRIAL" }
        switch transaction.offerType {
        case 1?: return "INTRO"
        case 2?: return "PROMOTIONAL"
        case 3?: return "OFFER_CODE"
        case 4?: return "WIN_BACK"
        default: return "NORMAL"
        }
    }

    /// `reason` of an EXPIRATION, from the renewal info's `expirationIntent`.
    public static func expirationReason(_ intent: Int64?) -> JSONValue {
        switch intent {
        case nil: return .null
        case 1?: return "VOLUNTARY"
        case 2?: return "BILLING_ERROR"
        case 3?: return "PRICE_INCREASE"
        case 4?: return "PRODUCT_UNAVAILABLE"
        default: return "UNKNOWN"
        }
    }

    /// `refundedAmount`: for REFUND_PRORATED, price x revocationPercentage / 100000, rounded
    /// half away from zero; else (REFUND_FULL, or no type) the price: what the revenue
    /// ledger refunds for the same revocation (section 14).
    static func refundedAmount(price: Int64?, type: RevocationType?, percentage: Int64?) -> Int64? {
        price.map { -RevenueFacts.refundAmount(price: $0, type: type, percentage: percentage) }
    }
}

/// The work of ``LifecycleEvents/all(state:events:consumptionReasons:rules:)``.
private struct Derivation {
    /// An event and the `signedDate` of its source: between two derivations of the
    /// same id, the later-signed source wins, then the greater line.
    struct Found {
        var event: LifecycleEvent
        var signedDate: Int64
    }

    /// Which events are built in full.
    enum Building {
        /// Every one.
        case all
        /// Those due by `now` whose id is not recorded; of the others, the earliest
        /// `effectiveAt` after `now` is kept (``nextDue``).
        case unrecorded(now: Int64, isRecorded: (UInt64) -> Bool)
        /// None (the turns alone are wanted).
        case none
    }

    let state: CustomerState
    let consumptionReasons: [String: String]
    let building: Building
    /// The app users the account token made the customer over time, when it makes its
    /// customer the app user of that UUID (`nil` when it does not).
    let tokenUsers: AccountTokenTimeline?
    /// The earliest `effectiveAt` after `now` (``Building/unrecorded(now:isRecorded:)``).
    var nextDue: Int64? = nil
    /// The subscriptions' turns the revenue facts read, whatever is built.
    var turns = SubscriptionTurns()
    /// The customer's environment name (``EnvironmentSet/displayName``), computed once.
    let customerEnvironment: String?
    /// Every version (the state's and the events') of each transaction some version of which was revoked.
    var versions: [String: [TransactionFacts]] = [:]
    /// The environment each transaction arrived in (the first by name when several), for a
    /// customer whose data came from several.
    var environments: [String: String] = [:]
    /// CONSUMPTION_REQUEST and RESCIND_CONSENT notifications, by UUID.
    var notices: [String: (facts: NotificationFacts, environment: String?)] = [:]
    /// Each subscription's transactions, first to last.
    var subscriptionTransactions: [String: [TransactionFacts]] = [:]
    var found: [String: Found] = [:]

    init(state: CustomerState, events: [Event], consumptionReasons: [String: String], building: Building, accountTokenUsers: Bool) {
        self.state = state
        self.consumptionReasons = consumptionReasons
        self.building = building
        self.tokenUsers = accountTokenUsers ? AccountTokenTimeline(state: state, events: events) : nil
        self.customerEnvironment = state.environments.displayName
        // Which environment each transaction came in matters only for a customer of several.
        let severalEnvironments = state.environments.hasSeveral
        // Every version is read only for transactions some version of which was revoked.
        var revoked = Set<String>()
        // One pass over the transactions: each step copies a version (every string in it retained).
        for version in state.transactions.values {
            if version.facts.revocationDate != nil { revoked.insert(version.facts.transactionId) }
            if version.facts.type == .autoRenewable {
                subscriptionTransactions[version.facts.originalTransactionId, default: []].append(version.facts)
            }
        }
        for event in events {
            let environment = event.environment?.rawValue
            var carried: TransactionFacts? = nil
            switch event.body {
            case .transaction(let t): carried = t.facts
            case .notification(let n):
                carried = n.transaction?.facts
                let about =
                    n.type == .consumptionRequest
                    ? n.transaction.map { state.transactions[$0.facts.transactionId] != nil } ?? false
                    : n.type == .rescindConsent && (n.appTransactionId ?? n.appTransaction?.facts.appTransactionId) == state.key
                if about { notices[n.notificationUUID] = (n, environment) }
            case .renewalInfo, .appTransaction, .receipt, .usage, .operatorAction: break
            }
            // Only this customer's transactions (the state says which): events of others may be given.
            guard let carried, state.transactions[carried.transactionId] != nil else { continue }
            if carried.revocationDate != nil { revoked.insert(carried.transactionId) }
            if severalEnvironments, let environment {
                let id = carried.transactionId
                if environments[id].map({ environment.utf8Precedes($0) }) ?? true { environments[id] = environment }
            }
        }
        if !revoked.isEmpty {
            for id in revoked { if let latest = state.transactions[id] { versions[id] = [latest.facts] } }
            for event in events {
                let carried: TransactionFacts?
                switch event.body {
                case .transaction(let t): carried = t.facts
                case .notification(let n): carried = n.transaction?.facts
                case .renewalInfo, .appTransaction, .receipt, .usage, .operatorAction: carried = nil
                }
                if let carried, versions[carried.transactionId] != nil { versions[carried.transactionId]?.append(carried) }
            }
        }
        for otid in subscriptionTransactions.keys { subscriptionTransactions[otid]?.sort { SubscriptionEvaluation.precedes($0, $1) } }
    }

    /// Every kind of event, in turn.
    mutating func run() {
        subscriptions()
        renewalInfos()
        expirations()
        purchases()
        revocations()
        itemRefunds()
        notifications()
        operatorActions()
    }

    /// The events found, ordered by `effectiveAt`, then `id`.
    func ordered() -> [LifecycleEvent] {
        found.values.map(\.event).sorted {
            $0.effectiveAt != $1.effectiveAt ? $0.effectiveAt < $1.effectiveAt : $0.id.utf8Precedes($1.id)
        }
    }

    /// Whether to build the event whose id `id` hashes and whose `effectiveAt` is `at`
    /// (see ``Building``): an event not due yet only moves ``nextDue``.
    mutating func wants(at: Int64, _ id: (inout LifecycleIdHash) -> Void) -> Bool {
        switch building {
        case .all: return true
        case .none: return false
        case .unrecorded(let now, let isRecorded):
            if at > now {
                nextDue = min(nextDue ?? at, at)
                return false
            }
            var hash = LifecycleIdHash()
            id(&hash)
            return !isRecorded(hash.value)
        }
    }

    /// The environment a transaction came in (the first by name when several), else the customer's.
    func environment(of transactionId: String?) -> String? {
        if let transactionId, !environments.isEmpty, let name = environments[transactionId] { return name }
        return customerEnvironment
    }

    /// Keeps `event`, unless the same id is derived from a later-signed source.
    mutating func add(_ event: LifecycleEvent, signedDate: Int64) {
        if let existing = found[event.id] {
            guard existing.event != event else { return }
            if existing.signedDate > signedDate { return }
            if existing.signedDate == signedDate {
                func text(_ e: LifecycleEvent) -> String { JSONWriter.string(.object(e.line(entitlements: [], recordedAt: 0))) }
                guard text(existing.event).utf8Precedes(text(event)) else { return }
            }
        }
        found[event.id] = Found(event: event, signedDate: signedDate)
    }

    /// An event about transaction `t`.
    func event(_ type: LifecycleEventType, id: String, about t: TransactionFacts?, otid: String?, extra: JSONObject, at: Int64)
        -> LifecycleEvent
    {
        var event = LifecycleEvent(
            id: id, type: type, customerKey: state.key, originalTransactionId: t?.originalTransactionId ?? otid,
            transactionId: t?.transactionId, productId: t?.productId, environment: environment(of: t?.transactionId),
            price: t?.price, currency: t?.currency, extra: extra, effectiveAt: at)
        if let items = t?.extensions?.items { event.itemSKUs = items.compactMap(\.sku) }
        return event
    }

    /// SUBSCRIPTION_STARTED, RENEWAL and PRODUCT_CHANGE.
    mutating func subscriptions() {
        for (otid, transactions) in subscriptionTransactions {
            var previousPeriodType = ""
            for index in transactions.indices {
                // Read in place; copied only to build an event.
                let periodType = LifecycleEvents.periodType(of: transactions[index])
                let purchaseDate = transactions[index].purchaseDate
                defer { previousPeriodType = periodType }
                guard index > 0 else {
                    guard wants(at: purchaseDate, { $0.add(prefix: .subscriptionStarted); $0.add(transactions[index].transactionId) })
                    else { continue }
                    let t = transactions[index]
                    add(
                        event(
                            .subscriptionStarted, id: "SUBSCRIPTION_STARTED:" + t.transactionId, about: t, otid: otid,
                            extra: JSONObject([("periodType", .string(periodType))]), at: t.purchaseDate),
                        signedDate: t.signedDate)
                    continue
                }
                let conversion = previousPeriodType == "TRIAL" && periodType != "TRIAL"
                if conversion {
                    turns.conversions.append(
                        .init(originalTransactionId: otid, transactionId: transactions[index].transactionId, at: purchaseDate))
                }
                let type: LifecycleEventType =
                    transactions[index - 1].productId == transactions[index].productId ? .renewal : .productChange
                guard wants(at: purchaseDate, { $0.add(prefix: type); $0.add(transactions[index].transactionId) }) else { continue }
                let t = transactions[index]
                let previousProductId = transactions[index - 1].productId
                if type == .renewal {
                    add(
                        event(
                            .renewal, id: "RENEWAL:" + t.transactionId, about: t, otid: otid,
                            extra: JSONObject([("periodType", .string(periodType)), ("isTrialConversion", .bool(conversion))]),
                            at: t.purchaseDate),
                        signedDate: t.signedDate)
                } else {
                    add(
                        event(
                            .productChange, id: "PRODUCT_CHANGE:" + t.transactionId, about: t, otid: otid,
                            extra: JSONObject([
                                ("fromProductId", .string(previousProductId)), ("isTrialConversion", .bool(conversion)),
                            ]), at: t.purchaseDate),
                        signedDate: t.signedDate)
                }
            }
        }
    }

    /// The subscription's transaction current at `at`: the latest bought by then
    /// (an upgrade's new transaction is the latest purchase once bought), else the first.
    func current(of otid: String, at: Int64) -> TransactionFacts? {
        guard let transactions = subscriptionTransactions[otid] else { return nil }
        return transactions.last { $0.purchaseDate <= at } ?? transactions.first
    }

    /// AUTO_RENEW_DISABLED, AUTO_RENEW_ENABLED and BILLING_ISSUE, from the renewal-info versions in order.
    mutating func renewalInfos() {
        for (otid, versions) in state.renewalInfos {
            var autoRenew = true
            // A 12-month commitment's own auto-renew (`commitmentAutoRenewStatus`), read as on before any version says.
            var commitmentAutoRenew = true
            var retrying = false
            for index in versions.indices {
                // Read in place; copied (`r`) only to build an event.
                let signedDate = versions[index].facts.signedDate
                let retryingNow = versions[index].facts.isInBillingRetryPeriod
                var autoRenewChanged = false
                if let status = versions[index].facts.autoRenewStatus, status != autoRenew {
                    autoRenew = status
                    autoRenewChanged = true
                    let type: LifecycleEventType = status ? .autoRenewEnabled : .autoRenewDisabled
                    if wants(at: signedDate, { $0.add(prefix: type); $0.add(otid); $0.colon(); $0.add(signedDate) }) {
                        let r = versions[index].facts
                        let extra = status ? JSONObject() : JSONObject([("expirationIntent", r.expirationIntent.map(JSONValue.int) ?? .null)])
                        add(
                            event(
                                type, id: "\(type.rawValue):\(otid):\(signedDate)", about: current(of: otid, at: signedDate), otid: otid,
                                extra: extra, at: signedDate),
                            signedDate: signedDate)
                    }
                }
                // The customer cancels (or restores) the commitment while auto-renew stays on
                // (with auto-renew off, or turned in the same version, its own event says it).
                if let status = versions[index].facts.commitmentAutoRenewStatus, status != commitmentAutoRenew {
                    commitmentAutoRenew = status
                    let type: LifecycleEventType = status ? .autoRenewEnabled : .autoRenewDisabled
                    if autoRenew, !autoRenewChanged,
                        wants(at: signedDate, { $0.add(prefix: type); $0.add(otid); $0.colon(); $0.add(signedDate) })
                    {
                        let r = versions[index].facts
                        let extra =
                            status
                            ? JSONObject([("commitment", true)])
                            : JSONObject([("expirationIntent", r.expirationIntent.map(JSONValue.int) ?? .null), ("commitment", true)])
                        add(
                            event(
                                type, id: "\(type.rawValue):\(otid):\(signedDate)", about: current(of: otid, at: signedDate), otid: otid,
                                extra: extra, at: signedDate),
                            signedDate: signedDate)
                    }
                }
                if retryingNow && !retrying,
                    wants(at: signedDate, { $0.add(prefix: .billingIssue); $0.add(otid); $0.colon(); $0.add(signedDate) })
                {
                    let r = versions[index].facts
                    add(
                        event(
                            .billingIssue, id: "BILLING_ISSUE:\(otid):\(signedDate)", about: current(of: otid, at: signedDate), otid: otid,
                            extra: JSONObject([("gracePeriodExpiresDate", r.gracePeriodExpiresDate.map(JSONValue.int) ?? .null)]),
                            at: signedDate),
                        signedDate: signedDate)
                }
                retrying = retryingNow
            }
        }
    }

    /// EXPIRATION: each moment a subscription's status (section 5) turns `expired`.
    ///
    /// Status changes only at a candidate moment of the subscription (a purchase,
    /// an expiry, a revocation, a renewal info's `signedDate` or grace end), so
    /// deciding it at each, in order, sees every turn. At each moment the status
    /// is section 5's (``SubscriptionEvaluation/status(current:renewalInfo:at:)``)
    /// of the latest transaction bought by then and the renewal info standing
    /// then. `isUpgraded` is not read: a transaction marked upgraded by a later
    /// version was current until its upgrade was bought (the latest purchase
    /// wins once it is), so it does not make an earlier period current again.
    mutating func expirations() {
        for (otid, transactions) in subscriptionTransactions {
            let versions = state.renewalInfos[otid] ?? []
            let ordered = SubscriptionEvaluation.statusMoments(of: transactions, versions: versions)
            // Transactions are sorted by purchaseDate first: those bought by a moment are a prefix.
            var bought = -1
            var standing = 0
            // The status at each moment and the index of the transaction current then.
            var statuses: [(status: SubscriptionStatus, current: Int)?] = []
            statuses.reserveCapacity(ordered.count)
            for moment in ordered {
                while bought + 1 < transactions.count, transactions[bought + 1].purchaseDate <= moment { bought += 1 }
                while standing + 1 < versions.count, versions[standing + 1].facts.signedDate <= moment { standing += 1 }
                guard bought >= 0 else {
                    statuses.append(nil)
                    continue
                }
                let status = SubscriptionEvaluation.status(
                    of: transactions, bought, renewals: versions, versions.isEmpty ? nil : standing, at: moment)
                statuses.append((status, bought))
            }
            for index in ordered.indices where index > 0 {
                guard let now = statuses[index], now.status == .expired, let before = statuses[index - 1]?.status,
                    before == .active || before == .gracePeriod || before == .billingRetry
                else { continue }
                let moment = ordered[index]
                // The reason: the renewal info standing just before the subscription leaves `expired` (or the latest).
                let leaves = ordered.indices.dropFirst(index + 1).first { statuses[$0].map { $0.status != .expired } ?? false }
                let until = leaves.map { ordered[$0] - 1 } ?? Int64.max
                let reason = SubscriptionEvaluation.standingIndex(in: versions, at: until).map { versions[$0].facts }
                turns.expirations.append(
                    .init(
                        originalTransactionId: otid, transactionId: transactions[now.current].transactionId, at: moment,
                        voluntary: reason?.expirationIntent == 1))
                guard wants(at: moment, { $0.add(prefix: .expiration); $0.add(otid); $0.colon(); $0.add(moment) }) else { continue }
                add(
                    event(
                        .expiration, id: "EXPIRATION:\(otid):\(moment)", about: transactions[now.current], otid: otid,
                        extra: JSONObject([("reason", LifecycleEvents.expirationReason(reason?.expirationIntent))]), at: moment),
                    signedDate: reason?.signedDate ?? moment)
            }
        }
    }

    /// PURCHASE: each consumable, non-consumable or non-renewing transaction.
    mutating func purchases() {
        for version in state.transactions.values {
            let t = version.facts
            switch t.type {
            case .consumable, .nonConsumable, .nonRenewing:
                guard wants(at: t.purchaseDate, { $0.add(prefix: .purchase); $0.add(t.transactionId) }) else { continue }
                add(
                    event(
                        .purchase, id: "PURCHASE:" + t.transactionId, about: t, otid: t.originalTransactionId,
                        extra: JSONObject([("quantity", .int(t.quantity)), ("productType", .string(t.type.rawValue))]),
                        at: t.purchaseDate),
                    signedDate: t.signedDate)
            case .autoRenewable, .unknown: continue
            }
        }
    }

    /// REFUND and FAMILY_REVOKE (each revocation date any version carried) and
    /// REFUND_REVERSED (a version without revocation signed next after one with it).
    mutating func revocations() {
        for (id, all) in versions {
            for t in all {
                guard let revoked = t.revocationDate else { continue }
                let type: LifecycleEventType = t.ownership == .familyShared ? .familyRevoke : .refund
                guard wants(at: revoked, { $0.add(prefix: type); $0.add(id); $0.colon(); $0.add(revoked) }) else { continue }
                if type == .familyRevoke {
                    add(
                        event(.familyRevoke, id: "FAMILY_REVOKE:\(id):\(revoked)", about: t, otid: t.originalTransactionId, extra: JSONObject(), at: revoked),
                        signedDate: t.signedDate)
                } else {
                    let extra = JSONObject([
                        ("revocationType", t.revocationType.map { JSONValue.string($0.rawValue) } ?? .null),
                        ("revocationPercentage", t.revocationPercentage.map(JSONValue.int) ?? .null),
                        ("refundedAmount", LifecycleEvents.refundedAmount(price: t.price, type: t.revocationType, percentage: t.revocationPercentage).map(JSONValue.int) ?? .null),
                    ])
                    add(
                        event(.refund, id: "REFUND:\(id):\(revoked)", about: t, otid: t.originalTransactionId, extra: extra, at: revoked),
                        signedDate: t.signedDate)
                }
            }
            // By signedDate: whether that version is revoked (any copy signed then says so).
            var revokedAt: [Int64: Bool] = [:]
            var bySigned: [Int64: TransactionFacts] = [:]
            for t in all {
                revokedAt[t.signedDate] = (revokedAt[t.signedDate] ?? false) || t.revocationDate != nil
                if t.revocationDate == nil { bySigned[t.signedDate] = t }
            }
            let signed = revokedAt.keys.sorted()
            for (previous, next) in zip(signed, signed.dropFirst()) where revokedAt[previous] == true && revokedAt[next] == false {
                guard let t = bySigned[next],
                    wants(at: next, { $0.add(prefix: .refundReversed); $0.add(id); $0.colon(); $0.add(next) })
                else { continue }
                add(
                    event(.refundReversed, id: "REFUND_REVERSED:\(id):\(next)", about: t, otid: t.originalTransactionId, extra: JSONObject(), at: next),
                    signedDate: next)
            }
        }
    }

    /// REFUND of each refund of an Advanced Commerce item (with its `sku`), and of an
    /// item revoked without a refund listed (its price refunded): one item refunded
    /// leaves the others granting.
    mutating func itemRefunds() {
        for version in state.transactions.values {
            let t = version.facts
            guard let items = t.extensions?.items else { continue }
            for item in items {
                let sku = item.sku.map(JSONValue.string) ?? .null
                let label = item.sku ?? ""
                var moments: [(at: Int64, refund: AdvancedCommerceRefund)] = item.refunds.compactMap { refund in
                    refund.refundDate.map { ($0, refund) }
                }
                // Revoked with no refund listed: a full one, as a transaction revoked without
                // a revocationType is; what was refunded is the item's price.
                if moments.isEmpty, let revoked = item.revocationDate { moments.append((revoked, AdvancedCommerceRefund(refundAmount: item.price))) }
                for (moment, refund) in moments {
                    guard
                        wants(at: moment, {
                            $0.add(prefix: .refund); $0.add(t.transactionId); $0.colon(); $0.add(label); $0.colon(); $0.add(moment)
                        })
                    else { continue }
                    let extra = JSONObject([
                        ("revocationType", refund.refundType.map(JSONValue.string) ?? .null),
                        ("revocationPercentage", .null),
                        ("refundedAmount", refund.refundAmount.map(JSONValue.int) ?? .null),
                        ("sku", sku),
                        ("refundType", refund.refundType.map(JSONValue.string) ?? .null),
                        ("refundReason", refund.refundReason.map(JSONValue.string) ?? .null),
                    ])
                    add(
                        event(.refund, id: "REFUND:\(t.transactionId):\(label):\(moment)", about: t, otid: t.originalTransactionId, extra: extra, at: moment),
                        signedDate: t.signedDate)
                }
            }
        }
    }

    /// CONSUMPTION_REQUEST and CONSENT_RESCINDED, one per notification.
    mutating func notifications() {
        for (uuid, notice) in notices {
            let n = notice.facts
            switch n.type {
            case .consumptionRequest:
                guard wants(at: n.signedDate, { $0.add(prefix: .consumptionRequest); $0.add(uuid) }) else { continue }
                let nested = n.transaction?.facts
                let t = nested.flatMap { state.transactions[$0.transactionId]?.facts } ?? nested
                var e = event(
                    .consumptionRequest, id: "CONSUMPTION_REQUEST:" + uuid, about: t, otid: nil,
                    extra: JSONObject([
                        ("deadline", .int(n.signedDate + LifecycleEvents.consumptionAnswerWindow)),
                        ("reason", consumptionReasons[uuid].map(JSONValue.string) ?? .null),
                    ]), at: n.signedDate)
                if let environment = notice.environment { e.environment = environment }
                add(e, signedDate: n.signedDate)
            case .rescindConsent:
                guard wants(at: n.signedDate, { $0.add(prefix: .consentRescinded); $0.add(uuid) }) else { continue }
                var e = event(.consentRescinded, id: "CONSENT_RESCINDED:" + uuid, about: nil, otid: nil, extra: JSONObject(), at: n.signedDate)
                if let environment = notice.environment { e.environment = environment }
                add(e, signedDate: n.signedDate)
            default: continue
            }
        }
    }
}

extension Derivation {
    /// GRANT_STARTED, GRANT_ENDED, GRANT_REVOKED and TRANSFER (specification section 13),
    /// from the operator's records: a grant starts at `from` unless revoked by then,
    /// ends at `until` unless revoked before, and is revoked at its revocation's `at`
    /// when that comes before `until`; a link to another app user than the previous
    /// link's (by recording) is a transfer. Where the account token names the app user,
    /// each change of token before the operator's first link is a transfer too, and
    /// that link's is from the token's app user then.
    mutating func operatorActions() {
        tokenTransfers()
        guard !state.operatorRecords.isEmpty else { return }
        for grant in state.operatorGrants {
            func event(_ type: LifecycleEventType, at: Int64) -> LifecycleEvent {
                var extra = JSONObject()
                extra["grantId"] = .string(grant.id)
                var event = LifecycleEvent(
                    id: type.rawValue + ":" + grant.id, type: type, customerKey: state.key, environment: customerEnvironment,
                    extra: extra, effectiveAt: at)
                event.grantedEntitlements = [grant.entitlement]
                return event
            }
            let revokedAt = grant.revokedAt.flatMap { $0 < grant.until ? $0 : nil }
            if revokedAt.map({ $0 > grant.from }) ?? true,
                wants(at: grant.from, { $0.add(prefix: .grantStarted); $0.add(grant.id) })
            {
                add(event(.grantStarted, at: grant.from), signedDate: grant.record.recordedAt)
            }
            let end: (LifecycleEventType, Int64) = revokedAt.map { (.grantRevoked, $0) } ?? (.grantEnded, grant.until)
            if wants(at: end.1, { $0.add(prefix: end.0); $0.add(grant.id) }) {
                add(event(end.0, at: end.1), signedDate: grant.record.recordedAt)
            }
        }
        let links = state.links
        // Before the operator's first link, the app user the account token made it then, if it does.
        var previous: String? = links.first.flatMap { tokenUsers?.user(at: $0.recordedAt) }
        for link in links {
            defer { previous = link.appUserId }
            guard let from = previous, let to = link.appUserId, from != to else { continue }
            transfer(id: link.id, from: from, to: to, at: link.recordedAt)
        }
    }

    /// A TRANSFER at each change of the account token's app user before the operator's
    /// first link (from then on the link names it), its id `TRANSFER:token:<user>@<at>`.
    mutating func tokenTransfers() {
        guard let changes = tokenUsers?.changes, changes.count > 1 else { return }
        let firstLink = state.operatorRecords.isEmpty ? nil : state.links.first?.recordedAt
        for (previous, change) in zip(changes, changes.dropFirst()) {
            if let firstLink, change.at >= firstLink { break }
            transfer(id: "token:\(change.user)@\(change.at)", from: previous.user, to: change.user, at: change.at)
        }
    }

    /// The TRANSFER `TRANSFER:<id>` of the customer from one app user to another at `at`.
    mutating func transfer(id: String, from: String, to: String, at: Int64) {
        guard wants(at: at, { $0.add(prefix: .transfer); $0.add(id) }) else { return }
        var extra = JSONObject()
        extra["from"] = .string(from)
        extra["to"] = .string(to)
        add(
            LifecycleEvent(
                id: LifecycleEventType.transfer.rawValue + ":" + id, type: .transfer, customerKey: state.key,
                environment: customerEnvironment, extra: extra, effectiveAt: at),
            signedDate: at)
    }
}
