import EntitlementCore
import TestPKI

/// A product of the app, as `--products` names it (`ID` or `ID:TYPE`).
struct AppProduct {
    enum Kind: String, CaseIterable {
        case subscription, consumable
        case nonConsumable = "non-consumable"
        case nonRenewing = "non-renewing"

        /// The `type` Apple signs for it.
        var appleType: String {
            switch self {
            case .subscription: return "Auto-Renewable Subscription"
            case .consumable: return "Consumable"
            case .nonConsumable: return "Non-Consumable"
            case .nonRenewing: return "Non-Renewing Subscription"
            }
        }
    }

    var id: String
    var kind: Kind

    /// Why a `--products` item is refused.
    struct Refusal: Error {
        var reason: String
    }

    /// Parses `ID` (an auto-renewable subscription) or `ID:TYPE`; the reason when it is neither.
    static func parse(_ text: String) -> Result<AppProduct, Refusal> {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard let id = parts.first, !id.isEmpty, parts.count <= 2 else {
            return .failure(Refusal(reason: "\"\(text)\" is not a product (ID or ID:TYPE)"))
        }
        guard id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-") }) else {
            return .failure(Refusal(reason: "\"\(id)\" is not a product identifier (letters, digits, '.', '_', '-')"))
        }
        guard parts.count == 2 else { return .success(AppProduct(id: id, kind: .subscription)) }
        guard let kind = Kind(rawValue: parts[1]) else {
            let kinds = Kind.allCases.map(\.rawValue).joined(separator: ", ")
            return .failure(Refusal(reason: "\"\(parts[1])\" in \"\(text)\" is not a product type (\(kinds))"))
        }
        return .success(AppProduct(id: id, kind: kind))
    }
}

/// Signed histories for an app's own bundle id and products: for each product the
/// shapes a team meets first (a new purchase, a renewal, a refund, billing retry,
/// an upgrade between two subscriptions), each customer with the moments worth
/// asking about, so that every command can be tried before there is real data.
struct AppHistories {
    let pki: TestPKI
    let bundleId: String
    let appAppleId: Int64
    /// `Production`, `Sandbox` or `Xcode`: what every payload says.
    let environment: String
    let products: [AppProduct]
    /// Day 0 of every history (ms since 1970).
    let start: Int64

    static let day: Int64 = 86_400_000
    static let hour: Int64 = 3_600_000
    /// Every subscription is in this one group, so that an upgrade between two is possible.
    static let group = "21000001"

    struct Customer {
        var appTransactionId: String
        var originalTransactionId: String
        var title: String
        var moments: [(label: String, at: Int64)]
    }

    var lines: [String] = []
    var customers: [Customer] = []

    init(pki: TestPKI, bundleId: String, appAppleId: Int64, environment: String, products: [AppProduct], start: Int64) {
        self.pki = pki
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.products = products
        self.start = start
    }

    func at(_ days: Double) -> Int64 { start + Int64(days * Double(Self.day)) }

    /// The ids of customer `n`: appTransactionId, and originalTransactionId / transactionIds `…n0k`.
    static func appTransactionId(_ n: Int) -> String { "7050000000" + eightDigits(n) }
    static func transactionId(_ n: Int, _ k: Int) -> String { "30000" + eightDigits(n) + String(k) }

    mutating func build() {
        var n = 0
        let subscriptions = products.filter { $0.kind == .subscription }
        for product in products {
            switch product.kind {
            case .subscription:
                n += 1; purchaseAndRenewal(product, n)
                n += 1; refunded(product, n)
                n += 1; billingRetry(product, n)
            case .consumable, .nonConsumable, .nonRenewing:
                n += 1; oneTime(product, n, refunded: false)
                n += 1; oneTime(product, n, refunded: true)
            }
        }
        if subscriptions.count >= 2 {
            n += 1; upgrade(from: subscriptions[0], to: subscriptions[1], n)
        }
    }

    // MARK: Signing

    mutating func notification(_ type: String, _ subtype: String?, _ n: Int, _ k: Int, signed: Int64, transaction: JSONValue? = nil, renewal: JSONValue? = nil) {
        let tail = String(n * 100 + k)
        let uuid = "f1c70000-0000-4000-8000-" + String(repeating: "0", count: max(0, 12 - tail.count)) + tail
        let payload = TestPayloads.notification(
            type: type, subtype: subtype, uuid: uuid, signedDate: signed, bundleId: bundleId, appAppleId: appAppleId,
            environment: environment, signedTransactionInfo: transaction.map { pki.sign($0) },
            signedRenewalInfo: renewal.map { pki.sign($0) })
        lines.append(TestPayloads.body(signedPayload: pki.sign(payload)))
    }

