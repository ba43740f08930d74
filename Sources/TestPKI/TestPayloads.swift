public import JSONAndBase64
import Foundation

/// Builders of App Store payloads with Apple's exact field names, for signing with ``TestPKI``.
///
/// Every builder has defaults for a plausible object; an optional parameter left `nil` leaves
/// its field out (unless documented otherwise), and `extra` adds or replaces any member.
/// Dates are milliseconds since 1970, as Apple's are.
///
/// ```swift
/// let transaction = TestPayloads.transaction(transactionId: "2000000000000002", productId: "com.example.coins.100",
///                                            type: "Consumable", expiresDate: nil)
/// let body = TestPayloads.body(signedPayload: pki.sign(TestPayloads.notification(
///     type: "SUBSCRIBED", subtype: "INITIAL_BUY", signedTransactionInfo: pki.sign(transaction))))
/// ```
public enum TestPayloads {
    /// Default bundle identifier of the builders.
    public static let bundleId = "com.example.app"
    /// Default app Apple ID of the builders.
    public static let appAppleId: Int64 = 1_234_567_890
    /// Default environment of the builders.
    public static let environment = "Sandbox"
    /// 2025-01-01T00:00:00Z.
    public static let january2025: Int64 = 1_735_689_600_000
    /// 30 days in milliseconds.
    public static let thirtyDays: Int64 = 30 * 86_400_000

    /// A `JWSTransactionDecodedPayload`.
    ///
    /// - Parameters:
    ///   - originalTransactionId: `nil` means the same as `transactionId`.
    ///   - signedDate: `nil` means `purchaseDate`.
    ///   - originalPurchaseDate: `nil` means `purchaseDate`.
    ///   - webOrderLineItemId / subscriptionGroupIdentifier: `nil` leaves them out.
    public static func transaction(
        transactionId: String = "2000000000000001",
        originalTransactionId: String? = nil,
        appTransactionId: String? = "704000000000000001",
        productId: String = "com.example.pro.monthly",
        type: String = "Auto-Renewable Subscription",
        purchaseDate: Int64 = january2025,
        originalPurchaseDate: Int64? = nil,
        expiresDate: Int64? = january2025 + thirtyDays,
        signedDate: Int64? = nil,
        quantity: Int64? = 1,
        revocationDate: Int64? = nil,
        revocationType: String? = nil,
        revocationPercentage: Int64? = nil,
        revocationReason: Int64? = nil,
        isUpgraded: Bool? = nil,
        inAppOwnershipType: String? = "PURCHASED",
        appAccountToken: String? = nil,
        subscriptionGroupIdentifier: String? = nil,
        bundleId: String = bundleId,
        environment: String = environment,
        webOrderLineItemId: String? = nil,
        price: Int64? = 9_990,
        currency: String? = "USD",
        storefront: String? = "USA",
        storefrontId: String? = "143441",
        transactionReason: String? = "PURCHASE",
        offerType: Int64? = nil,
        offerIdentifier: String? = nil,
        offerDiscountType: String? = nil,
        offerPeriod: String? = nil,
        extra: [(String, JSONValue)] = []
    ) -> JSONValue {
        var o = ObjectBuilder()
        o["transactionId"] = .string(transactionId)
        o["originalTransactionId"] = .string(originalTransactionId ?? transactionId)
        o["webOrderLineItemId"] = webOrderLineItemId.map(JSONValue.string)
        o["bundleId"] = .string(bundleId)
        o["productId"] = .string(productId)
        o["subscriptionGroupIdentifier"] = subscriptionGroupIdentifier.map(JSONValue.string)
        o["purchaseDate"] = .int(purchaseDate)
        o["originalPurchaseDate"] = .int(originalPurchaseDate ?? purchaseDate)
        o["expiresDate"] = expiresDate.map(JSONValue.int)
        o["quantity"] = quantity.map(JSONValue.int)
        o["type"] = .string(type)
        o["appAccountToken"] = appAccountToken.map(JSONValue.string)
        o["inAppOwnershipType"] = inAppOwnershipType.map(JSONValue.string)
        o["signedDate"] = .int(signedDate ?? purchaseDate)
        o["revocationReason"] = revocationReason.map(JSONValue.int)
        o["revocationDate"] = revocationDate.map(JSONValue.int)
        o["isUpgraded"] = isUpgraded.map(JSONValue.bool)
        o["offerType"] = offerType.map(JSONValue.int)
        o["offerIdentifier"] = offerIdentifier.map(JSONValue.string)
        o["environment"] = .string(environment)
        o["transactionReason"] = transactionReason.map(JSONValue.string)
        o["storefront"] = storefront.map(JSONValue.string)
        o["storefrontId"] = storefrontId.map(JSONValue.string)
        o["price"] = price.map(JSONValue.int)
        o["currency"] = currency.map(JSONValue.string)
        o["offerDiscountType"] = offerDiscountType.map(JSONValue.string)
        o["appTransactionId"] = appTransactionId.map(JSONValue.string)
        o["offerPeriod"] = offerPeriod.map(JSONValue.string)
        o["revocationType"] = revocationType.map(JSONValue.string)
        o["revocationPercentage"] = revocationPercentage.map(JSONValue.int)
        return o.value(extra)
    }

