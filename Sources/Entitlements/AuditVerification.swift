import AppStoreVerification
import EntitlementCore
import Foundation
import Synchronization

extension DocumentVerifier {
    /// How many events' JWS the audit re-checks at once: enough that a lane's signature
    /// checks share one modular inversion (``DeferredSignatures``), few enough that the
    /// JWS read ahead stay a few MB.
    static let auditBatchSize = 512

    /// Re-verifies logged JWS for the audit, in `lanes` contiguous parts side by side,
    /// each part's signature checks made at once: one answer per item, in order, the
    /// same as verifying each alone gives (an item whose deferred check fails is
    /// verified again alone, for its error).
    func reverify(_ items: [(SignedKind, String)], lanes: Int) -> [(problem: String?, input: VerifiedInput?)] {
        let inputs = items.map { InputItem(jws: $0.1, expected: Self.expected($0.0)) }
        let lanes = max(1, min(lanes, inputs.count / 16))
        if lanes == 1 { return reverifyLane(inputs[...]) }
        let size = (inputs.count + lanes - 1) / lanes
        let answers = Mutex([(problem: String?, input: VerifiedInput?)](repeating: (nil, nil), count: inputs.count))
        DispatchQueue.concurrentPerform(iterations: lanes) { lane in
            let range = (lane * size)..<min(inputs.count, (lane + 1) * size)
            guard !range.isEmpty else { return }
            let part = reverifyLane(inputs[range])
            answers.withLock { all in
                for (index, answer) in zip(range, part) { all[index] = answer }
            }
        }
        return answers.withLock { $0 }
    }

    /// One lane's part, on this thread.
    private func reverifyLane(_ inputs: ArraySlice<InputItem>) -> [(problem: String?, input: VerifiedInput?)] {
        let deferred: DeferredSignatures? = verifier.checksSignatures ? DeferredSignatures() : nil
        var outcomes: [Result<VerifiedInput, VerificationError>] = []
        outcomes.reserveCapacity(inputs.count)
        // Where each item's deferred checks start.
        var firstCheck: [Int] = []
        firstCheck.reserveCapacity(inputs.count + 1)
        for input in inputs {
            let mark = deferred?.count ?? 0
            var outcome = verify(input, deferring: deferred)
            if case .failure = outcome, let deferred {
                deferred.truncate(to: mark)
                outcome = verify(input)
            }
            outcomes.append(outcome)
            firstCheck.append(mark)
        }
        if let deferred {
            firstCheck.append(deferred.count)
            let passed = deferred.check()
            for (offset, input) in inputs.enumerated() where !passed[firstCheck[offset]..<firstCheck[offset + 1]].allSatisfy({ $0 }) {
                outcomes[offset] = verify(input)
            }
        }
        return outcomes.map { outcome in
            switch outcome {
            case .success(let input): return (nil, input)
            case .failure(let error): return ("\(error.code.rawValue): \(error.message)", nil)
            }
        }
    }

    /// What a logged JWS of `kind` is verified as.
    static func expected(_ kind: SignedKind) -> InputItem.Expected {
        switch kind {
        case .notification: return .notification
        case .transaction: return .transaction
        case .renewalInfo: return .renewalInfo
        case .appTransaction: return .appTransaction
        case .receipt: return .receipt
        }
    }
}
