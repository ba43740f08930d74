import EntitlementCore
@testable import Entitlements
import EventStore
import Foundation
import TestSupport
import Testing

/// Webhooks (specification section 12) without a network: signing, the configuration's
/// errors, the retry schedule's arithmetic, and the position's transitions.
@Suite struct WebhookUnitTests {
    // MARK: Signing

    /// The Standard Webhooks specification's published test vector.
    @Test func signatureMatchesTheStandardWebhooksTestVector() throws {
        let signer = try #require(WebhookSigner(secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        let signature = signer.signature(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: Array(#"{"test": 2432232314}"#.utf8))
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        let headers = signer.headers(id: "changes:7", timestamp: 1_614_265_330, body: [])
        #expect(headers.map(\.name) == ["webhook-id", "webhook-timestamp", "webhook-signature"])
        #expect(headers[0].value == "changes:7" && headers[1].value == "1614265330")
    }

    /// RFC 4231 test case 2 ("Jefe"): the HMAC itself.
    @Test func hmacSHA256MatchesRFC4231() {
        let mac = WebhookSigner.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(mac.map { String(format: "%02x", $0) }.joined() == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func secretsThatAreNotWhsecBase64AreRefused() {
        #expect(WebhookSigner(secret: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") == nil)  // no prefix
        #expect(WebhookSigner(secret: "whsec_not base64!") == nil)
        #expect(WebhookSigner(secret: "whsec_c2hvcnQ=") == nil)  // 5 bytes: too short
        #expect(WebhookSigner(secret: "whsec_" + Data(repeating: 7, count: 32).base64EncodedString()) != nil)
    }

    @Test func aChangeLineCarriesItsFeedAndItsCursorAsId() throws {
        let record = ChangeRecord(
            cursor: 41, appTransactionId: "704", entitlement: "pro", active: false, expiresDate: nil, effectiveAt: 1, recordedAt: 2, cause: .time)
        let line = WebhookLine(change: record)
        #expect(line.id == "changes:41" && line.cursor == 41 && line.feed == .changes)
        let json = try JSONParser().parse(line.body)
        guard case .object(let object) = json else { Issue.record("not an object"); return }
        #expect(object.keys.first == "feed" && object["feed"] == .string("changes"))
        #expect(object["cursor"] == .int(41) && object["cause"] == .string("time"))
    }

    // MARK: Configuration

    static let secret = "whsec_" + Data(repeating: 42, count: 32).base64EncodedString()

    static func configuration(webhooks: JSONValue) throws(ConfigurationError) -> EngineConfiguration {
        let json: JSONValue = [
            "bundleId": "com.example.app", "environment": "Sandbox", "rules": ["version": "1", "products": [:]],
            "webhooks": webhooks,
        ]
        return try EngineConfiguration(json: json, baseDirectory: URL(fileURLWithPath: "/tmp"))
    }

    static func field(_ webhooks: JSONValue) -> String? {
        do {
            _ = try configuration(webhooks: webhooks)
            return "(accepted)"
        } catch {
            return error.field
        }
    }

    @Test func aFullEndpointIsRead() throws {
        let configuration = try Self.configuration(webhooks: [
            [
                "url": "https://crm.example.com/hooks/entitlements", "secret": .string(Self.secret), "feeds": ["changes"],
                "types": ["RENEWAL", "EXPIRATION"], "environments": ["Production"], "retrySchedule": [5000, 30000],
            ],
            ["url": "http://127.0.0.1:9000/hook", "secret": .string(Self.secret)],
        ])
        let first = configuration.webhooks[0]
        #expect(first.feeds == [.changes] && first.types == ["RENEWAL", "EXPIRATION"] && first.environments == [.production])
        #expect(first.retrySchedule.delays == [5000, 30000])
        let second = configuration.webhooks[1]
        #expect(second.feeds == [.lifecycle, .changes] && second.types == nil && second.environments == nil)
        #expect(second.retrySchedule == .standard)
    }

    /// `types` and `environments` filter lifecycle lines; a line of no App Store
    /// environment (an app user's grant) passes `environments`, changes lines pass both.
    @Test func filtersSelectLifecycleLines() throws {
        let configuration = try Self.configuration(webhooks: [
            [
                "url": "https://crm.example.com/hook", "secret": .string(Self.secret),
                "types": ["RENEWAL", "GRANT_STARTED"], "environments": ["Production"],
            ],
        ])
        let endpoint = configuration.webhooks[0]
        func line(_ type: String, _ environment: AppStoreEnvironment?, feed: WebhookFeed = .lifecycle) -> WebhookLine {
            WebhookLine(feed: feed, cursor: 1, id: "\(type):1", body: [], type: feed == .lifecycle ? type : nil, environment: environment)
        }
        #expect(endpoint.accepts(line("RENEWAL", .production)))
        #expect(!endpoint.accepts(line("RENEWAL", .sandbox)))
        #expect(!endpoint.accepts(line("EXPIRATION", .production)))
        #expect(endpoint.accepts(line("GRANT_STARTED", nil)))
        #expect(endpoint.accepts(line("changes", nil, feed: .changes)))
    }

    /// Every error names the field at fault.
    @Test func configurationErrorsNameTheField() {
        let ok: JSONValue = .string(Self.secret)
        #expect(Self.field("not a list") == "webhooks")
        #expect(Self.field(["x"]) == "webhooks[0]")
        #expect(Self.field([["secret": ok]]) == "webhooks[0].url")
        #expect(Self.field([["url": "ftp://example.com/x", "secret": ok]]) == "webhooks[0].url")
        #expect(Self.field([["url": "http://crm.example.com/hook", "secret": ok]]) == "webhooks[0].url")  // plain http beyond loopback
        #expect(Self.field([["url": "https://a.example.com/hook"]]) == "webhooks[0].secret")
        #expect(Self.field([["url": "https://a.example.com/hook", "secret": "s3cret"]]) == "webhooks[0].secret")
        #expect(Self.field([["url": "https://a.example.com/hook", "secret": "whsec_%%%"]]) == "webhooks[0].secret")
        #expect(Self.field([["url": "https://a.example.com/hook", "secret": ok, "feeds": []]]) == "webhooks[0].feeds")
        #expect(Self.field([["url": "https://a.example.com/hook", "secret": ok, "feeds": ["changes", "orders"]]]) == "webhooks[0].feeds[1]")
        #expect(Self.field([["url": "https://a.example.com/hook", "secret": ok, "types": ["RENEWAL", "RENEWED"]]]) == "webhooks[0].types[1]")
        #expect(Self.field([["url": "https://a.example.com/hook", "secret": ok, "environments": ["Staging"]]]) == "webhooks[0].environments[0]")
        #expect(Self.field([["url": "https://a.example.com/hook", "secret": ok, "retrySchedule": [1000, 0]]]) == "webhooks[0].retrySchedule[1]")
        #expect(Self.field([["url": "https://a.example.com/hook", "secret": ok, "retrySchedule": [-5]]]) == "webhooks[0].retrySchedule[0]")
        #expect(Self.field([["url": "https://a.example.com/hook", "secret": ok, "retrySchedule": []]]) == "webhooks[0].retrySchedule")
        #expect(Self.field([["url": "https://a.example.com/hook", "secret": ok, "retry": [5]]]) == "webhooks[0].retry")
        #expect(
            Self.field([
                ["url": "https://a.example.com/hook", "secret": ok], ["url": "https://b.example.com/hook", "secret": ok],
                ["url": "https://a.example.com/hook", "secret": ok],
            ]) == "webhooks[2].url")
        #expect(Self.field([["url": "https://a.example.com/hook", "secret": ok]]) == "(accepted)")
    }

    /// The library's async entry points, on an engine with an endpoint and nothing to send.
    @Test func theAsyncEntryPointsAnswer() async throws {
        var configuration = E2E.configuration()
        configuration.webhooks = [WebhookEndpoint(url: URL(string: "http://127.0.0.1:9/hook")!, signer: WebhookSigner(secret: Self.secret)!)]
        let engine = try Engine(configuration: configuration, databasePath: E2E.folder().appendingPathComponent("a.sqlite").path)
        let report = try await engine.deliverWebhooks()
        #expect(report == WebhookDeliveryReport())
        let status = try await engine.webhookStatus()
        #expect(status.map(\.feed) == [.lifecycle, .changes])
        #expect(status.allSatisfy { $0.deliveredCursor == 0 && $0.failedLines == 0 })
        #expect(status.allSatisfy { $0.lastCursor == 0 && $0.lag == 0 })
        #expect(try await engine.redeliverWebhooks(url: "http://127.0.0.1:9/hook", feed: .changes, since: 0) == .changes)
        // Without a feed: the lifecycle feed of an endpoint sent both.
        #expect(try await engine.redeliverWebhooks(url: "http://127.0.0.1:9/hook", since: 0) == .lifecycle)
        await #expect(throws: EngineError.self) { try await engine.redeliverWebhooks(url: "http://127.0.0.1:9/other", feed: .changes, since: 0) }
    }

    // MARK: The retry schedule

    @Test func theStandardScheduleRetriesThenHourlyUntilTwentyFourHours() {
        let schedule = WebhookRetrySchedule.standard
        let first: Int64 = 1_000_000
        var now = first
        var delays: [Int64] = []
        var attempts = 0
        while true {
            attempts += 1
            guard let next = schedule.nextAttempt(afterFailure: attempts, at: now, firstAttempt: first) else { break }
            delays.append(next - now)
            now = next
        }
        #expect(Array(delays.prefix(7)) == [5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000, 3_600_000])
        #expect(delays.dropFirst(5).allSatisfy { $0 == 3_600_000 })
        // The last attempt is within 24 h of the first; one more hour would pass it.
        #expect(now - first <= WebhookRetrySchedule.horizon)
        #expect(now + 3_600_000 - first > WebhookRetrySchedule.horizon)
        // 6 scheduled delays reach 1 h 42 min 35 s; then 22 hourly retries fit before 24 h.
        #expect(delays.count == 6 + 22)
        #expect(attempts == delays.count + 1)
    }

    @Test func aConfiguredScheduleRepeatsItsLastDelay() {
        let schedule = WebhookRetrySchedule(delays: [100, 250])
        #expect(schedule.nextAttempt(afterFailure: 1, at: 0, firstAttempt: 0) == 100)
        #expect(schedule.nextAttempt(afterFailure: 2, at: 100, firstAttempt: 0) == 350)
        #expect(schedule.nextAttempt(afterFailure: 9, at: 1_000, firstAttempt: 0) == 1_250)
        // Measured from the first attempt, not the last.
        #expect(schedule.nextAttempt(afterFailure: 9, at: 86_399_800, firstAttempt: 0) == nil)
        #expect(schedule.nextAttempt(afterFailure: 9, at: 86_399_750, firstAttempt: 0) == 86_400_000)
    }

    @Test func aPositionRetriesThenMarksTheLineFailedAndGoesOn() {
        let line = WebhookLine(feed: .changes, cursor: 5, id: "changes:5", body: [])
        var position = WebhookPosition(endpoint: "https://a.example.com", feed: "changes")
        position.deliveredCursor = 4
        let schedule = WebhookRetrySchedule(delays: [1_000])
        #expect(position.recordFailure(of: line, reason: "HTTP 500", startedAt: 10, at: 20, schedule: schedule) == nil)
        #expect(position.failingCursor == 5 && position.failingSince == 10 && position.attempts == 1 && position.nextAttemptAt == 1_020)
        #expect(position.deliveredCursor == 4)
        #expect(position.recordFailure(of: line, reason: "TIMEOUT", startedAt: 1_020, at: 1_030, schedule: schedule) == nil)
        #expect(position.failingSince == 10 && position.attempts == 2 && position.lastError == "TIMEOUT")
        let failed = position.recordFailure(
            of: line, reason: "HTTP 503", startedAt: 86_400_000, at: 86_400_005, schedule: schedule)
        #expect(failed == WebhookFailedLine(cursor: 5, webhookId: "changes:5", firstAttemptAt: 10, attempts: 3, lastError: "HTTP 503"))
        #expect(position.deliveredCursor == 5 && position.failingCursor == nil && position.nextAttemptAt == nil)
        // A delivery after failures clears them.
        var other = WebhookPosition(endpoint: "x", feed: "changes")
        _ = other.recordFailure(of: line, reason: "HTTP 500", startedAt: 0, at: 1, schedule: schedule)
        other.recordDelivery(of: line)
        #expect(other.deliveredCursor == 5 && other.failingCursor == nil && other.attempts == 0 && other.lastError == nil)
    }
}
