import EntitlementCore
import Testing

/// One test per notification type and subtype Apple documents: each builds a
/// realistic history (payloads decoded through the real payload models) and
/// checks what the customer can use afterwards.
@Suite("Notification types")
struct NotificationTypeTests {
    /// SUBSCRIBED INITIAL_BUY at t0: a monthly subscription expiring at day 30.
    static func subscribed(product: String = Product.monthly, ownership: String = "PURCHASED") -> History {
        let history = History()
        history.notify(
            "SUBSCRIBED", "INITIAL_BUY", signed: Time.t0,
            transaction: transaction(
                Customer.otid, product: product, purchase: Time.t0, expires: Time.day(30), ownership: ownership,
                token: Customer.token),
            renewal: renewal(product: product, signed: Time.t0), status: 1)
        return history
    }

    static let renewed = "2000000000000002"

    @Test func renewalExtensionSummary() throws {
        let history = Self.subscribed()
        let summary = history.notify(
            "RENEWAL_EXTENSION", "SUMMARY", signed: Time.day(20), data: false,
            extra: [
                (
                    "summary",
                    object([
                        ("requestIdentifier", json("a1b2c3")), ("environment", json("Production")),
                        ("appAppleId", json(Int64(1_234_567_890))), ("bundleId", json("com.example.app")),
                        ("productId", json(Product.monthly)), ("storefrontCountryCodes", .array(["USA"])),
                        ("failedCount", json(Int64(0))), ("succeededCount", json(Int64(1200))),
                    ])
                )
            ])
        // About no one customer: routed nowhere.
        #expect(summary.customerKey == nil)
        var state = history.state()
        let before = Evaluation.evaluate(state, rules: testRules, at: Time.day(21))
        try state.apply(summary, rules: testRules)
        #expect(Evaluation.evaluate(state, rules: testRules, at: Time.day(21)) == before)
        #expect(state.lastNotification?.subtype == .summary)
    }

    @Test func test() {
        let history = History()
        let event = history.notify("TEST", signed: Time.t0)
        #expect(event.customerKey == nil)
        #expect(history.states().isEmpty)
    }

    @Test func rescindConsent() {
        let history = Self.subscribed()
        let event = history.notify(
            "RESCIND_CONSENT", signed: Time.day(3), appTransaction: appTransaction(created: Time.day(3)), data: false)
        #expect(event.customerKey == Customer.app)
        let state = history.state()
        #expect(state.appTransaction?.facts.appTransactionId == Customer.app)
        #expect(state.appTransaction?.facts.signedDate == Time.day(3))
        #expect(history.view(at: Time.day(4)).isActive("pro"))
    }

    @Test(arguments: ["UNREPORTED", "ACTIVE_TOKEN_REMINDER", "CREATED"])
    func externalPurchaseToken(subtype: String) {
        let history = History()
        let event = history.notify(
            "EXTERNAL_PURCHASE_TOKEN", subtype, signed: Time.t0, data: false,
            extra: [
                (
                    "externalPurchaseToken",
                    object([
                        ("externalPurchaseId", json("b2158121-7af9-49d4-9561-1f588205523e")),
                        ("tokenCreationDate", json(Time.t0 - Time.day)), ("appAppleId", json(Int64(1_234_567_890))),
                        ("bundleId", json("com.example.app")),
                    ])
                )
            ])
        #expect(event.customerKey == nil)
        #expect(history.states().isEmpty)
        if case .notification(let facts) = event.body {
            #expect(facts.subtype == NotificationSubtype(rawValue: subtype))
            #expect(facts.headline.hasPrefix("External purchase token"))
        }
    }

    @Test func unknownFutureType() {
        let history = Self.subscribed()
        history.notify(
            "SUBSCRIPTION_PAUSED", "SOMETHING_NEW", signed: Time.day(30),
            transaction: transaction(Self.renewed, original: Customer.otid, purchase: Time.day(30), expires: Time.day(60)),
            renewal: renewal(signed: Time.day(30)), status: 1)
        let state = history.state()
        #expect(state.lastNotification?.type == .unknown("SUBSCRIPTION_PAUSED"))
        #expect(state.lastNotification?.subtype == .unknown("SOMETHING_NEW"))
        #expect(state.lastNotification?.headline == "Unrecognized notification SUBSCRIPTION_PAUSED")
        // Whatever it means, the state follows the signed data it carries.
        #expect(history.view(at: Time.day(31)).entitlement("pro")?.expiresDate == Time.day(60))
    }

