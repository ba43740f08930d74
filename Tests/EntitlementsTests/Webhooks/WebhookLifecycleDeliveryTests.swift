import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestSupport

/// The lifecycle feed goes out by webhook as the changes feed does: each event once at
/// least, in feed order, its `id` the `webhook-id`, signed, and filtered by the
/// endpoint's `types` and `environments`.
@Suite struct WebhookLifecycleDeliveryTests {
    @Test(.enabled(if: WebhookReceiver.isAvailable, "needs python3 with the standardwebhooks package"))
    func lifecycleEventsArriveFilteredByTypeAndEnvironment() throws {
        let engine = try E2E.engine(path: E2E.folder().appendingPathComponent("lifecycle-hooks.sqlite").path)
        try WebhookTestData.ingest(seed: 61, customers: 8, into: engine)
        let records = try engine.lifecycle()
        let wanted: Set<String> = [LifecycleEventType.subscriptionStarted.rawValue, LifecycleEventType.renewal.rawValue]
        let expected = records.filter { wanted.contains($0.type.rawValue) }
        try #require(!expected.isEmpty, "the history gives no SUBSCRIPTION_STARTED or RENEWAL")
        try #require(expected.count < records.count, "the history gives only the types filtered for")

        let all = try WebhookReceiver(secret: WebhookTestData.secret)
        let filtered = try WebhookReceiver(secret: WebhookTestData.secret)
        let elsewhere = try WebhookReceiver(secret: WebhookTestData.secret)
        let signer = try #require(WebhookSigner(secret: WebhookTestData.secret))
        let schedule = WebhookRetrySchedule(delays: [50, 100])
        let endpoints = [
            WebhookEndpoint(url: URL(string: all.url)!, signer: signer, feeds: [.lifecycle], retrySchedule: schedule),
            WebhookEndpoint(
                url: URL(string: filtered.url)!, signer: signer, feeds: [.lifecycle], types: wanted, retrySchedule: schedule),
            // The test data is of one environment: an endpoint for another gets nothing.
            WebhookEndpoint(
                url: URL(string: elsewhere.url)!, signer: signer, feeds: [.lifecycle], environments: [.xcode], retrySchedule: schedule),
        ]
        // The first line fails once: the lines after it wait, and arrive in order after it.
        try filtered.setControl(["fail": [expected[0].id: 1]])
        var options = WebhookDeliverer.Options()
        options.pollInterval = 20
        let deliverer = try WebhookDeliverer(engine: engine, endpoints: endpoints, options: options)
        deliverer.start()
        defer { deliverer.stop() }

        #expect(all.wait { Set($0.map(\.id)).isSuperset(of: records.map(\.id)) })
        #expect(filtered.wait { Set($0.filter { $0.action == "ok" }.map(\.id)) == Set(expected.map(\.id)) })
        deliverer.stop()

        // In feed order, every signature verified, each body the record's line with "feed" first.
        for (receiver, sent) in [(all, records), (filtered, expected)] {
            let delivered = receiver.records().filter { $0.action == "ok" }
            #expect(delivered.map(\.id) == sent.map(\.id))
            #expect(receiver.records().allSatisfy { $0.verified })
            for (record, line) in zip(delivered, sent.map(WebhookLine.init(lifecycle:))) {
                #expect(Array(record.body.utf8) == line.body)
                #expect(record.body.hasPrefix(#"{"feed":"lifecycle","#))
            }
        }
        #expect(filtered.records().first?.action == "fail")
        #expect(elsewhere.records().isEmpty)
    }
}
