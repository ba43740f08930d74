import Foundation
import Testing
@testable import AppStoreVerification
import EntitlementCore
import TestPKI

/// A cached chain gives exactly the answer the uncached path gives.
@Suite("Chain cache")
struct ChainCacheTests {
    static let leafValidity = Validity(notBefore: 1_577_836_800_000, notAfter: 1_735_689_600_000)  // 2020 .. 2025
    static let pki = TestPKI(.leafValid(leafValidity), sharingRootWith: Shared.pki)

    /// JWS under one header (one chain), signed at dates inside and outside its validity, plus alterations.
    static func samples() -> [String] {
        var samples: [String] = []
        for date: Int64 in [1_600_000_000_000, 1_500_000_000_000, 1_577_836_800_000, 1_577_836_799_999, 1_735_689_599_999,
                            1_735_689_600_000, 1_800_000_000_000, 1_700_000_000_000] {
            samples.append(pki.sign(TestPayloads.transaction(purchaseDate: date)))
            samples.append(pki.sign(TestPayloads.renewalInfo(signedDate: date)))
            samples.append(pki.sign(TestPayloads.appTransaction(receiptCreationDate: date)))
            samples.append(pki.sign(TestPayloads.transaction(purchaseDate: date, bundleId: "com.other")))
        }
        let valid = pki.sign(TestPayloads.transaction(purchaseDate: 1_600_000_000_000))
        samples.append(flippingByte(of: valid, in: .payload, at: 10))
        samples.append(flippingByte(of: valid, in: .signature, at: 10))
        return samples
    }

    @Test func cachedAndUncachedAnswersAreIdentical() {
        let cached = Shared.verifier(cache: 64)
        let uncached = Shared.verifier(cache: 0)
        let samples = Self.samples()
        // Twice through, so that the second pass runs on a warm cache in every order.
        for pass in 0..<2 {
            for (index, jws) in samples.enumerated() {
                let a = Result { () throws(VerificationError) in try cached.verify(jws) }
                let b = Result { () throws(VerificationError) in try uncached.verify(jws) }
                #expect(a == b, "pass \(pass) sample \(index)")
            }
        }
        #expect(cached.cachedChainCount == 1)
        #expect(uncached.cachedChainCount == 0)
    }

    @Test func outOfWindowAnswerIsTheUncachedError() {
        let cached = Shared.verifier(cache: 64)
        let uncached = Shared.verifier(cache: 0)
        _ = try? cached.verifyTransaction(Self.pki.sign(TestPayloads.transaction(purchaseDate: 1_600_000_000_000)))
        #expect(cached.cachedChainCount == 1)
        for date: Int64 in [1_735_689_600_000, 1_500_000_000_000] {
            let jws = Self.pki.sign(TestPayloads.transaction(purchaseDate: date))
            let a = verificationError { try cached.verifyTransaction(jws) }
            let b = verificationError { try uncached.verifyTransaction(jws) }
            #expect(a != nil)
            #expect(a == b)
        }
    }

    @Test func failuresAreNotCached() {
        let verifier = Shared.verifier(cache: 64)
        _ = try? verifier.verifyTransaction(Shared.otherPKI.sign(TestPayloads.transaction()))
        _ = try? verifier.verifyTransaction(TestPKI(.leafWithoutAppleOID, sharingRootWith: Shared.pki).sign(TestPayloads.transaction()))
        #expect(verifier.cachedChainCount == 0)
    }

    @Test func cacheIsBounded() {
        let verifier = Shared.verifier(cache: 3)
        let chains = (0..<5).map { _ in TestPKI(sharingRootWith: Shared.pki) }
        for _ in 0..<2 {
            for chain in chains {
                #expect(code { try verifier.verifyTransaction(chain.sign(TestPayloads.transaction())) } == "OK")
                #expect(verifier.cachedChainCount <= 3)
            }
        }
        #expect(verifier.cachedChainCount == 3)
    }

    @Test func concurrentUseIsSafe() {
        let verifier = Shared.verifier(cache: 2)
        let chains = (0..<3).map { _ in TestPKI(sharingRootWith: Shared.pki) }
        let samples = chains.flatMap { chain in
            [chain.sign(TestPayloads.transaction()), flippingByte(of: chain.sign(TestPayloads.transaction()), in: .signature, at: 3)]
        }
        let outcomes = Outcomes()
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for round in 0..<40 {
                let index = (worker + round) % samples.count
                outcomes.record(index: index, code: code { try verifier.verify(samples[index]) })
            }
        }
        for (index, codes) in outcomes.byIndex {
            #expect(codes == [index % 2 == 0 ? "OK" : "VERIFICATION_FAILURE"], "sample \(index)")
        }
    }
}

final class Outcomes: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Int: Set<String>] = [:]

    func record(index: Int, code: String) {
        lock.lock()
        storage[index, default: []].insert(code)
        lock.unlock()
    }

    var byIndex: [Int: Set<String>] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
}
