import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestPKI
import TestSupport

/// Apple's 2025–2026 additions through the library, from data signed by the test
/// PKI: a 12-month commitment cancelled, an Advanced Commerce purchase with a SKU
/// refunded and an item without a SKU, a migration, and a rescinded consent.
@Suite(.serialized) struct CommitmentAndCommerceIngestTests {
    static let pki = E2E.pki
    static let app = "704000000000000001"
    static let day: Int64 = 86_400_000
    static let t0 = TestPayloads.january2025

    static var rules: Rules {
        var rules = E2E.rules
        rules.skus = ["SKU-ALPHA": ProductRule(entitlements: ["alpha"]), "SKU-BETA": ProductRule(entitlements: ["beta"])]
        return rules
    }

    static func document(_ text: String, _ number: Int) -> InputBytes { InputBytes(bytes: Array(text.utf8), number: number) }

    static func notification(_ type: String, _ subtype: String? = nil, signed: Int64, transaction: JSONValue? = nil, renewal: JSONValue? = nil) -> String {
        E2E.notification(type, subtype, signed: signed, transaction: transaction, renewal: renewal)
    }

    static func commitmentMonth(_ n: Int64, otid: String = "2000000000007001") -> JSONValue {
        let purchase = t0 + (n - 1) * 30 * day
        return TestPayloads.transaction(
            transactionId: n == 1 ? otid : otid + "\(n)", originalTransactionId: otid, appTransactionId: app,
            purchaseDate: purchase, expiresDate: purchase + 30 * day,
            extra: [
                ("billingPlanType", "MONTHLY"),
                (
                    "commitmentInfo",
                    [
                        "billingPeriodNumber": .int(n), "totalBillingPeriods": 12, "commitmentExpiresDate": .int(t0 + 360 * day),
                        "commitmentPrice": 119_880,
                    ]
                ),
            ])
    }

    static func commitmentRenewal(signed: Int64, commitmentAutoRenew: Int64, otid: String = "2000000000007001") -> JSONValue {
        TestPayloads.renewalInfo(
            originalTransactionId: otid, appTransactionId: app,
            extra: [
                ("signedDate", .int(signed)), ("renewalBillingPlanType", "MONTHLY"), ("renewalPrice", 9990), ("currency", "USD"),
                (
                    "commitmentInfo",
                    [
                        "commitmentAutoRenewProductId": "com.example.pro.monthly", "commitmentAutoRenewStatus": .int(commitmentAutoRenew),
                        "commitmentRenewalBillingPlanType": "MONTHLY", "commitmentRenewalDate": .int(t0 + 360 * day),
                        "commitmentRenewalPrice": 119_880,
                    ]
                ),
            ])
    }

    static func commerceTransaction(_ id: String, otid: String, purchase: Int64, signed: Int64? = nil, items: [JSONValue], previous: String? = nil) -> JSONValue {
        var extra: [(String, JSONValue)] = [
            ("advancedCommerceInfo", ["items": .array(items), "period": "P1M", "requestReferenceId": .string("ref-" + id)])
        ]
        if let previous { extra.append(("previousOriginalTransactionId", .string(previous))) }
        return TestPayloads.transaction(
            transactionId: id, originalTransactionId: otid, appTransactionId: app, productId: "com.example.commerce.generic",
            purchaseDate: purchase, expiresDate: purchase + 30 * day, signedDate: signed, extra: extra)
    }

    static func item(_ sku: String?, revoked: Int64? = nil) -> JSONValue {
        var object = JSONObject([("price", .int(3000))])
        if let sku { object["SKU"] = .string(sku) }
        if let revoked {
            object["revocationDate"] = .int(revoked)
            object["refunds"] = [["refundAmount": 3000, "refundDate": .int(revoked), "refundReason": "OTHER", "refundType": "FULL"]]
        }
        return .object(object)
    }

