/// A customer's timeline: every moment at which the answer changed, and why
/// (specification section 7).
///
/// Candidate moments are every `purchaseDate`, `expiresDate`,
/// `gracePeriodExpiresDate`, `revocationDate` and renewal-info `signedDate`
/// in the customer's data, the start and end of every pass window, and the
/// `at` of every usage record. At
/// each moment M the customer is evaluated at M and at M - 1, with everything
/// known now, and each difference is one ``HistoryLine``: entitlements first
/// (by name), then subscriptions (by `originalTransactionId`), then balances
/// (by currency). A pure function of the state, the events and the rules.
public enum CustomerHistory {
    /// The timeline of `state` up to `until` (inclusive), oldest first.
    /// - Parameters:
    ///   - state: The customer's state (everything known now).
    ///   - events: The customer's events: they tell which notification brought
    ///     each signed object (any order; only notifications matter).
    ///   - rules: What each product grants.
    ///   - until: The last moment to consider, in milliseconds since 1970.
    public static func timeline(
        state: CustomerState, events: some Sequence<Event>, rules: Rules, until: Int64
    ) -> [HistoryLine] {
        let sources = HistorySources(state: state, events: events, rules: rules, until: until)
        var lines: [HistoryLine] = []
        for moment in sources.moments where moment <= until && moment > Int64.min {
            let before = Evaluation.evaluate(state, rules: rules, at: moment - 1)
            let after = Evaluation.evaluate(state, rules: rules, at: moment)
            lines.append(contentsOf: differences(before, after, at: moment, sources: sources, rules: rules))
        }
        return lines
    }

    /// The lines for the differences between the answers at `at - 1` and `at`.
    static func differences(
        _ before: CustomerView, _ after: CustomerView, at: Int64, sources: HistorySources, rules: Rules
    ) -> [HistoryLine] {
        var lines: [HistoryLine] = []
        let names = Set(before.entitlements.map(\.name)).union(after.entitlements.map(\.name)).sorted { $0.utf8Precedes($1) }
        for name in names {
            let old = before.entitlement(name) ?? EntitlementView(name: name, active: false, expiresDate: nil)
            let new = after.entitlement(name) ?? EntitlementView(name: name, active: false, expiresDate: nil)
            guard
                old.active != new.active || old.expiresDate != new.expiresDate || old.productId != new.productId
                    || old.grantId != new.grantId
            else { continue }
            let cause = sources.cause(at: at) { source in
                if let granted = source.entitlement { return granted == name ? 0 : 3 }
                let grants = source.productId.map { rules.products[$0]?.entitlements.contains(name) ?? false } ?? false
                let names = source.productId == new.productId || source.productId == old.productId
                return (grants ? 0 : 2) + (names ? 0 : 1)
            }
            lines.append(
                HistoryLine(
                    at: at, change: .entitlement(name: name, active: new.active, expiresDate: new.expiresDate, productId: new.productId),
                    cause: cause))
        }
        for subscription in after.subscriptions {
            let previous = before.subscription(subscription.originalTransactionId)?.status
            guard previous != subscription.status else { continue }
            let cause = sources.cause(at: at) { $0.originalTransactionId == subscription.originalTransactionId ? 0 : 1 }
            lines.append(
                HistoryLine(
                    at: at,
                    change: .subscription(
                        originalTransactionId: subscription.originalTransactionId, status: subscription.status, previous: previous),
                    cause: cause))
        }
        let currencies = Set(before.balances.map(\.currency)).union(after.balances.map(\.currency)).sorted { $0.utf8Precedes($1) }
        for currency in currencies {
            let previous = before.balances.first { $0.currency == currency }?.amount
            let value = after.balance(currency)
            guard previous != value else { continue }
            let cause = sources.cause(at: at) { source in
                if let spent = source.currency { return spent == currency ? 0 : 1 }
                guard let product = source.productId else { return 1 }
                return (rules.products[product]?.currency ?? product) == currency ? 0 : 1
            }
            lines.append(HistoryLine(at: at, change: .balance(currency: currency, value: value, previous: previous), cause: cause))
        }
        return lines
    }
}

