import EntitlementCore
import Entitlements
import EventStore
import Foundation
import Synchronization
import Testing
import TestPKI

/// `transaction-info`, `refund-history` and `lookup-order`, run as a program against the
/// mock App Store Server API (which checks every bearer token): the requests Apple's
/// libraries make, and what the engine ingests of the answers.
@Suite struct SupportCommandsTests {
    typealias S = SupportScenario

    @Test func transactionInfoIngestsTheSignedTransactionAndPrintsItDecoded() throws {
        let fixture = try SyncFixture()
        let jws = S.signed(S.transaction("3000000000088001"))
        fixture.mock.handle { request in
            guard request.method == "GET", request.path == "/inApps/v1/transactions/3000000000088001" else {
                return .error(404, code: 4_040_010, message: "Transaction id not found.")
            }
            return .json(["signedTransactionInfo": .string(jws)])
        }
        let run = try Tool.entitlements(["transaction-info", "--config", fixture.configPath, "--transaction-id", "3000000000088001"], in: fixture.folder)
        #expect(run.status == 0, "\(run.stderr)")
        let output = S.lines(run)
        #expect(output.count == 3)
        #expect(output.first == ["request": "GET /inApps/v1/transactions/3000000000088001", "status": 200, "items": 1])
        #expect(output[1]["transaction"]?["transactionId"] == "3000000000088001")
        #expect(output[1]["transaction"]?["productId"] == "com.example.lifetime")
        #expect(output.last == ["appended": 1, "duplicate": 0, "rejected": 0])
        #expect(fixture.mock.requests.count == 1)
        #expect(fixture.mock.requests.allSatisfy { $0.tokenProblem == nil && $0.body.isEmpty })

        // Ingested: the customer holds it, and asking again appends nothing.
        let query = try Tool.entitlements(["query", "--config", fixture.configPath, "--transaction-id", "3000000000088001"], in: fixture.folder)
        #expect(query.status == 0, "\(query.stderr)")
        let view = try #require(S.lines(query).first)
        #expect(view["appTransactionId"] == .string(S.appTransactionId))
        #expect(view["entitlements"]?["pro"]?["active"] == true)
        let again = try Tool.entitlements(["transaction-info", "--config", fixture.configPath, "--transaction-id", "3000000000088001"], in: fixture.folder)
        #expect(S.lines(again).last == ["appended": 0, "duplicate": 1, "rejected": 0])

        // Apple's error: its errorCode, exit 1.
        let missing = try Tool.entitlements(["transaction-info", "--config", fixture.configPath, "--transaction-id", "1"], in: fixture.folder)
        #expect(missing.status == 1)
        #expect(S.lines(missing).first?["errorCode"] == 4_040_010)
        #expect(S.lines(missing).last == ["appended": 0, "duplicate": 0, "rejected": 0])
    }

    @Test func aTransactionThatFailsVerificationIsCountedRejectedAndNotPrinted() throws {
        let fixture = try SyncFixture()
        let jws = S.signed(S.transaction("3000000000088009"))
        // The signature's last byte changed: the payload decodes, the signature does not verify.
        let tampered = String(jws.dropLast()) + (jws.hasSuffix("A") ? "B" : "A")
        fixture.mock.handle { _ in .json(["signedTransactionInfo": .string(tampered)]) }
        let run = try Tool.entitlements(["transaction-info", "--config", fixture.configPath, "--transaction-id", "3000000000088009"], in: fixture.folder)
        #expect(run.status == 1, "\(run.stdout) \(run.stderr)")
        let output = S.lines(run)
        #expect(!output.contains { $0["transaction"] != nil }, "\(run.stdout)")
        #expect(output.last == ["appended": 0, "duplicate": 0, "rejected": 1])
    }