    @Test func everyTypeAndSubtypeHasAHeadline() {
        for type in NotificationType.known {
            #expect(!NotificationMeaning.headline(type, nil).isEmpty)
            for subtype in NotificationSubtype.known {
                #expect(!NotificationMeaning.headline(type, subtype).isEmpty)
            }
        }
        #expect(NotificationMeaning.headline(.didRenew, .billingRecovery) == "Renewed after a billing failure")
        #expect(NotificationMeaning.changesState(.refund))
        #expect(!NotificationMeaning.changesState(.test))
    }

    // MARK: The table: one row per documented type and subtype

    /// What a row's history starts from.
    enum Base: Sendable {
        case empty
        case subscribed(product: String = Product.monthly, ownership: String = "PURCHASED")
        func history() -> History {
            switch self {
            case .empty: History()
            case .subscribed(let product, let ownership): NotificationTypeTests.subscribed(product: product, ownership: ownership)
            }
        }
    }

    /// One documented notification type and subtype, and a case of it: the history the case
    /// adds to `base` (its last notification is of that type), and what is checked afterwards.
    struct Case: Sendable, CustomTestStringConvertible {
        let type: String
        let subtype: String?
        let name: String
        let base: Base
        let run: @Sendable (History) throws -> Void
        init(_ type: String, _ subtype: String?, _ name: String, _ base: Base, _ run: @escaping @Sendable (History) throws -> Void) {
            self.type = type
            self.subtype = subtype
            self.name = name
            self.base = base
            self.run = run
        }
        var testDescription: String { [type, subtype, "(\(name))"].compactMap { $0 }.joined(separator: " ") }
    }

    @Test(arguments: NotificationTypeTests.cases)
    func notificationType(_ row: Case) throws {
        let history = row.base.history()
        try row.run(history)
        // The case's last notification is the type (and subtype) its row names, whoever it was routed to.
        let notifications = history.events.compactMap { event -> NotificationFacts? in
            if case .notification(let facts) = event.body { return facts }
            return nil
        }
        let last = try #require(notifications.last, "\(row.name) sent no notification")
        #expect(last.type == NotificationType(rawValue: row.type), "\(row.name)")
        #expect(last.subtype == row.subtype.map { NotificationSubtype(rawValue: $0) }, "\(row.name)")
    }

    static let cases: [Case] = [
        Case("SUBSCRIBED", "INITIAL_BUY", "subscribedInitialBuy", .subscribed()) { history in
            let view = history.view(at: Time.day(1))
            #expect(view.subscriptions.count == 1)
            let subscription = view.subscriptions[0]
            #expect(subscription.status == .active)
            #expect(subscription.productId == Product.monthly)
            #expect(subscription.subscriptionGroupIdentifier == Customer.group)
            #expect(subscription.expiresDate == Time.day(30))
            #expect(subscription.autoRenewStatus == true)
            #expect(subscription.autoRenewProductId == Product.monthly)
            #expect(subscription.ownership == "PURCHASED")
            #expect(view.entitlements == [EntitlementView(name: "pro", active: true, expiresDate: Time.day(30), productId: Product.monthly)])
            #expect(view.appAccountToken == Customer.token)
            #expect(history.state().lastNotification?.type == .subscribed)
            #expect(history.state().lastNotification?.subtype == .initialBuy)

            // Before the purchase the customer had bought nothing.
            let before = history.view(at: Time.t0 - 1)
            #expect(before.entitlements.isEmpty && before.subscriptions.isEmpty && before.purchases.isEmpty)
        },
        Case("SUBSCRIBED", "RESUBSCRIBE", "subscribedResubscribe", .subscribed()) { history in
            history.notify(
                "EXPIRED", "VOLUNTARY", signed: Time.day(30),
                transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30)),
                renewal: renewal(autoRenew: false, intent: 1, signed: Time.day(30)), status: 2)
            history.notify(
                "SUBSCRIBED", "RESUBSCRIBE", signed: Time.day(45),
                transaction: transaction(NotificationTypeTests.renewed, original: Customer.otid, purchase: Time.day(45), expires: Time.day(75)),
                renewal: renewal(signed: Time.day(45)), status: 1)

