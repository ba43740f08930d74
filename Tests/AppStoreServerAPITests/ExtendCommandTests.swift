import EntitlementCore
import Entitlements
import Foundation
import Synchronization
import Testing
import TestPKI

/// `entitlements extend`: one customer, everyone (mass) and the mass extension's status,
/// against the mock App Store Server API; the limits checked before any request.
@Suite struct ExtendCommandTests {
    typealias S = SupportScenario

    @Test func usageErrorsComeBeforeAnyRequest() throws {
        let fixture = try SyncFixture()
        let config = ["--config", fixture.configPath]
        for arguments in [
            ["--original-transaction-id", "1", "--days", "91", "--reason", "1", "--request-id", "r"],
            ["--original-transaction-id", "1", "--days", "0", "--reason", "1", "--request-id", "r"],
            ["--original-transaction-id", "1", "--days", "30", "--reason", "4", "--request-id", "r"],
            ["--original-transaction-id", "1", "--days", "30", "--reason", "-1", "--request-id", "r"],
            ["--original-transaction-id", "1", "--days", "30", "--reason", "1"],
            ["--mass", "--product", "com.example.pro.monthly", "--days", "120", "--reason", "3"],
            ["--mass", "--product", "com.example.pro.monthly", "--days", "30", "--reason", "7"],
            ["--mass", "--product", "com.example.pro.monthly", "--days", "30", "--reason", "3", "--storefront", "US"],
            ["--mass", "--days", "30", "--reason", "3"],
            ["--status", "--product", "com.example.pro.monthly"],
            ["--mass", "--status", "--product", "p", "--request-id", "r"],
            ["--days", "30", "--reason", "1"],
        ] {
            let run = try Tool.entitlements(["extend"] + config + arguments, in: fixture.folder)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stdout.isEmpty)
        }
        #expect(fixture.mock.requests.isEmpty)
    }

    @Test func oneCustomerPutsApplesBodyAndPrintsTheAnswer() throws {
        let fixture = try SyncFixture()
        let succeed = Mutex(true)
        fixture.mock.handle { request in
            guard request.method == "PUT", request.path == "/inApps/v1/subscriptions/extend/\(S.original)" else { return MockResponse(status: 404) }
            return .json([
                "originalTransactionId": .string(S.original), "webOrderLineItemId": "9993", "success": .bool(succeed.withLock { $0 }),
                "effectiveDate": 1_698_148_900_000,
            ])
        }
        let run = try Tool.entitlements(
            ["extend", "--config", fixture.configPath, "--original-transaction-id", S.original, "--days", "45", "--reason", "1", "--request-id",
             "fdf964a4-233b-486c-aac1-97d8d52688ac"], in: fixture.folder)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(S.lines(run) == [[
            "request": .string("PUT /inApps/v1/subscriptions/extend/\(S.original)"), "status": 200, "originalTransactionId": .string(S.original),
            "webOrderLineItemId": "9993", "success": true, "effectiveDate": 1_698_148_900_000, "requestIdentifier": "fdf964a4-233b-486c-aac1-97d8d52688ac",
        ]])
        let put = try #require(fixture.mock.requests.first)
        #expect(put.tokenProblem == nil)
        #expect(put.headers["content-type"] == "application/json")
        #expect(put.json == ["extendByDays": 45, "extendReasonCode": 1, "requestIdentifier": "fdf964a4-233b-486c-aac1-97d8d52688ac"])
        #expect(!FileManager.default.fileExists(atPath: fixture.folder.appendingPathComponent("entitlements.sqlite").path), "nothing is written")

        succeed.withLock { $0 = false }
        let refused = try Tool.entitlements(
            ["extend", "--config", fixture.configPath, "--original-transaction-id", S.original, "--days", "90", "--reason", "0", "--request-id", "r-2"],
            in: fixture.folder)
        #expect(refused.status == 1)
        #expect(S.lines(refused).first?["success"] == false)
    }

    @Test func massExtensionGeneratesARequestIdAndItsStatusIsAsked() throws {
        let fixture = try SyncFixture()
        fixture.mock.handle { request in
            switch (request.method, request.path) {
            case ("POST", "/inApps/v1/subscriptions/extend/mass"):
                return .json(["requestIdentifier": request.json?["requestIdentifier"] ?? .null])
            case ("GET", let path) where path.hasPrefix("/inApps/v1/subscriptions/extend/mass/com.example.pro.monthly/"):
                return .json([
                    "requestIdentifier": .string(String(path.split(separator: "/").last!)), "complete": true, "completeDate": 1_698_148_900_000,
                    "succeededCount": 30, "failedCount": 2,
                ])
            default: return MockResponse(status: 404)
            }
        }
        let run = try Tool.entitlements(
            ["extend", "--config", fixture.configPath, "--mass", "--product", "com.example.pro.monthly", "--days", "7", "--reason", "3",
             "--storefront", "USA", "--storefront", "mex"], in: fixture.folder)
        #expect(run.status == 0, "\(run.stderr)")
        let line = try #require(S.lines(run).first)
        guard case .string(let generated)? = line["requestIdentifier"] else {
            Issue.record("no requestIdentifier printed: \(run.stdout)")
            return
        }
        #expect(UUID(uuidString: generated) != nil, "a UUID: \(generated)")
        #expect(line["generated"] == true)
        #expect(line["request"] == "POST /inApps/v1/subscriptions/extend/mass")
        #expect(run.stderr.contains(generated))
        let post = try #require(fixture.mock.requests.first)
        #expect(post.tokenProblem == nil)
        #expect(post.json == [
            "extendByDays": 7, "extendReasonCode": 3, "requestIdentifier": .string(generated), "storefrontCountryCodes": ["USA", "MEX"],
            "productId": "com.example.pro.monthly",
        ])

        let given = try Tool.entitlements(
            ["extend", "--config", fixture.configPath, "--mass", "--product", "com.example.pro.monthly", "--days", "7", "--reason", "3",
             "--request-id", "758883e8-151b-47b7-abd0-60c4d804c2f5"], in: fixture.folder)
        #expect(given.status == 0, "\(given.stderr)")
        #expect(S.lines(given).first?["generated"] == false)
        #expect(fixture.mock.requests.last?.json?["storefrontCountryCodes"] == nil, "no storefront: every storefront")
        #expect(fixture.mock.requests.last?.json?["requestIdentifier"] == "758883e8-151b-47b7-abd0-60c4d804c2f5")

        let status = try Tool.entitlements(
            ["extend", "--config", fixture.configPath, "--status", "--product", "com.example.pro.monthly", "--request-id", .init(generated)], in: fixture.folder)
        #expect(status.status == 0, "\(status.stderr)")
        #expect(S.lines(status) == [[
            "request": .string("GET /inApps/v1/subscriptions/extend/mass/com.example.pro.monthly/\(generated)"), "status": 200,
            "requestIdentifier": .string(generated), "complete": true, "completeDate": 1_698_148_900_000, "succeededCount": 30, "failedCount": 2,
        ]])
        #expect(fixture.mock.requests.count == 3)
        #expect(fixture.mock.requests.allSatisfy { $0.tokenProblem == nil })
    }
}

