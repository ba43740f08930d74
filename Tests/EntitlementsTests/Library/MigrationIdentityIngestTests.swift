import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestPKI
import TestSupport

/// A migrated subscription whose signed data carries `previousOriginalTransactionId`
/// and no `appTransactionId`, through the store: it joins the customer of the
/// subscription it came from, whatever the order and batching of arrival, and
/// replay gives what ingest gave.
@Suite(.serialized) struct MigrationIdentityIngestTests {
    static let pki = E2E.pki
    static let app = "704000000000000077"
    static let day: Int64 = 86_400_000
    static let t0 = TestPayloads.january2025
    static let legacy = "2000000000009501"
    static let migrated = "2000000000009601"

    static var rules: Rules {
        var rules = E2E.rules
        rules.skus = ["SKU-ALPHA": ProductRule(entitlements: ["alpha"])]
        return rules
    }

    static func migratedTransaction(_ id: String, purchase: Int64) -> JSONValue {
        TestPayloads.transaction(
            transactionId: id, originalTransactionId: migrated, appTransactionId: nil, productId: "com.example.commerce.generic",
            purchaseDate: purchase, expiresDate: purchase + 30 * day, signedDate: purchase,
            extra: [
                ("advancedCommerceInfo", ["items": [["SKU": "SKU-ALPHA", "price": 3000]], "period": "P1M", "requestReferenceId": .string("ref-" + id)]),
                ("previousOriginalTransactionId", .string(legacy)),
            ])
    }

    /// The legacy subscription (no appTransactionId), its migration and a renewal
    /// of the migrated one (no appTransactionId either), then a renewal info of
    /// the legacy subscription that names the customer.
    static let documents: [String] = [
        TestPayloads.body(signedTransactionInfo: pki.sign(TestPayloads.transaction(
            transactionId: legacy, appTransactionId: nil, purchaseDate: t0, expiresDate: t0 + 30 * day, signedDate: t0))),
        E2E.notification("MIGRATION", signed: t0 + 30 * day, transaction: migratedTransaction(migrated, purchase: t0 + 30 * day)),
        E2E.notification("DID_RENEW", signed: t0 + 60 * day, transaction: migratedTransaction("2000000000009602", purchase: t0 + 60 * day)),
        TestPayloads.body(signedRenewalInfo: pki.sign(TestPayloads.renewalInfo(
            originalTransactionId: legacy, appTransactionId: app, autoRenewStatus: 0, extra: [("signedDate", .int(t0 + 29 * day))]))),
        // A renewal info of the migrated subscription that says nothing of where it came from.
        TestPayloads.body(signedRenewalInfo: pki.sign(TestPayloads.renewalInfo(
            originalTransactionId: migrated, appTransactionId: nil, autoRenewProductId: "com.example.commerce.generic",
            productId: "com.example.commerce.generic", extra: [("signedDate", .int(t0 + 31 * day))]))),
        // A subscription migrated from the migrated one, without appTransactionId either.
        TestPayloads.body(signedTransactionInfo: pki.sign(TestPayloads.transaction(
            transactionId: "2000000000009701", appTransactionId: nil, purchaseDate: t0 + 90 * day, expiresDate: t0 + 120 * day,
            signedDate: t0 + 90 * day, extra: [("previousOriginalTransactionId", .string(migrated))]))),
    ]

    /// Ingests `order` of ``documents``, one batch each or all in one.
    static func engine(_ order: [Int], oneBatch: Bool, in folder: URL) async throws -> Engine {
        let engine = try E2E.engine(rules: rules, path: folder.appendingPathComponent("db-\(order)-\(oneBatch).sqlite").path)
        let inputs = order.enumerated().map { InputBytes(bytes: Array(documents[$1].utf8), number: $0 + 1) }
        for batch in oneBatch ? [inputs] : inputs.map({ [$0] }) {
            for result in try await engine.ingest(batch) {
                #expect(result.outcome == .appended, "\(result.errorCode ?? "") \(result.errorMessage ?? "")")
            }
        }
        return engine
    }

    @Test("without a link, the migrated subscription answers as the customer of the one it came from")
    func beforeTheLink() async throws {
        let folder = Scenario.temporaryFolder("migration-identity")
        defer { try? FileManager.default.removeItem(at: folder) }
        let at = Self.t0 + 70 * Self.day
        var answers: [JSONValue] = []
        for (order, oneBatch) in [([0, 1, 2], true), ([2, 1, 0], false), ([1, 2, 0], false)] {
            let engine = try await Self.engine(order, oneBatch: oneBatch, in: folder)
            let answer = try await engine.query(.originalTransactionId(Self.migrated), at: at).json()
            #expect(answer["appTransactionId"] == .string("otid:" + Self.legacy))
            #expect(answer["entitlements"]?["alpha"]?["active"] == .bool(true))
            #expect(try await engine.query(.appTransactionId("otid:" + Self.migrated), at: at).json() == answer)
            answers.append(answer)
            #expect(try await engine.replay().changed == 0)
            #expect(try await engine.query(.originalTransactionId(Self.migrated), at: at).json() == answer)
        }
        #expect(Set(answers).count == 1)
    }