    func transaction(
        _ product: AppProduct, _ n: Int, _ k: Int, purchase: Int64, expires: Int64?, signed: Int64, first: Int64? = nil,
        reason: String = "PURCHASE", revoked: Int64? = nil, upgraded: Bool? = nil, quantity: Int64 = 1
    ) -> JSONValue {
        TestPayloads.transaction(
            transactionId: Self.transactionId(n, k), originalTransactionId: Self.transactionId(n, 1),
            appTransactionId: Self.appTransactionId(n), productId: product.id, type: product.kind.appleType,
            purchaseDate: purchase, originalPurchaseDate: first ?? purchase, expiresDate: expires, signedDate: signed,
            quantity: quantity, revocationDate: revoked, revocationType: revoked == nil ? nil : "REFUND_FULL",
            revocationReason: revoked == nil ? nil : 0, isUpgraded: upgraded,
            subscriptionGroupIdentifier: product.kind == .subscription ? Self.group : nil, bundleId: bundleId,
            environment: environment, webOrderLineItemId: product.kind == .subscription ? Self.transactionId(n, k) : nil,
            transactionReason: reason)
    }

    func renewal(
        _ product: AppProduct, _ n: Int, signed: Int64, renewalDate: Int64, next: AppProduct? = nil, retry: Bool = false
    ) -> JSONValue {
        TestPayloads.renewalInfo(
            originalTransactionId: Self.transactionId(n, 1), appTransactionId: Self.appTransactionId(n),
            autoRenewProductId: (next ?? product).id, productId: product.id, autoRenewStatus: 1,
            isInBillingRetryPeriod: retry, expirationIntent: retry ? 2 : nil, signedDate: signed, environment: environment,
            recentSubscriptionStartDate: at(0), renewalDate: renewalDate)
    }

    // MARK: Histories

    /// Bought on day 0, renewed on day 30: active until day 60.
    mutating func purchaseAndRenewal(_ product: AppProduct, _ n: Int) {
        notification(
            "SUBSCRIBED", "INITIAL_BUY", n, 1, signed: at(0) + 1000,
            transaction: transaction(product, n, 1, purchase: at(0), expires: at(30), signed: at(0) + 500),
            renewal: renewal(product, n, signed: at(0) + 500, renewalDate: at(30)))
        notification(
            "DID_RENEW", nil, n, 2, signed: at(30) + 1000,
            transaction: transaction(product, n, 2, purchase: at(30), expires: at(60), signed: at(30) + 500, first: at(0), reason: "RENEWAL"),
            renewal: renewal(product, n, signed: at(30) + 500, renewalDate: at(60)))
        lines.append(
            TestPayloads.body(
                signedAppTransactionInfo: pki.sign(
                    TestPayloads.appTransaction(
                        appTransactionId: Self.appTransactionId(n), receiptType: environment, appAppleId: appAppleId,
                        bundleId: bundleId, receiptCreationDate: at(0) + 2000, originalPurchaseDate: at(0)))))
        add(n, "\(product.id): new purchase on day 0, renewed on day 30 (active until day 60)",
            [("after the purchase", at(1)), ("after the renewal", at(31))])
    }

    /// Bought on day 0, refunded on day 5: access ends with the refund.
    mutating func refunded(_ product: AppProduct, _ n: Int) {
        notification(
            "SUBSCRIBED", "INITIAL_BUY", n, 1, signed: at(0) + 1000,
            transaction: transaction(product, n, 1, purchase: at(0), expires: at(30), signed: at(0) + 500),
            renewal: renewal(product, n, signed: at(0) + 500, renewalDate: at(30)))
        notification(
            "REFUND", nil, n, 2, signed: at(5) + 1000,
            transaction: transaction(product, n, 1, purchase: at(0), expires: at(30), signed: at(5) + 500, revoked: at(5)))
        add(n, "\(product.id): new purchase on day 0, refunded on day 5", [("before the refund", at(2)), ("after the refund", at(6))])
    }

