import EntitlementCore
import Testing
import TestSupport

/// Apple's 2025–2026 additions, one rule at a time: decoding with Apple's field
/// names, what the codecs keep, values the engine does not know, the rules, the
/// view's fields, and a rescinded consent.
@Suite("Commitments, Advanced Commerce, rescinded consent")
struct CommitmentCommerceConsentTests {
    /// A transaction with every field Apple's server libraries' sample carries.
    static let appleTransaction: JSONValue = object([
        ("transactionId", json("23456")), ("originalTransactionId", json("12345")), ("bundleId", json("com.example")),
        ("productId", json("com.example.product")), ("purchaseDate", json(Int64(1_698_148_900_000))),
        ("expiresDate", json(Int64(1_698_149_000_000))), ("type", json("Auto-Renewable Subscription")),
        ("signedDate", json(Int64(1_698_148_900_000))), ("environment", json("LocalTesting")),
        (
            "advancedCommerceInfo",
            object([
                ("descriptors", object([("description", json("Premium Plan")), ("displayName", json("Premium"))])),
                ("estimatedTax", json(Int64(1500))),
                (
                    "items",
                    .array([
                        object([
                            ("SKU", json("com.example.sku.premium")), ("description", json("Premium feature")),
                            ("displayName", json("Premium Feature")), ("price", json(Int64(9990))),
                            (
                                "refunds",
                                .array([
                                    object([
                                        ("refundAmount", json(Int64(5000))), ("refundDate", json(Int64(1_698_149_100_000))),
                                        ("refundReason", json("FULFILLMENT_ISSUE")), ("refundType", json("PRORATED")),
                                    ])
                                ])
                            ),
                            ("revocationDate", json(Int64(1_698_149_200_000))),
                        ])
                    ])
                ),
                ("period", json("P1M")), ("requestReferenceId", json("ref-12345")), ("taxCode", json("TAX_CODE_1")),
                ("taxExclusivePrice", json(Int64(8490))), ("taxRate", json("0.15")),
            ])
        ),
        ("billingPlanType", json("MONTHLY")),
        (
            "commitmentInfo",
            object([
                ("billingPeriodNumber", json(Int64(3))), ("commitmentExpiresDate", json(Int64(1_698_150_000_000))),
                ("commitmentPrice", json(Int64(119_880))), ("totalBillingPeriods", json(Int64(12))),
            ])
        ),
    ])

    static let appleRenewalInfo: JSONValue = object([
        ("expirationIntent", json(Int64(1))), ("originalTransactionId", json("12345")),
        ("autoRenewProductId", json("com.example.product.2")), ("productId", json("com.example.product")),
        ("autoRenewStatus", json(Int64(1))), ("isInBillingRetryPeriod", json(true)), ("priceIncreaseStatus", json(Int64(0))),
        ("signedDate", json(Int64(1_698_148_800_000))), ("environment", json("LocalTesting")),
        ("renewalPrice", json(Int64(9990))), ("currency", json("USD")),
        ("eligibleWinBackOfferIds", .array(["eligible1", "eligible2"])),
        (
            "advancedCommerceInfo",
            object([
                ("consistencyToken", json("token-abc-123")),
                (
                    "items",
                    .array([
                        object([
                            ("SKU", json("com.example.sku.premium")), ("price", json(Int64(9990))),
                            (
                                "priceIncreaseInfo",
                                object([
                                    ("dependentSKUs", .array(["com.example.sku.1", "com.example.sku.2"])),
                                    ("price", json(Int64(12990))), ("status", json("PENDING")),
                                ])
                            ),
                        ])
                    ])
                ),
                ("period", json("P1M")), ("requestReferenceId", json("ref-12345")),
            ])
        ),
        (
            "commitmentInfo",
            object([
                ("commitmentAutoRenewProductId", json("com.example.product.commitment")),
                ("commitmentAutoRenewStatus", json(Int64(1))), ("commitmentRenewalBillingPlanType", json("MONTHLY")),
                ("commitmentRenewalDate", json(Int64(1_698_149_500_000))), ("commitmentRenewalPrice", json(Int64(9990))),
            ])
        ),
        ("renewalBillingPlanType", json("MONTHLY")),
    ])

