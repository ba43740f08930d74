import Entitlements
import Foundation
import Synchronization
import Testing

@testable import EntitlementsServer

extension Reliability {
    /// `POST /notifications` bodies arriving together are verified in one pass, each answered as if alone.
    @Suite("Serve: notifications verified together")
    struct SharedVerificationTests {
        static let otherwise = "not a notification"

        @Test("bodies verified together: each item is the one verifying it alone gives (forgeries, junk and other documents among them)")
        func together() throws {
            let server = try TestServer()
            let verifier = server.engine.documentVerifier
            let bodies = [
                ServeSamples.notification(1), ServeSamples.notification(2, signer: ServeSamples.forger), "not json at all",
                #"{"signedTransactionInfo":"a.b.c"}"#, ServeSamples.notification(3), "  " + ServeSamples.notification(4) + "\n",
                ServeSamples.notification(5, signer: ServeSamples.forger), ServeSamples.notification(6),
            ].map { InputBytes(bytes: Array($0.utf8)) }
            let together = verifier.verifiedNotifications(bodies, otherwise: Self.otherwise)
            let alone = bodies.map { verifier.verifiedNotification($0, otherwise: Self.otherwise) }
            #expect(together.count == bodies.count)
            #expect(together.map(\.isRejection) == [false, true, true, true, false, false, true, false])
            for (a, b) in zip(together, alone) { #expect(String(describing: a) == String(describing: b)) }
        }

        @Test("concurrent POST /notifications: every body verified once, each request its own answer")
        func concurrentRequests() throws {
            let server = try TestServer()
            let count = 16
            let answers = Mutex([String?](repeating: nil, count: count))
            DispatchQueue.concurrentPerform(iterations: count) { index in
                let response = try? server.exchange("POST", "/notifications", body: ServeSamples.notification(index + 1))
                let result = response?.json?["result"]
                let customer = response?.json?["appTransactionId"]
                answers.withLock {
                    $0[index] = result == "appended" && customer == .string(ServeSamples.customer(index + 1)) ? "ok" : "\(String(describing: response?.body))"
                }
            }
            #expect(answers.withLock { $0 } == [String?](repeating: "ok", count: count))
            let statistics = server.server.verificationStatistics
            #expect(statistics.bodies == count)
            #expect(statistics.passes >= 1 && statistics.passes <= count)
        }
    }
}
