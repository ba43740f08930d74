import EntitlementCore
import Entitlements
import EventStore
import Foundation
import Synchronization
import Testing
import TestPKI
import TestSupport

/// `migrate-receipts` and V1 notifications, run as a program against the mock App Store Server API.
@Suite struct ReceiptMigrationCommandTests {
    func lines(_ run: Tool.Run) -> [JSONValue] {
        run.stdout.split(separator: "\n").compactMap { try? JSONParser().parse(String($0)) }
    }

    /// The fixture's configuration, trusting the test root for receipts too.
    func fixture() throws -> SyncFixture {
        let fixture = try SyncFixture()
        var text = try String(contentsOfFile: fixture.configPath, encoding: .utf8)
        text = text.replacingOccurrences(of: #""rootCertificates":["root.pem"]"#, with: #""rootCertificates":["root.pem"],"receiptRootCertificates":["root.pem"]"#)
        #expect(text.contains("receiptRootCertificates"))
        try Data(text.utf8).write(to: URL(fileURLWithPath: fixture.configPath))
        fixture.serveCustomer()
        return fixture
    }

    /// A receipt, base64, of one monthly subscription's transaction 3999 of the sync
    /// scenario's customer, before its signed history begins.
    static func receipt() -> String {
        let entry = TestReceiptEntry(
            productId: "com.example.pro.monthly", transactionId: "3999", originalTransactionId: SyncScenario.customerOriginal,
            purchaseDate: TestPayloads.january2025 - 40 * 86_400_000, expiresDate: TestPayloads.january2025 - 10 * 86_400_000)
        return SyncScenario.pki.receiptBase64(
            TestReceipts.payload(bundleId: TestPayloads.bundleId, creationDate: TestPayloads.january2025 - 20 * 86_400_000, entries: [entry]))
    }

    @Test func migrateReceiptsIngestsThenSyncsEachOriginalTransactionId() throws {
        let fixture = try fixture()
        let otid = SyncScenario.customerOriginal
        let receipt = Self.receipt()
        let file = #"{"receipt-data": ""# + receipt + "\"}\n\n" + receipt + "\n"
        try Data(file.utf8).write(to: fixture.folder.appendingPathComponent("receipts.ndjson"))

        let run = try Tool.entitlements(
            ["migrate-receipts", "--config", fixture.configPath, "--db", "migrated.sqlite", "receipts.ndjson"], in: fixture.folder)
        #expect(run.status == 0, "\(run.stderr)")
        let output = lines(run)
        #expect(output.count == 4)
        #expect(output[0]["result"] == "appended" && output[0]["kind"] == "receipt" && output[0]["input"] == 1)
        #expect(output[1]["result"] == "duplicate" && output[1]["input"] == 3)
        #expect(output[2]["originalTransactionId"] == .string(otid))
        #expect(output[2]["appended"] == 27 && output[2]["rejected"] == 0)
        #expect(
            output[3] == [
                "receipts": 2, "appended": 1, "duplicate": 1, "rejected": 0, "originalTransactionIds": 1, "synced": 1, "syncFailed": 0,
            ])
        #expect(run.stderr.contains("2/2 receipts ingested") && run.stderr.contains("1/1 original transaction ids done (1 synced, 0 failed)"))

        // The signed history linked the receipt's customer to its appTransactionId; the receipt's purchase stays.
        let query = try Tool.entitlements(
            ["query", "--config", fixture.configPath, "--db", "migrated.sqlite", "--transaction-id", "3999"], in: fixture.folder)
        #expect(query.status == 0, "\(query.stderr)")
        let answer = try JSONParser().parse(Array(query.stdout.utf8))
        #expect(answer["appTransactionId"] == "704000000000099999")
        let audit = try Tool.entitlements(["audit", "--config", fixture.configPath, "--db", "migrated.sqlite"], in: fixture.folder)
        #expect(audit.status == 0, "\(audit.stdout) \(audit.stderr)")
    }

    @Test func migrateReceiptsReadsStandardInputForADash() throws {
        let fixture = try fixture()
        try Data((Self.receipt() + "\n").utf8).write(to: fixture.folder.appendingPathComponent("receipts.ndjson"))
        let run = try Tool.run(
            "/bin/sh", ["-c", "exec \"$0\" migrate-receipts --no-sync --config \"$1\" --db piped.sqlite - < receipts.ndjson", Tool.binary, fixture.configPath],
            in: fixture.folder)
        #expect(run.status == 0, "\(run.stderr)")
        let output = lines(run)
        #expect(output.first?["result"] == "appended" && output.first?["kind"] == "receipt" && output.first?["input"] == 1)
        #expect(output.last?["receipts"] == 1 && output.last?["appended"] == 1)
    }

