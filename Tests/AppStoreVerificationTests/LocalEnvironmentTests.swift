import Testing
@testable import AppStoreVerification
import EntitlementCore
import TestPKI

/// Xcode and LocalTesting: StoreKit testing data is not signed by Apple.
@Suite("Xcode and LocalTesting")
struct LocalEnvironmentTests {
    @Test(arguments: [AppStoreEnvironment.xcode, .localTesting])
    func signatureAndChainAreSkippedOnlyWhenConfigured(_ environment: AppStoreEnvironment) throws {
        let local = try SignedDataVerifier(configuration: VerifierConfiguration(
            bundleId: TestPayloads.bundleId, environment: environment, trustedRootsDER: []))
        // Any chain, any signature, even alg none with no x5c.
        let payload = JSONWriter.string(TestPayloads.transaction(environment: environment.rawValue))
        let signed = Shared.otherPKI.sign(payloadJSON: payload, header: Shared.otherPKI.header())
        let badSignature = flippingByte(of: signed, in: .signature, at: 0)
        let unsigned = Base64Encoding.url(#"{"alg":"none"}"#) + "." + Base64Encoding.url(payload) + "."
        for jws in [signed, badSignature, unsigned] {
            #expect(try local.verifyTransaction(jws).payload.environment == environment.rawValue)
            #expect(try local.verify(jws).kind == .transaction)
        }
        // The same data is refused where signatures count.
        #expect(code { try Shared.verifier().verify(unsigned) } == "VERIFICATION_FAILURE")
    }

    @Test func appAndEnvironmentAreStillChecked() throws {
        let local = try SignedDataVerifier(configuration: VerifierConfiguration(bundleId: TestPayloads.bundleId, environment: .xcode))
        let otherBundle = Shared.pki.sign(TestPayloads.transaction(bundleId: "com.other", environment: "Xcode"))
        #expect(code { try local.verifyTransaction(otherBundle) } == "INVALID_APP_IDENTIFIER")
        let sandbox = Shared.pki.sign(TestPayloads.transaction())
        #expect(code { try local.verifyTransaction(sandbox) } == "INVALID_ENVIRONMENT")
        #expect(code { try local.verify("not.a.jws") } == "MALFORMED_INPUT")
        #expect(code { try local.verify("x.y") } == "MALFORMED_INPUT")
        let notJSON = Base64Encoding.url(#"{"alg":"none"}"#) + "." + Base64Encoding.url("nope") + "."
        #expect(code { try local.verify(notJSON) } == "MALFORMED_INPUT")
    }
}
