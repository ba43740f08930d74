import EntitlementCore
import Entitlements
import EventStore
import Foundation
import TestPKI
import Testing
import TestSupport

/// Usage records and consumption answers through the library and the command line
/// (specification section 11), on cases worked by hand.
@Suite struct UsageConsumptionTests {
    static let t0 = TestPayloads.january2025
    static let day: Int64 = 86_400_000
    static let hour: Int64 = 3_600_000
    static let customer = "704000000000000001"

    static func coins(_ id: String, purchase: Int64, signed: Int64? = nil, revoked: Int64? = nil, type: String? = nil, percentage: Int64? = nil)
        -> String
    {
        TestPayloads.body(
            signedTransactionInfo: E2E.pki.sign(
                TestPayloads.transaction(
                    transactionId: id, productId: "com.example.coins.100", type: "Consumable", purchaseDate: purchase,
                    expiresDate: nil, signedDate: signed, revocationDate: revoked, revocationType: type,
                    revocationPercentage: percentage)))
    }

    static func product(_ id: String, _ productId: String, type: String, purchase: Int64, expires: Int64? = nil) -> String {
        TestPayloads.body(
            signedTransactionInfo: E2E.pki.sign(
                TestPayloads.transaction(transactionId: id, productId: productId, type: type, purchaseDate: purchase, expiresDate: expires)))
    }

    static func consumptionRequest(_ transactionId: String, productId: String, type: String, signed: Int64, uuid: String) -> String {
        TestPayloads.body(
            signedPayload: E2E.pki.sign(
                TestPayloads.notification(
                    type: "CONSUMPTION_REQUEST", uuid: uuid, signedDate: signed,
                    signedTransactionInfo: E2E.pki.sign(
                        TestPayloads.transaction(
                            transactionId: transactionId, productId: productId, type: type, purchaseDate: t0,
                            expiresDate: type == "Auto-Renewable Subscription" ? t0 + TestPayloads.thirtyDays : nil)),
                    consumptionRequestReason: "UNINTENDED_PURCHASE")))
    }

    static func spend(_ id: String, _ units: Int64, at: Int64?, customer: UsageCustomer = .appTransactionId(customer)) -> UsageRequest {
        UsageRequest(id: id, customer: customer, amount: .spend(currency: "coins", units: units), at: at)
    }

    static func refusal(_ answer: UsageAnswer) -> String? {
        if case .refused(let refusal) = answer { return refusal.code }
        return nil
    }

    /// Two packs of 100 coins (days 1 and 2); 30 spent on day 3, 120 on day 4 (A gives
    /// 70 more, B 50); B refunded 25 % prorated on day 5; 25 spent on day 6 (from the
    /// balance, but from no purchase: B is revoked by then, so it is skipped).
    @Test func coinsInTwoPacksSpentAcrossThemOneRefundedProrated() throws {
        let engine = try E2E.engine()
        let (a, b) = ("3000000000000001", "3000000000000002")
        _ = try engine.ingest([InputBytes(Self.coins(a, purchase: Self.t0 + Self.day)), InputBytes(Self.coins(b, purchase: Self.t0 + 2 * Self.day))])
        func balance(at: Int64) throws -> Int64? {
            guard case .customer(let view) = try engine.query(.appTransactionId(Self.customer), at: at) else { return nil }
            return view.balance("coins")
        }
        #expect(try balance(at: Self.t0 + 2 * Self.day) == 200)

        guard case .recorded(let first) = try engine.usage(Self.spend("u1", 30, at: Self.t0 + 3 * Self.day)) else {
            Issue.record("u1 refused")
            return
        }
        #expect(first.outcome == .appended)
        #expect(first.balance == 170)
        #expect(first.json()["kind"] == "usage")
        // More than the balance at the moment: refused, nothing recorded.
        #expect(Self.refusal(try engine.usage(Self.spend("u2", 171, at: Self.t0 + 4 * Self.day))) == "INSUFFICIENT_BALANCE")
        guard case .recorded(let second) = try engine.usage(Self.spend("u2", 120, at: Self.t0 + 4 * Self.day)) else {
            Issue.record("u2 refused")
            return
        }
        #expect(second.balance == 50)
        #expect(try balance(at: Self.t0 + 4 * Self.day) == 50)
        #expect(try balance(at: Self.t0 + 3 * Self.day) == 170)

        #expect(try engine.consumptionInfo(for: a)?.share.percentage == 100_000)
        #expect(try engine.consumptionInfo(for: b)?.share.percentage == 50_000)

        _ = try engine.ingest([
            InputBytes(Self.coins(b, purchase: Self.t0 + 2 * Self.day, signed: Self.t0 + 5 * Self.day, revoked: Self.t0 + 5 * Self.day,
                type: "REFUND_PRORATED", percentage: 25_000))
        ])
        #expect(try balance(at: Self.t0 + 5 * Self.day) == 25)  // 200 - 25 refunded - 150 spent
        guard case .recorded = try engine.usage(Self.spend("u3", 25, at: Self.t0 + 6 * Self.day)) else {
            Issue.record("u3 refused")
            return
        }
        #expect(try balance(at: Self.t0 + 6 * Self.day) == 0)
        let info = try #require(try engine.consumptionInfo(for: b))
        #expect(info.share == ConsumptionShare(percentage: 50_000, basis: .units, unitsSpent: 50, units: 100))
        #expect(info.body() == ["customerConsented": false, "consumptionPercentage": 50_000, "deliveryStatus": "DELIVERED", "sampleContentProvided": false])

        // Replay gives the same balances; the audit covers the usage records too.
        _ = try engine.replay()
        #expect(try balance(at: Self.t0 + 6 * Self.day) == 0)
        #expect(try balance(at: Self.t0 + 4 * Self.day) == 50)
        let audit = try engine.audit()
        #expect(audit.firstMismatch == nil)
        #expect(audit.triggersPresent)
        #expect(audit.events == 6)
    }

