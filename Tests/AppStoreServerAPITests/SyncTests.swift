import AppStoreServerAPI
import EntitlementCore
import Entitlements
import EventStore
import Foundation
import Synchronization
import Testing
import TestPKI
import TestSupport

/// Signed pages of a mock App Store: notifications, transaction history, statuses.
enum SyncScenario {
    /// The suites' shared PKI (``Scenario/pki``).
    static var pki: TestPKI { Scenario.pki }
    static let day: Int64 = 86_400_000
    static let start = TestPayloads.january2025

    /// 45 notifications for 9 customers, as 3 pages of Get Notification History (20, 20, 5).
    static let notificationPages: [[String]] = {
        var payloads: [String] = []
        for index in 0..<45 {
            let customer = index % 9
            let renewal = Int64(index / 9)
            let original = "20000000000\(String(format: "%05d", customer))"
            let transaction = TestPayloads.transaction(
                transactionId: "30000000\(String(format: "%03d", customer))\(String(format: "%05d", renewal))",
                originalTransactionId: original, appTransactionId: "7040000000000\(String(format: "%05d", customer))",
                productId: customer % 3 == 0 ? "com.example.pro.yearly" : "com.example.pro.monthly",
                purchaseDate: start + renewal * 30 * day, expiresDate: start + (renewal + 1) * 30 * day)
            payloads.append(
                pki.sign(
                    TestPayloads.notification(
                        type: renewal == 0 ? "SUBSCRIBED" : "DID_RENEW", subtype: renewal == 0 ? "INITIAL_BUY" : nil,
                        uuid: "00000000-0000-4000-8000-0000000\(String(format: "%05d", index))", signedDate: start + renewal * 30 * day + 1000,
                        signedTransactionInfo: pki.sign(transaction))))
        }
        return [Array(payloads[0..<20]), Array(payloads[20..<40]), Array(payloads[40..<45])]
    }()

    static func notificationPage(_ index: Int) -> JSONValue {
        var page = JSONObject([
            (
                "notificationHistory",
                .array(
                    notificationPages[index].map {
                        ["signedPayload": .string($0), "sendAttempts": [["attemptDate": .int(start), "sendAttemptResult": "SUCCESS"]]]
                    })
            ),
            ("hasMore", .bool(index < 2)),
        ])
        if index < 2 { page["paginationToken"] = .string("token-\(index + 1)") }
        return .object(page)
    }

    /// One customer's transaction history in 2 pages (revision r1, r2), statuses and app transaction.
    static let customerOriginal = "2000000000099999"
    static let historyTransactions: [JSONValue] = (0..<25).map { renewal in
        TestPayloads.transaction(
            transactionId: "40000000000\(String(format: "%05d", renewal))", originalTransactionId: customerOriginal,
            appTransactionId: "704000000000099999", purchaseDate: start + Int64(renewal) * 30 * day,
            expiresDate: start + Int64(renewal + 1) * 30 * day)
    }

    static let signedHistory: [String] = historyTransactions.map(pki.sign)

    static func historyPage(revision: String?) -> JSONValue {
        let signed = signedHistory
        switch revision {
        case nil:
            return page(Array(signed[0..<20]), revision: "r1", hasMore: true)
        case "r1"?:
            return page(Array(signed[20..<25]), revision: "r2", hasMore: false)
        default:
            return page([], revision: revision!, hasMore: false)
        }
    }

    static func page(_ signed: [String], revision: String, hasMore: Bool) -> JSONValue {
        [
            "revision": .string(revision), "bundleId": .string(TestPayloads.bundleId), "appAppleId": .int(TestPayloads.appAppleId),
            "environment": "Sandbox", "hasMore": .bool(hasMore), "signedTransactions": .array(signed.map(JSONValue.string)),
        ]
    }

