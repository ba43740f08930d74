import EntitlementCore
import Entitlements
import EventStore
import Foundation
import TestPKI
import Testing
import TestSupport

/// Specification sections 1, 3 and 5: versions signed in the same millisecond,
/// documents carrying signed data the engine does not ingest, Get Notification
/// History pages, and the warning for products the rules do not name.
@Suite struct SameMillisecondTests {
    let t0 = TestPayloads.january2025
    let app = "704000000000000001"

    func version(revoked: Bool) -> JSONValue {
        TestPayloads.transaction(
            transactionId: "2000000000000201", originalTransactionId: "2000000000000201", productId: "com.example.lifetime",
            type: "Non-Consumable", expiresDate: nil, signedDate: t0 + 500, revocationDate: revoked ? t0 + 400 : nil,
            revocationType: revoked ? "REFUND_FULL" : nil, revocationReason: revoked ? 0 : nil)
    }

    @Test func twoVersionsSignedInOneMillisecondAreBothAppendedAndTheGreaterRawWinsInAnyOrder() throws {
        let a = E2E.pki.sign(version(revoked: false))
        let b = E2E.pki.sign(version(revoked: true))
        let winnerRevoked = a.utf8.lexicographicallyPrecedes(b.utf8)
        for order in [[a, b], [b, a]] {
            let engine = try E2E.engine()
            var outcomes: [IngestResult.Outcome] = []
            for jws in order {  // one batch each: standalone bodies arriving apart
                outcomes += try engine.ingest([InputBytes(TestPayloads.body(signedTransactionInfo: jws))]).map(\.outcome)
            }
            #expect(outcomes == [.appended, .appended])
            guard case .customer(let view) = try engine.query(.appTransactionId(app), at: t0 + 1_000) else {
                Issue.record("customer not found")
                return
            }
            #expect(view.purchases.first?.revoked == winnerRevoked)
            #expect(view.entitlement("pro")?.active == !winnerRevoked)
            // And a replay agrees.
            _ = try engine.replay()
            guard case .customer(let replayed) = try engine.query(.appTransactionId(app), at: t0 + 1_000) else {
                Issue.record("customer lost by replay")
                return
            }
            #expect(replayed == view)
        }
    }

    @Test func theSamePayloadUnderAnotherSignatureIsADuplicate() throws {
        let engine = try E2E.engine()
        let first = E2E.pki.sign(version(revoked: false))
        let second = E2E.pki.sign(version(revoked: false))
        #expect(first != second)  // ECDSA signatures differ each time
        let results = try engine.ingest([
            InputBytes(TestPayloads.body(signedTransactionInfo: first)), InputBytes(TestPayloads.body(signedTransactionInfo: second)),
        ])
        #expect(results.map(\.outcome) == [.appended, .duplicate])
        let renewal = TestPayloads.renewalInfo(originalTransactionId: "2000000000000201", signedDate: t0 + 9)
        let renewals = try engine.ingest([
            InputBytes(TestPayloads.body(signedRenewalInfo: E2E.pki.sign(renewal))),
            InputBytes(TestPayloads.body(signedRenewalInfo: E2E.pki.sign(renewal))),
        ])
        #expect(renewals.map(\.outcome) == [.appended, .duplicate])
    }

    @Test func twoAppTransactionsCreatedInOneMillisecondAreBothAppendedAndTheSameOneAgainIsADuplicate() throws {
        let engine = try E2E.engine()
        let iOS = TestPayloads.appTransaction(receiptCreationDate: t0 + 7, originalPurchaseDate: t0)
        let earlier = TestPayloads.appTransaction(receiptCreationDate: t0 + 7, originalPurchaseDate: t0 - 86_400_000)
        let results = try engine.ingest([
            InputBytes(TestPayloads.body(signedAppTransactionInfo: E2E.pki.sign(iOS))),
            InputBytes(TestPayloads.body(signedAppTransactionInfo: E2E.pki.sign(earlier))),
            InputBytes(TestPayloads.body(signedAppTransactionInfo: E2E.pki.sign(iOS))),
        ])
        #expect(results.map(\.outcome) == [.appended, .appended, .duplicate])
        #expect(try engine.audit().firstMismatch == nil)
    }

    @Test func anAppTransactionLoggedUnderTheIdentityWithoutDigestIsStillADuplicate() throws {
        let folder = Scenario.temporaryFolder("app-transaction-identity")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("db.sqlite").path
        let created = TestPayloads.appTransaction(receiptCreationDate: t0 + 7)
        _ = try E2E.engine(path: path).ingest([InputBytes(TestPayloads.body(signedAppTransactionInfo: E2E.pki.sign(created)))])
        // A database whose AppTransaction identities carry no digest, as older engines wrote them.
        let probe = try Probe(path)
        try probe.execute(
            "DROP TRIGGER events_are_immutable_update; UPDATE events SET identity = 'appTransaction:\(app):\(t0 + 7)' WHERE kind = 'appTransaction';"
                + "CREATE TRIGGER events_are_immutable_update BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'events are immutable: UPDATE is not allowed'); END;")
        #expect(try probe.strings("SELECT identity FROM events") == ["appTransaction:\(app):\(t0 + 7)"])
        let engine = try E2E.engine(path: path)
        let other = TestPayloads.appTransaction(receiptCreationDate: t0 + 7, originalPurchaseDate: t0 - 86_400_000)
        let results = try engine.ingest([
            InputBytes(TestPayloads.body(signedAppTransactionInfo: E2E.pki.sign(created))),
            InputBytes(TestPayloads.body(signedAppTransactionInfo: E2E.pki.sign(other))),
        ])
        #expect(results.map(\.outcome) == [.duplicate, .appended])
    }

