import Testing
@testable import AppStoreVerification
import EntitlementCore
import TestPKI

/// Step 4: the certificate chain, its validity at the signing time, and Apple's extensions.
@Suite("Certificate chain")
struct ChainRejectionTests {
    let pki = Shared.pki

    @Test(arguments: [64, 0])
    func validChainVerifies(cache: Int) throws {
        let verifier = Shared.verifier(cache: cache)
        let transaction = try verifier.verifyTransaction(pki.sign(TestPayloads.transaction()))
        #expect(transaction.payload.transactionId == "2000000000000001")
        #expect(verifier.cachedChainCount == (cache > 0 ? 1 : 0))
    }

    @Test(arguments: [64, 0])
    func unrelatedRootIsInvalidChain(cache: Int) {
        let jws = Shared.otherPKI.sign(TestPayloads.transaction())
        let error = verificationError { try Shared.verifier(cache: cache).verifyTransaction(jws) }
        #expect(error?.code == .invalidChain)
        #expect(error?.message.contains("unable to get local issuer certificate") == true)
        // OpenSSL's reason names what it could not place; the message also says why.
        #expect(error?.message.hasSuffix("is none of the configured trusted roots") == true, "\(String(describing: error))")
    }

    @Test func embeddedAppleRootRefusesTestChains() throws {
        let verifier = try SignedDataVerifier(configuration: VerifierConfiguration(bundleId: Shared.bundleId, environment: .sandbox))
        let error = verificationError { try verifier.verifyTransaction(pki.sign(TestPayloads.transaction())) }
        #expect(error?.code == .invalidChain)
        #expect(error?.message.contains("x5c[2] (CN=") == true, "\(String(describing: error))")
        #expect(error?.message.hasSuffix("is none of the configured trusted roots") == true)
    }

    @Test func x5cRootIsNeverTrustedByItself() {
        // The chain builds to the configured root, but x5c[2] presents another root.
        let x5c = [pki.x5c[0], pki.x5c[1], Shared.otherPKI.x5c[2]]
        let jws = pki.sign(payloadJSON: JSONWriter.string(TestPayloads.transaction()), header: pki.header(x5c: x5c))
        let error = verificationError { try Shared.verifier().verifyTransaction(jws) }
        #expect(error?.code == .invalidChain)
        #expect(error?.message.hasPrefix("x5c[2] is not the configured trusted root") == true)
    }

    @Test func foreignIntermediateIsInvalidChain() {
        let x5c = [pki.x5c[0], Shared.otherPKI.x5c[1], pki.x5c[2]]
        let jws = pki.sign(payloadJSON: JSONWriter.string(TestPayloads.transaction()), header: pki.header(x5c: x5c))
        #expect(code { try Shared.verifier().verifyTransaction(jws) } == "INVALID_CHAIN")
    }

    @Test func severalTrustedRootsAreAllAccepted() throws {
        let verifier = Shared.verifier(roots: [AppleRootCertificate.g3DER, Shared.otherPKI.rootDER, pki.rootDER])
        #expect(code { try verifier.verifyTransaction(pki.sign(TestPayloads.transaction())) } == "OK")
        #expect(code { try verifier.verifyTransaction(Shared.otherPKI.sign(TestPayloads.transaction())) } == "OK")
    }

    @Test func leafWithoutAppleOIDIsInvalidChain() {
        let broken = TestPKI(.leafWithoutAppleOID, sharingRootWith: pki)
        let error = verificationError { try Shared.verifier().verifyTransaction(broken.sign(TestPayloads.transaction())) }
        #expect(error?.code == .invalidChain)
        #expect(error?.message == "leaf certificate lacks Apple OID 1.2.840.113635.100.6.11.1")
    }

    @Test func intermediateWithoutAppleOIDIsInvalidChain() {
        let broken = TestPKI(.intermediateWithoutAppleOID, sharingRootWith: pki)
        let error = verificationError { try Shared.verifier().verifyTransaction(broken.sign(TestPayloads.transaction())) }
        #expect(error?.code == .invalidChain)
        #expect(error?.message == "intermediate certificate lacks Apple OID 1.2.840.113635.100.6.2.1")
    }

    static let leafValidity = Validity(notBefore: 1_577_836_800_000, notAfter: 1_735_689_600_000)  // 2020-01-01 .. 2025-01-01
    static let shortLivedLeaf = TestPKI(.leafValid(leafValidity), sharingRootWith: Shared.pki)

    @Test(arguments: [64, 0])
    func leafExpiredAtSignedDateIsInvalidChain(cache: Int) {
        let jws = Self.shortLivedLeaf.sign(TestPayloads.transaction(purchaseDate: 1_740_000_000_000))
        let error = verificationError { try Shared.verifier(cache: cache).verifyTransaction(jws) }
        #expect(error?.code == .invalidChain)
        #expect(error?.message
            == "certificate chain is not valid at signedDate 2025-02-19T21:20:00.000Z: certificate has expired (leaf CN=Test ECC Mac App Store and iTunes Store Receipt Signing)")
    }

    @Test(arguments: [64, 0])
    func leafNotYetValidAtSignedDateIsInvalidChain(cache: Int) {
        let jws = Self.shortLivedLeaf.sign(TestPayloads.transaction(purchaseDate: 1_500_000_000_000))
        let error = verificationError { try Shared.verifier(cache: cache).verifyTransaction(jws) }
        #expect(error?.code == .invalidChain)
        #expect(error?.message.contains("certificate is not yet valid") == true)
    }

    @Test func validityBoundsAreExactToTheMillisecond() {
        let verifier = Shared.verifier(cache: 0)
        let start = Self.leafValidity.notBefore, end = Self.leafValidity.notAfter
        for (date, expected) in [(start - 1, "INVALID_CHAIN"), (start, "OK"), (end - 1, "OK"), (end, "INVALID_CHAIN")] {
            let jws = Self.shortLivedLeaf.sign(TestPayloads.transaction(purchaseDate: date))
            #expect(code { try verifier.verifyTransaction(jws) } == expected, "signedDate \(date)")
        }
    }

    @Test func expiredIntermediateOrRootIsInvalidChain() {
        let old = Validity(notBefore: 1_420_070_400_000, notAfter: 1_600_000_000_000)
        let expiredIntermediate = TestPKI(.init(intermediateValidity: old), sharingRootWith: pki)
        let error = verificationError { try Shared.verifier().verifyTransaction(expiredIntermediate.sign(TestPayloads.transaction())) }
        #expect(error?.code == .invalidChain)
        #expect(error?.message.contains("certificate has expired (intermediate") == true)

        let expiredRoot = TestPKI(.init(rootValidity: old))
        let rootError = verificationError {
            try Shared.verifier(roots: [expiredRoot.rootDER]).verifyTransaction(expiredRoot.sign(TestPayloads.transaction()))
        }
        #expect(rootError?.code == .invalidChain)
        #expect(rootError?.message.contains("expired") == true)
    }

    @Test func appTransactionIsValidatedAtReceiptCreationDate() {
        let verifier = Shared.verifier()
        let inside = Self.shortLivedLeaf.sign(TestPayloads.appTransaction(receiptCreationDate: 1_700_000_000_000))
        #expect(code { try verifier.verifyAppTransaction(inside) } == "OK")
        let outside = Self.shortLivedLeaf.sign(TestPayloads.appTransaction(receiptCreationDate: 1_750_000_000_000))
        let error = verificationError { try verifier.verifyAppTransaction(outside) }
        #expect(error?.code == .invalidChain)
        #expect(error?.message.hasPrefix("certificate chain is not valid at receiptCreationDate 2025-06-15T") == true)
    }
}
