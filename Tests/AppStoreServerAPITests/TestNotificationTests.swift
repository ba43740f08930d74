import EntitlementCore
import Entitlements
import EventStore
import Foundation
import Synchronization
import Testing
import TestPKI
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `test-notification` end to end: the mock App Store, asked for a test notification, POSTs a
/// signed TEST notification to `entitlements serve`'s webhook; the command waits until it is in
/// the log and reports Apple's send attempts. And `serve` finishing transactions.
@Suite struct TestNotificationTests {
    typealias S = SupportScenario

    /// `entitlements serve` on 127.0.0.1 at a port the system chose.
    final class Served: @unchecked Sendable {
        let running: TestSupport.Tool.Running
        let port: Int

        init(_ fixture: SyncFixture, database: String) throws {
            running = try TestSupport.Tool.start(
                ["serve", "--db", database, "--config", fixture.configPath, "--listen", "127.0.0.1:0"], in: fixture.folder, label: "serve")
            guard running.waitForOutput(lines: 1, timeout: 60),
                let first = TestSupport.Tool.read(running.stdoutURL.path).split(separator: 0x0A).first,
                case .string(let address)? = (try? JSONParser().parse(Array(first)))?["listening"],
                let port = Int(address.split(separator: ":").last ?? "")
            else {
                running.kill9()
                throw MockError("serve did not start: \(String(decoding: TestSupport.Tool.read(running.stderrURL.path), as: UTF8.self))")
            }
            self.port = port
        }

        /// POSTs `body` to `/notifications`; the status, or `nil` without an answer.
        func post(_ body: String) -> Int? {
            guard let client = try? RawClient(port: port) else { return nil }
            let request = "POST /notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
            guard client.send(request) else { return nil }
            return client.response(timeout: 30)?.status
        }

        /// GETs `path`; the status and the body's JSON, or `nil` without an answer.
        func get(_ path: String) -> (status: Int, json: JSONValue?)? {
            guard let client = try? RawClient(port: port) else { return nil }
            guard client.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
                let response = client.response(timeout: 30)
            else { return nil }
            return (response.status, try? JSONParser().parse(response.body))
        }

        /// SIGTERM, then the outcome.
        func stop() -> TestSupport.Tool.Outcome {
            kill(running.pid, SIGTERM)
            return running.wait(timeout: 60)
        }
    }

    /// What the mock App Store sent for the test notification.
    struct Sent: Sendable {
        var signedPayload: String?
        var attempts: [JSONValue] = []
        /// Status answers given since the notification was delivered.
        var asksSinceDelivery = 0
    }

    final class SentLog: Sendable {
        let state = Mutex(Sent())
        func withLock<T>(_ body: (inout Sent) -> T) -> T { state.withLock { body(&$0) } }
    }

    /// A mock that, asked for a test notification, delivers it with `deliver` (on a thread of
    /// its own, after answering, as Apple does) and reports what it sent. With `attemptListedLate`,
    /// the status answers list the attempt only from the second one after the delivery (Apple
    /// records an attempt some time after the webhook answered).
    static func serveTestNotifications(
        _ fixture: SyncFixture, uuid: String, attemptListedLate: Bool = false, deliver: @escaping @Sendable (String) -> String
    ) -> SentLog {
        let sent = SentLog()
        let token = "ce3af791-365e-4c60-841b-1674b43c1609"
        fixture.mock.handle { request in
            switch (request.method, request.path) {
            case ("POST", "/inApps/v1/notifications/test"):
                let jws = S.pki.sign(TestPayloads.notification(type: "TEST", uuid: uuid, signedDate: Engine.now()))
                let thread = Thread {
                    let result = deliver(TestPayloads.body(signedPayload: jws))
                    sent.withLock {
                        $0.signedPayload = jws
                        $0.attempts.append(["attemptDate": .int(Engine.now()), "sendAttemptResult": .string(result)])
                    }
                }
                thread.start()
                return .json(["testNotificationToken": .string(token)])
            case ("GET", "/inApps/v1/notifications/test/\(token)"):
                let state = sent.withLock { sent in
                    if sent.signedPayload != nil { sent.asksSinceDelivery += 1 }
                    return sent
                }
                guard let payload = state.signedPayload else { return .error(404, code: 4_040_007, message: "Test notification not found.") }
                let listed = attemptListedLate && state.asksSinceDelivery < 2 ? [] : state.attempts
                return .json(["signedPayload": .string(payload), "sendAttempts": .array(listed)])
            case ("POST", let path) where path.hasSuffix("/finish"):
                return MockResponse(status: 200)
            default:
                return MockResponse(status: 404)
            }
        }
        return sent
    }