    /// Bought on day 0; the renewal on day 30 fails and Apple retries billing (no grace period).
    mutating func billingRetry(_ product: AppProduct, _ n: Int) {
        notification(
            "SUBSCRIBED", "INITIAL_BUY", n, 1, signed: at(0) + 1000,
            transaction: transaction(product, n, 1, purchase: at(0), expires: at(30), signed: at(0) + 500),
            renewal: renewal(product, n, signed: at(0) + 500, renewalDate: at(30)))
        notification(
            "DID_FAIL_TO_RENEW", nil, n, 2, signed: at(30) + Self.hour,
            transaction: transaction(product, n, 1, purchase: at(0), expires: at(30), signed: at(30) + Self.hour - 500),
            renewal: renewal(product, n, signed: at(30) + Self.hour - 500, renewalDate: at(30), retry: true))
        add(n, "\(product.id): new purchase on day 0, billing fails at the renewal on day 30 (billing retry)",
            [("before the renewal", at(20)), ("in billing retry", at(31))])
    }

    /// `from` bought on day 0, upgraded to `to` on day 10 (at once: `from` comes back isUpgraded).
    mutating func upgrade(from: AppProduct, to: AppProduct, _ n: Int) {
        notification(
            "SUBSCRIBED", "INITIAL_BUY", n, 1, signed: at(0) + 1000,
            transaction: transaction(from, n, 1, purchase: at(0), expires: at(30), signed: at(0) + 500),
            renewal: renewal(from, n, signed: at(0) + 500, renewalDate: at(30)))
        lines.append(
            TestPayloads.body(
                signedTransactionInfo: pki.sign(
                    transaction(from, n, 1, purchase: at(0), expires: at(30), signed: at(10) + 400, upgraded: true))))
        notification(
            "DID_CHANGE_RENEWAL_PREF", "UPGRADE", n, 2, signed: at(10) + 1000,
            transaction: transaction(to, n, 2, purchase: at(10), expires: at(70), signed: at(10) + 500, first: at(0)),
            renewal: renewal(to, n, signed: at(10) + 500, renewalDate: at(70)))
        add(n, "upgrade: \(from.id) on day 0, upgraded to \(to.id) on day 10", [("before the upgrade", at(5)), ("after the upgrade", at(11))])
    }

    /// A one-time purchase on day 1 (a non-renewing subscription lasts 30 days), refunded on day 3 when asked.
    mutating func oneTime(_ product: AppProduct, _ n: Int, refunded: Bool) {
        let expires: Int64? = product.kind == .nonRenewing ? at(31) : nil
        let quantity: Int64 = product.kind == .consumable ? 2 : 1
        notification(
            "ONE_TIME_CHARGE", nil, n, 1, signed: at(1) + 1000,
            transaction: transaction(product, n, 1, purchase: at(1), expires: expires, signed: at(1) + 500, quantity: quantity))
        if refunded {
            notification(
                "REFUND", nil, n, 2, signed: at(3) + 1000,
                transaction: transaction(
                    product, n, 1, purchase: at(1), expires: expires, signed: at(3) + 500, revoked: at(3), quantity: quantity))
            add(n, "\(product.id): bought on day 1 (quantity \(quantity)), refunded on day 3", [("before the refund", at(2)), ("after the refund", at(4))])
        } else {
            add(n, "\(product.id): bought on day 1 (quantity \(quantity))", [("after the purchase", at(2))])
        }
    }

    mutating func add(_ n: Int, _ title: String, _ moments: [(String, Int64)]) {
        customers.append(
            Customer(
                appTransactionId: Self.appTransactionId(n), originalTransactionId: Self.transactionId(n, 1), title: title,
                moments: moments.map { (label: $0.0, at: $0.1) }))
    }

    /// The configuration that trusts the test root (`test-root.pem` beside it; none in
    /// Xcode, whose data the engine does not check signatures of) and maps every product.
    func configuration(entitlement: String) -> JSONValue {
        var rules = JSONObject()
        for product in products {
            switch product.kind {
            case .subscription, .nonConsumable: rules[product.id] = ["entitlements": [.string(entitlement)]]
            case .nonRenewing: rules[product.id] = ["entitlements": [.string(entitlement)], "durationDays": 30]
            case .consumable: rules[product.id] = ["currency": "coins", "units": 1]
            }
        }
        var config = JSONObject()
        config["bundleId"] = .string(bundleId)
        config["appAppleId"] = .int(appAppleId)
        config["environment"] = .string(environment)
        if environment != "Xcode" { config["rootCertificates"] = ["test-root.pem"] }
        config["rules"] = [
            "version": "fixtures-1", "gracePeriodGrantsAccess": true, "billingRetryGrantsAccess": false, "products": .object(rules),
        ]
        return .object(config)
    }
}

/// `n` in 8 digits, zero-padded.
func eightDigits(_ n: Int) -> String {
    let digits = n.description
    return String(repeating: "0", count: max(0, 8 - digits.count)) + digits
}