    @Test func aDocumentCarryingASignedFieldTheEngineDoesNotIngestIsRejectedWhole() throws {
        let engine = try E2E.engine()
        let transaction = E2E.pki.sign(version(revoked: false))
        let notification = E2E.pki.sign(TestPayloads.notification(type: "TEST", signedDate: t0))
        let documents: [String] = [
            JSONWriter.string(["signedPayload": .string(notification), "signedTransactionInfo": .string(transaction)]),
            JSONWriter.string(["signedTransactions": [.string(transaction)], "signedAppTransactionInfo": .string(transaction)]),
            JSONWriter.string(["signedTransactionInfo": .string(transaction), "signedPromotionalOffer": .string(transaction)]),
            JSONWriter.string(["notificationHistory": [["signedPayload": .string(notification), "signedTransactionInfo": .string(transaction)]]]),
        ]
        for document in documents {
            let results = try engine.ingest([InputBytes(document)])
            #expect(results.count == 1)
            #expect(results.first?.outcome == .rejected)
            #expect(results.first?.errorCode == "MALFORMED_INPUT")
            #expect(results.first?.errorMessage?.contains("rejected whole") == true)
        }
        #expect(try engine.query(.appTransactionId(app)).json()["error"]?["code"] == "NOT_FOUND")
        // A transaction with its renewal info is one form, still accepted.
        let pair = JSONWriter.string([
            "signedTransactionInfo": .string(transaction),
            "signedRenewalInfo": .string(E2E.pki.sign(TestPayloads.renewalInfo(originalTransactionId: "2000000000000201", signedDate: t0))),
        ])
        #expect(try engine.ingest([InputBytes(pair)]).map(\.outcome) == [.appended, .appended])
    }

