import Testing
@testable import AppStoreVerification
import EntitlementCore
import JSONAndBase64
import TestPKI

/// Legacy app receipts made with the test PKI: every field type, both digests, and each
/// rejection with its code.
@Suite("Receipt verification")
struct ReceiptVerificationTests {
    static let bundleId = "com.example.receipts"
    static let created: Int64 = 1_600_000_000_000
    static let entries = [
        TestReceiptEntry(
            quantity: 2, productId: "com.example.coins", transactionId: "100", purchaseDate: 1_599_000_000_000),
        TestReceiptEntry(
            productId: "com.example.monthly", transactionId: "201", originalTransactionId: "200",
            purchaseDate: 1_599_500_000_000, originalPurchaseDate: 1_598_000_000_000, expiresDate: 1_602_000_000_000,
            webOrderLineItemId: 700_000_123, isTrialPeriod: true, isInIntroOfferPeriod: true),
        TestReceiptEntry(
            productId: "com.example.lifetime", transactionId: "300", purchaseDate: 1_599_100_000_000,
            cancellationDate: 1_599_200_000_000),
    ]

    static func payload(bundleId: String = bundleId, environment: String? = "ProductionSandbox", entries: [TestReceiptEntry] = entries)
        -> [UInt8]
    {
        TestReceipts.payload(bundleId: bundleId, environment: environment, creationDate: created, entries: entries)
    }

    static func verifier(_ pki: TestPKI = Shared.pki, environments: [AppStoreEnvironment] = [.sandbox]) throws -> ReceiptVerifier {
        try ReceiptVerifier(bundleId: bundleId, environments: environments, trustedRootsDER: [pki.rootDER])
    }

    static func code(_ body: () throws -> SignedReceipt) -> String? {
        do {
            _ = try body()
            return nil
        } catch let error as VerificationError {
            return error.code.rawValue
        } catch {
            return "\(error)"
        }
    }

    @Test(arguments: [TestReceipts.Digest.sha1, .sha256])
    func everyFieldReads(digest: TestReceipts.Digest) throws {
        let der = Shared.pki.signReceipt(Self.payload(), digest: digest)
        let receipt = try Self.verifier().verify(base64: Base64Encoding.standard(der))
        #expect(receipt.sha256 == SHA256.hex(der))
        #expect(receipt.payload.bundleId == Self.bundleId)
        #expect(receipt.payload.environment == .sandbox)
        #expect(receipt.payload.applicationVersion == "1.0")
        #expect(receipt.payload.creationDate == Self.created)
        #expect(receipt.payload.inApp.count == 3)
        let coins = receipt.payload.inApp[0]
        #expect(coins.quantity == 2 && coins.transactionId == "100" && coins.originalTransactionId == "100")
        #expect(coins.expiresDate == nil && coins.cancellationDate == nil && !coins.isTrialPeriod)
        let monthly = receipt.payload.inApp[1]
        #expect(monthly.productId == "com.example.monthly" && monthly.originalTransactionId == "200")
        #expect(monthly.purchaseDate == 1_599_500_000_000 && monthly.originalPurchaseDate == 1_598_000_000_000)
        #expect(monthly.expiresDate == 1_602_000_000_000 && monthly.webOrderLineItemId == "700000123")
        #expect(monthly.isTrialPeriod && monthly.isInIntroOfferPeriod)
        #expect(receipt.payload.inApp[2].cancellationDate == 1_599_200_000_000)
        #expect(receipt.parts.map(\.originalTransactionId) == ["100", "200", "300"])
        #expect(receipt.base64 == Base64Encoding.standard(der))
    }

    @Test func expiredLeafVerifiesAtCreationDate() throws {
        // Valid 2020-01-01 to 2021-01-01: long expired, but the receipt was made inside.
        let expired = TestPKI(.leafValid(Validity(notBefore: 1_577_836_800_000, notAfter: 1_609_459_200_000)), sharingRootWith: Shared.pki)
        _ = try Self.verifier().verify(base64: expired.receiptBase64(Self.payload(), digest: .sha1))
        // Made before the leaf was valid: refused.
        let later = TestPKI(.leafValid(Validity(notBefore: 1_700_000_000_000, notAfter: 1_900_000_000_000)), sharingRootWith: Shared.pki)
        #expect(Self.code { try Self.verifier().verify(base64: later.receiptBase64(Self.payload())) } == "INVALID_CHAIN")
    }

