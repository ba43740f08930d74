import EntitlementCore
import Testing
import TestSupport

/// The lifecycle events of specification section 12, worked by hand, and their
/// independence from the order of arrival.
@Suite("Lifecycle events")
struct LifecycleTests {
    static let otid = Customer.otid

    static func lifecycle(_ history: History, now: Int64, key: CustomerKey = Customer.app, reasons: [String: String] = [:])
        -> [String: LifecycleEvent]
    {
        let events = LifecycleEvents.due(
            state: history.state(key), events: history.events, consumptionReasons: reasons, rules: testRules, now: now)
        return Dictionary(uniqueKeysWithValues: events.map { ($0.id, $0) })
    }

    /// A trial, its conversion, an upgrade, auto-renew turned off, on, off, and the expiry.
    static func subscriptionHistory() -> History {
        let history = History()
        let t1 = "2000000000000001"
        history.add(
            transaction(
                t1, original: otid, purchase: Time.day(0), expires: Time.day(7), offerType: 1, offerDiscountType: "FREE_TRIAL",
                price: 0))
        history.add(renewal(signed: Time.day(1)))
        history.add(transaction("2000000000000002", original: otid, purchase: Time.day(7), expires: Time.day(37)))
        history.add(renewal(autoRenew: false, intent: 1, signed: Time.day(10)))
        history.add(renewal(autoRenew: true, signed: Time.day(12)))
        // The upgrade: the old transaction's later version says so; the new one takes over at once.
        history.add(
            transaction("2000000000000002", original: otid, purchase: Time.day(7), expires: Time.day(37), signed: Time.day(20), upgraded: true))
        history.add(
            transaction("2000000000000003", original: otid, product: Product.premium, purchase: Time.day(20), expires: Time.day(50), price: 14990))
        history.add(renewal(product: Product.premium, autoRenew: false, intent: 1, signed: Time.day(45)))
        return history
    }

    @Test func subscriptionStartRenewalProductChangeAutoRenewAndExpiration() {
        let history = Self.subscriptionHistory()
        let events = Self.lifecycle(history, now: Time.day(60))
        #expect(
            Set(events.keys) == [
                "SUBSCRIPTION_STARTED:2000000000000001", "RENEWAL:2000000000000002", "PRODUCT_CHANGE:2000000000000003",
                "AUTO_RENEW_DISABLED:\(Self.otid):\(Time.day(10))", "AUTO_RENEW_ENABLED:\(Self.otid):\(Time.day(12))",
                "AUTO_RENEW_DISABLED:\(Self.otid):\(Time.day(45))", "EXPIRATION:\(Self.otid):\(Time.day(50))",
            ])
        let started = events["SUBSCRIPTION_STARTED:2000000000000001"]
        #expect(started?.extra["periodType"] == "TRIAL")
        #expect(started?.effectiveAt == Time.day(0))
        #expect(started?.price == 0)
        let renewal = events["RENEWAL:2000000000000002"]
        #expect(renewal?.extra["periodType"] == "NORMAL")
        #expect(renewal?.extra["isTrialConversion"] == true)
        #expect(renewal?.environment == "Production")
        #expect(renewal?.currency == "USD" && renewal?.price == 9990)
        let change = events["PRODUCT_CHANGE:2000000000000003"]
        #expect(change?.extra["fromProductId"] == .string(Product.monthly))
        #expect(change?.extra["isTrialConversion"] == false)
        #expect(change?.productId == Product.premium)
        #expect(change?.entitlements(under: testRules) == ["premium", "pro"])
        #expect(events["AUTO_RENEW_DISABLED:\(Self.otid):\(Time.day(10))"]?.extra["expirationIntent"] == 1)
        #expect(events["AUTO_RENEW_DISABLED:\(Self.otid):\(Time.day(10))"]?.transactionId == "2000000000000002")
        let expiration = events["EXPIRATION:\(Self.otid):\(Time.day(50))"]
        #expect(expiration?.extra["reason"] == "VOLUNTARY")
        #expect(expiration?.transactionId == "2000000000000003")
        #expect(expiration?.effectiveAt == Time.day(50))