    static let statuses: JSONValue = [
        "environment": "Sandbox", "bundleId": .string(TestPayloads.bundleId), "appAppleId": .int(TestPayloads.appAppleId),
        "data": [
            [
                "subscriptionGroupIdentifier": "21000000",
                "lastTransactions": [
                    [
                        "originalTransactionId": .string(customerOriginal), "status": 1,
                        "signedTransactionInfo": .string(pki.sign(historyTransactions[24])),
                        "signedRenewalInfo": .string(
                            pki.sign(
                                TestPayloads.renewalInfo(
                                    originalTransactionId: customerOriginal, appTransactionId: "704000000000099999",
                                    signedDate: start + 24 * 30 * day + 5))),
                    ]
                ],
            ]
        ],
    ]

    static let appTransaction: JSONValue = [
        "signedAppTransactionInfo": .string(pki.sign(TestPayloads.appTransaction(appTransactionId: "704000000000099999")))
    ]

    /// The demo configuration's rules, as version `sync-1`.
    static let rules: JSONValue = Scenario.rulesJSON(version: "sync-1")
}

/// A mock App Store Server API and an engine configured to call it.
final class SyncFixture: @unchecked Sendable {
    let folder = Tool.folder("sync")
    let keyPath: String
    let mock: MockAppStoreAPI
    let configPath: String
    let sleeps = SleepLog()

    init(keyId: String = "2X9R4HXF34", environment: JSONValue = "Sandbox") throws {
        keyPath = try Tool.generateKey("SubscriptionKey.p8", in: folder)
        try Tool.openssl(["pkey", "-in", keyPath, "-pubout", "-out", "public.pem"], in: folder)
        let publicPEM = try String(contentsOf: folder.appendingPathComponent("public.pem"), encoding: .utf8)
        mock = try MockAppStoreAPI(
            publicKeyPEM: publicPEM, keyId: "2X9R4HXF34", issuerId: "57246542-96fe-1a63-e053-0824d011072a", bundleId: TestPayloads.bundleId)
        configPath = try Tool.writeConfig(
            in: folder, keyPath: "SubscriptionKey.p8", baseURL: mock.baseURL, bundleId: TestPayloads.bundleId, environment: environment,
            rootPEM: SyncScenario.pki.rootPEM, rules: SyncScenario.rules)
        if keyId != "2X9R4HXF34" {
            let text = try String(contentsOfFile: configPath, encoding: .utf8).replacingOccurrences(of: "2X9R4HXF34", with: keyId)
            try Data(text.utf8).write(to: URL(fileURLWithPath: configPath))
        }
    }

    deinit { mock.stop() }

    var configuration: EngineConfiguration { try! EngineConfiguration.load(path: configPath) }

    func engine(_ name: String = "synced.sqlite") throws -> Engine {
        try Engine(configuration: configuration, databasePath: folder.appendingPathComponent(name).path)
    }

    /// A sync whose retries record their delay instead of waiting.
    func sync(_ engine: Engine, clock: @escaping @Sendable () -> Int64 = { Engine.now() }) throws -> AppStoreSync {
        let client = try AppStoreSync.client(
            for: configuration, transport: try HTTPClient(), sleep: { [sleeps] delay in sleeps.record(delay) })
        return AppStoreSync(engine: engine, client: client, clock: clock)
    }

    /// Serves notification history pages by paginationToken, with `fault` first for the requests it answers.
    func serveNotifications(fault: (@Sendable (MockRequest) -> MockResponse?)? = nil) {
        mock.handle { request in
            if let fault, let response = fault(request) { return response }
            guard request.method == "POST", request.path == "/inApps/v1/notifications/history" else { return MockResponse(status: 404) }
            switch request.query["paginationToken"] {
            case nil: return .json(SyncScenario.notificationPage(0))
            case "token-1"?: return .json(SyncScenario.notificationPage(1))
            case "token-2"?: return .json(SyncScenario.notificationPage(2))
            default: return .error(400, code: 4_000_014, message: "Invalid pagination token error.")
            }
        }
    }

