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

    @Test func printsReceipts() throws {
        for name in ["receipt-sandbox-g5", "receipt-sandbox-legacy"] {
            let verifier = try ReceiptVerifier(bundleId: "x", environments: [.sandbox])
            do {
                _ = try verifier.verify(base64: try realReceipt(name))
            } catch {
                print(name, error)
            }
        }
    }
}
