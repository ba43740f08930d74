import COpenSSL
import Dispatch
import Foundation
import Synchronization
import Testing
@testable import AppStoreVerification
import EntitlementCore
import TestPKI

/// `TestPKI.sign(_:)`'s fast path (the default header encoded once, the leaf key's signing
/// contexts made once and pooled) makes the JWS the general path makes.
@Suite("TestPKI signing")
struct TestPKISigningTests {
    @Test func theDefaultHeaderSignsAsAnyHeaderDoes() {
        let pki = Shared.pki
        let payload = TestPayloads.transaction()
        let fast = pki.sign(payload)
        let general = pki.sign(payloadJSON: JSONWriter.string(payload), header: pki.header())
        #expect(segment(.header, of: fast) == segment(.header, of: general))
        #expect(segment(.header, of: fast) == Base64Encoding.url(JSONWriter.string(pki.header())))
        #expect(segment(.payload, of: fast) == segment(.payload, of: general))
        #expect(base64URLDecode(segment(.signature, of: fast)).count == 64)
        for jws in [fast, general] {
            #expect(code { try Shared.verifier().verifyTransaction(jws) } == "OK")
        }
    }

    @Test func signaturesMadeOnManyThreadsAtOnceVerify() {
        let pki = TestPKI()
        let signed = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { lane in
            var local: [String] = []
            for index in 0..<25 {
                local.append(pki.sign(TestPayloads.transaction(transactionId: "20000000\(lane)000\(index)")))
            }
            signed.withLock { $0 += local }
        }
        let all = signed.withLock { $0 }
        #expect(all.count == 200)
        let verifier = Shared.verifier(roots: [pki.rootDER])
        #expect(all.allSatisfy { jws in code { try verifier.verifyTransaction(jws) } == "OK" })
    }

    @Test func aLeafOnAnotherCurveSignsWithItsSize() throws {
        // A P-384 leaf (the hostile corpus's): r and s of 48 bytes each, over SHA-256.
        let pki = TestPKI(TestPKI.Options(leafCurve: .p384), sharingRootWith: Shared.pki)
        let jws = pki.sign(["signedDate": 1])
        let raw = base64URLDecode(segment(.signature, of: jws))
        #expect(raw.count == 96)
        let input = Array((segment(.header, of: jws) + "." + segment(.payload, of: jws)).utf8)
        #expect(try Self.verifies(raw, over: input, certificate: pki.leafDER))
        #expect(code { try Shared.verifier().verifyTransaction(jws) } != "OK")
    }

    @Test func aSignatureOverBytesVerifiesWithOpenSSL() throws {
        let pki = Shared.pki
        let bytes = Array("any bytes at all".utf8)
        let raw = pki.signature(over: bytes)
        #expect(raw.count == 64)
        #expect(try Self.verifies(raw, over: bytes, certificate: pki.leafDER))
        #expect(try !Self.verifies(raw, over: bytes + [0], certificate: pki.leafDER))
    }

    /// OpenSSL's answer (`EVP_DigestVerify`, SHA-256) for the raw `r || s` signature over
    /// `bytes` by the certificate's key.
    static func verifies(_ raw: [UInt8], over bytes: [UInt8], certificate der: [UInt8]) throws -> Bool {
        let certificate = try #require(der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_X509(nil, &cursor, buffer.count)
        })
        defer { X509_free(certificate) }
        let key = try #require(X509_get0_pubkey(certificate))
        let half = raw.count / 2
        let signature = try #require(ECDSA_SIG_new())
        defer { ECDSA_SIG_free(signature) }
        let r = BN_bin2bn(raw, Int32(half), nil)
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + half, Int32(half), nil) }
        #expect(ECDSA_SIG_set0(signature, r, s) == 1)
        var derSignature: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_ECDSA_SIG(signature, &derSignature)
        defer { copenssl_free(derSignature) }
        let context = try #require(EVP_MD_CTX_new())
        defer { EVP_MD_CTX_free(context) }
        #expect(EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1)
        let verified = EVP_DigestVerify(context, derSignature, Int(length), bytes, bytes.count) == 1
        ERR_clear_error()
        return verified
    }
}