    func serveCustomer(fault: (@Sendable (MockRequest) -> MockResponse?)? = nil) {
        mock.handle { request in
            if let fault, let response = fault(request) { return response }
            let otid = SyncScenario.customerOriginal
            switch (request.method, request.path) {
            case ("GET", "/inApps/v2/history/\(otid)"): return .json(SyncScenario.historyPage(revision: request.query["revision"]))
            case ("GET", "/inApps/v1/subscriptions/\(otid)"): return .json(SyncScenario.statuses)
            case ("GET", "/inApps/v1/transactions/appTransactions/\(otid)"): return .json(SyncScenario.appTransaction)
            case ("PUT", "/inApps/v1/transactions/\(otid)/appAccountToken"): return MockResponse(status: 200)
            default: return .error(404, code: 4_040_010, message: "Transaction id not found.")
            }
        }
    }
}

/// The delays a client was asked to wait (it does not wait).
final class SleepLog: Sendable {
    private let log = Mutex<[Double]>([])
    func record(_ delay: Double) { log.withLock { $0.append(delay) } }
    var delays: [Double] { log.withLock { $0 } }
}

/// A short fingerprint of many lines (count and FNV-1a), so a failed comparison prints little.
func fingerprint(_ lines: [String]) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in lines.joined(separator: "\n").utf8 {
        hash ^= UInt64(byte)
        hash = hash &* 0x100_0000_01b3
    }
    return "\(lines.count) lines, fnv \(String(hash, radix: 16))"
}

/// What a database holds, in a form two databases can be compared by: every event
/// (identity, kind, customer, payload, raw JWS) and every customer's answer now.
func contents(of engine: Engine) throws -> (events: [String], customers: [String: String]) {
    let connection = try Connection(path: engine.databasePath, mode: .readOnly)
    let store = try EventStore(path: engine.databasePath, hash: { $0 }, mode: .readOnly)
    let statement = try connection.prepare(
        "SELECT identity, kind, event_id, customer_key, payload, seq FROM events_decoded ORDER BY identity")
    var events: [String] = []
    var keys: Set<String> = []
    while try statement.step() {
        let raw = try store.loggedInput(at: statement.int64(5))
        events.append(((0..<5).map { statement.string(Int32($0)) ?? "NULL" } + [raw]).joined(separator: "|"))
        if let key = statement.string(3) { keys.insert(key) }
    }
    var customers: [String: String] = [:]
    for key in keys {
        customers[key] = JSONWriter.string(try engine.query(.appTransactionId(key), at: SyncScenario.start + 400 * SyncScenario.day).json())
    }
    return (events, customers)
}

