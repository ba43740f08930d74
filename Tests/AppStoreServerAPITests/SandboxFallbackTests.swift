import AppStoreServerAPI
import EntitlementCore
import Entitlements
import Foundation
import Synchronization
import Testing
import TestPKI
import TestSupport

/// Production's `4040010` asked again of Sandbox when the configuration accepts both.
@Suite struct SandboxFallbackTests {
    /// A fixture accepting Production then Sandbox, whose mock (Production) knows no
    /// transaction, and a second mock (Sandbox, `sandboxBaseURL`) serving the customer.
    static func fixtures() throws -> (SyncFixture, MockAppStoreAPI) {
        let fixture = try SyncFixture(environment: ["Production", "Sandbox"])
        let publicPEM = try String(contentsOf: fixture.folder.appendingPathComponent("public.pem"), encoding: .utf8)
        let sandbox = try MockAppStoreAPI(
            publicKeyPEM: publicPEM, keyId: "2X9R4HXF34", issuerId: "57246542-96fe-1a63-e053-0824d011072a", bundleId: TestPayloads.bundleId)
        try SyncPagingTests.setAPIField("sandboxBaseURL", .string(sandbox.baseURL), in: fixture)
        fixture.mock.handle { _ in .error(404, code: 4_040_010, message: "Transaction id not found.") }
        let otid = SyncScenario.customerOriginal
        sandbox.handle { request in
            switch (request.method, request.path) {
            case ("GET", "/inApps/v2/history/\(otid)"): return .json(SyncScenario.historyPage(revision: request.query["revision"]))
            case ("GET", "/inApps/v1/subscriptions/\(otid)"): return .json(SyncScenario.statuses)
            case ("GET", "/inApps/v1/transactions/appTransactions/\(otid)"): return .json(SyncScenario.appTransaction)
            default: return .error(404, code: 4_040_010, message: "Transaction id not found.")
            }
        }
        return (fixture, sandbox)
    }

    @Test func aTransactionProductionDoesNotKnowIsAskedOfSandboxAndIngested() throws {
        let (fixture, sandbox) = try Self.fixtures()
        defer { sandbox.stop() }
        let engine = try fixture.engine()
        let outcome = try fixture.sync(engine).customer(SyncScenario.customerOriginal) { _ in }
        #expect(outcome.failure == nil, "\(String(describing: outcome.failure))")
        #expect(outcome.totals.appended >= 25)
        #expect(outcome.totals.rejected == 0)
        let production = fixture.mock.requests.map { "\($0.method) \($0.path)" }
        let asked = sandbox.requests.map { "\($0.method) \($0.path)" }
        #expect(production.count == 4, "two history pages, statuses, app transaction: \(production)")
        #expect(asked == production, "each is asked again of Sandbox")
        #expect(sandbox.requests.allSatisfy { $0.tokenProblem == nil })
    }

    @Test func aTransactionFinishedInSandboxIsReportedAndRecordedThere() throws {
        let (fixture, sandbox) = try Self.fixtures()
        defer { sandbox.stop() }
        sandbox.handle { request in
            request.method == "POST" && request.path.hasSuffix("/finish") ? MockResponse(status: 200) : .error(404, code: 4_040_010, message: "Transaction id not found.")
        }
        try Data().write(to: fixture.folder.appendingPathComponent("empty.ndjson"))
        #expect(try Tool.entitlements(["ingest", "--config", fixture.configPath, "empty.ndjson"], in: fixture.folder).status == 0)
        let run = try Tool.entitlements(
            ["finish-transaction", "--config", fixture.configPath, "--transaction-id", "3000000000099301"], in: fixture.folder)
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        let line = run.stdout.split(separator: "\n").compactMap { try? JSONParser().parse(String($0)) }.first
        #expect(line?["finished"] == true)
        #expect(line?["environment"] == "Sandbox", "\(run.stdout)")
        #expect(try SupportScenario.finish("3000000000099301", in: fixture)?.environment == "Sandbox")
        #expect(fixture.mock.requests.count == 1 && sandbox.requests.count == 1)
    }

