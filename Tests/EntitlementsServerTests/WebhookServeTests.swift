import EntitlementCore
import Entitlements
import EntitlementsServer
import Foundation
import HTTPServer
import TestPKI
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Webhook delivery inside `serve` (specification section 12), with the receiver that verifies
/// every signature with the `standardwebhooks` package.
@Suite(.serialized) struct WebhookServeTests {
    /// `serve` delivers while it runs; a receiver that hangs stalls neither ingest nor
    /// queries; stopping the server stops the deliverer.
    @Test(.enabled(if: WebhookReceiver.isAvailable, "needs python3 with the standardwebhooks package"))
    func serveDeliversWhileItRunsAndAHangingReceiverStallsNothing() throws {
        let receiver = try WebhookReceiver(secret: WebhookTestData.secret)
        let path = E2E.folder().appendingPathComponent("serve.sqlite").path
        var configuration = E2E.configuration()
        configuration.webhooks = [
            WebhookEndpoint(
                url: URL(string: receiver.url)!, signer: WebhookSigner(secret: WebhookTestData.secret)!, feeds: [.changes],
                retrySchedule: WebhookRetrySchedule(delays: [50, 100]))
        ]
        let engine = try Engine(configuration: configuration, databasePath: path)
        try WebhookTestData.ingest(seed: 55, into: engine)
        let cursors = try engine.changes().map(\.cursor)
        try #require(!cursors.isEmpty)
        try receiver.setControl(["hang": [("changes:\(cursors[0])"): 1], "hangSeconds": 60])

        var options = Server.Options(maxBodyBytes: configuration.maxInputBytes)
        options.webhooks.requestTimeout = 5
        options.webhooks.pollInterval = 20
        let server = try Server(
            engine: engine, settings: ServeSettings(listen: ListenAddress(host: "127.0.0.1", port: 0), token: nil), options: options, log: nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            try? server.run()
            done.signal()
        }.start()
        let port = server.address.port

        // While the first delivery hangs, an ingest and a query are answered.
        #expect(receiver.wait { $0.contains { $0.action == "hang" } })
        let now = Engine.now()
        let transaction = TestPayloads.transaction(
            transactionId: "2000000000000777", originalTransactionId: "2000000000000777", appTransactionId: "704000000000009999",
            productId: "com.example.lifetime", type: "Non-Consumable", purchaseDate: now - 1_000, expiresDate: nil, signedDate: now - 1_000)
        let ingest = try RawClient.exchange(port: port, "POST", "/transactions", body: #"{"signedTransactionInfo":""# + E2E.pki.sign(transaction) + #""}"#)
        #expect(ingest.status == 200)
        let query = try RawClient.exchange(port: port, "GET", "/customers/704000000000009999")
        #expect(query.status == 200)
        // Both answered while the hung attempt was still waiting for its timeout.
        #expect(receiver.records().filter { $0.id == "changes:\(cursors[0])" }.count == 1)

        // Then everything arrives, the new change included.
        let all = try engine.changes().map(\.cursor)
        #expect(all.count > cursors.count)
        #expect(receiver.wait { WebhookReceiver.allDelivered($0, all) })
        server.stop()
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(WebhookReceiver.problems(receiver.records(), expected: all) == [])
        // Stopped with the server: nothing is sent after.
        let count = receiver.records().count
        try Self.ingestOne(engine)
        #expect(try engine.changes().count > all.count)
        usleep(200_000)
        #expect(receiver.records().count == count)
    }

    static func ingestOne(_ engine: Engine) throws {
        let now = Engine.now()
        let transaction = TestPayloads.transaction(
            transactionId: "2000000000000888", originalTransactionId: "2000000000000888", appTransactionId: "704000000000008888",
            productId: "com.example.lifetime", type: "Non-Consumable", purchaseDate: now - 1_000, expiresDate: nil, signedDate: now - 1_000)
        _ = try engine.ingest([InputBytes(#"{"signedTransactionInfo":""# + E2E.pki.sign(transaction) + #""}"#)])
    }
}
