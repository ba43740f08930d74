import Testing
@testable import AppStoreVerification
import EntitlementCore
import TestPKI

/// Step 3 and 5: a payload whose signature verifies but which is not the App Store object it must be.
@Suite("Payload")
struct PayloadRejectionTests {
    let verifier = Shared.verifier()
    let pki = Shared.pki

    /// A JWS over arbitrary payload bytes, correctly signed.
    func signed(payloadBytes: [UInt8]) -> String {
        let input = Base64Encoding.url(Array(JSONWriter.string(pki.header()).utf8)) + "." + Base64Encoding.url(payloadBytes)
        return input + "." + Base64Encoding.url(pki.signature(over: Array(input.utf8)))
    }

    @Test func signedPayloadThatIsNotJSONIsMalformed() {
        for bytes in [Array("not json".utf8), [0xFF, 0xFE, 0x7B, 0x7D], Array("{\"a\":1}garbage".utf8), [],
                      Array("{\"signedDate\":1735689600000,\"signedDate\":1}".utf8), Array("\"text\"".utf8), Array("[1]".utf8)] {
            let error = verificationError { try verifier.verify(signed(payloadBytes: bytes)) }
            #expect(error?.code == .malformedInput, "\(bytes)")
        }
    }

    @Test func invalidUTF8InsideAJSONStringIsMalformed() {
        let bytes = Array("{\"transactionId\":\"".utf8) + [0xC3, 0x28] + Array("\",\"signedDate\":1735689600000}".utf8)
        let error = verificationError { try verifier.verify(signed(payloadBytes: bytes)) }
        #expect(error?.code == .malformedInput)
        #expect(error?.message.contains("UTF-8") == true)
    }

    @Test func deeplyNestedSignedPayloadIsMalformedNotACrash() {
        let depth = 100_000
        let bytes = [UInt8](repeating: UInt8(ascii: "["), count: depth) + [UInt8](repeating: UInt8(ascii: "]"), count: depth)
        let error = verificationError { try verifier.verify(signed(payloadBytes: bytes)) }
        #expect(error?.code == .malformedInput)
        #expect(error?.message.contains("nesting") == true)
    }

    @Test func deeplyNestedHeaderIsMalformedNotACrash() {
        let depth = 100_000
        let header = Base64Encoding.url([UInt8](repeating: UInt8(ascii: "["), count: depth) + [UInt8](repeating: UInt8(ascii: "]"), count: depth))
        let jws = replacing(.header, of: pki.sign(TestPayloads.transaction()), with: header)
        #expect(code { try verifier.verify(jws) } == "MALFORMED_INPUT")
    }

    @Test func missingSignedDateIsMalformed() {
        let payload = TestPayloads.transaction(extra: [("signedDate", .null)])
        let error = verificationError { try verifier.verifyTransaction(pki.sign(payload)) }
        #expect(error?.code == .malformedInput)
        #expect(error?.message == "transaction payload: field \"signedDate\": missing")
    }

    @Test func signedDateInSecondsIsMalformed() {
        let payload = TestPayloads.transaction(signedDate: 1_735_689_600)
        #expect(code { try verifier.verifyTransaction(pki.sign(payload)) } == "MALFORMED_INPUT")
    }

    @Test func modelDecodeErrorNamesTheField() {
        let missing = TestPayloads.transaction(extra: [("transactionId", .null)])
        // Classified by originalTransactionId as renewal info when asked generically; as a
        // transaction it lacks its transactionId.
        let error = verificationError { try verifier.verifyTransaction(pki.sign(missing)) }
        #expect(error?.code == .malformedInput)
        #expect(error?.message == "transaction payload: field \"transactionId\": missing")

        let wrongType = TestPayloads.transaction(extra: [("quantity", "one")])
        #expect(verificationError { try verifier.verifyTransaction(pki.sign(wrongType)) }?.message
            == "transaction payload: field \"quantity\": expected an integer, found string")
    }

    @Test func wrongKindForTheMethodIsMalformed() {
        let renewal = pki.sign(TestPayloads.renewalInfo())
        #expect(code { try verifier.verifyTransaction(renewal) } == "MALFORMED_INPUT")
        #expect(code { try verifier.verifyNotification(renewal) } == "MALFORMED_INPUT")
        #expect(code { try verifier.verifyAppTransaction(renewal) } == "MALFORMED_INPUT")
        // A transaction has originalTransactionId and signedDate too, but its transactionId
        // says what it is: taken as renewal info it would enter the log as what it is not.
        let transaction = pki.sign(TestPayloads.transaction())
        let error = verificationError { try verifier.verifyRenewalInfo(transaction) }
        #expect(error?.code == .malformedInput)
        #expect(error?.message == "renewal info payload: it has transactionId, so it is a transaction, not renewal info")
        #expect(code { try verifier.verifyAppTransaction(pki.sign(TestPayloads.notification())) } == "MALFORMED_INPUT")
        #expect(code { try verifier.verifyTransaction(pki.sign(TestPayloads.appTransaction())) } == "MALFORMED_INPUT")
        #expect(code { try verifier.verifyRenewalInfo(pki.sign(TestPayloads.renewalInfo())) } == "OK")
    }

    @Test func unclassifiablePayloadIsMalformed() {
        let jws = pki.sign(["signedDate": 1_735_689_600_000, "bundleId": "com.example.app"])
        let error = verificationError { try verifier.verify(jws) }
        #expect(error?.code == .malformedInput)
        #expect(error?.message.contains("none of notificationType, receiptType, transactionId, originalTransactionId") == true)
    }
}