    @Test func consumptionInformationProductionDoesNotKnowIsSentToSandbox() throws {
        let (fixture, sandbox) = try Self.fixtures()
        defer { sandbox.stop() }
        let transactionId = "3000000000099401"
        sandbox.handle { request in
            request.method == "PUT" && request.path == "/inApps/v2/transactions/consumption/\(transactionId)"
                ? MockResponse(status: 202) : .error(404, code: 4_040_010, message: "Transaction id not found.")
        }
        // A Production purchase (App Review buys in Sandbox, but its data may say otherwise) and
        // a CONSUMPTION_REQUEST for it.
        let now = Engine.now()
        let purchase = TestPayloads.transaction(
            transactionId: transactionId, productId: "com.example.lifetime", type: "Non-Consumable", purchaseDate: now - 4 * 86_400_000,
            expiresDate: nil, environment: "Production")
        let request = TestPayloads.notification(
            type: "CONSUMPTION_REQUEST", uuid: "66666666-0000-4000-8000-000000000401", signedDate: now - 3_600_000, environment: "Production",
            signedTransactionInfo: SyncScenario.pki.sign(purchase), consumptionRequestReason: "UNSATISFIED_WITH_PURCHASE")
        try Data((TestPayloads.body(signedPayload: SyncScenario.pki.sign(request)) + "\n").utf8).write(
            to: fixture.folder.appendingPathComponent("request.ndjson"))
        let ingest = try Tool.entitlements(["ingest", "--config", fixture.configPath, "request.ndjson"], in: fixture.folder)
        #expect(ingest.status == 0, "\(ingest.stdout) \(ingest.stderr)")

        let send = try Tool.entitlements(
            ["consumption", "--config", fixture.configPath, "--transaction-id", transactionId, "--customer-consented", "--send"], in: fixture.folder)
        #expect(send.status == 0, "\(send.stdout) \(send.stderr)")
        #expect(send.stdout.contains(#""accepted":true"#), "\(send.stdout)")
        #expect(fixture.mock.requests.map(\.path) == ["/inApps/v2/transactions/consumption/\(transactionId)"])
        #expect(sandbox.requests.map(\.path) == ["/inApps/v2/transactions/consumption/\(transactionId)"])
        #expect(sandbox.requests.allSatisfy { $0.tokenProblem == nil })
    }

    @Test func onlyTransactionIdNotFoundFallsBack() throws {
        let (fixture, sandbox) = try Self.fixtures()
        defer { sandbox.stop() }
        fixture.mock.handle { _ in .error(400, code: 4_000_006, message: "Invalid transaction id.") }
        let engine = try fixture.engine()
        let outcome = try fixture.sync(engine).customer(SyncScenario.customerOriginal) { _ in }
        guard case .api(let error)? = outcome.failure else {
            Issue.record("expected Production's error, got \(String(describing: outcome.failure))")
            return
        }
        #expect(error.apiErrorCode == 4_000_006)
        #expect(sandbox.requests.isEmpty)
    }

    @Test func productionAloneDoesNotFallBack() throws {
        let (fixture, sandbox) = try Self.fixtures()
        defer { sandbox.stop() }
        let text = try String(contentsOfFile: fixture.configPath, encoding: .utf8)
            .replacingOccurrences(of: #"["Production","Sandbox"]"#, with: #""Production""#)
        try Data(text.utf8).write(to: URL(fileURLWithPath: fixture.configPath))
        #expect(fixture.configuration.environments == [.production])
        let engine = try fixture.engine()
        let outcome = try fixture.sync(engine).customer(SyncScenario.customerOriginal) { _ in }
        guard case .api(let error)? = outcome.failure else {
            Issue.record("expected 4040010, got \(String(describing: outcome.failure))")
            return
        }
        #expect(error.apiErrorCode == 4_040_010)
        #expect(sandbox.requests.isEmpty)
    }

    @Test func sandboxBaseURLIsValidatedLikeBaseURL() throws {
        let (fixture, sandbox) = try Self.fixtures()
        defer { sandbox.stop() }
        try SyncPagingTests.setAPIField("sandboxBaseURL", "http://api.example.com", in: fixture)
        #expect(throws: ConfigurationError.self) { try EngineConfiguration.load(path: fixture.configPath) }
        try SyncPagingTests.setAPIField("sandboxBaseURL", "ftp://127.0.0.1", in: fixture)
        #expect(throws: ConfigurationError.self) { try EngineConfiguration.load(path: fixture.configPath) }
    }
}

/// `Retry-After` on a `429`, end to end: as Apple sends it (a UNIX time in milliseconds),
/// and in seconds.
@Suite struct RetryAfterFormsTests {
    func delays(retryAfter: @escaping @Sendable (Int64) -> String) throws -> [Double] {
        let fixture = try SyncFixture()
        let now = Int64(Date().timeIntervalSince1970)
        let throttled = Mutex(false)
        fixture.mock.handle { _ in
            if !throttled.withLock({ $0 }) {
                throttled.withLock { $0 = true }
                return .error(429, code: 4_290_000, message: "Rate limit exceeded.", headers: [("Retry-After", retryAfter(now))])
            }
            return .json(SyncScenario.appTransaction)
        }
        let api = try #require(fixture.configuration.appStoreServerAPI)
        let client = AppStoreServerAPIClient(
            signer: try api.signer(bundleId: TestPayloads.bundleId), baseURL: try #require(URL(string: fixture.mock.baseURL)),
            transport: try HTTPClient(), clock: { now }, sleep: { [sleeps = fixture.sleeps] in sleeps.record($0) })
        let response = try client.send(.appTransactionInfo(transactionId: "2000000000099999"))
        #expect(response.status == 200)
        #expect(response.retries == 1)
        #expect(fixture.mock.requests.count == 2)
        return fixture.sleeps.delays
    }

    @Test func unixMillisecondsAsAppleSendsThem() throws {
        #expect(try delays { now in String(now * 1000 + 2_500) } == [2.5])
    }

    @Test func seconds() throws {
        #expect(try delays { _ in "4" } == [4])
    }
}