    @Test("an Advanced Commerce one-time purchase grants through its SKUs: neither its ingest nor a query reports its product")
    func oneTimeChargeIsNotReported() async throws {
        let folder = Scenario.temporaryFolder("commerce-once")
        defer { try? FileManager.default.removeItem(at: folder) }
        let engine = try E2E.engine(rules: Self.rules, path: folder.appendingPathComponent("db.sqlite").path)
        let transaction = TestPayloads.transaction(
            transactionId: "2000000000008501", originalTransactionId: "2000000000008501", appTransactionId: Self.app,
            productId: "com.example.commerce.once", type: "Non-Consumable", purchaseDate: Self.t0, expiresDate: nil,
            extra: [("advancedCommerceInfo", ["items": [Self.item("SKU-ALPHA")], "requestReferenceId": "ref-once"])])
        let text = Self.notification("ONE_TIME_CHARGE", signed: Self.t0, transaction: transaction)
        let results = try await engine.ingest([Self.document(text, 1)])
        #expect(results.map(\.outcome) == [.appended])
        let answer = try await engine.query(.appTransactionId(Self.app), at: Self.t0 + Self.day).json()
        #expect(answer["entitlements"]?["alpha"]?["active"] == .bool(true))
        #expect(engine.takeProductWarnings() == [], "the product grants through its SKU")
        // A purchase of the same product without items is reported: it grants nothing.
        let plain = TestPayloads.transaction(
            transactionId: "2000000000008502", originalTransactionId: "2000000000008502", appTransactionId: Self.app,
            productId: "com.example.commerce.once", type: "Non-Consumable", purchaseDate: Self.t0, expiresDate: nil)
        _ = try await engine.ingest([Self.document(Self.notification("ONE_TIME_CHARGE", signed: Self.t0 + 1, transaction: plain), 1)])
        #expect(engine.takeProductWarnings().contains { $0.hasPrefix("warning: product com.example.commerce.once is not in rules.products") })
    }

