import Dispatch
import EntitlementCore
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The replay's scan of one snapshot of the log, in one read transaction of its own
/// connection: its customers' facts read in key order into lanes (chunks reduced on every
/// core, customers made of several keys gathered for the end), each rebuilt state compared
/// with the previous generation's (merge-join in key order), the new generation written in
/// batches on a thread of its own.
final class ReplayScan {
    /// What the swap needs from the scan, and the report so far.
    struct Result {
        var report: ReplayReport
        /// The snapshot: the last `seq` the scan read.
        var snapshotSeq: Int64
        /// Who the customers were at the snapshot (specification section 5): each linked
        /// originalTransactionId's appTransactionId, looked up in the snapshot.
        var snapshotLinks: ReplayIdentity
        /// Customers whose stored state differs from the previous generation's.
        var changedKeys: [CustomerKey]
    }

    private let store: EventStore
    private let reader: Connection
    private let rules: Rules
    private let previousRules: Rules?
    private let rulesChanged: Bool
    private let previousGeneration: Int64
    private let now: Int64
    private let collectDiff: Bool
    private let chunkSize: Int
    private let productsMet: ProductsMet
    private let progress: (ReplayProgress) -> Void
    private let identity: ReplayIdentity
    private let snapshotSeq: Int64
    private let total: Int64

    private var report: ReplayReport
    private var changedKeys: [CustomerKey] = []

    // The previous generation, joined in key order (``oldInOrder``) or looked up (``oldByKey``).
    private let oldByKey: Statement
    private let oldInOrder: Statement
    private var oldHasRow: Bool
    /// Rows of the previous generation the in-order join passed over: a customer
    /// gathered and finished after the scan, or one with no facts left in the log
    /// (events deleted behind the engine's back), which is a change the diff shows.
    private var passedOver: [(key: CustomerKey, active: [String])] = []
    private var finishedOutOfOrder: Set<CustomerKey> = []
    /// Keys whose row was written in key order with the previous generation's state,
    /// for a gathered customer's own state to be written over (``ReplayCustomer/holdsPlace``).
    private var heldPlaces: [CustomerKey] = []

    // The lanes.
    private let facts: Statement
    /// Which rows make the customers of more than one key (an `otid:` key merged
    /// into its appTransactionId, conflicting links), noted while the scan goes on;
    /// read again and reduced at its end.
    private var gathered = GatheredCustomers()
    private var chunk = ReplayChunk()
    private var inFlight: BackgroundReduction? = nil
    private let reducer: WorkerThread

    // The writes.
    /// Encoded states waiting for their write: each state is encoded once, for
    /// the comparison with the previous generation and for the write alike.
    private var buffered: [(CustomerKey, [UInt8], Int64)] = []
    /// Writes go to a thread of their own, one transaction per batch, in order,
    /// while this thread reads on; the write lock is free between batches.
    private let writer: ProjectionWriter

    /// Scans a snapshot of `store`'s log taken now, building generation `next`, then
    /// calls `then` with the result while the snapshot is still open (its links are
    /// looked up in it).
    static func run<T>(
        store: EventStore, rules: Rules, previousRules: Rules?, rulesChanged: Bool, previousGeneration: Int64, next: Int64, now: Int64,
        collectDiff: Bool, chunkSize: Int, products: ProductsMet, progress: @escaping (ReplayProgress) -> Void,
        then: (Result) throws -> T
    ) throws -> T {
        let reader = try Connection(path: store.path, mode: .readWrite)
        return try reader.read { () throws -> T in
            let scan = try ReplayScan(
                store: store, reader: reader, rules: rules, previousRules: previousRules, rulesChanged: rulesChanged,
                previousGeneration: previousGeneration, next: next, now: now, collectDiff: collectDiff, chunkSize: chunkSize,
                products: products, progress: progress)
            return try then(try scan.scan())
        }
    }

    /// The scan itself: however it ends, no reduction and no write is still running when it returns.
    private func scan() throws -> Result {
        defer { writer.close() }
        defer { reducer.finish() }
        try readLanes()
        try finishLanes()
        try compareVanished()
        try complete()
        return Result(report: report, snapshotSeq: snapshotSeq, snapshotLinks: identity, changedKeys: changedKeys)
    }

