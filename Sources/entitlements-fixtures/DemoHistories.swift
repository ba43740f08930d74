import EntitlementCore
import TestPKI

/// The demo's customers: realistic signed histories, each with the moments worth looking at.
struct DemoHistories {
    let pki: TestPKI
    /// 2026-09-01T00:00:00Z.
    static let start: Int64 = 1_788_220_800_000
    static let day: Int64 = 86_400_000
    static let hour: Int64 = 3_600_000

    struct Customer {
        var appTransactionId: String
        var title: String
        var moments: [(label: String, at: Int64)]
    }

    var lines: [String] = []
    var customers: [Customer] = []

    init(pki: TestPKI) { self.pki = pki }

    func at(_ days: Double) -> Int64 { Self.start + Int64(days * Double(Self.day)) }

    /// Signs `payload` as production data (the demo's app takes Production and
    /// Sandbox): every `environment` and `receiptType` says Production, unless
    /// `sandbox` (App Review's purchases are sandbox data in the production app).
    func sign(_ payload: JSONValue, sandbox: Bool = false) -> String {
        func production(_ value: JSONValue) -> JSONValue {
            switch value {
            case .object(let object):
                return .object(
                    JSONObject(
                        object.members.map { member in
                            if (member.key == "environment" || member.key == "receiptType"), case .string = member.value {
                                return (member.key, .string(sandbox ? "Sandbox" : "Production"))
                            }
                            return (member.key, production(member.value))
                        }))
            case .array(let items): return .array(items.map(production))
            default: return value
            }
        }
        return pki.sign(production(payload))
    }

    mutating func notification(
        _ type: String, _ subtype: String? = nil, uuid: String, signed: Int64, transaction: JSONValue? = nil, renewal: JSONValue? = nil
    ) {
        let payload = TestPayloads.notification(
            type: type, subtype: subtype, uuid: uuid, signedDate: signed,
            signedTransactionInfo: transaction.map { sign($0) }, signedRenewalInfo: renewal.map { sign($0) })
        lines.append(TestPayloads.body(signedPayload: sign(payload)))
    }

    static func uuid(_ customer: Int, _ n: Int) -> String {
        let tail = String(customer * 1000 + n)
        return "de300000-0000-4000-8000-" + String(repeating: "0", count: 12 - tail.count) + tail
    }

    mutating func build() {
        renewals()
        upgrade()
        refundAndReversal()
        familyRevoke()
        coins()
        passes()
        legacyWithoutAppTransactionId()
        appReviewSandboxPurchase()
        notification("TEST", uuid: Self.uuid(0, 1), signed: at(0.5))
    }

