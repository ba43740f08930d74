import EntitlementCore
import TestSupport

/// Random but repeatable histories of many kinds of events over a few
/// customers, for property tests. Every event carries its raw JWS, as at ingest.
struct RandomHistory {
    var rng: SplitMix64
    /// Draws for operator records, apart from ``rng`` so that the signed data of a seed
    /// stays what it was before operator records were generated.
    var ops: SplitMix64
    /// Whether to re-sign content: the same facts under a different JWS with the same `signedDate`.
    var resign: Bool
    let history = History()
    private var nextId = 1
    /// The share of the current purchase's signed objects that carry no
    /// appTransactionId (data signed before Apple added it).
    private var legacy = 0.0
    /// Each subscription made so far, for the migrations drawn at the end.
    private var subscriptions: [(otid: String, product: String, app: String?)] = []

    static let customers: [String?] = ["704000000000001", "704000000000002", "704000000000003", nil]
    static let tokens = ["0b6a1c2e-0000-4000-8000-00000000000a", "0b6a1c2e-0000-4000-8000-00000000000b"]
    static let notificationTypes = [
        ("SUBSCRIBED", "INITIAL_BUY"), ("DID_RENEW", nil), ("DID_FAIL_TO_RENEW", "GRACE_PERIOD"), ("EXPIRED", "VOLUNTARY"),
        ("REFUND", nil), ("REFUND_REVERSED", nil), ("RENEWAL_EXTENDED", nil), ("ONE_TIME_CHARGE", nil),
        ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED"), ("SOMETHING_NEW", nil),
    ]

    init(seed: UInt64, resign: Bool = true) {
        rng = SplitMix64(seed: seed)
        ops = SplitMix64(seed: seed &* 0x9E37_79B9 &+ 17)
        self.resign = resign
    }

    /// Generates the history and returns its events in log order.
    static func events(seed: UInt64, resign: Bool = true) -> [Event] {
        var generator = RandomHistory(seed: seed, resign: resign)
        for app in customers { generator.customer(app) }
        generator.migrations(seed: seed)
        return generator.history.events
    }

    private mutating func id(_ prefix: String) -> String {
        defer { nextId += 1 }
        let number = String(nextId)
        return prefix + String(repeating: "0", count: 12 - number.count) + number
    }

    private mutating func token() -> String? { rng.chance(0.3) ? rng.pick(Self.tokens) : nil }

    /// The appTransactionId an object of the current purchase carries: none
    /// for a legacy share of them, so that links arrive first, last, in the
    /// middle, twice, or never.
    private mutating func carried(_ app: String?) -> String? {
        guard app != nil, legacy > 0 else { return app }
        return rng.chance(legacy) ? nil : app
    }

    /// Starts a purchase: a third of a customer's purchases are partly legacy,
    /// some wholly (they stay an `otid:` customer).
    private mutating func beginPurchase(_ app: String?) {
        legacy = app != nil && rng.chance(0.35) ? rng.pick([0.5, 0.8, 1.0]) : 0
    }

    /// Now and then another customer claims the purchase: a conflicting link,
    /// later signed (it decides) or in the same millisecond (the raw decides).
    private mutating func conflictingClaim(original: String, product: String, signed: Int64, app: String?) {
        guard rng.chance(0.12) else { return }
        let other = rng.pick(Self.customers.compactMap { $0 }.filter { $0 != app })
        // The latest claim so far on this originalTransactionId: tie with it, or sign after it.
        let latest = history.events.flatMap(\.linkClaims).filter { $0.originalTransactionId == original }.map(\.signedDate).max() ?? signed
        let when = rng.chance(0.5) ? latest : latest + rng.int(1...(40 * Time.day))
        emit(renewal(original: original, product: product, autoRenew: rng.chance(0.5), signed: when, token: token(), app: other))
    }

    private mutating func customer(_ app: String?) {
        let first = history.events.count
        for _ in 0..<rng.int(0...2) { subscription(app) }
        for _ in 0..<rng.int(0...4) { oneOff(app) }
        usages(app, since: first)
        operatorActions(since: first)
        if let app, rng.chance(0.5) {
            let created = Time.day(rng.int(0...60))
            emit(appTransaction(app, created: created))
            if rng.chance(0.3) { emit(appTransaction(app, created: created, originalPurchase: Time.t0 - Time.day)) }
            if rng.chance(0.3) { emit(appTransaction(app, created: created + rng.int(1...Time.day))) }
        }
    }