@Suite struct NotificationSyncTests {
    @Test func pullsEveryPageRetries429AndEqualsIngestingThePagesByHand() throws {
        let fixture = try SyncFixture()
        let throttled = Mutex(false)
        fixture.serveNotifications { request in
            // The second page is throttled once.
            guard request.query["paginationToken"] == "token-1", !throttled.withLock({ $0 }) else { return nil }
            throttled.withLock { $0 = true }
            return .error(429, code: 4_290_000, message: "Rate limit exceeded.", headers: [("Retry-After", "7")])
        }
        let engine = try fixture.engine()
        let now = Engine.now()
        var pages: [SyncPage] = []
        let outcome = try fixture.sync(engine, clock: { now }).notifications(start: nil, onlyFailures: false) { pages.append($0) }
        #expect(outcome.failure == nil)
        #expect(outcome.totals == SyncTotals(appended: 45, duplicate: 0, rejected: 0))
        #expect(pages.map(\.items) == [20, 20, 5])
        #expect(pages.map(\.status) == [200, 200, 200])
        #expect(pages[1].request == "POST /inApps/v1/notifications/history?paginationToken=token-1")
        #expect(fixture.sleeps.delays == [7])

        let requests = fixture.mock.requests
        #expect(requests.count == 4)
        #expect(requests.allSatisfy { $0.tokenProblem == nil })
        #expect(Set(requests.compactMap { $0.headers["authorization"] }).count == 4, "a fresh token per request")
        for request in requests {
            #expect(request.json?["startDate"] == .int(now - 180 * SyncScenario.day + AppStoreSync.historyWindowMargin))
            #expect(request.json?["endDate"] == .int(now))
            #expect(request.json?["onlyFailures"] == nil)
            #expect(request.headers["content-type"] == "application/json")
        }

        // The same pages ingested by hand give the same database.
        let byHand = try fixture.engine("by-hand.sqlite")
        for index in 0..<3 {
            _ = try byHand.ingest(SyncScenario.notificationPages[index].map { InputBytes(TestPayloads.body(signedPayload: $0)) })
        }
        let synced = try contents(of: engine), manual = try contents(of: byHand)
        #expect(synced.events.count == 45)
        #expect(fingerprint(synced.events) == fingerprint(manual.events))
        #expect(fingerprint(synced.customers.sorted { $0.key < $1.key }.map { $0.key + "=" + $0.value }) == fingerprint(manual.customers.sorted { $0.key < $1.key }.map { $0.key + "=" + $0.value }))
        #expect(synced.customers.count == 9)

        // The next sync resumes at the stored end, the last one's endDate: all duplicates.
        let later = now + 3_600_000
        var again: [SyncPage] = []
        let second = try fixture.sync(engine, clock: { later }).notifications(start: nil, onlyFailures: false) { again.append($0) }
        #expect(second.failure == nil)
        #expect(second.totals == SyncTotals(appended: 0, duplicate: 45, rejected: 0))
        let resumed = fixture.mock.requests.dropFirst(4)
        #expect(fixture.mock.requests.first?.json?["endDate"] == .int(now))
        #expect(resumed.first?.json?["startDate"] == .int(now))
        #expect(resumed.first?.json?["endDate"] == .int(later))

        // A sync of failures starts where the last sync of either kind ended, and the other way round.
        let failures = later + 60_000
        #expect(try fixture.sync(engine, clock: { failures }).notifications(start: nil, onlyFailures: true) { _ in }.failure == nil)
        let third = try #require(fixture.mock.requests.dropFirst(7).first?.json)
        #expect(third["onlyFailures"] == .bool(true))
        #expect(third["startDate"] == .int(later))
        let whole = failures + 60_000
        #expect(try fixture.sync(engine, clock: { whole }).notifications(start: nil, onlyFailures: false) { _ in }.failure == nil)
        let fourth = try #require(fixture.mock.requests.dropFirst(10).first?.json)
        #expect(fourth["onlyFailures"] == nil)
        #expect(fourth["startDate"] == .int(failures))
    }

    @Test func onlyFailuresAndAnExplicitStart() throws {
        let fixture = try SyncFixture()
        fixture.serveNotifications()
        let engine = try fixture.engine()
        let start = Engine.now() - 5 * SyncScenario.day
        let outcome = try fixture.sync(engine).notifications(start: start, onlyFailures: true) { _ in }
        #expect(outcome.failure == nil)
        #expect(outcome.totals.appended == 45)
        let first = try #require(fixture.mock.requests.first?.json)
        #expect(first["onlyFailures"] == .bool(true))
        #expect(first["startDate"] == .int(start))
    }

    /// A 500 on the last page: the first two pages stay ingested, the resume point is not moved.
    @Test func aLaterFailureKeepsWhatWasIngested() throws {
        let fixture = try SyncFixture()
        fixture.serveNotifications { request in
            request.query["paginationToken"] == "token-2" ? .error(500, code: 5_000_000, message: "An unknown error occurred.") : nil
        }
        let engine = try fixture.engine()
        var pages: [SyncPage] = []
        let outcome = try fixture.sync(engine).notifications(start: nil, onlyFailures: false) { pages.append($0) }
        #expect(outcome.totals.appended == 40)
        #expect(pages.count == 2)
        guard case .api(let error)? = outcome.failure else {
            Issue.record("expected an API failure, got \(String(describing: outcome.failure))")
            return
        }
        #expect(error.status == 500)
        #expect(error.apiErrorCode == 5_000_000)
        #expect(error.apiErrorMessage == "An unknown error occurred.")
        #expect(error.code == .apiError)
        #expect(error.request == "POST /inApps/v1/notifications/history?paginationToken=token-2")
        #expect(try contents(of: engine).events.count == 40)
        #expect(fixture.sleeps.delays.isEmpty, "a 500 is not retried")

        // Nothing was stored as the resume point: the next sync starts 180 days back again.
        fixture.serveNotifications()
        let now = Engine.now()
        let retry = try fixture.sync(engine, clock: { now }).notifications(start: nil, onlyFailures: false) { _ in }
        #expect(retry.totals == SyncTotals(appended: 5, duplicate: 40, rejected: 0))
        #expect(fixture.mock.requests.last?.json?["startDate"] == .int(now - 180 * SyncScenario.day + AppStoreSync.historyWindowMargin))
    }

