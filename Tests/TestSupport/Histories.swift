import EntitlementCore
import Foundation
import TestPKI

/// What one input item must become.
package enum Expected: Hashable {
    /// A verified item, stored once under this identity (specification section 3).
    case event(identity: String)
    /// A rejected item, quarantined with this code.
    case rejected(code: String)
}

/// One NDJSON line and what each of its items must become.
package struct InputLine {
    package var text: String
    package var items: [Expected]
}

/// A generated, signed, realistic mix of App Store inputs for many customers:
/// subscriptions that renew, lapse into billing retry and get refunded, consumables,
/// non-consumables, week passes; as notifications (with nested JWS), transaction and
/// renewal-info bodies, history pages and bare JWS; with repeated lines (duplicates) and
/// rejected ones (garbage, forged signatures, another app, another environment).
///
/// The same signed object always travels as the same JWS string, so the stored log does
/// not depend on which copy of an object arrives first.
package struct History {
    package var lines: [InputLine]
    /// Every identity the log must end up holding.
    package var identities: Set<String> { Set(lines.flatMap(\.items).compactMap { if case .event(let i) = $0 { return i } else { return nil } }) }
    /// How many distinct rejected lines there are (each quarantined once).
    package var distinctRejectedLines: Int {
        Set(lines.filter { $0.items.contains { if case .rejected = $0 { return true } else { return false } } }.map(\.text)).count
    }
    /// Every customer key (appTransactionId) the history talks about.
    package var customers: [String]

    /// - Parameters:
    ///   - lines: about how many lines to make.
    ///   - seed: the generator's seed (same seed, same history up to ECDSA's random signatures).
    package static func generate(lines target: Int, seed: UInt64, pki testPKI: TestPKI = Scenario.pki) -> History {
        let pki = Signer(testPKI)
        var rng = SplitMix64(seed: seed)
        var lines: [InputLine] = []
        var customers: [String] = []
        var rejectedSerial = 0
        let day: Int64 = 86_400_000
        let base = TestPayloads.january2025
        var customer = 0

        func uuid(_ rng: inout SplitMix64) -> String {
            let a = rng.next(), b = rng.next()
            let hex = String(format: "%016llx%016llx", a, b)
            let c = Array(hex)
            return String(c[0..<8]) + "-" + String(c[8..<12]) + "-4" + String(c[13..<16]) + "-8" + String(c[17..<20]) + "-" + String(c[20..<32])
        }

        func rejectedLine(_ rng: inout SplitMix64) -> InputLine {
            rejectedSerial += 1
            let serial = rejectedSerial
            switch rng.int(0...4) {
            case 0:
                return InputLine(text: "this is not an App Store input #\(serial) {", items: [.rejected(code: "MALFORMED_INPUT")])
            case 1:
                let jws = pki.sign(TestPayloads.transaction(transactionId: "9\(serial)", bundleId: "com.attacker.app"))
                return InputLine(text: TestPayloads.body(signedTransactionInfo: jws), items: [.rejected(code: "INVALID_APP_IDENTIFIER")])
            case 2:
                let jws = pki.sign(TestPayloads.transaction(transactionId: "8\(serial)", environment: "Production"))
                return InputLine(text: TestPayloads.body(signedTransactionInfo: jws), items: [.rejected(code: "INVALID_ENVIRONMENT")])
            case 3:
                // A genuine signature over another payload: the payload was altered after signing.
                let genuine = pki.sign(TestPayloads.transaction(transactionId: "7\(serial)", productId: "com.example.pro.monthly"))
                let parts = genuine.split(separator: ".").map(String.init)
                let forgedPayload = Base64Encoding.url(JSONWriter.string(
                    TestPayloads.transaction(transactionId: "7\(serial)", productId: "com.example.lifetime", type: "Non-Consumable", expiresDate: nil)))
                let forged = parts[0] + "." + forgedPayload + "." + parts[2]
                return InputLine(text: TestPayloads.body(signedTransactionInfo: forged), items: [.rejected(code: "VERIFICATION_FAILURE")])
            default:
                let other = Scenario.unrelatedPKI
                let jws = other.sign(TestPayloads.transaction(transactionId: "6\(serial)"))
                return InputLine(text: jws, items: [.rejected(code: "INVALID_CHAIN")])
            }
        }

        while lines.count < target {
            let index = customer
            customer += 1
            let app = String(format: "7040%014d", index)
            let original = String(format: "20%014d", index * 100)
            customers.append(app)
            let start = base + Int64(index % 97) * day / 3
            let token: String? = index % 5 == 0 ? uuid(&rng).lowercased() : nil
            var mine: [InputLine] = []

            switch index % 4 {
            case 0, 1:
                // An auto-renewable subscription: initial buy, renewals, maybe billing retry, maybe a refund.
                let product = index % 4 == 0 ? "com.example.pro.monthly" : "com.example.pro.yearly"
                let period: Int64 = index % 4 == 0 ? 30 * day : 365 * day
                let renewals = rng.int(0...5)
                var transactions: [(id: String, jws: String, payload: JSONValue, purchase: Int64)] = []
                for k in 0...renewals {
                    let id = String(format: "20%014d", index * 100 + k)
                    let purchase = start + Int64(k) * period
                    let payload = TestPayloads.transaction(
                        transactionId: id, originalTransactionId: original, appTransactionId: app, productId: product,
                        purchaseDate: purchase, originalPurchaseDate: start, expiresDate: purchase + period,
                        appAccountToken: token, subscriptionGroupIdentifier: "21000001", webOrderLineItemId: "\(id)9")
                    transactions.append((id, pki.sign(payload), payload, purchase))
                }
                for (k, t) in transactions.enumerated() {
                    let renewalSigned = t.purchase + 1
                    let renewal = pki.sign(TestPayloads.renewalInfo(
                        originalTransactionId: original, appTransactionId: app, autoRenewProductId: product, productId: product,
                        signedDate: renewalSigned, recentSubscriptionStartDate: start, renewalDate: t.purchase + period,
                        appAccountToken: token))
                    let renewalIdentity = "renewalInfo:\(original):\(renewalSigned)"
                    let transactionIdentity = "transaction:\(t.id):\(t.purchase)"
                    switch rng.int(0...3) {
                    case 0:
                        let body = JSONWriter.string(["signedTransactionInfo": .string(t.jws), "signedRenewalInfo": .string(renewal)])
                        mine.append(InputLine(text: body, items: [.event(identity: transactionIdentity), .event(identity: renewalIdentity)]))
                    case 1:
                        let id = uuid(&rng)
                        let note = pki.sign(TestPayloads.notification(
                            type: k == 0 ? "SUBSCRIBED" : "DID_RENEW", subtype: k == 0 ? "INITIAL_BUY" : nil, uuid: id,
                            signedDate: t.purchase + 2, signedTransactionInfo: t.jws, signedRenewalInfo: renewal))
                        mine.append(InputLine(text: TestPayloads.body(signedPayload: note), items: [.event(identity: "notification:\(id)")]))
                    case 2:
                        mine.append(InputLine(text: t.jws, items: [.event(identity: transactionIdentity)]))
                    default:
                        let page = transactions[0...k].map(\.jws)
                        let items = transactions[0...k].map { Expected.event(identity: "transaction:\($0.id):\($0.purchase)") }
                        mine.append(InputLine(text: TestPayloads.body(signedTransactions: page, revision: "r\(k)"), items: items))
                    }
                }
                let last = transactions[transactions.count - 1]
                if rng.chance(0.3) {
                    // Billing retry after the last period, with a grace period.
                    let expiry = last.purchase + period
                    let signed = expiry + 3
                    let renewal = pki.sign(TestPayloads.renewalInfo(
                        originalTransactionId: original, appTransactionId: app, autoRenewProductId: product, productId: product,
                        isInBillingRetryPeriod: true, expirationIntent: 2, gracePeriodExpiresDate: expiry + 16 * day,
                        signedDate: signed, recentSubscriptionStartDate: start, renewalDate: expiry))
                    mine.append(InputLine(text: TestPayloads.body(signedRenewalInfo: renewal), items: [.event(identity: "renewalInfo:\(original):\(signed)")]))
                }
                if rng.chance(0.2) {
                    // A refund of the last period.
                    let revoked = last.purchase + 5 * day
                    let payload = TestPayloads.transaction(
                        transactionId: last.id, originalTransactionId: original, appTransactionId: app, productId: product,
                        purchaseDate: last.purchase, originalPurchaseDate: start, expiresDate: last.purchase + period,
                        signedDate: revoked, revocationDate: revoked, revocationType: "REFUND_FULL", revocationReason: 0,
                        appAccountToken: token, subscriptionGroupIdentifier: "21000001", webOrderLineItemId: "\(last.id)9")
                    let id = uuid(&rng)
                    let note = pki.sign(TestPayloads.notification(
                        type: "REFUND", uuid: id, signedDate: revoked + 1, signedTransactionInfo: pki.sign(payload)))
                    mine.append(InputLine(text: TestPayloads.body(signedPayload: note), items: [.event(identity: "notification:\(id)")]))
                }
            case 2:
                // Consumables, one of them partly refunded.
                let count = rng.int(1...4)
                for k in 0..<count {
                    let id = String(format: "30%014d", index * 100 + k)
                    let purchase = start + Int64(k) * day
                    let quantity = Int64(rng.int(1...3))
                    var payload = TestPayloads.transaction(
                        transactionId: id, appTransactionId: app, productId: "com.example.coins.100", type: "Consumable",
                        purchaseDate: purchase, expiresDate: nil, quantity: quantity, appAccountToken: token)
                    mine.append(InputLine(text: TestPayloads.body(signedTransactionInfo: pki.sign(payload)), items: [.event(identity: "transaction:\(id):\(purchase)")]))
                    if k == 0 && rng.chance(0.3) {
                        let revoked = purchase + day / 2
                        payload = TestPayloads.transaction(
                            transactionId: id, appTransactionId: app, productId: "com.example.coins.100", type: "Consumable",
                            purchaseDate: purchase, expiresDate: nil, signedDate: revoked, quantity: quantity, revocationDate: revoked,
                            revocationType: "REFUND_PRORATED", revocationPercentage: 50_000, revocationReason: 1, appAccountToken: token)
                        mine.append(InputLine(text: pki.sign(payload), items: [.event(identity: "transaction:\(id):\(revoked)")]))
                    }
                }
            default:
                // A non-consumable and week passes.
                let id = String(format: "40%014d", index * 100)
                let payload = TestPayloads.transaction(
                    transactionId: id, appTransactionId: app, productId: "com.example.lifetime", type: "Non-Consumable",
                    purchaseDate: start, expiresDate: nil, appAccountToken: token)
                let note = uuid(&rng)
                let jws = pki.sign(TestPayloads.notification(type: "ONE_TIME_CHARGE", uuid: note, signedDate: start + 1, signedTransactionInfo: pki.sign(payload)))
                mine.append(InputLine(text: TestPayloads.body(signedPayload: jws), items: [.event(identity: "notification:\(note)")]))
                for k in 0..<rng.int(0...2) {
                    let pass = String(format: "40%014d", index * 100 + 1 + k)
                    let purchase = start + Int64(k) * 3 * day
                    let p = TestPayloads.transaction(
                        transactionId: pass, appTransactionId: app, productId: "com.example.pass.week", type: "Non-Renewing Subscription",
                        purchaseDate: purchase, expiresDate: nil)
                    mine.append(InputLine(text: TestPayloads.body(signedTransactionInfo: pki.sign(p)), items: [.event(identity: "transaction:\(pass):\(purchase)")]))
                }
            }
            for line in mine {
                lines.append(line)
                if rng.chance(0.04) { lines.append(rejectedLine(&rng)) }
                if rng.chance(0.05), let earlier = lines.randomElement(using: &rng) { lines.append(earlier) }
            }
        }
        return History(lines: lines, customers: customers)
    }
}

/// Signs like ``TestPKI/sign(_:)`` with the header encoded once (the x5c chain is most of a JWS).
package struct Signer {
    package let pki: TestPKI
    package let encodedHeader: String

    package init(_ pki: TestPKI) {
        self.pki = pki
        encodedHeader = Base64Encoding.url(Array(JSONWriter.string(pki.header()).utf8))
    }

    package func sign(_ payload: JSONValue) -> String {
        let input = encodedHeader + "." + Base64Encoding.url(Array(JSONWriter.string(payload).utf8))
        return input + "." + Base64Encoding.url(pki.signature(over: Array(input.utf8)))
    }
}