/// Every dated fact of one customer that can change an answer, and the
/// notification that brought each.
struct HistorySources {
    /// One signed fact whose date is a candidate moment.
    struct Source {
        var moment: Int64
        var cause: HistoryCause
        /// The product it is about (a transaction's; a renewal info's subscription's).
        var productId: String?
        var originalTransactionId: String?
        /// The currency a usage record spent (or a credit gave).
        var currency: String? = nil
        /// The entitlement an operator's grant gives.
        var entitlement: String? = nil
        /// Lower is preferred when several sources share a moment.
        var priority: Int
    }

    private(set) var moments: [Int64] = []
    private var byMoment: [Int64: [Source]] = [:]

    /// - Parameter momentsOnly: only ``moments`` is wanted (when an answer may
    ///   change, not why): no cause is built.
    init(state: __shared CustomerState, events: some Sequence<Event>, rules: Rules, until: Int64, momentsOnly: Bool = false) {
        let carriers = momentsOnly ? NotificationCarriers(events: [Event]()) : NotificationCarriers(events: events)
        var sources: [Source] = []
        var bare: [Int64] = []
        if momentsOnly { bare.reserveCapacity(3 * state.transactions.count + 2 * state.renewalInfos.count + 4) }
        func add(_ moment: Int64?, _ cause: @autoclosure () -> HistoryCause, product: @autoclosure () -> String?, otid: String?, priority: Int) {
            guard let moment else { return }
            if momentsOnly {
                bare.append(moment)
                return
            }
            sources.append(Source(moment: moment, cause: cause(), productId: product(), originalTransactionId: otid, priority: priority))
        }
        for version in state.transactions.values {
            let t = version.facts
            func cause(_ field: String, _ value: Int64?) -> HistoryCause {
                var cause = HistoryCause(kind: Self.causeKind(t), id: t.transactionId, field: field)
                if let notification = carriers.transaction(t.transactionId, field: field, value: value) {
                    cause.notificationType = notification.type
                    cause.subtype = notification.subtype
                }
                return cause
            }
            add(t.revocationDate, cause("revocationDate", t.revocationDate), product: t.productId, otid: t.originalTransactionId, priority: 0)
            add(t.purchaseDate, cause("purchaseDate", t.purchaseDate), product: t.productId, otid: t.originalTransactionId, priority: 1)
            if t.type != .nonRenewing {
                add(t.expiresDate, cause("expiresDate", t.expiresDate), product: t.productId, otid: t.originalTransactionId, priority: 3)
            }
            // An Advanced Commerce item revoked alone takes its SKU's entitlements then.
            for item in t.extensions?.items ?? [] where item.revocationDate != nil {
                add(
                    item.revocationDate, cause("advancedCommerceInfo.items.revocationDate", item.revocationDate), product: t.productId,
                    otid: t.originalTransactionId, priority: 0)
            }
        }
        if rules.consentRescindedRevokesAccess, let rescinded = state.consentRescindedAt {
            add(
                rescinded, HistoryCause(kind: .notification, id: "RESCIND_CONSENT", field: "signedDate", notificationType: "RESCIND_CONSENT"),
                product: nil, otid: nil, priority: 0)
        }
        for (otid, versions) in state.renewalInfos {
            // The subscription's product: that of its latest transaction (renewal infos may not say).
            func product() -> String? {
                state.transactions.values.filter { $0.facts.originalTransactionId == otid }
                    .max { SubscriptionEvaluation.precedes($0.facts, $1.facts) }?.facts.productId
            }
            for version in versions {
                let r = version.facts
                if momentsOnly {
                    bare.append(r.signedDate)
                    if let grace = r.gracePeriodExpiresDate { bare.append(grace) }
                    continue
                }
                var cause = HistoryCause(kind: .renewalInfo, id: otid, signedDate: r.signedDate)
                if let notification = carriers.renewalInfo(otid, signedDate: r.signedDate) {
                    cause.notificationType = notification.type
                    cause.subtype = notification.subtype
                }
                add(r.signedDate, cause, product: r.productId ?? product(), otid: otid, priority: 5)
                if let grace = r.gracePeriodExpiresDate {
                    var graceCause = cause
                    graceCause.field = "gracePeriodExpiresDate"
                    add(grace, graceCause, product: r.productId ?? product(), otid: otid, priority: 4)
                }
            }
        }
        // Pass windows: they move only when a pass is revoked, so the windows
        // standing just before and at each revocation, and at `until`, are all of them.
        // Passes as evaluation types them: a receipt's one-time entry is one when its rule has `durationDays`.
        let passes = state.transactions.values.filter { $0.facts.evaluatedType(rules: rules) == .nonRenewing }
        if !passes.isEmpty {
            var epochs: Set<Int64> = [until]
            for pass in passes {
                if let revoked = pass.facts.revocationDate, revoked <= until {
                    epochs.insert(revoked)
                    if revoked > Int64.min { epochs.insert(revoked - 1) }
                }
            }
            var seen = Set<PassWindowKey>()
            for epoch in epochs {
                for purchase in Evaluation.evaluate(state, rules: rules, at: epoch).purchases {
                    guard let start = purchase.startsDate, let end = purchase.expiresDate else { continue }
                    guard seen.insert(PassWindowKey(transactionId: purchase.transactionId, start: start, end: end)).inserted else { continue }
                    let kind = state.transactions[purchase.transactionId].map { Self.causeKind($0.facts) } ?? .transaction
                    var startCause = HistoryCause(kind: kind, id: purchase.transactionId, field: "purchaseDate")
                    var endCause = HistoryCause(kind: kind, id: purchase.transactionId, field: "expiresDate")
                    if start != purchase.purchaseDate { startCause.field = "windowStart" }
                    if let notification = carriers.transaction(purchase.transactionId, field: "purchaseDate", value: purchase.purchaseDate) {
                        startCause.notificationType = notification.type
                        startCause.subtype = notification.subtype
                        endCause.notificationType = notification.type
                        endCause.subtype = notification.subtype
                    }
                    add(start, startCause, product: purchase.productId, otid: nil, priority: 2)
                    add(end, endCause, product: purchase.productId, otid: nil, priority: 3)
                }
            }
        }
        // Usage records (the operator's word): a spend changes a balance at its `at`.
        for usage in state.usages.values {
            if momentsOnly {
                bare.append(usage.at)
                continue
            }
            var source = Source(
                moment: usage.at, cause: HistoryCause(kind: .usage, id: usage.usageId), productId: nil, originalTransactionId: nil,
                priority: 6)
            if case .spend(let currency, _) = usage.amount { source.currency = currency }
            sources.append(source)
        }
        // Operator records: a grant starts and ends, a credit changes a balance when recorded.
        for grant in OperatorGrant.grants(in: state.operatorRecords.values) {
            var dates: [(Int64, String)] = [(grant.from, "from"), (grant.until, "until")]
            if let revokedAt = grant.revokedAt { dates.append((revokedAt, "revokedAt")) }
            for (moment, field) in dates {
                if momentsOnly {
                    bare.append(moment)
                    continue
                }
                var source = Source(
                    moment: moment, cause: HistoryCause(kind: .grant, id: grant.id, field: field), productId: nil,
                    originalTransactionId: nil, priority: 7)
                source.entitlement = grant.entitlement
                sources.append(source)
            }
        }
        for record in state.operatorRecords.values {
            guard case .credit(let currency, _) = record.action else { continue }
            if momentsOnly {
                bare.append(record.recordedAt)
                continue
            }
            var source = Source(
                moment: record.recordedAt, cause: HistoryCause(kind: .credit, id: record.id), productId: nil,
                originalTransactionId: nil, priority: 6)
            source.currency = currency
            sources.append(source)
        }
        if momentsOnly {
            // Sorted, then each moment kept once: a customer has a few dozen, so no set is built.
            bare.sort()
            moments.reserveCapacity(bare.count)
            for moment in bare where moment != moments.last { moments.append(moment) }
            return
        }
        for source in sources { byMoment[source.moment, default: []].append(source) }
        moments = byMoment.keys.sorted()
    }

