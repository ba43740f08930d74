import EntitlementCore
import Testing

/// The fields revision 2 added to the customer view (specification section 6),
/// each checked against a lifecycle worked out by hand.
@Suite("Customer view fields")
struct ViewFieldsTests {
    /// Evaluates the whole state and the stored bytes alike, and checks that they agree.
    func view(_ history: History, at: Int64, rules: Rules = testRules) -> CustomerView {
        let state = history.state(rules: rules)
        let whole = Evaluation.evaluate(state, rules: rules, at: at)
        let bytes = StateCodec.encode(state)
        let stored = try? bytes.withUnsafeBytes { buffer throws(CodecError) in
            try Evaluation.evaluate(stateBytes: buffer, rules: rules, at: at)
        }
        #expect(stored == whole, "stored bytes and whole state disagree at \(at)")
        return whole
    }

    /// A free week's trial, a paid renewal, auto-renew turned off (twice in a
    /// row), on again, off again, then expiry.
    @Test func trialRenewalAndAutoRenewRuns() {
        let history = History()
        history.notify(
            "SUBSCRIBED", "INITIAL_BUY", signed: Time.t0,
            transaction: transaction(
                Customer.otid, purchase: Time.t0, expires: Time.day(7), offerType: 1, offerDiscountType: "FREE_TRIAL",
                offerPeriod: "P1W", price: 0),
            renewal: renewal(signed: Time.t0))
        history.notify(
            "DID_RENEW", signed: Time.day(7),
            transaction: transaction(
                "2000000000000002", original: Customer.otid, purchase: Time.day(7), expires: Time.day(37),
                originalPurchase: Time.t0),
            renewal: renewal(signed: Time.day(7)))
        history.notify(
            "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", signed: Time.day(10),
            renewal: renewal(autoRenew: false, signed: Time.day(10)))
        history.add(renewal(autoRenew: false, signed: Time.day(12)))
        history.notify(
            "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", signed: Time.day(14),
            renewal: renewal(autoRenew: true, signed: Time.day(14)))
        history.notify(
            "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", signed: Time.day(20),
            renewal: renewal(autoRenew: false, signed: Time.day(20)))

        let trial = view(history, at: Time.day(3)).subscriptions[0]
        #expect(trial.currentTransactionId == Customer.otid)
        #expect(trial.periodType == "trial")
        #expect(trial.offerPeriod == "P1W")
        #expect(trial.price == 0)
        #expect(trial.currency == "USD")
        #expect(trial.purchaseDate == Time.t0)
        #expect(trial.originalPurchaseDate == Time.t0)
        #expect(trial.willRenew)
        #expect(trial.unsubscribeDetectedAt == nil)
        #expect(trial.billingIssueDetectedAt == nil)
        #expect(trial.revocationDate == nil)

        let paid = view(history, at: Time.day(8))
        #expect(paid.subscriptions[0].currentTransactionId == "2000000000000002")
        #expect(paid.subscriptions[0].periodType == "normal")
        #expect(paid.subscriptions[0].offerPeriod == nil)
        #expect(paid.subscriptions[0].price == 9990)
        #expect(paid.subscriptions[0].purchaseDate == Time.day(7))
        #expect(paid.subscriptions[0].originalPurchaseDate == Time.t0)
        #expect(paid.entitlement("pro")?.productId == Product.monthly)

        let off = view(history, at: Time.day(11)).subscriptions[0]
        #expect(!off.willRenew)
        #expect(off.unsubscribeDetectedAt == Time.day(10))
        // The second version saying "off" continues the run: still detected on day 10.
        #expect(view(history, at: Time.day(13)).subscriptions[0].unsubscribeDetectedAt == Time.day(10))
        let on = view(history, at: Time.day(15)).subscriptions[0]
        #expect(on.willRenew)
        #expect(on.unsubscribeDetectedAt == nil)
        #expect(view(history, at: Time.day(21)).subscriptions[0].unsubscribeDetectedAt == Time.day(20))

        let expired = view(history, at: Time.day(40))
        #expect(expired.subscriptions[0].status == .expired)
        #expect(!expired.subscriptions[0].willRenew)
        #expect(expired.entitlements == [EntitlementView(name: "pro", active: false, expiresDate: nil, productId: nil)])
    }

