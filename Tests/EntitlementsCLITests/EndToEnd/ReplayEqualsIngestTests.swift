import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// Replay equals ingest, end to end: randomized signed histories ingested one by
/// one in random orders with duplicates give the same state as one batch, and a
/// replay of the log gives exactly that state again. The histories mix objects
/// that carry an appTransactionId with legacy ones that do not (links arriving
/// first, last, in the middle, twice, never, and conflicting: specification section
/// 5), and Production with Sandbox data (section 2).
@Suite struct ReplayEqualsIngestTests {
    static let day: Int64 = 86_400_000

    /// A randomized history of signed documents for a few customers.
    static func history(seed: UInt64) -> [String] {
        var random = SplitMix64(seed: seed)
        var documents: [String] = []
        let start = TestPayloads.january2025
        for c in 0..<4 {
            let app = "70400000000000\(1000 + c)"
            let otid = "20000000000\(10000 + c)"
            let environment = c == 2 ? "Production" : "Sandbox"
            var purchase = start + Int64(random.int(0..<5)) * day
            // Which periods' objects carry the appTransactionId: all; none before the last
            // (the link arrives last); only a middle one; or none (an otid: customer).
            let periods = random.int(2..<6)
            let linking = random.int(0..<4)
            func carries(_ n: Int) -> Bool {
                switch linking {
                case 0: return true
                case 1: return n == periods - 1
                case 2: return n == periods / 2
                default: return false
                }
            }
            // A subscription that renews a few times; sometimes with billing trouble, refunds, ties.
            for n in 0..<periods {
                let app: String? = carries(n) ? app : nil
                let id = "\(otid)\(n)"
                let expires = purchase + 30 * day
                let signed = purchase + 1000
                let tx = TestPayloads.transaction(
                    transactionId: id, originalTransactionId: otid, appTransactionId: app, productId: "com.example.pro.monthly",
                    purchaseDate: purchase, expiresDate: expires, signedDate: signed, appAccountToken: c == 0 ? "5a1c1f7e-0000-4000-8000-00000000000\(n)" : nil,
                    environment: environment)
                let retry = random.int(0..<4) == 0
                let renewal = TestPayloads.renewalInfo(
                    originalTransactionId: otid, appTransactionId: app, isInBillingRetryPeriod: retry,
                    gracePeriodExpiresDate: retry ? expires + 6 * day : nil, signedDate: signed, environment: environment)
                documents.append(
                    E2E.notification(
                        n == 0 ? "SUBSCRIBED" : "DID_RENEW", signed: signed + 10, transaction: tx, renewal: renewal, environment: environment))
                switch random.int(0..<5) {
                case 0:  // refunded later
                    let refunded = TestPayloads.transaction(
                        transactionId: id, originalTransactionId: otid, appTransactionId: app, purchaseDate: purchase, expiresDate: expires,
                        signedDate: signed + 5 * day, revocationDate: signed + 5 * day, revocationType: "REFUND_FULL", revocationReason: 0,
                        environment: environment)
                    documents.append(E2E.notification("REFUND", signed: signed + 5 * day + 10, transaction: refunded, environment: environment))
                case 1:  // a version with the same signedDate and different content: the raw JWS decides
                    let tie = TestPayloads.transaction(
                        transactionId: id, originalTransactionId: otid, appTransactionId: app, purchaseDate: purchase,
                        expiresDate: expires + 3 * day, signedDate: signed, environment: environment)
                    documents.append(E2E.notification("RENEWAL_EXTENDED", signed: signed + 20, transaction: tie, environment: environment))
                case 2:  // the same transaction also from the API
                    documents.append(TestPayloads.body(signedTransactionInfo: E2E.pki.sign(tx)))
                default: break
                }
                purchase = expires
            }
            // Consumables and passes.
            for n in 0..<random.int(0..<3) {
                let revoked = random.int(0..<2) == 0
                documents.append(
                    TestPayloads.body(
                        signedTransactionInfo: E2E.pki.sign(
                            TestPayloads.transaction(
                                transactionId: "3\(c)\(n)000", appTransactionId: app, productId: n % 2 == 0 ? "com.example.coins.100" : "com.example.pass.week",
                                type: n % 2 == 0 ? "Consumable" : "Non-Renewing Subscription", purchaseDate: start + Int64(n) * day,
                                expiresDate: nil, signedDate: start + Int64(n) * day + (revoked ? 9 * day : 500), quantity: Int64(1 + n),
                                revocationDate: revoked ? start + 9 * day : nil, revocationType: revoked ? "REFUND_PRORATED" : nil,
                                revocationPercentage: revoked ? Int64(random.int(1..<100_000)) : nil, environment: environment))))
            }
            // A lifetime unlock signed before Apple added appTransactionId; Apple's API
            // later re-signs it with one (the link), sometimes twice, sometimes never.
            let unlock = "6000000000\(10000 + c)"
            func lifetime(app: String?, signed: Int64) -> String {
                TestPayloads.body(
                    signedTransactionInfo: E2E.pki.sign(
                        TestPayloads.transaction(
                            transactionId: unlock, originalTransactionId: unlock, appTransactionId: app, productId: "com.example.lifetime",
                            type: "Non-Consumable", purchaseDate: start - 300 * day, expiresDate: nil, signedDate: signed,
                            environment: environment)))
            }
            documents.append(lifetime(app: nil, signed: start - 300 * day))
            for k in 0..<random.int(0..<3) { documents.append(lifetime(app: app, signed: start + Int64(10 + k) * day)) }
        }
        // A conflicting link: customer 3 claims customer 0's subscription, signed later or
        // in the same millisecond as customer 0's latest claim (the raw decides).
        if random.int(0..<2) == 0 {
            let signed = random.int(0..<2) == 0 ? start + 400 * day : start + 1000
            documents.append(
                TestPayloads.body(
                    signedRenewalInfo: E2E.pki.sign(
                        TestPayloads.renewalInfo(
                            originalTransactionId: "2000000000010000", appTransactionId: "704000000000001003", signedDate: signed))))
        }
        return documents
    }