    /// Run again once signed data linked the receipt's customer to its appTransactionId,
    /// it still syncs the receipt's original transaction id (from the revision reached).
    @Test func aSecondRunSyncsTheReceiptsOriginalTransactionIdNotTheLinkedCustomer() throws {
        let fixture = try fixture()
        let otid = SyncScenario.customerOriginal
        let receipt = Self.receipt()
        try Data((receipt + "\n").utf8).write(to: fixture.folder.appendingPathComponent("receipts.ndjson"))
        let arguments = ["migrate-receipts", "--config", fixture.configPath, "--db", "migrated.sqlite", "receipts.ndjson"]
        let first = try Tool.entitlements(arguments, in: fixture.folder)
        #expect(first.status == 0, "\(first.stderr)")

        let again = try Tool.entitlements(arguments, in: fixture.folder)
        #expect(again.status == 0, "\(again.stdout) \(again.stderr)")
        let output = lines(again)
        #expect(output.count == 3)
        #expect(output.first?["result"] == "duplicate" && output.first?["appTransactionId"] == "704000000000099999")
        #expect(output.dropFirst().first?["originalTransactionId"] == .string(otid), "\(again.stdout)")
        #expect(output.last?["synced"] == 1 && output.last?["syncFailed"] == 0)
        #expect(fixture.mock.requests.contains { $0.path == "/inApps/v2/history/\(otid)" && $0.query["revision"] == "r2" })
        #expect(!fixture.mock.requests.contains { $0.path.hasSuffix("/704000000000099999") })
    }

    @Test func aV1NotificationIsRejectedAndItsOriginalTransactionIdSynced() throws {
        let fixture = try fixture()
        let otid = SyncScenario.customerOriginal
        let v1 = #"{"notification_type": "DID_RENEW", "password": "x", "unified_receipt": {"status": 0, "latest_receipt_info": [{"original_transaction_id": ""# + otid + "\"}]}}\n"
        try Data(v1.utf8).write(to: fixture.folder.appendingPathComponent("v1.json"))
        let run = try Tool.entitlements(["ingest", "--config", fixture.configPath, "--db", "v1.sqlite", "v1.json"], in: fixture.folder)
        #expect(run.status == 1)
        #expect(lines(run).first?["error"]?["code"] == "UNVERIFIABLE_V1")
        #expect(run.stderr.contains("V1 notification: synced original transaction id \(otid)"), "\(run.stderr)")
        let query = try Tool.entitlements(
            ["query", "--config", fixture.configPath, "--db", "v1.sqlite", "--original-transaction-id", otid], in: fixture.folder)
        #expect(query.status == 0, "\(query.stderr)")
    }

    /// A V1 notification naming an original transaction id Apple does not know: the line
    /// on standard error says the sync failed, and why.
    @Test func aV1NotificationWhoseSyncFailsSaysSo() throws {
        let fixture = try fixture()
        let unknown = "2000009999999999"
        let v1 = #"{"notification_type": "DID_RENEW", "password": "x", "unified_receipt": {"status": 0, "latest_receipt_info": [{"original_transaction_id": ""# + unknown + "\"}]}}\n"
        try Data(v1.utf8).write(to: fixture.folder.appendingPathComponent("v1.json"))
        let run = try Tool.entitlements(["ingest", "--config", fixture.configPath, "--db", "v1.sqlite", "v1.json"], in: fixture.folder)
        #expect(run.status == 1)
        #expect(run.stderr.contains("V1 notification: the sync of original transaction id \(unknown) failed: {"), "\(run.stderr)")
        #expect(!run.stderr.contains("synced original transaction id \(unknown)"), "\(run.stderr)")
    }

    /// `serve` answers a V1 notification `UNVERIFIABLE_V1` at once, and syncs the original
    /// transaction id it names in the background: the history request is held until the
    /// POST was answered.
    @Test func serveSyncsAV1NotificationsOriginalTransactionIdWithoutTheRequestWaiting() throws {
        let fixture = try fixture()
        let otid = SyncScenario.customerOriginal
        let answered = DispatchSemaphore(value: 0)
        let released = Mutex(false)
        fixture.serveCustomer { request in
            if request.path.hasPrefix("/inApps/v2/history/"), !released.withLock({ $0 }) {
                _ = answered.wait(timeout: .now() + 60)
                released.withLock { $0 = true }
            }
            return nil
        }
        let served = try TestNotificationTests.Served(fixture, database: "served.sqlite")
        var stopped = false
        defer { if !stopped { _ = served.stop() } }
        let v1 = #"{"notification_type": "DID_RENEW", "password": "x", "unified_receipt": {"status": 0, "latest_receipt_info": [{"original_transaction_id": ""# + otid + "\"}]}}"
        #expect(served.post(v1) == 200)
        answered.signal()
        let stderr = { String(decoding: TestSupport.Tool.read(served.running.stderrURL.path), as: UTF8.self) }
        #expect(SupportScenario.eventually { stderr().contains("serve: V1 notification: synced original transaction id \(otid)") }, "\(stderr())")
        // The same id again is not synced twice.
        #expect(served.post(v1) == 200)
        let outcome = served.stop()
        stopped = true
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(fixture.mock.requests.filter { $0.path == "/inApps/v2/history/\(otid)" && $0.query["revision"] == nil }.count == 1)
        let store = try EventStore(path: fixture.folder.appendingPathComponent("served.sqlite").path, hash: { $0 }, mode: .readOnly)
        #expect(try store.quarantineCount() >= 1)
        let query = try Tool.entitlements(
            ["query", "--config", fixture.configPath, "--db", "served.sqlite", "--original-transaction-id", otid], in: fixture.folder)
        #expect(query.status == 0, "\(query.stderr)")
    }
}
