import AppStoreServerAPI
import EntitlementCore
import Entitlements
import Foundation
import Synchronization
import Testing
import TestPKI

/// Paging that would never end stops with `PAGINATION_LOOP`, and a resume point never moves
/// past an item that was not ingested.
@Suite struct SyncPagingTests {
    /// Rewrites the fixture's `appStoreServerAPI` section with `field` set to `value`.
    static func setAPIField(_ field: String, _ value: JSONValue, in fixture: SyncFixture) throws {
        let url = URL(fileURLWithPath: fixture.configPath)
        guard case .object(var config) = try JSONParser().parse(Array(try Data(contentsOf: url))),
            case .object(var api)? = config["appStoreServerAPI"]
        else {
            throw MockError("the fixture's configuration has no appStoreServerAPI object")
        }
        api[field] = value
        config["appStoreServerAPI"] = .object(api)
        try Data(JSONWriter.string(.object(config)).utf8).write(to: url)
    }

    /// `handler`'s answers for the first 50 requests, then an error: a sync that follows a
    /// loop ends (with the wrong outcome) rather than hanging the test run.
    static func bounded(_ handler: @escaping @Sendable (MockRequest) -> MockResponse) -> @Sendable (MockRequest) -> MockResponse {
        let count = Mutex(0)
        return { request in
            let served = count.withLock { value in
                value += 1
                return value
            }
            return served <= 50 ? handler(request) : .error(500, code: 5_000_000, message: "The test's bound on requests was reached.")
        }
    }

    static func loopError(_ outcome: SyncOutcome) -> APIError? {
        guard case .api(let error)? = outcome.failure, error.code == .paginationLoop else {
            Issue.record("expected PAGINATION_LOOP, got \(String(describing: outcome.failure))")
            return nil
        }
        return error
    }

    /// A notification history page of `payloads` that says `hasMore` with `token`.
    static func notificationPage(_ payloads: [String], token: String?) -> JSONValue {
        var page = JSONObject([
            ("notificationHistory", .array(payloads.map { ["signedPayload": .string($0)] })), ("hasMore", .bool(token != nil)),
        ])
        if let token { page["paginationToken"] = .string(token) }
        return .object(page)
    }

    @Test func aRepeatedPaginationTokenStopsTheSync() throws {
        let fixture = try SyncFixture()
        // Every page says hasMore with the same token (up to a bound, so that a sync that
        // does not notice ends, and fails this test, instead of running forever).
        fixture.mock.handle(Self.bounded { _ in .json(SyncScenario.notificationPage(0)) })
        let engine = try fixture.engine()
        let now = Engine.now()
        let outcome = try fixture.sync(engine, clock: { now }).notifications(start: nil, onlyFailures: false) { _ in }
        let error = try #require(Self.loopError(outcome))
        #expect(error.message.contains("token-1"), "\(error.message)")
        #expect(error.request == "POST /inApps/v1/notifications/history?paginationToken=token-1")
        #expect(fixture.mock.requests.count == 2, "the repeat is seen on the second page")
        #expect(outcome.totals == SyncTotals(appended: 20, duplicate: 20, rejected: 0))

        // Not a success: the resume point did not move.
        fixture.serveNotifications()
        let later = now + 60_000
        _ = try fixture.sync(engine, clock: { later }).notifications(start: nil, onlyFailures: false) { _ in }
        #expect(fixture.mock.requests[2].json?["startDate"] == .int(later - AppStoreSync.historyWindow + AppStoreSync.historyWindowMargin))
    }

    @Test func newTokensForeverStopAtMaxPages() throws {
        let fixture = try SyncFixture()
        try Self.setAPIField("maxPages", 5, in: fixture)
        let served = Mutex(0)
        fixture.mock.handle(
            Self.bounded { _ in
                let next = served.withLock { count in
                    count += 1
                    return count
                }
                return .json(Self.notificationPage([], token: "token-\(next)"))
            })
        let outcome = try fixture.sync(try fixture.engine()).notifications(start: nil, onlyFailures: false) { _ in }
        let error = try #require(Self.loopError(outcome))
        #expect(error.message.contains("maxPages") && error.message.contains("5"), "\(error.message)")
        #expect(fixture.mock.requests.count == 5)
    }