    /// The cause of a change at `moment`: among the sources dated then, the
    /// one `relevance` ranks lowest, then by priority, then by id.
    func cause(at moment: Int64, relevance: (Source) -> Int) -> HistoryCause? {
        guard let candidates = byMoment[moment] else { return nil }
        return candidates.min { lhs, rhs in
            let (l, r) = (relevance(lhs), relevance(rhs))
            if l != r { return l < r }
            if lhs.priority != rhs.priority { return lhs.priority < rhs.priority }
            return lhs.cause.precedes(rhs.cause)
        }?.cause
    }

    /// `receipt` for a legacy receipt's entry, else `transaction`.
    static func causeKind(_ facts: TransactionFacts) -> HistoryCause.Kind {
        facts.receiptDigest == nil ? .transaction : .receipt
    }
}

private struct PassWindowKey: Hashable {
    var transactionId: String
    var start: Int64
    var end: Int64
}

/// Which notification brought each version of a signed object: the earliest
/// event that carried it (by the object's `signedDate`, then the log order),
/// when that event is a notification.
struct NotificationCarriers {
    struct Carrier {
        /// `nil` when the object came on its own, not in a notification.
        var type: String?
        var subtype: String?
        /// Which carrier is named, the least first: the carried object's `signedDate`; a
        /// notification before the object on its own; the notification's `signedDate`,
        /// then its `notificationUUID`. Nothing of the arrival order, so the same data
        /// names the same carrier.
        var order: Order

