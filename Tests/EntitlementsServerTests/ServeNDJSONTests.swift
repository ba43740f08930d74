import EntitlementCore
import Entitlements
import EntitlementsServer
import Foundation
import Testing
import TestPKI
import TestSupport

extension Reliability {
    /// `POST /transactions` with an NDJSON body, numbered as `ingest` numbers NDJSON lines.
    @Suite("Serve: NDJSON on POST /transactions")
    struct ServeNDJSON {
        @Test("POST /transactions with NDJSON: one array, each line's input number as ingest numbers NDJSON lines")
        func ndjsonTransactions() throws {
            let server = try TestServer()
            let pki = ServeSamples.pki
            let t1 = pki.sign(TestPayloads.transaction(transactionId: "2100000000000011", appTransactionId: "704200000000000011"))
            let t2 = pki.sign(
                TestPayloads.transaction(
                    transactionId: "2100000000000012", appTransactionId: "704200000000000011", productId: "com.example.lifetime",
                    type: "Non-Consumable", expiresDate: nil))
            let page = #"{"signedTransactions":[],"hasMore":false}"#
            // Lines 1, 3, 4 and 5; line 2 is blank (counted, as ingest counts it).
            let body = t1 + "\n\n" + t2 + "\r\n" + page + "\n" + "not a document" + "\n"
            let response = try server.exchange("POST", "/transactions", body: body)
            #expect(response.status == 200)
            guard case .array(let lines)? = response.json else {
                Issue.record("expected an array: \(response.text)")
                return
            }
            #expect(lines.count == 4, "\(response.text)")
            guard lines.count == 4 else { return }
            #expect(lines[0]["result"] == "appended" && lines[0]["input"] == 1)
            #expect(lines[1]["result"] == "appended" && lines[1]["input"] == 3)
            #expect(lines[2]["result"] == "empty" && lines[2]["input"] == 4)
            #expect(lines[3]["result"] == "rejected" && lines[3]["input"] == 5)
            #expect(try Probe(server.workspace.path("serve.sqlite")).eventCount() == 2)

            // The same lines again are duplicates; a single document keeps working as before.
            let again = try server.exchange("POST", "/transactions", body: t1 + "\n" + t2 + "\n")
            #expect(again.json?.element(0)?["result"] == "duplicate")
            #expect(again.json?.element(1)?["result"] == "duplicate")
            #expect(again.json?.element(1)?["input"] == 2)
            let single = try server.exchange("POST", "/transactions", body: t1 + "\n")
            #expect(single.json?.element(0)?["result"] == "duplicate")
            #expect(single.json?.element(0)?["input"] == 1)
            let indented = "{\n  \"signedTransactions\": [\"" + t1 + "\", \"" + t2 + "\"],\n  \"hasMore\": false\n}\n"
            let whole = try server.exchange("POST", "/transactions", body: indented)
            guard case .array(let wholeLines)? = whole.json else {
                Issue.record("expected an array: \(whole.text)")
                return
            }
            #expect(wholeLines.count == 2)
            #expect(wholeLines.allSatisfy { $0["result"] == "duplicate" && $0["input"] == 1 })
        }
    }
}
