import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestPKI
import TestSupport

/// Legacy app receipts through the engine: one event per original transaction id, each
/// entry a transaction fact, signed V2 data winning, the same transaction in several
/// receipts counted once; V1 notifications refused and quarantined.
@Suite(.serialized) struct ReceiptIngestTests {
    static let day: Int64 = 86_400_000
    static let created = TestPayloads.january2025 + 10 * day

    static func configuration() -> EngineConfiguration {
        var configuration = EngineConfiguration(
            bundleId: TestPayloads.bundleId, appAppleId: TestPayloads.appAppleId, environment: .sandbox,
            rootCertificatesDER: [Scenario.pki.rootDER], rules: Scenario.rules(version: "receipts"))
        configuration.receiptRootCertificatesDER = [Scenario.pki.rootDER]
        return configuration
    }

    static func engine(_ label: String) throws -> (Engine, URL) {
        let folder = Scenario.temporaryFolder(label)
        return (try Engine(configuration: configuration(), databasePath: folder.appendingPathComponent("db.sqlite").path), folder)
    }

    static let entries = [
        TestReceiptEntry(
            productId: "com.example.pro.monthly", transactionId: "3001", originalTransactionId: "3000",
            purchaseDate: TestPayloads.january2025, expiresDate: TestPayloads.january2025 + 30 * day, webOrderLineItemId: 9001,
            isTrialPeriod: true),
        TestReceiptEntry(quantity: 2, productId: "com.example.coins.100", transactionId: "4000", purchaseDate: TestPayloads.january2025 + day),
        TestReceiptEntry(
            productId: "com.example.lifetime", transactionId: "5000", purchaseDate: TestPayloads.january2025 + 2 * day,
            cancellationDate: TestPayloads.january2025 + 3 * day),
    ]

    static func receipt(created: Int64 = created, entries: [TestReceiptEntry] = entries, digest: TestReceipts.Digest = .sha256) -> String {
        Scenario.pki.receiptBase64(
            TestReceipts.payload(bundleId: TestPayloads.bundleId, creationDate: created, entries: entries), digest: digest)
    }

