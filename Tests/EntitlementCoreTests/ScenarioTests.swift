import EntitlementCore
import Testing

/// Whole lifecycles, each checked at several moments.
@Suite("Lifecycles")
struct ScenarioTests {
    @Test func renewBillingFailureGracePeriodRecovery() {
        let history = NotificationTypeTests.subscribed()
        history.notify(
            "DID_RENEW", signed: Time.day(30),
            transaction: transaction("2000000000000002", original: Customer.otid, purchase: Time.day(30), expires: Time.day(60)),
            renewal: renewal(signed: Time.day(30)), status: 1)
        history.notify(
            "DID_FAIL_TO_RENEW", "GRACE_PERIOD", signed: Time.day(60),
            renewal: renewal(retry: true, grace: Time.day(66), intent: 2, signed: Time.day(60)), status: 4)
        history.notify(
            "DID_RENEW", "BILLING_RECOVERY", signed: Time.day(64),
            transaction: transaction("2000000000000003", original: Customer.otid, purchase: Time.day(64), expires: Time.day(94)),
            renewal: renewal(retry: false, signed: Time.day(64)), status: 1)

        let expectations: [(at: Int64, status: SubscriptionStatus, pro: EntitlementView)] = [
            (Time.day(15), .active, EntitlementView(name: "pro", active: true, expiresDate: Time.day(30), productId: Product.monthly)),
            (Time.day(45), .active, EntitlementView(name: "pro", active: true, expiresDate: Time.day(60), productId: Product.monthly)),
            (Time.day(62), .gracePeriod, EntitlementView(name: "pro", active: true, expiresDate: Time.day(66), productId: Product.monthly)),
            (Time.day(65), .active, EntitlementView(name: "pro", active: true, expiresDate: Time.day(94), productId: Product.monthly)),
            (Time.day(95), .expired, EntitlementView(name: "pro", active: false, expiresDate: nil)),
        ]
        for expected in expectations {
            let view = history.view(at: expected.at)
            #expect(view.subscriptions.map(\.status) == [expected.status], "at \(expected.at)")
            #expect(view.entitlements == [expected.pro], "at \(expected.at)")
        }

        // Until the recovery, the grace period stands.
        #expect(history.view(at: Time.day(64) - 1).subscriptions.first?.status == .gracePeriod)
        // Before the recovery is signed, the retrying renewal info stands.
        var strict = testRules
        strict.gracePeriodGrantsAccess = false
        #expect(!history.view(at: Time.day(62), rules: strict).isActive("pro"))
    }

    @Test func upgradeTakesOverAtOnce() {
        let history = History()
        history.notify(
            "SUBSCRIBED", "INITIAL_BUY", signed: Time.t0,
            transaction: transaction(Customer.otid, product: Product.yearly, purchase: Time.t0, expires: Time.day(365)),
            renewal: renewal(product: Product.yearly, signed: Time.t0))
        history.notify(
            "DID_CHANGE_RENEWAL_PREF", "UPGRADE", signed: Time.day(100),
            transaction: transaction("2000000000000002", original: Customer.otid, product: Product.premium, purchase: Time.day(100), expires: Time.day(130)),
            renewal: renewal(product: Product.premium, signed: Time.day(100)))
        history.add(transaction(Customer.otid, product: Product.yearly, purchase: Time.t0, expires: Time.day(365), signed: Time.day(100), upgraded: true))

        let before = history.view(at: Time.day(50))
        #expect(before.subscriptions.first?.productId == Product.yearly)
        #expect(before.entitlements == [EntitlementView(name: "pro", active: true, expiresDate: Time.day(365), productId: Product.yearly)])

        let after = history.view(at: Time.day(101))
        #expect(after.subscriptions.first?.productId == Product.premium)
        #expect(after.activeEntitlements == ["premium", "pro"])
        #expect(after.entitlement("pro")?.expiresDate == Time.day(130))

        // The premium period lapses without renewal: the upgraded yearly does not come back.
        let lapsed = history.view(at: Time.day(131))
        #expect(lapsed.subscriptions.first?.status == .expired)
        #expect(lapsed.activeEntitlements.isEmpty)
        #expect(lapsed.entitlements.map(\.name) == ["premium", "pro"])

        // Renewed premium.
        history.notify(
            "DID_RENEW", signed: Time.day(130),
            transaction: transaction("2000000000000003", original: Customer.otid, product: Product.premium, purchase: Time.day(130), expires: Time.day(160)),
            renewal: renewal(product: Product.premium, signed: Time.day(130)))
        #expect(history.view(at: Time.day(131)).entitlement("premium")?.expiresDate == Time.day(160))
    }

