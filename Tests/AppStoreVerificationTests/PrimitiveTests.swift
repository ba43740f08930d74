import Foundation
import Testing
@testable import AppStoreVerification
import EntitlementCore
import TestPKI

@Suite("Primitives")
struct PrimitiveTests {
    @Test func sha256KnownAnswers() {
        #expect(SHA256.hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex(Array("abc".utf8)) == SHA256.hex("abc"))
        #expect(SHA256.hash("abc".utf8).count == 32)
        #expect(SHA256.hex(Array(repeating: UInt8(0x61), count: 1_000_000)[...])
            == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// The state after a prefix, continued, is SHA-256 of the whole: at every split of
    /// inputs around the 64-byte block size, and continued twice from one state.
    @Test func sha256PrefixContinuesToTheDigestOfTheWhole() {
        let message = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        for split in [0, 1, 55, 56, 63, 64, 65, 127, 128, 200, 299, 300] {
            let head = Array(message[..<split])
            let tail = Array(message[split...])
            let prefix = head.withUnsafeBufferPointer { SHA256.Prefix($0) }
            for _ in 0..<2 {
                var digest = [UInt8](repeating: 0, count: 32)
                tail.withUnsafeBufferPointer { tail in digest.withUnsafeMutableBufferPointer { prefix.digest(continuing: tail, into: $0.baseAddress!) } }
                #expect(digest == SHA256.hash(message), "split at \(split)")
            }
            let twoParts = head.withUnsafeBufferPointer { a in tail.withUnsafeBufferPointer { b in SHA256.Prefix(a, b) } }
            var whole = [UInt8](repeating: 0, count: 32)
            whole.withUnsafeMutableBufferPointer { twoParts.digest(continuing: UnsafeBufferPointer(start: nil, count: 0), into: $0.baseAddress!) }
            #expect(whole == SHA256.hash(message), "two parts split at \(split)")
            // The public two-part digest (the log's chain hash: its prefix, then the JWS where it lies).
            let joined = head.withUnsafeBufferPointer { a in tail.withUnsafeBufferPointer { b in SHA256.hash(a, b) } }
            #expect(joined == SHA256.hash(message), "SHA256.hash(_:_:) split at \(split)")
        }
    }

    /// The decoder works eight characters at a time where it can: a character outside the
    /// alphabet is refused at every position, and every length decodes what was encoded.
    @Test func base64URLDecodesAndRefusesAtEveryPosition() {
        for length in 0..<80 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 67 &+ length) }
            let text = Base64.encodeURL(bytes)
            #expect(decodeURL(text) == bytes, "length \(length)")
            for position in 0..<text.utf8.count {
                for bad: UInt8 in [UInt8(ascii: "="), UInt8(ascii: "+"), UInt8(ascii: "/"), 0x80, 0x00] {
                    var altered = Array(text.utf8)
                    altered[position] = bad
                    let refused = altered.withUnsafeBufferPointer { Base64.decodeURL($0) } == nil
                    #expect(refused, "\(bad) at \(position) of \(text.utf8.count)")
                }
            }
        }
    }

    /// Decoding accepts exactly the texts that are the encoding of what they decode to
    /// (the log keeps a signature as bytes on that ground): random texts of the alphabet,
    /// of padding and of other characters, at every length and every last character.
    @Test func base64URLAcceptsExactlyCanonicalTexts() {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var state: UInt64 = 0x5EED_B64
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        var accepted = 0
        var refused = 0
        for _ in 0..<20_000 {
            var text = (0..<next(90)).map { _ in alphabet[next(alphabet.count)] }
            if next(8) == 0, !text.isEmpty { text[next(text.count)] = [UInt8(ascii: "="), UInt8(ascii: "+"), UInt8(ascii: "."), 0xC3][next(4)] }
            let decoded = text.withUnsafeBufferPointer { Base64.decodeURL($0) }
            let canonical = decoded.map { Base64.encodeURL($0) == String(decoding: text, as: UTF8.self) } ?? false
            #expect((decoded != nil) == canonical, "\(String(decoding: text, as: UTF8.self))")
            if decoded != nil { accepted += 1 } else { refused += 1 }
        }
        #expect(accepted > 1_000 && refused > 1_000)
    }

    func decodeURL(_ text: String) -> [UInt8]? {
        var copy = text
        return copy.withUTF8 { Base64.decodeURL($0) }
    }

    @Test func base64URLIsStrict() {
        #expect(decodeURL("") == [])
        #expect(decodeURL("YQ") == Array("a".utf8))
        #expect(decodeURL("YWI") == Array("ab".utf8))
        #expect(decodeURL("YWJj") == Array("abc".utf8))
        #expect(decodeURL("-_-_") == [0xFB, 0xFF, 0xBF])
        #expect(decodeURL("YR") == nil)  // non-canonical trailing bits
        #expect(decodeURL("YWJ") == nil)
        #expect(decodeURL("Y") == nil)
        #expect(decodeURL("YQ==") == nil)
        #expect(decodeURL("+/+/") == nil)
        #expect(decodeURL("YW Jj") == nil)
    }

    @Test func base64StandardRequiresPadding() {
        #expect(Base64.decodeStandardPadded("YQ==") == Array("a".utf8))
        #expect(Base64.decodeStandardPadded("YWI=") == Array("ab".utf8))
        #expect(Base64.decodeStandardPadded("+/+/") == [0xFB, 0xFF, 0xBF])
        #expect(Base64.decodeStandardPadded("YQ") == nil)
        #expect(Base64.decodeStandardPadded("YQ=") == nil)
        #expect(Base64.decodeStandardPadded("Y===") == nil)
        #expect(Base64.decodeStandardPadded("====") == nil)
        #expect(Base64.decodeStandardPadded("-_-_") == nil)
        #expect(Base64.decodeStandardPadded("YR==") == nil)
        let random = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37) }
        for length in 0..<random.count {
            let slice = Array(random[0..<length])
            #expect(Base64.decodeStandardPadded(Base64Encoding.standard(slice)) == slice)
            #expect(decodeURL(Base64Encoding.url(slice)) == slice)
        }
    }

    @Test func iso8601() {
        #expect(UTCTime.iso8601(1_729_136_651_128) == "2024-10-17T03:44:11.128Z")
        #expect(UTCTime.iso8601(0) == "1970-01-01T00:00:00.000Z")
        #expect(UTCTime.iso8601(951_782_400_000) == "2000-02-29T00:00:00.000Z")
        #expect(UTCTime.iso8601(-1) == "1969-12-31T23:59:59.999Z")
        #expect(UTCTime.millis(year: 2045, month: 1, day: 1, hour: 0, minute: 0, second: 0) == 2_366_841_600_000)
    }

    @Test func ecdsaSignatureDEREncoding() {
        func encode(_ raw: [UInt8]) -> [UInt8] {
            var output = [UInt8](repeating: 0, count: 80)
            let length = raw.withUnsafeBufferPointer { input in
                output.withUnsafeMutableBufferPointer { P256PublicKey.encodeECDSASignature(input, into: $0.baseAddress!) }
            }
            return Array(output[0..<length])
        }
        let high = [UInt8](repeating: 0x80, count: 32)
        let low = [UInt8](repeating: 0, count: 31) + [0x01]
        #expect(encode(high + low) == [0x30, 0x26, 0x02, 0x21, 0x00] + high + [0x02, 0x01, 0x01])
        let zero = [UInt8](repeating: 0, count: 32)
        #expect(encode(zero + zero) == [0x30, 0x06, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00])
    }

    @Test func loadCertificateAcceptsDERAndPEM() throws {
        #expect(try loadCertificate(from: AppleRootCertificate.g3DER) == AppleRootCertificate.g3DER)
        let pem = Shared.pki.rootPEM
        #expect(pem.hasPrefix("-----BEGIN CERTIFICATE-----\n"))
        #expect(try loadCertificate(from: Array(pem.utf8)) == Shared.pki.rootDER)
        #expect(try loadCertificate(from: Array(("# comment\r\n" + pem.replacingOccurrences(of: "\n", with: "\r\n")).utf8)) == Shared.pki.rootDER)
        let pemG3 = "-----BEGIN CERTIFICATE-----\n" + Base64Encoding.standard(AppleRootCertificate.g3DER) + "\n-----END CERTIFICATE-----\n"
        #expect(try loadCertificate(from: Array(pemG3.utf8)) == AppleRootCertificate.g3DER)
    }

    @Test func loadCertificateRefusesAnythingElse() {
        for bytes in [[], Array("hello".utf8), Array("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".utf8),
                      Array("-----BEGIN CERTIFICATE-----\nMIIB".utf8), AppleRootCertificate.g3DER + [0], Array(AppleRootCertificate.g3DER.dropLast())] {
            #expect(verificationError { try loadCertificate(from: bytes) }?.code == .invalidCertificate)
        }
    }

    /// A PEM bundle is one file of several roots: only the first was read, the others
    /// dropped without a word, so a bundle that opens with another certificate trusted
    /// nothing it meant to.
    @Test func loadCertificateRefusesSeveralCertificatesInOneFile() throws {
        let pem = Shared.pki.rootPEM
        let pemG3 = "-----BEGIN CERTIFICATE-----\n" + Base64Encoding.standard(AppleRootCertificate.g3DER) + "\n-----END CERTIFICATE-----\n"
        for text in [pem + pemG3, pemG3 + "\n" + pem] {
            let error = verificationError { try loadCertificate(from: Array(text.utf8)) }
            #expect(error?.code == .invalidCertificate)
            #expect(error?.message.contains("more than one certificate") == true, "\(String(describing: error))")
        }
        #expect(try loadCertificate(from: Array((pem + "\n# end\n").utf8)) == Shared.pki.rootDER)
    }

    @Test func errorDescriptionAndCodes() {
        let error = VerificationError(.invalidChainLength, "x5c holds 2 certificates")
        #expect(error.description == "INVALID_CHAIN_LENGTH: x5c holds 2 certificates")
        #expect(VerificationError.Code.verificationFailure.rawValue == "VERIFICATION_FAILURE")
        #expect(VerificationError.Code.invalidAppIdentifier.rawValue == "INVALID_APP_IDENTIFIER")
        #expect(VerificationError.Code.invalidCertificate.rawValue == "INVALID_CERTIFICATE")
        #expect(VerificationError.Code.invalidChainLength.rawValue == "INVALID_CHAIN_LENGTH")
        #expect(VerificationError.Code.invalidChain.rawValue == "INVALID_CHAIN")
        #expect(VerificationError.Code.invalidEnvironment.rawValue == "INVALID_ENVIRONMENT")
        #expect(VerificationError.Code.malformedInput.rawValue == "MALFORMED_INPUT")
    }
}
