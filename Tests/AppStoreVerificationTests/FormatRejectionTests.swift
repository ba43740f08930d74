import Testing
@testable import AppStoreVerification
import EntitlementCore
import TestPKI

/// Step 1: what is not a compact JWS, or whose header is not an App Store header.
@Suite("Compact JWS and header")
struct FormatRejectionTests {
    let verifier = Shared.verifier()
    let pki = Shared.pki
    let payload = JSONWriter.string(TestPayloads.transaction())

    @Test(arguments: ["", "hello", "a.b", "a.b.c.d", ".eyJ9.sig", "eyJ9..sig", "...", "a.b.c.d.e"])
    func notThreeSegmentsIsMalformed(_ input: String) {
        #expect(code { try verifier.verify(input) } == "MALFORMED_INPUT")
        #expect(code { try verifier.verifyTransaction(input) } == "MALFORMED_INPUT")
        #expect(code { try verifier.verifyNotification(input) } == "MALFORMED_INPUT")
    }

    @Test func emptyInputSaysSo() {
        #expect(verificationError { try verifier.verify("") }?.message == "the JWS is empty")
    }

    @Test func headerThatIsNotBase64URLJSONObjectIsMalformed() {
        let jws = pki.sign(TestPayloads.transaction())
        for header in ["!!!!", "eyJ", Base64Encoding.url("not json"), Base64Encoding.url("[1,2]"), Base64Encoding.url("\"ES256\""),
                       "eyJhbGciOiJFUzI1NiJ9=", " eyJhbGciOiJFUzI1NiJ9"] {
            #expect(code { try verifier.verify(replacing(.header, of: jws, with: header)) } == "MALFORMED_INPUT", "\(header)")
        }
    }

    @Test(arguments: ["none", "HS256", "RS256", "ES384", "es256", ""])
    func algOtherThanES256IsVerificationFailure(_ alg: String) {
        let jws = pki.sign(payloadJSON: payload, header: pki.header(alg: alg))
        let error = verificationError { try verifier.verifyTransaction(jws) }
        #expect(error?.code == .verificationFailure)
        #expect(error?.message == "the JWS alg is \"\(alg)\"; App Store data is signed with ES256")
    }

    @Test func missingAlgIsVerificationFailure() {
        let jws = pki.sign(payloadJSON: payload, header: pki.header(alg: nil))
        #expect(code { try verifier.verifyTransaction(jws) } == "VERIFICATION_FAILURE")
    }

    @Test func unsignedAlgNoneTokenIsVerificationFailure() {
        // The classic attack: alg none, empty signature.
        let header = Base64Encoding.url(#"{"alg":"none"}"#)
        let jws = header + "." + Base64Encoding.url(payload) + "."
        #expect(code { try verifier.verify(jws) } == "VERIFICATION_FAILURE")
    }

    @Test func missingOrNonArrayX5cIsVerificationFailure() {
        for header: JSONValue in [["alg": "ES256"], ["alg": "ES256", "x5c": "MIIB"], ["alg": "ES256", "x5c": nil]] {
            let jws = pki.sign(payloadJSON: payload, header: header)
            #expect(code { try verifier.verifyTransaction(jws) } == "VERIFICATION_FAILURE")
        }
    }

    @Test func critHeaderIsVerificationFailure() {
        let jws = pki.sign(payloadJSON: payload, header: ["alg": "ES256", "x5c": .array(pki.x5c.map(JSONValue.string)), "crit": ["b64"]])
        #expect(code { try verifier.verifyTransaction(jws) } == "VERIFICATION_FAILURE")
    }

    @Test(arguments: [0, 1, 2, 4, 5])
    func x5cWithOtherThanThreeCertificatesIsInvalidChainLength(_ count: Int) {
        let certificates = Array((pki.x5c + pki.x5c).prefix(count))
        let jws = pki.sign(payloadJSON: payload, header: pki.header(x5c: certificates))
        let error = verificationError { try verifier.verifyTransaction(jws) }
        #expect(error?.code == .invalidChainLength)
        if count == 2 {
            #expect(error?.message == "x5c holds 2 certificates; Apple's chain has exactly 3 (leaf, intermediate, root)")
        }
    }

    @Test func x5cEntryThatIsNotADERCertificateIsInvalidCertificate() {
        let x5c = pki.x5c
        let trailing = Base64Encoding.standard(pki.intermediateDER + [0])
        let unpadded = x5c[0].replacingOccurrences(of: "=", with: "")
        let variants: [(Int, JSONValue)] = [
            (0, "not base64!"), (1, "AAAA"), (2, .string(Base64Encoding.standard(Array("hello".utf8)))),
            (1, .string(trailing)), (0, 42), (2, .string(urlSafeCharacter(in: x5c[2]))),
            (1, "MIIB\nAAAA"), (0, .string(unpadded == x5c[0] ? "A" : unpadded)), (1, ""),
        ]
        for (index, replacement) in variants {
            var entries = x5c.map(JSONValue.string)
            entries[index] = replacement
            let jws = pki.sign(payloadJSON: payload, header: ["alg": "ES256", "x5c": .array(entries)])
            let error = verificationError { try verifier.verifyTransaction(jws) }
            #expect(error?.code == .invalidCertificate, "x5c[\(index)] = \(replacement)")
            #expect(error?.message.hasPrefix("x5c[\(index)]") == true)
        }
    }

    /// The entry with one character of base64url's alphabet (`-`) in place of
    /// a standard one: always a change, whatever characters the test PKI's
    /// random certificate happens to encode to (a certificate whose base64
    /// held no `+` once made a `+`-to-`-` replacement a no-op).
    private func urlSafeCharacter(in entry: String) -> String {
        var characters = Array(entry)
        characters[characters.count / 2] = "-"
        return String(characters)
    }

    @Test func signatureThatIsNot64BytesIsVerificationFailure() {
        let jws = pki.sign(TestPayloads.transaction())
        for signature in ["", "AAAA", Base64Encoding.url([UInt8](repeating: 1, count: 63)),
                          Base64Encoding.url([UInt8](repeating: 1, count: 65)), Base64Encoding.url([UInt8](repeating: 0, count: 64)),
                          "!" + String(segment(.signature, of: jws).dropFirst())] {
            #expect(code { try verifier.verifyTransaction(replacing(.signature, of: jws, with: signature)) } == "VERIFICATION_FAILURE")
        }
    }

    @Test func signatureBySomeoneElseIsVerificationFailure() {
        // Signed by another PKI's leaf, but presenting this PKI's chain.
        let jws = Shared.otherPKI.sign(payloadJSON: payload, header: pki.header())
        let error = verificationError { try verifier.verifyTransaction(jws) }
        #expect(error?.code == .verificationFailure)
        #expect(error?.message == "the JWS signature does not verify with the leaf certificate's public key")
    }

    @Test func leafKeyThatIsNotP256IsVerificationFailure() {
        let p384 = TestPKI(.init(leafCurve: .p384))
        let jws = p384.sign(TestPayloads.transaction())
        let verifier = Shared.verifier(roots: [p384.rootDER])
        let error = verificationError { try verifier.verifyTransaction(jws) }
        #expect(error?.code == .verificationFailure)
        #expect(error?.message.contains("P-256") == true)
    }
}
