import EntitlementCore
import Testing
import TestSupport

/// Scenarios of Apple's 2025–2026 additions, each checked in every order of
/// arrival (all of them for short scenarios, many shuffles with duplicates for
/// longer ones): the same state, the same answers, the same lifecycle events,
/// and replay (facts from the codec, raws loaded on demand) equal to ingest.
@Suite("Commitments, Advanced Commerce and migrations in every order")
struct CommitmentAndCommercePropertyTests {
    /// What a scenario expects of the customer's answers, whatever the order.
    typealias Check = (_ view: (Int64) -> CustomerView, _ lifecycle: [LifecycleEvent]) -> Void

    /// Every permutation of `count` indices when there are at most 7, else
    /// `rounds` shuffles with duplicates (and the reverse order).
    static func orders(of events: [Event], seed: UInt64, rounds: Int = 150) -> [[Event]] {
        if events.count <= 7 {
            var result: [[Event]] = []
            func permute(_ prefix: [Event], _ rest: [Event]) {
                if rest.isEmpty {
                    result.append(prefix)
                    return
                }
                for index in rest.indices {
                    var remaining = rest
                    let next = remaining.remove(at: index)
                    permute(prefix + [next], remaining)
                }
            }
            permute([], events)
            return result
        }
        var rng = SplitMix64(seed: seed)
        return [events, events.reversed()] + (0..<rounds).map { _ in rng.shuffledWithDuplicates(events) }
    }

    /// Checks `events` in every order against the reference (log order), and `check` on each.
    static func everyOrder(
        _ events: [Event], customer: CustomerKey = Customer.app, rules: Rules, moments: [Int64], seed: UInt64,
        check: Check
    ) throws {
        let reference = try reduceAll(events, rules: rules)
        let state = try #require(reference[customer])
        let lifecycle = LifecycleEvents.all(state: state, events: events, rules: rules)
        check({ Evaluation.evaluate(state, rules: rules, at: $0) }, lifecycle)

        for order in orders(of: events, seed: seed) {
            let states = try reduceAll(order, rules: rules)
            #expect(states == reference)
            guard let other = states[customer] else { continue }
            #expect(StateCodec.encode(other) == StateCodec.encode(state))
            for at in moments {
                #expect(Evaluation.evaluate(other, rules: rules, at: at) == Evaluation.evaluate(state, rules: rules, at: at))
            }
            #expect(LifecycleEvents.all(state: other, events: order, rules: rules) == lifecycle)
        }
        try replayEqualsIngest(events, reference: reference, rules: rules, seed: seed)
        // Stored states read back equal, and evaluate from their bytes as from the state.
        for (_, stored) in reference {
            let bytes = StateCodec.encode(stored)
            #expect(try StateCodec.decode(bytes) == stored)
            for at in moments {
                let fromBytes = try bytes.withUnsafeBytes { buffer throws(CodecError) in
                    try Evaluation.evaluate(stateBytes: buffer, rules: rules, at: at)
                }
                #expect(fromBytes == Evaluation.evaluate(stored, rules: rules, at: at))
            }
        }
    }