    @Test func refundHistoryFollowsRevisionAndIngestsEachRefund() throws {
        let fixture = try SyncFixture()
        let refunded = (1...3).map { index in
            S.signed(S.transaction("300000000008810\(index)", productId: "com.example.coins.100", type: "Consumable", daysAgo: 10, revocationDate: S.now - Int64(index) * S.day))
        }
        fixture.mock.handle { request in
            guard request.method == "GET", request.path == "/inApps/v2/refund/lookup/\(S.original)" else { return MockResponse(status: 404) }
            switch request.query["revision"] {
            case nil: return .json(["signedTransactions": .array(refunded[0..<2].map(JSONValue.string)), "revision": "rev-1", "hasMore": true])
            case "rev-1"?: return .json(["signedTransactions": [.string(refunded[2])], "revision": "rev-2", "hasMore": false])
            default: return .error(400, code: 4_000_005, message: "Invalid revision.")
            }
        }
        let run = try Tool.entitlements(["refund-history", "--config", fixture.configPath, "--customer", S.original], in: fixture.folder)
        #expect(run.status == 0, "\(run.stderr)")
        let output = S.lines(run)
        #expect(output.count == 6)
        #expect(output[0] == ["request": .string("GET /inApps/v2/refund/lookup/\(S.original)"), "status": 200, "items": 2])
        #expect(output[1] == ["request": .string("GET /inApps/v2/refund/lookup/\(S.original)?revision=rev-1"), "status": 200, "items": 1])
        #expect(output[2...4].map { $0["refund"]?["transactionId"] } == ["3000000000088101", "3000000000088102", "3000000000088103"])
        #expect(output[2]["refund"]?["revocationReason"] == 1)
        #expect(output[2]["refund"]?["revocationType"] == "REFUND_FULL")
        #expect(output.last == ["appended": 3, "duplicate": 0, "rejected": 0])
        #expect(fixture.mock.requests.map { $0.query["revision"] } == [nil, "rev-1"])
        #expect(fixture.mock.requests.allSatisfy { $0.tokenProblem == nil })

        // The refunds are in the customer's view: every coin taken back.
        let query = try Tool.entitlements(["query", "--config", fixture.configPath, "--app-transaction-id", S.appTransactionId], in: fixture.folder)
        let view = try #require(S.lines(query).first)
        #expect(view["balances"]?["coins"] == 0)
        #expect(view["purchases"].flatMap { purchases -> [JSONValue]? in
            guard case .array(let items) = purchases else { return nil }
            return items.map { $0["revoked"] ?? .null }
        } == [true, true, true])
    }

    @Test func aRefundThatFailsVerificationIsCountedRejectedAndNotPrinted() throws {
        let fixture = try SyncFixture()
        let refunded = (1...3).map { index in
            S.signed(S.transaction("300000000008820\(index)", productId: "com.example.coins.100", type: "Consumable", daysAgo: 10, revocationDate: S.now - S.day))
        }
        let tampered = String(refunded[1].dropLast()) + (refunded[1].hasSuffix("A") ? "B" : "A")
        fixture.mock.handle { _ in
            .json(["signedTransactions": [.string(refunded[0]), .string(tampered), .string(refunded[2])], "revision": "rev-1", "hasMore": false])
        }
        let run = try Tool.entitlements(["refund-history", "--config", fixture.configPath, "--customer", S.original], in: fixture.folder)
        #expect(run.status == 1, "\(run.stdout) \(run.stderr)")
        let output = S.lines(run)
        #expect(output.compactMap { $0["refund"]?["transactionId"] } == ["3000000000088201", "3000000000088203"])
        #expect(output.last == ["appended": 2, "duplicate": 0, "rejected": 1])
    }

    @Test func refundHistoryWhoseRevisionDoesNotAdvanceStopsWithPaginationLoop() throws {
        let fixture = try SyncFixture()
        let jws = S.signed(S.transaction("3000000000088201", revocationDate: S.now - S.day))
        fixture.mock.handle { _ in .json(["signedTransactions": [.string(jws)], "revision": "stuck", "hasMore": true]) }
        let run = try Tool.entitlements(["refund-history", "--config", fixture.configPath, "--customer", S.original], in: fixture.folder)
        #expect(run.status == 1)
        let output = S.lines(run)
        #expect(output.contains { $0["error"]?["code"] == "PAGINATION_LOOP" })
        #expect(output.last == ["appended": 1, "duplicate": 1, "rejected": 0])
        #expect(fixture.mock.requests.count == 2)
    }

    @Test func lookupOrderIngestsTheOrderAndPrintsTheCustomersView() throws {
        let fixture = try SyncFixture()
        let order = [
            S.signed(S.transaction("3000000000088301", productId: "com.example.coins.100", type: "Consumable", daysAgo: 2)),
            S.signed(S.transaction("3000000000088302", daysAgo: 2)),
        ]
        fixture.mock.handle { request in
            guard request.method == "GET" else { return MockResponse(status: 405) }
            switch request.path {
            case "/inApps/v1/lookup/MQ5Y1Z2X3W": return .json(["status": 0, "signedTransactions": .array(order.map(JSONValue.string))])
            case "/inApps/v1/lookup/UNKNOWN123": return .json(["status": 1, "signedTransactions": []])
            default: return MockResponse(status: 404)
            }
        }
        let run = try Tool.entitlements(["lookup-order", "--config", fixture.configPath, "--order-id", "MQ5Y1Z2X3W"], in: fixture.folder)
        #expect(run.status == 0, "\(run.stderr)")
        let output = S.lines(run)
        #expect(output.count == 1, "stdout is the customer's view alone: \(run.stdout)")
        let view = try #require(output.first)
        #expect(view["appTransactionId"] == .string(S.appTransactionId))
        #expect(view["balances"]?["coins"] == 100)
        #expect(view["entitlements"]?["pro"]?["active"] == true)
        #expect(run.stderr.contains("\"items\":2"), "\(run.stderr)")
        // The view printed is the one `query` answers from the database.
        guard case .int(let at)? = view["at"] else { Issue.record("the view has no \"at\""); return }
        let query = try Tool.entitlements(
            ["query", "--config", fixture.configPath, "--transaction-id", "3000000000088302", "--at", String(at)], in: fixture.folder)
        #expect(S.lines(query).first == view)

        let unknown = try Tool.entitlements(["lookup-order", "--config", fixture.configPath, "--order-id", "UNKNOWN123"], in: fixture.folder)
        #expect(unknown.status == 1)
        #expect(S.lines(unknown).first?["error"]?["code"] == "NOT_FOUND")
        #expect(fixture.mock.requests.map(\.path) == ["/inApps/v1/lookup/MQ5Y1Z2X3W", "/inApps/v1/lookup/UNKNOWN123"])
        #expect(fixture.mock.requests.allSatisfy { $0.tokenProblem == nil })
    }

    @Test func helpForEachCommand() throws {
        for command in ["transaction-info", "refund-history", "lookup-order", "finish-transaction", "extend", "test-notification"] {
            let run = try Tool.entitlements([command, "--help"], in: Tool.folder())
            #expect(run.status == 0)
            #expect(run.stdout.hasPrefix("entitlements \(command)"), "\(command): \(run.stdout.prefix(80))")
            #expect(run.stdout.contains("EXIT CODES"))
        }
    }
}
