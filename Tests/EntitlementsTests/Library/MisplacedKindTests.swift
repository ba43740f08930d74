import EntitlementCore
@testable import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// Specification sections 1 and 2: a JWS is the kind its place names. A transaction
/// sent as `signedRenewalInfo` (alone, in a status answer, or nested in a notification)
/// is `MALFORMED_INPUT` and quarantined; it never enters the log as renewal info, where
/// it would stand for the subscription's renewal state and its purchase would be lost.
@Suite struct MisplacedKindTests {
    static let t0 = TestPayloads.january2025
    static let transaction = TestPayloads.transaction(
        transactionId: "2000000000000801", originalTransactionId: "2000000000000801", signedDate: t0 + 10)

    @Test func aTransactionSentAsRenewalInfoIsRejectedWhole() throws {
        let path = E2E.folder().appendingPathComponent("misplaced.sqlite").path
        let engine = try E2E.engine(path: path)
        let tx = JSONValue.string(E2E.pki.sign(Self.transaction))
        let note = E2E.pki.sign(
            TestPayloads.notification(
                type: "DID_RENEW", uuid: "44444444-0000-4000-8000-000000000001", signedDate: Self.t0 + 12,
                signedTransactionInfo: E2E.pki.sign(Self.transaction), signedRenewalInfo: E2E.pki.sign(Self.transaction)))
        let documents: [(JSONValue, String)] = [
            (["signedRenewalInfo": tx], "renewal info payload: it has transactionId"),
            (
                ["data": [["lastTransactions": [["signedTransactionInfo": tx, "signedRenewalInfo": tx]]]]],
                "renewal info payload: it has transactionId"
            ),
            (["signedPayload": .string(note)], "data.signedRenewalInfo: renewal info payload: it has transactionId"),
        ]
        for (document, prefix) in documents {
            let results = try engine.ingest([InputBytes(JSONWriter.string(document))])
            #expect(results.contains { $0.outcome == .rejected && $0.errorCode == "MALFORMED_INPUT" }, "\(results)")
            #expect(results.contains { ($0.errorMessage ?? "").hasPrefix(prefix) }, "\(results.map { $0.errorMessage ?? "" })")
            #expect(!results.contains { $0.outcome == .appended && $0.kind == .renewalInfo })
        }
        let probe = try Probe(path)
        // Only the status answer's transaction, which is in its place, is appended.
        #expect(try probe.eventCount() == 1)
    }
}
