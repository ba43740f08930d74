import Dispatch
import EntitlementCore
import Entitlements
import Foundation
import TestPKI

/// The subscription histories the benchmark is made of.
///
/// Customer `c` holds one monthly auto-renewable subscription. Its history has
/// `eventsPerCustomer` notifications, each carrying a `signedTransactionInfo` and a
/// `signedRenewalInfo` (so three JWS, three signatures): `SUBSCRIBED`/`INITIAL_BUY`,
/// then `DID_RENEW` once a month, and last a `DID_CHANGE_RENEWAL_STATUS`/
/// `AUTO_RENEW_DISABLED` (with the latest transaction re-signed). The log order is by
/// month: every customer's first notification, then every customer's second, ...
struct HistoryPlan: Sendable {
    var customers: Int
    var eventsPerCustomer: Int
    var total: Int
    /// Log order: by month (every customer's first notification, then every second, ...)
    /// or, with `customerMajor`, one customer's whole history after another.
    var customerMajor: Bool
    /// The App Store environment the payloads are signed for.
    var environment: String

    init(total: Int, customers: Int, customerMajor: Bool = false, environment: String = TestPayloads.environment) {
        self.total = total
        self.customers = max(1, customers)
        self.eventsPerCustomer = max(1, (total + self.customers - 1) / self.customers)
        self.customerMajor = customerMajor
        self.environment = environment
    }

    /// How many customers the log's `total` notifications reach.
    var customersPresent: Int {
        customerMajor ? (total + eventsPerCustomer - 1) / eventsPerCustomer : min(customers, total)
    }

    /// The customer and its event number of the `index`-th notification of the log.
    func position(_ index: Int) -> (customer: Int, event: Int) {
        customerMajor ? (index / eventsPerCustomer, index % eventsPerCustomer) : (index % customers, index / customers)
    }

    static let productId = "com.example.pro.monthly"
    static let groupId = "21000001"

    static func appTransactionId(_ customer: Int) -> String { "704" + padded(customer, 15) }
    static func originalTransactionId(_ customer: Int) -> String { "2000" + padded(customer, 12) }
    static func transactionId(_ customer: Int, purchase: Int) -> String {
        purchase == 0 ? originalTransactionId(customer) : "3" + padded(purchase, 3) + padded(customer, 12)
    }
    static func appAccountToken(_ customer: Int) -> String {
        "7e3f0000-0000-4000-8000-" + paddedHex(customer, 12)
    }

    static let month: Int64 = 30 * 86_400_000

    /// The dates of customer `c`'s `k`-th notification: the purchase its transaction is
    /// (the one before for the last, auto-renew-disabled notification), its
    /// `purchaseDate`, and the `signedDate` of the notification and its payloads (a minute
    /// after the purchase; ten days after it for the last).
    func dates(customer c: Int, event k: Int) -> (purchase: Int, purchaseDate: Int64, signedDate: Int64) {
        let last = k == eventsPerCustomer - 1 && eventsPerCustomer > 2
        let purchase = last ? k - 1 : k
        let purchaseDate = TestPayloads.january2025 + Int64(purchase) * Self.month + Int64(c % 86_400) * 1_000
        return (purchase, purchaseDate, last ? purchaseDate + 10 * 86_400_000 : purchaseDate + 60_000)
    }

    /// When the notifications `indexes` of the log arrive together, as Apple sends
    /// them: a second after the latest of them was signed. Every renewal then arrives
    /// within its period (before the expiry it moves), as in real traffic.
    func receivedAt(_ indexes: Range<Int>) -> Int64 {
        var latest = TestPayloads.january2025
        for index in indexes {
            let (c, k) = position(index)
            latest = max(latest, dates(customer: c, event: k).signedDate)
        }
        return latest + 1_000
    }

