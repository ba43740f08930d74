import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// Operator's records about a customer known only by its originalTransactionId
/// follow it when its link arrives (specification sections 5 and 13), through the
/// library's async API; a replay gives exactly what recording them one by one gave.
@Suite struct OperatorIdentityTests {
    let t0 = TestPayloads.january2025
    let day: Int64 = 86_400_000
    let app = "704000000000000001"
    let unlock = "2000000000000701"

    func coins(app: String?, signed: Int64) -> InputBytes {
        InputBytes(
            TestPayloads.body(
                signedTransactionInfo: E2E.pki.sign(
                    TestPayloads.transaction(
                        transactionId: unlock, originalTransactionId: unlock, appTransactionId: app, productId: "com.example.coins.100",
                        type: "Consumable", purchaseDate: t0, expiresDate: nil, signedDate: signed))))
    }

    @Test func recordsFiledUnderAnOtidFollowTheMergeAndReplayReproducesThem() async throws {
        let engine = try E2E.engine()
        _ = try await engine.ingest([coins(app: nil, signed: t0)])
        let legacy = CustomerQuery.originalTransactionId(unlock)
        let context = OperatorContext(operatorName: "alice", reason: "support ticket 77")

        let grant = try await engine.grant(
            GrantRequest(id: "g1", target: .customer(legacy), entitlement: "pro", from: t0 + day, length: .until(t0 + 9 * day), context: context))
        #expect(grant.json() == ["result": "appended", "id": "g1"])
        #expect(try await engine.credit(id: "c1", target: .customer(legacy), currency: "coins", units: 20, context: context).json()
            == ["result": "appended", "id": "c1"])
        #expect(try await engine.link(id: "l1", appUserId: "acct-1", customer: legacy, context: context).json() == ["result": "appended", "id": "l1"])
        #expect(try await engine.revokeGrant(id: "g1", at: t0 + 5 * day, context: context).json() == ["result": "appended", "id": "g1"])