    /// Usage records for the customer whose events start at `first`: spends of
    /// its currencies (sometimes more than it has), consumed shares, duplicates,
    /// and now and then a second record with the same id and other content.
    private mutating func usages(_ app: String?, since first: Int) {
        var transactions: [String: CustomerKey] = [:]  // transactionId -> the key its events carry
        for event in history.events[first...] {
            if let id = event.transactionId, let key = event.customerKey { transactions[id] = key }
        }
        // The key of one of its purchases (legacy objects without an appTransactionId are keyed otid:<X>).
        guard let key = transactions.values.sorted().first else { return }
        _ = app
        let ids = transactions.filter { $0.value == key }.keys.sorted()
        for _ in 0..<rng.int(0...6) {
            let at = Time.day(rng.int(0...45)) + rng.int(0...Time.day)
            let amount: UsageAmount
            if rng.chance(0.7) || ids.isEmpty {
                amount = .spend(currency: rng.pick(["coins", Product.gems]), units: rng.int(1...250))
            } else {
                amount = .consumed(transactionId: rng.pick(ids), share: rng.int(0...100_000))
            }
            let usage = UsageFacts(usageId: id("usage-"), customer: key, at: at, amount: amount)
            history.use(usage)
            if rng.chance(0.2) { history.use(usage) }
            if rng.chance(0.1) {
                var other = usage
                other.at += rng.int(0...1) * Time.hour
                other.amount = .spend(currency: "coins", units: rng.int(1...50))
                history.use(other)
            }
        }
    }

    static let appUsers = ["alice", "bob", "carol"]

    /// Operator records for the customer whose events start at `first`: grants (some
    /// revoked, before, during or after them), credits (some negative), links to app
    /// users (transfers), grants and credits to an app user itself; duplicates, and now
    /// and then a second record with the same identity and other content. A record
    /// filed under an `otid:` key follows that customer when it merges.
    private mutating func operatorActions(since first: Int) {
        let keys = Set(history.events[first...].compactMap(\.customerKey)).sorted()
        guard !keys.isEmpty else { return }
        for _ in 0..<ops.int(0...6) {
            let key = ops.chance(0.2) ? OperatorRecord.appUserKey(ops.pick(Self.appUsers)) : ops.pick(keys)
            let recordedAt = Time.day(ops.int(0...60)) + ops.int(0...Time.day)
            var record = OperatorRecord(
                id: id("op-"), recordedAt: recordedAt, operatorName: ops.chance(0.5) ? "support" : nil,
                reason: ops.chance(0.3) ? "outage" : nil, action: .link)
            switch ops.int(0...2) {
            case 0:
                let from = Time.day(ops.int(0...45)) + ops.int(0...Time.hour)
                record.action = .grant(entitlement: ops.pick(["pro", "vip"]), from: from, until: from + Time.day(ops.int(1...20)))
            case 1:
                record.action = .credit(currency: ops.pick(["coins", Product.gems]), units: ops.chance(0.2) ? -ops.int(1...50) : ops.int(1...200))
            default:
                if OperatorRecord.appUser(ofKey: key) == nil {
                    record.appUserId = ops.pick(Self.appUsers)
                    record.action = .link
                } else {
                    record.action = .credit(currency: "coins", units: ops.int(1...20))
                }
            }
            record.target(key)
            history.operate(record)
            if ops.chance(0.2) { history.operate(record) }
            if case .grant(_, let from, let until) = record.action, ops.chance(0.4) {
                var revocation = record
                revocation.recordedAt = recordedAt + ops.int(0...Time.day)
                revocation.action = .grantRevoked(at: from + ops.int(-Time.day...(until - from + Time.day)))
                history.operate(revocation)
                if ops.chance(0.2) { history.operate(revocation) }
            }
            if ops.chance(0.1) {
                var other = record
                other.recordedAt += ops.int(0...1) * Time.hour
                other.reason = "another"
                history.operate(other)
            }
        }
    }

