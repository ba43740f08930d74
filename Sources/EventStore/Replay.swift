import Dispatch
import EntitlementCore
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension EventStore {
    /// Rebuilds every projection from the log under `rules`.
    ///
    /// The new generation is built beside the current one, from one snapshot of
    /// the log, in chunks that leave the write lock free for ingest between them.
    /// The swap is one transaction that first applies the events other writers
    /// appended meanwhile, then makes the new generation current: a replay
    /// killed at any point leaves the previous state intact and queryable, and
    /// loses nothing ingested concurrently.
    ///
    /// The swap's transaction also records the change feed's differences at
    /// `now` (contract section 8): of every customer, cause `rules`, when the
    /// rules' content changed (cause `event` when the feed had not yet followed
    /// this database from its start); else of the customers whose state
    /// changed, cause `event`. Replaying the same events records nothing.
    public func replay(
        rules: Rules, rulesJSON: String, now: Int64, collectDiff: Bool, chunkSize: Int = 500,
        progress: (ReplayProgress) -> Void = { _ in }
    ) throws(StoreError) -> ReplayReport {
        try requireWritable()
        return try mapped { () throws -> ReplayReport in
            let (previous, next): (EngineState, Int64) = try connection.write { () throws -> ((EngineState, Int64), Connection.Completion) in
                let engine = try currentEngineState()
                // The previous replay's retired generation (or what a replay killed before
                // its swap was filling), and rows of other generations that builds before
                // `projections_next` existed wrote beside the current ones.
                try connection.execute("DELETE FROM projections_next")
                for sql in ["DELETE FROM projections WHERE generation < ?", "DELETE FROM projections WHERE generation > ?"] {
                    let clear = try connection.cached(sql)
                    try clear.bind(1, engine.generation)
                    try clear.step()
                }
                return ((engine, engine.generation + 1), .commit)
            }
            let previousRules: Rules? = previous.rulesJSON.isEmpty ? nil : try? Rules(jsonText: previous.rulesJSON)
            let rulesChanged = previousRules.map { $0 != rules } ?? false

            let reader = try Connection(path: path, mode: .readWrite)
            var report = ReplayReport(events: 0, customers: 0, changed: 0, diffs: [], caughtUp: 0, rulesVersion: rules.version)
            let productsMet = ProductsMet()
            var snapshotSeq: Int64 = 0
            // Customers whose stored state differs from the previous generation's.
            var changedKeys: [CustomerKey] = []
            // Who the customers are at the snapshot (contract section 5): each linked
            // originalTransactionId's appTransactionId.
            var snapshotLinks: [String: CustomerKey] = [:]
            try reader.read { () throws -> Void in
                snapshotSeq = try reader.scalarInt("SELECT coalesce(max(seq), 0) FROM events") ?? 0
                let identity = try ReplayIdentity(reader: reader)
                snapshotLinks = identity.links
                // The rows of customers made of more than one key (an `otid:` key merged
                // into its appTransactionId, conflicting links) are gathered here while the
                // scan goes on, and reduced at its end.
                var gathered = GatheredCustomers()
                let oldByKey = try reader.prepare("SELECT state FROM projections WHERE generation = ? AND customer_key = ?")
                let total = try reader.scalarInt("SELECT count(*) FROM event_facts") ?? 0
                let facts = try reader.prepare("SELECT customer_key, seq, facts FROM event_facts ORDER BY customer_key, seq")
                let oldInOrder = try reader.prepare(
                    "SELECT customer_key, state FROM projections WHERE generation = ? ORDER BY customer_key")
                try oldInOrder.bind(1, previous.generation)
                var oldHasRow = try oldInOrder.step()

                // Encoded states waiting for their write: each state is encoded once, for
                // the comparison with the previous generation and for the write alike.
                var buffered: [(CustomerKey, [UInt8], Int64)] = []
                buffered.reserveCapacity(chunkSize)

                // Rows of the previous generation the in-order join passed over: a customer
                // gathered and finished after the scan, or one with no facts left in the log
                // (events deleted behind the engine's back), which is a change the diff shows.
                var passedOver: [(key: CustomerKey, active: [String])] = []
                var finishedOutOfOrder: Set<CustomerKey> = []
                func passOldRow() throws {
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

                func finishCustomer(_ key: CustomerKey, _ lastSeq: Int64, _ newBytes: [UInt8], outOfOrder: Bool = false) throws {
                    // Merge-join with the previous generation, both ordered by key; a
                    // gathered customer (finished after the scan) looks its row up.
                    let old: Statement
                    let column: Int32
                    var oldRow: Bool
                    if outOfOrder {
                        old = oldByKey
                        column = 0
                        oldByKey.reset()
                        try oldByKey.bind(1, previous.generation)
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
                        let same = old.withBlob(column) { bytes in
                            bytes.count == newBytes.count
                                && newBytes.withUnsafeBytes { new in bytes.count == 0 || memcmp(bytes.baseAddress!, new.baseAddress!, bytes.count) == 0 }
                        }
                        differs = !same
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
                    report.customers += 1
                    buffered.append((key, newBytes, lastSeq))
                    if buffered.count >= chunkSize { try flush() }
                }

                // Writes go to a thread of their own, one transaction per batch, in order,
                // while this thread reads on; the write lock is free between batches.
                let writer = ProjectionWriter(store: self, generation: next, rulesVersion: rules.version)
                // However the scan ends, no write is still running when this scope is left.
                defer { writer.close() }
                func flush() throws {
                    guard !buffered.isEmpty else { return }
                    try writer.write(buffered)
                    buffered.removeAll(keepingCapacity: true)
                }

                // Rows are read here, whole customers at a time, into chunks. A full chunk's
                // reducers run in the background on every core (customers are independent)
                // while this thread finishes the chunk before it and reads the next: the
                // finishing goes customer by customer in key order, exactly as one thread
                // would (progress, comparison, diffs, writes).
                func finish(_ chunk: ReplayChunk, _ results: [ReplayChunk.Outcome], outOfOrder: Bool = false) throws {
                    for (customer, result) in zip(chunk.customers, results) {
                        var counted = customer.rows.count
                        var outcome: (Int64, [UInt8])? = nil
                        switch result {
                        case .reduced(let lastSeq, let bytes):
                            outcome = (lastSeq, bytes)
                        case .failed(let index, _), .needsRawJWS(let index):
                            counted = index
                        }
                        for _ in 0..<counted {
                            report.events += 1
                            if report.events & 0x3FFF == 0 {
                                progress(ReplayProgress(eventsDone: report.events, eventsTotal: total, customersDone: report.customers))
                            }
                        }
                        if outcome == nil {
                            if case .failed(_, let error) = result { throw error }
                            // A tie between two versions needs raw JWS from the log: this
                            // customer goes through the one-thread path, which loads them
                            // through the store's connection, once the writer has let go of it.
                            try writer.finish()
                            var state = CustomerState(key: customer.key)
                            var lastSeq: Int64 = 0
                            var interner = StringInterner(capacity: 16)
                            for (index, row) in customer.rows.enumerated() {
                                let event = try chunk.decode(row, interner: &interner).get()
                                try apply(event, to: &state, rules: rules)
                                lastSeq = max(lastSeq, row.seq)
                                if index >= counted {
                                    report.events += 1
                                    if report.events & 0x3FFF == 0 {
                                        progress(ReplayProgress(eventsDone: report.events, eventsTotal: total, customersDone: report.customers))
                                    }
                                }
                            }
                            var unknown = Set<String>()
                            state.insertProducts(notIn: rules, into: &unknown)
                            productsMet.add(unknown)
                            outcome = (lastSeq, StateCodec.encode(state))
                        }
                        try finishCustomer(customer.key, outcome!.0, outcome!.1, outOfOrder: outOfOrder)
                    }
                }

                var chunk = ReplayChunk()
                var inFlight: BackgroundReduction? = nil
                let reducer = WorkerThread(name: "entitlements.replay.reduce")
                defer { reducer.finish() }
                func handOver() throws {
                    let started = BackgroundReduction(chunk, rules: rules, products: productsMet, on: reducer)
                    chunk = ReplayChunk()
                    if let previous = inFlight { try finish(previous.chunk, previous.outcomes()) }
                    inFlight = started
                }

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
                            route = identity.route(key)
                            if case .alone = route {
                                if chunk.events >= ReplayChunk.events { try handOver() }
                                chunk.customers.append(ReplayCustomer(key: key))
                            }
                        }
                    }
                    switch route {
                    case .alone:
                        facts.withBlob(2) { bytes in chunk.append(seq: seq, facts: bytes) }
                    case .whole(let owner):
                        facts.withBlob(2) { bytes in gathered.append(seq: seq, facts: bytes, to: owner) }
                    case .byRow:
                        let key = currentKey!
                        facts.withBlob(2) { bytes in
                            gathered.append(seq: seq, facts: bytes, to: identity.owner(ofRow: bytes, seq: seq, filedUnder: key))
                        }
                    }
                }
                try handOver()
                if let last = inFlight { try finish(last.chunk, last.outcomes()) }
                if !gathered.chunk.customers.isEmpty {
                    let chunk = gathered.sorted()
                    try finish(chunk, chunk.reduce(rules: rules, products: productsMet), outOfOrder: true)
                }
                while oldHasRow { try passOldRow() }
                for (key, active) in passedOver where !finishedOutOfOrder.contains(key) {
                    report.changed += 1
                    if collectDiff { report.diffs.append(ReplayDiff(customerKey: key, before: active, after: [], removed: true)) }
                }
                try flush()
                try writer.finish()
                progress(ReplayProgress(eventsDone: report.events, eventsTotal: total, customersDone: report.customers))
                // What is reported is the log's events, each once: those about no customer
                // (a TEST notification) have no facts, those filed under several keys several.
                report.events = try reader.scalarInt("SELECT count(*) FROM events WHERE seq <= \(snapshotSeq)") ?? report.events
            }

            // The swap: catch up with what other writers appended, then switch generations.
            report.caughtUp = try connection.write { () throws -> (Int64, Connection.Completion) in
                let newer = try connection.prepare(
                    "SELECT f.customer_key, f.seq, f.facts FROM events e JOIN event_facts f ON f.customer_key = e.customer_key AND f.seq = e.seq WHERE e.seq > ? ORDER BY e.seq")
                try newer.bind(1, snapshotSeq)
                var events: [Event] = []
                var count: Int64 = 0
                while try newer.step() {
                    let seq = newer.int64(1)
                    events.append(try newer.withBlob(2) { bytes in try EventCodec.decode(bytes, seq: seq) })
                    count += 1
                }
                // Links those events changed since the snapshot merge or split customers of
                // the new generation as they did the current one.
                var changes = IdentityChanges()
                for event in events {
                    for claim in event.linkClaims where changes.before[claim.originalTransactionId] == nil {
                        let now = try link(of: claim.originalTransactionId)?.appTransactionId
                        let then = snapshotLinks[claim.originalTransactionId]
                        if now != then { changes.before[claim.originalTransactionId] = .some(then) }
                    }
                }
                var owners: [String: CustomerKey] = [:]
                var projected: [CustomerKey: CustomerState] = [:]
                _ = try project(
                    batch: events, changes: changes, generation: next, rules: rules, table: .next, owners: &owners, states: &projected)
                try connection.execute("DELETE FROM identity_rebuild_pending")
                // The new generation becomes `projections`; the previous one waits in
                // `projections_next` to be emptied.
                try connection.execute("ALTER TABLE projections RENAME TO projections_retired")
                try connection.execute("ALTER TABLE projections_next RENAME TO projections")
                try connection.execute("ALTER TABLE projections_retired RENAME TO projections_next")
                let swap = try connection.cached(
                    "UPDATE engine_state SET generation = ?, rules_version = ?, rules_json = ? WHERE id = 1")
                try swap.bind(1, next)
                try swap.bind(2, rules.version)
                try swap.bind(3, rulesJSON)
                try swap.step()
                // The change feed: what the new generation answers differently now.
                let feedComplete = try changeFeedComplete()
                if rulesChanged || !feedComplete {
                    try recordChangesOfEveryone(rules: rules, now: now, cause: rulesChanged ? .rules : .event)
                } else {
                    var keys = Set(changedKeys)
                    keys.formUnion(try affectedCustomers(batch: events, changes: changes, owners: &owners))
                    for key in keys.sorted() {
                        try recordChanges(of: key, state: try currentState(of: key), rules: rules, now: now, cause: .event)
                    }
                    try recordChangesOfVanished(rules: rules, now: now, cause: .event)
                }
                // The lifecycle feed: events of the data the new generation knows that are not recorded yet.
                try recordLifecycleAfterReplay(
                    keys: Set(changedKeys).union(try affectedCustomers(batch: events, changes: changes, owners: &owners)), rules: rules,
                    now: now)
                // Every event appended since the snapshot, facts or not.
                let appended = try connection.scalarInt("SELECT count(*) FROM events WHERE seq > \(snapshotSeq)") ?? count
                return (appended, .commit)
            }
            report.events += report.caughtUp
            // The previous generation, now in `projections_next`, is garbage that nothing
            // reads: the next replay empties it as a whole table before it fills that table
            // again (so its pages are freed just before that replay writes as many), and
            // this one returns as soon as the swap is committed.
            report.unknownProducts = productsMet.sorted
            return report
        }
    }
}

