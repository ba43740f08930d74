import COpenSSL
import Foundation
import Synchronization
import Testing
import TestSupport
@testable import AppStoreVerification
import EntitlementCore
import TestPKI

/// A key's table of multiples (``P256FixedBase``) accepts exactly the signatures
/// OpenSSL's `EVP_PKEY_verify` accepts.
@Suite("P-256 key table")
struct KeyTableTests {
    /// The P-256 group order n, big-endian.
    static let order: [UInt8] = hex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")

    static func hex(_ text: String) -> [UInt8] { hexBytes(text) }


    static func leafKey(_ pki: TestPKI = Shared.pki, keyTableAfter: Int? = nil) throws -> P256PublicKey {
        let certificate = try #require(pki.leafDER.withUnsafeBufferPointer { X509Certificate(der: $0) })
        return try #require(certificate.p256PublicKey(keyTableAfter: keyTableAfter))
    }

    /// The key's answer for `signature` over `digest`: EVP's, for a key that builds no table.
    static func evp(_ key: P256PublicKey, _ digest: [UInt8], _ signature: [UInt8]) -> Bool {
        signature.withUnsafeBufferPointer { signature in
            key.verifyES256(signature: signature) { output in
                for (index, byte) in digest.enumerated() { output[index] = byte }
            }
        }
    }

    /// The key's answer for `signature` over the SHA-256 of `message`.
    static func check(_ key: P256PublicKey, _ message: [UInt8], _ signature: [UInt8]) -> Bool {
        evp(key, SHA256.hash(message), signature)
    }

    static func table(_ table: P256FixedBase, _ digest: [UInt8], _ signature: [UInt8]) -> Bool {
        digest.withUnsafeBufferPointer { digest in
            signature.withUnsafeBufferPointer { table.verify(digest: digest.baseAddress!, signature: $0) }
        }
    }

    /// Signatures over one digest: the valid one, its other valid form (n − s), and
    /// alterations and out-of-range values that must fail.
    static func variants(_ signature: [UInt8], digest: [UInt8], other: [UInt8]) -> [(name: String, digest: [UInt8], signature: [UInt8], valid: Bool)] {
        let r = Array(signature[0..<32])
        let s = Array(signature[32..<64])
        let zero = [UInt8](repeating: 0, count: 32)
        let ones = [UInt8](repeating: 0xFF, count: 32)
        let orderMinusOne = BigEndianArithmetic.subtract(order, zero.dropLast() + [1])
        var flippedDigest = digest
        flippedDigest[31] ^= 0x01
        var flippedR = r
        flippedR[7] ^= 0x40
        var flippedS = s
        flippedS[20] ^= 0x02
        return [
            ("valid", digest, r + s, true),
            ("n - s", digest, r + BigEndianArithmetic.subtract(order, s), true),
            ("altered digest", flippedDigest, r + s, false),
            ("altered r", digest, flippedR + s, false),
            ("altered s", digest, r + flippedS, false),
            ("r and s swapped", digest, s + r, false),
            ("r = 0", digest, zero + s, false),
            ("s = 0", digest, r + zero, false),
            ("r = n", digest, order + s, false),
            ("s = n", digest, r + order, false),
            ("r = n - 1", digest, orderMinusOne + s, false),
            ("s = n - 1", digest, r + orderMinusOne, false),
            ("r = 2^256 - 1", digest, ones + s, false),
            ("s = 2^256 - 1", digest, r + ones, false),
            ("another key's signature", digest, other, false),
        ]
    }