    private mutating func subscription(_ app: String?) {
        let otid = id("2000")
        beginPurchase(app)
        let product = rng.pick([Product.monthly, Product.premium, Product.basic])
        defer { subscriptions.append((otid, product, app)) }
        var purchase = Time.day(rng.int(0...10)) + rng.int(0...Time.hour)
        // A third of subscriptions are months of a 12-month commitment (chosen by id, so
        // that the random draws, and with them the rest of the history, stay as they were).
        let commitment = otid.hasSuffix("3") || otid.hasSuffix("6") || otid.hasSuffix("9")
        let commitmentExpires = purchase + 360 * Time.day
        let periods = rng.int(1...4)
        for period in 0..<periods {
            let transactionId = period == 0 ? otid : id("2000")
            let expires = purchase + 30 * Time.day
            let signed = purchase + rng.int(0...1000)
            let extra = commitment ? Commitment.info(Int64(period + 1), expires: commitmentExpires) : []
            let base = transaction(
                transactionId, original: otid, product: product, purchase: purchase, expires: expires, signed: signed,
                token: token(), app: carried(app), extra: extra)
            emit(base)
            variants(of: base, product: product, original: otid, app: app, extra: extra)
            if period < periods - 1, rng.chance(0.2) {
                emit(transaction(
                    transactionId, original: otid, product: product, purchase: purchase, expires: expires,
                    signed: signed + rng.int(1...Time.day), upgraded: true, app: carried(app), extra: extra))
            }
            // Renewal infos around this period.
            for _ in 0..<rng.int(0...2) {
                let renewalSigned = purchase + rng.int(0...(30 * Time.day))
                let retry = rng.chance(0.3)
                // The commitment's own auto-renew turns off now and then (by the signing millisecond).
                let commitmentInfo: [(String, JSONValue?)] =
                    commitment
                    ? [
                        (
                            "commitmentInfo",
                            object([("commitmentAutoRenewStatus", json(Int64(renewalSigned % 3 == 0 ? 0 : 1)))])
                        )
                    ] : []
                let info = renewal(
                    original: otid, product: product,
                    autoRenewProduct: rng.chance(0.2) ? Product.basic : product, autoRenew: rng.chance(0.7),
                    retry: retry, grace: retry && rng.chance(0.5) ? expires + 6 * Time.day : nil,
                    signed: renewalSigned, token: token(), app: carried(app), extra: commitmentInfo)
                emit(info)
                if rng.chance(0.25) {
                    // A different renewal info signed in the same millisecond: the raw decides.
                    emit(renewal(
                        original: otid, product: product, autoRenew: !rng.chance(0.5), retry: !retry,
                        signed: renewalSigned, token: token(), app: carried(app)))
                }
            }
            purchase = expires + (rng.chance(0.3) ? rng.int(1...(10 * Time.day)) : 0)
        }
        conflictingClaim(original: otid, product: product, signed: purchase, app: app)
    }

    /// Subscriptions migrated from earlier ones (`previousOriginalTransactionId`), some
    /// from a migrated one, their objects carrying the customer's appTransactionId or
    /// not; now and then a renewal info that says nothing of where it came from. Drawn
    /// after every customer, so that the rest of a seed's history stays what it was.
    private mutating func migrations(seed: UInt64) {
        var moves = SplitMix64(seed: seed &* 0x2545_F491 &+ 29)
        var sources = subscriptions
        for _ in 0..<moves.int(0...3) where !sources.isEmpty {
            let from = moves.pick(sources)
            let otid = id("2000")
            var purchase = Time.day(moves.int(20...60)) + moves.int(0...Time.hour)
            for period in 0..<moves.int(1...2) {
                let app = moves.chance(0.5) ? nil : from.app
                let migrated = transaction(
                    period == 0 ? otid : id("2000"), original: otid, product: from.product, purchase: purchase,
                    expires: purchase + 30 * Time.day, signed: purchase + moves.int(0...1000), app: app,
                    extra: [("previousOriginalTransactionId", json(from.otid))])
                emit(migrated)
                purchase += 30 * Time.day
            }
            if moves.chance(0.4) {
                emit(renewal(original: otid, product: from.product, signed: purchase - moves.int(1...Time.day), app: nil))
            }
            sources.append((otid, from.product, from.app))
        }
    }

    private mutating func oneOff(_ app: String?) {
        beginPurchase(app)
        let product = rng.pick([Product.lifetime, Product.coins, Product.gems, Product.pass, Product.dayPass, Product.openPass])
        let purchase = Time.day(rng.int(0...40)) + rng.int(0...Time.day)
        let quantity: Int64 = Product.type(of: product) == "Consumable" ? rng.int(1...5) : 1
        let transactionId = id("3000")
        // Some lifetime purchases are Advanced Commerce purchases of two SKUs, one revoked a day later.
        let commerce = product == Product.lifetime && (transactionId.hasSuffix("2") || transactionId.hasSuffix("5"))
        let extra: [(String, JSONValue?)] =
            commerce
            ? [
                (
                    "advancedCommerceInfo",
                    object([("items", .array([Commerce.item("SKU-ALPHA"), Commerce.item("SKU-BETA", revoked: purchase + Time.day)]))])
                )
            ] : []
        let base = transaction(
            transactionId, product: product, purchase: purchase, signed: purchase + rng.int(0...1000), quantity: quantity,
            token: token(), app: carried(app), extra: extra)
        emit(base)
        variants(of: base, product: product, original: nil, app: app, extra: extra)
    }

