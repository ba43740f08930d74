extension CustomerView {
    /// The `query` output of specification section 6, keys in the specification's order:
    /// `appTransactionId`, `at`, `appAccountToken`, `entitlements`,
    /// `subscriptions`, `purchases`, `balances`, then the fields revision 2
    /// added: `originalPurchaseDate`, `originalApplicationVersion` (`environment`
    /// follows `at`);
    /// absent values are JSON `null`.
    public func json() -> JSONValue {
        .object(
            JSONObject([
                ("appTransactionId", .string(appTransactionId)),
                ("at", .int(at)),
                ("environment", .nullable(environment)),
                ("appAccountToken", .nullable(appAccountToken)),
                ("entitlements", EntitlementView.json(entitlements)),
                ("subscriptions", .array(subscriptions.map { $0.json() })),
                ("purchases", .array(purchases.map { $0.json() })),
                ("balances", .object(JSONObject(balances.map { ($0.currency, .int($0.amount)) }))),
                ("originalPurchaseDate", .nullable(originalPurchaseDate)),
                ("originalApplicationVersion", .nullable(originalApplicationVersion)),
                ("originalPlatform", .nullable(originalPlatform)),
                ("consentRescindedAt", .nullable(consentRescindedAt)),
            ]))
    }
}

extension EntitlementView {
    /// `{"active": ..., "expiresDate": ..., "productId": ..., "source": ...}`, and `"grantId"`
    /// when an operator's grant is the source.
    public func json() -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("active", .bool(active)), ("expiresDate", .nullable(expiresDate)), ("productId", .nullable(productId)),
            ("source", .nullable(source)),
        ]
        if let grantId { members.append(("grantId", .string(grantId))) }
        return .object(JSONObject(members))
    }

    /// `{"<name>": {"active": ..., "expiresDate": ...}, ...}` in the order given.
    public static func json(_ entitlements: [EntitlementView]) -> JSONValue {
        .object(JSONObject(entitlements.map { ($0.name, $0.json()) }))
    }
}

extension SubscriptionView {
    /// One element of `subscriptions` in the `query` output.
    public func json() -> JSONValue {
        .object(
            JSONObject([
                ("originalTransactionId", .string(originalTransactionId)),
                ("productId", .string(productId)),
                ("subscriptionGroupIdentifier", .nullable(subscriptionGroupIdentifier)),
                ("status", .string(status.rawValue)),
                ("expiresDate", .nullable(expiresDate)),
                ("gracePeriodExpiresDate", .nullable(gracePeriodExpiresDate)),
                ("autoRenewStatus", .nullable(autoRenewStatus)),
                ("autoRenewProductId", .nullable(autoRenewProductId)),
                ("ownership", .nullable(ownership)),
                ("revocationType", .nullable(revocationType)),
                ("transactionId", .string(currentTransactionId)),
                ("purchaseDate", .int(purchaseDate)),
                ("originalPurchaseDate", .nullable(originalPurchaseDate)),
                ("periodType", .string(periodType)),
                ("offerPeriod", .nullable(offerPeriod)),
                ("willRenew", .bool(willRenew)),
                ("revocationDate", .nullable(revocationDate)),
                ("price", .nullable(price)),
                ("currency", .nullable(currency)),
                ("unsubscribeDetectedAt", .nullable(unsubscribeDetectedAt)),
                ("billingIssueDetectedAt", .nullable(billingIssueDetectedAt)),
                ("billingPlanType", .nullable(billingPlanType)),
                ("commitment", commitment.map { $0.json() } ?? .null),
                ("expirationIntent", .nullable(expirationIntent)),
                ("priceIncreaseStatus", .nullable(priceIncreaseStatus)),
                ("renewalPrice", .nullable(renewalPrice)),
                ("renewalCurrency", .nullable(renewalCurrency)),
                ("offerDiscountType", .nullable(offerDiscountType)),
                ("eligibleWinBackOfferIds", eligibleWinBackOfferIds.map { .array($0.map(JSONValue.string)) } ?? .null),
            ]))
    }
}

extension CommitmentView {
    /// `subscriptions[].commitment` in the `query` output.
    public func json() -> JSONValue {
        .object(
            JSONObject([
                ("billingPeriodNumber", .nullable(billingPeriodNumber)),
                ("totalBillingPeriods", .nullable(totalBillingPeriods)),
                ("commitmentExpiresDate", .nullable(commitmentExpiresDate)),
                ("commitmentPrice", .nullable(commitmentPrice)),
                ("autoRenewStatus", .nullable(autoRenewStatus)),
                ("autoRenewProductId", .nullable(autoRenewProductId)),
                ("renewalDate", .nullable(renewalDate)),
                ("renewalPrice", .nullable(renewalPrice)),
            ]))
    }
}

extension PurchaseView {
    /// One element of `purchases` in the `query` output.
    public func json() -> JSONValue {
        .object(
            JSONObject([
                ("transactionId", .string(transactionId)),
                ("productId", .string(productId)),
                ("type", .string(type)),
                ("quantity", .int(quantity)),
                ("revoked", .bool(revoked)),
                ("revocationType", .nullable(revocationType)),
                ("revocationPercentage", .nullable(revocationPercentage)),
                ("expiresDate", .nullable(expiresDate)),
                ("purchaseDate", .int(purchaseDate)),
                ("revocationDate", .nullable(revocationDate)),
                ("price", .nullable(price)),
                ("currency", .nullable(currency)),
            ]))
    }
}

extension JSONValue {
    /// A string, or `null`.
    static func nullable(_ string: String?) -> JSONValue { string.map(JSONValue.string) ?? .null }
    /// An integer, or `null`.
    static func nullable(_ number: Int64?) -> JSONValue { number.map(JSONValue.int) ?? .null }
    /// A boolean, or `null`.
    static func nullable(_ flag: Bool?) -> JSONValue { flag.map(JSONValue.bool) ?? .null }
}