        // The link arrives: the otid: customer merges into its appTransactionId, with what the operator recorded.
        _ = try await engine.ingest([coins(app: app, signed: t0 + 1)])
        guard case .customer(let view) = try await engine.query(.appTransactionId(app), at: t0 + 2 * day) else {
            Issue.record("no customer")
            return
        }
        #expect(view.entitlement("pro") == EntitlementView(name: "pro", active: true, expiresDate: t0 + 5 * day, grantId: "g1"))
        guard case .appUser(let user) = try await engine.query(appUserId: "acct-1") else {
            Issue.record("no app user")
            return
        }
        #expect(user.customers.map(\.appTransactionId) == [app])
        #expect(user.balances == [CurrencyBalance(currency: "coins", amount: 120)])
        #expect(user.grants.map(\.grant.id) == ["g1"] && user.grants.first?.grant.record.operatorName == "alice")
        // Retries are duplicates, after the merge too.
        #expect(try await engine.credit(id: "c1", target: .customer(.appTransactionId(app)), currency: "coins", units: 20, context: context).json()
            == ["result": "duplicate", "id": "c1"])

        let before = try engine.state(of: app)
        let replay = try await engine.replay()
        #expect(replay.changed == 0)
        #expect(try engine.state(of: app) == before)
        let audit = try await engine.audit()
        #expect(audit.firstMismatch == nil && audit.events == 6)
    }

    @Test func aUsageRecordedUnderAnOtidIsADuplicateWhenRetriedAfterTheMergeByEitherName() async throws {
        let engine = try E2E.engine()
        _ = try await engine.ingest([coins(app: nil, signed: t0)])
        let spend = UsageAmount.spend(currency: "coins", units: 60)
        let first = try await engine.usage(UsageRequest(id: "u1", customer: .originalTransactionId(unlock), amount: spend, at: t0 + day))
        #expect(first.json()["result"] == "appended")
        // The link arrives: the record follows its customer.
        _ = try await engine.ingest([coins(app: app, signed: t0 + 1)])
        for customer in [UsageCustomer.originalTransactionId(unlock), .appTransactionId(app)] {
            let retry = try await engine.usage(UsageRequest(id: "u1", customer: customer, amount: spend, at: t0 + day))
            #expect(retry.json()["result"] == "duplicate", "\(customer): \(retry.json())")
            // Named as the customer it belongs to now, as ingest's duplicates are.
            #expect(retry.json()["appTransactionId"] == .string(app), "\(customer): \(retry.json())")
            if case .recorded(let receipt) = retry { #expect(receipt.balance == 40) }
        }
        // Other content under the id is still a conflict.
        let other = try await engine.usage(
            UsageRequest(id: "u1", customer: .appTransactionId(app), amount: .spend(currency: "coins", units: 61), at: t0 + day))
        #expect(other.json()["error"]?["code"] == "USAGE_CONFLICT")
    }

    /// A retry (after a timeout, say) is answered `duplicate`, whatever has changed since:
    /// the grant's end has passed, or the entitlement needed `force` the first time.
    @Test func theSameGrantAgainIsADuplicateOnceItsEndHasPassedOrWithoutForce() async throws {
        let engine = try E2E.engine()
        _ = try await engine.ingest([coins(app: app, signed: t0)])
        let customer = CustomerQuery.appTransactionId(app)
        let now = t0 + day
        let short = GrantRequest(id: "short", target: .customer(customer), entitlement: "pro", length: .until(now + 3_000))
        #expect(try await engine.grant(short, now: now).json() == ["result": "appended", "id": "short"])
        #expect(try await engine.grant(short, now: now + 4_000).json() == ["result": "duplicate", "id": "short"])
        var forced = GrantRequest(id: "beta", target: .customer(customer), entitlement: "beta-feature", length: .days(3), force: true)
        #expect(try await engine.grant(forced, now: now).json() == ["result": "appended", "id": "beta"])
        forced.force = false
        #expect(try await engine.grant(forced, now: now + 1).json() == ["result": "duplicate", "id": "beta"])
        // A new grant is still checked: an end already past, an entitlement no product gives.
        let late = GrantRequest(id: "late", target: .customer(customer), entitlement: "pro", length: .until(now + 3_000))
        #expect(try await engine.grant(late, now: now + 4_000).json()["error"]?["code"] == "INVALID_GRANT")
        let unknown = GrantRequest(id: "unknown", target: .customer(customer), entitlement: "beta-feature", length: .days(3))
        #expect(try await engine.grant(unknown, now: now).json()["error"]?["code"] == "UNKNOWN_ENTITLEMENT")
        #expect(try await engine.audit().events == 3)  // the purchase and the two grants
    }

    @Test func anIdNamesOneOperatorActionWhateverItsKind() async throws {
        let engine = try E2E.engine()
        _ = try await engine.ingest([coins(app: app, signed: t0)])
        let customer = CustomerQuery.appTransactionId(app)
        let grant = try await engine.grant(GrantRequest(id: "ticket-9", target: .customer(customer), entitlement: "pro", length: .days(3)))
        #expect(grant.json() == ["result": "appended", "id": "ticket-9"])
        let credit = try await engine.credit(id: "ticket-9", target: .customer(customer), currency: "coins", units: 5)
        #expect(credit.json()["error"]?["code"] == "ID_CONFLICT")
        if case .string(let message)? = credit.json()["error"]?["message"] { #expect(message.contains("for a grant")) }
        #expect(try await engine.link(id: "ticket-9", appUserId: "acct-9", customer: customer).json()["error"]?["code"] == "ID_CONFLICT")
        #expect(try await engine.credit(id: "ticket-10", target: .customer(customer), currency: "coins", units: 5).json()["result"] == "appended")
        let regrant = try await engine.grant(GrantRequest(id: "ticket-10", target: .customer(customer), entitlement: "pro", length: .days(3)))
        #expect(regrant.json()["error"]?["code"] == "GRANT_CONFLICT")
        // The grant's revocation takes the grant's id.
        #expect(try await engine.revokeGrant(id: "ticket-9").json() == ["result": "appended", "id": "ticket-9"])
        #expect(try await engine.audit().events == 4)  // the purchase, the grant, the credit, the revocation
    }
}