    /// A `JWSRenewalInfoDecodedPayload`.
    ///
    /// - Parameters:
    ///   - autoRenewProductId / productId: `nil` leaves them out.
    ///   - recentSubscriptionStartDate: `nil` leaves it out.
    public static func renewalInfo(
        originalTransactionId: String = "2000000000000001",
        appTransactionId: String? = "704000000000000001",
        autoRenewProductId: String? = "com.example.pro.monthly",
        productId: String? = "com.example.pro.monthly",
        autoRenewStatus: Int64? = 1,
        isInBillingRetryPeriod: Bool? = nil,
        expirationIntent: Int64? = nil,
        gracePeriodExpiresDate: Int64? = nil,
        priceIncreaseStatus: Int64? = nil,
        offerType: Int64? = nil,
        offerIdentifier: String? = nil,
        offerDiscountType: String? = nil,
        offerPeriod: String? = nil,
        signedDate: Int64 = january2025,
        environment: String = environment,
        recentSubscriptionStartDate: Int64? = january2025,
        renewalDate: Int64? = january2025 + thirtyDays,
        currency: String? = "USD",
        renewalPrice: Int64? = 9_990,
        appAccountToken: String? = nil,
        eligibleWinBackOfferIds: [String]? = nil,
        extra: [(String, JSONValue)] = []
    ) -> JSONValue {
        var o = ObjectBuilder()
        o["expirationIntent"] = expirationIntent.map(JSONValue.int)
        o["originalTransactionId"] = .string(originalTransactionId)
        o["autoRenewProductId"] = autoRenewProductId.map(JSONValue.string)
        o["productId"] = productId.map(JSONValue.string)
        o["autoRenewStatus"] = autoRenewStatus.map(JSONValue.int)
        o["isInBillingRetryPeriod"] = isInBillingRetryPeriod.map(JSONValue.bool)
        o["priceIncreaseStatus"] = priceIncreaseStatus.map(JSONValue.int)
        o["gracePeriodExpiresDate"] = gracePeriodExpiresDate.map(JSONValue.int)
        o["offerType"] = offerType.map(JSONValue.int)
        o["offerIdentifier"] = offerIdentifier.map(JSONValue.string)
        o["signedDate"] = .int(signedDate)
        o["environment"] = .string(environment)
        o["recentSubscriptionStartDate"] = recentSubscriptionStartDate.map(JSONValue.int)
        o["renewalDate"] = renewalDate.map(JSONValue.int)
        o["currency"] = currency.map(JSONValue.string)
        o["renewalPrice"] = renewalPrice.map(JSONValue.int)
        o["offerDiscountType"] = offerDiscountType.map(JSONValue.string)
        o["offerPeriod"] = offerPeriod.map(JSONValue.string)
        o["appAccountToken"] = appAccountToken.map(JSONValue.string)
        o["eligibleWinBackOfferIds"] = eligibleWinBackOfferIds.map { .array($0.map(JSONValue.string)) }
        o["appTransactionId"] = appTransactionId.map(JSONValue.string)
        return o.value(extra)
    }