    /// Every customer's answer at each moment, asked by appTransactionId, by
    /// `otid:` alias, by originalTransactionId and by transactionId.
    static func snapshot(_ engine: Engine, at moments: [Int64]) throws -> [String] {
        var lines: [String] = []
        for c in 0..<4 {
            let otid = "20000000000\(10000 + c)"
            let unlock = "6000000000\(10000 + c)"
            let queries: [CustomerQuery] = [
                .appTransactionId("70400000000000\(1000 + c)"), .appTransactionId("otid:" + otid), .originalTransactionId(otid),
                .originalTransactionId(unlock), .transactionId(unlock), .appTransactionId("otid:" + unlock),
            ]
            for query in queries {
                for at in moments { lines.append(JSONWriter.string(try engine.query(query, at: at).json())) }
            }
        }
        return lines
    }

    /// An engine taking Sandbox and Production data (the histories hold both).
    static func engine(rules: Rules = E2E.rules, path: String? = nil) throws -> Engine {
        var configuration = E2E.configuration(rules: rules)
        configuration.environments = [.sandbox, .production]
        return try Engine(configuration: configuration, databasePath: path ?? E2E.folder().appendingPathComponent("e2e.sqlite").path)
    }

    @Test(arguments: PropertySeeds.seeds([1, 2, 3]))
    func anyOrderWithDuplicatesThenReplayGivesTheSameState(seed: UInt64) throws {
        let documents = Self.history(seed: seed)
        let moments = (0..<8).map { TestPayloads.january2025 + Int64($0) * 20 * Self.day }

        let batch = try Self.engine()
        let results = try batch.ingest(documents.map(InputBytes.init))
        #expect(!results.contains { $0.outcome == .rejected }, "\(results.filter { $0.outcome == .rejected })")
        let expected = try Self.snapshot(batch, at: moments)
        let customers = try batch.replay(now: moments[3])
        #expect(customers.changed == 0)
        #expect(try Self.snapshot(batch, at: moments) == expected)

        var random = SplitMix64(seed: seed &* 7919)
        for _ in 0..<3 {
            var shuffled = documents + documents.filter { _ in random.int(0..<3) == 0 }
            random.shuffle(&shuffled)
            let oneByOne = try Self.engine()
            for document in shuffled { _ = try oneByOne.ingest([InputBytes(document)]) }
            #expect(try Self.snapshot(oneByOne, at: moments) == expected)
            for c in 0..<4 {
                for key in ["70400000000000\(1000 + c)", "otid:20000000000\(10000 + c)", "otid:6000000000\(10000 + c)"] {
                    #expect(try oneByOne.state(of: key) == batch.state(of: key))
                }
            }
            // Replay gives exactly the state that ingesting one by one gave.
            let report = try oneByOne.replay(now: moments[3])
            #expect(report.changed == 0)
            #expect(report.customers == customers.customers)
            #expect(try Self.snapshot(oneByOne, at: moments) == expected)
        }
    }

    @Test func aRulesChangeIsWarnedAboutAndReplayCountsWhoseAnswerChanges() throws {
        let path = E2E.folder().appendingPathComponent("rules.sqlite").path
        let documents = Self.history(seed: 9)
        let first = try Self.engine(path: path)
        _ = try first.ingest(documents.map(InputBytes.init))
        #expect(first.rulesWarning() == nil)

        var newRules = E2E.rules
        newRules.version = "e2e-2"
        newRules.products["com.example.pro.monthly"] = ProductRule(entitlements: ["pro", "support"])
        let second = try Self.engine(rules: newRules, path: path)
        #expect(second.rulesWarning()?.contains("replay") == true)
        let now = TestPayloads.january2025 + 10 * Self.day
        let report = try second.replay(diff: true, now: now)
        #expect(report.rulesVersion == "e2e-2")
        #expect(report.changed == 4)
        #expect(report.diffs.allSatisfy { $0.after.contains("support") })
        #expect(second.rulesWarning() == nil)
        // Same rules again: nothing changes.
        #expect(try second.replay(now: now).changed == 0)
    }

