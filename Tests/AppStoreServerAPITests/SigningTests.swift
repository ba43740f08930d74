import AppStoreServerAPI
import EntitlementCore
import Foundation
import Testing

/// The In-App Purchase key and every signature form of specification section 10, each checked
/// with `openssl` (an implementation independent of the code under test).
@Suite struct SigningKeyTests {
    let folder = Tool.folder("keys")

    @Test func loadsAnUnencryptedPKCS8P256Key() throws {
        let path = try Tool.generateKey("key.p8", in: folder)
        #expect(try String(contentsOfFile: path, encoding: .utf8).hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let key = try SigningKey(path: path)
        #expect(key.publicKeyPEM.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        let message = Array("header.payload".utf8)
        let raw = key.signES256(message)
        #expect(raw.count == 64)
        #expect(try Tool.opensslVerifies(message: message, derSignature: Tool.der(fromRaw: raw), keyPath: path))
        #expect(try Tool.opensslVerifies(message: message, derSignature: key.signDER(message), keyPath: path))
        #expect(try !Tool.opensslVerifies(message: message + [0x21], derSignature: key.signDER(message), keyPath: path))
    }

    func error(_ path: String) -> SigningKeyError? {
        do {
            _ = try SigningKey(path: path)
            return nil
        } catch {
            return error
        }
    }

    @Test func aMissingFileIsKeyNotFound() {
        let failure = error(folder.appendingPathComponent("SubscriptionKey_NOPE.p8").path)
        #expect(failure?.code == .notFound)
        #expect(failure?.message.contains("SubscriptionKey_NOPE.p8") == true)
        #expect(failure?.message.contains("App Store Connect") == true)
        #expect(error(folder.path)?.code == .unreadable)
    }

    @Test func anRSAKeyIsTheWrongType() throws {
        let path = try Tool.generateKey("rsa.p8", in: folder, algorithm: ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])
        let failure = error(path)
        #expect(failure?.code == .wrongType)
        #expect(failure?.message.contains("RSA") == true)
    }

    @Test func aP384KeyIsTheWrongType() throws {
        let path = try Tool.generateKey("p384.p8", in: folder, algorithm: ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"])
        let failure = error(path)
        #expect(failure?.code == .wrongType)
        #expect(failure?.message.contains("P-256") == true)
        #expect(failure?.message.contains("secp384r1") == true)
    }

    @Test func anEd25519KeyIsTheWrongType() throws {
        let path = try Tool.generateKey("ed.p8", in: folder, algorithm: ["-algorithm", "ED25519"])
        #expect(error(path)?.code == .wrongType)
    }

    @Test func aPasswordProtectedKeyIsRefusedWithoutPrompting() throws {
        let plain = try Tool.generateKey("plain.p8", in: folder)
        try Tool.openssl(["pkcs8", "-topk8", "-in", plain, "-out", "encrypted.p8", "-passout", "pass:secret"], in: folder)
        let failure = error(folder.appendingPathComponent("encrypted.p8").path)
        #expect(failure?.code == .encrypted)
        #expect(failure?.message.contains("password") == true)
        // The traditional format with a Proc-Type header, too.
        try Tool.openssl(["ec", "-in", plain, "-out", "traditional.pem", "-aes128", "-passout", "pass:secret"], in: folder)
        #expect(error(folder.appendingPathComponent("traditional.pem").path)?.code == .encrypted)
    }

    @Test func somethingElseIsInvalid() throws {
        let text = folder.appendingPathComponent("notes.p8")
        try Data("not a key".utf8).write(to: text)
        #expect(error(text.path)?.code == .invalid)
        let broken = folder.appendingPathComponent("broken.p8")
        try Data("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".utf8).write(to: broken)
        #expect(error(broken.path)?.code == .invalid)
        let certificate = folder.appendingPathComponent("cert.pem")
        try Tool.openssl(
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "k.pem", "-subj", "/CN=x",
             "-days", "1", "-out", certificate.path], in: folder)
        #expect(error(certificate.path)?.code == .invalid)
    }
}

@Suite struct SignatureFormTests {
    static let folder = Tool.folder("signatures")
    static let keyPath = try! Tool.generateKey("SubscriptionKey_2X9R4HXF34.p8", in: folder)
    static let signer = AppStoreSigner(
        key: try! SigningKey(path: keyPath), keyId: "2X9R4HXF34", issuerId: "57246542-96fe-1a63-e053-0824d011072a",
        bundleId: "com.example.app")
    static let header = #"{"alg":"ES256","kid":"2X9R4HXF34","typ":"JWT"}"#