    @Test func theTestNotificationReachesTheLogThroughServeAndItsAttemptsAreReported() throws {
        let fixture = try SyncFixture()
        try S.enableFinishes(fixture)
        let served = try Served(fixture, database: "served.sqlite")
        var stopped = false
        defer { if !stopped { _ = served.stop() } }
        let uuid = "7e57e57e-0000-4000-8000-000000000001"
        let sent = Self.serveTestNotifications(fixture, uuid: uuid) { body in
            served.post(body) == 200 ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
        }
        let run = try Tool.entitlements(["test-notification", "--config", fixture.configPath, "--db", "served.sqlite"], in: fixture.folder)
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        let line = try #require(S.lines(run).first)
        #expect(line["arrived"] == true)
        #expect(line["notificationUUID"] == .string(uuid))
        #expect(line["testNotificationToken"] == "ce3af791-365e-4c60-841b-1674b43c1609")
        #expect(line["sendAttempts"] == .array(sent.withLock { $0.attempts }))
        #expect(line["sendAttempts"]?.element(0)?["sendAttemptResult"] == "SUCCESS")
        let requests = fixture.mock.requests
        #expect(requests.first?.method == "POST" && requests.first?.path == "/inApps/v1/notifications/test")
        #expect(requests.first?.body.isEmpty == true)
        #expect(requests.allSatisfy { $0.tokenProblem == nil })

        // Logged once, by the webhook.
        let store = try EventStore(path: fixture.folder.appendingPathComponent("served.sqlite").path, hash: { $0 }, mode: .readOnly)
        #expect(try store.notificationReceivedAt(uuid: uuid) != nil)
        #expect(try store.notifications(ofType: "TEST", after: 0).count == 1)

        // serve finishes what it appends that grants something, with no request waiting on Apple.
        let monthly = S.transaction("3000000000099201", productId: "com.example.pro.monthly", type: "Auto-Renewable Subscription")
        let status = served.post(
            TestPayloads.body(
                signedPayload: S.pki.sign(
                    TestPayloads.notification(
                        type: "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: "7e57e57e-0000-4000-8000-000000000002", signedDate: S.now,
                        signedTransactionInfo: S.signed(monthly)))))
        #expect(status == 200)
        #expect(S.eventually { fixture.mock.requests.contains { $0.path == "/inApps/v1/transactions/3000000000099201/finish" } })
        #expect(S.eventually { (try? S.finish("3000000000099201", in: fixture, database: "served.sqlite"))??.state == "finished" })
        let outcome = served.stop()
        stopped = true
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(fixture.mock.requests.filter { $0.path.hasSuffix("/finish") }.count == 1)
    }

    @Test func theAttemptThatDeliveredItIsReportedWhenAppleListsItLate() throws {
        let fixture = try SyncFixture()
        let served = try Served(fixture, database: "late.sqlite")
        defer { _ = served.stop() }
        let uuid = "7e57e57e-0000-4000-8000-000000000004"
        let sent = Self.serveTestNotifications(fixture, uuid: uuid, attemptListedLate: true) { body in
            served.post(body) == 200 ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
        }
        let run = try Tool.entitlements(["test-notification", "--config", fixture.configPath, "--db", "late.sqlite"], in: fixture.folder)
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        let line = try #require(S.lines(run).first)
        #expect(line["arrived"] == true)
        #expect(line["sendAttempts"]?.element(0)?["sendAttemptResult"] == "SUCCESS")
        #expect(sent.withLock { $0.asksSinceDelivery } >= 2)
    }

    @Test func aNotificationThatNeverArrivesExitsOneWithApplesAttempts() throws {
        let fixture = try SyncFixture()
        let create = try Tool.entitlements(["ingest", "--config", fixture.configPath, "--db", "served.sqlite", "-"], in: fixture.folder)
        #expect(create.status == 0, "\(create.stderr)")
        // Apple cannot reach the webhook (a wrong URL in App Store Connect).
        _ = Self.serveTestNotifications(fixture, uuid: "7e57e57e-0000-4000-8000-000000000003") { _ in "NO_RESPONSE" }
        let run = try Tool.entitlements(["test-notification", "--config", fixture.configPath, "--db", "served.sqlite", "--wait", "2"], in: fixture.folder)
        #expect(run.status == 1)
        let line = try #require(S.lines(run).first)
        #expect(line["arrived"] == false)
        #expect(line["sendAttempts"]?.element(0)?["sendAttemptResult"] == "NO_RESPONSE")
        #expect(run.stderr.contains("TEST_NOTIFICATION_NOT_RECEIVED"), "\(run.stderr)")
        #expect(run.stderr.contains("NO_RESPONSE"))
        // The status answer's copy is not ingested.
        let store = try EventStore(path: fixture.folder.appendingPathComponent("served.sqlite").path, hash: { $0 }, mode: .readOnly)
        #expect(try store.notificationReceivedAt(uuid: "7e57e57e-0000-4000-8000-000000000003") == nil)
    }

    @Test func serveFindsACustomerByTheOrderIdFromTheReceiptEmail() throws {
        let fixture = try SyncFixture()
        let order = [S.signed(S.transaction("3000000000088402", daysAgo: 2))]
        fixture.mock.handle { request in
            guard request.method == "GET" else { return MockResponse(status: 405) }
            switch request.path {
            case "/inApps/v1/lookup/MQ5Y1Z2X3W": return .json(["status": 0, "signedTransactions": .array(order.map(JSONValue.string))])
            case "/inApps/v1/lookup/UNKNOWN123": return .json(["status": 1, "signedTransactions": []])
            default: return MockResponse(status: 404)
            }
        }
        let served = try Served(fixture, database: "orders.sqlite")
        defer { _ = served.stop() }
        let found = try #require(served.get("/customers?orderId=MQ5Y1Z2X3W"))
        #expect(found.status == 200, "\(String(describing: found.json))")
        #expect(found.json?["appTransactionId"] == .string(S.appTransactionId))
        #expect(found.json?["entitlements"]?["pro"]?["active"] == true)
        // What Apple returned is in the log: the transaction answers without Apple.
        let again = try #require(served.get("/customers?transactionId=3000000000088402"))
        #expect(again.status == 200)
        #expect(again.json?["appTransactionId"] == .string(S.appTransactionId))
        let unknown = try #require(served.get("/customers?orderId=UNKNOWN123"))
        #expect(unknown.status == 404)
        #expect(unknown.json?["error"]?["code"] == "NOT_FOUND")
        #expect(fixture.mock.requests.map(\.path) == ["/inApps/v1/lookup/MQ5Y1Z2X3W", "/inApps/v1/lookup/UNKNOWN123"])
        #expect(fixture.mock.requests.allSatisfy { $0.tokenProblem == nil })
    }
}