/// Whole customers' facts rows, read for a replay, and their reduction off the reading thread.
struct ReplayChunk: Sendable {
    /// The facts of every row, one after the other.
    var bytes: [UInt8] = []
    var customers: [ReplayCustomer] = []
    var events = 0

    /// Events read before a chunk is reduced.
    static let events = 8_192

    mutating func append(seq: Int64, facts: UnsafeRawBufferPointer) {
        customers[customers.count - 1].rows.append(ReplayCustomer.Row(seq: seq, start: bytes.count, count: facts.count))
        bytes.append(contentsOf: facts)
        events += 1
    }

    func decode(_ row: ReplayCustomer.Row, interner: inout StringInterner) -> Result<Event, CodecError> {
        bytes.withUnsafeBytes { all in
            do throws(CodecError) {
                return .success(
                    try EventCodec.decode(
                        UnsafeRawBufferPointer(rebasing: all[row.start..<(row.start + row.count)]), seq: row.seq,
                        interner: &interner))
            } catch {
                return .failure(error)
            }
        }
    }

    enum Outcome: Sendable {
        /// The last event's `seq` and the encoded state (the state itself is
        /// released on the lane that built it, not on the reading thread).
        case reduced(Int64, [UInt8])
        /// The row at `index` did not decode.
        case failed(index: Int, error: CodecError)
        /// The row at `index` ties two versions that only their raw JWS can order.
        case needsRawJWS(index: Int)
    }

