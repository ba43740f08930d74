import AppStoreVerification
import EntitlementCore

extension DocumentVerifier {
    /// Apple's notification webhook bodies that arrived together (concurrent `POST
    /// /notifications` requests), each verified as ``verifiedNotification(_:otherwise:)``
    /// verifies it alone, with the signature checks of them all made at once: one modular
    /// inversion for the lot, as `Engine.ingest`'s lanes check a batch. A document a check
    /// failed for is verified again on its own, so each gets exactly its own answer.
    public func verifiedNotifications(_ documents: [InputBytes], otherwise message: String) -> [AppendItem] {
        var results = [AppendItem?](repeating: nil, count: documents.count)
        var bodies: [InputBytes] = []
        var positions: [Int] = []
        for (index, document) in documents.enumerated() {
            if InputDocument.notificationBodyString(InputDocument.trimmed(document.bytes[...])) != nil {
                bodies.append(document)
                positions.append(index)
            } else {
                results[index] = verifiedNotification(document, otherwise: message)
            }
        }
        if !bodies.isEmpty {
            let batch = verifiedTogether(bodies)
            var offset = 0
            for (number, index) in positions.enumerated() {
                let count = batch.counts[number]
                // Apple's body is one notification: its first item, as `verifiedNotification` answers.
                results[index] = count > 0 ? batch.items[offset] : verifiedNotification(documents[index], otherwise: message)
                offset += count
            }
        }
        return results.map { $0! }
    }

    /// The items of `documents`, verified as `Engine.ingest`'s lanes verify a batch: each
    /// document's items as verifying it alone gives them, the signature checks of all
    /// made at once (for the benchmark's profile of the lanes' work).
    package func verifiedItems(batch documents: [InputBytes]) -> [AppendItem] {
        verifiedTogether(documents).items
    }

    /// `documents` verified as one batch (``Engine/VerifiedBatch``), their signature checks
    /// put off to a batch borrowed from the verifier's pool and made together.
    func verifiedTogether(_ documents: [InputBytes]) -> Engine.VerifiedBatch {
        let deferred = verifier.deferredPool.borrow()
        defer { verifier.deferredPool.giveBack(deferred) }
        return Engine.VerifiedBatch(documents, verifier: self, deferring: deferred)
    }
}