    static func document(_ base64: String) -> InputBytes { InputBytes(#"{"receipt-data": ""# + base64 + #"", "password": "x"}"#) }

    static func view(_ engine: Engine, _ query: CustomerQuery, at: Int64) throws -> JSONValue {
        guard case .customer(let view) = try engine.query(query, at: at) else {
            Issue.record("no customer for \(query)")
            return .null
        }
        return view.json()
    }

    @Test func receiptEntriesAreTransactionFacts() throws {
        let (engine, _) = try Self.engine("receipts-ingest")
        let base64 = Self.receipt()
        let results = try engine.ingest([Self.document(base64)])
        #expect(results.map(\.outcome) == [.appended, .appended, .appended])
        #expect(results.allSatisfy { $0.kind == .receipt && $0.input == 1 })
        #expect(Set(results.compactMap(\.eventId)).count == 1)
        #expect(results.map(\.appTransactionId) == ["otid:3000", "otid:4000", "otid:5000"])
        // Idempotent by the receipt's bytes, whichever form it comes in.
        #expect(try engine.ingest([Self.document(base64)]).map(\.outcome) == [.duplicate, .duplicate, .duplicate])
        #expect(try engine.ingest([InputBytes(base64)]).map(\.outcome) == [.duplicate, .duplicate, .duplicate])

        let at = TestPayloads.january2025 + 5 * Self.day
        let subscription = try Self.view(engine, .originalTransactionId("3000"), at: at)
        #expect(subscription["entitlements"]?["pro"]?["active"] == .bool(true))
        #expect(subscription["subscriptions"]?[0]?["status"] == "active")
        #expect(subscription["subscriptions"]?[0]?["periodType"] == "trial")
        // Found by the transaction id of a receipt's entry.
        #expect(try Self.view(engine, .transactionId("3001"), at: at)["subscriptions"] == subscription["subscriptions"])
        // A receipt's one-time purchase takes its product's kind from the rules: coins are credited.
        #expect(try Self.view(engine, .originalTransactionId("4000"), at: at)["balances"]?["coins"] == .int(200))
        // A cancellation is a revocation.
        let lifetime = try Self.view(engine, .originalTransactionId("5000"), at: at)
        #expect(lifetime["purchases"]?[0]?["revoked"] == .bool(true))

        let report = try engine.audit()
        #expect(report.firstMismatch == nil)
        let before = try Self.view(engine, .originalTransactionId("3000"), at: at)
        let replay = try engine.replay()
        #expect(replay.changed == 0)
        #expect(try Self.view(engine, .originalTransactionId("3000"), at: at) == before)
    }

    @Test(arguments: [false, true])
    func signedDataWins(v2First: Bool) throws {
        let (engine, _) = try Self.engine("receipts-v2")
        // Apple's signed transaction for 3001, signed before the receipt was made, with another expiry.
        let jws = Scenario.pki.sign(
            TestPayloads.transaction(
                transactionId: "3001", originalTransactionId: "3000", appTransactionId: nil,
                purchaseDate: TestPayloads.january2025, expiresDate: TestPayloads.january2025 + 3 * Self.day,
                signedDate: TestPayloads.january2025))
        let signed = InputBytes(TestPayloads.body(signedTransactionInfo: jws))
        let receipt = Self.document(Self.receipt(entries: [Self.entries[0]]))
        for document in v2First ? [signed, receipt] : [receipt, signed] {
            #expect(try engine.ingest([document]).allSatisfy { $0.outcome == .appended })
        }
        let view = try Self.view(engine, .originalTransactionId("3000"), at: TestPayloads.january2025 + 5 * Self.day)
        #expect(view["subscriptions"]?[0]?["status"] == "expired")
        #expect(view["subscriptions"]?[0]?["expiresDate"] == .int(TestPayloads.january2025 + 3 * Self.day))
    }

    @Test func theSameTransactionInSeveralReceiptsCountsOnce() throws {
        let (engine, _) = try Self.engine("receipts-several")
        let coins = Self.entries[1]
        let more = TestReceiptEntry(
            productId: "com.example.coins.100", transactionId: "4001", originalTransactionId: "4000",
            purchaseDate: TestPayloads.january2025 + 4 * Self.day)
        _ = try engine.ingest([Self.document(Self.receipt(entries: [coins]))])
        _ = try engine.ingest([Self.document(Self.receipt(created: Self.created + Self.day, entries: [coins, more], digest: .sha1))])
        let view = try Self.view(engine, .originalTransactionId("4000"), at: TestPayloads.january2025 + 20 * Self.day)
        #expect(view["balances"]?["coins"] == .int(300))
        guard case .array(let purchases)? = view["purchases"] else {
            Issue.record("no purchases")
            return
        }
        #expect(purchases.count == 2)
    }

    @Test func rejectionsAreQuarantined() throws {
        let (engine, _) = try Self.engine("receipts-rejected")
        let v1 = InputBytes(#"{"notification_type": "DID_RENEW", "unified_receipt": {"latest_receipt_info": [{"original_transaction_id": "777"}]}}"#)
        let otherApp = Self.document(
            Scenario.pki.receiptBase64(TestReceipts.payload(bundleId: "com.example.other", creationDate: Self.created, entries: Self.entries)))
        let otherRoot = Self.document(
            Scenario.unrelatedPKI.receiptBase64(TestReceipts.payload(bundleId: TestPayloads.bundleId, creationDate: Self.created)))
        let results = try engine.ingest([v1, otherApp, otherRoot, InputBytes(#"{"receipt-data": "@@@"}"#)])
        #expect(results.map(\.errorCode) == ["UNVERIFIABLE_V1", "INVALID_APP_IDENTIFIER", "INVALID_CHAIN", "MALFORMED_INPUT"])
        #expect(results[0].errorMessage?.contains("777") == true)
        #expect(engine.takeV1SyncHints() == ["777"])
        if case .notFound = try engine.query(.originalTransactionId("3000")) {} else { Issue.record("a rejected receipt reached the state") }
    }

    @Test func aV1NotificationNamingSeveralSubscriptionsHintsEachOfThemOnce() throws {
        let (engine, _) = try Self.engine("receipts-v1-several")
        let unified = InputBytes(
            #"{"notification_type": "INTERACTIVE_RENEWAL", "unified_receipt": {"latest_receipt_info": [{"original_transaction_id": "5001"}, {"original_transaction_id": "9105"}, {"original_transaction_id": "5001"}], "pending_renewal_info": [{"original_transaction_id": "7002"}]}}"#)
        // The shape before unified_receipt: the latest receipt's info at the top, an object.
        let older = InputBytes(#"{"notification_type": "CANCEL", "latest_receipt_info": {"original_transaction_id": "9106"}}"#)
        let results = try engine.ingest([unified, older])
        #expect(results.map(\.errorCode) == ["UNVERIFIABLE_V1", "UNVERIFIABLE_V1"])
        #expect(results[0].errorMessage?.contains("original transaction ids 5001, 9105, 7002") == true)
        #expect(engine.takeV1SyncHints() == ["5001", "9105", "7002", "9106"])
    }
}

extension JSONValue {
    /// The element at `index` when this is an array long enough.
    fileprivate subscript(index: Int) -> JSONValue? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }
}

/// A real Sandbox receipt (Fixtures/receipts) through the engine with the embedded Apple Inc. Root.
@Suite struct RealReceiptIngestTests {
    @Test func realSandboxReceiptBecomesItsCustomer() throws {
        let url = Scenario.packageRoot.appendingPathComponent("Fixtures/receipts/receipt-sandbox-g5.json")
        var configuration = EngineConfiguration(
            bundleId: "dev.bonzer.weeka.app", environment: .sandbox, rules: try Rules(json: ["version": "1", "products": [:]]))
        configuration.receiptRootCertificatesDER = nil
        let folder = Scenario.temporaryFolder("receipts-real")
        let engine = try Engine(configuration: configuration, databasePath: folder.appendingPathComponent("db.sqlite").path)
        let results = try engine.ingest([InputBytes(bytes: Array(try Data(contentsOf: url)))])
        #expect(results.map(\.outcome) == [.appended])
        #expect(results[0].eventId == "bebb16e2a17104d973eeef08177003f2c3303a19ddced83b42df349b4ac25ee0")
        #expect(results[0].appTransactionId == "otid:2000001092134138")
        guard case .customer(let view) = try engine.query(.transactionId("2000001092148094"), at: 1_766_774_387_000) else {
            Issue.record("the receipt's customer is not found by its renewal's transaction id")
            return
        }
        #expect(view.subscriptions.first?.status == .active)
        #expect(view.subscriptions.first?.expiresDate == 1_766_775_307_000)
        #expect(try engine.audit().firstMismatch == nil)
    }

    @Test func receiptsVerifyAndIngestFast() throws {
        let (engine, _) = try ReceiptIngestTests.engine("receipts-speed")
        let entries = (0..<30).map { index in
            TestReceiptEntry(
                productId: "com.example.pro.monthly", transactionId: "9\(index)", originalTransactionId: "90",
                purchaseDate: TestPayloads.january2025 + Int64(index) * 30 * ReceiptIngestTests.day,
                expiresDate: TestPayloads.january2025 + Int64(index + 1) * 30 * ReceiptIngestTests.day)
        }
        let documents = (0..<300).map { index in
            ReceiptIngestTests.document(ReceiptIngestTests.receipt(created: ReceiptIngestTests.created + Int64(index), entries: entries))
        }
        let start = Date()
        let results = try engine.ingest(documents, workers: 2)
        let seconds = Date().timeIntervalSince(start)
        #expect(results.allSatisfy { $0.outcome == .appended })
        print("receipts of 30 entries, verified and ingested: \(Int(Double(documents.count) / seconds))/s")
    }
}