    @Test("Apple's field names decode: commitmentInfo, billingPlanType, advancedCommerceInfo with SKU, refunds, priceIncreaseInfo")
    func applesFieldNamesDecode() throws {
        let t = try TransactionPayload(json: Self.appleTransaction)
        #expect(t.billingPlanType == "MONTHLY")
        #expect(t.commitmentInfo == TransactionCommitmentInfo(
            billingPeriodNumber: 3, totalBillingPeriods: 12, commitmentExpiresDate: 1_698_150_000_000, commitmentPrice: 119_880))
        let item = try #require(t.advancedCommerceInfo?.items.first)
        #expect(item.sku == "com.example.sku.premium")
        #expect(item.revocationDate == 1_698_149_200_000)
        #expect(item.refunds == [AdvancedCommerceRefund(refundType: "PRORATED", refundAmount: 5000, refundDate: 1_698_149_100_000, refundReason: "FULFILLMENT_ISSUE")])
        #expect(t.advancedCommerceInfo?.period == "P1M")
        #expect(t.advancedCommerceInfo?.taxExclusivePrice == 8490)
        #expect(t.advancedCommerceInfo?.estimatedTax == 1500)
        #expect(t.advancedCommerceInfo?.requestReferenceId == "ref-12345")

        let r = try RenewalInfoPayload(json: Self.appleRenewalInfo)
        #expect(r.renewalBillingPlanType == "MONTHLY")
        #expect(r.commitmentInfo?.commitmentAutoRenewStatus == 1)
        #expect(r.commitmentInfo?.commitmentAutoRenewProductId == "com.example.product.commitment")
        #expect(r.commitmentInfo?.commitmentRenewalDate == 1_698_149_500_000)
        #expect(r.advancedCommerceInfo?.items.first?.priceIncreaseStatus == "PENDING")
        #expect(r.advancedCommerceInfo?.items.first?.dependentSKUs == ["com.example.sku.1", "com.example.sku.2"])
        #expect(r.advancedCommerceInfo?.consistencyToken == "token-abc-123")
    }

    @Test("the facts of the additions round-trip through the event and state codecs; earlier formats stay as they were")
    func codecsKeepTheAdditions() throws {
        let history = History()
        let t = SignedTransaction(jws: fakeJWS(Self.appleTransaction), payload: try TransactionPayload(json: Self.appleTransaction))
        let r = SignedRenewalInfo(jws: fakeJWS(Self.appleRenewalInfo), payload: try RenewalInfoPayload(json: Self.appleRenewalInfo))
        history.notify("DID_RENEW", signed: 1_698_148_900_000, transaction: t, renewal: r)
        history.add(t)
        history.add(r)
        history.add(.appTransaction(appTransaction(created: Time.t0)))
        history.notify("RESCIND_CONSENT", signed: Time.day(2), appTransaction: appTransaction(created: Time.day(2)), data: false)
        for event in history.events {
            let bytes = EventCodec.encode(event)
            #expect(bytes.first == EventCodec.formatVersionWithExtensions)
            let decoded = try EventCodec.decode(bytes, seq: event.seq)
            #expect(decoded == event)
            #expect(EventCodec.encode(decoded) == bytes)
            // As an earlier build stored it: without the additions, and read back so.
            let earlier = EventCodec.encode(event, formatVersion: EventCodec.formatVersion)
            #expect(earlier.first != EventCodec.formatVersionWithExtensions)
            let old = try EventCodec.decode(earlier, seq: event.seq)
            #expect(EventCodec.encode(old) == earlier)
            if case .transaction(let signed) = old.body { #expect(signed.facts.extensions == nil) }
        }
        // Format 2 bytes carrying an extensions flag bit are refused.
        var forged = EventCodec.encode(history.events[1])
        forged[0] = EventCodec.formatVersion
        #expect(throws: CodecError.self) { try EventCodec.decode(forged, seq: 2) }

        let states = history.states()
        #expect(!states.isEmpty)
        for state in states.values {
            let bytes = StateCodec.encode(state)
            #expect(bytes.first == StateCodec.formatVersionWithExtensions)
            #expect(try StateCodec.decode(bytes) == state)
        }
        let consent = try #require(states[Customer.app])
        #expect(consent.consentRescindedAt == Time.day(2))
        #expect(consent.appTransaction?.facts.originalPlatform == "iOS")
        // A state without the additions keeps format 3 or earlier.
        let plain = History()
        plain.add(transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30)))
        #expect(StateCodec.encode(plain.state()).first == StateCodec.formatVersion)
        #expect(EventCodec.encode(plain.events[0]).first == EventCodec.formatVersion)
    }

    @Test("a billingPlanType or refundType the engine does not know is kept and shown")
    func unknownValuesAreKept() throws {
        let history = History()
        let purchase = Time.t0
        history.add(
            transaction(
                Customer.otid, purchase: purchase, expires: Time.day(30),
                extra: [("billingPlanType", json("QUARTERLY_SOMEDAY")), ("commitmentInfo", object([("futureField", json("x"))]))]))
        history.add(
            Commerce.transaction(
                "2000000000000811", purchase: purchase, items: [Commerce.item("SKU-ALPHA", revoked: Time.day(3), refundType: "GOODWILL_2027")]))
        let view = history.view(at: Time.day(1), rules: Commerce.rules)
        #expect(view.subscription(Customer.otid)?.billingPlanType == "QUARTERLY_SOMEDAY")
        #expect(view.subscription(Customer.otid)?.commitment != nil)
        let state = history.state(rules: Commerce.rules)
        let refund = LifecycleEvents.all(state: state, events: history.events, rules: Commerce.rules).first { $0.extra["sku"] != nil }
        #expect(refund?.extra["revocationType"] == .string("GOODWILL_2027"))
        #expect(refund?.extra["refundType"] == .string("GOODWILL_2027"))
        let json = JSONWriter.string(view.json())
        #expect(json.contains(#""billingPlanType":"QUARTERLY_SOMEDAY""#))
    }

    @Test("an Advanced Commerce subscription's events name what its items' SKUs grant, beside its product's")
    func commerceEventsNameTheirItemsEntitlements() throws {
        let history = History()
        history.add(
            Commerce.transaction(
                "2000000000000813", purchase: Time.t0,
                items: [Commerce.item("SKU-GAMMA"), Commerce.item("SKU-ALPHA"), Commerce.item(nil), Commerce.item("SKU-UNKNOWN")]))
        // The product is not in the rules: the SKUs alone grant.
        let rules = Commerce.rules
        #expect(rules.products[Commerce.product] == nil)
        let state = history.state(rules: rules)
        let events = LifecycleEvents.all(state: state, events: history.events, rules: rules)
        let started = events.first { $0.type == .subscriptionStarted }
        #expect(started?.itemSKUs == ["SKU-GAMMA", "SKU-ALPHA", "SKU-UNKNOWN"])
        #expect(started?.entitlements(under: rules) == ["gamma", "pro", "alpha"])
        // What the view says the customer has, the event names.
        let active = Set(history.view(at: Time.t0 + 1, rules: rules).entitlements.filter(\.active).map(\.name))
        #expect(Set(started?.entitlements(under: rules) ?? []) == active)

        // With the product mapped too, its entitlements come first and none twice.
        var mapped = rules
        mapped.products[Commerce.product] = ProductRule(entitlements: ["pro", "base"])
        #expect(started?.entitlements(under: mapped) == ["pro", "base", "gamma", "alpha"])
        // A transaction without items names its product's alone.
        #expect(LifecycleEvent(id: "PURCHASE:1", type: .purchase, customerKey: "k", productId: Commerce.product, effectiveAt: 0)
            .entitlements(under: mapped) == ["pro", "base"])
    }

    @Test("an Advanced Commerce item revoked with no refund listed: its REFUND's refundedAmount is the item's price")
    func itemRevokedWithoutRefundsRefundsItsPrice() throws {
        let history = History()
        let item = object([("SKU", json("SKU-ALPHA")), ("price", json(4990)), ("revocationDate", json(Time.day(3)))])
        history.add(Commerce.transaction("2000000000000812", purchase: Time.t0, items: [item, Commerce.item("SKU-BETA", price: 5000)]))
        let state = history.state(rules: Commerce.rules)
        let refunds = LifecycleEvents.all(state: state, events: history.events, rules: Commerce.rules).filter { $0.type == .refund }
        #expect(refunds.count == 1)
        #expect(refunds.first?.extra["sku"] == .string("SKU-ALPHA"))
        #expect(refunds.first?.extra["refundedAmount"] == .int(4990))
        #expect(refunds.first?.extra["revocationType"] == .null)
        // What the refund took away: the item's SKU's entitlements, not its product's.
        #expect(refunds.first?.entitlements(under: Commerce.rules) == Commerce.rules.skus["SKU-ALPHA"]?.entitlements)
        #expect(refunds.first?.entitlements(under: Commerce.rules).isEmpty == false)
    }

    @Test("rules read skus and consentRescindedRevokesAccess; rules without them keep their canonical text")
    func rulesParsing() throws {
        let text = #"{"version":"1","products":{},"skus":{"SKU-PRO":{"entitlements":["pro"]}},"consentRescindedRevokesAccess":true}"#
        let rules = try Rules(jsonText: text)
        #expect(rules.skus["SKU-PRO"]?.entitlements == ["pro"])
        #expect(rules.consentRescindedRevokesAccess)
        #expect(try Rules(json: rules.canonicalJSON) == rules)
        let plain = try Rules(jsonText: #"{"version":"1"}"#)
        #expect(JSONWriter.string(plain.canonicalJSON) == #"{"version":"1","gracePeriodGrantsAccess":true,"billingRetryGrantsAccess":false,"products":{}}"#)
        #expect(throws: RulesError.self) { try Rules(jsonText: #"{"version":"1","skus":[]}"#) }
        #expect(throws: RulesError.self) { try Rules(jsonText: #"{"version":"1","skus":{"A":{"units":3}}}"#) }
        #expect(throws: RulesError.self) { try Rules(jsonText: #"{"version":"1","consentRescindedRevokesAccess":"yes"}"#) }
    }

    @Test("an Advanced Commerce item without a SKU grants nothing; the others grant")
    func itemWithoutSkuGrantsNothing() throws {
        let history = History()
        history.add(Commerce.transaction(Commerce.otid, purchase: Time.t0, items: [Commerce.item(nil), Commerce.item("SKU-BETA")]))
        let view = history.view(at: Time.day(1), rules: Commerce.rules)
        #expect(view.activeEntitlements == ["beta"])
        #expect(view.subscriptions[0].advancedCommerceItems?.count == 2)
        // Its product is not in rules.products, yet it is not reported: it grants through its
        // SKUs; nor is it for its subscription's renewal info, which carries no items.
        history.add(renewal(original: Commerce.otid, product: Commerce.product, signed: Time.day(1)))
        var unknown = Set<String>()
        history.state(rules: Commerce.rules).insertProducts(into: &unknown)
        #expect(unknown.isEmpty)
        // A plain subscription's renewal info still names its product.
        history.add(renewal(original: "4000000000000001", product: "com.example.unlisted", signed: Time.day(1)))
        history.state(rules: Commerce.rules).insertProducts(into: &unknown)
        #expect(unknown == ["com.example.unlisted"])
    }

    @Test("history names the REFUND notification that revoked an Advanced Commerce item, not the one that sold it")
    func itemRevocationCause() throws {
        let history = History()
        let refunded = Time.day(10)
        let first = Commerce.otid
        history.notify(
            "SUBSCRIBED", "INITIAL_BUY", signed: Time.t0,
            transaction: Commerce.transaction(first, purchase: Time.t0, items: [Commerce.item("SKU-ALPHA"), Commerce.item("SKU-BETA")]))
        history.notify(
            "REFUND", signed: refunded,
            transaction: Commerce.transaction(
                first, purchase: Time.t0, signed: refunded, items: [Commerce.item("SKU-ALPHA"), Commerce.item("SKU-BETA", revoked: refunded)]))
        let rules = Commerce.rules
        let lines = CustomerHistory.timeline(state: history.state(rules: rules), events: history.events, rules: rules, until: Time.day(20))
        let lost = try #require(lines.first { $0.at == refunded })
        #expect(lost.cause?.field == "advancedCommerceInfo.items.revocationDate")
        #expect(lost.cause?.notificationType == "REFUND")
        #expect(lost.cause?.subtype == nil)
    }

    @Test("a rescinded consent shows in the view; with consentRescindedRevokesAccess the entitlements end then")
    func rescindedConsent() throws {
        let history = History()
        history.add(transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30)))
        history.add(transaction("3000000000000001", product: Product.lifetime, purchase: Time.t0))
        let rescinded = Time.day(10)
        history.notify("RESCIND_CONSENT", signed: rescinded, appTransaction: appTransaction(created: rescinded), data: false)
        history.notify("RESCIND_CONSENT", signed: rescinded + Time.day, appTransaction: appTransaction(created: rescinded + Time.day), data: false)
        #expect(history.view(at: rescinded - 1).consentRescindedAt == nil)
        let kept = history.view(at: rescinded + 1)
        #expect(kept.consentRescindedAt == rescinded)
        #expect(kept.isActive("pro"), "without the rule, access stays")
        var rules = testRules
        rules.consentRescindedRevokesAccess = true
        let before = history.view(at: rescinded - 1, rules: rules)
        #expect(before.isActive("pro"))
        // Before it, the rescission has not happened: the entitlement's expiry is its
        // source's (the lifetime purchase: none), as for a revocation still to come.
        #expect(before.entitlement("pro")?.expiresDate == nil)
        #expect(before.consentRescindedAt == nil)
        let after = history.view(at: rescinded + 1, rules: rules)
        #expect(!after.isActive("pro"))
        #expect(after.entitlement("pro") != nil)
        let json = JSONWriter.string(after.json())
        #expect(json.hasSuffix(#""originalPlatform":"iOS","consentRescindedAt":\#(rescinded)}"#))
        let lifecycle = LifecycleEvents.all(state: history.state(rules: rules), events: history.events, rules: rules)
        #expect(lifecycle.filter { $0.type == .consentRescinded }.count == 2)
        // History shows the end at the rescinded consent, caused by it.
        let lines = CustomerHistory.timeline(state: history.state(rules: rules), events: history.events, rules: rules, until: Time.day(40))
        #expect(lines.contains { $0.at == rescinded && $0.cause?.kind == .notification })
    }

    @Test("the view's further fields: expirationIntent, priceIncreaseStatus, renewal price and currency, offerDiscountType, win-back offers, originalPlatform")
    func furtherViewFields() throws {
        let history = History()
        history.add(
            transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30), offerType: 1, offerDiscountType: "PAY_AS_YOU_GO"))
        history.add(
            renewal(
                autoRenew: false, intent: 3, priceIncreaseStatus: 0, signed: Time.day(2),
                extra: [
                    ("renewalPrice", json(Int64(12990))), ("currency", json("EUR")),
                    ("eligibleWinBackOfferIds", .array(["winback-1"])),
                ]))
        history.add(.appTransaction(appTransaction(created: Time.t0)))
        let view = history.view(at: Time.day(3))
        let s = try #require(view.subscriptions.first)
        #expect(s.expirationIntent == 3)
        #expect(s.priceIncreaseStatus == 0)
        #expect(s.renewalPrice == 12990)
        #expect(s.renewalCurrency == "EUR")
        #expect(s.offerDiscountType == "PAY_AS_YOU_GO")
        #expect(s.eligibleWinBackOfferIds == ["winback-1"])
        #expect(s.billingPlanType == nil && s.commitment == nil)
        #expect(view.originalPlatform == "iOS")
        let json = JSONWriter.string(s.json())
        #expect(json.hasSuffix(
            #""billingPlanType":null,"commitment":null,"expirationIntent":3,"priceIncreaseStatus":0,"renewalPrice":12990,"renewalCurrency":"EUR","offerDiscountType":"PAY_AS_YOU_GO","eligibleWinBackOfferIds":["winback-1"]}"#))
    }

    @Test("the commitment object lists exactly the contract's keys")
    func commitmentJSON() throws {
        let history = History()
        history.add(Commitment.month(1))
        history.add(Commitment.renewalInfo(signed: Time.day(1), commitmentAutoRenew: false))
        let s = try #require(history.view(at: Time.day(2)).subscriptions.first)
        #expect(JSONWriter.string(try #require(s.commitment).json()) == #"{"billingPeriodNumber":1,"totalBillingPeriods":12,"commitmentExpiresDate":\#(Time.day(360)),"commitmentPrice":119880,"autoRenewStatus":false,"autoRenewProductId":"com.example.pro.monthly","renewalDate":\#(Time.day(360)),"renewalPrice":119880}"#)
        #expect(s.willRenew, "month 1 of 12: later months remain")
    }
}
