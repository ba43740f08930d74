import Testing
@testable import AppStoreVerification
import EntitlementCore
import TestPKI

/// Step 5: bundleId, appAppleId (Production) and environment.
@Suite("App identity and environment")
struct AppIdentityTests {
    let pki = Shared.pki

    @Test func otherBundleIdIsInvalidAppIdentifier() {
        let jws = pki.sign(TestPayloads.transaction(bundleId: "com.other"))
        let error = verificationError { try Shared.verifier().verifyTransaction(jws) }
        #expect(error?.code == .invalidAppIdentifier)
        #expect(error?.message == "bundleId com.other does not match the configured com.example.app")
    }

    @Test func otherEnvironmentIsInvalidEnvironment() {
        let jws = pki.sign(TestPayloads.transaction(environment: "Production"))
        let error = verificationError { try Shared.verifier().verifyTransaction(jws) }
        #expect(error?.code == .invalidEnvironment)
        #expect(error?.message == "environment Production does not match the configured Sandbox")
        #expect(code { try Shared.verifier(.production).verifyTransaction(jws) } == "OK")
    }

    @Test func bundleIdIsCheckedBeforeEnvironment() {
        let jws = pki.sign(TestPayloads.transaction(bundleId: "com.other", environment: "Production"))
        #expect(code { try Shared.verifier().verifyTransaction(jws) } == "INVALID_APP_IDENTIFIER")
    }

    @Test func renewalInfoEnvironmentIsChecked() {
        #expect(code { try Shared.verifier().verifyRenewalInfo(pki.sign(TestPayloads.renewalInfo())) } == "OK")
        let production = pki.sign(TestPayloads.renewalInfo(environment: "Production"))
        #expect(code { try Shared.verifier().verifyRenewalInfo(production) } == "INVALID_ENVIRONMENT")
    }

    @Test func appTransactionChecksBundleAppAppleIdInProductionAndReceiptType() {
        let sandbox = pki.sign(TestPayloads.appTransaction(appAppleId: 42))
        #expect(code { try Shared.verifier().verifyAppTransaction(sandbox) } == "OK")  // appAppleId only checked in Production

        let production = pki.sign(TestPayloads.appTransaction(receiptType: "Production", appAppleId: 42))
        let error = verificationError { try Shared.verifier(.production).verifyAppTransaction(production) }
        #expect(error?.code == .invalidAppIdentifier)
        #expect(error?.message == "appAppleId 42 does not match the configured 1234567890")

        let missing = pki.sign(TestPayloads.appTransaction(receiptType: "Production", appAppleId: nil))
        #expect(code { try Shared.verifier(.production).verifyAppTransaction(missing) } == "INVALID_APP_IDENTIFIER")

        let receiptType = verificationError { try Shared.verifier(.production).verifyAppTransaction(sandbox) }
        #expect(receiptType?.code == .invalidAppIdentifier)  // appAppleId 42 first
        let sandboxRight = pki.sign(TestPayloads.appTransaction())
        let environment = verificationError { try Shared.verifier(.production).verifyAppTransaction(sandboxRight) }
        #expect(environment?.code == .invalidEnvironment)
        #expect(environment?.message == "receiptType Sandbox does not match the configured Production")
    }

    @Test func notificationIdentityComesFromData() {
        let good = pki.sign(TestPayloads.notification())
        #expect(code { try Shared.verifier().verifyNotification(good) } == "OK")
        let otherBundle = pki.sign(TestPayloads.notification(bundleId: "com.other"))
        #expect(code { try Shared.verifier().verifyNotification(otherBundle) } == "INVALID_APP_IDENTIFIER")
        let otherEnvironment = pki.sign(TestPayloads.notification(environment: "Production"))
        #expect(code { try Shared.verifier().verifyNotification(otherEnvironment) } == "INVALID_ENVIRONMENT")
        let otherApp = pki.sign(TestPayloads.notification(appAppleId: 7, environment: "Production"))
        #expect(code { try Shared.verifier(.production).verifyNotification(otherApp) } == "INVALID_APP_IDENTIFIER")
        #expect(code { try Shared.verifier().verifyNotification(pki.sign(TestPayloads.notification(appAppleId: 7))) } == "OK")
    }

    @Test func notificationIdentityFromSummaryAppDataOrExternalPurchaseToken() {
        let verifier = Shared.verifier()
        let summary = pki.sign(TestPayloads.notification(type: "RENEWAL_EXTENSION", subtype: "SUMMARY", includeData: false,
                                                         summary: TestPayloads.summary()))
        #expect(code { try verifier.verifyNotification(summary) } == "OK")
        let summaryOther = pki.sign(TestPayloads.notification(includeData: false, summary: TestPayloads.summary(environment: "Production")))
        #expect(code { try verifier.verifyNotification(summaryOther) } == "INVALID_ENVIRONMENT")

        let appData = pki.sign(TestPayloads.notification(type: "RESCIND_CONSENT", includeData: false, appData: TestPayloads.appData()))
        #expect(code { try verifier.verifyNotification(appData) } == "OK")

        func token(_ id: String) -> JSONValue {
            ["externalPurchaseId": .string(id), "tokenCreationDate": 1_735_689_600_000, "appAppleId": 1_234_567_890,
             "bundleId": "com.example.app"]
        }
        let sandboxToken = pki.sign(TestPayloads.notification(type: "EXTERNAL_PURCHASE_TOKEN", includeData: false,
                                                              externalPurchaseToken: token("SANDBOX_abc")))
        #expect(code { try verifier.verifyNotification(sandboxToken) } == "OK")
        let productionToken = pki.sign(TestPayloads.notification(type: "EXTERNAL_PURCHASE_TOKEN", includeData: false,
                                                                 externalPurchaseToken: token("abc")))
        #expect(code { try verifier.verifyNotification(productionToken) } == "INVALID_ENVIRONMENT")
        #expect(code { try Shared.verifier(.production).verifyNotification(productionToken) } == "OK")

        let nothing = pki.sign(TestPayloads.notification(includeData: false))
        let error = verificationError { try verifier.verifyNotification(nothing) }
        #expect(error?.code == .invalidAppIdentifier)
        #expect(error?.message == "the payload carries no bundleId; the configured one is com.example.app")
    }

    @Test func configurationIsChecked() {
        let noAppId = verificationError {
            try SignedDataVerifier(configuration: VerifierConfiguration(bundleId: "a", appAppleId: nil, environment: .production))
        }
        #expect(noAppId?.code == .invalidAppIdentifier)
        #expect(noAppId?.message == "appAppleId is required when the environment is Production")
        let badRoot = verificationError {
            try SignedDataVerifier(configuration: VerifierConfiguration(bundleId: "a", environment: .sandbox, trustedRootsDER: [[1, 2, 3]]))
        }
        #expect(badRoot?.code == .invalidCertificate)
        #expect(badRoot?.message == "trusted root 0 is not a DER X.509 certificate")
        let noRoots = verificationError {
            try SignedDataVerifier(configuration: VerifierConfiguration(bundleId: "a", environment: .sandbox, trustedRootsDER: []))
        }
        #expect(noRoots?.code == .invalidCertificate)
        #expect(code { try SignedDataVerifier(configuration: VerifierConfiguration(bundleId: "a", environment: .xcode, trustedRootsDER: [])) }
            == "OK")
    }
}