    @Test func apiToken() throws {
        let token = Self.signer.apiToken(issuedAt: 1_763_683_200)
        let decoded = try #require(try Tool.verifiedJWS(token, keyPath: Self.keyPath))
        #expect(decoded.header == Self.header)
        #expect(
            decoded.payload
                == #"{"iss":"57246542-96fe-1a63-e053-0824d011072a","iat":1763683200,"exp":1763683500,"aud":"appstoreconnect-v1","bid":"com.example.app"}"#
        )
    }

    @Test func promotionalOffer() throws {
        let jws = Self.signer.promotionalOffer(
            productId: "com.example.pro.monthly", offerIdentifier: "WINBACK50", transactionId: "2000000123456789",
            nonce: "20fba8a0-2b80-4a7d-a17f-85c1854727f8", issuedAt: 1_763_683_200)
        let decoded = try #require(try Tool.verifiedJWS(jws, keyPath: Self.keyPath))
        #expect(decoded.header == Self.header)
        #expect(
            decoded.payload
                == #"{"productId":"com.example.pro.monthly","offerIdentifier":"WINBACK50","transactionId":"2000000123456789","bid":"com.example.app","iss":"57246542-96fe-1a63-e053-0824d011072a","aud":"promotional-offer","iat":1763683200,"nonce":"20fba8a0-2b80-4a7d-a17f-85c1854727f8"}"#
        )
        // Without a transaction id the claim is left out (not null); still no exp.
        let bare = Self.signer.promotionalOffer(
            productId: "p", offerIdentifier: "o", transactionId: nil, nonce: "n", issuedAt: 1)
        let decodedBare = try #require(try Tool.verifiedJWS(bare, keyPath: Self.keyPath))
        #expect(decodedBare.payload == #"{"productId":"p","offerIdentifier":"o","bid":"com.example.app","iss":"57246542-96fe-1a63-e053-0824d011072a","aud":"promotional-offer","iat":1,"nonce":"n"}"#)
    }

    @Test func introductoryOfferEligibility() throws {
        for allow in [true, false] {
            let jws = Self.signer.introductoryOfferEligibility(
                productId: "com.example.pro.yearly", allowIntroductoryOffer: allow, transactionId: "704100000000000001",
                nonce: "0e6f7a52-5f43-4c0e-9d69-3c1f3f1b2a10", issuedAt: 1_763_683_201)
            let decoded = try #require(try Tool.verifiedJWS(jws, keyPath: Self.keyPath))
            #expect(decoded.header == Self.header)
            #expect(
                decoded.payload
                    == #"{"productId":"com.example.pro.yearly","allowIntroductoryOffer":\#(allow),"transactionId":"704100000000000001","bid":"com.example.app","iss":"57246542-96fe-1a63-e053-0824d011072a","aud":"introductory-offer-eligibility","iat":1763683201,"nonce":"0e6f7a52-5f43-4c0e-9d69-3c1f3f1b2a10"}"#
            )
        }
    }

    /// Non-ASCII text is escaped as Python's json.dumps escapes it (ensure_ascii).
    @Test func claimsAreEscapedAsApplesPythonLibraryEscapesThem() throws {
        let jws = Self.signer.promotionalOffer(
            productId: "café\u{1F600}\"\\\n\u{01}/", offerIdentifier: "o", transactionId: nil, nonce: "n", issuedAt: 1)
        let decoded = try #require(try Tool.verifiedJWS(jws, keyPath: Self.keyPath))
        #expect(decoded.payload.hasPrefix(#"{"productId":"caf\u00e9\ud83d\ude00\"\\\n\u0001/","#))
        // And it is JSON that reads back to the same text.
        let parsed = try JSONParser().parse(decoded.payload)
        #expect(parsed["productId"] == .string("café\u{1F600}\"\\\n\u{01}/"))
    }

    /// The V1 signature verifies with `openssl` over the message the test builds itself.
    @Test func promotionalOfferV1() throws {
        let signature = Self.signer.promotionalOfferV1(
            productId: "com.example.pro.monthly", offerId: "WINBACK50", appAccountToken: "7E3FB20B-4CDB-47CC-936D-99D65F608138",
            nonce: "20FBA8A0-2B80-4A7D-A17F-85C1854727F8", timestamp: 1_698_148_900_000)
        #expect(signature.keyId == "2X9R4HXF34")
        #expect(signature.nonce == "20fba8a0-2b80-4a7d-a17f-85c1854727f8")
        #expect(signature.timestamp == 1_698_148_900_000)
        let der = try #require(Data(base64Encoded: signature.signature))
        #expect(der.first == 0x30, "a DER ECDSA-Sig-Value")
        let separator = "\u{2063}"
        let reference =
            "com.example.app" + separator + "2X9R4HXF34" + separator + "com.example.pro.monthly" + separator + "WINBACK50" + separator
            + "7e3fb20b-4cdb-47cc-936d-99d65f608138" + separator + "20fba8a0-2b80-4a7d-a17f-85c1854727f8" + separator + "1698148900000"
        #expect(try Tool.opensslVerifies(message: Array(reference.utf8), derSignature: Array(der), keyPath: Self.keyPath))
        // The upper-case token would be another message: the signature does not cover it.
        let upper = reference.replacingOccurrences(of: "7e3fb20b-4cdb-47cc-936d-99d65f608138", with: "7E3FB20B-4CDB-47CC-936D-99D65F608138")
        #expect(try !Tool.opensslVerifies(message: Array(upper.utf8), derSignature: Array(der), keyPath: Self.keyPath))
    }
}