    /// Decodes and applies each customer's events, on as many threads as there are cores.
    func reduce(rules: Rules, products: ProductsMet) -> [Outcome] {
        let lanes = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8, customers.count / 16))
        if lanes == 1 {
            var interner = StringInterner()
            var unknown = Set<String>()
            defer { products.add(unknown) }
            return customers.map { reduce($0, rules: rules, interner: &interner, unknownProducts: &unknown) }
        }
        let results = OutcomeSlots(count: customers.count)
        DispatchQueue.concurrentPerform(iterations: lanes) { lane in
            var interner = StringInterner()
            var unknown = Set<String>()
            var index = lane
            while index < customers.count {
                results.set(index, reduce(customers[index], rules: rules, interner: &interner, unknownProducts: &unknown))
                index += lanes
            }
            products.add(unknown)
        }
        return results.values()
    }

    func reduce(
        _ customer: ReplayCustomer, rules: Rules, interner: inout StringInterner, unknownProducts: inout Set<String>
    ) -> Outcome {
        var state = CustomerState(key: customer.key)
        // At most one transaction per event: the dictionary never grows in steps.
        state.transactions.reserveCapacity(customer.rows.count)
        var lastSeq: Int64 = 0
        let failure: Outcome? = bytes.withUnsafeBytes { all in
            for (index, row) in customer.rows.enumerated() {
                do throws(StoredFactsFailure) {
                    try state.apply(
                        facts: UnsafeRawBufferPointer(rebasing: all[row.start..<(row.start + row.count)]), seq: row.seq,
                        rules: rules, interner: &interner)
                } catch {
                    switch error {
                    case .undecodable(let error): return .failed(index: index, error: error)
                    case .missingRawJWS: return .needsRawJWS(index: index)
                    }
                }
                lastSeq = max(lastSeq, row.seq)
            }
            return nil
        }
        if let failure { return failure }
        state.insertProducts(notIn: rules, into: &unknownProducts)
        return .reduced(lastSeq, StateCodec.encode(state))
    }
}