        // Before the expiry it is not due; time makes it due then.
        let before = Self.lifecycle(history, now: Time.day(49))
        #expect(before.count == 6)
        let all = LifecycleEvents.all(state: history.state(), events: history.events, rules: testRules)
        #expect(LifecycleEvents.nextDue(in: all, after: Time.day(49)) == Time.day(50))
        #expect(LifecycleEvents.nextDue(in: all, after: Time.day(50)) == nil)
    }

    @Test func billingIssueThenExpirationForABillingError() {
        let history = History()
        history.add(transaction("2000000000000011", original: Self.otid, purchase: Time.day(0), expires: Time.day(30)))
        history.add(renewal(signed: Time.day(0)))
        history.add(renewal(retry: true, grace: Time.day(36), signed: Time.day(30)))
        history.add(renewal(autoRenew: false, retry: false, intent: 2, signed: Time.day(40)))
        let events = Self.lifecycle(history, now: Time.day(90))
        #expect(
            Set(events.keys) == [
                "SUBSCRIPTION_STARTED:2000000000000011", "BILLING_ISSUE:\(Self.otid):\(Time.day(30))",
                "AUTO_RENEW_DISABLED:\(Self.otid):\(Time.day(40))", "EXPIRATION:\(Self.otid):\(Time.day(40))",
            ])
        #expect(events["BILLING_ISSUE:\(Self.otid):\(Time.day(30))"]?.extra["gracePeriodExpiresDate"] == .int(Time.day(36)))
        #expect(events["EXPIRATION:\(Self.otid):\(Time.day(40))"]?.extra["reason"] == "BILLING_ERROR")
        #expect(events["AUTO_RENEW_DISABLED:\(Self.otid):\(Time.day(40))"]?.extra["expirationIntent"] == 2)
    }

    @Test func expiringTwiceRecordsTwoExpirations() {
        let history = History()
        history.add(transaction("2000000000000021", original: Self.otid, purchase: Time.day(0), expires: Time.day(30)))
        history.add(transaction("2000000000000022", original: Self.otid, purchase: Time.day(60), expires: Time.day(90)))
        let events = Self.lifecycle(history, now: Time.day(100))
        #expect(events["EXPIRATION:\(Self.otid):\(Time.day(30))"] != nil)
        #expect(events["EXPIRATION:\(Self.otid):\(Time.day(90))"] != nil)
        #expect(events["EXPIRATION:\(Self.otid):\(Time.day(30))"]?.extra["reason"] == .null)
        #expect(events["RENEWAL:2000000000000022"] != nil)
    }

    @Test(
        "a prorated refund's refundedAmount is rounded half away from zero, the revenue ledger's figure",
        arguments: [(Int64(1005), Int64(50_000), Int64(503)), (999, 33_333, 333), (4999, 50_000, 2500), (990, 50_000, 495), (999, 1, 0)])
    func proratedRefundRounding(price: Int64, percentage: Int64, refunded: Int64) {
        let history = History()
        let id = "3000000000000009"
        history.add(transaction(id, product: Product.coins, purchase: Time.day(1), quantity: 1, price: price))
        history.add(
            transaction(
                id, product: Product.coins, purchase: Time.day(1), signed: Time.day(5), quantity: 1, revoked: Time.day(5),
                revocationType: "REFUND_PRORATED", revocationPercentage: percentage, price: price))
        let refund = Self.lifecycle(history, now: Time.day(10))["REFUND:\(id):\(Time.day(5))"]
        #expect(refund?.extra["refundedAmount"] == .int(refunded))
        #expect(-RevenueFacts.refundAmount(price: price, type: .refundProrated, percentage: percentage) == refunded)
    }

    @Test(
        "a refund that is not REFUND_PRORATED refunds the price, whatever percentage it carries, as the revenue ledger does",
        arguments: [("REFUND_FULL", Int64(50_000)), (nil, 50_000), ("REFUND_FULL", nil)] as [(String?, Int64?)])
    func fullRefundIgnoresThePercentage(type: String?, percentage: Int64?) {
        let history = History()
        let id = "3000000000000010"
        history.add(transaction(id, product: Product.lifetime, purchase: Time.day(1), price: 9990))
        history.add(
            transaction(
                id, product: Product.lifetime, purchase: Time.day(1), signed: Time.day(5), revoked: Time.day(5),
                revocationType: type, revocationPercentage: percentage, price: 9990))
        let refund = Self.lifecycle(history, now: Time.day(10))["REFUND:\(id):\(Time.day(5))"]
        #expect(refund?.extra["refundedAmount"] == 9990)
    }

    @Test func purchasesRefundsFamilyRevokesAndReversals() {
        let history = History()
        let coins = "3000000000000001"
        history.add(transaction(coins, product: Product.coins, purchase: Time.day(1), quantity: 2, price: 990))
        history.add(
            transaction(
                coins, product: Product.coins, purchase: Time.day(1), signed: Time.day(5), quantity: 2, revoked: Time.day(5),
                revocationType: "REFUND_PRORATED", revocationPercentage: 50_000, price: 990))
        history.add(transaction(coins, product: Product.coins, purchase: Time.day(1), signed: Time.day(8), quantity: 2, price: 990))
        let shared = "3000000000000002"
        history.add(
            transaction(
                shared, product: Product.lifetime, purchase: Time.day(2), signed: Time.day(3), revoked: Time.day(3),
                revocationType: "FAMILY_REVOKE", ownership: "FAMILY_SHARED"))
        let full = "3000000000000003"
        history.add(
            transaction(
                full, product: Product.pass, purchase: Time.day(2), signed: Time.day(4), revoked: Time.day(4),
                revocationType: "REFUND_FULL", price: 4990))
        let events = Self.lifecycle(history, now: Time.day(10))
        #expect(
            Set(events.keys) == [
                "PURCHASE:\(coins)", "PURCHASE:\(shared)", "PURCHASE:\(full)", "REFUND:\(coins):\(Time.day(5))",
                "REFUND_REVERSED:\(coins):\(Time.day(8))", "FAMILY_REVOKE:\(shared):\(Time.day(3))", "REFUND:\(full):\(Time.day(4))",
            ])
        #expect(events["PURCHASE:\(coins)"]?.extra == JSONObject([("quantity", 2), ("productType", "Consumable")]))
        let refund = events["REFUND:\(coins):\(Time.day(5))"]
        #expect(refund?.extra["revocationType"] == "REFUND_PRORATED")
        #expect(refund?.extra["revocationPercentage"] == 50_000)
        #expect(refund?.extra["refundedAmount"] == 495)
        #expect(events["REFUND:\(full):\(Time.day(4))"]?.extra["refundedAmount"] == 4990)
        #expect(events["PURCHASE:\(full)"]?.extra["productType"] == "Non-Renewing Subscription")
        #expect(events["REFUND_REVERSED:\(coins):\(Time.day(8))"]?.effectiveAt == Time.day(8))
    }

    @Test func consumptionRequestAndConsentRescinded() {
        let history = History()
        let coins = transaction("3000000000000011", product: Product.coins, purchase: Time.day(1))
        history.add(coins)
        let request = history.notify("CONSUMPTION_REQUEST", signed: Time.day(2), transaction: coins)
        history.notify("RESCIND_CONSENT", signed: Time.day(3), appTransaction: appTransaction(created: Time.day(0)), data: false)
        guard case .notification(let n) = request.body else { Issue.record("not a notification"); return }
        let events = Self.lifecycle(history, now: Time.day(4), reasons: [n.notificationUUID: "UNINTENDED_PURCHASE"])
        let consumption = events["CONSUMPTION_REQUEST:\(n.notificationUUID)"]
        #expect(consumption?.extra["deadline"] == .int(Time.day(2) + 12 * Time.hour))
        #expect(consumption?.extra["reason"] == "UNINTENDED_PURCHASE")
        #expect(consumption?.transactionId == "3000000000000011")
        #expect(events.values.contains { $0.type == .consentRescinded && $0.effectiveAt == Time.day(3) })
        #expect(events.count == 3)
    }

    @Test func theLineHasTheSpecificationsKeysInOrder() {
        let events = Self.lifecycle(Self.subscriptionHistory(), now: Time.day(60))
        let line = events["RENEWAL:2000000000000002"]!.line(entitlements: ["pro"], recordedAt: Time.day(61))
        let record = LifecycleRecord(
            cursor: 12, id: "RENEWAL:2000000000000002", type: .renewal, appTransactionId: Customer.app, effectiveAt: Time.day(7),
            recordedAt: Time.day(61), fields: line)
        guard case .object(let object) = record.json() else { Issue.record("not an object"); return }
        #expect(
            object.keys == [
                "cursor", "id", "type", "appTransactionId", "originalTransactionId", "transactionId", "productId", "entitlements",
                "environment", "price", "currency", "periodType", "isTrialConversion", "effectiveAt", "recordedAt",
            ])
    }

    /// The same data in any order, with duplicates, gives the same events.
    @Test(arguments: PropertySeeds.seeds(1...16))
    func permutationsWithDuplicatesGiveTheSameEvents(seed: UInt64) throws {
        let events = RandomHistory.events(seed: seed)
        let reference = try reduceAll(events)
        let now = Time.day(400)
        func lifecycle(_ states: [CustomerKey: CustomerState], _ events: [Event]) -> [CustomerKey: [LifecycleEvent]] {
            states.mapValues { LifecycleEvents.due(state: $0, events: events, rules: testRules, now: now) }
        }
        let expected = lifecycle(reference, events)
        #expect(expected.values.contains { !$0.isEmpty })
        var rng = SplitMix64(seed: seed &* 104_729)
        for _ in 0..<10 {
            let permuted = rng.shuffledWithDuplicates(events)
            #expect(lifecycle(try reduceAll(permuted), permuted) == expected)
        }
    }

    /// EXPIRATION is where section 5's evaluation (of the whole customer, `isUpgraded`
    /// left out as the derivation reads it) turns a subscription `expired` between two
    /// consecutive candidate moments.
    @Test(arguments: PropertySeeds.seeds(40...52))
    func expirationsAreTheEvaluationsTurns(seed: UInt64) throws {
        let events = RandomHistory.events(seed: seed)
        for (key, state) in try reduceAll(events) {
            var unmarked = state
            for id in unmarked.transactions.keys { unmarked.transactions[id]?.facts.isUpgraded = false }
            var moments = Set<Int64>()
            for version in state.transactions.values where version.facts.type == .autoRenewable {
                let t = version.facts
                moments.formUnion([t.purchaseDate, t.expiresDate, t.revocationDate].compactMap { $0 })
            }
            for versions in state.renewalInfos.values {
                for v in versions { moments.formUnion([v.facts.signedDate, v.facts.gracePeriodExpiresDate].compactMap { $0 }) }
            }
            var expected = Set<String>()
            var previous: [String: SubscriptionStatus] = [:]
            for moment in moments.sorted() {
                var statuses: [String: SubscriptionStatus] = [:]
                for s in Evaluation.evaluate(unmarked, rules: testRules, at: moment).subscriptions {
                    statuses[s.originalTransactionId] = s.status
                    if s.status == .expired, let before = previous[s.originalTransactionId], [.active, .gracePeriod, .billingRetry].contains(before) {
                        expected.insert("EXPIRATION:\(s.originalTransactionId):\(moment)")
                    }
                }
                previous = statuses
            }
            let derived = LifecycleEvents.all(state: state, events: events, rules: testRules).filter { $0.type == .expiration }
            #expect(Set(derived.map(\.id)) == expected, "customer \(key)")
        }
    }
}
