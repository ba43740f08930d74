import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// Operator's and usage records at the edges: numbers past 64 bits are refused with a
/// precise code, and every record that appends moves the head record beside the
/// database, as a batch of Apple's data does (specification sections 3, 11 and 13).
@Suite struct OperatorRecordBoundsTests {
    let t0 = TestPayloads.january2025
    let app = "704000000000000001"

    func coins() -> InputBytes {
        InputBytes(
            TestPayloads.body(
                signedTransactionInfo: E2E.pki.sign(
                    TestPayloads.transaction(
                        transactionId: "2000000000000801", appTransactionId: app, productId: "com.example.coins.100",
                        type: "Consumable", purchaseDate: t0, expiresDate: nil))))
    }

    @Test func aGrantWhoseDaysEndPastTheLargestTimeIsRefusedNotACrash() async throws {
        let engine = try E2E.engine()
        _ = try await engine.ingest([coins()])
        let answer = try await engine.grant(
            GrantRequest(id: "far", target: .appUser("acct-1"), entitlement: "pro", from: Int64.max - 1000, length: .days(1)))
        #expect(answer.json()["error"]?["code"] == "INVALID_GRANT")
        #expect(try await engine.audit().events == 1)
    }

    @Test func aCreditPastTheLargestBalanceIsInvalidNotInsufficient() async throws {
        let engine = try E2E.engine()
        _ = try await engine.ingest([coins()])
        let answer = try await engine.credit(id: "big", target: .customer(.appTransactionId(app)), currency: "coins", units: Int64.max)
        #expect(answer.json()["error"]?["code"] == "INVALID_CREDIT")
        let message = answer.json()["error"]?["message"]
        #expect(message == .string("the balance of coins is 100; adding \(Int64.max) would pass the largest whole number (\(Int64.max))"))
        // Up to the largest whole number is a credit like any other.
        #expect(try await engine.credit(id: "most", target: .customer(.appTransactionId(app)), currency: "coins", units: Int64.max - 100)
            .json() == ["result": "appended", "id": "most"])
        #expect(OperatorCheck.creditRefusal(currency: "coins", units: -1, balance: Int64.min)?.code == "INSUFFICIENT_BALANCE")
    }

    @Test func anIdPastItsBoundIsRefusedBeforeAnythingIsRecorded() async throws {
        let engine = try E2E.engine()
        _ = try await engine.ingest([coins()])
        let long = String(repeating: "x", count: OperatorCheck.maximumIdBytes + 1)
        let answers = [
            try await engine.grant(GrantRequest(id: long, target: .customer(.appTransactionId(app)), entitlement: "pro", length: .days(3))).json(),
            try await engine.credit(id: long, target: .appUser("acct-1"), currency: "coins", units: 5).json(),
            try await engine.link(id: long, appUserId: "acct-1", customer: .appTransactionId(app)).json(),
            try await engine.revokeGrant(id: long).json(),
        ]
        for answer in answers {
            #expect(answer["error"]?["code"] == "INVALID_ID", "\(JSONWriter.string(answer))")
            #expect(answer["error"]?["message"] == .string("the id has 257 bytes; at most 256 are allowed (an order number or a UUID fits)"))
        }
        let usage = try await engine.usage(UsageRequest(id: long, customer: .appTransactionId(app), amount: .spend(currency: "coins", units: 1)))
        #expect(usage.json()["error"]?["code"] == "INVALID_USAGE")
        #expect(usage.json()["error"]?["message"] == .string("the usage id has 257 bytes; at most 256 are allowed (an order number or a UUID fits)"))
        #expect(try await engine.audit().events == 1)
        // At the bound, an id is like any other.
        let most = String(repeating: "x", count: OperatorCheck.maximumIdBytes)
        #expect(try await engine.credit(id: most, target: .appUser("acct-1"), currency: "coins", units: 5).json()["result"] == "appended")
    }

    @Test func operatorAndUsageRecordsMoveTheHeadRecord() async throws {
        let path = E2E.folder().appendingPathComponent("head.sqlite").path
        let engine = try E2E.engine(path: path)
        _ = try await engine.ingest([coins()])
        func recorded() throws -> String {
            try String(contentsOfFile: path + "-head", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        /// The record names the log's head, at `seq`.
        func expectHead(at seq: Int64, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let audit = try await engine.audit()
            #expect(audit.firstMismatch == nil && audit.headSeq == seq, sourceLocation: sourceLocation)
            #expect(try recorded() == "\(audit.headSeq):\(audit.headHash)", sourceLocation: sourceLocation)
        }
        try await expectHead(at: 1)

        _ = try await engine.grant(GrantRequest(id: "g1", target: .customer(.appTransactionId(app)), entitlement: "pro", length: .days(3)))
        try await expectHead(at: 2)
        _ = try await engine.credit(id: "c1", target: .appUser("acct-1"), currency: "coins", units: 5)
        try await expectHead(at: 3)
        _ = try await engine.link(id: "l1", appUserId: "acct-1", customer: .appTransactionId(app))
        try await expectHead(at: 4)
        _ = try await engine.revokeGrant(id: "g1")
        try await expectHead(at: 5)
        let usage = try await engine.usage(UsageRequest(id: "u1", customer: .appTransactionId(app), amount: .spend(currency: "coins", units: 1)))
        #expect(usage.json()["result"] == "appended")
        try await expectHead(at: 6)
        // A duplicate appends nothing and leaves the record where it was.
        _ = try await engine.credit(id: "c1", target: .appUser("acct-1"), currency: "coins", units: 5)
        try await expectHead(at: 6)
    }

    @Test func anAppUsersOwnKeyIsNoCustomerToActOn() async throws {
        let engine = try E2E.engine()
        _ = try await engine.ingest([coins()])
        #expect(try await engine.credit(id: "c1", target: .appUser("acct-1"), currency: "coins", units: 5).json()["result"] == "appended")
        let own = CustomerQuery.appTransactionId("user:acct-1")
        let answers = [
            try await engine.grant(GrantRequest(id: "g1", target: .customer(own), entitlement: "pro", length: .days(1))).json(),
            try await engine.credit(id: "c2", target: .customer(own), currency: "coins", units: 1).json(),
            try await engine.link(id: "l1", appUserId: "acct-1", customer: own).json(),
            try await engine.usage(UsageRequest(id: "u1", customer: .appTransactionId("user:acct-1"), amount: .spend(currency: "coins", units: 1))).json(),
        ]
        for answer in answers {
            #expect(answer["error"]?["code"] == "NOT_FOUND", "\(answer)")
            #expect(answer["error"]?["message"] == "no customer for appTransactionId user:acct-1", "\(answer)")
        }
        #expect(try await engine.audit().events == 2)
        // Nor is it one to read: query and history answer NOT_FOUND alike.
        guard case .notFound = try await engine.query(own), case .notFound = try await engine.history(own) else {
            Issue.record("an app user's own key answered as a customer")
            return
        }
        guard case .appUser(let user) = try await engine.query(appUserId: "acct-1") else {
            Issue.record("no app user")
            return
        }
        #expect(user.customers.isEmpty && user.balances == [CurrencyBalance(currency: "coins", amount: 5)])
    }

    @Test func anAppUserWithAGrantIsNoCustomerInTheStatistics() async throws {
        let engine = try E2E.engine()
        _ = try await engine.ingest([coins()])
        #expect(try await engine.statistics().customers == 1)
        _ = try await engine.grant(GrantRequest(id: "g1", target: .appUser("acct-1"), entitlement: "pro", from: t0, length: .days(30)))
        #expect(try await engine.statistics().customers == 1)
        #expect(try await engine.replay().customers == 1)
    }

    @Test func aSecondRevocationAtAnotherMomentSaysTheFirstStands() async throws {
        let engine = try E2E.engine()
        _ = try await engine.ingest([coins()])
        _ = try await engine.grant(GrantRequest(id: "g1", target: .appUser("acct-1"), entitlement: "pro", from: t0, length: .days(30)))
        #expect(try await engine.revokeGrant(id: "g1", at: t0 + 86_400_000).json()["result"] == "appended")
        let again = try await engine.revokeGrant(id: "g1", at: t0 + 2 * 86_400_000).json()
        #expect(again["error"]?["code"] == "ID_CONFLICT")
        guard case .string(let message)? = again["error"]?["message"] else {
            Issue.record("no message")
            return
        }
        #expect(message.hasSuffix("grant g1 is revoked once; that revocation stands"), "\(message)")
        #expect(!message.contains("use a new id"))
    }

    @Test func anAppUsersBalanceSumsWithoutWrapping() async throws {
        let engine = try E2E.engine()
        let other = "704000000000000002"
        _ = try await engine.ingest([
            coins(),
            InputBytes(
                TestPayloads.body(
                    signedTransactionInfo: E2E.pki.sign(
                        TestPayloads.transaction(
                            transactionId: "2000000000000802", appTransactionId: other, productId: "com.example.coins.100",
                            type: "Consumable", purchaseDate: t0, expiresDate: nil)))),
        ])
        for (id, customer) in [("a", app), ("b", other)] {
            #expect(try await engine.credit(id: id, target: .customer(.appTransactionId(customer)), currency: "coins", units: Int64.max - 100)
                .json()["result"] == "appended")
            #expect(try await engine.link(id: "l" + id, appUserId: "acct-1", customer: .appTransactionId(customer)).json()["result"] == "appended")
        }
        guard case .appUser(let user) = try await engine.query(appUserId: "acct-1") else {
            Issue.record("no app user")
            return
        }
        #expect(user.customers.count == 2)
        #expect(user.balances == [CurrencyBalance(currency: "coins", amount: Int64.max)])
        // Taking some from that balance is no attempt to go below zero.
        #expect(try await engine.credit(id: "take", target: .appUser("acct-1"), currency: "coins", units: -5).json()["result"] == "appended")
    }
}
