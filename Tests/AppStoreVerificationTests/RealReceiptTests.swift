import Foundation
import Testing
@testable import AppStoreVerification
import EntitlementCore

/// The base64 receipt of `Fixtures/receipts/<name>.json` (`{"receipt-data": ...}`).
func realReceipt(_ name: String) throws -> String {
    let url = packageRoot().appendingPathComponent("Fixtures/receipts").appendingPathComponent(name + ".json")
    let data = try Data(contentsOf: url)
    guard case .string(let text)? = try JSONParser().parse(Array(data))["receipt-data"] else { throw SampleError() }
    return text
}

/// Genuine app receipts from public test fixtures (Fixtures/receipts), verified on Apple's
/// real chains to the embedded Apple Inc. Root.
@Suite("Real Apple receipts")
struct RealReceiptTests {
    @Test func embeddedRootIsAppleIncRoot() {
        #expect(AppleRootCertificate.incRootDER.count == 1215)
        #expect(SHA256.hex(AppleRootCertificate.incRootDER).uppercased()
            == "B0B1730ECBC7FF4505142C49F1295E6EDA6BCAED7E2C68C5BE91B5A11001F024")
    }

}

extension RealReceiptTests {
    @Test func sandboxG5ReceiptVerifies() throws {
        let verifier = try ReceiptVerifier(bundleId: "dev.bonzer.weeka.app", environments: [.sandbox])
        let receipt = try verifier.verify(base64: try realReceipt("receipt-sandbox-g5"))
        #expect(receipt.payload.environment == .sandbox)
        print("g5", receipt.payload.creationDate, receipt.payload.inApp.count, receipt.parts.map(\.originalTransactionId))
    }

    @Test func sandboxLegacySHA1ReceiptVerifies() throws {
        let verifier = try ReceiptVerifier(bundleId: "com.nutcall.alert", environments: [.sandbox])
        let receipt = try verifier.verify(base64: try realReceipt("receipt-sandbox-legacy"))
        print("legacy", receipt.payload.creationDate, receipt.payload.inApp.count, receipt.parts.map(\.originalTransactionId))
    }

    @Test func xcodeReceiptNeedsXcode() throws {
        let text = try realReceipt("receipt-xcode")
        let bundleId = "net.zachariadis.cyclemaps"
        #expect(throws: VerificationError.self) { try ReceiptVerifier(bundleId: bundleId, environments: [.sandbox]).verify(base64: text) }
        do {
            _ = try ReceiptVerifier(bundleId: bundleId, environments: [.sandbox]).verify(base64: text)
        } catch {
            #expect(error.code == .invalidChain)
        }
        let receipt = try ReceiptVerifier(bundleId: bundleId, environments: [.xcode]).verify(base64: text)
        print("xcode", receipt.payload.bundleId, receipt.payload.creationDate, receipt.payload.environmentName ?? "-")
    }

    @Test func offsetDates() {
        #expect(ReceiptDate.millis("2020-07-22T18:33:15+0100") == ReceiptDate.millis("2020-07-22T17:33:15Z"))
        #expect(ReceiptDate.millis("2020-07-22T18:33:15-01:30") == ReceiptDate.millis("2020-07-22T20:03:15Z"))
        #expect(ReceiptDate.millis("2020-07-22T17:33:15.250Z") == ReceiptDate.millis("2020-07-22T17:33:15Z")! + 250)
        #expect(ReceiptDate.millis("2020-07-22T17:33:15") == nil)
        #expect(ReceiptDate.millis("2020-02-30T17:33:15Z") == nil)
    }
}
