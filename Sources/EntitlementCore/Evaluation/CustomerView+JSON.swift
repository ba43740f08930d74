extension CustomerView: JSONSinkWritable {
    /// The view as compact JSON bytes, its writing specialised for ``JSONByteSink`` here.
    public func jsonBytes() -> [UInt8] {
        var sink = JSONByteSink()
        write(to: &sink)
        return sink.bytes
    }

    /// The `query` output of specification section 6, keys in the specification's order:
    /// `appTransactionId`, `at`, `appAccountToken`, `entitlements`,
    /// `subscriptions`, `purchases`, `balances`, then the fields revision 2
    /// added: `originalPurchaseDate`, `originalApplicationVersion` (`environment`
    /// follows `at`);
    /// absent values are JSON `null`. ``jsonBytes()`` writes it without building a `JSONValue`.
    public func write<Sink: JSONSink>(to sink: inout Sink) {
        sink.object { sink in
            sink.member("appTransactionId", appTransactionId)
            sink.member("at", at)
            sink.member("environment", environment)
            sink.member("appAccountToken", appAccountToken)
            sink.key("entitlements")
            EntitlementView.write(entitlements, to: &sink)
            sink.key("subscriptions")
            sink.array { sink in for subscription in subscriptions { subscription.write(to: &sink) } }
            sink.key("purchases")
            sink.array { sink in for purchase in purchases { purchase.write(to: &sink) } }
            sink.key("balances")
            sink.object { sink in for balance in balances { sink.member(balance.currency, balance.amount) } }
            sink.member("originalPurchaseDate", originalPurchaseDate)
            sink.member("originalApplicationVersion", originalApplicationVersion)
            sink.member("originalPlatform", originalPlatform)
            sink.member("consentRescindedAt", consentRescindedAt)
        }
    }
}

extension EntitlementView: JSONSinkWritable {
    /// `{"active": ..., "expiresDate": ..., "productId": ..., "source": ...}`, and `"grantId"`
    /// when an operator's grant is the source.
    public func write<Sink: JSONSink>(to sink: inout Sink) {
        sink.object { sink in
            sink.member("active", active)
            sink.member("expiresDate", expiresDate)
            sink.member("productId", productId)
            sink.member("source", source)
            if let grantId { sink.member("grantId", grantId) }
        }
    }

    /// `{"<name>": {"active": ..., "expiresDate": ...}, ...}` in the order given.
    public static func json(_ entitlements: [EntitlementView]) -> JSONValue {
        var tree = JSONTreeSink()
        write(entitlements, to: &tree)
        return tree.value ?? .null
    }

    /// What ``json(_:)`` answers, written to `sink`.
    public static func write<Sink: JSONSink>(_ entitlements: [EntitlementView], to sink: inout Sink) {
        sink.object { sink in
            for entitlement in entitlements {
                sink.key(entitlement.name)
                entitlement.write(to: &sink)
            }
        }
    }
}

extension SubscriptionView: JSONSinkWritable {
    /// One element of `subscriptions` in the `query` output.
    public func write<Sink: JSONSink>(to sink: inout Sink) {
        sink.object { sink in
            sink.member("originalTransactionId", originalTransactionId)
            sink.member("productId", productId)
            sink.member("subscriptionGroupIdentifier", subscriptionGroupIdentifier)
            sink.member("status", status.rawValue)
            sink.member("expiresDate", expiresDate)
            sink.member("gracePeriodExpiresDate", gracePeriodExpiresDate)
            sink.member("autoRenewStatus", autoRenewStatus)
            sink.member("autoRenewProductId", autoRenewProductId)
            sink.member("ownership", ownership)
            sink.member("revocationType", revocationType)
            sink.member("transactionId", currentTransactionId)
            sink.member("purchaseDate", purchaseDate)
            sink.member("originalPurchaseDate", originalPurchaseDate)
            sink.member("periodType", periodType)
            sink.member("offerPeriod", offerPeriod)
            sink.member("willRenew", willRenew)
            sink.member("revocationDate", revocationDate)
            sink.member("price", price)
            sink.member("currency", currency)
            sink.member("unsubscribeDetectedAt", unsubscribeDetectedAt)
            sink.member("billingIssueDetectedAt", billingIssueDetectedAt)
            sink.member("billingPlanType", billingPlanType)
            sink.key("commitment")
            if let commitment { commitment.write(to: &sink) } else { sink.null() }
            sink.member("expirationIntent", expirationIntent)
            sink.member("priceIncreaseStatus", priceIncreaseStatus)
            sink.member("renewalPrice", renewalPrice)
            sink.member("renewalCurrency", renewalCurrency)
            sink.member("offerDiscountType", offerDiscountType)
            sink.key("eligibleWinBackOfferIds")
            if let eligibleWinBackOfferIds {
                sink.array { sink in for id in eligibleWinBackOfferIds { sink.string(id) } }
            } else {
                sink.null()
            }
        }
    }
}

extension CommitmentView: JSONSinkWritable {
    /// `subscriptions[].commitment` in the `query` output.
    public func write<Sink: JSONSink>(to sink: inout Sink) {
        sink.object { sink in
            sink.member("billingPeriodNumber", billingPeriodNumber)
            sink.member("totalBillingPeriods", totalBillingPeriods)
            sink.member("commitmentExpiresDate", commitmentExpiresDate)
            sink.member("commitmentPrice", commitmentPrice)
            sink.member("autoRenewStatus", autoRenewStatus)
            sink.member("autoRenewProductId", autoRenewProductId)
            sink.member("renewalDate", renewalDate)
            sink.member("renewalPrice", renewalPrice)
        }
    }
}

extension PurchaseView: JSONSinkWritable {
    /// One element of `purchases` in the `query` output.
    public func write<Sink: JSONSink>(to sink: inout Sink) {
        sink.object { sink in
            sink.member("transactionId", transactionId)
            sink.member("productId", productId)
            sink.member("type", type)
            sink.member("quantity", quantity)
            sink.member("revoked", revoked)
            sink.member("revocationType", revocationType)
            sink.member("revocationPercentage", revocationPercentage)
            sink.member("expiresDate", expiresDate)
            sink.member("purchaseDate", purchaseDate)
            sink.member("revocationDate", revocationDate)
            sink.member("price", price)
            sink.member("currency", currency)
        }
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