    @Test("a link that names the first subscription's customer brings the migrated one with it, in any order and batching")
    func afterTheLink() async throws {
        let folder = Scenario.temporaryFolder("migration-identity-linked")
        defer { try? FileManager.default.removeItem(at: folder) }
        let at = Self.t0 + 70 * Self.day
        var answers: [JSONValue] = []
        for (order, oneBatch) in [([0, 1, 2, 3], true), ([3, 2, 1, 0], false), ([1, 2, 0, 3], false), ([2, 3, 0, 1], false)] {
            let engine = try await Self.engine(order, oneBatch: oneBatch, in: folder)
            let answer = try await engine.query(.originalTransactionId(Self.migrated), at: at).json()
            #expect(answer["appTransactionId"] == .string(Self.app), "order \(order)")
            guard case .array(let subscriptions)? = answer["subscriptions"] else {
                Issue.record("no subscriptions in order \(order)")
                continue
            }
            #expect(Set(subscriptions.compactMap { $0["originalTransactionId"] }) == [.string(Self.legacy), .string(Self.migrated)])
            #expect(try await engine.query(.appTransactionId("otid:" + Self.migrated), at: at).json() == answer)
            #expect(try await engine.query(.appTransactionId(Self.app), at: at).json() == answer)
            // The otid: customer that existed before the link merged into the appTransactionId.
            let merged = try await engine.lifecycle().map { $0.json() }.filter { $0["type"] == "CUSTOMER_MERGED" }
            if order.last == 3, !oneBatch {
                #expect(merged.map { $0["id"] } == [.string("CUSTOMER_MERGED:otid:\(Self.legacy):\(Self.app)")], "order \(order)")
            }
            #expect(try await engine.replay().changed == 0, "order \(order)")
            #expect(try await engine.query(.originalTransactionId(Self.migrated), at: at).json() == answer)
            #expect(try await engine.audit().firstMismatch == nil)
            answers.append(answer)
        }
        #expect(Set(answers).count == 1)
    }

    @Test("an otid: customer of the migrated subscription, made before its migration was known, merges into the one it came from")
    func migrationLearnedLate() async throws {
        let folder = Scenario.temporaryFolder("migration-identity-late")
        defer { try? FileManager.default.removeItem(at: folder) }
        let at = Self.t0 + 40 * Self.day
        let engine = try await Self.engine([4, 0], oneBatch: false, in: folder)
        let before = try await engine.query(.originalTransactionId(Self.migrated), at: at).json()
        #expect(before["appTransactionId"] == .string("otid:" + Self.migrated))
        for result in try await engine.ingest([InputBytes(bytes: Array(Self.documents[1].utf8), number: 1)]) {
            #expect(result.outcome == .appended)
            #expect(result.appTransactionId == "otid:" + Self.legacy)
        }
        let answer = try await engine.query(.originalTransactionId(Self.migrated), at: at).json()
        #expect(answer["appTransactionId"] == .string("otid:" + Self.legacy))
        #expect(answer["entitlements"]?["alpha"]?["active"] == .bool(true))
        // The old key answers as an alias of the customer it merged into.
        #expect(try await engine.query(.appTransactionId("otid:" + Self.migrated), at: at).json() == answer)
        #expect(try await engine.replay().changed == 0)
        #expect(try await engine.query(.originalTransactionId(Self.migrated), at: at).json() == answer)
        // The link then names the customer of both.
        _ = try await engine.ingest([InputBytes(bytes: Array(Self.documents[3].utf8), number: 1)])
        let linked = try await engine.query(.originalTransactionId(Self.migrated), at: at).json()
        #expect(linked["appTransactionId"] == .string(Self.app))
        #expect(try await engine.replay().changed == 0)
        let fresh = try await Self.engine([0, 1, 3, 4], oneBatch: true, in: folder)
        #expect(try await fresh.query(.originalTransactionId(Self.migrated), at: at).json() == linked)
    }

    @Test("every document in random order, with duplicates, in random batches: one customer, the reference's state, and replay agrees")
    func randomOrders() async throws {
        let folder = Scenario.temporaryFolder("migration-identity-random")
        defer { try? FileManager.default.removeItem(at: folder) }
        let all = Array(Self.documents.indices)
        let reference = try await Self.engine(all, oneBatch: true, in: folder)
        let at = Self.t0 + 100 * Self.day
        let expected = try await reference.query(.appTransactionId(Self.app), at: at).json()
        guard case .array(let subscriptions)? = expected["subscriptions"] else {
            Issue.record("no subscriptions")
            return
        }
        #expect(subscriptions.count == 3)
        var random = SplitMix64(seed: 46)
        for round in 0..<8 {
            var order = all + all.filter { _ in random.int(0..<3) == 0 }
            random.shuffle(&order)
            let engine = try E2E.engine(rules: Self.rules, path: folder.appendingPathComponent("random-\(round).sqlite").path)
            var rest = order[...]
            while !rest.isEmpty {
                let batch = rest.prefix(random.int(1...3))
                rest = rest.dropFirst(batch.count)
                _ = try await engine.ingest(batch.enumerated().map { InputBytes(bytes: Array(Self.documents[$1].utf8), number: $0 + 1) })
            }
            for key in [Self.app, "otid:" + Self.legacy, "otid:" + Self.migrated, "otid:2000000000009701"] {
                #expect(try await engine.query(.appTransactionId(key), at: at).json() == expected, "round \(round), \(key)")
            }
            #expect(try engine.state(of: Self.app) == reference.state(of: Self.app), "round \(round)")
            for otid in [Self.legacy, Self.migrated, "2000000000009701"] { #expect(try engine.state(of: "otid:" + otid) == nil) }
            #expect(try await engine.replay().changed == 0, "round \(round)")
        }
    }
}