    @Test func aNotificationHistoryPageIsOneItemPerSignedPayload() throws {
        let engine = try E2E.engine()
        let tx = TestPayloads.transaction(transactionId: "2000000000000301", originalTransactionId: "2000000000000301", signedDate: t0 + 5)
        let first = E2E.pki.sign(
            TestPayloads.notification(
                type: "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: "22222222-0000-4000-8000-000000000001", signedDate: t0 + 10,
                signedTransactionInfo: E2E.pki.sign(tx)))
        let second = E2E.pki.sign(TestPayloads.notification(type: "TEST", uuid: "22222222-0000-4000-8000-000000000002", signedDate: t0 + 11))
        let page = JSONWriter.string([
            "notificationHistory": [
                ["signedPayload": .string(first), "sendAttempts": [["attemptDate": .int(t0 + 10), "sendAttemptResult": "SUCCESS"]]],
                ["signedPayload": .string(second), "sendAttempts": []],
            ],
            "hasMore": true, "paginationToken": "57a7d2b4-0001",
        ])
        let results = try engine.ingest([InputBytes(page)])
        #expect(results.map(\.outcome) == [.appended, .appended])
        #expect(results.map(\.eventId) == ["22222222-0000-4000-8000-000000000001", "22222222-0000-4000-8000-000000000002"])
        #expect(try engine.ingest([InputBytes(page)]).map(\.outcome) == [.duplicate, .duplicate])
        let empty = try engine.ingest([InputBytes(#"{"notificationHistory":[],"hasMore":false}"#)])
        #expect(!empty.contains { $0.outcome == .rejected })
        for bad in [#"{"notificationHistory":{}}"#, #"{"notificationHistory":[{"sendAttempts":[]}]}"#, #"{"notificationHistory":[{"signedPayload":5}]}"#] {
            let rejected = try engine.ingest([InputBytes(bad)])
            #expect(rejected.map(\.errorCode) == ["MALFORMED_INPUT"])
        }
    }

    @Test func anEmptyOrNonDigitAppTransactionIdIsRejectedWithAPreciseMessage() throws {
        let engine = try E2E.engine()
        for (id, expected) in [("", "is empty"), ("otid:2000", "not a decimal number"), ("70400000000000000a", "not a decimal number")] {
            let tx = TestPayloads.transaction(
                transactionId: "2000000000000401", originalTransactionId: "2000000000000401", appTransactionId: id, signedDate: t0)
            for document in [
                TestPayloads.body(signedTransactionInfo: E2E.pki.sign(tx)),
                E2E.notification("DID_RENEW", signed: t0 + 1, transaction: tx),
                TestPayloads.body(
                    signedRenewalInfo: E2E.pki.sign(
                        TestPayloads.renewalInfo(originalTransactionId: "2000000000000401", appTransactionId: id, signedDate: t0))),
            ] {
                let results = try engine.ingest([InputBytes(document)])
                #expect(results.map(\.errorCode) == ["MALFORMED_INPUT"])
                #expect(results.first?.errorMessage?.contains(expected) == true, "\(results.first?.errorMessage ?? "")")
            }
        }
        #expect(try engine.query(.originalTransactionId("2000000000000401")).json()["error"]?["code"] == "NOT_FOUND")
    }

    @Test func aProductMissingFromTheRulesIsWarnedOnStderrOncePerCommand() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let lines = (0..<3).map { n in
            TestPayloads.body(
                signedTransactionInfo: E2E.pki.sign(
                    TestPayloads.transaction(
                        transactionId: "200000000000050\(n)", originalTransactionId: "200000000000050\(n)", productId: "com.example.new",
                        type: "Non-Consumable", expiresDate: nil, signedDate: t0 + Int64(n))))
        }
        let db = folder.appendingPathComponent("w.sqlite").path
        let run = try E2E.run(["ingest", "--db", db, "--config", config], stdin: lines.joined(separator: "\n") + "\n")
        #expect(run.status == 0)
        let warning = "warning: product com.example.new is not in rules.products: it grants nothing"
        #expect(run.stderr.components(separatedBy: warning).count - 1 == 1, "\(run.stderr)")
        let query = try E2E.run(["query", "--db", db, "--config", config, "--original-transaction-id", "2000000000000500"])
        #expect(query.status == 0)
        #expect(query.stderr.contains(warning))
        // A timeline meets the product too: a typo in the rules shows there as no access, so it says why.
        let history = try E2E.run(["history", "--db", db, "--config", config, "--original-transaction-id", "2000000000000500"])
        #expect(history.status == 0)
        #expect(history.stderr.components(separatedBy: warning).count - 1 == 1, "\(history.stderr)")
        let known = try E2E.run(
            ["ingest", "--db", db, "--config", config],
            stdin: TestPayloads.body(signedTransactionInfo: E2E.pki.sign(version(revoked: false))) + "\n")
        #expect(known.status == 0)
        #expect(!known.stderr.contains("warning: product"))
    }

    /// Replay under rules that dropped a product the log names warns of it, once, as
    /// ingest does: a rules change is where a typo silently takes access away.
    @Test func replayUnderRulesWithoutALoggedProductWarnsOfIt() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let db = folder.appendingPathComponent("r.sqlite").path
        let lines = [
            TestPayloads.body(
                signedTransactionInfo: E2E.pki.sign(
                    TestPayloads.transaction(
                        transactionId: "2000000000000601", originalTransactionId: "2000000000000601", signedDate: t0))),
            E2E.notification(
                "DID_RENEW", signed: t0 + 1,
                transaction: TestPayloads.transaction(
                    transactionId: "2000000000000602", originalTransactionId: "2000000000000602",
                    productId: "com.example.pro.yearly", signedDate: t0 + 1),
                renewal: TestPayloads.renewalInfo(
                    originalTransactionId: "2000000000000602", productId: "com.example.pro.yearly", signedDate: t0 + 1)),
        ]
        let ingest = try E2E.run(["ingest", "--db", db, "--config", config], stdin: lines.joined(separator: "\n") + "\n")
        #expect(ingest.status == 0)
        #expect(!ingest.stderr.contains("warning: product"), "\(ingest.stderr)")

        let same = try E2E.run(["replay", "--db", db, "--config", config])
        #expect(same.status == 0)
        #expect(!same.stderr.contains("warning: product"), "\(same.stderr)")

        // The new rules lost the yearly product (a typo): replay still runs, and says so once.
        var products = E2E.rules.products
        products["com.example.pro.yearly"] = nil
        products["com.example.pro.yeraly"] = ProductRule(entitlements: ["pro"])
        let typo = Rules(
            version: "e2e-2", gracePeriodGrantsAccess: true, billingRetryGrantsAccess: false, products: products)
        let typoFolder = E2E.folder()
        let typoConfig = try E2E.writeConfig(in: typoFolder, rules: typo.canonicalJSON)
        let replay = try E2E.run(["replay", "--db", db, "--config", typoConfig])
        #expect(replay.status == 0)
        let warning = "warning: product com.example.pro.yearly is not in rules.products: it grants nothing (did you mean com.example.pro.yeraly?)"
        #expect(replay.stderr.components(separatedBy: warning).count - 1 == 1, "\(replay.stderr)")
        #expect(replay.stderr.components(separatedBy: "is not in rules.products").count - 1 == 1, "\(replay.stderr)")
        // And the configured name no data carries, with the name the data does carry.
        #expect(
            replay.stderr.contains(
                "warning: product com.example.pro.yeraly is in rules.products but in no ingested data (did you mean com.example.pro.yearly?)"),
            "\(replay.stderr)")

        // The library's report names it too.
        let engine = try E2E.engine(rules: typo, path: db)
        #expect(try engine.replay().unknownProducts == ["com.example.pro.yearly"])
        #expect(engine.takeProductWarnings() == [warning])
    }
}