    /// The snapshot: its last `seq`, who its customers are, and the statements that read it.
    private init(
        store: EventStore, reader: Connection, rules: Rules, previousRules: Rules?, rulesChanged: Bool, previousGeneration: Int64,
        next: Int64, now: Int64, collectDiff: Bool, chunkSize: Int, products: ProductsMet, progress: @escaping (ReplayProgress) -> Void
    ) throws {
        self.store = store
        self.reader = reader
        self.rules = rules
        self.previousRules = previousRules
        self.rulesChanged = rulesChanged
        self.previousGeneration = previousGeneration
        self.now = now
        self.collectDiff = collectDiff
        self.chunkSize = chunkSize
        self.productsMet = products
        self.progress = progress
        report = ReplayReport(events: 0, customers: 0, changed: 0, diffs: [], caughtUp: 0, rulesVersion: rules.version)
        snapshotSeq = try reader.scalarInt("SELECT coalesce(max(seq), 0) FROM events") ?? 0
        identity = try ReplayIdentity(reader: reader)
        oldByKey = try reader.prepare("SELECT state FROM projections WHERE generation = ? AND customer_key = ?")
        // The snapshot's events, every one at most `snapshotSeq`: counted from the smallest of
        // the log's indexes, where counting the facts (or the events by `seq`) reads whole tables.
        total = try reader.scalarInt("SELECT count(*) FROM events") ?? 0
        facts = try reader.prepare("SELECT customer_key, seq, facts FROM event_facts ORDER BY customer_key, seq")
        oldInOrder = try reader.prepare(
            "SELECT customer_key, state FROM projections WHERE generation = ? ORDER BY customer_key")
        try oldInOrder.bind(1, previousGeneration)
        oldHasRow = try oldInOrder.step()
        buffered.reserveCapacity(chunkSize)
        writer = ProjectionWriter(store: store, generation: next, rulesVersion: rules.version)
        reducer = WorkerThread(name: "entitlements.replay.reduce")
    }

    // MARK: Reduce in lanes

    /// Rows are read here, whole customers at a time, into chunks. A full chunk's
    /// reducers run in the background on every core (customers are independent)
    /// while this thread finishes the chunk before it and reads the next: the
    /// finishing goes customer by customer in key order, exactly as one thread
    /// would (progress, comparison, diffs, writes).
    private func readLanes() throws {
        var currentKey: CustomerKey? = nil
        var route = ReplayIdentity.Route.alone
        while try facts.step() {
            let seq = facts.int64(1)
            if seq > snapshotSeq { continue }
            // The same key as the row before: compared in place, no String made.
            if currentKey == nil || !facts.text(0, equals: currentKey!) {
                let key = facts.string(0) ?? ""
                if key != currentKey {
                    currentKey = key
                    route = try identity.route(key)
                    switch route {
                    case .alone:
                        if chunk.events >= ReplayChunk.events { try handOver() }
                        chunk.customers.append(ReplayCustomer(key: key))
                    case .byRow where EventStore.projectionRowNumber(of: key) != nil:
                        // An appTransactionId other keys merge into: likely a gathered customer's own key.
                        chunk.customers.append(ReplayCustomer(key: key, holdsPlace: true))
                    case .whole, .byRow:
                        break
                    }
                }
            }
            switch route {
            case .alone:
                facts.withBlob(2) { bytes in chunk.append(seq: seq, facts: bytes) }
            case .whole(let owner):
                gathered.append(seq: seq, filedUnder: currentKey!, to: owner)
            case .byRow:
                let key = currentKey!
                let owner = try facts.withBlob(2) { bytes in try identity.owner(ofRow: bytes, seq: seq, filedUnder: key) }
                gathered.append(seq: seq, filedUnder: key, to: owner)
            }
        }
    }

    /// Starts reducing the chunk read so far in the background, and finishes the one before it.
    /// - Parameter outOfOrder: the chunk holds gathered customers, finished after the scan.
    private func handOver(outOfOrder: Bool = false) throws {
        let started = BackgroundReduction(chunk, outOfOrder: outOfOrder, rules: rules, products: productsMet, on: reducer)
        // The next chunk is about as big: reserved at once, its rows are not copied as it grows.
        chunk = ReplayChunk(reserving: chunk)
        if let previous = inFlight { try finish(previous.chunk, previous.outcomes(), outOfOrder: previous.outOfOrder) }
        inFlight = started
    }

