import AppStoreServerAPI
import EntitlementCore
import Entitlements
import Foundation
import HTTPServer

/// The webhook deliverer's rate: the lifecycle feed of an ingested corpus POSTed, signed,
/// to one endpoint on loopback that answers 204 at once (in this process, on its own
/// threads), by ``WebhookDeliverer/deliverDue()``: lines delivered per second.
enum DeliveryBench {
    struct Figures {
        var lines: Int
        var seconds: Double
        var cpuSeconds: Double
        var received: Int
        var rate: Double { Double(lines) / seconds }
    }

    /// The example secret of specification section 12.
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    static func measure(_ corpus: Corpus, documents: [InputBytes], path: String) throws -> Figures {
        Storage.remove(path)
        defer { Storage.remove(path) }
        let engine = try Engine(configuration: corpus.configuration, databasePath: path)
        var index = 0
        try engine.ingest(
            batches: {
                guard index < documents.count else { return nil }
                let end = min(index + 256, documents.count)
                defer { index = end }
                return Array(documents[index..<end])
            }, workers: 2, receivedAt: TestPayloads_january2026, deliver: { _ in })
        let lines = Int(try engine.lastLifecycleCursor())

        let received = Counter()
        let server = try HTTPServer<Void>(
            listen: ListenAddress(host: "127.0.0.1", port: 0), limits: ServerLimits(maxBodyBytes: 1 << 20), log: nil,
            handler: { _, _ in
                received.increment()
                return ServerResponse(status: 204)
            })
        Thread.detachNewThread { server.run() }
        defer { server.stop() }
        guard let url = URL(string: "http://127.0.0.1:\(server.address.port)/hooks"), let signer = WebhookSigner(secret: secret) else {
            throw BenchFailure("the loopback endpoint cannot be named")
        }
        let endpoint = WebhookEndpoint(url: url, signer: signer, feeds: [.lifecycle])
        let deliverer = try WebhookDeliverer(engine: engine, endpoints: [endpoint])
        defer { deliverer.release() }
        let cpu = Clock.processUserSystem()
        let start = Clock.now()
        let report = try deliverer.deliverDue()
        let seconds = Clock.now() - start
        let end = Clock.processUserSystem()
        guard report.delivered == lines, report.allSucceeded else {
            throw BenchFailure("the deliverer delivered \(report.delivered) of \(lines) lines (\(report.failedAttempts) failed attempts)")
        }
        return Figures(
            lines: lines, seconds: seconds, cpuSeconds: end.user - cpu.user + end.system - cpu.system, received: received.value)
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func increment() { lock.withLock { count += 1 } }
        var value: Int { lock.withLock { count } }
    }
}