/// The products that reducing met and the rules do not name, from every lane.
final class ProductsMet: Sendable {
    private let met = Mutex(Set<String>())

    func add(_ products: Set<String>) {
        guard !products.isEmpty else { return }
        met.withLock { $0.formUnion(products) }
    }

    var sorted: [String] { met.withLock { $0.sorted() } }
}

/// A chunk being reduced on other threads while the replay's thread goes on.
private final class BackgroundReduction: @unchecked Sendable {
    let chunk: ReplayChunk
    private var results: [ReplayChunk.Outcome] = []
    private let done = DispatchGroup()

    /// Starts reducing `chunk` on `thread` (whose `concurrentPerform` then uses every core).
    init(_ chunk: ReplayChunk, rules: Rules, products: ProductsMet, on thread: WorkerThread) {
        self.chunk = chunk
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

/// One customer's rows in a ``ReplayChunk``.
struct ReplayCustomer: Sendable {
    struct Row: Sendable {
        var seq: Int64
        var start: Int
        var count: Int
    }

    var key: CustomerKey
    var rows: [Row] = []
}

/// Result slots that concurrent lanes fill, each slot written by one lane only.
private final class OutcomeSlots: @unchecked Sendable {
    private var slots: [ReplayChunk.Outcome?]
    private let lock = NSLock()

    init(count: Int) { slots = Array(repeating: nil, count: count) }

    func set(_ index: Int, _ outcome: ReplayChunk.Outcome) {
        lock.lock()
        slots[index] = outcome
        lock.unlock()
    }

    func values() -> [ReplayChunk.Outcome] { slots.map { $0! } }
}

/// Who the customers are at a replay's snapshot, and where each key's rows go.
struct ReplayIdentity {
    /// Each linked originalTransactionId's appTransactionId.
    var links: [String: CustomerKey] = [:]
    /// appTransactionIds whose rows come from more than their own key, or whose
    /// own key holds rows of another customer.
    var gathered = Set<CustomerKey>()

    /// Where the rows filed under one key go.
    enum Route {
        /// The key is a customer of its own, whole: the rows stream as they are.
        case alone
        /// Every row belongs to this (gathered) customer.
        case whole(CustomerKey)
        /// Each row goes to its owner (decoded).
        case byRow
    }

    init(reader: Connection) throws {
        let linkRows = try reader.prepare("SELECT original_transaction_id, app_transaction_id FROM customer_links")
        while try linkRows.step() { links[linkRows.string(0) ?? ""] = linkRows.string(1) ?? "" }
        let conflicts = try reader.prepare("SELECT original_transaction_id, app_transaction_id FROM link_conflicts")
        while try conflicts.step() {
            gathered.insert(conflicts.string(1) ?? "")
            if let winner = links[conflicts.string(0) ?? ""] { gathered.insert(winner) }
        }
        // Keys otid:X of linked X (legacy data without appTransactionId): their rows join X's customer.
        let otidKeys = try reader.prepare(
            "SELECT DISTINCT customer_key FROM event_facts WHERE customer_key >= 'otid:' AND customer_key < 'otid;'")
        while try otidKeys.step() {
            let key = otidKeys.string(0) ?? ""
            if let winner = links[String(key.dropFirst(5))] { gathered.insert(winner) }
        }
    }

    func route(_ key: CustomerKey) -> Route {
        if key.hasPrefix("otid:") {
            if let winner = links[String(key.dropFirst(5))] { return .whole(winner) }
            return .alone
        }
        return gathered.contains(key) ? .byRow : .alone
    }

    /// The customer a row filed under `key` belongs to (its own key when it does not decode:
    /// the reducer then reports the damage).
    func owner(ofRow bytes: UnsafeRawBufferPointer, seq: Int64, filedUnder key: CustomerKey) -> CustomerKey {
        guard let event = try? EventCodec.decode(bytes, seq: seq), let otid = event.originalTransactionId else { return key }
        return links[otid] ?? "otid:" + otid
    }
}

/// Rows of gathered customers, collected during a replay's scan.
struct GatheredCustomers {
    var chunk = ReplayChunk()
    private var index: [CustomerKey: Int] = [:]

    mutating func append(seq: Int64, facts: UnsafeRawBufferPointer, to key: CustomerKey) {
        let position: Int
        if let known = index[key] {
            position = known
        } else {
            position = chunk.customers.count
            index[key] = position
            chunk.customers.append(ReplayCustomer(key: key))
        }
        chunk.customers[position].rows.append(ReplayCustomer.Row(seq: seq, start: chunk.bytes.count, count: facts.count))
        chunk.bytes.append(contentsOf: facts)
        chunk.events += 1
    }

    /// The chunk with its customers in key order, each one's rows in `seq` order.
    func sorted() -> ReplayChunk {
        var sorted = chunk
        sorted.customers.sort { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        for index in sorted.customers.indices { sorted.customers[index].rows.sort { $0.seq < $1.seq } }
        return sorted
    }
}
