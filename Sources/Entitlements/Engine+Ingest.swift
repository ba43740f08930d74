import AppStoreVerification
import EntitlementCore
internal import EventStore
import Foundation
import Synchronization

extension Engine {
    /// Verifies, appends and projects a batch of input documents in one
    /// transaction. Returns one result per input item, in order.
    ///
    /// - Parameters:
    ///   - documents: whole input documents (a JSON body, or a bare JWS).
    ///   - workers: how many threads verify signatures in parallel.
    ///   - receivedAt: time of receipt; now by default.
    /// - Throws: ``EngineError`` when the batch could not be stored (then none of it was).
    public func ingest(_ documents: [InputBytes], workers: Int = 1, receivedAt: Int64? = nil) throws(EngineError) -> [IngestResult] {
        try append(documents, verified: verifyAll(documents, workers: workers), receivedAt: receivedAt)
    }

    /// Appends a verified batch in one transaction; one result per item, in order.
    private func append(_ documents: [InputBytes], verified: VerifiedBatch, receivedAt: Int64?) throws(EngineError) -> [IngestResult] {
        let outcomes = try appendRetryingBusy(verified.items, products: verified.products, receivedAt: receivedAt ?? Self.now())
        return Self.results(outcomes, documents: documents, counts: verified.counts, items: verified.items)
    }

    /// Ingests a stream of batches, each in one transaction, handing each
    /// batch's results to `deliver` once it is committed.
    ///
    /// A pipeline: `workers` threads of the engine's own each take the next batch
    /// (`next`) and verify it, whole batches side by side, while the calling thread
    /// appends and delivers the batches in order. Verification and SQLite run on
    /// different cores, and a batch is delivered as soon as it is committed: `next`
    /// may wait for input (a live stream on standard input) without holding back
    /// the acknowledgment of what came before. At most `workers + 3` batches are
    /// read and not yet delivered (the one being appended included): the lanes verify
    /// faster than one thread appends, so what they have verified ahead is appended
    /// alone once the input ends; two batches ahead keep the appending thread fed
    /// (through a pause for a WAL checkpoint too) while memory, and that last stretch
    /// on one core, stay small.
    ///
    /// `next` is called on those threads, one call at a time, never after it
    /// returned `nil` or after this method returned. A failure to store a batch ends
    /// the ingest: it is thrown, and the batches after it are neither appended nor
    /// delivered (a call of `next` under way then finishes on its own).
    public func ingest(
        batches next: @escaping () -> [InputBytes]?, workers: Int, receivedAt: Int64? = nil, deliver: ([IngestResult]) -> Void
    ) throws(EngineError) {
        try ingest(batches: next, workers: workers, receivedAtOfBatch: { _ in receivedAt }, deliver: deliver)
    }

    /// ``ingest(batches:workers:receivedAt:deliver:)`` with a time of receipt for each
    /// batch: `receivedAtOfBatch(n)` for the `n`-th batch (from 0), called in order as
    /// each is appended (`nil`: now). For a benchmark that receives a recorded history
    /// at the moments it happened.
    package func ingest(
        batches next: @escaping () -> [InputBytes]?, workers: Int, receivedAtOfBatch: (Int) -> Int64?,
        deliver: ([IngestResult]) -> Void
    ) throws(EngineError) {
        let lanes = max(1, workers)
        let pipeline = IngestPipeline(inFlight: lanes + 2, lanes: lanes)
        let source = UncheckedSendableBox(next)
        // Threads of the engine's own, not Dispatch's shared pool, which a server's handlers may fill.
        for lane in 0..<lanes {
            let thread = Thread { [self] in
                let deferred = DeferredSignatures()
                while let (number, documents) = pipeline.read(source.value) {
                    // The batches appended since, released here (see IngestPipeline.giveBack).
                    _ = pipeline.takeSpent()
                    let verified = VerifiedBatch(documents, verifier: self.documentVerifier, deferring: deferred)
                    pipeline.put(number, (documents, verified.gatheringProducts()))
                }
                pipeline.laneFinished()
            }
            thread.name = "entitlements.ingest.verify.\(lane)"
            thread.start()
        }
        defer { pipeline.stop() }
        var number = 0
        while let (documents, verified) = pipeline.take() {
            let receivedAt = receivedAtOfBatch(number)
            number += 1
            do {
                deliver(try append(documents, verified: verified, receivedAt: receivedAt))
                pipeline.giveBack((consume documents, consume verified))
            } catch where error.code == .replicationTimeout {
                // Committed, not acknowledged: each line says so, and nothing after it is appended.
                deliver(Self.unacknowledged(documents, counts: verified.counts, error: error))
                throw error
            }
        }
    }

