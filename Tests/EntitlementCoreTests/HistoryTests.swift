import EntitlementCore
import Testing

/// `history` (specification section 7): every line of hand-worked lifecycles.
@Suite("Customer history")
struct HistoryTests {
    func lines(_ history: History, until: Int64 = Time.day(400), rules: Rules = testRules) -> [HistoryLine] {
        CustomerHistory.timeline(state: history.state(rules: rules), events: history.events, rules: rules, until: until)
    }

    func tx(_ id: String, _ field: String, _ type: String? = nil, _ subtype: String? = nil) -> HistoryCause {
        HistoryCause(kind: .transaction, id: id, field: field, notificationType: type, subtype: subtype)
    }

    func pro(_ at: Int64, _ active: Bool, _ expires: Int64?, _ product: String?, _ cause: HistoryCause) -> HistoryLine {
        HistoryLine(at: at, change: .entitlement(name: "pro", active: active, expiresDate: expires, productId: product), cause: cause)
    }

    func sub(_ at: Int64, _ status: SubscriptionStatus, _ previous: SubscriptionStatus?, _ cause: HistoryCause, otid: String = Customer.otid) -> HistoryLine {
        HistoryLine(at: at, change: .subscription(originalTransactionId: otid, status: status, previous: previous), cause: cause)
    }

