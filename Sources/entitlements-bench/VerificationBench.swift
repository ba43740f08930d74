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
        var singleWarm: Rate
        var singleCold: Rate
        var notificationWarm: Rate
        var notificationCold: Rate
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

        var errors = 0
        func rate(_ verifier: SignedDataVerifier, _ items: [String], notification: Bool, seconds: Double) -> Rate {
            Rate(
                timed(items, seconds: seconds, minimum: 20) { jws in
                    do {
                        if notification { _ = try verifier.verifyNotification(jws) } else { _ = try verifier.verifyTransaction(jws) }
                    } catch { errors += 1 }
                })
        }
        let singleWarm = rate(warm, transactions, notification: false, seconds: seconds)
        let singleCold = rate(cold, transactions, notification: false, seconds: seconds / 2)
        let notificationWarm = rate(warm, notifications, notification: true, seconds: seconds)
        let notificationCold = rate(cold, notifications, notification: true, seconds: seconds / 2)
        guard errors == 0 else { throw BenchFailure("\(errors) JWS of the corpus did not verify during the timed runs") }
        return Figures(singleWarm: singleWarm, singleCold: singleCold, notificationWarm: notificationWarm, notificationCold: notificationCold)
    }
}
