import EntitlementCore
import Entitlements
import Foundation
import Synchronization
import Testing
import TestPKI

/// `entitlements consumption --send`: the ConsumptionRequest V2 body PUT to Apple (the mock)
/// with a fresh bearer token, Apple's answer recorded, the request then no longer pending.
@Suite struct ConsumptionSendTests {
    static let transactionId = "3000000000077001"

    func lines(_ run: Tool.Run) -> [JSONValue] {
        run.stdout.split(separator: "\n").compactMap { try? JSONParser().parse(String($0)) }
    }

    /// A non-consumable bought four days ago, a CONSUMPTION_REQUEST for it an hour ago, 40 % recorded as consumed.
    func prepare(_ fixture: SyncFixture) throws {
        let now = Engine.now()
        let purchase = TestPayloads.transaction(
            transactionId: Self.transactionId, productId: "com.example.lifetime", type: "Non-Consumable", purchaseDate: now - 4 * 86_400_000,
            expiresDate: nil)
        let request = TestPayloads.notification(
            type: "CONSUMPTION_REQUEST", uuid: "66666666-0000-4000-8000-000000000001", signedDate: now - 3_600_000,
            signedTransactionInfo: SyncScenario.pki.sign(purchase), consumptionRequestReason: "UNSATISFIED_WITH_PURCHASE")
        let input = TestPayloads.body(signedPayload: SyncScenario.pki.sign(request)) + "\n"
        try Data(input.utf8).write(to: fixture.folder.appendingPathComponent("request.ndjson"))
        let ingest = try Tool.entitlements(["ingest", "--config", fixture.configPath, "request.ndjson"], in: fixture.folder)
        #expect(ingest.status == 0, "\(ingest.stderr)")
        let usage = try Tool.entitlements(
            ["usage", "--config", fixture.configPath, "--id", "read-1", "--transaction-id", Self.transactionId, "--consumed", "40000"],
            in: fixture.folder)
        #expect(usage.status == 0, "\(usage.stderr)")
    }

    @Test func sendPutsTheBodyRecordsTheAnswerAndTheRequestIsNoLongerPending() throws {
        let fixture = try SyncFixture()
        let received = Mutex<[MockRequest]>([])
        fixture.mock.handle { request in
            received.withLock { $0.append(request) }
            guard request.method == "PUT", request.path == "/inApps/v2/transactions/consumption/\(Self.transactionId)" else {
                return .error(404, code: 4_040_010, message: "Transaction id not found.")
            }
            return MockResponse(status: 202)
        }
        try prepare(fixture)

        let pending = try Tool.entitlements(["consumption", "--config", fixture.configPath, "--pending"], in: fixture.folder)
        #expect(pending.status == 0, "\(pending.stderr)")
        #expect(lines(pending).map { $0["transactionId"] } == [.string(Self.transactionId)])
        #expect(lines(pending).first?["reason"] == "UNSATISFIED_WITH_PURCHASE")

        let send = try Tool.entitlements(
            ["consumption", "--config", fixture.configPath, "--transaction-id", Self.transactionId, "--customer-consented",
             "--refund-preference", "DECLINE", "--send"], in: fixture.folder)
        #expect(send.status == 0, "\(send.stderr)")
        #expect(lines(send) == [["request": .string("PUT /inApps/v2/transactions/consumption/\(Self.transactionId)"), "status": 202, "accepted": true]])
        let put = try #require(received.withLock { $0 }.last)
        #expect(put.tokenProblem == nil)
        #expect(put.json == [
            "customerConsented": true, "consumptionPercentage": 40_000, "deliveryStatus": "DELIVERED", "refundPreference": "DECLINE",
            "sampleContentProvided": false,
        ])

        let after = try Tool.entitlements(["consumption", "--config", fixture.configPath, "--pending"], in: fixture.folder)
        #expect(after.status == 0)
        #expect(after.stdout.isEmpty)
    }

    @Test func appleRefusingTheAnswerExitsOneAndKeepsTheRequestPending() throws {
        let fixture = try SyncFixture()
        fixture.mock.handle { _ in .error(400, code: 4_000_023, message: "Invalid request.") }
        try prepare(fixture)
        let send = try Tool.entitlements(
            ["consumption", "--config", fixture.configPath, "--transaction-id", Self.transactionId, "--send"], in: fixture.folder)
        #expect(send.status == 1)
        let line = try #require(lines(send).first)
        #expect(line["accepted"] == false)
        #expect(line["status"] == 400)
        #expect(line["errorCode"] == 4_000_023)
        let pending = try Tool.entitlements(["consumption", "--config", fixture.configPath, "--pending"], in: fixture.folder)
        #expect(lines(pending).count == 1)
    }
}