    /// 100 coins bought on day 0 and 100 on day 1, the second refunded in full on day
    /// 5, 50 spent on day 10. The balance on day 3 is 200, so 120 spent then is
    /// recorded, though it leaves the balance on day 10 at -70: only the balance at a
    /// spend's own moment is checked. More than the balance at that moment is refused,
    /// with nothing recorded.
    @Test func aSpendIsCheckedAgainstTheBalanceAtItsOwnMomentOnly() throws {
        let engine = try E2E.engine()
        let (a, b) = ("3000000000000001", "3000000000000002")
        _ = try engine.ingest([
            InputBytes(Self.coins(a, purchase: Self.t0)),
            InputBytes(Self.coins(b, purchase: Self.t0 + Self.day, signed: Self.t0 + 5 * Self.day, revoked: Self.t0 + 5 * Self.day, type: "REFUND_FULL")),
        ])
        func balance(at: Int64) throws -> Int64? {
            guard case .customer(let view) = try engine.query(.appTransactionId(Self.customer), at: at) else { return nil }
            return view.balance("coins")
        }
        guard case .recorded(let later) = try engine.usage(Self.spend("day-10", 50, at: Self.t0 + 10 * Self.day)) else {
            Issue.record("the spend on day 10 refused")
            return
        }
        #expect(later.balance == 50)
        #expect(try balance(at: Self.t0 + 3 * Self.day) == 200)

        guard case .recorded(let earlier) = try engine.usage(Self.spend("day-3", 120, at: Self.t0 + 3 * Self.day)) else {
            Issue.record("120 spent on day 3, when the balance is 200, refused")
            return
        }
        #expect(earlier.outcome == .appended)
        #expect(earlier.balance == 80)
        #expect(try balance(at: Self.t0 + 3 * Self.day) == 80)
        #expect(try balance(at: Self.t0 + 10 * Self.day) == -70)  // 200 - 100 refunded - 170 spent

        // More than the balance at the spend's own moment: refused, nothing recorded.
        let events = try engine.audit().events
        for (units, at) in [(81, Self.t0 + 4 * Self.day), (1, Self.t0 + 10 * Self.day), (1, Self.t0 - 1)] as [(Int64, Int64)] {
            guard case .refused(let refusal) = try engine.usage(Self.spend("over", units, at: at)) else {
                Issue.record("\(units) spent at \(at) recorded")
                continue
            }
            #expect(refusal.code == "INSUFFICIENT_BALANCE")
            #expect(refusal.message.contains("at \(at)"), "\(refusal.message)")
        }
        #expect(try engine.audit().events == events)
        #expect(try balance(at: Self.t0 + 4 * Self.day) == 80)
        #expect(try balance(at: Self.t0 + 10 * Self.day) == -70)
        // The refused id was never used: it records other content without a conflict.
        guard case .recorded(let fits) = try engine.usage(Self.spend("over", 80, at: Self.t0 + 4 * Self.day)) else {
            Issue.record("80 spent on day 4, when the balance is 80, refused")
            return
        }
        #expect(fits.outcome == .appended && fits.balance == 0)

        // Replay takes the log as it is: the same balances.
        _ = try engine.replay()
        #expect(try balance(at: Self.t0 + 4 * Self.day) == 0)
        #expect(try balance(at: Self.t0 + 10 * Self.day) == -150)
        #expect(try engine.audit().firstMismatch == nil)
    }

