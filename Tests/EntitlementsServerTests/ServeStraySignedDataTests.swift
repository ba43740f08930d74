import EntitlementCore
import Entitlements
import EntitlementsServer
import Foundation
import Testing
import TestPKI
import TestSupport

extension Reliability {
    /// Specification section 3 on `serve`'s two ingest routes: a document carrying a JWS
    /// where nothing reads it is rejected whole and quarantined, as `ingest` rejects it.
    @Suite("Serve: stray signed data")
    struct ServeStraySignedData {
        @Test("POST /notifications and POST /transactions reject a document with a JWS nothing reads, naming where it sits")
        func strayJWSIsRejectedWhole() throws {
            let server = try TestServer()
            let pki = ServeSamples.pki
            let transaction = JSONValue.string(
                pki.sign(TestPayloads.transaction(transactionId: "2100000000000031", appTransactionId: "704200000000000031")))
            let notification = JSONValue.string(
                pki.sign(TestPayloads.notification(type: "TEST", uuid: "5e000000-0000-4000-8000-000000000031")))

            let bodies: [(route: String, body: JSONValue, path: String)] = [
                ("/notifications", ["signedPayload": notification, "extra": transaction], "extra"),
                ("/notifications", ["signedPayload": notification, "sendAttempts": [["attemptDate": 1, "body": transaction]]], "sendAttempts[0].body"),
                ("/transactions", ["signedTransactions": [transaction], "hasMore": false, "extraSigned": transaction], "extraSigned"),
                (
                    "/transactions",
                    ["data": [["lastTransactions": [["signedTransactionInfo": transaction, "signedFoo": transaction]]]]],
                    "data[0].lastTransactions[0].signedFoo"
                ),
            ]
            for (route, body, path) in bodies {
                let response = try server.exchange("POST", route, body: JSONWriter.string(body))
                #expect(response.status == 200, "\(route): \(response.text)")
                let line = route == "/notifications" ? response.json : response.json?.firstElement
                if case .array(let lines)? = response.json { #expect(lines.count == 1, "\(response.text)") }
                #expect(line?["result"] == "rejected", "\(route): \(response.text)")
                #expect(line?["error"]?["code"] == "MALFORMED_INPUT", "\(route): \(response.text)")
                #expect(text(line?["error"]?["message"])?.hasPrefix(path + " holds signed data") == true, "\(route): \(response.text)")
            }
            let probe = try Probe(server.workspace.path("serve.sqlite"))
            #expect(try probe.eventCount() == 0)
            #expect(try probe.int("SELECT count(*) FROM quarantine WHERE code = 'MALFORMED_INPUT'") == Int64(bodies.count))
        }
    }
}