            let lapsed = history.view(at: Time.day(40))
            #expect(lapsed.subscriptions.first?.status == .expired)
            #expect(lapsed.entitlements == [EntitlementView(name: "pro", active: false, expiresDate: nil)])
            #expect(lapsed.subscriptions.first?.autoRenewStatus == false)

            let back = history.view(at: Time.day(46))
            #expect(back.subscriptions.first?.status == .active)
            #expect(back.subscriptions.first?.currentTransactionId == NotificationTypeTests.renewed)
            #expect(back.subscriptions.first?.autoRenewStatus == true)
            #expect(back.entitlement("pro") == EntitlementView(name: "pro", active: true, expiresDate: Time.day(75), productId: Product.monthly))
        },
        Case("DID_RENEW", nil, "didRenew", .subscribed()) { history in
            history.notify(
                "DID_RENEW", signed: Time.day(30),
                transaction: transaction(NotificationTypeTests.renewed, original: Customer.otid, purchase: Time.day(30), expires: Time.day(60)),
                renewal: renewal(signed: Time.day(30)), status: 1)
            #expect(history.view(at: Time.day(29)).entitlement("pro")?.expiresDate == Time.day(30))
            let view = history.view(at: Time.day(31))
            #expect(view.subscriptions.first?.status == .active)
            #expect(view.subscriptions.first?.expiresDate == Time.day(60))
            #expect(view.entitlement("pro") == EntitlementView(name: "pro", active: true, expiresDate: Time.day(60), productId: Product.monthly))
        },
        Case("DID_RENEW", "BILLING_RECOVERY", "didRenewBillingRecovery", .subscribed()) { history in
            history.notify(
                "DID_FAIL_TO_RENEW", signed: Time.day(30),
                transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30)),
                renewal: renewal(retry: true, intent: 2, signed: Time.day(30)), status: 3)
            history.notify(
                "DID_RENEW", "BILLING_RECOVERY", signed: Time.day(33),
                transaction: transaction(NotificationTypeTests.renewed, original: Customer.otid, purchase: Time.day(33), expires: Time.day(63)),
                renewal: renewal(retry: false, signed: Time.day(33)), status: 1)

            let failing = history.view(at: Time.day(31))
            #expect(failing.subscriptions.first?.status == .billingRetry)
            #expect(!failing.isActive("pro"))
            let recovered = history.view(at: Time.day(34))
            #expect(recovered.subscriptions.first?.status == .active)
            #expect(recovered.entitlement("pro")?.expiresDate == Time.day(63))
        },
        Case("DID_FAIL_TO_RENEW", nil, "didFailToRenewWithoutGracePeriod", .subscribed()) { history in
            history.notify(
                "DID_FAIL_TO_RENEW", signed: Time.day(30),
                transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30)),
                renewal: renewal(retry: true, intent: 2, signed: Time.day(30)), status: 3)
            let view = history.view(at: Time.day(31))
            #expect(view.subscriptions.first?.status == .billingRetry)
            #expect(view.entitlement("pro") == EntitlementView(name: "pro", active: false, expiresDate: nil))

            // Rules that let billing retry grant: the expiry shown is the end of the last paid period.
            var lenient = testRules
            lenient.billingRetryGrantsAccess = true
            let granted = history.view(at: Time.day(31), rules: lenient)
            #expect(granted.entitlement("pro") == EntitlementView(name: "pro", active: true, expiresDate: Time.day(30), productId: Product.monthly))
        },
        Case("DID_FAIL_TO_RENEW", "GRACE_PERIOD", "didFailToRenewGracePeriod", .subscribed()) { history in
            history.notify(
                "DID_FAIL_TO_RENEW", "GRACE_PERIOD", signed: Time.day(30),
                transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30)),
                renewal: renewal(retry: true, grace: Time.day(36), intent: 2, signed: Time.day(30)), status: 4)
            let view = history.view(at: Time.day(31))
            #expect(view.subscriptions.first?.status == .gracePeriod)
            #expect(view.subscriptions.first?.gracePeriodExpiresDate == Time.day(36))
            #expect(view.entitlement("pro") == EntitlementView(name: "pro", active: true, expiresDate: Time.day(36), productId: Product.monthly))

            var strict = testRules
            strict.gracePeriodGrantsAccess = false
            #expect(!history.view(at: Time.day(31), rules: strict).isActive("pro"))

            // The grace period ends at its exact millisecond; then, still retrying.
            #expect(history.view(at: Time.day(36) - 1).subscriptions.first?.status == .gracePeriod)
            #expect(history.view(at: Time.day(36)).subscriptions.first?.status == .billingRetry)
            #expect(history.view(at: Time.day(37)).subscriptions.first?.status == .billingRetry)
        },
        Case("GRACE_PERIOD_EXPIRED", nil, "gracePeriodExpired", .subscribed()) { history in
            history.notify(
                "DID_FAIL_TO_RENEW", "GRACE_PERIOD", signed: Time.day(30),
                renewal: renewal(retry: true, grace: Time.day(36), intent: 2, signed: Time.day(30)), status: 4)
            history.notify(
                "GRACE_PERIOD_EXPIRED", signed: Time.day(36),
                transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30)),
                renewal: renewal(retry: true, grace: Time.day(36), intent: 2, signed: Time.day(36)), status: 3)
            let view = history.view(at: Time.day(36) + 1)
            #expect(view.subscriptions.first?.status == .billingRetry)
            #expect(!view.isActive("pro"))
        },
        Case("EXPIRED", "VOLUNTARY", "expiredVoluntary", .subscribed()) { history in
            history.notify(
                "EXPIRED", "VOLUNTARY", signed: Time.day(30),
                transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30)),
                renewal: renewal(autoRenew: false, intent: 1, signed: Time.day(30)), status: 2)
            #expect(history.view(at: Time.day(29)).subscriptions.first?.autoRenewStatus == true)
            let view = history.view(at: Time.day(31))
            #expect(view.subscriptions.first?.status == .expired)
            #expect(view.subscriptions.first?.autoRenewStatus == false)
            #expect(view.entitlement("pro") == EntitlementView(name: "pro", active: false, expiresDate: nil))
        },
        Case("EXPIRED", "BILLING_RETRY", "expiredBillingRetry", .subscribed()) { history in
            history.notify(
                "DID_FAIL_TO_RENEW", signed: Time.day(30),
                renewal: renewal(retry: true, intent: 2, signed: Time.day(30)), status: 3)
            history.notify(
                "EXPIRED", "BILLING_RETRY", signed: Time.day(90),
                transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30)),
                renewal: renewal(autoRenew: false, retry: false, intent: 2, signed: Time.day(90)), status: 2)
            #expect(history.view(at: Time.day(60)).subscriptions.first?.status == .billingRetry)
            let view = history.view(at: Time.day(91))
            #expect(view.subscriptions.first?.status == .expired)
            #expect(!view.isActive("pro"))
        },
        Case("EXPIRED", "PRICE_INCREASE", "expiredPriceIncrease", .subscribed()) { history in
            history.notify(
                "EXPIRED", "PRICE_INCREASE", signed: Time.day(30),
                transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30)),
                renewal: renewal(autoRenew: false, intent: 3, priceIncreaseStatus: 0, signed: Time.day(30)), status: 2)
            let view = history.view(at: Time.day(31))
            #expect(view.subscriptions.first?.status == .expired)
            #expect(!view.isActive("pro"))
        },
        Case("EXPIRED", "PRODUCT_NOT_FOR_SALE", "expiredProductNotForSale", .subscribed()) { history in
            history.notify(
                "EXPIRED", "PRODUCT_NOT_FOR_SALE", signed: Time.day(30),
                transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30)),
                renewal: renewal(autoRenew: false, intent: 4, signed: Time.day(30)), status: 2)
            let view = history.view(at: Time.day(31))
            #expect(view.subscriptions.first?.status == .expired)
            #expect(!view.isActive("pro"))
        },
        Case("DID_CHANGE_RENEWAL_PREF", "UPGRADE", "didChangeRenewalPrefUpgrade", .subscribed()) { history in
            history.notify(
                "DID_CHANGE_RENEWAL_PREF", "UPGRADE", signed: Time.day(10),
                transaction: transaction(NotificationTypeTests.renewed, original: Customer.otid, product: Product.premium, purchase: Time.day(10), expires: Time.day(40)),
                renewal: renewal(product: Product.premium, signed: Time.day(10)), status: 1)
            // The old transaction, as the App Store Server API returns it afterwards.
            history.add(transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30), signed: Time.day(10), upgraded: true))

            let upgraded = history.view(at: Time.day(11))
            #expect(upgraded.subscriptions.count == 1)
            #expect(upgraded.subscriptions[0].productId == Product.premium)
            #expect(upgraded.subscriptions[0].currentTransactionId == NotificationTypeTests.renewed)
            #expect(upgraded.subscriptions[0].expiresDate == Time.day(40))
            #expect(upgraded.entitlements == [
                EntitlementView(name: "premium", active: true, expiresDate: Time.day(40), productId: Product.premium),
                EntitlementView(name: "pro", active: true, expiresDate: Time.day(40), productId: Product.premium),
            ])

            // Before the upgrade the old transaction was current, even though it is marked upgraded now.
            let before = history.view(at: Time.day(5))
            #expect(before.subscriptions.first?.productId == Product.monthly)
            #expect(before.entitlements == [EntitlementView(name: "pro", active: true, expiresDate: Time.day(30), productId: Product.monthly)])
        },
        Case("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", "didChangeRenewalPrefDowngrade", .subscribed(product: Product.premium)) { history in
            history.notify(
                "DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", signed: Time.day(10),
                renewal: renewal(product: Product.premium, autoRenewProduct: Product.basic, signed: Time.day(10)), status: 1)
            let view = history.view(at: Time.day(11))
            #expect(view.subscriptions.first?.productId == Product.premium)
            #expect(view.subscriptions.first?.autoRenewProductId == Product.basic)
            #expect(view.isActive("premium"))
            #expect(view.entitlement("premium")?.expiresDate == Time.day(30))
        },
        Case("DID_CHANGE_RENEWAL_PREF", nil, "didChangeRenewalPrefCancelsPendingChange", .subscribed(product: Product.premium)) { history in
            history.notify(
                "DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", signed: Time.day(10),
                renewal: renewal(product: Product.premium, autoRenewProduct: Product.basic, signed: Time.day(10)), status: 1)
            history.notify(
                "DID_CHANGE_RENEWAL_PREF", signed: Time.day(12),
                renewal: renewal(product: Product.premium, autoRenewProduct: Product.premium, signed: Time.day(12)), status: 1)
            #expect(history.view(at: Time.day(11)).subscriptions.first?.autoRenewProductId == Product.basic)
            let view = history.view(at: Time.day(13))
            #expect(view.subscriptions.first?.autoRenewProductId == Product.premium)
            #expect(view.isActive("premium") && view.isActive("pro"))
        },
        Case("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", "didChangeRenewalStatusAutoRenewDisabled", .subscribed()) { history in
            history.notify(
                "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", signed: Time.day(5),
                renewal: renewal(autoRenew: false, signed: Time.day(5)), status: 1)
            #expect(history.view(at: Time.day(4)).subscriptions.first?.autoRenewStatus == true)
            let view = history.view(at: Time.day(6))
            #expect(view.subscriptions.first?.autoRenewStatus == false)
            #expect(view.subscriptions.first?.status == .active)
            #expect(view.isActive("pro"))
        },
        Case("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", "didChangeRenewalStatusAutoRenewEnabled", .subscribed()) { history in
            history.notify(
                "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", signed: Time.day(5),
                renewal: renewal(autoRenew: false, signed: Time.day(5)), status: 1)
            history.notify(
                "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", signed: Time.day(7),
                renewal: renewal(autoRenew: true, signed: Time.day(7)), status: 1)
            #expect(history.view(at: Time.day(6)).subscriptions.first?.autoRenewStatus == false)
            let view = history.view(at: Time.day(8))
            #expect(view.subscriptions.first?.autoRenewStatus == true)
            #expect(view.isActive("pro"))
        },
        Case("OFFER_REDEEMED", "INITIAL_BUY", "offerRedeemedInitialBuy", .empty) { history in
            history.notify(
                "OFFER_REDEEMED", "INITIAL_BUY", signed: Time.t0,
                transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(7), offerType: 3),
                renewal: renewal(signed: Time.t0), status: 1)
            let view = history.view(at: Time.day(1))
            #expect(view.subscriptions.first?.status == .active)
            #expect(view.entitlement("pro")?.expiresDate == Time.day(7))
        },
        Case("OFFER_REDEEMED", "RESUBSCRIBE", "offerRedeemedResubscribe", .subscribed()) { history in
            history.notify(
                "EXPIRED", "VOLUNTARY", signed: Time.day(30),
                renewal: renewal(autoRenew: false, intent: 1, signed: Time.day(30)), status: 2)
            history.notify(
                "OFFER_REDEEMED", "RESUBSCRIBE", signed: Time.day(50),
                transaction: transaction(NotificationTypeTests.renewed, original: Customer.otid, purchase: Time.day(50), expires: Time.day(80), offerType: 3),
                renewal: renewal(signed: Time.day(50)), status: 1)
            #expect(history.view(at: Time.day(40)).subscriptions.first?.status == .expired)
            let view = history.view(at: Time.day(51))
            #expect(view.subscriptions.first?.status == .active)
            #expect(view.entitlement("pro")?.expiresDate == Time.day(80))
        },
        Case("OFFER_REDEEMED", "UPGRADE", "offerRedeemedUpgrade", .subscribed()) { history in
            history.notify(
                "OFFER_REDEEMED", "UPGRADE", signed: Time.day(10),
                transaction: transaction(NotificationTypeTests.renewed, original: Customer.otid, product: Product.premium, purchase: Time.day(10), expires: Time.day(40), offerType: 3),
                renewal: renewal(product: Product.premium, signed: Time.day(10)), status: 1)
            history.add(transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30), signed: Time.day(10), upgraded: true))
            let view = history.view(at: Time.day(11))
            #expect(view.subscriptions.first?.productId == Product.premium)
            #expect(view.isActive("premium"))
        },
        Case("OFFER_REDEEMED", "DOWNGRADE", "offerRedeemedDowngrade", .subscribed(product: Product.premium)) { history in
            history.notify(
                "OFFER_REDEEMED", "DOWNGRADE", signed: Time.day(10),
                renewal: renewal(product: Product.premium, autoRenewProduct: Product.basic, signed: Time.day(10)), status: 1)
            let view = history.view(at: Time.day(11))
            #expect(view.subscriptions.first?.productId == Product.premium)
            #expect(view.subscriptions.first?.autoRenewProductId == Product.basic)
            #expect(view.isActive("premium"))
        },
        Case("OFFER_REDEEMED", nil, "offerRedeemedForActiveSubscription", .subscribed()) { history in
            history.notify(
                "OFFER_REDEEMED", signed: Time.day(10),
                transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30)),
                renewal: renewal(signed: Time.day(10)), status: 1)
            let view = history.view(at: Time.day(11))
            #expect(view.subscriptions.first?.status == .active)
            #expect(view.entitlement("pro")?.expiresDate == Time.day(30))
        },
        Case("PRICE_INCREASE", "PENDING", "priceIncreasePending", .subscribed()) { history in
            history.notify(
                "PRICE_INCREASE", "PENDING", signed: Time.day(20),
                renewal: renewal(priceIncreaseStatus: 0, signed: Time.day(20)), status: 1)
            let view = history.view(at: Time.day(21))
            #expect(view.subscriptions.first?.status == .active)
            #expect(view.subscriptions.first?.autoRenewStatus == true)
            #expect(view.isActive("pro"))
        },
        Case("PRICE_INCREASE", "ACCEPTED", "priceIncreaseAccepted", .subscribed()) { history in
            history.notify(
                "PRICE_INCREASE", "ACCEPTED", signed: Time.day(20),
                renewal: renewal(priceIncreaseStatus: 1, signed: Time.day(20)), status: 1)
            let view = history.view(at: Time.day(21))
            #expect(view.subscriptions.first?.status == .active)
            #expect(view.isActive("pro"))
        },
        Case("REFUND", nil, "refundFull", .subscribed()) { history in
            history.notify(
                "REFUND", signed: Time.day(5),
                transaction: transaction(
                    Customer.otid, purchase: Time.t0, expires: Time.day(30), signed: Time.day(5), revoked: Time.day(5),
                    revocationType: "REFUND_FULL"), status: 5)
            #expect(history.view(at: Time.day(4)).subscriptions.first?.status == .active)
            let view = history.view(at: Time.day(6))
            #expect(view.subscriptions.first?.status == .revoked)
            #expect(view.subscriptions.first?.revocationType == "REFUND_FULL")
            #expect(view.entitlement("pro") == EntitlementView(name: "pro", active: false, expiresDate: nil))
        },
        Case("REFUND", nil, "refundProratedSubscriptionCountsAsFull", .subscribed()) { history in
            history.notify(
                "REFUND", signed: Time.day(15),
                transaction: transaction(
                    Customer.otid, purchase: Time.t0, expires: Time.day(30), signed: Time.day(15), revoked: Time.day(15),
                    revocationType: "REFUND_PRORATED", revocationPercentage: 50_000), status: 5)
            let view = history.view(at: Time.day(16))
            #expect(view.subscriptions.first?.status == .revoked)
            #expect(view.subscriptions.first?.revocationType == "REFUND_PRORATED")
            #expect(!view.isActive("pro"))
        },
        Case("REFUND", nil, "refundConsumableProrated", .empty) { history in
            let bought = transaction("3000000000000001", product: Product.coins, purchase: Time.t0, quantity: 3)
            history.notify("ONE_TIME_CHARGE", signed: Time.t0, transaction: bought)
            history.notify(
                "REFUND", signed: Time.day(2),
                transaction: transaction(
                    "3000000000000001", product: Product.coins, purchase: Time.t0, signed: Time.day(2), quantity: 3,
                    revoked: Time.day(2), revocationType: "REFUND_PRORATED", revocationPercentage: 33_333))
            #expect(history.view(at: Time.day(1)).balances == [CurrencyBalance(currency: "coins", amount: 300)])
            // 300 x 33.333% = 99.999, rounded half up to 100.
            let view = history.view(at: Time.day(3))
            #expect(view.balances == [CurrencyBalance(currency: "coins", amount: 200)])
            #expect(view.purchases.first?.revoked == true)
            #expect(view.purchases.first?.revocationType == "REFUND_PRORATED")
            #expect(view.purchases.first?.revocationPercentage == 33_333)
            #expect(view.entitlements.isEmpty)
        },
        Case("REFUND_DECLINED", nil, "refundDeclined", .empty) { history in
            let bought = transaction("3000000000000001", product: Product.coins, purchase: Time.t0, quantity: 3)
            history.notify("ONE_TIME_CHARGE", signed: Time.t0, transaction: bought)
            history.notify("CONSUMPTION_REQUEST", signed: Time.day(1), transaction: bought)
            history.notify("REFUND_DECLINED", signed: Time.day(2), transaction: bought)
            let view = history.view(at: Time.day(3))
            #expect(view.balances == [CurrencyBalance(currency: "coins", amount: 300)])
            #expect(view.purchases.first?.revoked == false)
            #expect(history.state().lastNotification?.type == .refundDeclined)
        },
        Case("REFUND_REVERSED", nil, "refundReversed", .subscribed()) { history in
            history.notify(
                "REFUND", signed: Time.day(5),
                transaction: transaction(
                    Customer.otid, purchase: Time.t0, expires: Time.day(30), signed: Time.day(5), revoked: Time.day(5),
                    revocationType: "REFUND_FULL"), status: 5)
            history.notify(
                "REFUND_REVERSED", signed: Time.day(8),
                transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30), signed: Time.day(8)), status: 1)
            // The reversal is known now, so the refund never counts, even looking back.
            #expect(history.view(at: Time.day(6)).subscriptions.first?.status == .active)
            let view = history.view(at: Time.day(9))
            #expect(view.subscriptions.first?.status == .active)
            #expect(view.subscriptions.first?.revocationType == nil)
            #expect(view.entitlement("pro") == EntitlementView(name: "pro", active: true, expiresDate: Time.day(30), productId: Product.monthly))
        },
        Case("REVOKE", nil, "revokeFamilySharing", .subscribed(ownership: "FAMILY_SHARED")) { history in
            history.notify(
                "REVOKE", signed: Time.day(10),
                transaction: transaction(
                    Customer.otid, purchase: Time.t0, expires: Time.day(30), signed: Time.day(10), revoked: Time.day(10),
                    revocationType: "FAMILY_REVOKE", ownership: "FAMILY_SHARED"), status: 5)
            let before = history.view(at: Time.day(9))
            #expect(before.subscriptions.first?.status == .active)
            #expect(before.subscriptions.first?.ownership == "FAMILY_SHARED")
            let view = history.view(at: Time.day(11))
            #expect(view.subscriptions.first?.status == .revoked)
            #expect(view.subscriptions.first?.revocationType == "FAMILY_REVOKE")
            #expect(!view.isActive("pro"))
        },
        Case("RENEWAL_EXTENDED", nil, "renewalExtended", .subscribed()) { history in
            history.notify(
                "RENEWAL_EXTENDED", signed: Time.day(29),
                transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(37), signed: Time.day(29)),
                renewal: renewal(signed: Time.day(29)), status: 1)
            let view = history.view(at: Time.day(33))
            #expect(view.subscriptions.first?.status == .active)
            #expect(view.subscriptions.first?.expiresDate == Time.day(37))
            #expect(view.entitlement("pro")?.expiresDate == Time.day(37))
        },
        Case("RENEWAL_EXTENSION", "FAILURE", "renewalExtensionFailure", .subscribed()) { history in
            history.notify(
                "RENEWAL_EXTENSION", "FAILURE", signed: Time.day(20),
                transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30)),
                renewal: renewal(signed: Time.day(20)), status: 1)
            // Not extended: it still expires at day 30.
            #expect(history.view(at: Time.day(29)).entitlement("pro")?.expiresDate == Time.day(30))
            #expect(history.view(at: Time.day(31)).subscriptions.first?.status == .expired)
        },
        Case("CONSUMPTION_REQUEST", nil, "consumptionRequest", .empty) { history in
            let bought = transaction("3000000000000001", product: Product.coins, purchase: Time.t0)
            history.add(bought)
            history.notify("CONSUMPTION_REQUEST", signed: Time.day(1), transaction: bought)
            let view = history.view(at: Time.day(2))
            #expect(view.balances == [CurrencyBalance(currency: "coins", amount: 100)])
            #expect(history.state().lastNotification?.type == .consumptionRequest)
        },
        Case("ONE_TIME_CHARGE", nil, "oneTimeCharge", .empty) { history in
            history.notify(
                "ONE_TIME_CHARGE", signed: Time.t0,
                transaction: transaction("3000000000000001", product: Product.lifetime, purchase: Time.t0))
            history.notify(
                "ONE_TIME_CHARGE", signed: Time.hour(1),
                transaction: transaction("3000000000000002", product: Product.gems, purchase: Time.hour(1), quantity: 2))
            let view = history.view(at: Time.day(1))
            #expect(view.entitlements == [EntitlementView(name: "pro", active: true, expiresDate: nil, productId: Product.lifetime)])
            #expect(view.purchases.map(\.type) == ["Non-Consumable", "Consumable"])
            // A consumable missing from the rules: 1 unit of a currency named after the product.
            #expect(view.balances == [CurrencyBalance(currency: Product.gems, amount: 2)])
        },
        Case("METADATA_UPDATE", nil, "metadataUpdate", .subscribed()) { history in
            history.notify(
                "METADATA_UPDATE", signed: Time.day(3),
                transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30), signed: Time.day(3)),
                renewal: renewal(signed: Time.day(3)), status: 1)
            let view = history.view(at: Time.day(4))
            #expect(view.subscriptions.first?.status == .active)
            #expect(view.entitlement("pro")?.expiresDate == Time.day(30))
        },
        Case("MIGRATION", nil, "migration", .empty) { history in
            history.notify(
                "MIGRATION", signed: Time.day(3),
                transaction: transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30), signed: Time.day(3)),
                renewal: renewal(signed: Time.day(3)), status: 1)
            let view = history.view(at: Time.day(4))
            #expect(view.subscriptions.first?.status == .active)
            #expect(view.isActive("pro"))
        },
        Case("PRICE_CHANGE", nil, "priceChange", .subscribed()) { history in
            history.notify(
                "PRICE_CHANGE", signed: Time.day(3), renewal: renewal(signed: Time.day(3)), status: 1)
            let view = history.view(at: Time.day(4))
            #expect(view.subscriptions.first?.status == .active)
            #expect(view.isActive("pro"))
        },
    ]
}
