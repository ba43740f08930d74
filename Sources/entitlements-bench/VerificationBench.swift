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
final class VerificationBench {
    struct Figures {
        var singleWarm: Rate
        var singleCold: Rate
        var notificationWarm: Rate
        var notificationCold: Rate
    }

    let warm: SignedDataVerifier
    let cold: SignedDataVerifier
    let transactions: [String]
    let notifications: [String]
    private(set) var errors = 0

    static func verifier(_ corpus: Corpus, cache: Int) throws -> SignedDataVerifier {
        try SignedDataVerifier(
            configuration: VerifierConfiguration(
                bundleId: TestPayloads.bundleId, appAppleId: TestPayloads.appAppleId, environment: .sandbox,
                trustedRootsDER: [corpus.pki.rootDER], chainCacheCapacity: cache))
    }

    /// Makes the verifiers and checks that the corpus verifies, nested objects included.
    init(_ corpus: Corpus) throws {
        warm = try Self.verifier(corpus, cache: 64)
        cold = try Self.verifier(corpus, cache: 0)
        transactions = corpus.samples.map(\.transaction)
        notifications = corpus.samples.map(\.notification)
        for jws in notifications.prefix(50) {
            do {
                let n = try warm.verifyNotification(jws)
                if n.transaction == nil || n.renewalInfo == nil { throw BenchFailure("nested JWS missing") }
            } catch {
                throw BenchFailure("verification failed: \(error)")
            }
        }
    }

    func rate(_ verifier: SignedDataVerifier, notification: Bool, seconds: Double) -> Rate {
        Rate(
            timed(notification ? notifications : transactions, seconds: seconds, minimum: 20) { jws in
                do {
                    if notification { _ = try verifier.verifyNotification(jws) } else { _ = try verifier.verifyTransaction(jws) }
                } catch { errors += 1 }
            })
    }

    func notificationWarm(seconds: Double) -> Rate { rate(warm, notification: true, seconds: seconds) }

    func checked() throws {
        guard errors == 0 else { throw BenchFailure("\(errors) JWS of the corpus did not verify during the timed runs") }
    }
}

extension Rate {
    static let zero = Rate((0, 0, 0))

    /// The better of two measurements of the same thing (the one less disturbed by others).
    func best(_ other: Rate) -> Rate { other.perSecond > perSecond ? other : self }
}
