import AppStoreVerification
import EntitlementCore
import TestPKI

/// Verification only, on one thread: a single JWS (a `signedTransactionInfo`) and a
/// notification with its nested transaction and renewal info (three JWS), each with
/// the chain cache warm and cold.
///
/// Cold is a verifier with `chainCacheCapacity: 0`: every JWS has its certificate
/// chain parsed and verified again (two P-384 signatures, OpenSSL path validation),
/// as Apple's own libraries do for every JWS when online checks are off.
enum VerificationBench {
    struct Figures {
        var singleWarm: Double
        var singleCold: Double
        var notificationWarm: Double
        var notificationCold: Double
        var notificationWarmCount: Int
    }

    static func verifier(_ corpus: Corpus, cache: Int) throws -> SignedDataVerifier {
        try SignedDataVerifier(
            configuration: VerifierConfiguration(
                bundleId: TestPayloads.bundleId, appAppleId: TestPayloads.appAppleId, environment: .sandbox,
                trustedRootsDER: [corpus.pki.rootDER], chainCacheCapacity: cache))
    }

    static func measure(_ corpus: Corpus, seconds: Double) throws -> Figures {
        let warm = try verifier(corpus, cache: 64)
        let cold = try verifier(corpus, cache: 0)
        let transactions = corpus.samples.map(\.transaction)
        let notifications = corpus.samples.map(\.notification)

        // Every sample must verify, and the nested objects must come back.
        var failures: [String] = []
        for jws in notifications.prefix(50) {
            do {
                let n = try warm.verifyNotification(jws)
                if n.transaction == nil || n.renewalInfo == nil { failures.append("nested JWS missing") }
            } catch { failures.append(error.description) }
        }
        if let first = failures.first { throw BenchFailure("verification failed: \(first)") }

        func rate(_ verifier: SignedDataVerifier, _ items: [String], notification: Bool, seconds: Double) -> (Double, Int) {
            var errors = 0
            let run = timed(items, seconds: seconds, minimum: 20) { jws in
                do {
                    if notification { _ = try verifier.verifyNotification(jws) } else { _ = try verifier.verifyTransaction(jws) }
                } catch { errors += 1 }
            }
            return errors == 0 ? (Double(run.count) / run.seconds, run.count) : (-1, run.count)
        }
        let singleWarm = rate(warm, transactions, notification: false, seconds: seconds)
        let singleCold = rate(cold, transactions, notification: false, seconds: seconds / 2)
        let notificationWarm = rate(warm, notifications, notification: true, seconds: seconds)
        let notificationCold = rate(cold, notifications, notification: true, seconds: seconds / 2)
        for figure in [singleWarm, singleCold, notificationWarm, notificationCold] where figure.0 < 0 {
            throw BenchFailure("a JWS of the corpus did not verify during the timed run")
        }
        return Figures(
            singleWarm: singleWarm.0, singleCold: singleCold.0, notificationWarm: notificationWarm.0,
            notificationCold: notificationCold.0, notificationWarmCount: notificationWarm.1)
    }
}
