@testable import Entitlements
import Testing

/// Specification section 1: a line that is a JSON number, `true`, `false` or `null` is
/// no input, and is told so, not read as a receipt it could never be.
@Suite struct BareScalarInputTests {
    @Test(arguments: [("5", "number"), ("-12.5", "number"), ("true", "boolean"), ("false", "boolean"), ("null", "null")])
    func aJSONScalarIsNamed(line: String, type: String) {
        guard case .failure(let error) = InputDocument.items(Array(line.utf8)[...]) else {
            Issue.record("\(line) was taken for an input")
            return
        }
        #expect(error.code == "MALFORMED_INPUT")
        #expect(error.message.hasPrefix("a JSON \(type) is no input"), "\(error.message)")
    }

    /// Bare receipts and JWS still take their own paths: neither opens like a JSON scalar.
    @Test func aBareJWSOrReceiptIsNoScalar() {
        guard case .success(let items) = InputDocument.items(Array("eyJhbGciOiJFUzI1NiJ9.e30.c2ln".utf8)[...]) else {
            Issue.record("a bare JWS was refused")
            return
        }
        #expect(items.count == 1)
        guard case .success(let receipt) = InputDocument.items(Array("MIIT1gYJKoZIhvcNAQcCoIITxzCCE8MCAQEx".utf8)[...]) else {
            Issue.record("a bare receipt was refused")
            return
        }
        #expect(receipt.count == 1)
    }
}