    @Test("a query reports the products its answer shows and the rules do not name: subscriptions, then purchases, Advanced Commerce ones left out")
    func queryReportsUnknownProductsOfItsAnswer() async throws {
        let folder = Scenario.temporaryFolder("commerce-query-warnings")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("db.sqlite").path
        let engine = try E2E.engine(rules: Self.rules, path: path)
        let subscription = TestPayloads.transaction(
            transactionId: "2000000000008601", originalTransactionId: "2000000000008601", appTransactionId: Self.app,
            productId: "com.example.unknown.monthly", purchaseDate: Self.t0, expiresDate: Self.t0 + 30 * Self.day)
        let purchase = TestPayloads.transaction(
            transactionId: "2000000000008602", originalTransactionId: "2000000000008602", appTransactionId: Self.app,
            productId: "com.example.unknown.once", type: "Non-Consumable", purchaseDate: Self.t0 + 1, expiresDate: nil)
        let commerce = Self.commerceTransaction("2000000000008603", otid: "2000000000008603", purchase: Self.t0 + 2, items: [Self.item("SKU-ALPHA")])
        let results = try await engine.ingest([
            Self.document(Self.notification("SUBSCRIBED", "INITIAL_BUY", signed: Self.t0, transaction: subscription), 1),
            Self.document(Self.notification("ONE_TIME_CHARGE", signed: Self.t0 + 1, transaction: purchase), 2),
            Self.document(Self.notification("SUBSCRIBED", "INITIAL_BUY", signed: Self.t0 + 2, transaction: commerce), 3),
        ])
        #expect(results.map(\.outcome) == [.appended, .appended, .appended])

        // Another engine on the database has reported nothing yet: its query reports what the answer shows.
        let reader = try E2E.engine(rules: Self.rules, path: path)
        guard case .customer(let view) = try await reader.query(.appTransactionId(Self.app), at: Self.t0 + Self.day) else {
            Issue.record("no customer")
            return
        }
        #expect(view.subscriptions.map(\.productId) == ["com.example.unknown.monthly", "com.example.commerce.generic"])
        #expect(view.purchases.map(\.productId) == ["com.example.unknown.once"])
        #expect(
            reader.takeProductWarnings() == [
                "warning: product com.example.unknown.monthly is not in rules.products: it grants nothing",
                "warning: product com.example.unknown.once is not in rules.products: it grants nothing",
            ])
        _ = try await reader.query(.appTransactionId(Self.app), at: Self.t0 + Self.day)
        #expect(reader.takeProductWarnings() == [], "each product once per engine")
    }

    @Test("signed commitment, Advanced Commerce, migration and rescinded consent: query, lifecycle, warnings, replay and audit")
    func endToEnd() async throws {
        let folder = Scenario.temporaryFolder("commitment-commerce")
        defer { try? FileManager.default.removeItem(at: folder) }
        let engine = try E2E.engine(rules: Self.rules, path: folder.appendingPathComponent("db.sqlite").path)
        let cancelled = Self.t0 + 65 * Self.day
        let refunded = Self.t0 + 10 * Self.day
        let legacy = "2000000000009001"
        let appTransaction = Self.pki.sign(
            TestPayloads.appTransaction(appTransactionId: Self.app, extra: [("receiptCreationDate", .int(Self.t0 + 70 * Self.day))]))
        var texts: [String] = []
        texts.append(Self.notification("SUBSCRIBED", "INITIAL_BUY", signed: Self.t0, transaction: Self.commitmentMonth(1), renewal: Self.commitmentRenewal(signed: Self.t0, commitmentAutoRenew: 1)))
        texts.append(Self.notification("DID_RENEW", signed: Self.t0 + 30 * Self.day, transaction: Self.commitmentMonth(2)))
        texts.append(Self.notification("DID_RENEW", signed: Self.t0 + 60 * Self.day, transaction: Self.commitmentMonth(3)))
        texts.append(Self.notification("DID_CHANGE_RENEWAL_STATUS", signed: cancelled, renewal: Self.commitmentRenewal(signed: cancelled, commitmentAutoRenew: 0)))
        texts.append(Self.notification(
            "SUBSCRIBED", "INITIAL_BUY", signed: Self.t0,
            transaction: Self.commerceTransaction("2000000000008001", otid: "2000000000008001", purchase: Self.t0, items: [Self.item("SKU-ALPHA"), Self.item("SKU-BETA"), Self.item(nil)])))
        texts.append(Self.notification(
            "REFUND", signed: refunded,
            transaction: Self.commerceTransaction(
                "2000000000008001", otid: "2000000000008001", purchase: Self.t0, signed: refunded,
                items: [Self.item("SKU-ALPHA"), Self.item("SKU-BETA", revoked: refunded), Self.item(nil)])))
        // A regular subscription signed without appTransactionId, then migrated.
        texts.append(TestPayloads.body(signedTransactionInfo: Self.pki.sign(TestPayloads.transaction(
            transactionId: legacy, appTransactionId: nil, productId: "com.example.pro.yearly", purchaseDate: Self.t0 - 400 * Self.day,
            expiresDate: Self.t0 - 35 * Self.day))))
        texts.append(Self.notification(
            "MIGRATE", signed: Self.t0 + 40 * Self.day,
            transaction: Self.commerceTransaction("2000000000009101", otid: "2000000000009101", purchase: Self.t0 + 40 * Self.day, items: [Self.item("SKU-ALPHA")], previous: legacy)))
        texts.append(Self.notification("METADATA_UPDATE", signed: Self.t0 + 41 * Self.day, renewal: TestPayloads.renewalInfo(originalTransactionId: "2000000000009101", appTransactionId: Self.app, extra: [("signedDate", .int(Self.t0 + 41 * Self.day))])))
        texts.append(Self.notification("PRICE_CHANGE", signed: Self.t0 + 42 * Self.day, renewal: TestPayloads.renewalInfo(originalTransactionId: "2000000000009101", appTransactionId: Self.app, extra: [("signedDate", .int(Self.t0 + 42 * Self.day))])))
        texts.append(TestPayloads.body(signedPayload: Self.pki.sign(TestPayloads.notification(
            type: "RESCIND_CONSENT", signedDate: Self.t0 + 70 * Self.day, includeData: false,
            appData: TestPayloads.appData(signedAppTransactionInfo: appTransaction)))))
        let results = try await engine.ingest(texts.enumerated().map { Self.document($1, $0 + 1) })
        for result in results { #expect(result.outcome == .appended, "\(result.errorCode ?? "") \(result.errorMessage ?? "")") }

        // Warned once: the item without a SKU; the generic product of the Advanced Commerce purchases is not reported.
        let warnings = engine.takeProductWarnings()
        #expect(warnings.filter { $0.contains("without a SKU") } == [
            "warning: transaction 2000000000008001 has an Advanced Commerce item without a SKU: it grants nothing"
        ])
        #expect(!warnings.contains { $0.contains("com.example.commerce.generic") })
        _ = try await engine.ingest([Self.document(texts[4], 1)])
        #expect(engine.takeProductWarnings().isEmpty)

        let at = Self.t0 + 71 * Self.day
        let answer = try await engine.query(.appTransactionId(Self.app), at: at)
        let json = answer.json()
        #expect(json["consentRescindedAt"] == .int(Self.t0 + 70 * Self.day))
        #expect(json["originalPlatform"] == "iOS")
        guard case .array(let subscriptions)? = json["subscriptions"] else {
            Issue.record("no subscriptions")
            return
        }
        let commitment = subscriptions.first { $0["originalTransactionId"] == "2000000000007001" }
        #expect(commitment?["billingPlanType"] == "MONTHLY")
        #expect(commitment?["willRenew"] == .bool(true))
        #expect(commitment?["commitment"]?["billingPeriodNumber"] == .int(3))
        #expect(commitment?["commitment"]?["autoRenewStatus"] == .bool(false))
        #expect(commitment?["renewalPrice"] == .int(9990))
        #expect(commitment?["renewalCurrency"] == "USD")
        // The migrated subscription and the one it came from belong to this customer.
        #expect(subscriptions.contains { $0["originalTransactionId"] == .string(legacy) })
        #expect(subscriptions.contains { $0["originalTransactionId"] == "2000000000009101" })
        let during = try await engine.query(.appTransactionId(Self.app), at: refunded + 1).json()
        #expect(during["entitlements"]?["alpha"]?["active"] == .bool(true))
        #expect(during["entitlements"]?["beta"]?["active"] == .bool(false))
        let byLegacy = try await engine.query(.originalTransactionId(legacy), at: at).json()
        #expect(byLegacy["appTransactionId"] == .string(Self.app))

        let lifecycle = try await engine.lifecycle()
        let lines = lifecycle.map { $0.json() }
        let disabled = lines.first { $0["id"] == .string("AUTO_RENEW_DISABLED:2000000000007001:\(cancelled)") }
        #expect(disabled?["commitment"] == .bool(true))
        let refund = lines.first { $0["type"] == "REFUND" && $0["sku"] == "SKU-BETA" }
        #expect(refund?["effectiveAt"] == .int(refunded))
        #expect(refund?["entitlements"] == .array(["beta"]))
        // The purchase names what its items' SKUs grant (its product is in no rule).
        let started = lines.first { $0["id"] == "SUBSCRIPTION_STARTED:2000000000008001" }
        #expect(started?["entitlements"] == .array(["alpha", "beta"]))
        #expect(refund?["revocationType"] == "FULL")
        #expect(lines.contains { $0["type"] == "CONSENT_RESCINDED" && $0["appTransactionId"] == .string(Self.app) })

        // Replay gives what ingest gave; audit finds the stored facts equal to what was signed.
        let report = try await engine.replay()
        #expect(report.changed == 0)
        #expect(try await engine.query(.appTransactionId(Self.app), at: at).json() == json)
        let audit = try await engine.audit()
        #expect(audit.firstMismatch == nil)
    }
}