    @Test func idempotentByIdConflictingContentRefusedBadInputRefused() throws {
        let engine = try E2E.engine()
        _ = try engine.ingest([InputBytes(Self.coins("3000000000000001", purchase: Self.t0))])
        let at = Self.t0 + Self.day
        guard case .recorded(let first) = try engine.usage(Self.spend("same", 10, at: at)) else {
            Issue.record("refused")
            return
        }
        #expect(first.outcome == .appended)
        guard case .recorded(let again) = try engine.usage(Self.spend("same", 10, at: at, customer: .transactionId("3000000000000001"))) else {
            Issue.record("refused")
            return
        }
        #expect(again.outcome == .duplicate)
        // A retry without a moment is the same record.
        guard case .recorded(let retry) = try engine.usage(Self.spend("same", 10, at: nil)) else {
            Issue.record("refused")
            return
        }
        #expect(retry.outcome == .duplicate)
        #expect(retry.usage.at == at)
        #expect(Self.refusal(try engine.usage(Self.spend("same", 11, at: at))) == "USAGE_CONFLICT")
        #expect(Self.refusal(try engine.usage(Self.spend("same", 10, at: at + 1))) == "USAGE_CONFLICT")
        #expect(Self.refusal(try engine.usage(Self.spend("x", 1, at: at, customer: .appTransactionId("999")))) == "NOT_FOUND")
        #expect(Self.refusal(try engine.usage(Self.spend("x", 1, at: at, customer: .transactionId("999")))) == "NOT_FOUND")
        #expect(Self.refusal(try engine.usage(Self.spend("x", 0, at: at))) == "INVALID_USAGE")
        #expect(Self.refusal(try engine.usage(Self.spend("x", -5, at: at))) == "INVALID_USAGE")
        #expect(
            Self.refusal(try engine.usage(UsageRequest(id: "x", customer: .appTransactionId(Self.customer), amount: .spend(currency: "gold", units: 1), at: at)))
                == "UNKNOWN_CURRENCY")
        #expect(
            Self.refusal(try engine.usage(UsageRequest(id: "x", customer: nil, amount: .consumed(transactionId: "3000000000000001", share: 100_001))))
                == "INVALID_USAGE")
        #expect(
            Self.refusal(try engine.usage(UsageRequest(id: "x", customer: nil, amount: .consumed(transactionId: "999", share: 5)))) == "NOT_FOUND")
        // Spending before the purchase: nothing to spend then.
        #expect(Self.refusal(try engine.usage(Self.spend("x", 1, at: Self.t0 - 1))) == "INSUFFICIENT_BALANCE")
        #expect(try engine.audit().firstMismatch == nil)
    }

    /// A week's pass half used when Apple asks; a non-consumable with a recorded
    /// share; an auto-renewable (percentage left to Apple); the pending list.
    @Test func passNonConsumableAutoRenewableAndPendingRequests() throws {
        let engine = try E2E.engine()
        let now = Engine.now()
        let start = now - 4 * Self.day
        _ = try engine.ingest([
            InputBytes(Self.product("3000000000000010", "com.example.pass.week", type: "Non-Renewing Subscription", purchase: start)),
            InputBytes(Self.product("3000000000000011", "com.example.lifetime", type: "Non-Consumable", purchase: start)),
            InputBytes(Self.product("3000000000000012", "com.example.pro.monthly", type: "Auto-Renewable Subscription", purchase: start, expires: start + 30 * Self.day)),
        ])
        _ = try engine.ingest([
            InputBytes(Self.consumptionRequest("3000000000000010", productId: "com.example.pass.week", type: "Non-Renewing Subscription",
                signed: start + 3 * Self.day + 12 * Self.hour, uuid: "55555555-0000-4000-8000-000000000001")),
            InputBytes(Self.consumptionRequest("3000000000000011", productId: "com.example.lifetime", type: "Non-Consumable",
                signed: now - Self.hour, uuid: "55555555-0000-4000-8000-000000000002")),
            InputBytes(Self.consumptionRequest("3000000000000012", productId: "com.example.pro.monthly", type: "Auto-Renewable Subscription",
                signed: now - 2 * Self.hour, uuid: "55555555-0000-4000-8000-000000000003")),
        ])
        let pass = try #require(try engine.consumptionInfo(for: "3000000000000010", now: now))
        #expect(pass.share.percentage == 50_000)
        #expect(pass.pastDeadline)  // asked 12.5 hours ago

        let lifetime = try #require(try engine.consumptionInfo(for: "3000000000000011", now: now))
        #expect(lifetime.share.percentage == 0)
        _ = try engine.usage(UsageRequest(id: "c1", customer: nil, amount: .consumed(transactionId: "3000000000000011", share: 30_000), at: now - 3 * Self.day))
        _ = try engine.usage(UsageRequest(id: "c2", customer: nil, amount: .consumed(transactionId: "3000000000000011", share: 45_000), at: now - Self.day))
        let recorded = try #require(try engine.consumptionInfo(for: "3000000000000011", now: now))
        #expect(recorded.share == ConsumptionShare(percentage: 45_000, basis: .recorded))
        #expect(!recorded.pastDeadline)
        #expect(recorded.deadline == now - Self.hour + 12 * Self.hour)

        let subscription = try #require(try engine.consumptionInfo(for: "3000000000000012", now: now))
        #expect(subscription.share.percentage == nil)
        let body = subscription.body(ConsumptionOptions(customerConsented: true, refundPreference: "DECLINE"))
        #expect(body == ["customerConsented": true, "deliveryStatus": "DELIVERED", "refundPreference": "DECLINE", "sampleContentProvided": false])

        #expect(try engine.consumptionInfo(for: "999") == nil)

        let pending = try engine.pendingConsumptionRequests(now: now)
        #expect(pending.map(\.transactionId) == ["3000000000000012", "3000000000000011"])
        #expect(pending.first?.json() == [
            "transactionId": "3000000000000012", "appTransactionId": .string(Self.customer), "reason": "UNINTENDED_PURCHASE",
            "requestedAt": .int(now - 2 * Self.hour), "deadline": .int(now + 10 * Self.hour),
        ])
        // An accepted answer takes a request off the list; a refused one does not.
        try engine.recordConsumptionAnswer(StoredConsumptionAnswer(transactionId: "3000000000000011", sentAt: now, body: "{}", status: 400))
        #expect(try engine.pendingConsumptionRequests(now: now).count == 2)
        try engine.recordConsumptionAnswer(StoredConsumptionAnswer(transactionId: "3000000000000011", sentAt: now, body: "{}", status: 202))
        #expect(try engine.pendingConsumptionRequests(now: now).map(\.transactionId) == ["3000000000000012"])
        #expect(try engine.consumptionInfo(for: "3000000000000011", now: now)?.answered == true)
        #expect(try engine.pendingConsumptionRequests(now: now + 11 * Self.hour).isEmpty)
    }

    /// A request about data signed before appTransactionId existed (customer otid:X) names the
    /// appTransactionId X is linked to once a link arrives; usage recorded for otid:X follows X.
    @Test func legacyCustomersAnswerUnderTheirLink() throws {
        let engine = try E2E.engine()
        let now = Engine.now()
        let legacy = TestPayloads.transaction(
            transactionId: "3000000000000020", appTransactionId: nil, productId: "com.example.coins.100", type: "Consumable",
            purchaseDate: now - 2 * Self.day, expiresDate: nil)
        let request = TestPayloads.body(
            signedPayload: E2E.pki.sign(
                TestPayloads.notification(
                    type: "CONSUMPTION_REQUEST", uuid: "55555555-0000-4000-8000-000000000020", signedDate: now - Self.hour,
                    signedTransactionInfo: E2E.pki.sign(legacy), consumptionRequestReason: "OTHER")))
        _ = try engine.ingest([InputBytes(request)])
        #expect(try engine.pendingConsumptionRequests(now: now).first?.appTransactionId == "otid:3000000000000020")
        guard case .recorded(let spent) = try engine.usage(Self.spend("legacy-1", 40, at: now - Self.day, customer: .transactionId("3000000000000020"))) else {
            Issue.record("refused")
            return
        }
        #expect(spent.usage.customerKey == "otid:3000000000000020")
        // The same purchase re-signed with its appTransactionId links X to the customer.
        let linked = TestPayloads.transaction(
            transactionId: "3000000000000020", appTransactionId: Self.customer, productId: "com.example.coins.100", type: "Consumable",
            purchaseDate: now - 2 * Self.day, expiresDate: nil, signedDate: now - 30 * 60_000)
        _ = try engine.ingest([InputBytes(TestPayloads.body(signedTransactionInfo: E2E.pki.sign(linked)))])
        #expect(try engine.pendingConsumptionRequests(now: now).first?.appTransactionId == .some(Self.customer))
        guard case .customer(let view) = try engine.query(.appTransactionId(Self.customer), at: now) else {
            Issue.record("not found")
            return
        }
        #expect(view.balance("coins") == 60)
        #expect(try engine.consumptionInfo(for: "3000000000000020", now: now)?.share.percentage == 40_000)
    }

    /// The case above through `usage`: 120 spent on day 3 is recorded (exit 0), though a
    /// refund on day 5 and a spend on day 10 already recorded leave day 10 at -70; 81
    /// more on day 4, past the balance of 80 then, exits 1 with nothing recorded.
    @Test func theCommandLineChecksASpendAtItsOwnMomentOnly() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let input = [
            Self.coins("3000000000000001", purchase: Self.t0),
            Self.coins("3000000000000002", purchase: Self.t0 + Self.day, signed: Self.t0 + 5 * Self.day, revoked: Self.t0 + 5 * Self.day, type: "REFUND_FULL"),
        ].joined(separator: "\n")
        try Data(input.utf8).write(to: folder.appendingPathComponent("in.ndjson"))
        #expect(try E2E.run(["ingest", "--config", config, "in.ndjson"], in: folder).status == 0)
        func spend(_ id: String, _ units: Int64, day: Int64) throws -> (status: Int32, line: JSONValue?) {
            let run = try E2E.run(
                ["usage", "--config", config, "--id", id, "--app-transaction-id", Self.customer, "--currency", "coins", "--units", "\(units)",
                 "--at", "\(Self.t0 + day * Self.day)"], in: folder)
            return (run.status, run.lines.first)
        }
        func balance(day: Int64) throws -> JSONValue? {
            try E2E.run(["query", "--config", config, "--app-transaction-id", Self.customer, "--at", "\(Self.t0 + day * Self.day)"], in: folder)
                .lines.first?["balances"]?["coins"]
        }

        let later = try spend("day-10", 50, day: 10)
        #expect(later.status == 0 && later.line?["balance"] == 50)
        let earlier = try spend("day-3", 120, day: 3)
        #expect(earlier.status == 0, "\(String(describing: earlier.line))")
        #expect(earlier.line?["result"] == "appended" && earlier.line?["balance"] == 80)
        #expect(try balance(day: 10) == -70)

        let over = try spend("day-4", 81, day: 4)
        #expect(over.status == 1)
        #expect(over.line?["error"]?["code"] == "INSUFFICIENT_BALANCE")
        #expect(try balance(day: 4) == 80)
        let audit = try E2E.run(["audit", "--config", config], in: folder)
        #expect(audit.lines.first?["ok"] == true)
        #expect(audit.lines.first?["events"] == 4)  // two purchases (one refunded in place) and two spends
    }

    @Test func usageAndConsumptionThroughTheCommandLine() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let input = [Self.coins("3000000000000001", purchase: Self.t0), Self.coins("3000000000000002", purchase: Self.t0 + Self.day)]
            .joined(separator: "\n")
        try Data(input.utf8).write(to: folder.appendingPathComponent("in.ndjson"))
        #expect(try E2E.run(["ingest", "--config", config, "in.ndjson"], in: folder).status == 0)

        let spend = try E2E.run(
            ["usage", "--config", config, "--id", "order-1", "--app-transaction-id", Self.customer, "--currency", "coins", "--units", "150",
             "--at", "2025-01-03T00:00:00Z"], in: folder)
        #expect(spend.status == 0, "\(spend.stderr)")
        #expect(spend.lines.first == [
            "result": "appended", "kind": "usage", "eventId": "order-1", "appTransactionId": .string(Self.customer),
            "at": .int(Self.t0 + 2 * Self.day), "currency": "coins", "units": 150, "balance": 50,
        ])
        let again = try E2E.run(
            ["usage", "--config", config, "--id", "order-1", "--transaction-id", "3000000000000002", "--currency", "coins", "--units", "150",
             "--at", "\(Self.t0 + 2 * Self.day)"], in: folder)
        #expect(again.status == 0)
        #expect(again.lines.first?["result"] == "duplicate")
        let conflict = try E2E.run(
            ["usage", "--config", config, "--id", "order-1", "--app-transaction-id", Self.customer, "--currency", "coins", "--units", "1"],
            in: folder)
        #expect(conflict.status == 1)
        #expect(conflict.lines.first?["error"]?["code"] == "USAGE_CONFLICT")
        let tooMuch = try E2E.run(
            ["usage", "--config", config, "--id", "order-2", "--original-transaction-id", "3000000000000001", "--currency", "coins", "--units", "51"],
            in: folder)
        #expect(tooMuch.status == 1)
        #expect(tooMuch.lines.first?["error"]?["code"] == "INSUFFICIENT_BALANCE")
        let unknown = try E2E.run(
            ["usage", "--config", config, "--id", "order-3", "--app-transaction-id", "1", "--currency", "coins", "--units", "1"], in: folder)
        #expect(unknown.status == 1)
        #expect(unknown.lines.first?["error"]?["code"] == "NOT_FOUND")
        for bad in [["--currency", "coins", "--units", "0"], ["--transaction-id", "3000000000000001", "--consumed", "100001"]] {
            let run = try E2E.run(["usage", "--config", config, "--id", "bad", "--app-transaction-id", Self.customer] + bad, in: folder)
            #expect(run.status == 2, "\(bad)")
        }

        let query = try E2E.run(["query", "--config", config, "--app-transaction-id", Self.customer], in: folder)
        #expect(query.lines.first?["balances"] == ["coins": 50])

        let body = try E2E.run(
            ["consumption", "--config", config, "--transaction-id", "3000000000000002", "--customer-consented", "--refund-preference",
             "GRANT_PRORATED"], in: folder)
        #expect(body.status == 0, "\(body.stderr)")
        #expect(body.stdout == #"{"customerConsented":true,"consumptionPercentage":50000,"deliveryStatus":"DELIVERED","refundPreference":"GRANT_PRORATED","sampleContentProvided":false}"# + "\n")
        let missing = try E2E.run(["consumption", "--config", config, "--transaction-id", "42"], in: folder)
        #expect(missing.status == 1)
        #expect(missing.lines.first?["error"]?["code"] == "NOT_FOUND")
        let pending = try E2E.run(["consumption", "--config", config, "--pending"], in: folder)
        #expect(pending.status == 0)
        #expect(pending.stdout.isEmpty)
        #expect(try E2E.run(["consumption", "--config", config, "--transaction-id", "1", "--delivery-status", "LOST"], in: folder).status == 2)

        let audit = try E2E.run(["audit", "--config", config], in: folder)
        #expect(audit.lines.first?["ok"] == true)
        let replay = try E2E.run(["replay", "--config", config], in: folder)
        #expect(replay.lines.first?["changed"] == 0)
    }

    /// Migration 011 run again on a database whose log it left (its table and index for
    /// consumption requests dropped, the migration not recorded): they come back, and no
    /// event's seq or hash changes, the triggers stay and usage records are taken. (Its
    /// loosening of the log's check on a database made before it: `UsageKindMigrationTests`.)
    @Test func migrationKeepsTheLogAndItsTriggers() throws {
        let folder = E2E.folder()
        let path = folder.appendingPathComponent("old.sqlite").path
        let original: AuditReport
        do {
            let engine = try E2E.engine(path: path)
            _ = try engine.ingest([InputBytes(Self.coins("3000000000000001", purchase: Self.t0))])
            original = try engine.audit()
            try engine.checkpoint()
        }
        // What 011 adds besides the log's check, gone, and the migration not recorded.
        func sqlite(_ sql: String) throws -> String {
            let process = Process()
            let output = Pipe()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
            process.arguments = [path, sql]
            process.standardOutput = output
            try process.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let added = "SELECT count(*) FROM sqlite_master WHERE name IN ('consumption_answers', 'events_consumption_requests')"
        #expect(try sqlite(added) == "2")
        _ = try sqlite(
            """
            DROP TABLE consumption_answers;
            DROP INDEX events_consumption_requests;
            DELETE FROM schema_migrations WHERE identifier = '011_usage';
            """)
        #expect(try sqlite(added) == "0")

        let engine = try E2E.engine(path: path)
        #expect(try sqlite(added) == "2")
        let before = try engine.audit()
        #expect(before.headHash == original.headHash && before.headSeq == original.headSeq)
        guard case .recorded = try engine.usage(Self.spend("after-migration", 10, at: Self.t0 + 1)) else {
            Issue.record("refused after the migration")
            return
        }
        let after = try engine.audit()
        #expect(before.firstMismatch == nil && after.firstMismatch == nil)
        #expect(after.triggersPresent)
        #expect(after.events == before.events + 1)
    }
}