    @Test func aRevisionThatDoesNotAdvanceStopsTheCustomerSync() throws {
        let fixture = try SyncFixture()
        let otid = SyncScenario.customerOriginal
        let history = Self.bounded { _ in .json(SyncScenario.page(Array(SyncScenario.signedHistory[0..<20]), revision: "r1", hasMore: true)) }
        fixture.serveCustomer { request in
            // The history says hasMore with r1 again and again.
            request.path == "/inApps/v2/history/\(otid)" ? history(request) : nil
        }
        let outcome = try fixture.sync(try fixture.engine()).customer(otid) { _ in }
        let error = try #require(Self.loopError(outcome))
        #expect(error.message.contains("r1") && error.message.contains("revision"), "\(error.message)")
        #expect(fixture.mock.requests.map(\.query) == [[:], ["revision": "r1"]])
    }

    @Test func aHistoryPageWithoutARevisionWhileHasMoreIsMalformed() throws {
        let fixture = try SyncFixture()
        let otid = SyncScenario.customerOriginal
        let history = Self.bounded { request in
            if request.query["revision"] == nil { return .json(SyncScenario.historyPage(revision: nil)) }
            // hasMore, but the revision is gone: asking again with r1 would loop.
            return .json(["hasMore": true, "signedTransactions": []])
        }
        fixture.serveCustomer { request in request.path == "/inApps/v2/history/\(otid)" ? history(request) : nil }
        let outcome = try fixture.sync(try fixture.engine()).customer(otid) { _ in }
        guard case .api(let error)? = outcome.failure else {
            Issue.record("expected an API failure, got \(String(describing: outcome.failure))")
            return
        }
        #expect(error.code == .malformedResponse)
        #expect(fixture.mock.requests.count == 2)
    }

    /// A page whose `hasMore` is neither true nor false is not taken for the last page: the
    /// sync stops (malformed) and the next one starts where this one did.
    @Test func aHasMoreNeitherTrueNorFalseIsMalformedAndKeepsTheResumePoint() throws {
        let fixture = try SyncFixture()
        fixture.mock.handle { _ in
            guard case .object(var page) = SyncScenario.notificationPage(0) else { return .json(SyncScenario.notificationPage(0)) }
            page["hasMore"] = "true"
            return .json(.object(page))
        }
        let engine = try fixture.engine()
        let now = Engine.now()
        let outcome = try fixture.sync(engine, clock: { now }).notifications(start: nil, onlyFailures: false) { _ in }
        guard case .api(let error)? = outcome.failure else {
            Issue.record("expected an API failure, got \(String(describing: outcome.failure))")
            return
        }
        #expect(error.code == .malformedResponse)
        #expect(error.message.contains(#"hasMore "true""#), "\(error.message)")
        #expect(outcome.totals == SyncTotals(appended: 20, duplicate: 0, rejected: 0), "the page is kept")

        fixture.serveNotifications()
        let later = now + 3_600_000
        _ = try fixture.sync(engine, clock: { later }).notifications(start: nil, onlyFailures: false) { _ in }
        #expect(
            fixture.mock.requests.dropFirst().first?.json?["startDate"] == .int(later - AppStoreSync.historyWindow + AppStoreSync.historyWindowMargin),
            "not past the pages never fetched")