    /// An operator's action, recorded at a fixed moment so that every order records the same.
    struct OperatorAction {
        let name: String
        let run: (Engine) throws(EngineError) -> OperatorAnswer
    }

    /// Grants (one revoked), credits and links for each customer, named by the legacy
    /// unlock's originalTransactionId (a customer that may merge later), and grants to
    /// the app users themselves.
    static func operatorActions() -> [OperatorAction] {
        let base = TestPayloads.january2025
        var actions: [OperatorAction] = []
        for c in 0..<4 {
            let unlock = CustomerQuery.originalTransactionId("6000000000\(10000 + c)")
            let user = "acct-\(c % 2)"
            actions.append(OperatorAction(name: "grant \(c)") { engine throws(EngineError) in
                try engine.grant(
                    GrantRequest(id: "g\(c)", target: .customer(unlock), entitlement: "vip", from: base + 5 * day,
                        length: .until(base + (50 + Int64(c)) * day), force: true), now: base + 2 * day)
            })
            actions.append(OperatorAction(name: "credit \(c)") { engine throws(EngineError) in
                try engine.credit(id: "c\(c)", target: .customer(unlock), currency: "coins", units: 10 + Int64(c), now: base + 3 * day)
            })
            actions.append(OperatorAction(name: "link \(c)") { engine throws(EngineError) in
                try engine.link(id: "l\(c)", appUserId: user, customer: unlock, now: base + 4 * day)
            })
            actions.append(OperatorAction(name: "own grant \(c)") { engine throws(EngineError) in
                try engine.grant(
                    GrantRequest(id: "u\(c)", target: .appUser(user), entitlement: "vip", from: base + (60 + Int64(c)) * day,
                        length: .days(5), force: true), now: base + day)
            })
        }
        actions.append(OperatorAction(name: "revoke g1") { engine throws(EngineError) in
            try engine.revokeGrant(id: "g1", at: base + 20 * day, now: base + 21 * day)
        })
        actions.append(OperatorAction(name: "move customer 2") { engine throws(EngineError) in
            try engine.link(id: "l2-again", appUserId: "acct-1", customer: .originalTransactionId("600000000010002"), now: base + 30 * day)
        })
        return actions
    }

    @Test(arguments: PropertySeeds.seeds([4, 5]))
    func operatorActionsInAnyOrderThenReplayGiveTheSameAnswers(seed: UInt64) throws {
        let documents = Self.history(seed: seed)
        let actions = Self.operatorActions()
        let moments = (0..<8).map { TestPayloads.january2025 + Int64($0) * 10 * Self.day }
        func snapshot(_ engine: Engine) throws -> [String] {
            var lines = try Self.snapshot(engine, at: moments)
            for user in ["acct-0", "acct-1"] {
                for at in moments { lines.append(JSONWriter.string(try engine.query(appUserId: user, at: at).json())) }
            }
            return lines
        }
        /// Records what can be recorded (an action about a customer not seen yet waits).
        func record(_ pending: inout [OperatorAction], into engine: Engine, random: inout SplitMix64, all: Bool) throws {
            var waiting: [OperatorAction] = []
            for action in pending {
                guard all || random.int(0..<3) == 0 else {
                    waiting.append(action)
                    continue
                }
                switch try action.run(engine) {
                case .recorded: break
                case .refused(let refusal):
                    #expect(refusal.code == "NOT_FOUND", "\(action.name): \(refusal.message)")
                    waiting.append(action)
                }
            }
            pending = waiting
        }

        var random = SplitMix64(seed: seed &* 31)
        var expected: [String]? = nil
        for round in 0..<3 {
            let engine = try Self.engine()
            var order = documents + (round == 0 ? [] : documents.filter { _ in random.int(0..<3) == 0 })
            if round > 0 { random.shuffle(&order) }
            var pending = round == 0 ? [] : actions
            for document in order {
                _ = try engine.ingest([InputBytes(document)])
                try record(&pending, into: engine, random: &random, all: false)
            }
            if round == 0 { pending = actions }
            try record(&pending, into: engine, random: &random, all: true)
            try record(&pending, into: engine, random: &random, all: true)
            #expect(pending.isEmpty, "\(pending.map(\.name))")
            // Every action again: a duplicate.
            for action in actions {
                guard case .recorded(let outcome, _) = try action.run(engine) else {
                    Issue.record("\(action.name) refused on retry")
                    continue
                }
                #expect(outcome == .duplicate, "\(action.name)")
            }
            let answers = try snapshot(engine)
            if let expected { #expect(answers == expected) } else { expected = answers }
            #expect(answers.contains { $0.contains(#""grantId":"g0""#) })
            // Replay gives exactly what recording one by one gave.
            #expect(try engine.replay(now: moments[3]).changed == 0)
            #expect(try snapshot(engine) == answers)
            #expect(try engine.audit().firstMismatch == nil)
        }
    }
}
