import Testing
@testable import AppStoreVerification
import EntitlementCore
import TestPKI

/// Notifications and the JWS nested in them.
@Suite("Notifications")
struct NotificationTests {
    let pki = Shared.pki

    func subscribed(transaction: String? = nil, renewal: String? = nil) -> String {
        pki.sign(TestPayloads.notification(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: "11111111-2222-4333-8444-555555555555",
            signedTransactionInfo: transaction ?? pki.sign(TestPayloads.transaction()),
            signedRenewalInfo: renewal ?? pki.sign(TestPayloads.renewalInfo()), status: 1))
    }

    @Test func nestedTransactionAndRenewalInfoAreVerifiedAndDecoded() throws {
        let jws = subscribed()
        let notification = try Shared.verifier().verifyNotification(jws)
        #expect(notification.jws == jws)
        #expect(notification.payload.notificationType == .subscribed)
        #expect(notification.payload.subtype == .initialBuy)
        #expect(notification.payload.notificationUUID == "11111111-2222-4333-8444-555555555555")
        #expect(notification.transaction?.payload.transactionId == "2000000000000001")
        #expect(notification.transaction?.jws == notification.payload.data?.signedTransactionInfo)
        #expect(notification.renewalInfo?.payload.autoRenewStatus == 1)
        #expect(notification.appTransaction == nil)

        guard case .notification(let classified) = try Shared.verifier().verify(jws) else {
            Issue.record("not classified as a notification")
            return
        }
        #expect(classified == notification)
    }

    @Test func nestedAppTransactionIsVerified() throws {
        let jws = pki.sign(TestPayloads.notification(
            type: "RESCIND_CONSENT", includeData: false,
            appData: TestPayloads.appData(signedAppTransactionInfo: pki.sign(TestPayloads.appTransaction()))))
        let notification = try Shared.verifier().verifyNotification(jws)
        #expect(notification.appTransaction?.payload.receiptType == "Sandbox")
    }

    @Test func tamperedNestedTransactionFailsTheWholeNotification() {
        let nested = pki.sign(TestPayloads.transaction())
        let tampered = flippingByte(of: nested, in: .payload, at: 20)
        let error = verificationError { try Shared.verifier().verifyNotification(subscribed(transaction: tampered)) }
        #expect(error?.code == .verificationFailure)
        #expect(error?.message.hasPrefix("data.signedTransactionInfo: ") == true)
        #expect(code { try Shared.verifier().verify(subscribed(transaction: tampered)) } == "VERIFICATION_FAILURE")
    }

    @Test func nestedRenewalInfoFromAnotherChainFailsTheWholeNotification() {
        let foreign = Shared.otherPKI.sign(TestPayloads.renewalInfo())
        let error = verificationError { try Shared.verifier().verifyNotification(subscribed(renewal: foreign)) }
        #expect(error?.code == .invalidChain)
        #expect(error?.message.hasPrefix("data.signedRenewalInfo: certificate chain is not valid") == true)
    }

    @Test func nestedTransactionForAnotherAppOrEnvironmentFailsTheWholeNotification() {
        let otherApp = pki.sign(TestPayloads.transaction(bundleId: "com.other"))
        let error = verificationError { try Shared.verifier().verifyNotification(subscribed(transaction: otherApp)) }
        #expect(error?.code == .invalidAppIdentifier)
        #expect(error?.message == "data.signedTransactionInfo: bundleId com.other does not match the configured com.example.app")

        let otherEnvironment = pki.sign(TestPayloads.transaction(environment: "Production"))
        #expect(code { try Shared.verifier().verifyNotification(subscribed(transaction: otherEnvironment)) } == "INVALID_ENVIRONMENT")
    }

    @Test func nestedGarbageFailsTheWholeNotification() {
        let error = verificationError { try Shared.verifier().verifyNotification(subscribed(transaction: "not a jws")) }
        #expect(error?.code == .malformedInput)
        #expect(error?.message.hasPrefix("data.signedTransactionInfo: not a compact JWS") == true)
    }

    @Test func tamperedOuterNotificationIsVerificationFailure() {
        let jws = subscribed()
        let payloadBytes = base64URLDecode(segment(.payload, of: jws)).count
        for offset in stride(from: 0, to: payloadBytes, by: 97) {
            #expect(code { try Shared.verifier().verifyNotification(flippingByte(of: jws, in: .payload, at: offset)) }
                == "VERIFICATION_FAILURE")
        }
    }
}