    /// Billing fails into the grace period, retries, and recovers.
    @Test func billingIssueDetectedAtAcrossRetryAndRecovery() {
        let history = NotificationTypeTests.subscribed()
        history.notify(
            "DID_FAIL_TO_RENEW", "GRACE_PERIOD", signed: Time.day(30),
            renewal: renewal(retry: true, grace: Time.day(36), intent: 2, signed: Time.day(30)), status: 4)
        history.add(renewal(retry: true, grace: Time.day(36), intent: 2, signed: Time.day(33)))
        history.notify(
            "DID_RENEW", "BILLING_RECOVERY", signed: Time.day(34),
            transaction: transaction(
                "2000000000000002", original: Customer.otid, purchase: Time.day(34), expires: Time.day(64),
                originalPurchase: Time.t0),
            renewal: renewal(retry: false, signed: Time.day(34)))

        let grace = view(history, at: Time.day(31)).subscriptions[0]
        #expect(grace.status == .gracePeriod)
        #expect(grace.willRenew)
        #expect(grace.billingIssueDetectedAt == Time.day(30))
        #expect(view(history, at: Time.day(33) + 1).subscriptions[0].billingIssueDetectedAt == Time.day(30))
        #expect(view(history, at: Time.day(31)).entitlement("pro") == EntitlementView(
            name: "pro", active: true, expiresDate: Time.day(36), productId: Product.monthly))

        var strict = testRules
        strict.gracePeriodGrantsAccess = false
        let retrying = view(history, at: Time.day(31), rules: strict)
        #expect(retrying.subscriptions[0].willRenew)
        #expect(retrying.entitlement("pro") == EntitlementView(name: "pro", active: false, expiresDate: nil, productId: nil))

        let recovered = view(history, at: Time.day(35)).subscriptions[0]
        #expect(recovered.status == .active)
        #expect(recovered.billingIssueDetectedAt == nil)
        #expect(recovered.currentTransactionId == "2000000000000002")
    }

    /// Which product sets an entitlement's `expiresDate`.
    @Test func entitlementProductIsTheSourceThatSetsTheExpiry() {
        let history = History()
        history.add(transaction(Customer.otid, product: Product.monthly, purchase: Time.t0, expires: Time.day(30)))
        history.add(transaction("2000000000000005", product: Product.basic, purchase: Time.t0, expires: Time.day(30)))
        // Equal expiries: the smaller productId (basic < pro).
        #expect(view(history, at: Time.day(1)).entitlement("pro")?.productId == Product.basic)
        history.add(transaction("2000000000000006", product: Product.yearly, purchase: Time.day(2), expires: Time.day(365)))
        #expect(view(history, at: Time.day(3)).entitlement("pro")?.productId == Product.yearly)
        // A pass grants too but ends sooner; a non-consumable wins over any expiry.
        history.add(transaction("3000000000000001", product: Product.pass, purchase: Time.day(3)))
        #expect(view(history, at: Time.day(4)).entitlement("pro")?.productId == Product.yearly)
        history.add(transaction("3000000000000002", product: Product.lifetime, purchase: Time.day(5)))
        let lifetime = view(history, at: Time.day(6)).entitlement("pro")
        #expect(lifetime == EntitlementView(name: "pro", active: true, expiresDate: nil, productId: Product.lifetime))
        // Upgrade: premium takes over, and premium's second entitlement names it too.
        history.add(transaction("2000000000000007", original: "2000000000000006", product: Product.premium, purchase: Time.day(7), expires: Time.day(37)))
        #expect(view(history, at: Time.day(8)).entitlement("premium")?.productId == Product.premium)
    }

    /// A purchase's dates and price; a refund's date only once it has happened.
    @Test func purchaseFieldsAndRefund() {
        let history = History()
        history.add(transaction("3000000000000001", product: Product.lifetime, purchase: Time.t0, price: 29990, currency: "EUR"))
        history.notify(
            "REFUND", signed: Time.day(10),
            transaction: transaction(
                "3000000000000001", product: Product.lifetime, purchase: Time.t0, signed: Time.day(10),
                revoked: Time.day(10), revocationType: "REFUND_FULL", price: 29990, currency: "EUR"))
        let before = view(history, at: Time.day(9)).purchases[0]
        #expect(before.purchaseDate == Time.t0)
        #expect(before.revocationDate == nil)
        #expect(before.price == 29990)
        #expect(before.currency == "EUR")
        let after = view(history, at: Time.day(10)).purchases[0]
        #expect(after.revoked)
        #expect(after.revocationDate == Time.day(10))
        #expect(view(history, at: Time.day(10)).entitlement("pro")?.productId == nil)
    }

    /// A refunded subscription shows its revocation date.
    @Test func subscriptionRevocationDate() {
        let history = NotificationTypeTests.subscribed()
        history.notify(
            "REFUND", signed: Time.day(5),
            transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30), signed: Time.day(5), revoked: Time.day(5)))
        #expect(view(history, at: Time.day(4)).subscriptions[0].revocationDate == nil)
        let revoked = view(history, at: Time.day(6)).subscriptions[0]
        #expect(revoked.status == .revoked)
        #expect(revoked.revocationDate == Time.day(5))
        #expect(!revoked.willRenew)
    }

    /// The newest AppTransaction's original purchase and version; the environment.
    @Test func appTransactionAndEnvironment() {
        let history = History()
        history.add(.appTransaction(appTransaction(created: Time.t0, originalPurchase: Time.t0 - 100 * Time.day, originalVersion: "1.0")))
        history.add(.appTransaction(appTransaction(created: Time.day(1), originalPurchase: Time.t0 - 100 * Time.day, originalVersion: "1.2")))
        let bare = view(history, at: Time.day(2))
        #expect(bare.originalPurchaseDate == Time.t0 - 100 * Time.day)
        #expect(bare.originalApplicationVersion == "1.2")
        #expect(bare.environment == "Production")

        // App Review's sandbox purchase in a production app: both environments are named.
        history.add(transaction("3000000000000001", product: Product.lifetime, purchase: Time.t0, environment: "Sandbox"))
        #expect(view(history, at: Time.day(2)).environment == "Production,Sandbox")

        let none = History()
        none.add(transaction("3000000000000001", product: Product.lifetime, purchase: Time.t0))
        #expect(view(none, at: Time.day(2)).originalPurchaseDate == nil)
        #expect(view(none, at: Time.day(2)).originalApplicationVersion == nil)
    }

    /// Offer types name the period type.
    @Test func periodTypes() {
        let cases: [(Int64?, String?, String)] = [
            (nil, nil, "normal"), (1, "PAY_AS_YOU_GO", "intro"), (1, "FREE_TRIAL", "trial"), (2, nil, "promotional"),
            (3, nil, "offer_code"), (4, nil, "win_back"),
        ]
        for (offerType, discount, expected) in cases {
            let history = History()
            history.add(transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30), offerType: offerType, offerDiscountType: discount))
            #expect(view(history, at: Time.day(1)).subscriptions[0].periodType == expected)
        }
    }

    /// Facts stored by earlier builds (no display facts) still decode, and
    /// events and states without display facts keep their earlier bytes.
    @Test func earlierFormatsStillRead() throws {
        let history = History()
        history.add(transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30), price: 100))
        let event = history.events[0]
        let current = EventCodec.encode(event)
        #expect(current.first == EventCodec.formatVersion)
        let old = EventCodec.encode(event, formatVersion: 1)
        #expect(old.first == 1)
        let decoded = try EventCodec.decode(old, seq: 1)
        guard case .transaction(let signed) = decoded.body else {
            Issue.record("not a transaction")
            return
        }
        #expect(signed.facts.price == nil)
        #expect(EventCodec.encode(decoded) == old)
        // Format 1 bytes carrying a display flag bit are refused.
        var state = CustomerState(key: "k")
        state.transactions[signed.facts.transactionId] = signed
        #expect(StateCodec.encode(state).first == 2)
        #expect(try StateCodec.decode(StateCodec.encode(state)) == state)
        #expect(StateCodec.encode(history.state()).first == StateCodec.formatVersion)
    }
}