        struct Order: Comparable {
            var objectSigned: Int64
            var standalone: Bool
            var notificationSigned: Int64 = 0
            var notificationUUID: String = ""

            static func < (lhs: Order, rhs: Order) -> Bool {
                if lhs.objectSigned != rhs.objectSigned { return lhs.objectSigned < rhs.objectSigned }
                if lhs.standalone != rhs.standalone { return !lhs.standalone }
                if lhs.notificationSigned != rhs.notificationSigned { return lhs.notificationSigned < rhs.notificationSigned }
                return lhs.notificationUUID.utf8Precedes(rhs.notificationUUID)
            }
        }
    }

    /// Per `transactionId`: every version carried, and by what.
    private var transactions: [String: [(facts: TransactionFacts, carrier: Carrier)]] = [:]
    /// Per `originalTransactionId` and `signedDate`.
    private var renewalInfos: [String: [Int64: Carrier]] = [:]

    init(events: some Sequence<Event>) {
        for event in events {
            var type: String? = nil
            var subtype: String? = nil
            var notification: (signed: Int64, uuid: String)? = nil
            var transaction: TransactionFacts? = nil
            var renewal: RenewalFacts? = nil
            func order(_ signed: Int64) -> Carrier.Order {
                Carrier.Order(
                    objectSigned: signed, standalone: notification == nil, notificationSigned: notification?.signed ?? 0,
                    notificationUUID: notification?.uuid ?? "")
            }
            switch event.body {
            case .notification(let n):
                type = n.type.rawValue
                subtype = n.subtype?.rawValue
                notification = (n.signedDate, n.notificationUUID)
                transaction = n.transaction?.facts
                renewal = n.renewalInfo?.facts
            case .transaction(let t): transaction = t.facts
            case .renewalInfo(let r): renewal = r.facts
            case .receipt(let receipt):
                for t in receipt.transactions {
                    transactions[t.facts.transactionId, default: []].append(
                        (t.facts, Carrier(type: nil, subtype: nil, order: order(t.facts.signedDate))))
                }
            case .appTransaction, .usage, .operatorAction: break
            }
            if let t = transaction {
                transactions[t.transactionId, default: []].append(
                    (t, Carrier(type: type, subtype: subtype, order: order(t.signedDate))))
            }
            if let r = renewal {
                let carrier = Carrier(type: type, subtype: subtype, order: order(r.signedDate))
                if let existing = renewalInfos[r.originalTransactionId]?[r.signedDate], existing.order < carrier.order { continue }
                renewalInfos[r.originalTransactionId, default: [:]][r.signedDate] = carrier
            }
        }
    }

    /// The earliest notification that carried transaction `id` with `field` equal to `value`.
    func transaction(_ id: String, field: String, value: Int64?) -> Carrier? {
        guard let versions = transactions[id] else { return nil }
        return versions.filter { version in
            switch field {
            case "purchaseDate": return version.facts.purchaseDate == value
            case "expiresDate": return version.facts.expiresDate == value
            case "revocationDate": return version.facts.revocationDate == value
            case "advancedCommerceInfo.items.revocationDate":
                return version.facts.extensions?.items?.contains { $0.revocationDate == value } ?? false
            default: return true
            }
        }
        .min { $0.carrier.order < $1.carrier.order }.flatMap { $0.carrier.type == nil ? nil : $0.carrier }
    }

    /// The earliest notification that carried the renewal info of `originalTransactionId` signed at `signedDate`.
    func renewalInfo(_ originalTransactionId: String, signedDate: Int64) -> Carrier? {
        renewalInfos[originalTransactionId]?[signedDate].flatMap { $0.type == nil ? nil : $0 }
    }
}
