import EntitlementCore
internal import EventStore
import Foundation

extension AppStoreSync {
    /// Request a Test Notification, then waits until the TEST notification has reached this
    /// engine's log through its own webhook (`serve`'s `POST /notifications`, in this process
    /// or another on the same database), asking Get Test Notification Status meanwhile for
    /// Apple's send attempts. The status answer's copy of the notification is never ingested:
    /// only the webhook path counts.
    /// - Parameters:
    ///   - timeout: how long to wait for the notification, in seconds (60 by default).
    ///   - pollInterval: how often the log is read, in seconds; Apple is asked at most once a second.
    public func testNotification(timeout: Double = 60, pollInterval: Double = 0.2) -> TestNotificationReport {
        let started = clock()
        let baseline: Int64
        do { baseline = try engine.lastLoggedSeq() } catch { return TestNotificationReport(failure: .engine(error)) }
        let request = APIRequest.requestTestNotification()
        let token: String
        do {
            let response = try client.send(request)
            guard case .string(let text)? = response.json?["testNotificationToken"], !text.isEmpty else {
                return TestNotificationReport(failure: .malformed(request, response, "has no testNotificationToken"))
            }
            token = text
        } catch {
            return TestNotificationReport(failure: .api(error))
        }
        var report = TestNotificationReport(testNotificationToken: token)
        let deadline = Date(timeIntervalSinceNow: timeout)
        var lastAsked: Date? = nil
        while true {
            if lastAsked.map({ Date().timeIntervalSince($0) >= 1 }) ?? true {
                lastAsked = Date()
                askStatus(token, into: &report)
            }
            do {
                if let uuid = report.notificationUUID {
                    report.receivedAt = try engine.loggedNotificationReceivedAt(uuid: uuid)
                } else if let first = try engine.loggedNotifications(ofType: "TEST", after: baseline).first {
                    // Apple's status has not named it yet: the TEST notification logged since the request is it.
                    report.notificationUUID = first.uuid
                    report.receivedAt = first.receivedAt
                }
            } catch {
                report.failure = .engine(error)
                return report
            }
            if report.arrived {
                awaitDeliveringAttempt(token, into: &report)
                break
            }
            if Date() >= deadline { break }
            Thread.sleep(forTimeInterval: min(pollInterval, max(0.01, deadline.timeIntervalSinceNow)))
        }
        report.waited = clock() - started
        return report
    }

    /// The attempt that delivered the notification, as Apple lists it. Apple records an
    /// attempt once the webhook has answered, which is after the log took the notification:
    /// Apple is asked again, once a second, until it lists one more attempt than before the
    /// arrival (or a successful one), for `grace` seconds at most.
    private func awaitDeliveringAttempt(_ token: String, into report: inout TestNotificationReport, grace: Double = 10) {
        let before = report.sendAttempts.count
        let giveUp = Date(timeIntervalSinceNow: grace)
        while true {
            askStatus(token, into: &report)
            let succeeded = report.sendAttempts.contains { $0["sendAttemptResult"] == .string("SUCCESS") }
            if report.sendAttempts.count > before || succeeded || Date() >= giveUp { return }
            Thread.sleep(forTimeInterval: min(1, max(0.01, giveUp.timeIntervalSinceNow)))
        }
    }

    /// Get Test Notification Status: the send attempts, and the notification's UUID (its
    /// payload decoded, not ingested). Not found yet (`404`) and other failures leave the
    /// report as it was: the log decides.
    private func askStatus(_ token: String, into report: inout TestNotificationReport) {
        let request = APIRequest.testNotificationStatus(token: token)
        guard let json = (try? client.send(request))?.json else { return }
        if case .array(let attempts)? = json["sendAttempts"] { report.sendAttempts = attempts }
        if case .string(let jws)? = json["signedPayload"], case .string(let uuid)? = Self.decodedPayload(jws)?["notificationUUID"],
            report.notificationUUID == nil
        {
            report.notificationUUID = uuid
        }
    }

    /// ``testNotification(timeout:pollInterval:)`` on a thread of its own, suspending the caller.
    public func testNotification(timeout: Double = 60) async -> TestNotificationReport {
        await onThread { self.testNotification(timeout: timeout) } failed: { TestNotificationReport(failure: .engine($0)) }
    }
}

/// What `test-notification` found.
public struct TestNotificationReport: Sendable {
    /// Apple's token for the request, `nil` when the request failed.
    public var testNotificationToken: String?
    /// The TEST notification's `notificationUUID`, once known.
    public var notificationUUID: String?
    /// When the engine logged it (`received_at`), `nil` while it has not arrived.
    public var receivedAt: Int64?
    /// Apple's send attempts as Get Test Notification Status lists them: `{"attemptDate", "sendAttemptResult"}`.
    public var sendAttempts: [JSONValue] = []
    /// How long the command waited, in milliseconds.
    public var waited: Int64 = 0
    /// Why it could not even wait: the request failed, or the database could not be read.
    public var failure: SyncFailure?

    public init(testNotificationToken: String? = nil, failure: SyncFailure? = nil) {
        self.testNotificationToken = testNotificationToken
        self.failure = failure
    }

    /// Whether the TEST notification reached the log.
    public var arrived: Bool { receivedAt != nil }

    /// `{"testNotificationToken", "notificationUUID", "arrived", "receivedAt", "waitedMilliseconds", "sendAttempts"}`.
    public func json() -> JSONValue {
        .object(
            JSONObject([
                ("testNotificationToken", testNotificationToken.map(JSONValue.string) ?? .null),
                ("notificationUUID", notificationUUID.map(JSONValue.string) ?? .null), ("arrived", .bool(arrived)),
                ("receivedAt", receivedAt.map(JSONValue.int) ?? .null), ("waitedMilliseconds", .int(waited)),
                ("sendAttempts", .array(sendAttempts)),
            ]))
    }
}

extension Engine {
    /// The greatest seq in the log.
    func lastLoggedSeq() throws(EngineError) -> Int64 {
        do { return try store.withLock { store throws(StoreError) in try store.lastSeq() } } catch { throw EngineError(error) }
    }

    /// When the notification `uuid` was logged, or `nil`.
    func loggedNotificationReceivedAt(uuid: String) throws(EngineError) -> Int64? {
        do { return try store.withLock { store throws(StoreError) in try store.notificationReceivedAt(uuid: uuid) } } catch { throw EngineError(error) }
    }

    /// Notifications of `type` logged after seq `after`.
    func loggedNotifications(ofType type: String, after: Int64) throws(EngineError) -> [(uuid: String, receivedAt: Int64)] {
        do { return try store.withLock { store throws(StoreError) in try store.notifications(ofType: type, after: after) } } catch { throw EngineError(error) }
    }
}
