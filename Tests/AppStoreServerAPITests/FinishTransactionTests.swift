import EntitlementCore
import Entitlements
import EventStore
import Foundation
import Synchronization
import Testing
import TestPKI

/// `finish-transaction`, and `appStoreServerAPI.finishTransactions`: the engine finishes, once,
/// each transaction it appends for the first time that grants something, recording it.
@Suite struct FinishTransactionTests {
    typealias S = SupportScenario

    /// A mock that answers Finish Transaction with `200` (`4040010` for `unknown`), counting calls per transaction.
    static func serveFinishes(_ fixture: SyncFixture, unknown: Set<String> = []) {
        fixture.mock.handle { request in
            let parts = request.path.split(separator: "/")
            guard request.method == "POST", parts.count == 5, request.path.hasPrefix("/inApps/v1/transactions/"), parts[4] == "finish" else {
                return MockResponse(status: 404)
            }
            if unknown.contains(String(parts[3])) { return .error(404, code: 4_040_010, message: "Transaction id not found.") }
            return MockResponse(status: 200)
        }
    }

    static func finished(_ fixture: SyncFixture) -> [String] {
        fixture.mock.requests.filter { $0.path.hasSuffix("/finish") }.map { String($0.path.split(separator: "/")[3]) }
    }

    @Test func finishTransactionPostsWithoutBodyAndRecordsWhenTheDatabaseExists() throws {
        let fixture = try SyncFixture()
        Self.serveFinishes(fixture, unknown: ["9"])
        let run = try Tool.entitlements(["finish-transaction", "--config", fixture.configPath, "--transaction-id", "3000000000099001"], in: fixture.folder)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(S.lines(run).first?["request"] == "POST /inApps/v1/transactions/3000000000099001/finish")
        #expect(S.lines(run).first?["finished"] == true)
        #expect(S.lines(run).first?["status"] == 200)
        let post = try #require(fixture.mock.requests.first)
        #expect(post.tokenProblem == nil)
        #expect(post.body.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: fixture.folder.appendingPathComponent("entitlements.sqlite").path), "no database is created")

        // With a database, the call is recorded.
        let ingest = try Tool.entitlements(["ingest", "--config", fixture.configPath, "-"], in: fixture.folder)
        #expect(ingest.status == 0 || ingest.status == 1)
        let recorded = try Tool.entitlements(["finish-transaction", "--config", fixture.configPath, "--transaction-id", "3000000000099002"], in: fixture.folder)
        #expect(recorded.status == 0, "\(recorded.stderr)")
        #expect(try S.finish("3000000000099002", in: fixture)?.state == "finished")

        let unknown = try Tool.entitlements(["finish-transaction", "--config", fixture.configPath, "--transaction-id", "9"], in: fixture.folder)
        #expect(unknown.status == 1)
        #expect(S.lines(unknown).first?["errorCode"] == 4_040_010)
        #expect(try S.finish("9", in: fixture)?.state == "failed")
    }

    @Test func ingestFinishesEachGrantingTransactionOnceAndARestartDoesNotCallAgain() throws {
        let fixture = try SyncFixture()
        try S.enableFinishes(fixture)
        Self.serveFinishes(fixture, unknown: ["3000000000099105"])
        let consumable = S.signed(S.transaction("3000000000099101", productId: "com.example.coins.100", type: "Consumable"))
        let lifetime = S.signed(S.transaction("3000000000099102"))
        let ungranting = S.signed(S.transaction("3000000000099103", productId: "com.example.not.in.rules", type: "Non-Consumable"))
        let refunded = S.signed(S.transaction("3000000000099104", revocationDate: S.now - S.day))
        let monthly = S.transaction(
            "3000000000099106", productId: "com.example.pro.monthly", type: "Auto-Renewable Subscription", original: "3000000000099106")
        let subscribed = TestPayloads.body(
            signedPayload: S.pki.sign(
                TestPayloads.notification(
                    type: "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: "99999999-0000-4000-8000-000000000001", signedDate: S.now - 3 * S.day,
                    signedTransactionInfo: S.signed(monthly))))
        let unknownToApple = S.signed(S.transaction("3000000000099105", productId: "com.example.coins.100", type: "Consumable"))
        let first = [consumable, lifetime, ungranting, refunded, subscribed, unknownToApple].map { $0.hasPrefix("{") ? $0 : TestPayloads.body(signedTransactionInfo: $0) }
        try Data((first.joined(separator: "\n") + "\n").utf8).write(to: fixture.folder.appendingPathComponent("first.ndjson"))
        let run = try Tool.entitlements(["ingest", "--config", fixture.configPath, "first.ndjson"], in: fixture.folder)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(S.lines(run).filter { $0["result"] == "appended" }.count == 6)
        #expect(Self.finished(fixture).sorted() == ["3000000000099101", "3000000000099102", "3000000000099105", "3000000000099106"])
        #expect(fixture.mock.requests.allSatisfy { $0.tokenProblem == nil && $0.body.isEmpty })
        #expect(try S.finish("3000000000099101", in: fixture)?.state == "finished")
        #expect(try S.finish("3000000000099106", in: fixture)?.state == "finished")
        #expect(try S.finish("3000000000099105", in: fixture)?.state == "failed")
        #expect(try S.finish("3000000000099103", in: fixture) == nil)
        #expect(run.stderr.contains("3000000000099105"), "a refusal is reported: \(run.stderr)")

        // The same transactions again (a renewal info, a re-sent copy), and one new purchase:
        // only the new one is finished.
        let renewed = S.signed(S.transaction("3000000000099107", productId: "com.example.coins.100", type: "Consumable"))
        let resent = S.signed(S.transaction("3000000000099102", daysAgo: 3).mergingSignedDate(S.now))
        let second = [TestPayloads.body(signedTransactionInfo: renewed), TestPayloads.body(signedTransactionInfo: resent), first[0]]
        try Data((second.joined(separator: "\n") + "\n").utf8).write(to: fixture.folder.appendingPathComponent("second.ndjson"))
        let again = try Tool.entitlements(["ingest", "--config", fixture.configPath, "second.ndjson"], in: fixture.folder)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(S.lines(again).map { $0["result"] } == ["appended", "appended", "duplicate"])
        #expect(Self.finished(fixture).sorted() == ["3000000000099101", "3000000000099102", "3000000000099105", "3000000000099106", "3000000000099107"])
    }
}

extension JSONValue {
    /// The same transaction payload with another `signedDate` (a re-signed copy).
    func mergingSignedDate(_ date: Int64) -> JSONValue {
        guard case .object(var object) = self else { return self }
        object["signedDate"] = .int(date)
        return .object(object)
    }
}
