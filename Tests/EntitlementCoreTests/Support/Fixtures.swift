import EntitlementCore

/// Moments used across the tests: `t0` is 2025-11-21T00:00:00Z.
enum Time {
    static let t0: Int64 = 1_763_683_200_000
    static let second: Int64 = 1_000
    static let hour: Int64 = 3_600_000
    static let day: Int64 = 86_400_000

    /// `t0` plus `days` days.
    static func day(_ days: Int64) -> Int64 { t0 + days * day }
    /// `t0` plus `hours` hours.
    static func hour(_ hours: Int64) -> Int64 { t0 + hours * hour }
}

/// The products of the test rules.
enum Product {
    static let monthly = "com.example.pro.monthly"
    static let yearly = "com.example.pro.yearly"
    static let premium = "com.example.premium.monthly"
    static let basic = "com.example.basic.monthly"
    static let lifetime = "com.example.lifetime"
    static let pass = "com.example.pass.week"
    static let dayPass = "com.example.pass.day"
    /// A pass the rules list without `durationDays`.
    static let openPass = "com.example.pass.open"
    static let coins = "com.example.coins.100"
    /// A consumable missing from the rules.
    static let gems = "com.example.gems"

    /// Apple's `type` for a test product.
    static func type(of productId: String) -> String {
        switch productId {
        case monthly, yearly, premium, basic: return "Auto-Renewable Subscription"
        case lifetime: return "Non-Consumable"
        case pass, dayPass, openPass: return "Non-Renewing Subscription"
        default: return "Consumable"
        }
    }
}

/// The customer most tests are about.
enum Customer {
    static let app = "704000000000001"
    static let otid = "2000000000000001"
    static let token = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
    static let group = "21000001"
}

/// The rules of the specification's example, plus a few products for edge cases.
let testRules = Rules(
    version: "2026-11-01", gracePeriodGrantsAccess: true, billingRetryGrantsAccess: false,
    products: [
        Product.monthly: ProductRule(entitlements: ["pro"]),
        Product.yearly: ProductRule(entitlements: ["pro"]),
        Product.premium: ProductRule(entitlements: ["premium", "pro"]),
        Product.basic: ProductRule(entitlements: ["pro"]),
        Product.lifetime: ProductRule(entitlements: ["pro"]),
        Product.pass: ProductRule(entitlements: ["pro"], durationDays: 7),
        Product.dayPass: ProductRule(entitlements: ["pro"], durationDays: 1),
        Product.openPass: ProductRule(entitlements: ["pro"]),
        Product.coins: ProductRule(currency: "coins", units: 100),
    ],
    skus: ["SKU-ALPHA": ProductRule(entitlements: ["pro"]), "SKU-BETA": ProductRule(entitlements: ["beta"])])

/// JSON object from members, leaving out `nil` values.
func object(_ members: [(String, JSONValue?)]) -> JSONValue {
    .object(JSONObject(members.compactMap { key, value in value.map { (key: key, value: $0) } }))
}

func json(_ value: String?) -> JSONValue? { value.map(JSONValue.string) }
func json(_ value: Int64?) -> JSONValue? { value.map(JSONValue.int) }
func json(_ value: Bool?) -> JSONValue? { value.map(JSONValue.bool) }

/// A stand-in for a JWS: unique per payload, so raw comparison is meaningful.
func fakeJWS(_ payload: JSONValue) -> String { "eyJhbGciOiJFUzI1NiJ9." + JSONWriter.string(payload) + ".sig" }