    /// One transaction version carried by two notifications and sent on its own: the
    /// earliest-signed notification is named, whatever order the copies came in.
    @Test func theNotificationNamedDoesNotDependOnArrivalOrder() {
        let purchase = transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30), signed: Time.t0 + 500)
        var orders: [[HistoryLine]] = []
        for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0], [2, 0, 1]] {
            let history = History()
            for index in order {
                switch index {
                case 0: history.notify("SUBSCRIBED", "INITIAL_BUY", signed: Time.t0 + 600, transaction: purchase)
                case 1: history.notify("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", signed: Time.day(1), transaction: purchase)
                default: history.add(purchase)
                }
            }
            orders.append(lines(history))
        }
        #expect(orders.first?.first?.cause == tx(Customer.otid, "purchaseDate", "SUBSCRIBED", "INITIAL_BUY"))
        for other in orders.dropFirst() { #expect(other == orders.first) }
    }

    /// Renewal, billing failure into the grace period, recovery, expiry.
    @Test func renewalsGracePeriodAndRecovery() {
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
        let initial = tx(Customer.otid, "purchaseDate", "SUBSCRIBED", "INITIAL_BUY")
        let expected = [
            pro(Time.t0, true, Time.day(30), Product.monthly, initial),
            sub(Time.t0, .active, nil, initial),
            pro(Time.day(30), true, Time.day(60), Product.monthly, tx("2000000000000002", "purchaseDate", "DID_RENEW")),
            pro(Time.day(60), true, Time.day(66), Product.monthly, tx("2000000000000002", "expiresDate", "DID_RENEW")),
            sub(Time.day(60), .gracePeriod, .active, tx("2000000000000002", "expiresDate", "DID_RENEW")),
            pro(Time.day(64), true, Time.day(94), Product.monthly, tx("2000000000000003", "purchaseDate", "DID_RENEW", "BILLING_RECOVERY")),
            sub(Time.day(64), .active, .gracePeriod, tx("2000000000000003", "purchaseDate", "DID_RENEW", "BILLING_RECOVERY")),
            pro(Time.day(94), false, nil, nil, tx("2000000000000003", "expiresDate", "DID_RENEW", "BILLING_RECOVERY")),
            sub(Time.day(94), .expired, .active, tx("2000000000000003", "expiresDate", "DID_RENEW", "BILLING_RECOVERY")),
        ]
        #expect(lines(history) == expected)
        // --until cuts the timeline; before the first event it is empty.
        #expect(lines(history, until: Time.day(63)) == Array(expected.prefix(5)))
        #expect(lines(history, until: Time.t0 - 1).isEmpty)

        // Without access in grace, the grace period is a loss and the recovery a gain.
        var strict = testRules
        strict.gracePeriodGrantsAccess = false
        let strictLines = lines(history, rules: strict)
        #expect(strictLines[3] == pro(Time.day(60), false, nil, nil, tx("2000000000000002", "expiresDate", "DID_RENEW")))

        // The specification's JSON, keys in order.
        #expect(JSONWriter.string(expected[0].json()) == #"{"at":1763683200000,"entitlement":"pro","active":true,"expiresDate":1766275200000,"productId":"com.example.pro.monthly","cause":{"kind":"transaction","id":"2000000000000001","field":"purchaseDate","notificationType":"SUBSCRIBED","subtype":"INITIAL_BUY"}}"#)
        #expect(JSONWriter.string(expected[1].json()) == #"{"at":1763683200000,"subscription":"2000000000000001","status":"active","previous":null,"cause":{"kind":"transaction","id":"2000000000000001","field":"purchaseDate","notificationType":"SUBSCRIBED","subtype":"INITIAL_BUY"}}"#)
    }

    /// A billing retry that ends without recovery: the renewal info's date is the cause.
    @Test func billingRetryWithoutGraceThenExpiry() {
        let history = NotificationTypeTests.subscribed()
        history.notify(
            "DID_FAIL_TO_RENEW", signed: Time.day(31),
            renewal: renewal(retry: true, intent: 2, signed: Time.day(31)), status: 3)
        let retry = HistoryCause(kind: .renewalInfo, id: Customer.otid, signedDate: Time.day(31), notificationType: "DID_FAIL_TO_RENEW")
        let all = lines(history)
        #expect(all.count == 5)
        #expect(all[2] == pro(Time.day(30), false, nil, nil, tx(Customer.otid, "expiresDate", "SUBSCRIBED", "INITIAL_BUY")))
        #expect(all[3] == sub(Time.day(30), .expired, .active, tx(Customer.otid, "expiresDate", "SUBSCRIBED", "INITIAL_BUY")))
        #expect(all[4] == sub(Time.day(31), .billingRetry, .expired, retry))
        #expect(JSONWriter.string(retry.json()) == #"{"kind":"renewalInfo","id":"2000000000000001","signedDate":1766361600000,"notificationType":"DID_FAIL_TO_RENEW","subtype":null}"#)
    }

    /// An upgrade takes over at once; the upgraded year's end changes nothing.
    @Test func upgrade() {
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
        let upgrade = tx("2000000000000002", "purchaseDate", "DID_CHANGE_RENEWAL_PREF", "UPGRADE")
        let lapse = tx("2000000000000002", "expiresDate", "DID_CHANGE_RENEWAL_PREF", "UPGRADE")
        #expect(lines(history) == [
            pro(Time.t0, true, Time.day(365), Product.yearly, tx(Customer.otid, "purchaseDate", "SUBSCRIBED", "INITIAL_BUY")),
            sub(Time.t0, .active, nil, tx(Customer.otid, "purchaseDate", "SUBSCRIBED", "INITIAL_BUY")),
            HistoryLine(at: Time.day(100), change: .entitlement(name: "premium", active: true, expiresDate: Time.day(130), productId: Product.premium), cause: upgrade),
            pro(Time.day(100), true, Time.day(130), Product.premium, upgrade),
            HistoryLine(at: Time.day(130), change: .entitlement(name: "premium", active: false, expiresDate: nil, productId: nil), cause: lapse),
            pro(Time.day(130), false, nil, nil, lapse),
            sub(Time.day(130), .expired, .active, lapse),
        ])
    }

    /// An upgrade in the second month: the renewed month was current until the upgrade
    /// was bought, so the days between the renewal and the upgrade keep their access
    /// (the first month does not become current again when the renewal is marked upgraded).
    @Test func upgradeAfterARenewal() {
        let history = NotificationTypeTests.subscribed()
        let renewed = "2000000000000002"
        let upgradeId = "2000000000000003"
        history.notify(
            "DID_RENEW", signed: Time.day(30),
            transaction: transaction(renewed, original: Customer.otid, purchase: Time.day(30), expires: Time.day(60)),
            renewal: renewal(signed: Time.day(30)))
        history.notify(
            "DID_CHANGE_RENEWAL_PREF", "UPGRADE", signed: Time.day(40),
            transaction: transaction(upgradeId, original: Customer.otid, product: Product.premium, purchase: Time.day(40), expires: Time.day(70)),
            renewal: renewal(product: Product.premium, signed: Time.day(40)))
        history.add(transaction(renewed, original: Customer.otid, purchase: Time.day(30), expires: Time.day(60), signed: Time.day(40), upgraded: true))

        let between = history.view(at: Time.day(35))
        #expect(between.subscriptions.map(\.status) == [.active])
        #expect(between.subscriptions.first?.currentTransactionId == renewed)
        #expect(between.entitlement("pro") == EntitlementView(name: "pro", active: true, expiresDate: Time.day(60), productId: Product.monthly))

        let initial = tx(Customer.otid, "purchaseDate", "SUBSCRIBED", "INITIAL_BUY")
        let upgrade = tx(upgradeId, "purchaseDate", "DID_CHANGE_RENEWAL_PREF", "UPGRADE")
        let lapse = tx(upgradeId, "expiresDate", "DID_CHANGE_RENEWAL_PREF", "UPGRADE")
        #expect(lines(history) == [
            pro(Time.t0, true, Time.day(30), Product.monthly, initial),
            sub(Time.t0, .active, nil, initial),
            pro(Time.day(30), true, Time.day(60), Product.monthly, tx(renewed, "purchaseDate", "DID_RENEW")),
            HistoryLine(at: Time.day(40), change: .entitlement(name: "premium", active: true, expiresDate: Time.day(70), productId: Product.premium), cause: upgrade),
            pro(Time.day(40), true, Time.day(70), Product.premium, upgrade),
            HistoryLine(at: Time.day(70), change: .entitlement(name: "premium", active: false, expiresDate: nil, productId: nil), cause: lapse),
            pro(Time.day(70), false, nil, nil, lapse),
            sub(Time.day(70), .expired, .active, lapse),
        ])
    }

    /// A downgrade waits for the renewal: premium is lost as its period ends, pro goes on as basic.
    @Test func downgradeAtRenewal() {
        let history = NotificationTypeTests.subscribed(product: Product.premium)
        history.notify(
            "DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", signed: Time.day(10),
            renewal: renewal(product: Product.premium, autoRenewProduct: Product.basic, signed: Time.day(10)))
        history.notify(
            "DID_RENEW", signed: Time.day(30),
            transaction: transaction("2000000000000002", original: Customer.otid, product: Product.basic, purchase: Time.day(30), expires: Time.day(60)),
            renewal: renewal(product: Product.basic, signed: Time.day(30)))
        let all = lines(history, until: Time.day(59))
        let initial = tx(Customer.otid, "purchaseDate", "SUBSCRIBED", "INITIAL_BUY")
        #expect(all == [
            HistoryLine(at: Time.t0, change: .entitlement(name: "premium", active: true, expiresDate: Time.day(30), productId: Product.premium), cause: initial),
            pro(Time.t0, true, Time.day(30), Product.premium, initial),
            sub(Time.t0, .active, nil, initial),
            HistoryLine(
                at: Time.day(30), change: .entitlement(name: "premium", active: false, expiresDate: nil, productId: nil),
                cause: tx(Customer.otid, "expiresDate", "SUBSCRIBED", "INITIAL_BUY")),
            pro(Time.day(30), true, Time.day(60), Product.basic, tx("2000000000000002", "purchaseDate", "DID_RENEW")),
        ])
    }

    /// A refunded subscription, and a refund of a lifetime purchase that Apple reversed.
    @Test func refundAndReversal() {
        let history = NotificationTypeTests.subscribed()
        history.notify(
            "REFUND", signed: Time.day(5),
            transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30), signed: Time.day(5), revoked: Time.day(5), revocationType: "REFUND_FULL"))
        let refund = tx(Customer.otid, "revocationDate", "REFUND")
        #expect(lines(history).suffix(2) == [pro(Time.day(5), false, nil, nil, refund), sub(Time.day(5), .revoked, .active, refund)])

        let lifetime = History()
        lifetime.add(transaction("3000000000000001", product: Product.lifetime, purchase: Time.t0))
        lifetime.notify(
            "REFUND", signed: Time.day(10),
            transaction: transaction("3000000000000001", product: Product.lifetime, purchase: Time.t0, signed: Time.day(10), revoked: Time.day(10)))
        #expect(lines(lifetime) == [
            pro(Time.t0, true, nil, Product.lifetime, tx("3000000000000001", "purchaseDate")),
            pro(Time.day(10), false, nil, nil, tx("3000000000000001", "revocationDate", "REFUND")),
        ])
        // The reversal, signed later, replaces the refunded version: with everything
        // known now, the purchase was never revoked.
        lifetime.notify(
            "REFUND_REVERSED", signed: Time.day(20),
            transaction: transaction("3000000000000001", product: Product.lifetime, purchase: Time.t0, signed: Time.day(20)))
        #expect(lines(lifetime) == [pro(Time.t0, true, nil, Product.lifetime, tx("3000000000000001", "purchaseDate"))])
    }

    /// Family Sharing access revoked.
    @Test func familyRevoke() {
        let history = History()
        history.add(transaction("3000000000000001", product: Product.lifetime, purchase: Time.t0, ownership: "FAMILY_SHARED"))
        history.notify(
            "REVOKE", signed: Time.day(20),
            transaction: transaction(
                "3000000000000001", product: Product.lifetime, purchase: Time.t0, signed: Time.day(20),
                revoked: Time.day(20), revocationType: "FAMILY_REVOKE", ownership: "FAMILY_SHARED"))
        #expect(lines(history) == [
            pro(Time.t0, true, nil, Product.lifetime, tx("3000000000000001", "purchaseDate")),
            pro(Time.day(20), false, nil, nil, tx("3000000000000001", "revocationDate", "REVOKE")),
        ])
    }

    /// Two week passes, the second stacked after the first.
    @Test func stackedPasses() {
        let history = History()
        history.add(transaction("3000000000000001", product: Product.pass, purchase: Time.t0))
        history.add(transaction("3000000000000002", product: Product.pass, purchase: Time.day(3)))
        #expect(lines(history) == [
            pro(Time.t0, true, Time.day(7), Product.pass, tx("3000000000000001", "purchaseDate")),
            pro(Time.day(7), true, Time.day(14), Product.pass, tx("3000000000000002", "windowStart")),
            pro(Time.day(14), false, nil, nil, tx("3000000000000002", "expiresDate")),
        ])
    }

    /// Coins bought twice, then half of the second purchase refunded.
    @Test func consumables() {
        let history = History()
        history.add(transaction("3000000000000001", product: Product.coins, purchase: Time.t0))
        history.add(transaction("3000000000000002", product: Product.coins, purchase: Time.day(1), quantity: 2))
        history.notify(
            "REFUND", signed: Time.day(2),
            transaction: transaction(
                "3000000000000002", product: Product.coins, purchase: Time.day(1), signed: Time.day(2), quantity: 2,
                revoked: Time.day(2), revocationType: "REFUND_PRORATED", revocationPercentage: 50_000))
        let all = lines(history)
        #expect(all == [
            HistoryLine(at: Time.t0, change: .balance(currency: "coins", value: 100, previous: nil), cause: tx("3000000000000001", "purchaseDate")),
            HistoryLine(at: Time.day(1), change: .balance(currency: "coins", value: 300, previous: 100), cause: tx("3000000000000002", "purchaseDate")),
            HistoryLine(at: Time.day(2), change: .balance(currency: "coins", value: 200, previous: 300), cause: tx("3000000000000002", "revocationDate", "REFUND")),
        ])
        #expect(JSONWriter.string(all[2].json()) == #"{"at":1763856000000,"balance":"coins","value":200,"previous":300,"cause":{"kind":"transaction","id":"3000000000000002","field":"revocationDate","notificationType":"REFUND","subtype":null}}"#)
    }
}