    /// An `AppTransaction`.
    ///
    /// - Parameter receiptType: the environment (`Production`, `Sandbox`, `Xcode`).
    public static func appTransaction(
        appTransactionId: String? = "704000000000000001",
        receiptType: String = environment,
        appAppleId: Int64? = appAppleId,
        bundleId: String = bundleId,
        applicationVersion: String? = "1",
        versionExternalIdentifier: Int64? = 0,
        receiptCreationDate: Int64 = january2025,
        originalPurchaseDate: Int64? = january2025,
        originalApplicationVersion: String? = "1",
        deviceVerification: String? = "dGVzdCBkZXZpY2UgdmVyaWZpY2F0aW9u",
        deviceVerificationNonce: String? = "00000000-0000-4000-8000-000000000000",
        preorderDate: Int64? = nil,
        originalPlatform: String? = "iOS",
        extra: [(String, JSONValue)] = []
    ) -> JSONValue {
        var o = ObjectBuilder()
        o["receiptType"] = .string(receiptType)
        o["appAppleId"] = appAppleId.map(JSONValue.int)
        o["bundleId"] = .string(bundleId)
        o["applicationVersion"] = applicationVersion.map(JSONValue.string)
        o["versionExternalIdentifier"] = versionExternalIdentifier.map(JSONValue.int)
        o["receiptCreationDate"] = .int(receiptCreationDate)
        o["originalPurchaseDate"] = originalPurchaseDate.map(JSONValue.int)
        o["originalApplicationVersion"] = originalApplicationVersion.map(JSONValue.string)
        o["deviceVerification"] = deviceVerification.map(JSONValue.string)
        o["deviceVerificationNonce"] = deviceVerificationNonce.map(JSONValue.string)
        o["preorderDate"] = preorderDate.map(JSONValue.int)
        o["appTransactionId"] = appTransactionId.map(JSONValue.string)
        o["originalPlatform"] = originalPlatform.map(JSONValue.string)
        return o.value(extra)
    }

    /// A `ResponseBodyV2DecodedPayload`: `notificationType`, `subtype`, `notificationUUID`,
    /// `data` {`environment`, `appAppleId`, `bundleId`, `bundleVersion`,
    /// `signedTransactionInfo`, `signedRenewalInfo`, `status`}, `version`, `signedDate`.
    ///
    /// - Parameters:
    ///   - uuid: the `notificationUUID`; `nil` means a fresh random one.
    ///   - includeData: `false` leaves `data` out (for `summary`, `appData` or
    ///     `externalPurchaseToken` notifications, passed as JSON).
    public static func notification(
        type: String = "TEST",
        subtype: String? = nil,
        uuid: String? = nil,
        signedDate: Int64 = january2025,
        bundleId: String = bundleId,
        appAppleId: Int64? = appAppleId,
        environment: String = environment,
        signedTransactionInfo: String? = nil,
        signedRenewalInfo: String? = nil,
        bundleVersion: String? = "1",
        status: Int64? = nil,
        consumptionRequestReason: String? = nil,
        version: String = "2.0",
        includeData: Bool = true,
        summary: JSONValue? = nil,
        appData: JSONValue? = nil,
        externalPurchaseToken: JSONValue? = nil,
        extra: [(String, JSONValue)] = []
    ) -> JSONValue {
        var o = ObjectBuilder()
        o["notificationType"] = .string(type)
        o["subtype"] = subtype.map(JSONValue.string)
        o["notificationUUID"] = .string(uuid ?? UUID().uuidString.lowercased())
        if includeData {
            var data = ObjectBuilder()
            data["appAppleId"] = appAppleId.map(JSONValue.int)
            data["bundleId"] = .string(bundleId)
            data["bundleVersion"] = bundleVersion.map(JSONValue.string)
            data["environment"] = .string(environment)
            data["signedTransactionInfo"] = signedTransactionInfo.map(JSONValue.string)
            data["signedRenewalInfo"] = signedRenewalInfo.map(JSONValue.string)
            data["status"] = status.map(JSONValue.int)
            data["consumptionRequestReason"] = consumptionRequestReason.map(JSONValue.string)
            o["data"] = data.value([])
        }
        o["summary"] = summary
        o["appData"] = appData
        o["externalPurchaseToken"] = externalPurchaseToken
        o["version"] = .string(version)
        o["signedDate"] = .int(signedDate)
        return o.value(extra)
    }

