import EntitlementCore
import Entitlements
import Foundation
import Synchronization
import Testing
import TestPKI

/// `entitlements sync` and `set-account-token`, run as a program against the mock.
@Suite struct SyncCommandTests {
    func lines(_ run: Tool.Run) -> [JSONValue] {
        run.stdout.split(separator: "\n").compactMap { try? JSONParser().parse(String($0)) }
    }

    @Test func syncNotificationsPrintsAPageLineEachAndTotalsAndEqualsIngestByHand() throws {
        let fixture = try SyncFixture()
        let throttled = Mutex(false)
        fixture.serveNotifications { request in
            guard request.query["paginationToken"] == "token-2", !throttled.withLock({ $0 }) else { return nil }
            throttled.withLock { $0 = true }
            return .error(429, code: 4_290_000, message: "Rate limit exceeded.", headers: [("Retry-After", "0")])
        }
        let run = try Tool.entitlements(
            ["sync", "--config", fixture.configPath, "--db", "synced.sqlite", "--notifications", "--start", "2025-01-01T00:00:00Z"],
            in: fixture.folder)
        #expect(run.status == 0, "\(run.stderr)")
        let output = lines(run)
        #expect(output.count == 4)
        #expect(
            output.dropLast() == [
                ["request": "POST /inApps/v1/notifications/history", "status": 200, "items": 20],
                ["request": "POST /inApps/v1/notifications/history?paginationToken=token-1", "status": 200, "items": 20],
                ["request": "POST /inApps/v1/notifications/history?paginationToken=token-2", "status": 200, "items": 5],
            ])
        #expect(output.last == ["appended": 45, "duplicate": 0, "rejected": 0])
        #expect(fixture.mock.requests.count == 4)
        #expect(fixture.mock.requests.first?.json?["startDate"] == .int(TestPayloads.january2025))
        #expect(fixture.mock.requests.allSatisfy { $0.tokenProblem == nil })