    @Test func tableAgreesWithEVPOnValidAlteredAndOutOfRangeSignatures() throws {
        let key = try Self.leafKey()
        let table = try #require(P256FixedBase(key: key.pointer))
        var random = SystemRandomNumberGenerator()
        for round in 0..<48 {
            let message = (0..<(round * 7 + 1)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let digest = SHA256.hash(message)
            let signature = Shared.pki.signature(over: message)
            let other = Shared.otherPKI.signature(over: message)
            for variant in Self.variants(signature, digest: digest, other: other) {
                let byEVP = Self.evp(key, variant.digest, variant.signature)
                let byTable = Self.table(table, variant.digest, variant.signature)
                #expect(byEVP == variant.valid, "round \(round): \(variant.name), EVP")
                #expect(byTable == variant.valid, "round \(round): \(variant.name), table")
            }
        }
        // Anything but 64 bytes is no ES256 signature.
        let signature = Shared.pki.signature(over: [1, 2, 3])
        #expect(!Self.table(table, SHA256.hash([1, 2, 3]), Array(signature.dropLast())))
        #expect(!Self.table(table, SHA256.hash([1, 2, 3]), signature + [0]))
    }

    /// x(R) can be at least n (it lies in [0, p), and p > n): then x(R) mod n is
    /// x(R) − n, which the Jacobian comparison checks as r + n. A key whose point has
    /// x = n + 3 (the first such x on the curve), and the signature r = s = 3 over an
    /// all-zero digest, give u1 = 0 and u2 = 1, so R is the key's point itself.
    @Test func anXCoordinateAtLeastTheOrderIsReducedAsOpenSSLReducesIt() throws {
        let point = Self.hex(
            "04ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632554"
                + "b7b0f3ef25bcb11057f7ba76eb0cd78ea285aba2e67538111ce200179e4a2dc0")
        #expect(BigEndianArithmetic.subtract(Array(point[1...32]), Self.order) == [UInt8](repeating: 0, count: 31) + [3])
        // SubjectPublicKeyInfo of an uncompressed P-256 point.
        let info = Self.hex("3059301306072a8648ce3d020106082a8648ce3d030107034200") + point
        let pkey = try #require(info.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        })
        let key = P256PublicKey(owning: pkey)
        let table = try #require(P256FixedBase(key: key.pointer))
        let three = [UInt8](repeating: 0, count: 31) + [3]
        let zero = [UInt8](repeating: 0, count: 32)
        let one = [UInt8](repeating: 0, count: 31) + [1]
        for (digest, signature, valid) in [
            (zero, three + three, true), (one, three + three, false), (zero, [UInt8](repeating: 0, count: 31) + [4] + three, false),
        ] {
            #expect(Self.evp(key, digest, signature) == valid)
            #expect(Self.table(table, digest, signature) == valid)
        }
    }

    @Test func aKeyBuildsItsTableAfterTheThresholdAndAnswersAsBefore() throws {
        let key = try Self.leafKey(keyTableAfter: 3)
        let message: [UInt8] = Array("header.payload".utf8)
        let signature = Shared.pki.signature(over: message)
        var altered = signature
        altered[40] ^= 0x10
        // The fourth check still goes through EVP, and builds the table once it is done.
        for check in 0..<6 {
            #expect(key.usesTable == (check >= 4), "before check \(check)")
            #expect(Self.check(key, message, signature))
        }
        for _ in 0..<3 {
            #expect(!Self.check(key, message, altered))
        }
        #expect(key.usesTable)
        let never = try Self.leafKey(keyTableAfter: nil)
        for _ in 0..<8 {
            #expect(Self.check(never, message, signature))
        }
        #expect(!never.usesTable)
    }

    @Test func threadsShareOneTable() throws {
        let key = try Self.leafKey(keyTableAfter: 0)
        let messages = (0..<32).map { Array("message \($0)".utf8) }
        let signatures = messages.map { Shared.pki.signature(over: $0) }
        let digests = messages.map { SHA256.hash($0) }
        let wrong = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 4) { lane in
            var mistakes = 0
            for round in 0..<64 {
                let index = (round * 5 + lane) % messages.count
                var signature = signatures[index]
                let valid = round % 3 != 0
                if !valid { signature[(round + lane) % 64] ^= 0x04 }
                if Self.evp(key, digests[index], signature) != valid { mistakes += 1 }
            }
            wrong.withLock { $0 += mistakes }
        }
        #expect(wrong.withLock { $0 } == 0)
        #expect(key.usesTable)
    }

    /// A verifier whose cached key switches to its table gives, for every JWS, the answer
    /// of one that never builds a table: valid, altered and out-of-window samples alike.
    @Test func verifierAnswersAreTheSameWithAndWithoutTheTable() {
        let withTable = Shared.verifier(keyTableAfter: 1)
        let withoutTable = Shared.verifier(keyTableAfter: nil)
        var samples = ChainCacheTests.samples()
        let notification = Shared.pki.sign(TestPayloads.notification(
            type: "DID_RENEW", signedTransactionInfo: Shared.pki.sign(TestPayloads.transaction()),
            signedRenewalInfo: Shared.pki.sign(TestPayloads.renewalInfo())))
        samples += [notification, flippingByte(of: notification, in: .signature, at: 5)]
        let signed = Shared.pki.sign(TestPayloads.transaction())
        samples += [signed, flippingByte(of: signed, in: .signature, at: 3), flippingByte(of: signed, in: .payload, at: 12)]
        for pass in 0..<3 {
            for (index, jws) in samples.enumerated() {
                let a = Result { () throws(VerificationError) in try withTable.verify(jws) }
                let b = Result { () throws(VerificationError) in try withoutTable.verify(jws) }
                #expect(a == b, "pass \(pass) sample \(index)")
            }
        }
        #expect(withTable.keyTableCount >= 1)
        #expect(withoutTable.keyTableCount == 0)
    }