    @Test func rejections() throws {
        let verifier = try Self.verifier()
        func code(_ text: String) -> String? { Self.code { try verifier.verify(base64: text) } }
        // Not base64 (a bare word, as a mistyped line is read): said without naming a field it had not.
        for text in ["garbage", "abc=d", "===="] {
            do {
                _ = try verifier.verify(base64: text)
                Issue.record("\(text) verified")
            } catch {
                #expect(error.code.rawValue == "MALFORMED_INPUT")
                #expect(error.message.hasPrefix("not a receipt: a receipt is standard base64"), "\(error.message)")
            }
        }
        // Wrong OID on the leaf.
        let noOID = TestPKI(.init(leafHasAppleOID: false), sharingRootWith: Shared.pki)
        #expect(code(noOID.receiptBase64(Self.payload())) == "INVALID_CHAIN")
        // Another root.
        #expect(code(Shared.otherPKI.receiptBase64(Self.payload())) == "INVALID_CHAIN")
        // Another app, another environment.
        #expect(code(Shared.pki.receiptBase64(Self.payload(bundleId: "com.example.other"))) == "INVALID_APP_IDENTIFIER")
        #expect(code(Shared.pki.receiptBase64(Self.payload(environment: "Production"))) == "INVALID_ENVIRONMENT")
        #expect(code(Shared.pki.receiptBase64(Self.payload(environment: nil))) == "INVALID_ENVIRONMENT")
        // Altered content: one byte of a product id.
        var der = Shared.pki.signReceipt(Self.payload())
        let marker = Array("com.example.lifetime".utf8)
        let at = (0...(der.count - marker.count)).first { der[$0..<($0 + marker.count)].elementsEqual(marker) }!
        der[at + 12] ^= 0x01
        #expect(code(Base64Encoding.standard(der)) == "VERIFICATION_FAILURE")
        // Altered signature: the last byte of the SignedData is the signature's.
        var signature = Shared.pki.signReceipt(Self.payload())
        signature[signature.count - 1] ^= 0x01
        #expect(code(Base64Encoding.standard(signature)) == "VERIFICATION_FAILURE")
        // Bad inputs.
        #expect(code("not base64 at all!") == "MALFORMED_INPUT")
        #expect(code(Base64Encoding.standard([0x30, 0x03, 0x02, 0x01, 0x01])) == "MALFORMED_INPUT")
        #expect(code(Base64Encoding.standard(Shared.pki.rootDER)) == "MALFORMED_INPUT")
        #expect(code(String(repeating: "A", count: 6_000_000)) == "MALFORMED_INPUT")
        // An entry without a transaction id.
        var noTransaction = Self.entries[0]
        noTransaction.transactionId = ""
        #expect(code(Shared.pki.receiptBase64(Self.payload(entries: [noTransaction]))) == "MALFORMED_INPUT")
    }

    @Test func lyingLengthsAreMalformed() throws {
        var payload = Self.payload()
        // The outer SET claims more bytes than there are.
        payload[2] = 0xFF
        #expect(throws: ReceiptPayloadReader.Invalid.self) { try ReceiptPayloadReader.read(payload) }
        #expect(Self.code { try Self.verifier().verify(base64: Shared.pki.receiptBase64(payload)) } == "MALFORMED_INPUT")
        // Every truncation of a payload fails cleanly.
        let whole = Self.payload()
        for cut in stride(from: 0, to: whole.count, by: 7) {
            #expect(throws: ReceiptPayloadReader.Invalid.self) { try ReceiptPayloadReader.read(Array(whole.prefix(cut))) }
        }
    }

    @Test func unsignedEnvironmentsSkipTheChain() throws {
        let xcode = try Self.verifier(environments: [.xcode])
        _ = try xcode.verify(base64: Shared.otherPKI.receiptBase64(Self.payload(environment: "Xcode")))
    }
}
