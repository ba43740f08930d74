import Testing
@testable import AppStoreVerification
import EntitlementCore
import TestPKI

/// Genuine App Store JWS (Fixtures/real), verified on Apple's real chain with the embedded root.
@Suite("Real Apple samples")
struct RealAppleSampleTests {
    static let notificationFile = "production-test-notification.json"
    static let transactionFile = "sandbox-consumable-transaction.json"

    static func productionVerifier(bundleId: String = "com.nineton.taller", appAppleId: Int64? = 6_450_284_872,
                                   environment: AppStoreEnvironment = .production, cache: Int = 64) throws -> SignedDataVerifier {
        try SignedDataVerifier(configuration: VerifierConfiguration(
            bundleId: bundleId, appAppleId: appAppleId, environment: environment, chainCacheCapacity: cache))
    }

    static func sandboxVerifier(bundleId: String = "com.goodheartapp", environment: AppStoreEnvironment = .sandbox,
                                appAppleId: Int64? = nil, cache: Int = 64) throws -> SignedDataVerifier {
        try SignedDataVerifier(configuration: VerifierConfiguration(
            bundleId: bundleId, appAppleId: appAppleId, environment: environment, chainCacheCapacity: cache))
    }

    @Test func embeddedRootIsAppleRootCAG3() {
        #expect(AppleRootCertificate.g3DER.count == 583)
        #expect(SHA256.hex(AppleRootCertificate.g3DER).uppercased()
            == "63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179")
    }

    @Test(arguments: [64, 0])
    func productionTestNotificationVerifies(cache: Int) throws {
        let jws = try realSample(Self.notificationFile)
        let verifier = try Self.productionVerifier(cache: cache)
        let notification = try verifier.verifyNotification(jws)
        #expect(notification.payload.notificationType == .test)
        #expect(notification.payload.notificationUUID == "2e2a6ce0-ec9f-4037-b1bf-618af85527bd")
        #expect(notification.payload.signedDate == 1_729_136_651_128)
        #expect(notification.payload.bundleId == "com.nineton.taller")
        #expect(notification.transaction == nil)
        #expect(notification.jws == jws)
        // Classified as a notification too.
        let input = try verifier.verify(jws)
        #expect(input.kind == .notification)
    }

    @Test(arguments: [64, 0])
    func sandboxConsumableTransactionVerifies(cache: Int) throws {
        let jws = try realSample(Self.transactionFile)
        let verifier = try Self.sandboxVerifier(cache: cache)
        let transaction = try verifier.verifyTransaction(jws)
        #expect(transaction.payload.transactionId == "2000000847061981")
        #expect(transaction.payload.productId == "gh_super_good_ticket_1")
        #expect(transaction.payload.type == .consumable)
        #expect(transaction.payload.quantity == 1)
        #expect(transaction.payload.signedDate == 1_739_161_772_561)
        #expect(try verifier.verify(jws).kind == .transaction)
    }

    @Test func realSamplesVerifyAgainOnCachedChain() throws {
        let verifier = try Self.sandboxVerifier()
        let jws = try realSample(Self.transactionFile)
        _ = try verifier.verifyTransaction(jws)
        #expect(verifier.cachedChainCount == 1)
        _ = try verifier.verifyTransaction(jws)
        #expect(verifier.cachedChainCount == 1)
    }

    @Test func otherBundleIdIsInvalidAppIdentifier() throws {
        let notification = try realSample(Self.notificationFile)
        let error = verificationError { try Self.productionVerifier(bundleId: "com.example.app").verifyNotification(notification) }
        #expect(error?.code == .invalidAppIdentifier)
        #expect(error?.message == "bundleId com.nineton.taller does not match the configured com.example.app")

        let transaction = try realSample(Self.transactionFile)
        #expect(code { try Self.sandboxVerifier(bundleId: "com.example.app").verifyTransaction(transaction) } == "INVALID_APP_IDENTIFIER")
        #expect(code { try Self.sandboxVerifier(bundleId: "com.example.app").verify(transaction) } == "INVALID_APP_IDENTIFIER")
    }

    @Test func otherAppAppleIdInProductionIsInvalidAppIdentifier() throws {
        let notification = try realSample(Self.notificationFile)
        let error = verificationError { try Self.productionVerifier(appAppleId: 1).verifyNotification(notification) }
        #expect(error?.code == .invalidAppIdentifier)
        #expect(error?.message == "appAppleId 6450284872 does not match the configured 1")
    }

    @Test func otherEnvironmentIsInvalidEnvironment() throws {
        let notification = try realSample(Self.notificationFile)
        let error = verificationError { try Self.productionVerifier(environment: .sandbox).verifyNotification(notification) }
        #expect(error?.code == .invalidEnvironment)
        #expect(error?.message == "environment Production does not match the configured Sandbox")

        let transaction = try realSample(Self.transactionFile)
        #expect(code { try Self.sandboxVerifier(environment: .production, appAppleId: 1).verifyTransaction(transaction) }
            == "INVALID_ENVIRONMENT")
    }

    @Test func everyAlteredPayloadByteIsVerificationFailure() throws {
        for (file, verifier) in [
            (Self.notificationFile, try Self.productionVerifier()), (Self.transactionFile, try Self.sandboxVerifier()),
        ] {
            let jws = try realSample(file)
            let payloadBytes = base64URLDecode(segment(.payload, of: jws)).count
            for offset in 0..<payloadBytes {
                let altered = flippingByte(of: jws, in: .payload, at: offset)
                #expect(code { try verifier.verify(altered) } == "VERIFICATION_FAILURE", "\(file) payload byte \(offset)")
            }
            let payloadCharacters = segment(.payload, of: jws).utf8.count
            for offset in stride(from: 0, to: payloadCharacters, by: 7) {
                let altered = alteringCharacter(of: jws, in: .payload, at: offset)
                #expect(code { try verifier.verify(altered) } == "VERIFICATION_FAILURE", "\(file) payload character \(offset)")
            }
        }
    }

    @Test func everyAlteredSignatureByteIsVerificationFailure() throws {
        for (file, verifier) in [
            (Self.notificationFile, try Self.productionVerifier()), (Self.transactionFile, try Self.sandboxVerifier()),
        ] {
            let jws = try realSample(file)
            for offset in 0..<64 {
                let altered = flippingByte(of: jws, in: .signature, at: offset)
                #expect(code { try verifier.verify(altered) } == "VERIFICATION_FAILURE", "\(file) signature byte \(offset)")
            }
            for offset in [0, 1, 42, 84, 85] {
                let altered = alteringCharacter(of: jws, in: .signature, at: offset)
                #expect(code { try verifier.verify(altered) } == "VERIFICATION_FAILURE", "\(file) signature character \(offset)")
            }
        }
    }

    @Test func realSampleIsRefusedUnderAnUnrelatedRoot() throws {
        let jws = try realSample(Self.transactionFile)
        let verifier = try SignedDataVerifier(configuration: VerifierConfiguration(
            bundleId: "com.goodheartapp", environment: .sandbox, trustedRootsDER: [Shared.pki.rootDER]))
        let error = verificationError { try verifier.verifyTransaction(jws) }
        #expect(error?.code == .invalidChain)
        #expect(error?.message.contains("unable to get local issuer certificate") == true)
    }
}
