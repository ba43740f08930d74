import AppStoreVerification
import EntitlementCore

extension Engine {
    /// A batch's items verified, in one array, and how many items each document gave.
    struct VerifiedBatch {
        var items: [AppendItem] = []
        var counts: [Int] = []
        /// The products the items name, when gathered on the verifying thread
        /// (``gatheringProducts()``); else the append gathers them.
        var products: NamedProducts?

        /// The batch with the products its items name gathered, on this thread.
        consuming func gatheringProducts() -> VerifiedBatch {
            products = NamedProducts(items)
            return self
        }

        /// The documents' items, verified one document after another on this thread.
        ///
        /// With `deferred`, the signature checks that keys' tables make are put off and
        /// made for the whole batch at once (``DeferredSignatures``: one modular inversion
        /// for the batch instead of one per signature). A document that a check failed for,
        /// or that was not verified whole, is then verified again at once on its own, so
        /// that every document gets exactly the items verifying it alone gives.
        init(_ documents: [InputBytes], verifier: DocumentVerifier, deferring deferred: DeferredSignatures? = nil) {
            items.reserveCapacity(documents.count)
            counts.reserveCapacity(documents.count)
            guard let deferred, verifier.verifier.checksSignatures else {
                for document in documents { counts.append(verifier.appendVerifiedItems(document, to: &items, deferring: nil)) }
                return
            }
            // Where each document's deferred checks start.
            var firstCheck: [Int] = []
            firstCheck.reserveCapacity(documents.count + 1)
            for document in documents {
                let mark = deferred.count
                let start = items.count
                var count = verifier.appendVerifiedItems(document, to: &items, deferring: deferred)
                if items[start...].contains(where: \.isRejection) {
                    deferred.truncate(to: mark)
                    items.removeSubrange(start...)
                    count = verifier.appendVerifiedItems(document, to: &items, deferring: nil)
                }
                counts.append(count)
                firstCheck.append(mark)
            }
            firstCheck.append(deferred.count)
            let passed = deferred.check()
            guard passed.contains(false) else { return }
            var rebuilt: [AppendItem] = []
            rebuilt.reserveCapacity(items.count)
            var start = 0
            for (index, document) in documents.enumerated() {
                let count = counts[index]
                defer { start += count }
                if passed[firstCheck[index]..<firstCheck[index + 1]].allSatisfy({ $0 }) {
                    rebuilt.append(contentsOf: items[start..<(start + count)])
                } else {
                    counts[index] = verifier.appendVerifiedItems(document, to: &rebuilt, deferring: nil)
                }
            }
            items = rebuilt
        }

        init(items: [AppendItem], counts: [Int]) {
            self.items = items
            self.counts = counts
        }
    }
}
