import EntitlementCore
import Entitlements
import Foundation
import TestPKI

/// The histories of the big database of `entitlements-bench scale`: a mix of what a
/// large app receives, one notification per event, in month order (every customer's
/// first notification, then every customer's second, ...), as Apple sends them.
///
/// Customer `c` is, by `c % 20`:
/// - 0: a customer whose data merges: its first half of notifications carries no
///   `appTransactionId` (an `otid:` customer until the first that does);
/// - 1: a subscriber refunded last: its last notification is a `REFUND` of the
///   latest renewal;
/// - 2: a subscriber who upgrades half-way to the yearly product
///   (`DID_CHANGE_RENEWAL_PREF`/`UPGRADE`), then turns auto-renewal off and on;
/// - 3 and 4: a buyer of consumables, one `ONE_TIME_CHARGE` a month (two JWS, no
///   renewal info);
/// - otherwise: a monthly subscriber, `SUBSCRIBED`/`INITIAL_BUY`, `DID_RENEW` every
///   month, last `DID_CHANGE_RENEWAL_STATUS`/`AUTO_RENEW_DISABLED` with that month's
///   transaction: its expiry falls due after the last notification is received.
///
/// Notifications past the plan (`event >= eventsPerCustomer`, the further ingest
/// measured on the built database) are renewals (or consumables) of later months.
struct ScalePlan: Sendable {
    var events: Int
    var customers: Int
    var eventsPerCustomer: Int

    init(events: Int, customers: Int) {
        self.events = events
        self.customers = max(1, min(customers, events))
        eventsPerCustomer = max(1, (events + self.customers - 1) / self.customers)
    }

    static let environment = "Production"
    static let yearly = "com.example.pro.yearly"
    static let consumable = "com.example.coins.100"
    static let month: Int64 = 30 * 86_400_000

    enum Kind { case merging, refunded, upgrading, consumables, subscriber }

    static func kind(_ customer: Int) -> Kind {
        switch customer % 20 {
        case 0: return .merging
        case 1: return .refunded
        case 2: return .upgrading
        case 3, 4: return .consumables
        default: return .subscriber
        }
    }

    /// The customer and its event number of the `index`-th notification of the log.
    func position(_ index: Int) -> (customer: Int, event: Int) { (index % customers, index / customers) }

    /// The moment every notification of month `event` has been received by.
    /// (Every notification of a month is signed within its first day and two minutes.)
    static func receivedBy(event: Int) -> Int64 { TestPayloads.january2025 + Int64(event) * month + 86_400_000 + 300_000 }

    /// The end of the plan's history: every notification received.
    var end: Int64 { Self.receivedBy(event: eventsPerCustomer) }