    /// After the scan: the last chunk, then the gathered customers, read again from the
    /// snapshot a chunk at a time (reduced in the background like the scan's).
    private func finishLanes() throws {
        try handOver()
        try gathered.read(from: reader) { chunk in
            self.chunk = chunk
            try handOver(outOfOrder: true)
        }
        if let last = inFlight { try finish(last.chunk, last.outcomes(), outOfOrder: last.outOfOrder) }
        inFlight = nil
    }

    /// Finishes a reduced chunk customer by customer, in key order: progress, then the
    /// comparison and the write (``compare(_:_:_:outOfOrder:)``).
    private func finish(_ chunk: ReplayChunk, _ results: [ReplayChunk.Outcome], outOfOrder: Bool = false) throws {
        for (customer, result) in zip(chunk.customers, results) {
            if customer.holdsPlace {
                try holdPlace(of: customer.key)
                continue
            }
            var counted = customer.rows.count
            var outcome: (Int64, [UInt8])? = nil
            switch result {
            case .reduced(let lastSeq, let bytes):
                outcome = (lastSeq, bytes)
            case .failed(let index, _), .needsRawJWS(let index):
                counted = index
            }
            for _ in 0..<counted { countEvent() }
            if outcome == nil {
                if case .failed(_, let error) = result { throw error }
                outcome = try reduceOnThisThread(customer, of: chunk, counted: counted)
            }
            try compare(customer.key, outcome!.0, outcome!.1, outOfOrder: outOfOrder)
        }
    }

    /// A tie between two versions needs raw JWS from the log: this customer goes
    /// through the one-thread path, which loads them through the store's connection,
    /// once the writer has let go of it. The events past the first `counted` are counted here.
    private func reduceOnThisThread(_ customer: ReplayCustomer, of chunk: ReplayChunk, counted: Int) throws -> (Int64, [UInt8]) {
        try writer.finish()
        var state = CustomerState(key: customer.key)
        var lastSeq: Int64 = 0
        var interner = StringInterner(capacity: 16)
        for (index, row) in customer.rows.enumerated() {
            let event = try chunk.decode(row, interner: &interner).get()
            try store.apply(event, to: &state, rules: rules)
            lastSeq = max(lastSeq, row.seq)
            if index >= counted { countEvent() }
        }
        var met = Set<String>()
        state.insertProducts(into: &met)
        productsMet.add(met)
        return (lastSeq, StateCodec.encode(state))
    }

    /// One facts row more done; progress every 16,384.
    private func countEvent() {
        report.events += 1
        if report.events & 0x3FFF == 0 {
            // Rows are counted, the log's events reported: an event filed under several keys has
            // several rows, one about no customer none. Done is the total only once the scan is.
            let done = min(report.events, max(total - 1, 0))
            progress(ReplayProgress(eventsDone: done, eventsTotal: total, customersDone: report.customers))
        }
    }

    // MARK: Compare with the previous generation