    /// The payloads of one notification: the transaction, the renewal info, and a
    /// function that makes the notification from the two nested JWS.
    /// With `legacy`, the transaction and renewal info carry no appTransactionId
    /// (data signed before Apple added it).
    func payloads(customer c: Int, event k: Int, legacy: Bool = false) -> (transaction: JSONValue, renewal: JSONValue, notification: (String, String) -> JSONValue) {
        let (purchase, purchaseDate, signedDate) = dates(customer: c, event: k)
        let last = purchase != k
        let expires = purchaseDate + Self.month
        let transaction = TestPayloads.transaction(
            transactionId: Self.transactionId(c, purchase: purchase),
            originalTransactionId: Self.originalTransactionId(c),
            appTransactionId: legacy ? nil : Self.appTransactionId(c),
            productId: Self.productId,
            purchaseDate: purchaseDate,
            originalPurchaseDate: TestPayloads.january2025 + Int64(c % 86_400) * 1_000,
            expiresDate: expires,
            signedDate: signedDate,
            appAccountToken: Self.appAccountToken(c),
            subscriptionGroupIdentifier: Self.groupId,
            environment: environment,
            webOrderLineItemId: "6000" + padded(purchase, 3) + padded(c, 12),
            transactionReason: purchase == 0 ? "PURCHASE" : "RENEWAL")
        let renewal = TestPayloads.renewalInfo(
            originalTransactionId: Self.originalTransactionId(c),
            appTransactionId: legacy ? nil : Self.appTransactionId(c),
            autoRenewProductId: Self.productId,
            productId: Self.productId,
            autoRenewStatus: last ? 0 : 1,
            signedDate: signedDate,
            environment: environment,
            recentSubscriptionStartDate: TestPayloads.january2025 + Int64(c % 86_400) * 1_000,
            renewalDate: expires,
            appAccountToken: Self.appAccountToken(c))
        let (type, subtype): (String, String?) =
            k == 0 ? ("SUBSCRIBED", "INITIAL_BUY") : last ? ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED") : ("DID_RENEW", nil)
        let uuid = "00000000-0000-4000-8000-" + paddedHex(c &* 64 &+ k, 12)
        return (
            transaction, renewal,
            { transactionJWS, renewalJWS in
                TestPayloads.notification(
                    type: type, subtype: subtype, uuid: uuid, signedDate: signedDate, environment: environment,
                    signedTransactionInfo: transactionJWS, signedRenewalInfo: renewalJWS, status: 1)
            }
        )
    }
}

/// One signed notification of the corpus, with its nested JWS kept apart too.
struct SignedNotificationSample: Sendable {
    var notification: String
    var transaction: String
    var renewal: String
    /// The body Apple POSTs: `{"signedPayload":"..."}`.
    var body: String
}

/// The signed corpus: a throwaway Apple-shaped PKI and notifications signed by its leaf.
struct Corpus: Sendable {
    let pki: TestPKI
    let plan: HistoryPlan
    let samples: [SignedNotificationSample]

    /// Signs `count` notifications (three signatures each), over all cores.
    init(count: Int, customers: Int) {
        pki = TestPKI()
        plan = HistoryPlan(total: count, customers: customers)
        let lanes = max(1, min(Machine.cores, count / 64 + 1))
        let plan = plan
        let pki = pki
        let parts = UnsafeSendableBox([[SignedNotificationSample]](repeating: [], count: lanes))
        DispatchQueue.concurrentPerform(iterations: lanes) { lane in
            var local: [SignedNotificationSample] = []
            var index = lane
            while index < count {
                let (c, k) = plan.position(index)
                let payloads = plan.payloads(customer: c, event: k)
                let transaction = pki.sign(payloads.transaction)
                let renewal = pki.sign(payloads.renewal)
                let notification = pki.sign(payloads.notification(transaction, renewal))
                local.append(
                    SignedNotificationSample(
                        notification: notification, transaction: transaction, renewal: renewal,
                        body: TestPayloads.body(signedPayload: notification)))
                index += lanes
            }
            parts.set(lane, local)
        }
        var samples: [SignedNotificationSample] = []
        samples.reserveCapacity(count)
        for index in 0..<count { samples.append(parts.value[index % lanes][index / lanes]) }
        self.samples = samples
    }

    /// The engine configuration that trusts this corpus's root.
    var configuration: EngineConfiguration {
        EngineConfiguration(
            bundleId: TestPayloads.bundleId, appAppleId: TestPayloads.appAppleId, environment: .sandbox,
            rootCertificatesDER: [pki.rootDER], rules: BenchRules.rules)
    }

    /// Writes the notification bodies as NDJSON, and the root certificate as DER.
    func write(ndjson: String, rootDER: String) throws {
        var text = ""
        text.reserveCapacity(samples.count * (samples.first?.body.utf8.count ?? 0 + 1))
        for sample in samples {
            text += sample.body
            text += "\n"
        }
        try Data(text.utf8).write(to: URL(fileURLWithPath: ndjson))
        try Data(pki.rootDER).write(to: URL(fileURLWithPath: rootDER))
    }
}

/// The business rules the benchmark runs under.
enum BenchRules {
    static let rules = Rules(
        version: "bench-1",
        products: [
            HistoryPlan.productId: ProductRule(entitlements: ["pro"]),
            "com.example.pro.yearly": ProductRule(entitlements: ["pro"]),
            "com.example.coins.100": ProductRule(currency: "coins", units: 100),
        ])
    static var rulesJSON: String { JSONWriter.string(rules.canonicalJSON) }
}

/// Per-lane results written from `concurrentPerform` lanes, each lane its own slot.
final class UnsafeSendableBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var value: T
    init(_ value: T) { self.value = value }
    func set<E>(_ index: Int, _ element: E) where T == [E] {
        lock.lock()
        value[index] = element
        lock.unlock()
    }
}
