import Testing
@testable import AppStoreVerification
import EntitlementCore
import TestPKI

/// `verify(_:)` tells the four kinds apart by their payload.
@Suite("Classification of bare JWS")
struct ClassificationTests {
    let pki = Shared.pki
    let verifier = Shared.verifier()

    @Test func eachKindIsRecognised() throws {
        #expect(try verifier.verify(pki.sign(TestPayloads.notification())).kind == .notification)
        #expect(try verifier.verify(pki.sign(TestPayloads.transaction())).kind == .transaction)
        #expect(try verifier.verify(pki.sign(TestPayloads.renewalInfo())).kind == .renewalInfo)
        #expect(try verifier.verify(pki.sign(TestPayloads.appTransaction())).kind == .appTransaction)
    }

    @Test func decodedPayloadsMatchTheTypedMethods() throws {
        let transaction = pki.sign(TestPayloads.transaction(productId: "com.example.coins.100", type: "Consumable", expiresDate: nil, quantity: 3))
        guard case .transaction(let classified) = try verifier.verify(transaction) else {
            Issue.record("not a transaction")
            return
        }
        #expect(classified == (try verifier.verifyTransaction(transaction)))
        #expect(classified.payload.quantity == 3)
        #expect(classified.payload.type == .consumable)

        let renewal = pki.sign(TestPayloads.renewalInfo(isInBillingRetryPeriod: true, gracePeriodExpiresDate: 1_736_000_000_000))
        guard case .renewalInfo(let info) = try verifier.verify(renewal) else {
            Issue.record("not renewal info")
            return
        }
        #expect(info.payload.isInBillingRetryPeriod == true)
        #expect(info.payload.gracePeriodExpiresDate == 1_736_000_000_000)
    }

    @Test func kindFollowsTheIdentifyingFieldsInOrder() {
        #expect(SignedDataVerifier.classify(JSONObject([("notificationType", "TEST"), ("transactionId", "1")])) == .notification)
        #expect(SignedDataVerifier.classify(JSONObject([("receiptType", "Sandbox"), ("transactionId", "1")])) == .appTransaction)
        #expect(SignedDataVerifier.classify(JSONObject([("transactionId", "1"), ("originalTransactionId", "1")])) == .transaction)
        #expect(SignedDataVerifier.classify(JSONObject([("originalTransactionId", "1")])) == .renewalInfo)
        #expect(SignedDataVerifier.classify(JSONObject([("transactionId", nil), ("originalTransactionId", "1")])) == .renewalInfo)
        #expect(SignedDataVerifier.classify(JSONObject([("bundleId", "x")])) == nil)
    }
}
