import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestPKI
import TestSupport

/// A customer's account token is the `appAccountToken` of its latest-signed
/// transaction or renewal info carrying one (specification section 5): asking by
/// a token finds the customers whose account token it is now.
@Suite struct AccountTokenTests {
    let t0 = TestPayloads.january2025
    let day: Int64 = 86_400_000
    let first = "7e3fb20b-4cdb-47cc-936d-99d65f600001"
    let second = "7e3fb20b-4cdb-47cc-936d-99d65f600002"
    let moved = "704000000000000101"
    let stayed = "704000000000000102"

    func documents() -> [String] {
        [
            TestPayloads.body(signedTransactionInfo: E2E.pki.sign(TestPayloads.transaction(
                transactionId: "2000000000010001", appTransactionId: moved, purchaseDate: t0, expiresDate: t0 + 30 * day,
                signedDate: t0, appAccountToken: first))),
            // The same customer's renewal info, signed later, carries another token.
            TestPayloads.body(signedRenewalInfo: E2E.pki.sign(TestPayloads.renewalInfo(
                originalTransactionId: "2000000000010001", appTransactionId: moved, appAccountToken: second.uppercased(),
                extra: [("signedDate", .int(t0 + day))]))),
            TestPayloads.body(signedTransactionInfo: E2E.pki.sign(TestPayloads.transaction(
                transactionId: "2000000000010002", appTransactionId: stayed, purchaseDate: t0, expiresDate: t0 + 30 * day,
                signedDate: t0, appAccountToken: first))),
        ]
    }

    @Test func aTokenFindsTheCustomersWhoseLatestSignedTokenItIs() throws {
        let engine = try E2E.engine()
        // In either order: the latest-signed token decides, not the last to arrive.
        for order in [documents(), documents().reversed()] {
            _ = try engine.ingest(order.map { InputBytes($0) })
            let byFirst = try engine.query(.appAccountToken(first), at: t0 + 2 * day).json()
            #expect(byFirst["appTransactionIds"] == [.string(stayed)])
            let bySecond = try engine.query(.appAccountToken(second), at: t0 + 2 * day).json()
            #expect(bySecond["appTransactionIds"] == [.string(moved)])
            #expect(bySecond["entitlements"]?["pro"]?["active"] == .bool(true))
        }
        let unknown = try engine.query(.appAccountToken("7e3fb20b-4cdb-47cc-936d-99d65f600009")).json()
        #expect(unknown["error"]?["code"] == "NOT_FOUND")

        // An operator's customer selector by token names the one customer holding it now.
        let grant = try engine.grant(
            GrantRequest(id: "g-token", target: .customer(.appAccountToken(first)), entitlement: "pro", length: .days(3)), now: t0 + day)
        #expect(grant.json()["result"] == "appended", "\(grant.json())")
        #expect(try engine.state(of: stayed)?.operatorRecords.values.map(\.id) == ["g-token"])
    }
}