/// A signed transaction built as Apple's payload and decoded by ``TransactionPayload``.
func transaction(
    _ id: String, original: String? = nil, product: String = Product.monthly, purchase: Int64,
    expires: Int64? = nil, signed: Int64? = nil, quantity: Int64? = nil, revoked: Int64? = nil,
    revocationType: String? = nil, revocationPercentage: Int64? = nil, refundPercentage: Int64? = nil,
    upgraded: Bool = false, ownership: String = "PURCHASED", token: String? = nil, app: String? = Customer.app,
    offerType: Int64? = nil, offerDiscountType: String? = nil, offerPeriod: String? = nil, price: Int64 = 9990,
    currency: String = "USD", originalPurchase: Int64? = nil, environment: String = "Production", jws: String? = nil,
    type productType: String? = nil, extra: [(String, JSONValue?)] = []
) -> SignedTransaction {
    let type = productType ?? Product.type(of: product)
    let isSubscription = type == "Auto-Renewable Subscription"
    let payload = object([
        ("transactionId", json(id)),
        ("originalTransactionId", json(original ?? id)),
        ("webOrderLineItemId", isSubscription ? json("9000" + id) : nil),
        ("bundleId", json("com.example.app")),
        ("productId", json(product)),
        ("subscriptionGroupIdentifier", isSubscription ? json(Customer.group) : nil),
        ("purchaseDate", json(purchase)),
        ("originalPurchaseDate", json(originalPurchase ?? purchase)),
        ("expiresDate", json(expires)),
        ("quantity", json(quantity ?? 1)),
        ("type", json(type)),
        ("appAccountToken", json(token)),
        ("inAppOwnershipType", json(ownership)),
        ("signedDate", json(signed ?? purchase)),
        ("revocationReason", revoked != nil ? json(Int64(0)) : nil),
        ("revocationDate", json(revoked)),
        ("isUpgraded", upgraded ? json(true) : nil),
        ("offerType", json(offerType)),
        ("offerDiscountType", json(offerDiscountType)),
        ("offerPeriod", json(offerPeriod)),
        ("environment", json(environment)),
        ("transactionReason", json("PURCHASE")),
        ("storefront", json("USA")),
        ("storefrontId", json("143441")),
        ("price", json(price)),
        ("currency", json(currency)),
        ("appTransactionId", json(app)),
        ("revocationType", json(revocationType)),
        ("revocationPercentage", json(revocationPercentage)),
        ("refundPercentage", json(refundPercentage)),
    ] + extra)
    do {
        return SignedTransaction(jws: jws ?? fakeJWS(payload), payload: try TransactionPayload(json: payload))
    } catch {
        fatalError("test transaction does not decode: \(error)")
    }
}

/// A signed renewal info built as Apple's payload and decoded by ``RenewalInfoPayload``.
func renewal(
    original: String = Customer.otid, product: String = Product.monthly, autoRenewProduct: String? = nil,
    autoRenew: Bool = true, retry: Bool? = nil, grace: Int64? = nil, intent: Int64? = nil, priceIncreaseStatus: Int64? = nil,
    signed: Int64, token: String? = nil, app: String? = Customer.app, jws: String? = nil, extra: [(String, JSONValue?)] = []
) -> SignedRenewalInfo {
    let payload = object([
        ("originalTransactionId", json(original)),
        ("autoRenewProductId", json(autoRenewProduct ?? product)),
        ("productId", json(product)),
        ("autoRenewStatus", json(Int64(autoRenew ? 1 : 0))),
        ("isInBillingRetryPeriod", json(retry)),
        ("gracePeriodExpiresDate", json(grace)),
        ("expirationIntent", json(intent)),
        ("priceIncreaseStatus", json(priceIncreaseStatus)),
        ("signedDate", json(signed)),
        ("environment", json("Production")),
        ("recentSubscriptionStartDate", json(Time.t0)),
        ("appTransactionId", json(app)),
        ("appAccountToken", json(token)),
    ] + extra)
    do {
        return SignedRenewalInfo(jws: jws ?? fakeJWS(payload), payload: try RenewalInfoPayload(json: payload))
    } catch {
        fatalError("test renewal info does not decode: \(error)")
    }
}

/// A signed AppTransaction built as Apple's payload.
func appTransaction(
    _ id: String = Customer.app, created: Int64, originalPurchase: Int64? = nil, originalVersion: String = "1",
    environment: String = "Production"
) -> SignedAppTransaction {
    let payload = object([
        ("receiptType", json(environment)),
        ("appAppleId", json(Int64(1_234_567_890))),
        ("bundleId", json("com.example.app")),
        ("applicationVersion", json("1")),
        ("receiptCreationDate", json(created)),
        ("originalPurchaseDate", json(originalPurchase ?? Time.t0 - 30 * Time.day)),
        ("originalApplicationVersion", json(originalVersion)),
        ("appTransactionId", json(id)),
        ("originalPlatform", json("iOS")),
    ])
    do {
        return SignedAppTransaction(jws: fakeJWS(payload), payload: try AppTransactionPayload(json: payload))
    } catch {
        fatalError("test app transaction does not decode: \(error)")
    }
}