    /// Checks put off to one batch (one inversion for all) pass exactly where EVP
    /// passes each on its own: two keys, valid and altered signatures, out-of-range values,
    /// a batch of one, and a batch shortened before it is checked.
    @Test func deferredChecksAgreeWithEVPOneByOne() throws {
        let keys = [try Self.leafKey(), try Self.leafKey(Shared.otherPKI)]
        let tables = try keys.map { try #require(P256FixedBase(key: $0.pointer)) }
        let pkis = [Shared.pki, Shared.otherPKI]
        var cases: [(key: Int, digest: [UInt8], signature: [UInt8], valid: Bool)] = []
        for round in 0..<12 {
            let message = Array("message \(round)".utf8)
            let digest = SHA256.hash(message)
            let signer = round % 2
            let signature = pkis[signer].signature(over: message)
            let other = pkis[1 - signer].signature(over: message)
            for variant in Self.variants(signature, digest: digest, other: other) {
                cases.append((signer, variant.digest, variant.signature, variant.valid))
            }
        }
        let deferred = DeferredSignatures()
        for sizes in [[cases.count], [1], [2, 1], [7, 30, 5]] {
            var start = 0
            for size in sizes {
                let batch = cases[start..<min(start + size, cases.count)]
                start += size
                // A check recorded and then forgotten takes no part.
                deferred.truncate(to: 0)
                for (key, digest, signature, _) in batch.reversed().prefix(2) { Self.defer(deferred, tables[key], digest, signature) }
                deferred.truncate(to: 0)
                for (key, digest, signature, _) in batch { Self.defer(deferred, tables[key], digest, signature) }
                #expect(deferred.count == batch.count)
                let results = deferred.check()
                #expect(deferred.count == 0)
                for (result, item) in zip(results, batch) {
                    #expect(result == item.valid)
                    #expect(result == Self.evp(keys[item.key], item.digest, item.signature))
                }
            }
        }
        #expect(deferred.check().isEmpty)
    }

    static func `defer`(_ deferred: DeferredSignatures, _ table: P256FixedBase, _ digest: [UInt8], _ signature: [UInt8]) {
        digest.withUnsafeBufferPointer { digest in
            signature.withUnsafeBufferPointer { deferred.append(table, digest: digest.baseAddress!, signature: $0) }
        }
    }

    /// The digest the log's hash chain takes (``SignedBytes/jwsDigest``) is the SHA-256 of
    /// the whole JWS as received: on the first JWS of a chain and on cached ones, with and
    /// without the key's table, for each kind; an environment that checks no signatures
    /// computes none.
    @Test func theJWSDigestIsTheWholeJWSs() throws {
        let transaction = Shared.pki.sign(TestPayloads.transaction())
        let renewal = Shared.pki.sign(TestPayloads.renewalInfo())
        let notification = Shared.pki.sign(TestPayloads.notification(
            type: "DID_RENEW", signedTransactionInfo: transaction, signedRenewalInfo: renewal))
        let app = Shared.pki.sign(TestPayloads.appTransaction())
        for verifier in [Shared.verifier(keyTableAfter: 0), Shared.verifier(cache: 0), Shared.verifier(keyTableAfter: nil)] {
            for _ in 0..<2 {
                for jws in [transaction, renewal, notification, app] {
                    let input = try verifier.verify(jws)
                    #expect(input.jwsDigest == SHA256.hash(Array(jws.utf8)))
                }
                let nested = try verifier.verifyNotification(notification)
                #expect(nested.transaction?.signedBytes.jwsDigest == SHA256.hash(Array(transaction.utf8)))
                #expect(nested.renewalInfo?.signedBytes.jwsDigest == SHA256.hash(Array(renewal.utf8)))
            }
        }
        let local = Shared.verifier(.xcode)
        #expect(try local.verify(Shared.pki.sign(TestPayloads.transaction(environment: "Xcode"))).jwsDigest == nil)
    }
}