    @Test func downgradeTakesEffectAtNextRenewal() {
        let history = NotificationTypeTests.subscribed(product: Product.premium)
        history.notify(
            "DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", signed: Time.day(10),
            renewal: renewal(product: Product.premium, autoRenewProduct: Product.basic, signed: Time.day(10)))
        history.notify(
            "DID_RENEW", signed: Time.day(30),
            transaction: transaction("2000000000000002", original: Customer.otid, product: Product.basic, purchase: Time.day(30), expires: Time.day(60)),
            renewal: renewal(product: Product.basic, signed: Time.day(30)))

        let pending = history.view(at: Time.day(11))
        #expect(pending.subscriptions.first?.productId == Product.premium)
        #expect(pending.subscriptions.first?.autoRenewProductId == Product.basic)
        #expect(pending.activeEntitlements == ["premium", "pro"])

        let downgraded = history.view(at: Time.day(31))
        #expect(downgraded.subscriptions.first?.productId == Product.basic)
        #expect(downgraded.entitlements == [
            EntitlementView(name: "premium", active: false, expiresDate: nil),
            EntitlementView(name: "pro", active: true, expiresDate: Time.day(60), productId: Product.basic),
        ])
    }

    @Test func refundThenRefundReversed() throws {
        let history = History()
        let bought = transaction("3000000000000001", product: Product.lifetime, purchase: Time.t0)
        history.notify("ONE_TIME_CHARGE", signed: Time.t0, transaction: bought)
        history.notify(
            "REFUND", signed: Time.day(5),
            transaction: transaction(
                "3000000000000001", product: Product.lifetime, purchase: Time.t0, signed: Time.day(5), revoked: Time.day(5),
                revocationType: "REFUND_FULL"))
        history.notify(
            "REFUND_REVERSED", signed: Time.day(9),
            transaction: transaction("3000000000000001", product: Product.lifetime, purchase: Time.t0, signed: Time.day(9)))

        // Knowing only the refund: revoked from day 5 on.
        var refunded = CustomerState(key: Customer.app)
        for event in history.events.prefix(2) { try refunded.apply(event, rules: testRules) }
        #expect(Evaluation.evaluate(refunded, rules: testRules, at: Time.day(4)).isActive("pro"))
        let revoked = Evaluation.evaluate(refunded, rules: testRules, at: Time.day(6))
        #expect(!revoked.isActive("pro"))
        #expect(revoked.purchases.first?.revoked == true)

        // Knowing the reversal too, in either order: never revoked.
        var reversedFirst = CustomerState(key: Customer.app)
        for event in history.events.reversed() { try reversedFirst.apply(event, rules: testRules) }
        #expect(reversedFirst == history.state())
        for at in [Time.day(6), Time.day(10)] {
            let view = history.view(at: at)
            #expect(view.entitlements == [EntitlementView(name: "pro", active: true, expiresDate: nil, productId: Product.lifetime)])
            #expect(view.purchases.first?.revoked == false)
        }
    }

    @Test func familyRevoke() {
        let history = History()
        history.add(
            transaction("3000000000000001", product: Product.lifetime, purchase: Time.t0, ownership: "FAMILY_SHARED"))
        history.notify(
            "REVOKE", signed: Time.day(20),
            transaction: transaction(
                "3000000000000001", product: Product.lifetime, purchase: Time.t0, signed: Time.day(20),
                revoked: Time.day(20), revocationType: "FAMILY_REVOKE", ownership: "FAMILY_SHARED"))
        #expect(history.view(at: Time.day(19)).isActive("pro"))
        let view = history.view(at: Time.day(21))
        #expect(view.entitlements == [EntitlementView(name: "pro", active: false, expiresDate: nil)])
        #expect(view.purchases == [
            PurchaseView(
                transactionId: "3000000000000001", productId: Product.lifetime, type: "Non-Consumable", quantity: 1,
                revoked: true, revocationType: "FAMILY_REVOKE", revocationPercentage: nil, expiresDate: nil,
                purchaseDate: Time.t0, revocationDate: Time.day(20), price: 9990, currency: "USD")
        ])
    }

    @Test func coinsBoughtAndPartlyRefundedRoundingHalfUp() {
        let history = History()
        history.add(transaction("3000000000000001", product: Product.coins, purchase: Time.t0, quantity: 2))
        history.add(transaction("3000000000000002", product: Product.coins, purchase: Time.day(1)))
        history.add(transaction("3000000000000003", product: Product.coins, purchase: Time.day(1) + 1))
        history.add(transaction("3000000000000004", product: Product.gems, purchase: Time.day(1)))
        history.add(transaction("3000000000000005", product: Product.coins, purchase: Time.day(2), quantity: 3))
        // 200 x 12.345% = 24.69 -> 25.
        history.notify(
            "REFUND", signed: Time.day(3),
            transaction: transaction(
                "3000000000000001", product: Product.coins, purchase: Time.t0, signed: Time.day(3), quantity: 2,
                revoked: Time.day(3), revocationType: "REFUND_PRORATED", revocationPercentage: 12_345))
        // 100 x 0.5% = 0.5 -> 1 (half up).
        history.notify(
            "REFUND", signed: Time.day(4),
            transaction: transaction(
                "3000000000000002", product: Product.coins, purchase: Time.day(1), signed: Time.day(4),
                revoked: Time.day(4), revocationType: "REFUND_PRORATED", revocationPercentage: 500))
        // 1 gem x 50% = 0.5 -> 1: nothing left.
        history.notify(
            "REFUND", signed: Time.day(4),
            transaction: transaction(
                "3000000000000004", product: Product.gems, purchase: Time.day(1), signed: Time.day(4),
                revoked: Time.day(4), revocationType: "REFUND_PRORATED", revocationPercentage: 50_000))
        // Whole-percent refundPercentage counts x 1000: 300 x 25% = 75.
        history.notify(
            "REFUND", signed: Time.day(5),
            transaction: transaction(
                "3000000000000005", product: Product.coins, purchase: Time.day(2), signed: Time.day(5), quantity: 3,
                revoked: Time.day(5), revocationType: "REFUND_PRORATED", refundPercentage: 25))
        // A full refund takes everything.
        history.notify(
            "REFUND", signed: Time.day(6),
            transaction: transaction(
                "3000000000000003", product: Product.coins, purchase: Time.day(1) + 1, signed: Time.day(6),
                revoked: Time.day(6), revocationType: "REFUND_FULL"))

        func balances(at: Int64) -> [CurrencyBalance] { history.view(at: at).balances }
        #expect(balances(at: Time.t0 - 1) == [])
        #expect(balances(at: Time.t0) == [CurrencyBalance(currency: "coins", amount: 200)])
        #expect(balances(at: Time.day(1)) == [CurrencyBalance(currency: "coins", amount: 300), CurrencyBalance(currency: Product.gems, amount: 1)])
        #expect(balances(at: Time.day(2)) == [CurrencyBalance(currency: "coins", amount: 700), CurrencyBalance(currency: Product.gems, amount: 1)])
        #expect(balances(at: Time.day(3)) == [CurrencyBalance(currency: "coins", amount: 675), CurrencyBalance(currency: Product.gems, amount: 1)])
        #expect(balances(at: Time.day(4)) == [CurrencyBalance(currency: "coins", amount: 674), CurrencyBalance(currency: Product.gems, amount: 0)])
        #expect(balances(at: Time.day(5)) == [CurrencyBalance(currency: "coins", amount: 599), CurrencyBalance(currency: Product.gems, amount: 0)])
        #expect(balances(at: Time.day(6)) == [CurrencyBalance(currency: "coins", amount: 499), CurrencyBalance(currency: Product.gems, amount: 0)])

        let view = history.view(at: Time.day(6))
        #expect(view.purchases.map(\.transactionId) == (1...5).map { "300000000000000\($0)" }.sorted { lhs, rhs in
            // purchaseDate order: 1 (t0), 2 and 4 (day 1, by id), 3 (day 1 + 1 ms), 5 (day 2)
            let order = ["3000000000000001", "3000000000000002", "3000000000000004", "3000000000000003", "3000000000000005"]
            return order.firstIndex(of: lhs)! < order.firstIndex(of: rhs)!
        })
        #expect(view.purchases.first { $0.transactionId == "3000000000000005" }?.revocationPercentage == 25_000)
        #expect(view.entitlements.isEmpty)
    }

    @Test func weeklyPassesStackAndShrinkByProratedRefund() {
        let history = History()
        history.add(transaction("4000000000000001", product: Product.pass, purchase: Time.t0))
        history.add(transaction("4000000000000002", product: Product.pass, purchase: Time.day(2)))
        history.add(transaction("4000000000000003", product: Product.pass, purchase: Time.day(20)))

        // Stacked: [t0, d7), [d7, d14); a gap; [d20, d27).
        let stacked = history.view(at: Time.day(1))
        #expect(stacked.entitlement("pro") == EntitlementView(name: "pro", active: true, expiresDate: Time.day(7), productId: Product.pass))
        #expect(history.view(at: Time.day(8)).entitlement("pro")?.expiresDate == Time.day(14))
        #expect(history.view(at: Time.day(14)).entitlement("pro") == EntitlementView(name: "pro", active: false, expiresDate: nil))
        #expect(history.view(at: Time.day(21)).entitlement("pro")?.expiresDate == Time.day(27))
        #expect(history.view(at: Time.day(30)).purchases.map(\.expiresDate) == [Time.day(7), Time.day(14), Time.day(27)])
        // At day 1 the second pass is not bought yet.
        #expect(stacked.purchases.map(\.expiresDate) == [Time.day(7)])

        // A prorated refund of the first pass on day 3: it keeps 66.667% of 7 days. (A whole number of
        // days is a multiple of 100000 ms, so the rounding down to the millisecond never bites here.)
        history.notify(
            "REFUND", signed: Time.day(3),
            transaction: transaction(
                "4000000000000001", product: Product.pass, purchase: Time.t0, signed: Time.day(3), revoked: Time.day(3),
                revocationType: "REFUND_PRORATED", revocationPercentage: 33_333))
        let kept: Int64 = 403_202_016  // 604_800_000 x 66_667 / 100_000
        #expect(history.view(at: Time.day(2)).entitlement("pro")?.expiresDate == Time.day(7))
        let shrunk = history.view(at: Time.day(3))
        #expect(shrunk.purchases.map(\.expiresDate) == [Time.t0 + kept, Time.t0 + kept + 7 * Time.day])
        #expect(shrunk.entitlement("pro")?.expiresDate == Time.t0 + kept)
        #expect(history.view(at: Time.t0 + kept).entitlement("pro")?.expiresDate == Time.t0 + kept + 7 * Time.day)

        // A full refund of the third: a window of 0, granting nothing.
        history.notify(
            "REFUND", signed: Time.day(21),
            transaction: transaction(
                "4000000000000003", product: Product.pass, purchase: Time.day(20), signed: Time.day(21),
                revoked: Time.day(21), revocationType: "REFUND_FULL"))
        #expect(history.view(at: Time.day(20) + 1).isActive("pro"))
        let refunded = history.view(at: Time.day(22))
        #expect(!refunded.isActive("pro"))
        #expect(refunded.purchases.last?.expiresDate == Time.day(20))
        #expect(refunded.purchases.last?.revoked == true)
    }

    @Test func passesStackPerProductAndNeedADuration() {
        let history = History()
        history.add(transaction("4000000000000001", product: Product.pass, purchase: Time.t0))
        history.add(transaction("4000000000000002", product: Product.dayPass, purchase: Time.hour(1)))
        history.add(transaction("4000000000000003", product: Product.openPass, purchase: Time.hour(2)))
        let view = history.view(at: Time.hour(3))
        // The day pass does not queue behind the weekly pass: [h1, h25).
        #expect(view.purchases.map(\.expiresDate) == [Time.day(7), Time.hour(25), nil])
        #expect(view.entitlement("pro")?.expiresDate == Time.day(7))
        // A pass without durationDays grants nothing.
        let alone = History()
        alone.add(transaction("4000000000000003", product: Product.openPass, purchase: Time.t0))
        #expect(alone.view(at: Time.hour(1)).entitlements == [EntitlementView(name: "pro", active: false, expiresDate: nil)])
    }

    @Test func keyedByOriginalTransactionIdWithoutAppTransactionId() {
        let history = History()
        let event = history.add(transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30), app: nil))
        history.add(renewal(signed: Time.t0, app: nil))
        let key = "otid:" + Customer.otid
        #expect(event.customerKey == key)
        let view = history.view(at: Time.day(1), key)
        #expect(view.appTransactionId == key)
        #expect(view.subscriptions.first?.autoRenewStatus == true)
        #expect(view.json()["appTransactionId"] == .string(key))
        #expect(history.states().keys.sorted() == [key])
    }

    @Test func accountTokenIsTheLatestSignedOne() {
        let history = History()
        history.add(transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30), token: "aaaa"))
        history.add(renewal(signed: Time.day(5), token: "bbbb"))
        history.add(transaction("3000000000000001", product: Product.coins, purchase: Time.day(3), token: "cccc"))
        history.add(transaction("3000000000000002", product: Product.coins, purchase: Time.day(9)))
        #expect(history.state().accountToken?.token == "bbbb")
        #expect(history.view(at: Time.day(1)).appAccountToken == "bbbb")
    }

    @Test func accountViewMergesCustomers() {
        let history = History()
        history.add(transaction("3000000000000001", product: Product.lifetime, purchase: Time.t0, token: Customer.token, app: "704000000000002"))
        history.add(transaction(Customer.otid, product: Product.premium, purchase: Time.t0, expires: Time.day(30), token: Customer.token))
        history.add(transaction("2000000000000009", product: Product.monthly, purchase: Time.t0, expires: Time.day(3), token: Customer.token, app: "704000000000003"))
        let views = history.states().values.map { Evaluation.evaluate($0, rules: testRules, at: Time.day(10)) }
        let account = AccountView.merge(token: Customer.token, at: Time.day(10), views: views)
        #expect(account.appTransactionIds == ["704000000000001", "704000000000002", "704000000000003"])
        #expect(account.entitlements == [
            EntitlementView(name: "premium", active: true, expiresDate: Time.day(30), productId: Product.premium),
            EntitlementView(name: "pro", active: true, expiresDate: nil, productId: Product.lifetime),
        ])
        #expect(JSONWriter.string(account.json()) == #"{"appAccountToken":"7e3fb20b-4cdb-47cc-936d-99d65f608138","at":1764547200000,"appTransactionIds":["704000000000001","704000000000002","704000000000003"],"entitlements":{"premium":{"active":true,"expiresDate":1766275200000,"productId":"com.example.premium.monthly","source":"purchase"},"pro":{"active":true,"expiresDate":null,"productId":"com.example.lifetime","source":"purchase"}}}"#)

        let later = history.states().values.map { Evaluation.evaluate($0, rules: testRules, at: Time.day(40)) }
        let merged = AccountView.merge(token: Customer.token, at: Time.day(40), views: later.filter { $0.appTransactionId != "704000000000002" })
        #expect(merged.entitlements == [
            EntitlementView(name: "premium", active: false, expiresDate: nil),
            EntitlementView(name: "pro", active: false, expiresDate: nil),
        ])
        #expect(merged.activeEntitlements.isEmpty)
    }

    @Test func queryJSONHasTheSpecifiedShape() {
        let history = History()
        history.notify(
            "SUBSCRIBED", "INITIAL_BUY", signed: Time.t0,
            transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30), token: Customer.token),
            renewal: renewal(signed: Time.t0))
        history.add(transaction("3000000000000001", product: Product.lifetime, purchase: Time.hour(1)))
        history.add(transaction("3000000000000002", product: Product.gems, purchase: Time.hour(2), quantity: 150))
        let text = JSONWriter.string(history.view(at: Time.day(1)).json())
        #expect(text == #"{"appTransactionId":"704000000000001","at":1763769600000,"environment":"Production","appAccountToken":"7e3fb20b-4cdb-47cc-936d-99d65f608138","entitlements":{"pro":{"active":true,"expiresDate":null,"productId":"com.example.lifetime","source":"purchase"}},"subscriptions":[{"originalTransactionId":"2000000000000001","productId":"com.example.pro.monthly","subscriptionGroupIdentifier":"21000001","status":"active","expiresDate":1766275200000,"gracePeriodExpiresDate":null,"autoRenewStatus":true,"autoRenewProductId":"com.example.pro.monthly","ownership":"PURCHASED","revocationType":null,"transactionId":"2000000000000001","purchaseDate":1763683200000,"originalPurchaseDate":1763683200000,"periodType":"normal","offerPeriod":null,"willRenew":true,"revocationDate":null,"price":9990,"currency":"USD","unsubscribeDetectedAt":null,"billingIssueDetectedAt":null,"billingPlanType":null,"commitment":null,"expirationIntent":null,"priceIncreaseStatus":null,"renewalPrice":null,"renewalCurrency":null,"offerDiscountType":null,"eligibleWinBackOfferIds":null}],"purchases":[{"transactionId":"3000000000000001","productId":"com.example.lifetime","type":"Non-Consumable","quantity":1,"revoked":false,"revocationType":null,"revocationPercentage":null,"expiresDate":null,"purchaseDate":1763686800000,"revocationDate":null,"price":9990,"currency":"USD"},{"transactionId":"3000000000000002","productId":"com.example.gems","type":"Consumable","quantity":150,"revoked":false,"revocationType":null,"revocationPercentage":null,"expiresDate":null,"purchaseDate":1763690400000,"revocationDate":null,"price":9990,"currency":"USD"}],"balances":{"com.example.gems":150},"originalPurchaseDate":null,"originalApplicationVersion":null,"originalPlatform":null,"consentRescindedAt":null}"#)

        // Written straight to bytes, the same.
        #expect(history.view(at: Time.day(1)).jsonBytes() == Array(text.utf8))

        // A customer known but who had bought nothing by `at`.
        let empty = JSONWriter.string(history.view(at: Time.t0 - 1).json())
        #expect(empty == #"{"appTransactionId":"704000000000001","at":1763683199999,"environment":"Production","appAccountToken":"7e3fb20b-4cdb-47cc-936d-99d65f608138","entitlements":{},"subscriptions":[],"purchases":[],"balances":{},"originalPurchaseDate":null,"originalApplicationVersion":null,"originalPlatform":null,"consentRescindedAt":null}"#)
    }

    @Test func renewalInfoBeforeAnyIsTheEarliest() {
        let history = History()
        history.add(transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30)))
        history.add(renewal(autoRenew: false, signed: Time.day(2)))
        history.add(renewal(autoRenew: true, signed: Time.day(4)))
        // Before any renewal info was signed, the earliest one stands.
        #expect(history.view(at: Time.day(1)).subscriptions.first?.autoRenewStatus == false)
        #expect(history.view(at: Time.day(3)).subscriptions.first?.autoRenewStatus == false)
        #expect(history.view(at: Time.day(4)).subscriptions.first?.autoRenewStatus == true)
        #expect(history.state().renewalInfos[Customer.otid]?.map(\.facts.signedDate) == [Time.day(2), Time.day(4)])
    }

    @Test func currentTransactionTieBreaks() {
        let history = History()
        // Same purchaseDate: the later expiresDate wins, then the greater transactionId (numerically).
        history.add(transaction("99", original: Customer.otid, purchase: Time.t0, expires: Time.day(30)))
        history.add(transaction("100", original: Customer.otid, purchase: Time.t0, expires: Time.day(30)))
        #expect(history.view(at: Time.day(1)).subscriptions.first?.currentTransactionId == "100")
        history.add(transaction("98", original: Customer.otid, purchase: Time.t0, expires: Time.day(31)))
        #expect(history.view(at: Time.day(1)).subscriptions.first?.currentTransactionId == "98")
    }
}