    /// `appData` of an app-level notification.
    public static func appData(
        appAppleId: Int64? = appAppleId,
        bundleId: String = bundleId,
        environment: String = environment,
        signedAppTransactionInfo: String? = nil
    ) -> JSONValue {
        var o = ObjectBuilder()
        o["appAppleId"] = appAppleId.map(JSONValue.int)
        o["bundleId"] = .string(bundleId)
        o["environment"] = .string(environment)
        o["signedAppTransactionInfo"] = signedAppTransactionInfo.map(JSONValue.string)
        return o.value([])
    }

    /// `summary` of a RENEWAL_EXTENSION / SUMMARY notification.
    public static func summary(
        requestIdentifier: String = "00000000-0000-4000-8000-00000000000a",
        appAppleId: Int64? = appAppleId,
        bundleId: String = bundleId,
        environment: String = environment,
        productId: String = "com.example.pro.monthly",
        storefrontCountryCodes: [String] = ["USA"],
        succeededCount: Int64 = 1,
        failedCount: Int64 = 0
    ) -> JSONValue {
        var o = ObjectBuilder()
        o["requestIdentifier"] = .string(requestIdentifier)
        o["environment"] = .string(environment)
        o["appAppleId"] = appAppleId.map(JSONValue.int)
        o["bundleId"] = .string(bundleId)
        o["productId"] = .string(productId)
        o["storefrontCountryCodes"] = .array(storefrontCountryCodes.map(JSONValue.string))
        o["succeededCount"] = .int(succeededCount)
        o["failedCount"] = .int(failedCount)
        return o.value([])
    }

    /// `{"signedPayload":"<jws>"}`: the body Apple POSTs for a notification.
    public static func body(signedPayload jws: String) -> String { wrap("signedPayload", jws) }
    /// `{"signedTransactionInfo":"<jws>"}`.
    public static func body(signedTransactionInfo jws: String) -> String { wrap("signedTransactionInfo", jws) }
    /// `{"signedRenewalInfo":"<jws>"}`.
    public static func body(signedRenewalInfo jws: String) -> String { wrap("signedRenewalInfo", jws) }
    /// `{"signedAppTransactionInfo":"<jws>"}`.
    public static func body(signedAppTransactionInfo jws: String) -> String { wrap("signedAppTransactionInfo", jws) }
    /// `{"signedTransactions":[...]}`: a Get Transaction History page.
    public static func body(signedTransactions: [String], revision: String = "1", hasMore: Bool = false,
                            bundleId: String = bundleId, appAppleId: Int64 = appAppleId,
                            environment: String = environment) -> String {
        JSONWriter.string([
            "revision": .string(revision), "bundleId": .string(bundleId), "appAppleId": .int(appAppleId),
            "environment": .string(environment), "hasMore": .bool(hasMore),
            "signedTransactions": .array(signedTransactions.map(JSONValue.string)),
        ])
    }

    private static func wrap(_ key: String, _ jws: String) -> String {
        JSONWriter.string(.object(JSONObject([(key, .string(jws))])))
    }
}

/// Ordered object members; assigning `nil` leaves a member out.
struct ObjectBuilder {
    private var members: [(key: String, value: JSONValue)] = []

    subscript(key: String) -> JSONValue? {
        get { members.first { $0.key == key }?.value }
        set {
            guard let newValue else { return }
            members.append((key, newValue))
        }
    }

    func value(_ extra: [(String, JSONValue)]) -> JSONValue {
        var object = JSONObject(members)
        for (key, value) in extra { object[key] = value }
        return .object(object)
    }
}