    /// A monthly subscription that renews, fails billing, enters grace, and recovers.
    mutating func renewals() {
        let app = "704100000000000001", otid = "2000000100000001", monthly = "com.example.pro.monthly"
        func tx(_ id: String, _ purchase: Int64, signed: Int64) -> JSONValue {
            TestPayloads.transaction(
                transactionId: id, originalTransactionId: otid, appTransactionId: app, productId: monthly,
                purchaseDate: purchase, originalPurchaseDate: at(0), expiresDate: purchase + 30 * Self.day, signedDate: signed,
                appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138", subscriptionGroupIdentifier: "21000001",
                webOrderLineItemId: id, transactionReason: purchase == at(0) ? "PURCHASE" : "RENEWAL")
        }
        func renewal(signed: Int64, retry: Bool = false, grace: Int64? = nil, renewalDate: Int64) -> JSONValue {
            TestPayloads.renewalInfo(
                originalTransactionId: otid, appTransactionId: app, autoRenewProductId: monthly, productId: monthly,
                autoRenewStatus: 1, isInBillingRetryPeriod: retry, expirationIntent: retry ? 2 : nil,
                gracePeriodExpiresDate: grace, signedDate: signed, recentSubscriptionStartDate: at(0), renewalDate: renewalDate,
                appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        }
        notification(
            "SUBSCRIBED", "INITIAL_BUY", uuid: Self.uuid(1, 1), signed: at(0) + 1000,
            transaction: tx("2000000100000001", at(0), signed: at(0) + 500), renewal: renewal(signed: at(0) + 500, renewalDate: at(30)))
        notification(
            "DID_RENEW", uuid: Self.uuid(1, 2), signed: at(30) + 1000,
            transaction: tx("2000000100000002", at(30), signed: at(30) + 500), renewal: renewal(signed: at(30) + 500, renewalDate: at(60)))
        notification(
            "DID_FAIL_TO_RENEW", "GRACE_PERIOD", uuid: Self.uuid(1, 3), signed: at(60) + Self.hour,
            transaction: tx("2000000100000002", at(30), signed: at(60) + Self.hour - 500),
            renewal: renewal(signed: at(60) + Self.hour - 500, retry: true, grace: at(76), renewalDate: at(60)))
        notification(
            "DID_RENEW", "BILLING_RECOVERY", uuid: Self.uuid(1, 4), signed: at(66) + 1000,
            transaction: tx("2000000100000003", at(66), signed: at(66) + 500),
            renewal: renewal(signed: at(66) + 500, renewalDate: at(96)))
        // The same notification delivered twice, as Apple retries do: stored once.
        notification(
            "DID_RENEW", "BILLING_RECOVERY", uuid: Self.uuid(1, 4), signed: at(66) + 1000,
            transaction: tx("2000000100000003", at(66), signed: at(66) + 500),
            renewal: renewal(signed: at(66) + 500, renewalDate: at(96)))
        // The app's AppTransaction, from Get App Transaction Info.
        lines.append(
            TestPayloads.body(
                signedAppTransactionInfo: sign(
                    TestPayloads.appTransaction(appTransactionId: app, receiptCreationDate: at(0) + 2000, originalPurchaseDate: at(0)))))
        customers.append(
            Customer(
                appTransactionId: app,
                title: "monthly subscription: renews, fails billing, grace period, recovers",
                moments: [("after the first renewal", at(40)), ("in the grace period", at(62)), ("after billing recovery", at(70))]))
    }

    /// Monthly upgraded to yearly (immediate), then a downgrade back to monthly at the next renewal.
    mutating func upgrade() {
        let app = "704100000000000002", otid = "2000000200000001"
        let monthly = "com.example.pro.monthly", yearly = "com.example.pro.yearly"
        let first = TestPayloads.transaction(
            transactionId: "2000000200000001", originalTransactionId: otid, appTransactionId: app, productId: monthly,
            purchaseDate: at(0), expiresDate: at(30), signedDate: at(0) + 500, subscriptionGroupIdentifier: "21000001")
        notification(
            "SUBSCRIBED", "INITIAL_BUY", uuid: Self.uuid(2, 1), signed: at(0) + 1000, transaction: first,
            renewal: TestPayloads.renewalInfo(
                originalTransactionId: otid, appTransactionId: app, autoRenewProductId: monthly, productId: monthly,
                signedDate: at(0) + 500, renewalDate: at(30)))
        // The upgrade: the old transaction comes back marked isUpgraded, a new one starts now.
        lines.append(
            TestPayloads.body(
                signedTransactionInfo: sign(
                    TestPayloads.transaction(
                        transactionId: "2000000200000001", originalTransactionId: otid, appTransactionId: app, productId: monthly,
                        purchaseDate: at(0), expiresDate: at(30), signedDate: at(10) + 400, isUpgraded: true,
                        subscriptionGroupIdentifier: "21000001"))))
        notification(
            "DID_CHANGE_RENEWAL_PREF", "UPGRADE", uuid: Self.uuid(2, 2), signed: at(10) + 1000,
            transaction: TestPayloads.transaction(
                transactionId: "2000000200000002", originalTransactionId: otid, appTransactionId: app, productId: yearly,
                purchaseDate: at(10), expiresDate: at(375), signedDate: at(10) + 500, subscriptionGroupIdentifier: "21000001",
                price: 99_990),
            renewal: TestPayloads.renewalInfo(
                originalTransactionId: otid, appTransactionId: app, autoRenewProductId: yearly, productId: yearly,
                signedDate: at(10) + 500, renewalDate: at(375)))
        notification(
            "DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", uuid: Self.uuid(2, 3), signed: at(20) + 1000,
            renewal: TestPayloads.renewalInfo(
                originalTransactionId: otid, appTransactionId: app, autoRenewProductId: monthly, productId: yearly,
                signedDate: at(20) + 500, renewalDate: at(375)))
        customers.append(
            Customer(
                appTransactionId: app, title: "upgrade monthly -> yearly at once; downgrade back, effective at the next renewal",
                moments: [("before the upgrade", at(5)), ("after the upgrade", at(15)), ("after the downgrade request", at(25))]))
    }

    /// A lifetime unlock refunded, then the refund reversed.
    mutating func refundAndReversal() {
        let app = "704100000000000003"
        func lifetime(signed: Int64, revoked: Int64? = nil) -> JSONValue {
            TestPayloads.transaction(
                transactionId: "2000000300000001", appTransactionId: app, productId: "com.example.lifetime", type: "Non-Consumable",
                purchaseDate: at(0), expiresDate: nil, signedDate: signed, revocationDate: revoked,
                revocationType: revoked == nil ? nil : "REFUND_FULL", revocationReason: revoked == nil ? nil : 0, price: 49_990)
        }
        notification("ONE_TIME_CHARGE", uuid: Self.uuid(3, 1), signed: at(0) + 1000, transaction: lifetime(signed: at(0) + 500))
        notification("REFUND", uuid: Self.uuid(3, 2), signed: at(5) + 1000, transaction: lifetime(signed: at(5) + 500, revoked: at(5)))
        notification("REFUND_REVERSED", uuid: Self.uuid(3, 3), signed: at(8) + 1000, transaction: lifetime(signed: at(8) + 500))
        customers.append(
            Customer(
                appTransactionId: app,
                title: "lifetime unlock refunded, then the refund reversed (the later signedDate wins, whatever the order)",
                moments: [("after purchase", at(1)), ("after the reversal", at(9))]))
    }

    /// A subscription shared through Family Sharing, revoked when the family member left.
    mutating func familyRevoke() {
        let app = "704100000000000004", otid = "2000000400000001", yearly = "com.example.pro.yearly"
        func tx(signed: Int64, revoked: Int64? = nil) -> JSONValue {
            TestPayloads.transaction(
                transactionId: "2000000400000002", originalTransactionId: otid, appTransactionId: app, productId: yearly,
                purchaseDate: at(0), expiresDate: at(365), signedDate: signed, revocationDate: revoked,
                revocationType: revoked == nil ? nil : "FAMILY_REVOKE", inAppOwnershipType: "FAMILY_SHARED",
                subscriptionGroupIdentifier: "21000001")
        }
        notification("SUBSCRIBED", "INITIAL_BUY", uuid: Self.uuid(4, 1), signed: at(0) + 1000, transaction: tx(signed: at(0) + 500))
        notification("REVOKE", uuid: Self.uuid(4, 2), signed: at(40) + 1000, transaction: tx(signed: at(40) + 500, revoked: at(40)))
        customers.append(
            Customer(
                appTransactionId: app, title: "family-shared yearly subscription, revoked by FAMILY_REVOKE",
                moments: [("while shared", at(10)), ("after the revoke", at(41))]))
    }

    /// Coins bought twice; the second purchase partly refunded (rounded half up).
    mutating func coins() {
        let app = "704100000000000005"
        func coins(_ id: String, quantity: Int64, purchase: Int64, signed: Int64, revoked: Int64? = nil, percentage: Int64? = nil)
            -> JSONValue
        {
            TestPayloads.transaction(
                transactionId: id, appTransactionId: app, productId: "com.example.coins.100", type: "Consumable",
                purchaseDate: purchase, expiresDate: nil, signedDate: signed, quantity: quantity, revocationDate: revoked,
                revocationType: revoked == nil ? nil : "REFUND_PRORATED", revocationPercentage: percentage,
                revocationReason: revoked == nil ? nil : 1, price: 990)
        }
        notification(
            "ONE_TIME_CHARGE", uuid: Self.uuid(5, 1), signed: at(0) + 1000,
            transaction: coins("2000000500000001", quantity: 2, purchase: at(0), signed: at(0) + 500))
        notification(
            "ONE_TIME_CHARGE", uuid: Self.uuid(5, 2), signed: at(1) + 1000,
            transaction: coins("2000000500000002", quantity: 1, purchase: at(1), signed: at(1) + 500))
        notification(
            "CONSUMPTION_REQUEST", uuid: Self.uuid(5, 3), signed: at(3) + 1000,
            transaction: coins("2000000500000002", quantity: 1, purchase: at(1), signed: at(3) + 500))
        notification(
            "REFUND", uuid: Self.uuid(5, 4), signed: at(4) + 1000,
            transaction: coins("2000000500000002", quantity: 1, purchase: at(1), signed: at(4) + 500, revoked: at(4), percentage: 50_500))
        customers.append(
            Customer(
                appTransactionId: app, title: "coins: 2 x 100 then 1 x 100; the second refunded 50.5% (50.5 coins, rounded half up to 51)",
                moments: [("before the refund", at(2)), ("after the refund", at(5))]))
    }

    /// Weekly passes that stack, the last one shrunk by a prorated refund.
    mutating func passes() {
        let app = "704100000000000006"
        func pass(_ id: String, purchase: Int64, signed: Int64, revoked: Int64? = nil) -> JSONValue {
            TestPayloads.transaction(
                transactionId: id, appTransactionId: app, productId: "com.example.pass.week", type: "Non-Renewing Subscription",
                purchaseDate: purchase, expiresDate: nil, signedDate: signed, revocationDate: revoked,
                revocationType: revoked == nil ? nil : "REFUND_PRORATED", revocationPercentage: revoked == nil ? nil : 50_000,
                revocationReason: revoked == nil ? nil : 0, price: 2_990)
        }
        // A Get Transaction History page with the first two passes.
        lines.append(
            TestPayloads.body(signedTransactions: [
                sign(pass("2000000600000001", purchase: at(0), signed: at(0) + 500)),
                sign(pass("2000000600000002", purchase: at(2), signed: at(2) + 500)),
            ]))
        notification(
            "ONE_TIME_CHARGE", uuid: Self.uuid(6, 1), signed: at(20) + 1000,
            transaction: pass("2000000600000003", purchase: at(20), signed: at(20) + 500))
        notification(
            "REFUND", uuid: Self.uuid(6, 2), signed: at(22) + 1000,
            transaction: pass("2000000600000003", purchase: at(20), signed: at(22) + 500, revoked: at(22)))
        customers.append(
            Customer(
                appTransactionId: app, title: "weekly passes: two stacked back to back, a third refunded 50% (lasts 3.5 days)",
                moments: [
                    ("in the second stacked week", at(10)), ("between passes", at(16)), ("in the third pass, before its refund", at(21)),
                    ("after the 50% refund (window shrunk to 3.5 days)", at(23)),
                ]))
    }

    /// A lifetime unlock signed in 2024, before Apple added appTransactionId, and
    /// a 2026 subscription of the same customer: two customers (otid:... and the
    /// appTransactionId) until the App Store Server API re-signs the old unlock with
    /// its appTransactionId, which links them (specification section 5).
    mutating func legacyWithoutAppTransactionId() {
        let app = "704100000000000007", unlock = "1000000700000001", otid = "2000000700000001"
        func lifetime(app: String?, signed: Int64) -> JSONValue {
            TestPayloads.transaction(
                transactionId: unlock, originalTransactionId: unlock, appTransactionId: app, productId: "com.example.lifetime",
                type: "Non-Consumable", purchaseDate: at(0) - 700 * Self.day, expiresDate: nil, signedDate: signed, price: 49_990)
        }
        // The device's 2024 receipt data: no appTransactionId.
        lines.append(TestPayloads.body(signedTransactionInfo: sign(lifetime(app: nil, signed: at(0) - 700 * Self.day + 500))))
        notification(
            "SUBSCRIBED", "INITIAL_BUY", uuid: Self.uuid(7, 1), signed: at(0) + 1000,
            transaction: TestPayloads.transaction(
                transactionId: otid, originalTransactionId: otid, appTransactionId: app, productId: "com.example.pro.monthly",
                purchaseDate: at(0), expiresDate: at(30), signedDate: at(0) + 500, subscriptionGroupIdentifier: "21000001"))
        // Get Transaction History today: the unlock re-signed, now carrying appTransactionId.
        lines.append(TestPayloads.body(signedTransactions: [sign(lifetime(app: app, signed: at(1)))], environment: "Production"))
        customers.append(
            Customer(
                appTransactionId: app,
                title: "a 2024 lifetime unlock (signed before appTransactionId existed) joins this customer's 2026 subscription once a re-signed copy links them",
                moments: [("while subscribed", at(10)), ("after the subscription ended: the unlock still grants pro", at(40))]))
        customers.append(
            Customer(
                appTransactionId: "otid:" + unlock, title: "the old key answers as an alias of the customer it merged into",
                moments: [("today", at(40))]))
    }

    /// App Review buys with a sandbox account in the production app: Sandbox data
    /// beside the production data, in one database (environment ["Production", "Sandbox"]).
    mutating func appReviewSandboxPurchase() {
        let app = "704100000000000008", otid = "2000000800000001"
        let payload = TestPayloads.notification(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: Self.uuid(8, 1), signedDate: at(3) + 1000,
            signedTransactionInfo: sign(
                TestPayloads.transaction(
                    transactionId: otid, originalTransactionId: otid, appTransactionId: app, productId: "com.example.pro.yearly",
                    purchaseDate: at(3), expiresDate: at(3) + Self.hour, signedDate: at(3) + 500, subscriptionGroupIdentifier: "21000001"),
                sandbox: true))
        lines.append(TestPayloads.body(signedPayload: sign(payload, sandbox: true)))
        customers.append(
            Customer(
                appTransactionId: app,
                title: "App Review's purchase with a sandbox account in the production app (a sandbox year lasts an hour)",
                moments: [("during the review", at(3) + 10 * 60_000), ("after it", at(4))]))
    }
}