    /// Replay reads each event's facts from the codec, raws left in the log, and
    /// each state stored between events: it must end where ingest ended.
    static func replayEqualsIngest(
        _ events: [Event], reference: [CustomerKey: CustomerState], rules: Rules, seed: UInt64
    ) throws {
        let log = ReplayFromLog.raws(of: events)
        let stripped = try events.map { event throws(CodecError) in try EventCodec.decode(EventCodec.encode(event), seq: event.seq) }
        let links = try CustomerLinks(events)
        var rng = SplitMix64(seed: seed ^ 0x5EED)
        for round in 0..<8 {
            let order = round == 0 ? stripped : rng.shuffledWithDuplicates(stripped)
            var states: [CustomerKey: CustomerState] = [:]
            for original in order {
                guard let key = links.owner(of: original) else { continue }
                var state = try StateCodec.decode(StateCodec.encode(states[key] ?? CustomerState(key: key)))
                _ = try ReplayFromLog.apply(original, to: &state, rules: rules, log: log)
                states[key] = state
            }
            #expect(states == reference)
            for (key, state) in states { #expect(StateCodec.encode(state) == StateCodec.encode(reference[key]!)) }
        }
    }

    static func lifecycle(_ events: [LifecycleEvent], id: String) -> LifecycleEvent? { events.first { $0.id == id } }

    // MARK: - Scenarios

    @Test("a commitment cancelled in month 3 grants every month and expires after month 12")
    func cancelledInMonthThree() throws {
        let history = History()
        for n in 1...Commitment.months { history.add(Commitment.month(n)) }
        history.add(Commitment.renewalInfo(signed: Time.day(1)))
        let cancelled = Time.day(65)
        history.add(Commitment.renewalInfo(signed: cancelled, commitmentAutoRenew: false))
        history.notify(
            "EXPIRED", "VOLUNTARY", signed: Time.day(360) + 5,
            renewal: Commitment.renewalInfo(signed: Time.day(360) + 5, autoRenew: false, commitmentAutoRenew: false, intent: 1))
        try Self.everyOrder(
            history.events, rules: testRules, moments: [Time.day(10), Time.day(70), Time.day(335), Time.day(359), Time.day(361)],
            seed: 1
        ) { view, lifecycle in
            let month3 = view(Time.day(70))
            let subscription = month3.subscriptions[0]
            #expect(month3.isActive("pro"))
            #expect(subscription.billingPlanType == "MONTHLY")
            #expect(subscription.willRenew, "later months of the commitment remain")
            #expect(subscription.commitment?.billingPeriodNumber == 3)
            #expect(subscription.commitment?.totalBillingPeriods == 12)
            #expect(subscription.commitment?.commitmentExpiresDate == Time.day(360))
            #expect(subscription.commitment?.autoRenewStatus == false)
            #expect(subscription.commitment?.renewalPrice == Commitment.price)
            #expect(subscription.autoRenewStatus == true)
            #expect(subscription.renewalPrice == 9990)
            #expect(subscription.renewalCurrency == "USD")
            // Access follows each month's expiresDate.
            #expect(view(Time.day(70)).entitlement("pro")?.expiresDate == Time.day(90))
            let last = view(Time.day(335)).subscriptions[0]
            #expect(last.commitment?.billingPeriodNumber == 12)
            #expect(!last.willRenew, "the last month of a cancelled commitment renews no further")
            #expect(view(Time.day(361)).subscriptions[0].status == .expired)
            #expect(!view(Time.day(361)).isActive("pro"))
            let disabled = Self.lifecycle(lifecycle, id: "AUTO_RENEW_DISABLED:\(Commitment.otid):\(cancelled)")
            #expect(disabled?.extra["commitment"] == .bool(true))
            #expect(Self.lifecycle(lifecycle, id: "EXPIRATION:\(Commitment.otid):\(Time.day(360))") != nil)
        }
    }

    @Test("with auto-renew already off, the commitment's own cancellation is no second AUTO_RENEW_DISABLED")
    func commitmentCancelledWithAutoRenewOff() throws {
        let history = History()
        history.add(Commitment.month(1))
        history.add(Commitment.renewalInfo(signed: Time.day(1), autoRenew: false))
        history.add(Commitment.renewalInfo(signed: Time.day(2), autoRenew: false, commitmentAutoRenew: false))
        // Auto-renew on again, then the commitment cancelled while it stays on: that one counts.
        history.add(Commitment.renewalInfo(signed: Time.day(3), commitmentAutoRenew: false))
        history.add(Commitment.renewalInfo(signed: Time.day(4)))
        history.add(Commitment.renewalInfo(signed: Time.day(5), commitmentAutoRenew: false))
        let state = history.state()
        let turns = LifecycleEvents.all(state: state, events: history.events, rules: testRules)
            .filter { $0.type == .autoRenewDisabled || $0.type == .autoRenewEnabled }
        #expect(turns.map(\.id) == [
            "AUTO_RENEW_DISABLED:\(Commitment.otid):\(Time.day(1))", "AUTO_RENEW_ENABLED:\(Commitment.otid):\(Time.day(3))",
            "AUTO_RENEW_ENABLED:\(Commitment.otid):\(Time.day(4))", "AUTO_RENEW_DISABLED:\(Commitment.otid):\(Time.day(5))",
        ])
        #expect(turns.map { $0.extra["commitment"] } == [nil, nil, .bool(true), .bool(true)])
    }

    @Test("billing fails in month 5 (nothing granted, whatever the rules) and recovers, the commitment's end moving later")
    func billingFailureInMonthFive() throws {
        var rules = testRules
        rules.billingRetryGrantsAccess = true
        rules.gracePeriodGrantsAccess = true
        let history = History()
        for n in 1...4 { history.add(Commitment.month(Int64(n))) }
        let failed = Commitment.start(5)
        history.add(Commitment.renewalInfo(signed: failed, retry: true, grace: failed + 3 * Time.day))
        let recovered = failed + 6 * Time.day
        history.notify(
            "DID_RENEW", "BILLING_RECOVERY", signed: recovered,
            transaction: Commitment.month(5, purchase: recovered, commitmentExpires: Time.day(366)),
            renewal: Commitment.renewalInfo(signed: recovered))
        try Self.everyOrder(
            history.events, rules: rules, moments: [failed + Time.day, failed + 4 * Time.day, recovered + Time.day], seed: 2
        ) { view, lifecycle in
            // Within the renewal info's grace date: still billing retry, since a commitment month has no grace period
            // (nor is it counted among active subscriptions by the metrics).
            let grace = view(failed + Time.day)
            #expect(grace.subscriptions[0].status == .billingRetry)
            #expect(!grace.isActive("pro"), "a commitment month has no grace period")
            let retry = view(failed + 4 * Time.day)
            #expect(retry.subscriptions[0].status == .billingRetry)
            #expect(!retry.isActive("pro"), "a commitment month in billing retry grants nothing")
            let back = view(recovered + Time.day)
            #expect(back.isActive("pro"))
            #expect(back.subscriptions[0].commitment?.billingPeriodNumber == 5)
            #expect(back.subscriptions[0].commitment?.commitmentExpiresDate == Time.day(366))
            #expect(Self.lifecycle(lifecycle, id: "BILLING_ISSUE:\(Commitment.otid):\(failed)") != nil)
        }
    }

    @Test("a refund of month 2 revokes that month only; a refund of the current month ends access")
    func refundsOfMonths() throws {
        let history = History()
        for n in 1...4 { history.add(Commitment.month(Int64(n))) }
        let month2Refund = Commitment.start(3) + 5 * Time.day
        history.notify("REFUND", signed: month2Refund, transaction: Commitment.month(2, signed: month2Refund, revoked: month2Refund))
        let month4Refund = Commitment.start(4) + 5 * Time.day
        history.add(Commitment.month(4, signed: month4Refund, revoked: month4Refund))
        try Self.everyOrder(
            history.events, rules: testRules, moments: [Commitment.start(2) + Time.day, month2Refund + 1, month4Refund - 1, month4Refund + 1],
            seed: 3
        ) { view, lifecycle in
            #expect(view(month2Refund + 1).isActive("pro"), "month 3 still grants")
            #expect(view(month2Refund + 1).subscriptions[0].status == .active)
            #expect(view(month4Refund - 1).isActive("pro"))
            let after = view(month4Refund + 1)
            #expect(after.subscriptions[0].status == .revoked)
            #expect(!after.isActive("pro"))
            #expect(Self.lifecycle(lifecycle, id: "REFUND:\(Commitment.otid)-2:\(month2Refund)") != nil)
            #expect(Self.lifecycle(lifecycle, id: "REFUND:\(Commitment.otid)-4:\(month4Refund)") != nil)
        }
    }

    @Test("an upgrade in the middle of a commitment takes over at once")
    func upgradeMidCommitment() throws {
        let history = History()
        for n in 1...3 { history.add(Commitment.month(Int64(n), product: Product.basic)) }
        let upgraded = Commitment.start(3) + 10 * Time.day
        history.add(Commitment.month(3, product: Product.basic, signed: upgraded, upgraded: true))
        history.notify(
            "DID_CHANGE_RENEWAL_PREF", "UPGRADE", signed: upgraded,
            transaction: Commitment.month(
                1, product: Product.premium, purchase: upgraded, signed: upgraded, commitmentExpires: upgraded + 360 * Time.day,
                number: 1),
            renewal: Commitment.renewalInfo(product: Product.premium, signed: upgraded))
        try Self.everyOrder(
            history.events, rules: testRules, moments: [upgraded - 1, upgraded + Time.day, upgraded + 31 * Time.day], seed: 4
        ) { view, lifecycle in
            #expect(!view(upgraded - 1).isActive("premium"))
            let after = view(upgraded + Time.day)
            #expect(after.isActive("premium"))
            #expect(after.subscriptions[0].productId == Product.premium)
            #expect(after.subscriptions[0].commitment?.billingPeriodNumber == 1)
            #expect(after.subscriptions[0].commitment?.commitmentExpiresDate == upgraded + 360 * Time.day)
            #expect(lifecycle.contains { $0.type == .productChange && $0.productId == Product.premium })
        }
    }

    @Test("an Advanced Commerce subscription with three SKUs, one refunded, leaves the other two granting")
    func threeSkusOneRefunded() throws {
        let rules = Commerce.rules
        let history = History()
        let refunded = Time.day(10)
        let first = "2000000000000801"
        history.notify(
            "SUBSCRIBED", "INITIAL_BUY", signed: Time.t0,
            transaction: Commerce.transaction(
                first, purchase: Time.t0, items: [Commerce.item("SKU-ALPHA"), Commerce.item("SKU-BETA"), Commerce.item("SKU-GAMMA")]))
        history.notify(
            "REFUND", signed: refunded,
            transaction: Commerce.transaction(
                first, purchase: Time.t0, signed: refunded,
                items: [Commerce.item("SKU-ALPHA"), Commerce.item("SKU-BETA", revoked: refunded), Commerce.item("SKU-GAMMA")]))
        history.add(
            Commerce.transaction(
                "2000000000000802", purchase: Time.day(30), items: [Commerce.item("SKU-ALPHA"), Commerce.item("SKU-GAMMA")]))
        history.notify("METADATA_UPDATE", signed: Time.day(31), renewal: renewal(original: Commerce.otid, product: Commerce.product, signed: Time.day(31)))
        history.notify("PRICE_CHANGE", signed: Time.day(32), renewal: renewal(original: Commerce.otid, product: Commerce.product, signed: Time.day(32)))
        try Self.everyOrder(
            history.events, rules: rules, moments: [Time.day(5), refunded + 1, Time.day(45), Time.day(61)], seed: 5
        ) { view, lifecycle in
            let before = view(Time.day(5))
            #expect(before.isActive("alpha") && before.isActive("beta") && before.isActive("gamma") && before.isActive("pro"))
            let after = view(refunded + 1)
            #expect(after.isActive("alpha") && after.isActive("gamma"))
            #expect(!after.isActive("beta"))
            #expect(after.entitlement("beta") != nil, "the refunded SKU's entitlement is listed, inactive")
            #expect(after.subscriptions[0].status == .active)
            #expect(view(Time.day(45)).isActive("alpha"))
            #expect(!view(Time.day(61)).isActive("alpha"))
            let refund = Self.lifecycle(lifecycle, id: "REFUND:\(first):SKU-BETA:\(refunded)")
            #expect(refund?.extra["sku"] == .string("SKU-BETA"))
            #expect(refund?.extra["revocationType"] == .string("FULL"))
            #expect(refund?.extra["refundedAmount"] == .int(3000))
            #expect(lifecycle.filter { $0.type == .refund }.count == 1)
        }
    }

    @Test("a migrated subscription's previousOriginalTransactionId brings the old subscription to the same customer")
    func migration() throws {
        let old = "2000000000000901"
        let history = History()
        // The regular subscription, signed before Apple added appTransactionId.
        history.add(transaction(old, purchase: Time.t0, expires: Time.day(30), app: nil))
        history.add(transaction("2000000000000902", original: old, purchase: Time.day(30), expires: Time.day(60), app: nil))
        // Migrated to Advanced Commerce.
        let migrated = Commerce.transaction(
            "2000000000000903", purchase: Time.day(60), items: [Commerce.item("SKU-ALPHA")], previous: old, original: "2000000000000903")
        history.notify("MIGRATION", signed: Time.day(60), transaction: migrated)
        history.notify("MIGRATE", signed: Time.day(60) + 1, transaction: migrated)
        history.add(
            Commerce.transaction(
                "2000000000000904", purchase: Time.day(90), items: [Commerce.item("SKU-ALPHA")], previous: old, original: "2000000000000903"))
        let events = history.events
        let links = try CustomerLinks(events)
        #expect(links.resolve("otid:\(old)") == Customer.app)
        try Self.everyOrder(events, rules: Commerce.rules, moments: [Time.day(15), Time.day(45), Time.day(75)], seed: 6) { view, _ in
            let regular = view(Time.day(45))
            #expect(regular.isActive("pro"))
            #expect(regular.subscriptions.map(\.originalTransactionId) == [old])
            let after = view(Time.day(75))
            #expect(after.isActive("alpha"))
            #expect(after.subscriptions.count == 2)
        }
    }

    @Test("a migrated subscription signed without appTransactionId joins the customer of the subscription it came from")
    func migrationWithoutAppTransactionId() throws {
        let old = "2000000000000911"
        let moved = "2000000000000913"
        let history = History()
        history.add(transaction(old, purchase: Time.t0, expires: Time.day(30)))
        history.add(transaction("2000000000000912", original: old, purchase: Time.day(30), expires: Time.day(60)))
        let migrated = Commerce.transaction(
            moved, purchase: Time.day(60), items: [Commerce.item("SKU-ALPHA")], app: nil, previous: old, original: moved)
        history.notify("MIGRATION", signed: Time.day(60), transaction: migrated)
        history.add(
            Commerce.transaction(
                "2000000000000914", purchase: Time.day(90), items: [Commerce.item("SKU-ALPHA")], app: nil, previous: old, original: moved))
        let links = try CustomerLinks(history.events)
        #expect(links.resolve("otid:\(moved)") == Customer.app)
        #expect(links.winners[moved]?.isMigration == true)
        try Self.everyOrder(history.events, rules: Commerce.rules, moments: [Time.day(45), Time.day(75), Time.day(100)], seed: 7) { view, _ in
            #expect(view(Time.day(45)).subscriptions.map(\.originalTransactionId) == [old])
            let after = view(Time.day(100))
            #expect(after.isActive("alpha"))
            #expect(after.subscriptions.map(\.originalTransactionId).sorted() == [old, moved])
        }
    }

    @Test("subscriptions migrated one from another without appTransactionIds form one customer, keyed by the first, until a link names it")
    func migrationChain() throws {
        let first = "2000000000000921"
        let second = "2000000000000922"
        let third = "2000000000000923"
        let history = History()
        history.add(transaction(first, purchase: Time.t0, expires: Time.day(30), app: nil))
        history.add(Commerce.transaction(second, purchase: Time.day(30), items: [Commerce.item("SKU-ALPHA")], app: nil, previous: first, original: second))
        history.add(Commerce.transaction(third, purchase: Time.day(60), items: [Commerce.item("SKU-BETA")], app: nil, previous: second, original: third))
        let unlinked = try CustomerLinks(history.events)
        for otid in [first, second, third] { #expect(unlinked.resolve("otid:" + otid) == "otid:" + first) }
        try Self.everyOrder(history.events, customer: "otid:" + first, rules: Commerce.rules, moments: [Time.day(15), Time.day(75)], seed: 8) { view, _ in
            #expect(view(Time.day(15)).isActive("pro"))
            #expect(view(Time.day(75)).isActive("beta"))
            #expect(view(Time.day(75)).subscriptions.count == 3)
        }
        // A renewal info of the first names the customer: the subscriptions migrated from it follow.
        history.add(renewal(original: first, signed: Time.day(31)))
        let linked = try CustomerLinks(history.events)
        for otid in [first, second, third] { #expect(linked.resolve("otid:" + otid) == Customer.app) }
        try Self.everyOrder(history.events, rules: Commerce.rules, moments: [Time.day(75)], seed: 9) { view, _ in
            #expect(view(Time.day(75)).subscriptions.map(\.originalTransactionId).sorted() == [first, second, third])
        }
    }

    @Test("migration claims that go round in a circle end at the least originalTransactionId of the circle, in every order")
    func migrationCircle() throws {
        let history = History()
        history.add(Commerce.transaction("2000000000000932", purchase: Time.t0, items: [Commerce.item("SKU-ALPHA")], app: nil, previous: "2000000000000931", original: "2000000000000932"))
        history.add(Commerce.transaction("2000000000000931", purchase: Time.day(30), items: [Commerce.item("SKU-BETA")], app: nil, previous: "2000000000000932", original: "2000000000000931"))
        let links = try CustomerLinks(history.events)
        #expect(links.resolve("otid:2000000000000932") == "otid:2000000000000931")
        try Self.everyOrder(history.events, customer: "otid:2000000000000931", rules: Commerce.rules, moments: [Time.day(45)], seed: 10) { view, _ in
            #expect(view(Time.day(45)).subscriptions.count == 2)
        }
    }
}
