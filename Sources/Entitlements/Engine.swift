import AppStoreVerification
import EntitlementCore
internal import EventStore
import Foundation
import Synchronization

/// The entitlement engine as a library: verify and ingest App Store signed
/// data, answer what a customer may use, rebuild state from the log.
///
/// An engine owns one database connection for writes, guarded by a lock, a
/// connection per concurrent query (queries on different threads run in
/// parallel), and a thread-safe verifier: share one engine across a server's
/// request handlers, or open one per worker thread for parallel writes
/// (SQLite serializes writers; each batch is one transaction).
public final class Engine: Sendable {
    public let configuration: EngineConfiguration
    /// Verification without storage (shared, thread-safe).
    public let documentVerifier: DocumentVerifier
    public var verifier: SignedDataVerifier { documentVerifier.verifier }
    public let databasePath: String
    let rulesJSON: String
    let store: LockedStore
    /// Connections for queries, beside the write connection.
    let readers: ReaderPool
    /// Products met that the rules do not name (``takeProductWarnings()``).
    let productWarnings = ProductWarnings()
    /// Threads on which the `async` API runs the work (started on first use).
    let threads = EngineThreads()

    /// How this engine opened its database.
    public let mode: DatabaseMode

    /// Opens the database at `databasePath` as `mode` allows.
    ///
    /// - Parameters:
    ///   - mode: ``DatabaseMode/create`` (the default) creates the database when it
    ///     does not exist and applies pending migrations, for an engine that records
    ///     (ingest, usage, serve, sync); ``DatabaseMode/existing`` writes an existing
    ///     database (replay); ``DatabaseMode/readOnly`` only reads (query, audit,
    ///     history, changes): it never creates, migrates or writes anything, and
    ///     works on a read-only copy, as another user, and on a full disk.
    /// - Throws: ``EngineError`` when the trust store or the database cannot be used:
    ///   `DATABASE_NOT_FOUND` (no file, for ``DatabaseMode/existing`` and
    ///   ``DatabaseMode/readOnly``), `DATABASE_TOO_NEW` (written by a newer engine),
    ///   and the other `DATABASE_*` codes.
    public init(configuration: EngineConfiguration, databasePath: String, mode: DatabaseMode = .create) throws(EngineError) {
        self.configuration = configuration
        self.databasePath = databasePath
        self.mode = mode
        self.rulesJSON = JSONWriter.string(configuration.rules.canonicalJSON)
        documentVerifier = try DocumentVerifier(configuration: configuration)
        do {
            let opened = try EventStore(
                path: databasePath, hash: { SHA256.hash($0) }, hashParts: { SHA256.hash($0, $1) }, mode: mode.storeMode,
                busyTimeoutMilliseconds: configuration.storeBusyTimeout)
            // Before anything is read or written: the database must be this app's (section 2).
            // A read-only engine only checks; the binding is recorded by the next writer.
            try opened.bind(bundleId: configuration.bundleId, environments: configuration.environments, now: Self.now())
            // A database made before customers were linked keeps otid: customers apart
            // from their appTransactionId until rebuilt once (contract section 5).
            if (try? opened.identityRebuildPending()) == true {
                _ = try? opened.replay(
                    rules: configuration.rules, rulesJSON: rulesJSON, now: Self.now(), collectDiff: false)
            }
            store = LockedStore(opened)
            readers = ReaderPool(path: databasePath, busyTimeoutMilliseconds: configuration.storeBusyTimeout)
        } catch {
            throw EngineError(error)
        }
    }

    deinit { threads.stop() }

    /// Milliseconds since 1970, now.
    public static func now() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    // MARK: Ingest

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

