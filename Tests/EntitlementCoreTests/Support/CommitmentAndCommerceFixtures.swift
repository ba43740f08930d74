import EntitlementCore

/// Builders for Apple's 2025–2026 additions: months of a 12-month commitment,
/// Advanced Commerce items, migrated subscriptions.
enum Commitment {
    static let otid = "2000000000000701"
    static let months: Int64 = 12
    static let price: Int64 = 119_880

    /// The start of month `n` (1-based) of a commitment started at `t0`.
    static func start(_ n: Int64, from start: Int64 = Time.t0) -> Int64 { start + (n - 1) * 30 * Time.day }

    /// `commitmentInfo` of month `n`.
    static func info(_ n: Int64, expires: Int64 = Time.day(360), total: Int64 = months) -> [(String, JSONValue?)] {
        [
            ("billingPlanType", json("MONTHLY")),
            (
                "commitmentInfo",
                object([
                    ("billingPeriodNumber", json(n)), ("totalBillingPeriods", json(total)),
                    ("commitmentExpiresDate", json(expires)), ("commitmentPrice", json(price)),
                ])
            ),
        ]
    }

    /// The transaction of month `n` of the commitment `original`.
    static func month(
        _ n: Int64, original: String = otid, product: String = Product.monthly, purchase: Int64? = nil, expires: Int64? = nil,
        signed: Int64? = nil, revoked: Int64? = nil, upgraded: Bool = false, commitmentExpires: Int64 = Time.day(360),
        number: Int64? = nil, app: String? = Customer.app
    ) -> SignedTransaction {
        let purchase = purchase ?? start(n)
        let id = n == 1 && number == nil ? original : original + "-\(n)"
        return transaction(
            id, original: original, product: product, purchase: purchase, expires: expires ?? purchase + 30 * Time.day,
            signed: signed ?? purchase, revoked: revoked, revocationType: revoked != nil ? "REFUND_FULL" : nil, upgraded: upgraded,
            app: app, price: 9990, extra: info(number ?? n, expires: commitmentExpires))
    }

    /// A renewal info of the commitment, its own auto-renew `commitmentAutoRenew`.
    static func renewalInfo(
        original: String = otid, product: String = Product.monthly, signed: Int64, autoRenew: Bool = true,
        commitmentAutoRenew: Bool = true, retry: Bool? = nil, grace: Int64? = nil, intent: Int64? = nil
    ) -> SignedRenewalInfo {
        renewal(
            original: original, product: product, autoRenew: autoRenew, retry: retry, grace: grace, intent: intent, signed: signed,
            extra: [
                ("renewalBillingPlanType", json("MONTHLY")),
                ("renewalPrice", json(Int64(9990))), ("currency", json("USD")),
                (
                    "commitmentInfo",
                    object([
                        ("commitmentAutoRenewProductId", json(product)),
                        ("commitmentAutoRenewStatus", json(Int64(commitmentAutoRenew ? 1 : 0))),
                        ("commitmentRenewalBillingPlanType", json("MONTHLY")),
                        ("commitmentRenewalDate", json(Time.day(360))),
                        ("commitmentRenewalPrice", json(price)),
                    ])
                ),
            ])
    }
}

enum Commerce {
    static let product = "com.example.commerce.generic"
    static let otid = "2000000000000801"

    /// The rules of the tests, with three SKUs mapped.
    static var rules: Rules {
        var rules = testRules
        rules.skus = [
            "SKU-ALPHA": ProductRule(entitlements: ["alpha"]), "SKU-BETA": ProductRule(entitlements: ["beta"]),
            "SKU-GAMMA": ProductRule(entitlements: ["gamma", "pro"]),
        ]
        return rules
    }

    /// One item of `advancedCommerceInfo.items`.
    static func item(_ sku: String?, price: Int64 = 3000, revoked: Int64? = nil, refundType: String? = nil) -> JSONValue {
        var refunds: JSONValue? = nil
        if let revoked {
            refunds = .array([
                object([
                    ("refundAmount", json(price)), ("refundDate", json(revoked)), ("refundReason", json("FULFILLMENT_ISSUE")),
                    ("refundType", json(refundType ?? "FULL")),
                ])
            ])
        }
        return object([
            ("SKU", json(sku)), ("description", json("An item")), ("displayName", json("Item")), ("price", json(price)),
            ("refunds", refunds), ("revocationDate", json(revoked)),
        ])
    }

    /// A transaction of the Advanced Commerce subscription carrying `items`.
    static func transaction(
        _ id: String, purchase: Int64, signed: Int64? = nil, items: [JSONValue], app: String? = Customer.app,
        previous: String? = nil, original: String = otid
    ) -> SignedTransaction {
        EntitlementCoreTests.transaction(
            id, original: original, product: product, purchase: purchase, expires: purchase + 30 * Time.day, signed: signed,
            app: app, price: 9000, type: "Auto-Renewable Subscription",
            extra: [
                (
                    "advancedCommerceInfo",
                    object([
                        ("items", .array(items)), ("period", json("P1M")), ("taxExclusivePrice", json(Int64(8000))),
                        ("estimatedTax", json(Int64(1000))), ("requestReferenceId", json("ref-\(id)")),
                    ])
                ),
                ("previousOriginalTransactionId", json(previous)),
            ])
    }
}
