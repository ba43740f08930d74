import COpenSSL
import Testing
@testable import AppStoreVerification
import EntitlementCore
import TestPKI
import TestSupport

/// Bad input never crashes, and is always refused with one of the documented codes.
@Suite("Robustness")
struct RobustnessTests {
    static let knownCodes: Set<String> = [
        "VERIFICATION_FAILURE", "INVALID_APP_IDENTIFIER", "INVALID_CERTIFICATE", "INVALID_CHAIN_LENGTH", "INVALID_CHAIN",
        "INVALID_ENVIRONMENT", "MALFORMED_INPUT",
    ]

    @Test func hugeInputIsRefusedQuickly() {
        let huge = String(repeating: "A", count: 5 * 1024 * 1024)
        let error = verificationError { try Shared.verifier().verify(huge) }
        #expect(error?.code == .malformedInput)
        #expect(error?.message == "the JWS is 5242880 bytes; at most 1048576 are accepted")
        let hugeJWS = "eyJ9." + String(repeating: "A", count: 5 * 1024 * 1024) + ".x"
        #expect(code { try Shared.verifier().verify(hugeJWS) } == "MALFORMED_INPUT")
    }

    @Test func nonASCIIAndReplacementCharactersAreRefused() {
        let jws = Shared.pki.sign(TestPayloads.transaction())
        let invalidUTF8 = String(decoding: [0xFF, 0xFE, 0x2E, 0xC3, 0x28, 0x2E, 0x80], as: UTF8.self)
        for input in [invalidUTF8, "é.é.é", jws + "\n", " " + jws, jws.replacingOccurrences(of: ".", with: "\u{2024}"),
                      String(jws.prefix(40)) + "\u{0}" + String(jws.dropFirst(41))] {
            let result = code { try Shared.verifier().verify(input) }
            #expect(Self.knownCodes.contains(result), "\(result)")
        }
    }

    @Test func everyTruncationIsRefused() throws {
        let verifier = Shared.verifier()
        for jws in [Shared.pki.sign(TestPayloads.transaction()), try realSample("sandbox-consumable-transaction.json")] {
            let characters = Array(jws.utf8)
            for length in stride(from: 0, to: characters.count, by: 3) {
                let prefix = String(decoding: characters[0..<length], as: UTF8.self)
                let result = code { try verifier.verify(prefix) }
                #expect(Self.knownCodes.contains(result), "length \(length): \(result)")
            }
        }
    }

    @Test func randomMutationsNeverCrashOrPass() {
        let verifier = Shared.verifier()
        let jws = Shared.pki.sign(TestPayloads.notification(signedTransactionInfo: Shared.pki.sign(TestPayloads.transaction())))
        #expect(code { try verifier.verify(jws) } == "OK")
        var generator = SplitMix64(seed: 0x5EED)
        let original = Array(jws.utf8)
        let alphabet = Array("ABCxyz019-_.=+/ \u{7F}".utf8) + [0x00, 0x80, 0xFF]
        for round in 0..<1_500 {
            var bytes = original
            for _ in 0..<(1 + Int(generator.next() % 3)) {
                let position = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 3 {
                case 0: bytes[position] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                case 1: bytes.remove(at: position)
                default: bytes.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: position)
                }
            }
            guard bytes != original else { continue }
            let mutated = String(decoding: bytes, as: UTF8.self)
            guard mutated != jws else { continue }
            let result = code { try verifier.verify(mutated) }
            #expect(Self.knownCodes.contains(result), "round \(round): \(result)")
        }
    }
}


@Suite("OpenSSL hygiene")
struct OpenSSLHygieneTests {
    @Test func failuresLeaveNoErrorsQueued() {
        let verifier = Shared.verifier(cache: 0)
        let pki = Shared.pki
        ERR_clear_error()
        let inputs = [
            Shared.otherPKI.sign(TestPayloads.transaction()),
            flippingByte(of: pki.sign(TestPayloads.transaction()), in: .signature, at: 5),
            pki.sign(payloadJSON: "{}", header: pki.header(x5c: ["AAAA", "AAAA", "AAAA"])),
            TestPKI(.leafWithoutAppleOID, sharingRootWith: pki).sign(TestPayloads.transaction()),
            TestPKI(.init(leafCurve: .p384), sharingRootWith: pki).sign(TestPayloads.transaction()),
            replacing(.signature, of: pki.sign(TestPayloads.transaction()), with: Base64Encoding.url([UInt8](repeating: 0xFF, count: 64))),
        ]
        for input in inputs {
            #expect(code { try verifier.verify(input) } != "OK")
            #expect(ERR_peek_error() == 0)
        }
        _ = try? loadCertificate(from: [0x30, 0x03, 0x02, 0x01, 0x01])
        #expect(ERR_peek_error() == 0)
    }
}