    /// A batch's items verified, in one array, and how many items each document gave.
    struct VerifiedBatch {
        var items: [AppendItem] = []
        var counts: [Int] = []

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
                for document in documents { counts.append(verifier.appendVerifiedItems(document, to: &items)) }
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
                    count = verifier.appendVerifiedItems(document, to: &items)
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
                    counts[index] = verifier.appendVerifiedItems(document, to: &rebuilt)
                }
            }
            items = rebuilt
        }

        init(items: [AppendItem], counts: [Int]) {
            self.items = items
            self.counts = counts
        }
    }

    /// Appends a verified batch in one transaction; one result per item, in order.
    private func append(_ documents: [InputBytes], verified: VerifiedBatch, receivedAt: Int64?) throws(EngineError) -> [IngestResult] {
        noteProducts(verified.items)
        let outcomes = try appendRetryingBusy(verified.items, receivedAt: receivedAt ?? Self.now())
        return Self.results(outcomes, documents: documents, counts: verified.counts)
    }

    /// Ingests a stream of batches, each in one transaction, handing each
    /// batch's results to `deliver` once it is committed.
    ///
    /// A pipeline: `workers` threads of the engine's own each take the next batch
    /// (`next`) and verify it, whole batches side by side, while the calling thread
    /// appends and delivers the batches in order. Verification and SQLite run on
    /// different cores, and a batch is delivered as soon as it is committed: `next`
    /// may wait for input (a live stream on standard input) without holding back
    /// the acknowledgment of what came before. At most `2 × workers + 3` batches are
    /// read and not yet delivered (the one being appended included), so memory stays
    /// bounded, and a lane seldom waits while the append pauses (for a WAL checkpoint).
    ///
    /// `next` is called on those threads, one call at a time, never after it
    /// returned `nil` or after this method returned. A failure to store a batch ends
    /// the ingest: it is thrown, and the batches after it are neither appended nor
    /// delivered (a call of `next` under way then finishes on its own).
    public func ingest(
        batches next: @escaping () -> [InputBytes]?, workers: Int, receivedAt: Int64? = nil, deliver: ([IngestResult]) -> Void
    ) throws(EngineError) {
        let lanes = max(1, workers)
        let pipeline = IngestPipeline(inFlight: 2 * lanes + 2, lanes: lanes)
        let source = UncheckedSendableBox(next)
        // Threads of the engine's own, not Dispatch's shared pool, which a server's handlers may fill.
        for lane in 0..<lanes {
            let thread = Thread { [self] in
                let deferred = DeferredSignatures()
                while let (number, documents) = pipeline.read(source.value) {
                    pipeline.put(number, (documents, VerifiedBatch(documents, verifier: self.documentVerifier, deferring: deferred)))
                }
                pipeline.laneFinished()
            }
            thread.name = "entitlements.ingest.verify.\(lane)"
            thread.start()
        }
        defer { pipeline.stop() }
        while let (documents, verified) = pipeline.take() {
            deliver(try append(documents, verified: verified, receivedAt: receivedAt))
        }
    }

    /// One result per item, each with its document's number, and one `empty` result for
    /// a document that held no item.
    static func results(_ outcomes: [AppendOutcome], documents: [InputBytes], counts: [Int]) -> [IngestResult] {
        var results: [IngestResult] = []
        results.reserveCapacity(outcomes.count)
        var next = 0
        for (index, count) in counts.enumerated() {
            let input = index < documents.count ? documents[index].number ?? index + 1 : index + 1
            if count == 0 {
                results.append(IngestResult(outcome: .empty, input: input))
                continue
            }
            for outcome in outcomes[next..<(next + count)] {
                var result = Self.result(outcome)
                result.input = input
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

    /// Verification of many documents, spread over `workers` threads.
    func verifyAll(_ documents: [InputBytes], workers: Int) -> VerifiedBatch {
        if workers <= 1 || documents.count < 2 {
            return VerifiedBatch(documents, verifier: documentVerifier, deferring: documents.count > 1 ? DeferredSignatures() : nil)
        }
        let results = Mutex([[AppendItem]](repeating: [], count: documents.count))
        let lanes = min(workers, documents.count)
        DispatchQueue.concurrentPerform(iterations: lanes) { lane in
            var local: [(Int, [AppendItem])] = []
            var index = lane
            while index < documents.count {
                local.append((index, self.documentVerifier.verifiedItems(documents[index])))
                index += lanes
            }
            results.withLock { all in for (i, items) in local { all[i] = items } }
        }
        let verified = results.withLock { $0 }
        return VerifiedBatch(items: verified.flatMap { $0 }, counts: verified.map(\.count))
    }

    /// Appends one batch; a busy database (another writer holding the lock past
    /// the busy timeout) is retried as a whole, never reported as a failure.
    func appendRetryingBusy(_ items: [AppendItem], receivedAt: Int64) throws(EngineError) -> [AppendOutcome] {
        var attempt = 0
        while true {
            do {
                return try store.withLock { store throws(StoreError) in
                    try store.append(items, rules: configuration.rules, rulesJSON: rulesJSON, receivedAt: receivedAt)
                }
            } catch {
                let busy = error.code == .busy
                attempt += 1
                if busy && attempt < 50 {
                    usleep(UInt32(20_000 * min(attempt, 10)))
                    continue
                }
                throw EngineError(error)
            }
        }
    }

    // MARK: Rules

    /// A warning when the stored projections were built under different rules
    /// than the configuration's, else `nil`.
    public func rulesWarning() -> String? {
        guard let engine = try? store.withLock({ store throws(StoreError) in try store.engineState() }) else { return nil }
        if engine.rulesJSON.isEmpty || engine.rulesJSON == rulesJSON { return nil }
        return
            "warning: the stored projections were built under rules \"\(engine.rulesVersion)\" but the configuration has rules \"\(configuration.rules.version)\" with different content; run `entitlements replay` to rebuild them (answers below already apply the configuration's rules)"
    }
}

/// A value handed to another thread by a caller that guarantees one thread uses it at a time.
final class UncheckedSendableBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// The hand-over between the stages of ``Engine/ingest(batches:workers:receivedAt:deliver:)``:
/// batches numbered as they are read, verified on several lanes, taken in order.
final class IngestPipeline: @unchecked Sendable {
    typealias Batch = (documents: [InputBytes], verified: Engine.VerifiedBatch)
    private let condition = NSCondition()
    /// Held while a lane reads: one call of the source at a time, without holding `condition`.
    private let reading = NSLock()
    private var verified: [Int: Batch] = [:]
    private var nextToRead = 0
    private var nextToTake = 0
    private var inputEnded = false
    private var lanesRunning = 0
    /// Batches handed to lanes and not yet put back.
    private var verifying = 0
    private var stopped = false
    private let inFlight: Int

    /// - Parameters:
    ///   - inFlight: the most batches read and not yet taken.
    ///   - lanes: how many lanes will call ``laneFinished()``.
    init(inFlight: Int, lanes: Int) {
        self.inFlight = inFlight
        self.lanesRunning = lanes
    }

    /// Lane: the next batch and its number, waiting while `inFlight` batches are read
    /// and not taken; `nil` when the input ended or the consumer stopped.
    func read(_ source: () -> [InputBytes]?) -> (Int, [InputBytes])? {
        reading.lock()
        defer { reading.unlock() }
        condition.lock()
        while nextToRead - nextToTake >= inFlight && !stopped { condition.wait() }
        let done = stopped || inputEnded
        condition.unlock()
        if done { return nil }
        guard let documents = source() else {
            condition.lock()
            inputEnded = true
            condition.broadcast()
            condition.unlock()
            return nil
        }
        condition.lock()
        defer { condition.unlock() }
        // Stopped while this lane read (a failed append): the batch is not verified.
        if stopped { return nil }
        let number = nextToRead
        nextToRead += 1
        verifying += 1
        return (number, documents)
    }

    /// Lane: the batch numbered `number`, verified.
    func put(_ number: Int, _ batch: Batch) {
        condition.lock()
        if !stopped { verified[number] = batch }
        verifying -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// Lane: this lane reads no more.
    func laneFinished() {
        condition.lock()
        lanesRunning -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// Consumer: the next batch in order, waiting for it; `nil` once the input
    /// ended and every batch read was taken.
    func take() -> Batch? {
        condition.lock()
        defer { condition.unlock() }
        while verified[nextToTake] == nil {
            // Every batch read has been taken, and none will be read: the end.
            if nextToTake == nextToRead && (inputEnded || lanesRunning == 0) { return nil }
            condition.wait()
        }
        let batch = verified.removeValue(forKey: nextToTake)!
        nextToTake += 1
        condition.broadcast()
        return batch
    }

    /// Consumer: no more batches are wanted; lanes end after the batch under way,
    /// which this waits for: when the caller then exits (a command that failed),
    /// no lane is still verifying while the process's libraries are torn down. A
    /// lane waiting for input is not waited for; it verifies nothing once it has it.
    func stop() {
        condition.lock()
        stopped = true
        verified.removeAll()
        condition.broadcast()
        while verifying > 0 { condition.wait() }
        condition.unlock()
    }
}

/// One input document as read, bounded: `bytes` holds at most the engine's
/// limit (plus one byte), `size` is how large the whole input was.
public struct InputBytes: Sendable {
    public var bytes: [UInt8]
    public var size: Int
    /// The document's 1-based number in its input (an NDJSON line number, blank lines
    /// counted), echoed as `input` in its results; `nil`: its position in the batch.
    public var number: Int?
    /// The input was not read to its end (it ran on far past the limit): it is
    /// at least `size` bytes long.
    public var sizeIsLowerBound = false

    public init(bytes: [UInt8], size: Int? = nil, number: Int? = nil) {
        self.bytes = bytes
        self.size = size ?? bytes.count
        self.number = number
    }

    public init(_ text: String) { self.init(bytes: Array(text.utf8)) }
}

extension AppendItem {
    /// Whether the item is a rejection.
    var isRejection: Bool {
        if case .rejected = self { return true }
        return false
    }
}