/// A log of events in arrival order, built the way ingest builds them.
final class History {
    private(set) var events: [Event] = []
    private var nextSeq: Int64 = 1
    private var nextUUID = 1

    init() {}

    @discardableResult
    func add(_ input: VerifiedInput) -> Event {
        let event = Event(seq: nextSeq, input: input)
        nextSeq += 1
        events.append(event)
        return event
    }

    @discardableResult
    func add(_ transaction: SignedTransaction) -> Event { add(.transaction(transaction)) }

    /// An operator's record (a grant, its revocation, a credit, a link), logged as the store logs it.
    @discardableResult
    func operate(_ record: OperatorRecord) -> Event {
        let event = Event(seq: nextSeq, body: .operatorAction(record))
        nextSeq += 1
        events.append(event)
        return event
    }

    /// A usage record (the operator's word), logged as ingest would log it.
    @discardableResult
    func use(_ usage: UsageFacts) -> Event {
        let event = Event(seq: nextSeq, body: .usage(usage))
        nextSeq += 1
        events.append(event)
        return event
    }

    @discardableResult
    func add(_ renewalInfo: SignedRenewalInfo) -> Event { add(.renewalInfo(renewalInfo)) }

    /// A notification, built as Apple's payload and decoded by ``NotificationPayload``.
    @discardableResult
    func notify(
        _ type: String, _ subtype: String? = nil, signed: Int64, transaction: SignedTransaction? = nil,
        renewal: SignedRenewalInfo? = nil, appTransaction: SignedAppTransaction? = nil, status: Int64? = nil,
        data: Bool = true, extra: [(String, JSONValue?)] = []
    ) -> Event {
        let number = String(nextUUID)
        let uuid = "00000000-0000-4000-8000-" + String(repeating: "0", count: max(0, 12 - number.count)) + number
        nextUUID += 1
        var members: [(String, JSONValue?)] = [
            ("notificationType", json(type)),
            ("subtype", json(subtype)),
            ("notificationUUID", json(uuid)),
            ("version", json("2.0")),
            ("signedDate", json(signed)),
        ]
        if data {
            members.append(
                (
                    "data",
                    object([
                        ("environment", json("Production")),
                        ("appAppleId", json(Int64(1_234_567_890))),
                        ("bundleId", json("com.example.app")),
                        ("bundleVersion", json("1")),
                        ("signedTransactionInfo", json(transaction?.jws)),
                        ("signedRenewalInfo", json(renewal?.jws)),
                        ("status", json(status)),
                    ])
                ))
        }
        if let appTransaction {
            members.append(
                (
                    "appData",
                    object([
                        ("appAppleId", json(Int64(1_234_567_890))),
                        ("bundleId", json("com.example.app")),
                        ("environment", json("Production")),
                        ("signedAppTransactionInfo", json(appTransaction.jws)),
                    ])
                ))
        }
        members.append(contentsOf: extra)
        let payload = object(members)
        do {
            let notification = SignedNotification(
                jws: fakeJWS(payload), payload: try NotificationPayload(json: payload), transaction: transaction,
                renewalInfo: renewal, appTransaction: appTransaction)
            return add(.notification(notification))
        } catch {
            fatalError("test notification does not decode: \(error)")
        }
    }

    /// Each customer's state after all events (events about no customer are skipped).
    func states(rules: Rules = testRules) -> [CustomerKey: CustomerState] {
        var states: [CustomerKey: CustomerState] = [:]
        for event in events {
            guard let key = event.customerKey else { continue }
            do {
                try states[key, default: CustomerState(key: key)].apply(event, rules: rules)
            } catch {
                fatalError("unexpected \(error)")
            }
        }
        return states
    }

    /// The customer's state (an empty one if no event is about it).
    func state(_ key: CustomerKey = Customer.app, rules: Rules = testRules) -> CustomerState {
        states(rules: rules)[key] ?? CustomerState(key: key)
    }

    /// The customer evaluated at `at`.
    func view(at: Int64, _ key: CustomerKey = Customer.app, rules: Rules = testRules) -> CustomerView {
        Evaluation.evaluate(state(key, rules: rules), rules: rules, at: at)
    }
}

extension CustomerView {
    /// Whether entitlement `name` is listed and active.
    func isActive(_ name: String) -> Bool { entitlement(name)?.active ?? false }
}