    /// One customer rebuilt: compared with its row of the previous generation (the
    /// diff, the change), then queued for the write.
    private func compare(_ key: CustomerKey, _ lastSeq: Int64, _ newBytes: [UInt8], outOfOrder: Bool = false) throws {
        // Merge-join with the previous generation, both ordered by key; a
        // gathered customer (finished after the scan) looks its row up.
        let old: Statement
        let column: Int32
        var oldRow: Bool
        if outOfOrder {
            old = oldByKey
            column = 0
            oldByKey.reset()
            try oldByKey.bind(1, previousGeneration)
            try oldByKey.bind(2, key)
            oldRow = try oldByKey.step()
            finishedOutOfOrder.insert(key)
        } else {
            old = oldInOrder
            column = 1
            while oldHasRow, let oldKey = old.string(0), oldKey < key { try passOldRow() }
            oldRow = oldHasRow && old.string(0) == key
        }
        defer { if outOfOrder { oldByKey.reset() } }
        var hasOld = false
        var differs = true
        if oldRow {
            hasOld = true
            differs = !old.withBlob(column) { bytes in Self.isRebuilt(stored: bytes, as: newBytes) }
        }
        if collectDiff || (rulesChanged && !differs) {
            // Both answers come from the stored bytes, as a query's would.
            guard
                let after = try? newBytes.withUnsafeBytes({ bytes throws(CodecError) in
                    try Evaluation.evaluate(stateBytes: bytes, rules: rules, at: now)
                })
            else { throw StoreError(code: .unreadable, message: "the state rebuilt for \(key) does not decode: please report this") }
            let before =
                hasOld
                ? try? old.withBlob(column) { bytes throws(CodecError) in
                    try Evaluation.evaluate(stateBytes: bytes, rules: previousRules ?? rules, at: now)
                } : nil
            if rulesChanged, let before, before != after { differs = true }
            let beforeActive = before?.activeEntitlements ?? []
            if collectDiff, beforeActive != after.activeEntitlements {
                report.diffs.append(ReplayDiff(customerKey: key, before: beforeActive, after: after.activeEntitlements))
            }
        }
        if differs {
            report.changed += 1
            changedKeys.append(key)
        }
        // Past the matched row: a row passed over later is not this customer's.
        if hasOld && !outOfOrder { oldHasRow = try oldInOrder.step() }
        if OperatorRecord.appUser(ofKey: key) == nil { report.customers += 1 }
        buffered.append((key, newBytes, lastSeq))
        if buffered.count >= chunkSize { try flush() }
    }

    /// Whether a customer's stored state is `rebuilt`, the state a replay made of the same
    /// events: the same bytes; or, stored before the event needs were kept, the rebuilt
    /// bytes without their last byte (``CustomerState/eventNeeds``); or, stored in an
    /// earlier format (operator records as JSON), the same once decoded and written again.
    /// A customer whose data did not change is not counted as changed after an upgrade.
    static func isRebuilt(stored: UnsafeRawBufferPointer, as rebuilt: [UInt8]) -> Bool {
        func sameBytes(_ stored: UnsafeRawBufferPointer) -> Bool {
            (stored.count == rebuilt.count || stored.count + 1 == rebuilt.count)
                && rebuilt.withUnsafeBytes { new in stored.count == 0 || memcmp(stored.baseAddress!, new.baseAddress!, stored.count) == 0 }
        }
        if sameBytes(stored) { return true }
        guard let format = stored.first, format != rebuilt.first, let state = try? StateCodec.decode(stored) else { return false }
        return StateCodec.encode(state).withUnsafeBytes(sameBytes)
    }

    /// Writes, in key order, the previous generation's state of a customer gathered for the
    /// end, where its own is written over it once reduced (``ReplayCustomer/holdsPlace``).
    /// The join does not step past the row: the next customer passes over it, and the
    /// customer's own comparison, out of order, looks it up.
    private func holdPlace(of key: CustomerKey) throws {
        while oldHasRow, let oldKey = oldInOrder.string(0), oldKey < key { try passOldRow() }
        guard oldHasRow, oldInOrder.string(0) == key else { return }
        heldPlaces.append(key)
        buffered.append((key, oldInOrder.withBlob(1) { Array($0) }, 0))
        if buffered.count >= chunkSize { try flush() }
    }

    /// Steps past a row of the previous generation no customer of the scan matched (yet).
    private func passOldRow() throws {
        let key = oldInOrder.string(0) ?? ""
        var active: [String] = []
        if collectDiff {
            active = (try? oldInOrder.withBlob(1) { bytes throws(CodecError) in
                try Evaluation.evaluate(stateBytes: bytes, rules: previousRules ?? rules, at: now)
            })?.activeEntitlements ?? []
        }
        passedOver.append((key, active))
        oldHasRow = try oldInOrder.step()
    }

    /// The previous generation's customers no longer in the log: changed, and removed in the diff.
    private func compareVanished() throws {
        while oldHasRow { try passOldRow() }
        for (key, active) in passedOver where !finishedOutOfOrder.contains(key) {
            report.changed += 1
            if collectDiff { report.diffs.append(ReplayDiff(customerKey: key, before: active, after: [], removed: true)) }
        }
    }