    @Test func tooMany429sFailAfterThreeRetries() throws {
        let fixture = try SyncFixture()
        fixture.serveNotifications { _ in .error(429, code: 4_290_000, message: "Rate limit exceeded.", headers: [("Retry-After", "2")]) }
        let outcome = try fixture.sync(try fixture.engine()).notifications(start: nil, onlyFailures: false) { _ in }
        guard case .api(let error)? = outcome.failure else {
            Issue.record("expected an API failure")
            return
        }
        #expect(error.code == .rateLimited)
        #expect(error.status == 429)
        #expect(error.apiErrorCode == 4_290_000)
        #expect(fixture.sleeps.delays == [2, 2, 2])
        #expect(fixture.mock.requests.count == 4)
    }

    /// A key Apple does not know (another kid): 401, reported as such, nothing ingested.
    @Test func aRefusedTokenIs401() throws {
        let fixture = try SyncFixture(keyId: "OTHERKEY01")
        fixture.serveNotifications()
        let engine = try fixture.engine()
        let outcome = try fixture.sync(engine).notifications(start: nil, onlyFailures: false) { _ in }
        guard case .api(let error)? = outcome.failure else {
            Issue.record("expected an API failure")
            return
        }
        #expect(error.code == .unauthorized)
        #expect(error.status == 401)
        #expect(error.message.contains("keyId"))
        #expect(fixture.mock.requests.first?.tokenProblem?.contains("OTHERKEY01") == true)
        #expect(try contents(of: engine).events.isEmpty)
    }
}

@Suite struct CustomerSyncTests {
    @Test func historyStatusesAndAppTransactionEqualIngestingByHand() throws {
        let fixture = try SyncFixture()
        fixture.serveCustomer()
        let engine = try fixture.engine()
        var pages: [SyncPage] = []
        let outcome = try fixture.sync(engine).customer(SyncScenario.customerOriginal) { pages.append($0) }
        #expect(outcome.failure == nil)
        let otid = SyncScenario.customerOriginal
        #expect(
            pages.map(\.request) == [
                "GET /inApps/v2/history/\(otid)", "GET /inApps/v2/history/\(otid)?revision=r1", "GET /inApps/v1/subscriptions/\(otid)",
                "GET /inApps/v1/transactions/appTransactions/\(otid)",
            ])
        #expect(pages.map(\.items) == [20, 5, 2, 1])
        // 25 transactions, the renewal info and the app transaction; the status's transaction is the 25th again.
        #expect(outcome.totals == SyncTotals(appended: 27, duplicate: 1, rejected: 0))
        #expect(fixture.mock.requests.allSatisfy { $0.tokenProblem == nil && $0.body.isEmpty })

        let byHand = try fixture.engine("by-hand.sqlite")
        for document in [SyncScenario.historyPage(revision: nil), SyncScenario.historyPage(revision: "r1"), SyncScenario.statuses, SyncScenario.appTransaction] {
            _ = try byHand.ingest([InputBytes(JSONWriter.string(document))])
        }
        let synced = try contents(of: engine), manual = try contents(of: byHand)
        #expect(fingerprint(synced.events) == fingerprint(manual.events))
        #expect(fingerprint(synced.customers.sorted { $0.key < $1.key }.map { $0.key + "=" + $0.value }) == fingerprint(manual.customers.sorted { $0.key < $1.key }.map { $0.key + "=" + $0.value }))
        #expect(synced.customers["704000000000099999"]?.contains("\"pro\"") == true)