        let otid = SyncScenario.customerOriginal
        fixture.serveCustomer { request in
            guard request.path == "/inApps/v2/history/\(otid)" else { return nil }
            return .json(["revision": "r1", "hasMore": 1, "signedTransactions": []])
        }
        let customer = try fixture.sync(engine).customer(otid) { _ in }
        guard case .api(let customerError)? = customer.failure else {
            Issue.record("expected an API failure, got \(String(describing: customer.failure))")
            return
        }
        #expect(customerError.code == .malformedResponse)
    }

    @Test func maxPagesIsValidated() throws {
        let fixture = try SyncFixture()
        #expect(fixture.configuration.appStoreServerAPI?.maxPages == 10_000, "the default")
        for bad: JSONValue in [0, -1, .double(1.5), "10", true, .null, .int(1 << 40)] {
            try Self.setAPIField("maxPages", bad, in: fixture)
            do {
                _ = try EngineConfiguration.load(path: fixture.configPath)
                Issue.record("maxPages \(JSONWriter.string(bad)) was accepted")
            } catch {
                #expect(error.field == "appStoreServerAPI.maxPages")
                #expect(error.message.contains("positive integer"), "\(error.message)")
            }
        }
        try Self.setAPIField("maxPages", 1, in: fixture)
        #expect(try EngineConfiguration.load(path: fixture.configPath).appStoreServerAPI?.maxPages == 1)

        try Self.setAPIField("maxPages", 0, in: fixture)
        let run = try Tool.entitlements(["sync", "--config", fixture.configPath, "--notifications"], in: fixture.folder)
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("appStoreServerAPI.maxPages"), "\(run.stderr)")
    }

    @Test func theCommandReportsAPaginationLoopAndExitsOne() throws {
        let fixture = try SyncFixture()
        fixture.mock.handle(Self.bounded { _ in .json(SyncScenario.notificationPage(0)) })
        let run = try Tool.entitlements(["sync", "--config", fixture.configPath, "--db", "db.sqlite", "--notifications"], in: fixture.folder)
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("PAGINATION_LOOP"), "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").compactMap { try? JSONParser().parse(String($0)) }
        #expect(lines.count == 4, "two pages, the error, the totals: \(run.stdout)")
        #expect(lines.dropLast().last?["error"]?["code"] == "PAGINATION_LOOP")
        #expect(lines.last == ["appended": 20, "duplicate": 20, "rejected": 0])
        #expect(fixture.mock.requests.count == 2)
    }

    // MARK: Resume points

    /// A notification that is rejected keeps the resume point where it was: the next sync fetches it again.
    @Test func aRejectedNotificationKeepsTheResumePoint() throws {
        let fixture = try SyncFixture()
        let forged = "eyJhbGciOiJFUzI1NiJ9.eyJub3RpZmljYXRpb25UeXBlIjoiUkVGVU5EIn0.AAAA"
        fixture.mock.handle { request in
            guard request.query["paginationToken"] == nil else { return .json(Self.notificationPage(SyncScenario.notificationPages[1], token: nil)) }
            return .json(Self.notificationPage(SyncScenario.notificationPages[0] + [forged], token: "token-1"))
        }
        let engine = try fixture.engine()
        let now = Engine.now()
        let first = try fixture.sync(engine, clock: { now }).notifications(start: nil, onlyFailures: false) { _ in }
        #expect(first.failure == nil)
        #expect(first.totals == SyncTotals(appended: 40, duplicate: 0, rejected: 1))

        let later = now + 3_600_000
        let second = try fixture.sync(engine, clock: { later }).notifications(start: nil, onlyFailures: false) { _ in }
        #expect(second.totals == SyncTotals(appended: 0, duplicate: 40, rejected: 1))
        let resumed = try #require(fixture.mock.requests.dropFirst(2).first?.json)
        #expect(resumed["startDate"] == .int(later - AppStoreSync.historyWindow + AppStoreSync.historyWindowMargin), "not past the rejected item")

        // Once everything is ingested, the end is kept.
        fixture.serveNotifications()
        let third = try fixture.sync(engine, clock: { later }).notifications(start: nil, onlyFailures: false) { _ in }
        #expect(third.failure == nil && third.totals.rejected == 0)
        let last = later + 3_600_000
        _ = try fixture.sync(engine, clock: { last }).notifications(start: nil, onlyFailures: false) { _ in }
        #expect(fixture.mock.requests.last?.json?["startDate"] == .int(later))
    }

    /// A history page with a rejected transaction: the revision stays at the page before it,
    /// though later pages are still ingested.
    @Test func aRejectedTransactionKeepsTheRevisionBeforeIt() throws {
        let fixture = try SyncFixture()
        let otid = SyncScenario.customerOriginal
        let forged = "eyJhbGciOiJFUzI1NiJ9.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.AAAA"
        fixture.serveCustomer { request in
            guard request.path == "/inApps/v2/history/\(otid)" else { return nil }
            switch request.query["revision"] {
            case nil: return .json(SyncScenario.page(Array(SyncScenario.signedHistory[0..<10]), revision: "r1", hasMore: true))
            case "r1"?: return .json(SyncScenario.page(Array(SyncScenario.signedHistory[10..<20]) + [forged], revision: "r2", hasMore: true))
            case "r2"?: return .json(SyncScenario.page(Array(SyncScenario.signedHistory[20..<25]), revision: "r3", hasMore: false))
            default: return .json(SyncScenario.page([], revision: request.query["revision"]!, hasMore: false))
            }
        }
        let engine = try fixture.engine()
        var pages: [SyncPage] = []
        let outcome = try fixture.sync(engine).customer(otid) { pages.append($0) }
        #expect(outcome.failure == nil)
        #expect(outcome.totals.rejected == 1)
        #expect(pages.prefix(3).map(\.items) == [10, 11, 5], "the pages after the rejected item are ingested too")

        var again: [SyncPage] = []
        _ = try fixture.sync(engine).customer(otid) { again.append($0) }
        #expect(again.first?.request == "GET /inApps/v2/history/\(otid)?revision=r1", "resumes before the rejected item")
    }
}
