import AppStoreVerification
import EntitlementCore
import EventStore
import Foundation
import Synchronization

/// The entitlement engine as a library: verify and ingest App Store signed
/// data, answer what a customer may use, rebuild state from the log.
///
/// An engine owns one database connection, guarded by a lock, and a
/// thread-safe verifier: share one engine across a server's request handlers,
/// or open one per worker thread for parallel writes (SQLite serializes
/// writers; each batch is one transaction).
public final class Engine: Sendable {
    public let configuration: EngineConfiguration
    /// Verification without storage (shared, thread-safe).
    public let documentVerifier: DocumentVerifier
    public var verifier: SignedDataVerifier { documentVerifier.verifier }
    public let databasePath: String
    let rulesJSON: String
    let store: LockedStore

    /// Opens (or creates) the database at `databasePath`.
    /// - Throws: ``EngineError`` when the trust store or the database cannot be used.
    public init(configuration: EngineConfiguration, databasePath: String) throws(EngineError) {
        self.configuration = configuration
        self.databasePath = databasePath
        self.rulesJSON = JSONWriter.string(configuration.rules.canonicalJSON)
        documentVerifier = try DocumentVerifier(configuration: configuration)
        do {
            let opened = try EventStore(path: databasePath, hash: { SHA256.hash($0) })
            store = LockedStore(opened)
        } catch {
            throw EngineError(error)
        }
    }

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
        let perDocument = verifyAll(documents, workers: workers)
        let items = perDocument.flatMap { $0 }
        let outcomes: [AppendOutcome]
        do {
            outcomes = try appendRetryingBusy(items, receivedAt: receivedAt ?? Self.now())
        } catch {
            throw error
        }
        return outcomes.map { outcome in
            switch outcome {
            case .appended(let eventId, let kind, let key, _):
                return IngestResult(outcome: .appended, kind: kind, eventId: eventId, appTransactionId: key)
            case .duplicate(let eventId, let kind, let key, _):
                return IngestResult(outcome: .duplicate, kind: kind, eventId: eventId, appTransactionId: key)
            case .quarantined(let code, let message):
                return IngestResult(outcome: .rejected, errorCode: code, errorMessage: message)
            }
        }
    }

    /// Verification of many documents, spread over `workers` threads.
    func verifyAll(_ documents: [InputBytes], workers: Int) -> [[AppendItem]] {
        if workers <= 1 || documents.count < 2 { return documents.map(self.documentVerifier.verifiedItems) }
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
        return results.withLock { $0 }
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

/// One input document as read, bounded: `bytes` holds at most the engine's
/// limit (plus one byte), `size` is how large the whole input was.
public struct InputBytes: Sendable {
    public var bytes: [UInt8]
    public var size: Int

    public init(bytes: [UInt8], size: Int? = nil) {
        self.bytes = bytes
        self.size = size ?? bytes.count
    }

    public init(_ text: String) { self.init(bytes: Array(text.utf8)) }
}
