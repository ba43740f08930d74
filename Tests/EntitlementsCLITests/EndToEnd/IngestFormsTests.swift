import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// Every input form of specification section 1, through the library.
@Suite struct IngestFormsTests {
    let t0 = TestPayloads.january2025
    var tx: JSONValue { TestPayloads.transaction(transactionId: "2000000000000101", originalTransactionId: "2000000000000101", signedDate: t0 + 10) }
    var renewal: JSONValue { TestPayloads.renewalInfo(originalTransactionId: "2000000000000101", signedDate: t0 + 11) }

    @Test func eachFormIsRecognizedAndAppended() throws {
        let engine = try E2E.engine()
        let pki = E2E.pki
        let documents: [String] = [
            E2E.notification("SUBSCRIBED", "INITIAL_BUY", uuid: "11111111-0000-4000-8000-000000000001", signed: t0 + 20, transaction: tx, renewal: renewal),
            TestPayloads.body(signedTransactionInfo: pki.sign(tx)),
            TestPayloads.body(signedRenewalInfo: pki.sign(renewal)),
            TestPayloads.body(signedAppTransactionInfo: pki.sign(TestPayloads.appTransaction(receiptCreationDate: t0 + 30))),
            TestPayloads.body(signedTransactions: [
                pki.sign(TestPayloads.transaction(transactionId: "2000000000000102", originalTransactionId: "2000000000000101", purchaseDate: t0 + 30 * 86_400_000, expiresDate: t0 + 60 * 86_400_000)),
                pki.sign(TestPayloads.transaction(transactionId: "2000000000000103", originalTransactionId: "2000000000000101", purchaseDate: t0 + 60 * 86_400_000, expiresDate: t0 + 90 * 86_400_000)),
            ]),
            JSONWriter.string([
                "environment": "Sandbox", "bundleId": .string(TestPayloads.bundleId), "appAppleId": .int(TestPayloads.appAppleId),
                "data": [[
                    "subscriptionGroupIdentifier": "21000001",
                    "lastTransactions": [[
                        "originalTransactionId": "2000000000000101", "status": 1,
                        "signedTransactionInfo": .string(pki.sign(TestPayloads.transaction(transactionId: "2000000000000103", originalTransactionId: "2000000000000101", purchaseDate: t0 + 60 * 86_400_000, expiresDate: t0 + 90 * 86_400_000, signedDate: t0 + 61 * 86_400_000))),
                        "signedRenewalInfo": .string(pki.sign(TestPayloads.renewalInfo(originalTransactionId: "2000000000000101", signedDate: t0 + 61 * 86_400_000))),
                    ]],
                ]],
            ]),
            pki.sign(TestPayloads.transaction(transactionId: "2000000000000104", originalTransactionId: "2000000000000104", productId: "com.example.lifetime", type: "Non-Consumable", expiresDate: nil)),
        ]
        let results = try engine.ingest(documents.map(InputBytes.init))
        #expect(results.map(\.outcome) == Array(repeating: .appended, count: 9))
        #expect(results.map { $0.kind?.rawValue ?? "" } == [
            "notification", "transaction", "renewalInfo", "appTransaction", "transaction", "transaction", "transaction", "renewalInfo",
            "transaction",
        ])
        #expect(results[0].eventId == "11111111-0000-4000-8000-000000000001")
        #expect(results[1].eventId == "2000000000000101")
        #expect(Set(results.compactMap(\.appTransactionId)) == ["704000000000000001"])
        guard case .customer(let view) = try engine.query(.originalTransactionId("2000000000000101"), at: t0 + 70 * 86_400_000) else {
            Issue.record("not found"); return
        }
        #expect(view.subscriptions.first?.status == .active)
        #expect(view.entitlement("pro")?.active == true)
        // The lifetime purchase grants pro too, with no end: the entitlement has no expiry.
        #expect(view.entitlement("pro")?.expiresDate == nil)
        #expect(view.subscriptions.first?.expiresDate == t0 + 90 * 86_400_000)
        #expect(view.purchases.map(\.productId) == ["com.example.lifetime"])
        // Everything again: all duplicates, nothing appended.
        let again = try engine.ingest(documents.map(InputBytes.init))
        #expect(again.map(\.outcome) == Array(repeating: .duplicate, count: 9))
    }

    @Test func aNotificationWhoseNestedTransactionIsTamperedIsRejectedWholeAndQuarantined() throws {
        let engine = try E2E.engine()
        let signed = E2E.pki.sign(tx)
        var parts = signed.split(separator: ".").map(String.init)
        let forged = JSONWriter.string(TestPayloads.transaction(transactionId: "2000000000000101", originalTransactionId: "2000000000000101", expiresDate: t0 + 3_650 * 86_400_000, signedDate: t0 + 10))
        parts[1] = Base64Encoding.url(forged)
        let payload = TestPayloads.notification(type: "DID_RENEW", signedDate: t0 + 20, signedTransactionInfo: parts.joined(separator: "."))
        let results = try engine.ingest([InputBytes(TestPayloads.body(signedPayload: E2E.pki.sign(payload)))])
        #expect(results.count == 1)
        #expect(results[0].outcome == .rejected)
        #expect(results[0].errorCode == "VERIFICATION_FAILURE")
        #expect(results[0].errorMessage?.contains("signedTransactionInfo") == true)
        #expect(try engine.query(.appTransactionId("704000000000000001")).json()["error"]?["code"] == "NOT_FOUND")
    }

    @Test func malformedAndForeignInputsAreRejectedWithPreciseCodes() throws {
        let engine = try E2E.engine()
        let other = TestPKI()
        let cases: [(String, String)] = [
            ("{not json", "MALFORMED_INPUT"),
            ("{\"unexpected\": 1}", "MALFORMED_INPUT"),
            (TestPayloads.body(signedTransactionInfo: E2E.pki.sign(TestPayloads.transaction(bundleId: "com.other.app"))), "INVALID_APP_IDENTIFIER"),
            (TestPayloads.body(signedTransactionInfo: E2E.pki.sign(TestPayloads.transaction(environment: "Production"))), "INVALID_ENVIRONMENT"),
            (TestPayloads.body(signedTransactionInfo: other.sign(tx)), "INVALID_CHAIN"),
        ]
        let results = try engine.ingest(cases.map { InputBytes($0.0) })
        #expect(results.map(\.outcome) == Array(repeating: .rejected, count: cases.count))
        #expect(results.map { $0.errorCode ?? "" } == cases.map(\.1))
    }
}