/// The typed library form of `extend`.
@Suite struct RenewalDateExtensionLibraryTests {
    @Test func typedExtensionsCheckApplesLimitsBeforeSending() throws {
        let fixture = try SyncFixture()
        fixture.mock.handle { request in
            switch (request.method, request.path) {
            case ("PUT", "/inApps/v1/subscriptions/extend/2312412"):
                return .json(["originalTransactionId": "2312412", "webOrderLineItemId": "9993", "success": true, "effectiveDate": 1_698_148_900_000])
            case ("POST", "/inApps/v1/subscriptions/extend/mass"): return .json(["requestIdentifier": request.json?["requestIdentifier"] ?? .null])
            case ("GET", "/inApps/v1/subscriptions/extend/mass/p/20fba8a0-2b80-4a7d-a17f-85c1854727f8"):
                return .json([
                    "requestIdentifier": "20fba8a0-2b80-4a7d-a17f-85c1854727f8", "complete": true, "completeDate": 1_698_148_900_000,
                    "succeededCount": 30, "failedCount": 2,
                ])
            default: return MockResponse(status: 404)
            }
        }
        let client = try AppStoreSync.client(for: fixture.configuration, transport: try HTTPClient())
        #expect(throws: APIError.self) { try client.extendRenewalDate(originalTransactionId: "2312412", days: 91, reason: .other, requestIdentifier: "r") }
        #expect(throws: APIError.self) {
            try client.extendRenewalDatesForAllActiveSubscribers(productId: "p", days: 0, reason: .serviceIssueOrOutage, requestIdentifier: "r")
        }
        #expect(fixture.mock.requests.isEmpty)
        let single = try client.extendRenewalDate(originalTransactionId: "2312412", days: 45, reason: .customerSatisfaction, requestIdentifier: "r-1")
        #expect(single.success)
        #expect(single.effectiveDate == 1_698_148_900_000)
        #expect(single.webOrderLineItemId == "9993")
        let acknowledged = try client.extendRenewalDatesForAllActiveSubscribers(
            productId: "p", days: 3, reason: .serviceIssueOrOutage, requestIdentifier: "20fba8a0-2b80-4a7d-a17f-85c1854727f8",
            storefrontCountryCodes: ["USA"])
        #expect(acknowledged == "20fba8a0-2b80-4a7d-a17f-85c1854727f8")
        let status = try client.massExtensionStatus(productId: "p", requestIdentifier: acknowledged)
        #expect(status.complete)
        #expect(status.succeededCount == 30)
        #expect(status.failedCount == 2)
        #expect(fixture.mock.requests.count == 3)
        #expect(fixture.mock.requests.allSatisfy { $0.tokenProblem == nil })
    }
}