    /// One result per item, each with its document's number, and one `empty` result for
    /// a document that held no item; a receipt's result names its original transaction id
    /// (`items`, when given, are the appended items, one per outcome).
    static func results(_ outcomes: [AppendOutcome], documents: [InputBytes], counts: [Int], items: [AppendItem] = []) -> [IngestResult] {
        var results: [IngestResult] = []
        results.reserveCapacity(outcomes.count)
        var next = 0
        for (index, count) in counts.enumerated() {
            let input = index < documents.count ? documents[index].number ?? index + 1 : index + 1
            if count == 0 {
                results.append(IngestResult(outcome: .empty, input: input))
                continue
            }
            for index in next..<(next + count) {
                var result = Self.result(outcomes[index])
                result.input = input
                if items.indices.contains(index), case .verified(.receipt(let part)) = items[index] {
                    result.originalTransactionId = part.originalTransactionId
                }
                results.append(result)
            }
            next += count
        }
        return results
    }

    static func result(_ outcome: AppendOutcome) -> IngestResult {
        switch outcome {
        case .appended(let eventId, let kind, let key, _):
            return IngestResult(outcome: .appended, kind: kind, eventId: eventId, appTransactionId: key)
        case .duplicate(let eventId, let kind, let key, _):
            return IngestResult(outcome: .duplicate, kind: kind, eventId: eventId, appTransactionId: key)
        case .quarantined(let code, let message):
            return IngestResult(outcome: .rejected, errorCode: code, errorMessage: message)
        }
    }

    /// Verification of many documents, spread over `workers` threads: each thread verifies
    /// a run of them as one batch, its signature checks made at once (one modular
    /// inversion for the run; even one notification holds three signatures).
    func verifyAll(_ documents: [InputBytes], workers: Int) -> VerifiedBatch {
        let lanes = min(max(1, workers), documents.count)
        if lanes <= 1 {
            return documentVerifier.verifiedTogether(documents)
        }
        let size = (documents.count + lanes - 1) / lanes
        let parts = Mutex([VerifiedBatch?](repeating: nil, count: lanes))
        DispatchQueue.concurrentPerform(iterations: lanes) { lane in
            let run = Array(documents[min(lane * size, documents.count)..<min((lane + 1) * size, documents.count)])
            let part = self.documentVerifier.verifiedTogether(run)
            parts.withLock { $0[lane] = part }
        }
        // concurrentPerform returns once every lane has run: each run is there, in order.
        let runs = parts.withLock { $0.compactMap { $0 } }
        precondition(runs.count == lanes, "a lane's run of documents was not verified")
        return VerifiedBatch(items: runs.flatMap(\.items), counts: runs.flatMap(\.counts))
    }

    /// Appends one batch; a busy database (another writer holding the lock past
    /// the busy timeout) is retried as a whole, up to 50 times, unless `giveUp` says
    /// otherwise (a server that must answer in time, or is stopping): then it is reported
    /// `DATABASE_BUSY`. With replication it returns once the replica holds the batch,
    /// unless `confirming` is false (the caller then confirms before it acknowledges).
    /// `products`: the products the items name, when the verifying thread gathered them.
    func appendRetryingBusy(
        _ items: [AppendItem], products: NamedProducts? = nil, receivedAt: Int64, confirming: Bool = true,
        giveUp: () -> Bool = { false }
    ) throws(EngineError) -> [AppendOutcome] {
        var attempt = 0
        let finishing = finishesTransactions
        while true {
            let outcomes: [AppendOutcome]
            let queuedFinishes: Int
            do {
                (outcomes, queuedFinishes) = try store.withLock { store throws(StoreError) in
                    let active = try activeRules(store)
                    noteProducts(products ?? NamedProducts(items), rules: active.rules)
                    // Finishes are queued in the batch's own transaction; Apple is called later, outside it.
                    return try store.append(
                        items, rules: active.rules, rulesJSON: active.json, receivedAt: receivedAt,
                        finishing: finishing ? { outcomes, rules in Self.finishCandidates(items, outcomes, rules: rules) } : nil,
                        queuedAt: Self.now())
                }
            } catch {
                let busy = error.code == .busy
                attempt += 1
                if busy && attempt < 50 && !giveUp() {
                    usleep(UInt32(20_000 * min(attempt, 10)))
                    continue
                }
                throw EngineError(error)
            }
            noteV1Notifications(items)
            // Woken once the replica holds the batch; when that fails, the finisher finds the
            // queued rows on its next pass.
            if confirming { try confirmReplicated() }
            if queuedFinishes > 0 { finishWakeup.signal() }
            return outcomes
        }
    }
}
