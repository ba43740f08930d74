import EntitlementCore
@testable import Entitlements
import EventStore
import Foundation
import Synchronization
import TestPKI
import TestSupport
import Testing

/// Delivery of the changes feed to a real receiver on loopback that verifies every
/// signature with the `standardwebhooks` package (specification section 12).
@Suite(.serialized) struct WebhookDeliveryTests {
    static let secret = WebhookTestData.secret

    /// An engine holding the changes of a randomized history.
    static func engineWithChanges(seed: UInt64) throws -> (Engine, [ChangeRecord]) {
        let engine = try E2E.engine()
        try ingest(seed: seed, into: engine)
        return (engine, try engine.changes())
    }

    static func ingest(seed: UInt64, into engine: Engine) throws {
        try WebhookTestData.ingest(seed: seed, customers: 8, into: engine)
    }

    static func endpoint(_ receiver: WebhookReceiver, schedule: [Int64] = [50, 100]) -> WebhookEndpoint {
        WebhookEndpoint(
            url: URL(string: receiver.url)!, signer: WebhookSigner(secret: secret)!, feeds: [.changes],
            retrySchedule: WebhookRetrySchedule(delays: schedule))
    }

    /// Every line arrives, in order, signed, through 500s, a receiver that hangs past the
    /// timeout, a redirect, a 2xx with a huge body, and a receiver stopped and started again; lines recorded while delivering
    /// follow; the position ends at the last cursor.
    @Test(.enabled(if: WebhookReceiver.isAvailable, "needs python3 with the standardwebhooks package"))
    func everyLineArrivesInOrderThroughFailuresAHangAndARestart() throws {
        let (engine, changes) = try Self.engineWithChanges(seed: 41)
        try #require(changes.count >= 8, "the history gives \(changes.count) changes")
        let cursors = changes.map(\.cursor)
        let receiver = try WebhookReceiver(secret: Self.secret)
        try receiver.setControl([
            "fail": ["changes:\(cursors[1])": 2, "changes:\(cursors[5])": 1],
            "hang": ["changes:\(cursors[3])": 1], "hangSeconds": 5,
            "redirect": ["changes:\(cursors[6])": 1], "big": ["changes:\(cursors[7])": 1],
        ])
        var options = WebhookDeliverer.Options()
        options.pollInterval = 20
        // Short, so that the hang costs little; long enough for an answer on a loaded machine.
        options.requestTimeout = 3
        let deliverer = try WebhookDeliverer(engine: engine, endpoints: [Self.endpoint(receiver)], options: options)
        deliverer.start()
        defer { deliverer.stop() }

        // Half of the lines (at least through the big answer), then the receiver goes away
        // and comes back on its port. The wait is for the deliverer's saved position: the
        // receiver records a line before it answers, and stopping it while an answer is
        // still being read would make that attempt fail and be sent again.
        let half = max(cursors[cursors.count / 2], cursors[7])
        let delivered = { (try? engine.webhookStatusFor(url: receiver.url))?.deliveredCursor ?? 0 }
        #expect(receiver.wait { _ in delivered() >= half })
        receiver.stop()
        let failing = { (try? engine.webhookStatusFor(url: receiver.url))?.failingCursor != nil }
        let deadline = Date().addingTimeInterval(60)
        while !failing() && Date() < deadline && !WebhookReceiver.allDelivered(receiver.records(), cursors) { usleep(10_000) }
        try receiver.start()
        #expect(receiver.wait { WebhookReceiver.allDelivered($0, cursors) })

        // Lines recorded meanwhile are delivered too.
        try Self.ingest(seed: 42, into: engine)
        let all = try engine.changes().map(\.cursor)
        #expect(all.count > cursors.count)
        #expect(receiver.wait { WebhookReceiver.allDelivered($0, all) })
        deliverer.stop()

        let records = receiver.records()
        #expect(WebhookReceiver.problems(records, expected: all) == [])
        // The chosen answers happened: two 500s, a hang past the timeout, each followed by a delivery.
        #expect(records.filter { $0.id == "changes:\(cursors[1])" }.map(\.action).prefix(3) == ["fail", "fail", "ok"])
        #expect(records.filter { $0.id == "changes:\(cursors[3])" }.map(\.action).prefix(2) == ["hang", "ok"])
        // A redirect is not followed: a failed attempt. A 2xx is a delivery, however long its body (read no further than 64 KiB).
        #expect(records.filter { $0.id == "changes:\(cursors[6])" }.map(\.action).prefix(2) == ["redirect", "ok"])
        #expect(records.filter { $0.id == "changes:\(cursors[7])" }.map(\.action).prefix(2) == ["big"])
        // Each body is the feed's line with "feed" added.
        let lines = Dictionary(uniqueKeysWithValues: try engine.changes().map { ($0.cursor, WebhookLine(change: $0)) })
        for record in records { #expect(Array(record.body.utf8) == lines[record.cursor ?? -1]?.body) }
        let status = try engine.webhookStatusFor(url: receiver.url)
        #expect(status?.deliveredCursor == all.last && status?.lag == 0 && status?.failingCursor == nil && status?.failedLines == 0)
    }

    /// Each endpoint has its own thread and connection: one whose receiver hangs holds
    /// up no other.
    @Test(.enabled(if: WebhookReceiver.isAvailable, "needs python3 with the standardwebhooks package"))
    func aHangingEndpointHoldsUpNoOther() throws {
        let (engine, changes) = try Self.engineWithChanges(seed: 44)
        let cursors = changes.map(\.cursor)
        try #require(!cursors.isEmpty)
        let slow = try WebhookReceiver(secret: Self.secret)
        let fast = try WebhookReceiver(secret: Self.secret)
        try slow.setControl(["hang": ["changes:\(cursors[0])": 1_000], "hangSeconds": 120])
        var options = WebhookDeliverer.Options()
        options.pollInterval = 20
        let deliverer = try WebhookDeliverer(engine: engine, endpoints: [Self.endpoint(slow), Self.endpoint(fast)], options: options)
        deliverer.start()
        #expect(slow.wait { !$0.isEmpty })
        #expect(fast.wait { WebhookReceiver.allDelivered($0, cursors) })
        // The slow one is still at its first line.
        #expect(slow.records().allSatisfy { $0.id == "changes:\(cursors[0])" && $0.action == "hang" })
        slow.stop()
        deliverer.stop()
        #expect(WebhookReceiver.problems(fast.records(), expected: cursors) == [])
    }

    /// A redelivery asked for while the deliverer runs is taken up (never overwritten by
    /// the position the deliverer had): every line arrives again, in order.
    @Test(.enabled(if: WebhookReceiver.isAvailable, "needs python3 with the standardwebhooks package"))
    func aRedeliveryWhileDeliveringSendsTheFeedAgain() throws {
        let receiver = try WebhookReceiver(secret: Self.secret)
        var configuration = E2E.configuration()
        configuration.webhooks = [Self.endpoint(receiver)]
        let engine = try Engine(configuration: configuration, databasePath: E2E.folder().appendingPathComponent("r.sqlite").path)
        try Self.ingest(seed: 45, into: engine)
        let cursors = try engine.changes().map(\.cursor)
        try #require(cursors.count >= 2)
        var options = WebhookDeliverer.Options()
        options.pollInterval = 20
        let deliverer = try WebhookDeliverer(engine: engine, options: options)
        deliverer.start()
        defer { deliverer.stop() }
        #expect(receiver.wait { WebhookReceiver.allDelivered($0, cursors) })
        let first = receiver.records().count
        try engine.redeliverWebhooks(url: receiver.url, feed: .changes, since: cursors[0])
        #expect(receiver.wait { WebhookReceiver.allDelivered(Array($0.dropFirst(first)), Array(cursors.dropFirst())) })
        let again = receiver.records().dropFirst(first).compactMap(\.cursor)
        #expect(again == Array(cursors.dropFirst()))
        // The receiver has the last line a moment before the deliverer saves its position.
        #expect(receiver.wait { _ in (try? engine.webhookStatus().first?.lag) == 0 })
    }

    /// A line that fails for 24 hours (a clock the test moves) is marked failed and the
    /// endpoint goes on; a retry not yet due is not attempted.
    @Test(.enabled(if: WebhookReceiver.isAvailable, "needs python3 with the standardwebhooks package"))
    func aLineFailingForTwentyFourHoursIsMarkedFailedAndTheEndpointGoesOn() throws {
        let (engine, changes) = try Self.engineWithChanges(seed: 43)
        try #require(changes.count >= 3)
        let cursors = changes.map(\.cursor)
        let receiver = try WebhookReceiver(secret: Self.secret)
        try receiver.setControl(["fail": ["changes:\(cursors[1])": 1_000]])
        let clock = Mutex(Engine.now())
        var options = WebhookDeliverer.Options()
        options.clock = { clock.withLock { $0 } }
        let endpoint = Self.endpoint(receiver, schedule: [60_000])
        let deliverer = try WebhookDeliverer(engine: engine, endpoints: [endpoint], options: options)
        defer { deliverer.release() }

        var report = try deliverer.deliverDue()
        #expect(report.delivered == 1 && report.failedAttempts == 1 && !report.allSucceeded)
        // Not due yet: nothing is attempted.
        report = try deliverer.deliverDue()
        #expect(report.attempts == 0 && report.allSucceeded)
        // A minute later: one more failed attempt.
        clock.withLock { $0 += 60_000 }
        report = try deliverer.deliverDue()
        #expect(report.attempts == 1 && report.failedAttempts == 1 && report.markedFailed == 0)
        // 24 hours after the first attempt: marked failed, and the rest delivered.
        clock.withLock { $0 += WebhookRetrySchedule.horizon }
        report = try deliverer.deliverDue()
        #expect(report.markedFailed == 1 && report.delivered == cursors.count - 2)
        let records = receiver.records()
        #expect(records.map(\.id) == ["changes:\(cursors[0])"] + Array(repeating: "changes:\(cursors[1])", count: 3) + cursors.dropFirst(2).map { "changes:\($0)" })
        #expect(records.allSatisfy { $0.verified })
        let status = try #require(try engine.webhookStatusFor(url: receiver.url))
        #expect(status.failedLines == 1 && status.deliveredCursor == cursors.last && status.lag == 0)
    }
}

extension WebhookDeliveryTests {
    /// A failing line holds its whole endpoint: the lines of the endpoint's other feed wait
    /// too, until it is delivered or marked failed; then both feeds go on, each in order.
    @Test(.enabled(if: WebhookReceiver.isAvailable, "needs python3 with the standardwebhooks package"))
    func aFailingLineHoldsTheEndpointsOtherFeedToo() throws {
        let receiver = try WebhookReceiver(secret: Self.secret)
        let endpoint = WebhookEndpoint(
            url: URL(string: receiver.url)!, signer: WebhookSigner(secret: Self.secret)!, feeds: [.lifecycle, .changes],
            retrySchedule: WebhookRetrySchedule(delays: [60_000]))
        var configuration = E2E.configuration()
        configuration.webhooks = [endpoint]
        let engine = try Engine(configuration: configuration, databasePath: E2E.folder().appendingPathComponent("held.sqlite").path)
        try Self.ingest(seed: 46, into: engine)
        let changes = try engine.changes()
        let lifecycle = try engine.lifecycle()
        try #require(lifecycle.count >= 3 && !changes.isEmpty)
        try receiver.setControl(["fail": [lifecycle[1].id: 1_000]])
        let clock = Mutex(Engine.now())
        var options = WebhookDeliverer.Options()
        options.clock = { clock.withLock { $0 } }
        let deliverer = try WebhookDeliverer(engine: engine, options: options)
        defer { deliverer.release() }

        var report = try deliverer.deliverDue()
        #expect(report.delivered == 1 && report.failedAttempts == 1)
        // The status says why the changes feed does not move.
        let held = try engine.webhookStatus()
        #expect(held.map(\.feed) == [.lifecycle, .changes])
        #expect(held[0].failingCursor != nil && held[0].waitingFor == nil)
        #expect(held[1].failingCursor == nil && held[1].waitingFor == .lifecycle && held[1].lag == Int64(changes.count))
        #expect(held[1].json()["waitingFor"] == "lifecycle" && held[0].json()["waitingFor"] == .null)
        // Not due yet: nothing is attempted, in either feed.
        report = try deliverer.deliverDue()
        #expect(report.attempts == 0)
        clock.withLock { $0 += 60_000 }
        report = try deliverer.deliverDue()
        #expect(report.attempts == 1 && report.failedAttempts == 1)
        #expect(receiver.records().map(\.id) == [lifecycle[0].id, lifecycle[1].id, lifecycle[1].id])
        // 24 hours after the first attempt: marked failed, and both feeds delivered, each in order.
        clock.withLock { $0 += WebhookRetrySchedule.horizon }
        report = try deliverer.deliverDue()
        #expect(report.markedFailed == 1)
        let delivered = receiver.records().filter { $0.action == "ok" }
        #expect(delivered.filter { !$0.id.hasPrefix("changes:") }.map(\.id) == lifecycle.map(\.id).filter { $0 != lifecycle[1].id })
        #expect(delivered.compactMap { $0.id.hasPrefix("changes:") ? $0.cursor : nil } == changes.map(\.cursor))
        #expect(receiver.records().allSatisfy { $0.verified })
        #expect(try engine.webhookStatus().allSatisfy { $0.waitingFor == nil && $0.failingCursor == nil && $0.lag == 0 })
    }
}

extension Engine {
    /// The changes-feed status of the endpoint at `url` (test helper: the deliverer's
    /// endpoints need not be the configuration's).
    func webhookStatusFor(url: String) throws -> WebhookStatus? {
        try readers.withReader { store throws(StoreError) in
            let position = try store.webhookPosition(endpoint: url, feed: "changes")
            return WebhookStatus(position: position, feed: .changes, lastCursor: try store.lastChangeCursor())
        }
    }
}