        // The same pages through `ingest`, by hand: the same database.
        let ndjson = SyncScenario.notificationPages.joined().map { TestPayloads.body(signedPayload: $0) }.joined(separator: "\n") + "\n"
        try Data(ndjson.utf8).write(to: fixture.folder.appendingPathComponent("pages.ndjson"))
        let ingest = try Tool.entitlements(
            ["ingest", "--config", fixture.configPath, "--db", "by-hand.sqlite", "pages.ndjson"], in: fixture.folder)
        #expect(ingest.status == 0, "\(ingest.stderr)")
        let synced = try contents(of: try fixture.engine("synced.sqlite")), manual = try contents(of: try fixture.engine("by-hand.sqlite"))
        #expect(synced.events.count == 45)
        #expect(fingerprint(synced.events) == fingerprint(manual.events))
        #expect(synced.customers == manual.customers)
    }

    @Test func anAPIErrorPrintsApplesErrorCodeAndExitsOne() throws {
        let fixture = try SyncFixture()
        fixture.serveNotifications { request in
            request.query["paginationToken"] == "token-1" ? .error(500, code: 5_000_000, message: "An unknown error occurred.") : nil
        }
        let run = try Tool.entitlements(["sync", "--config", fixture.configPath, "--notifications"], in: fixture.folder)
        #expect(run.status == 1)
        let output = lines(run)
        #expect(output.count == 3)
        #expect(output.first?["items"] == 20)
        #expect(output[1]["status"] == 500)
        #expect(output[1]["errorCode"] == 5_000_000)
        #expect(output[1]["errorMessage"] == "An unknown error occurred.")
        #expect(output[1]["error"]?["code"] == "API_ERROR")
        #expect(output[1]["request"] == "POST /inApps/v1/notifications/history?paginationToken=token-1")
        #expect(output.last == ["appended": 20, "duplicate": 0, "rejected": 0])
        #expect(run.stderr.contains("5000000"))
        // The database (created by sync, in the working directory) keeps the first page.
        #expect(try contents(of: try fixture.engine("entitlements.sqlite")).events.count == 20)
    }

    @Test func syncCustomerAndSetAccountToken() throws {
        let fixture = try SyncFixture()
        fixture.serveCustomer()
        let otid = SyncScenario.customerOriginal
        let run = try Tool.entitlements(["sync", "--config", fixture.configPath, "--customer", otid], in: fixture.folder)
        #expect(run.status == 0, "\(run.stderr)")
        let output = lines(run)
        #expect(output.map { $0["items"] } == [20, 5, 2, 1, nil])
        #expect(output.last == ["appended": 27, "duplicate": 1, "rejected": 0])

        let set = try Tool.entitlements(
            ["set-account-token", "--config", fixture.configPath, "--original-transaction-id", otid, "--app-account-token",
             "7E3FB20B-4CDB-47CC-936D-99D65F608138"], in: fixture.folder)
        #expect(set.status == 0, "\(set.stderr)")
        #expect(lines(set) == [["request": .string("PUT /inApps/v1/transactions/\(otid)/appAccountToken"), "status": 200, "items": 0], ["appended": 0, "duplicate": 0, "rejected": 0]])
        let put = try #require(fixture.mock.requests.last)
        #expect(put.method == "PUT")
        #expect(put.json == ["appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138"])
    }

    @Test func usageErrors() throws {
        let fixture = try SyncFixture()
        for arguments in [
            ["sync", "--config", fixture.configPath],
            ["sync", "--config", fixture.configPath, "--notifications", "--customer", "1"],
            ["sync", "--config", fixture.configPath, "--notifications", "--start", "1735689600"],
            ["sync", "--config", fixture.configPath, "--customer", "1", "--only-failures"],
            ["set-account-token", "--config", fixture.configPath, "--original-transaction-id", "1", "--app-account-token", "not-a-uuid"],
            ["set-account-token", "--config", fixture.configPath, "--app-account-token", "7E3FB20B-4CDB-47CC-936D-99D65F608138"],
        ] {
            let run = try Tool.entitlements(arguments, in: fixture.folder)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stdout.isEmpty)
        }
        #expect(fixture.mock.requests.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: fixture.folder.appendingPathComponent("entitlements.sqlite").path))
    }

    /// An id that cannot be one is named as such, not reported missing.
    @Test func aMalformedOriginalTransactionIdIsNamed() throws {
        let fixture = try SyncFixture()
        for id in ["", "../1"] {
            let run = try Tool.entitlements(
                ["set-account-token", "--config", fixture.configPath, "--original-transaction-id", id, "--app-account-token",
                 "7E3FB20B-4CDB-47CC-936D-99D65F608138"], in: fixture.folder)
            #expect(run.status == 2)
            #expect(run.stderr.contains("--original-transaction-id expects an original transaction id, got \"\(id)\""), "\(run.stderr)")
        }
        #expect(fixture.mock.requests.isEmpty)
    }

    /// A production server that also accepts Sandbox syncs each environment separately:
    /// each keeps its own resume points.
    @Test func eachEnvironmentResumesOnItsOwn() throws {
        let fixture = try SyncFixture(environment: ["Sandbox", "Production"])
        fixture.serveCustomer()
        let otid = SyncScenario.customerOriginal
        func firstHistoryRequest(_ arguments: [String]) throws -> String? {
            let before = fixture.mock.requests.count
            let run = try Tool.entitlements(["sync", "--config", fixture.configPath, "--customer", otid] + arguments, in: fixture.folder)
            #expect(run.status == 0, "\(arguments): \(run.stderr)")
            return fixture.mock.requests.dropFirst(before).first.map { $0.query["revision"] ?? "none" }
        }
        #expect(try firstHistoryRequest(["--environment", "Production"]) == "none")
        #expect(try firstHistoryRequest([]) == "none", "Sandbox (the first) has no resume point yet")
        #expect(try firstHistoryRequest(["--environment", "Production"]) == "r2")
        #expect(try firstHistoryRequest(["--environment", "Sandbox"]) == "r2")
        let refused = try Tool.entitlements(["sync", "--config", fixture.configPath, "--customer", otid, "--environment", "Xcode"], in: fixture.folder)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("Sandbox, Production"))
    }

    @Test func setAccountTokenOpensNoDatabase() throws {
        let fixture = try SyncFixture()
        fixture.serveCustomer()
        let run = try Tool.entitlements(
            ["set-account-token", "--config", fixture.configPath, "--original-transaction-id", SyncScenario.customerOriginal,
             "--app-account-token", "7e3fb20b-4cdb-47cc-936d-99d65f608138"], in: fixture.folder)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: fixture.folder.appendingPathComponent("entitlements.sqlite").path))
        fixture.serveCustomer { _ in .error(404, code: 4_040_005, message: "Original transaction id not found.") }
        let missing = try Tool.entitlements(
            ["set-account-token", "--config", fixture.configPath, "--original-transaction-id", "1", "--app-account-token",
             "7e3fb20b-4cdb-47cc-936d-99d65f608138"], in: fixture.folder)
        #expect(missing.status == 1)
        let output = lines(missing)
        #expect(output.first?["errorCode"] == 4_040_005)
        #expect(output.first?["status"] == 404)
        #expect(output.last == ["appended": 0, "duplicate": 0, "rejected": 0])
    }
}