    /// The three payloads of customer `c`'s notification `k`: the transaction, the
    /// renewal info (none for a consumable) and the notification made from their JWS.
    func payloads(customer c: Int, event k: Int) -> (transaction: JSONValue, renewal: JSONValue?, notification: (String, String?) -> JSONValue) {
        let kind = Self.kind(c)
        let plannedLast = eventsPerCustomer - 1
        let last = k == plannedLast && eventsPerCustomer > 2
        let upgradeAt = max(1, eventsPerCustomer / 2)
        let second = Int64(c % 86_400) * 1_000
        let legacy = kind == .merging && k < max(1, eventsPerCustomer / 2) && eventsPerCustomer > 1
        let uuid = "00000000-0000-4000-8000-" + paddedHex(c &* 1024 &+ k, 12)
        let firstDate = TestPayloads.january2025 + second

        if kind == .consumables {
            let purchaseDate = firstDate + Int64(k) * Self.month
            let id = "5" + padded(k, 3) + padded(c, 12)
            let transaction = TestPayloads.transaction(
                transactionId: id, originalTransactionId: id, appTransactionId: HistoryPlan.appTransactionId(c),
                productId: Self.consumable, type: "Consumable", purchaseDate: purchaseDate, originalPurchaseDate: purchaseDate,
                expiresDate: nil, signedDate: purchaseDate + 1_000, appAccountToken: HistoryPlan.appAccountToken(c),
                environment: Self.environment, price: 990)
            return (
                transaction, JSONValue?.none,
                { transactionJWS, _ in
                    TestPayloads.notification(
                        type: "ONE_TIME_CHARGE", uuid: uuid, signedDate: purchaseDate + 60_000, environment: Self.environment,
                        signedTransactionInfo: transactionJWS)
                }
            )
        }

        // Subscriptions: which purchase the notification carries, and of which product.
        let upgraded = kind == .upgrading && k >= upgradeAt && eventsPerCustomer > 1
        let refund = kind == .refunded && last
        let purchase = upgraded ? upgradeAt : (refund ? k - 1 : k)
        let product = upgraded ? Self.yearly : HistoryPlan.productId
        let purchaseDate = firstDate + Int64(purchase) * Self.month
        let expires = purchaseDate + (upgraded ? 365 * 86_400_000 : Self.month)
        // A cancellation, a refund or a change of an upgraded plan comes two minutes into its month.
        let signedDate = last || (upgraded && k > upgradeAt) ? firstDate + Int64(k) * Self.month + 120_000 : purchaseDate + 60_000
        let autoRenew: Int64 = (kind == .subscriber || kind == .merging) && last ? 0 : (upgraded && (k - upgradeAt) % 2 == 1 ? 0 : 1)
        let transaction = TestPayloads.transaction(
            transactionId: HistoryPlan.transactionId(c, purchase: purchase), originalTransactionId: HistoryPlan.originalTransactionId(c),
            appTransactionId: legacy ? nil : HistoryPlan.appTransactionId(c), productId: product, purchaseDate: purchaseDate,
            originalPurchaseDate: firstDate, expiresDate: expires, signedDate: signedDate,
            revocationDate: refund ? signedDate : nil, revocationType: refund ? "REFUND_FULL" : nil, revocationReason: refund ? 0 : nil,
            appAccountToken: HistoryPlan.appAccountToken(c), subscriptionGroupIdentifier: HistoryPlan.groupId,
            environment: Self.environment, webOrderLineItemId: "6000" + padded(purchase, 3) + padded(c, 12),
            price: upgraded ? 99_990 : 9_990,
            transactionReason: purchase == 0 ? "PURCHASE" : (upgraded && purchase == upgradeAt ? "PURCHASE" : "RENEWAL"))
        let renewal = TestPayloads.renewalInfo(
            originalTransactionId: HistoryPlan.originalTransactionId(c), appTransactionId: legacy ? nil : HistoryPlan.appTransactionId(c),
            autoRenewProductId: product, productId: product, autoRenewStatus: autoRenew, signedDate: signedDate,
            environment: Self.environment, recentSubscriptionStartDate: firstDate, renewalDate: expires,
            appAccountToken: HistoryPlan.appAccountToken(c))
        let (type, subtype): (String, String?)
        if k == 0 {
            (type, subtype) = ("SUBSCRIBED", "INITIAL_BUY")
        } else if refund {
            (type, subtype) = ("REFUND", nil)
        } else if upgraded && k == upgradeAt {
            (type, subtype) = ("DID_CHANGE_RENEWAL_PREF", "UPGRADE")
        } else if upgraded {
            (type, subtype) = ("DID_CHANGE_RENEWAL_STATUS", autoRenew == 0 ? "AUTO_RENEW_DISABLED" : "AUTO_RENEW_ENABLED")
        } else if last && kind != .refunded {
            (type, subtype) = ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED")
        } else {
            (type, subtype) = ("DID_RENEW", nil)
        }
        return (
            transaction, refund ? JSONValue?.none : JSONValue?.some(renewal),
            { transactionJWS, renewalJWS in
                TestPayloads.notification(
                    type: type, subtype: subtype, uuid: uuid, signedDate: signedDate, environment: Self.environment,
                    signedTransactionInfo: transactionJWS, signedRenewalInfo: renewalJWS, status: refund ? nil : 1)
            }
        )
    }

    /// Customer `c`'s notification `k` signed by `pki`: the body Apple POSTs.
    func body(customer c: Int, event k: Int, pki: TestPKI) -> String {
        let payloads = payloads(customer: c, event: k)
        let transaction = pki.sign(payloads.transaction)
        let renewal = payloads.renewal.map { pki.sign($0) }
        return Self.body(signedPayload: pki.sign(payloads.notification(transaction, renewal)))
    }

    /// `TestPayloads.body(signedPayload:)` written directly: a JWS is base64url segments and
    /// dots, nothing a JSON string escapes, so the body is its text between the quotes.
    static func body(signedPayload jws: String) -> String {
        "{\"signedPayload\":\"" + jws + "\"}"
    }

    /// The bodies of the log's notifications `range`, signed over every core.
    func bodies(_ range: Range<Int>, pki: TestPKI) -> [InputBytes] {
        signed(range.map { position($0) }, pki: pki)
    }

    /// The bodies of the given notifications, signed over every core.
    func signed(_ positions: [(customer: Int, event: Int)], pki: TestPKI) -> [InputBytes] {
        let lanes = max(1, min(Machine.cores, positions.count / 16 + 1))
        let parts = UnsafeSendableBox([[InputBytes]](repeating: [], count: lanes))
        let plan = self
        DispatchQueue.concurrentPerform(iterations: lanes) { lane in
            var local: [InputBytes] = []
            var index = lane
            while index < positions.count {
                local.append(InputBytes(plan.body(customer: positions[index].customer, event: positions[index].event, pki: pki)))
                index += lanes
            }
            parts.set(lane, local)
        }
        var out: [InputBytes] = []
        out.reserveCapacity(positions.count)
        for index in 0..<positions.count { out.append(parts.value[index % lanes][index / lanes]) }
        return out
    }
}