    // MARK: Write

    private func flush() throws {
        guard !buffered.isEmpty else { return }
        try writer.write(buffered)
        buffered.removeAll(keepingCapacity: true)
    }

    /// The last writes, the last progress, and the snapshot's count of events.
    private func complete() throws {
        try flush()
        try writer.finish()
        // A place held for a key that no gathered customer turned out to be (its rows all
        // went to others) is no customer's: taken away again.
        let untaken = heldPlaces.filter { !finishedOutOfOrder.contains($0) }
        if !untaken.isEmpty { try writer.remove(untaken) }
        // What is reported is the log's events, each once: those about no customer
        // (a TEST notification) have no facts, those filed under several keys several.
        report.events = total
        progress(ReplayProgress(eventsDone: total, eventsTotal: total, customersDone: report.customers))
    }
}

/// A chunk being reduced on other threads while the replay's thread goes on.
private final class BackgroundReduction: @unchecked Sendable {
    let chunk: ReplayChunk
    /// The chunk holds gathered customers, finished after the scan.
    let outOfOrder: Bool
    private var results: [ReplayChunk.Outcome] = []
    private let done = DispatchGroup()

    /// Starts reducing `chunk` on `thread` (whose `concurrentPerform` then uses every core).
    init(_ chunk: ReplayChunk, outOfOrder: Bool, rules: Rules, products: ProductsMet, on thread: WorkerThread) {
        self.chunk = chunk
        self.outOfOrder = outOfOrder
        done.enter()
        thread.submit {
            self.results = chunk.reduce(rules: rules, products: products)
            self.done.leave()
        }
    }

    /// The outcomes, once the reduction is over (waits for it).
    func outcomes() -> [ReplayChunk.Outcome] {
        done.wait()
        return results
    }
}

/// Writes a replay's new projections on a thread of its own, batch after batch
/// in the order given, each batch one transaction on the store's connection
/// (which nothing else uses while a replay scans).
private final class ProjectionWriter: @unchecked Sendable {
    private let store: EventStore
    private let generation: Int64
    private let rulesVersion: String
    private let thread = WorkerThread(name: "entitlements.replay.write")
    private let lock = NSLock()
    private var failure: (any Error)?
    /// Batches handed over and not yet written; at most two, so memory stays bounded.
    private let slots = DispatchSemaphore(value: 2)

    init(store: EventStore, generation: Int64, rulesVersion: String) {
        self.store = store
        self.generation = generation
        self.rulesVersion = rulesVersion
    }

    /// Queues `batch`; throws the error of an earlier batch, if one failed.
    func write(_ batch: [(CustomerKey, [UInt8], Int64)]) throws {
        try check()
        slots.wait()
        thread.submit {
            defer { self.slots.signal() }
            guard self.firstFailure == nil else { return }
            do {
                try self.store.connection.write(priority: .background) { () throws -> ((), Connection.Completion) in
                    for (key, bytes, seq) in batch {
                        try self.store.writeProjection(
                            key: key, stateBytes: bytes, generation: self.generation, rulesVersion: self.rulesVersion,
                            lastSeq: seq, table: .next)
                    }
                    return ((), .commit)
                }
            } catch {
                self.lock.lock()
                self.failure = error
                self.lock.unlock()
            }
        }
    }

    /// Removes the rows of `keys` from the generation, in one transaction on this
    /// thread (after ``finish()``: no batch is being written).
    func remove(_ keys: [CustomerKey]) throws {
        try store.connection.write(priority: .background) { () throws -> ((), Connection.Completion) in
            for key in keys { try store.deleteProjection(key: key, generation: generation, table: .next) }
            return ((), .commit)
        }
    }

    /// Waits until every batch is written; throws the first failure.
    func finish() throws {
        thread.drain()
        try check()
    }

    /// Waits for the writes queued, then ends the writing thread.
    func close() {
        thread.finish()
    }

    private var firstFailure: (any Error)? {
        lock.lock()
        defer { lock.unlock() }
        return failure
    }

    private func check() throws {
        if let failure = firstFailure { throw failure }
    }
}