        // The next sync starts from the stored revision, also when asked by the appTransactionId.
        var again: [SyncPage] = []
        _ = try fixture.sync(engine).customer(otid) { again.append($0) }
        #expect(again.first?.request == "GET /inApps/v2/history/\(otid)?revision=r2")
        #expect(again.first?.items == 0)
    }

    /// Asked by a renewal's transaction id (not the original), the sync starts from the
    /// revision stored for the customer holding that transaction.
    @Test func aRenewalsTransactionIdStartsFromTheCustomersRevision() throws {
        let fixture = try SyncFixture()
        fixture.serveCustomer()
        let engine = try fixture.engine()
        let first = try fixture.sync(engine).customer(SyncScenario.customerOriginal) { _ in }
        #expect(first.failure == nil)

        let renewal = "4000000000000024"
        fixture.serveCustomer { request in
            switch (request.method, request.path) {
            case ("GET", "/inApps/v2/history/\(renewal)"): return .json(SyncScenario.historyPage(revision: request.query["revision"]))
            case ("GET", "/inApps/v1/subscriptions/\(renewal)"): return .json(SyncScenario.statuses)
            case ("GET", "/inApps/v1/transactions/appTransactions/\(renewal)"): return .json(SyncScenario.appTransaction)
            default: return nil
            }
        }
        var pages: [SyncPage] = []
        let again = try fixture.sync(engine).customer(renewal) { pages.append($0) }
        #expect(again.failure == nil)
        #expect(pages.first?.request == "GET /inApps/v2/history/\(renewal)?revision=r2")
        #expect(again.totals == SyncTotals(appended: 0, duplicate: 3, rejected: 0), "from revision r2: an empty history page, statuses, app transaction")
    }

    /// The async twin runs on a thread of its own and answers the same.
    @Test func asyncTwin() async throws {
        let fixture = try SyncFixture()
        fixture.serveCustomer()
        let sync = try fixture.sync(try fixture.engine())
        let pages = Mutex<[Int]>([])
        let outcome = await sync.customer(SyncScenario.customerOriginal) { page in pages.withLock { $0.append(page.items) } }
        #expect(outcome.failure == nil)
        #expect(outcome.totals == SyncTotals(appended: 27, duplicate: 1, rejected: 0))
        #expect(pages.withLock { $0 } == [20, 5, 2, 1])
        let again = await sync.customer(SyncScenario.customerOriginal)
        #expect(again.totals == SyncTotals(appended: 0, duplicate: 3, rejected: 0), "from revision r2: an empty history page, statuses, app transaction")
    }

    @Test func aFailedPageKeepsTheRevisionReached() throws {
        let fixture = try SyncFixture()
        fixture.serveCustomer { request in
            request.query["revision"] == "r1" ? .error(500, code: 5_000_001, message: "An unknown error occurred. Please try again.") : nil
        }
        let engine = try fixture.engine()
        let outcome = try fixture.sync(engine).customer(SyncScenario.customerOriginal) { _ in }
        #expect(outcome.totals.appended == 20)
        guard case .api(let error)? = outcome.failure else {
            Issue.record("expected an API failure")
            return
        }
        #expect(error.apiErrorCode == 5_000_001)
        fixture.serveCustomer()
        var pages: [SyncPage] = []
        let resumed = try fixture.sync(engine).customer(SyncScenario.customerOriginal) { pages.append($0) }
        #expect(resumed.failure == nil)
        #expect(pages.first?.request == "GET /inApps/v2/history/\(SyncScenario.customerOriginal)?revision=r1")
        #expect(try contents(of: engine).events.count == 27)
    }

    @Test func setAppAccountTokenPutsTheToken() throws {
        let fixture = try SyncFixture()
        fixture.serveCustomer()
        let outcome = try fixture.sync(try fixture.engine()).setAppAccountToken(
            originalTransactionId: SyncScenario.customerOriginal, appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(outcome.failure == nil)
        #expect(outcome.pages.map(\.status) == [200])
        let request = try #require(fixture.mock.requests.first)
        #expect(request.method == "PUT")
        #expect(request.path == "/inApps/v1/transactions/\(SyncScenario.customerOriginal)/appAccountToken")
        #expect(request.json == ["appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138"])
        #expect(request.tokenProblem == nil)
    }
}