    /// Later versions of a transaction: refunds, reversals, extensions, ties.
    private mutating func variants(
        of base: SignedTransaction, product: String, original: String?, app: String?, extra: [(String, JSONValue?)] = []
    ) {
        let p = base.payload
        func version(
            signed: Int64, expires: Int64? = p.expiresDate, revoked: Int64? = nil, type: String? = nil,
            percentage: Int64? = nil
        ) -> SignedTransaction {
            transaction(
                p.transactionId, original: original, product: product, purchase: p.purchaseDate, expires: expires,
                signed: signed, quantity: p.quantity, revoked: revoked, revocationType: type,
                revocationPercentage: percentage, token: p.appAccountToken, app: carried(app), extra: extra)
        }
        var signed = p.signedDate
        if rng.chance(0.25) {
            // A different version signed in the same millisecond.
            emit(version(signed: signed, expires: p.expiresDate.map { $0 + Time.day }, revoked: rng.chance(0.5) ? signed : nil))
        }
        if rng.chance(0.35) {
            signed += rng.int(1...(20 * Time.day))
            let type = rng.pick(["REFUND_FULL", "REFUND_PRORATED", "FAMILY_REVOKE"])
            emit(version(
                signed: signed, revoked: signed, type: rng.chance(0.9) ? type : nil,
                percentage: type == "REFUND_PRORATED" ? rng.int(0...100_000) : nil))
            if rng.chance(0.4) {
                signed += rng.int(1...(5 * Time.day))
                emit(version(signed: signed))
            }
        }
        if p.expiresDate != nil, rng.chance(0.2) {
            signed += rng.int(1...(5 * Time.day))
            emit(version(signed: signed, expires: p.expiresDate.map { $0 + 7 * Time.day }))
        }
    }

    private mutating func emit(_ transaction: SignedTransaction) {
        wrap(.transaction(transaction))
        if rng.chance(0.2) { wrap(.transaction(transaction)) }
        if resign, rng.chance(0.15) {
            wrap(.transaction(SignedTransaction(jws: transaction.jws + "~resigned", payload: transaction.payload)))
        }
    }

    private mutating func emit(_ renewalInfo: SignedRenewalInfo) {
        wrap(.renewalInfo(renewalInfo))
        if rng.chance(0.2) { wrap(.renewalInfo(renewalInfo)) }
        if resign, rng.chance(0.15) {
            wrap(.renewalInfo(SignedRenewalInfo(jws: renewalInfo.jws + "~resigned", payload: renewalInfo.payload)))
        }
    }

    private mutating func emit(_ appTransaction: SignedAppTransaction) {
        if rng.chance(0.5) {
            history.add(.appTransaction(appTransaction))
        } else {
            history.notify("RESCIND_CONSENT", signed: appTransaction.payload.receiptCreationDate, appTransaction: appTransaction, data: false)
        }
    }

    /// Appends the object standalone or nested in a notification of a random type.
    private mutating func wrap(_ input: VerifiedInput) {
        guard rng.chance(0.6) else {
            history.add(input)
            return
        }
        let (type, subtype) = rng.pick(Self.notificationTypes)
        switch input {
        case .transaction(let transaction):
            history.notify(type, subtype, signed: transaction.payload.signedDate + rng.int(0...100), transaction: transaction)
        case .renewalInfo(let renewalInfo):
            history.notify(type, subtype, signed: renewalInfo.payload.signedDate + rng.int(0...100), renewal: renewalInfo)
        case .notification, .appTransaction, .receipt:
            history.add(input)
        }
    }
}

extension SplitMix64 {
    /// `events` shuffled, with about `duplicates` of them (picked at random) applied twice.
    mutating func shuffledWithDuplicates(_ events: [Event], duplicates: Double = 0.3) -> [Event] {
        var result = events
        for _ in 0..<Int(Double(events.count) * duplicates) where !events.isEmpty {
            result.append(pick(events))
        }
        result.shuffle(using: &self)
        return result
    }
}

/// Each customer's state after `events` in the order given, customers linked
/// as specification section 5 says (``CustomerLinks``).
func reduceAll(_ events: [Event], rules: Rules = testRules) throws(MissingRawJWS) -> [CustomerKey: CustomerState] {
    try CustomerLinks.customers(of: events, rules: rules)
}
