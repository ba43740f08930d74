import Dispatch
import EntitlementCore
import Foundation
import Synchronization

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
    /// `now` (specification section 8): of every customer, cause `rules`, when the
    /// rules' content changed (cause `event` when the feed had not yet followed
    /// this database from its start); else of the customers whose state
    /// changed, cause `event`. Replaying the same events records nothing.
    ///
    /// The steps: ``startGeneration()`` (clear the table the new generation fills),
    /// ``ReplayScan`` (read the snapshot, reduce its customers in lanes, compare each with
    /// the previous generation, write), then ``catchUpAndSwap(_:next:rules:rulesJSON:now:rulesChanged:products:)``.
    public func replay(
        rules: Rules, rulesJSON: String, now: Int64, collectDiff: Bool, chunkSize: Int = 500,
        progress: (ReplayProgress) -> Void = { _ in }
    ) throws(StoreError) -> ReplayReport {
        try requireWritable()
        return try mapped { () throws -> ReplayReport in
            // Emptying the retired generation reads each of its pages once, and the new one
            // is written in key order, each batch at the end of its table: neither touches a
            // page again, as the ingest's spread of leaves does. The writer's page cache is
            // kept small meanwhile, so that the replay's memory does not grow with the
            // customers (Benchmarks/README.md).
            let writerCache = try connection.scalarInt("PRAGMA cache_size") ?? -Int64(Self.writerCacheKibibytes)
            try connection.execute("PRAGMA cache_size = -\(Self.replayWriterCacheKibibytes)")
            defer { try? connection.execute("PRAGMA cache_size = \(writerCache)") }
            let (previous, next) = try startGeneration()
            // The new generation's batches answer no one, and until the swap the previous
            // generation is current: they commit without a sync each. The swap's commit
            // syncs the log (synchronous = FULL again), and with it every batch before it.
            try connection.execute("PRAGMA synchronous = NORMAL")
            defer { try? connection.execute("PRAGMA synchronous = FULL") }
            let previousRules: Rules? = previous.rulesJSON.isEmpty ? nil : try? Rules(jsonText: previous.rulesJSON)
            let rulesChanged = previousRules.map { $0 != rules } ?? false
            let productsMet = ProductsMet()
            // The swap runs while the scan's snapshot is still open: the catch-up compares
            // the links of what it applies with the snapshot's.
            var report = try withoutActuallyEscaping(progress) { progress in
                try ReplayScan.run(
                    store: self, rules: rules, previousRules: previousRules, rulesChanged: rulesChanged,
                    previousGeneration: previous.generation, next: next, now: now, collectDiff: collectDiff, chunkSize: chunkSize,
                    products: productsMet, progress: progress
                ) { scanned in
                    var report = scanned.report
                    try connection.execute("PRAGMA synchronous = FULL")
                    report.caughtUp = try catchUpAndSwap(
                        scanned, next: next, rules: rules, rulesJSON: rulesJSON, now: now, rulesChanged: rulesChanged,
                        products: productsMet)
                    return report
                }
            }
            report.events += report.caughtUp
            // The previous generation, now in `projections_next`, is garbage that nothing
            // reads: the next replay empties it as a whole table before it fills that table
            // again (so its pages are freed just before that replay writes as many), and
            // this one returns as soon as the swap is committed.
            report.productsSeen = productsMet.sorted
            report.unknownProducts = report.productsSeen.filter { rules.products[$0] == nil }
            return report
        }
    }

    /// The most the writer's connection keeps of the database's pages while a replay
    /// writes its new generation, in KiB: a batch of states is a few dozen pages.
    package static let replayWriterCacheKibibytes = 8_192

    /// The current engine state and the generation the replay builds (the next one), with
    /// `projections_next` emptied for it.
    private func startGeneration() throws -> (EngineState, Int64) {
        try connection.write { () throws -> ((EngineState, Int64), Connection.Completion) in
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
    }

    /// The swap, one transaction: catch up with what other writers appended since the
    /// snapshot, switch generations, record the change feed's differences. Returns how
    /// many events were appended since the snapshot (facts or not).
    private func catchUpAndSwap(
        _ scanned: ReplayScan.Result, next: Int64, rules: Rules, rulesJSON: String, now: Int64, rulesChanged: Bool,
        products: ProductsMet
    ) throws -> Int64 {
        try connection.write { () throws -> (Int64, Connection.Completion) in
            let (events, count) = try events(after: scanned.snapshotSeq)
            let changes = try identityChanges(in: events, since: scanned.snapshotLinks)
            var owners: [String: CustomerKey] = [:]
            var projected: [CustomerKey: CustomerState] = [:]
            _ = try project(
                batch: events, changes: changes, generation: next, rules: rules, table: .next, owners: &owners, states: &projected)
            // The products of what was caught up count among those the log names.
            var met = Set<String>()
            for state in projected.values { state.insertProducts(into: &met) }
            products.add(met)
            try connection.execute("DELETE FROM identity_rebuild_pending")
            try swapGenerations(to: next, rules: rules, rulesJSON: rulesJSON)
            try recordReplayChanges(
                changedKeys: scanned.changedKeys, events: events, changes: changes, owners: &owners, rules: rules, now: now,
                rulesChanged: rulesChanged)
            // The lifecycle feed: events of the data the new generation knows that are not recorded yet.
            try recordLifecycleAfterReplay(
                keys: Set(scanned.changedKeys).union(try affectedCustomers(batch: events, changes: changes, owners: &owners)),
                rules: rules, now: now)
            // Every event appended since the snapshot, facts or not.
            let appended = try connection.scalarInt("SELECT count(*) FROM events WHERE seq > \(scanned.snapshotSeq)") ?? count
            return (appended, .commit)
        }
    }

    /// The events with facts appended after `snapshotSeq`, in order, and how many rows they are.
    private func events(after snapshotSeq: Int64) throws -> ([Event], Int64) {
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
        return (events, count)
    }

    /// Links those events changed since the snapshot merge or split customers of
    /// the new generation as they did the current one.
    private func identityChanges(in events: [Event], since snapshotLinks: ReplayIdentity) throws -> IdentityChanges {
        var changes = IdentityChanges()
        for event in events {
            for claim in event.linkClaims where changes.before[claim.originalTransactionId] == nil {
                let now = try link(of: claim.originalTransactionId)?.appTransactionId
                let then = try snapshotLinks.link(of: claim.originalTransactionId)
                if now != then { changes.before[claim.originalTransactionId] = .some(then) }
            }
        }
        return changes
    }

    /// The new generation becomes `projections`; the previous one waits in
    /// `projections_next` to be emptied.
    private func swapGenerations(to next: Int64, rules: Rules, rulesJSON: String) throws {
        try connection.execute("ALTER TABLE projections RENAME TO projections_retired")
        try connection.execute("ALTER TABLE projections_next RENAME TO projections")
        try connection.execute("ALTER TABLE projections_retired RENAME TO projections_next")
        let swap = try connection.cached(
            "UPDATE engine_state SET generation = ?, rules_version = ?, rules_json = ? WHERE id = 1")
        try swap.bind(1, next)
        try swap.bind(2, rules.version)
        try swap.bind(3, rulesJSON)
        try swap.step()
    }

    /// The change feed: what the new generation answers differently now.
    private func recordReplayChanges(
        changedKeys: [CustomerKey], events: [Event], changes: IdentityChanges, owners: inout [String: CustomerKey], rules: Rules,
        now: Int64, rulesChanged: Bool
    ) throws {
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

    init() {}

    /// An empty chunk with room for as many bytes, customers and events as `previous` holds.
    init(reserving previous: ReplayChunk) {
        bytes.reserveCapacity(previous.bytes.count + previous.bytes.count / 8)
        customers.reserveCapacity(previous.customers.count + previous.customers.count / 8)
    }

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
            var met = Set<String>()
            defer { products.add(met) }
            return customers.map { reduce($0, rules: rules, interner: &interner, productsMet: &met) }
        }
        let results = OutcomeSlots(count: customers.count)
        DispatchQueue.concurrentPerform(iterations: lanes) { lane in
            var interner = StringInterner()
            var met = Set<String>()
            var index = lane
            while index < customers.count {
                results.set(index, reduce(customers[index], rules: rules, interner: &interner, productsMet: &met))
                index += lanes
            }
            products.add(met)
        }
        return results.values()
    }

    func reduce(
        _ customer: ReplayCustomer, rules: Rules, interner: inout StringInterner, productsMet: inout Set<String>
    ) -> Outcome {
        var state = CustomerState(key: customer.key)
        // At most one transaction per event: the dictionary never grows in steps.
        state.transactions.reserveCapacity(customer.rows.count)
        let failure: Outcome? = bytes.withUnsafeBytes { all in
            do throws(StoredFactsRowFailure) {
                try state.apply(facts: all, rows: customer.rows, rules: rules, interner: &interner)
            } catch {
                switch error.failure {
                case .undecodable(let codecError): return .failed(index: error.index, error: codecError)
                case .missingRawJWS: return .needsRawJWS(index: error.index)
                }
            }
            return nil
        }
        if let failure { return failure }
        state.insertProducts(into: &productsMet)
        return .reduced(customer.rows.reduce(0) { max($0, $1.seq) }, StateCodec.encode(state))
    }
}

/// The products that reducing met, from every lane.
final class ProductsMet: Sendable {
    private let met = Mutex(Set<String>())

    func add(_ products: Set<String>) {
        guard !products.isEmpty else { return }
        met.withLock { $0.formUnion(products) }
    }

    var sorted: [String] { met.withLock { $0.sorted() } }
}

/// One customer's rows in a ``ReplayChunk``.
struct ReplayCustomer: Sendable {
    /// An event's `seq` and where its facts are in the chunk's bytes.
    typealias Row = StoredFactsRow

    var key: CustomerKey
    var rows: [Row] = []
    /// A customer gathered for the end (made of several keys), met here at its own key:
    /// its row is written in key order with the previous generation's state, holding its
    /// place in the table until its own state is written over it (see
    /// ``ReplayScan``): written only at the end, a row numbered by its customer would go
    /// into the middle of full leaves and split them.
    var holdsPlace = false
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
///
/// The links are looked up in the snapshot's read transaction, key by key, as the
/// scan needs them: nothing held grows with the number of customers.
struct ReplayIdentity {
    /// appTransactionIds whose rows come from more than their own key, or whose
    /// own key holds rows of another customer.
    var gathered = Set<CustomerKey>()
    private let linkOf: Statement

    /// Where the rows filed under one key go.
    enum Route {
        /// The key is a customer of its own, whole: the rows stream as they are.
        case alone
        /// Every row belongs to this (gathered) customer.
        case whole(CustomerKey)
        /// Each row goes to its owner (decoded).
        case byRow
    }

    /// Reads who the customers are through `reader`, which must stay in the snapshot's
    /// read transaction as long as this is used.
    init(reader: Connection) throws {
        linkOf = try reader.prepare("SELECT app_transaction_id FROM customer_links WHERE original_transaction_id = ?")
        let conflicts = try reader.prepare("SELECT original_transaction_id, app_transaction_id FROM link_conflicts")
        while try conflicts.step() {
            gathered.insert(conflicts.string(1) ?? "")
            gathered.insert(try owner(ofOriginalTransactionId: conflicts.string(0) ?? ""))
        }
        // Keys otid:X of linked X (legacy data without appTransactionId, migrated
        // subscriptions): their rows join X's customer.
        let otidKeys = try reader.prepare(
            "SELECT DISTINCT customer_key FROM event_facts WHERE customer_key >= 'otid:' AND customer_key < 'otid;'")
        while try otidKeys.step() {
            let key = otidKeys.string(0) ?? ""
            let owner = try owner(ofOriginalTransactionId: String(key.dropFirst(5)))
            if owner != key { gathered.insert(owner) }
        }
    }

    /// The appTransactionId `originalTransactionId` was linked to at the snapshot.
    func link(of originalTransactionId: String) throws -> CustomerKey? {
        linkOf.reset()
        defer { linkOf.reset() }
        try linkOf.bind(1, originalTransactionId)
        return try linkOf.step() ? linkOf.string(0) ?? "" : nil
    }

    /// The customer of `originalTransactionId` at the snapshot.
    func owner(ofOriginalTransactionId otid: String) throws -> CustomerKey {
        try CustomerLinks.owner(ofOriginalTransactionId: otid) { try link(of: $0) }
    }

    func route(_ key: CustomerKey) throws -> Route {
        if key.hasPrefix("otid:") {
            let owner = try owner(ofOriginalTransactionId: String(key.dropFirst(5)))
            if owner != key || gathered.contains(key) { return .whole(owner) }
            return .alone
        }
        return gathered.contains(key) ? .byRow : .alone
    }

    /// The customer a row filed under `key` belongs to (its own key when it does not decode:
    /// the reducer then reports the damage).
    func owner(ofRow bytes: UnsafeRawBufferPointer, seq: Int64, filedUnder key: CustomerKey) throws -> CustomerKey {
        guard let event = try? EventCodec.decode(bytes, seq: seq), let otid = event.originalTransactionId else { return key }
        return try owner(ofOriginalTransactionId: otid)
    }
}

/// Customers made of more than one key (an `otid:` key merged into its appTransactionId,
/// conflicting links), collected during a replay's scan: which rows each one takes, by
/// the key they are filed under and their `seq`, not the rows themselves. Their facts are
/// read again from the scan's snapshot once the scan is over, a chunk of customers at a
/// time, so that what is held meanwhile is 16 bytes a row whatever the facts' size.
struct GatheredCustomers {
    private struct Row {
        var owner: Int32
        var filedUnder: Int32
        var seq: Int64
    }

    private var rows: [Row] = []
    private var owners = KeyNumbers()
    private var filedKeys = KeyNumbers()

    mutating func append(seq: Int64, filedUnder key: CustomerKey, to owner: CustomerKey) {
        rows.append(Row(owner: owners.number(of: owner), filedUnder: filedKeys.number(of: key), seq: seq))
    }

    /// Reads the gathered customers' rows through `reader` (in the read transaction whose
    /// snapshot they were found in) into chunks of whole customers, in key order, each
    /// one's rows in `seq` order, and hands each chunk to `body` once it holds at least
    /// `chunkEvents` events, the last one whatever it holds. What was gathered is let go of.
    mutating func read(from reader: Connection, chunkEvents: Int = ReplayChunk.events, _ body: (ReplayChunk) throws -> Void) throws {
        defer { self = GatheredCustomers() }
        guard !rows.isEmpty else { return }
        let facts = try reader.prepare("SELECT seq, facts FROM event_facts WHERE customer_key = ? AND seq BETWEEN ? AND ? ORDER BY seq")
        // Customers in key order, then each one's rows by the key they are filed under and
        // `seq`: one range of one key read per customer and key.
        let order = owners.keys.indices.sorted { owners.keys[$0].utf8.lexicographicallyPrecedes(owners.keys[$1].utf8) }
        var rank = [Int32](repeating: 0, count: order.count)
        for (position, owner) in order.enumerated() { rank[owner] = Int32(position) }
        rows.sort { ($0.owner == $1.owner ? ($0.filedUnder, $0.seq) < ($1.filedUnder, $1.seq) : rank[Int($0.owner)] < rank[Int($1.owner)]) }
        var chunk = ReplayChunk()
        var index = 0
        while index < rows.count {
            let owner = rows[index].owner
            if chunk.events >= chunkEvents {
                try body(chunk)
                chunk = ReplayChunk(reserving: chunk)
            }
            chunk.customers.append(ReplayCustomer(key: owners.keys[Int(owner)]))
            while index < rows.count && rows[index].owner == owner {
                let filedUnder = rows[index].filedUnder
                var end = index
                while end < rows.count && rows[end].owner == owner && rows[end].filedUnder == filedUnder { end += 1 }
                try read(rows[index..<end], filedUnder: filedKeys.keys[Int(filedUnder)], through: facts, into: &chunk)
                index = end
            }
            chunk.customers[chunk.customers.count - 1].rows.sort { $0.seq < $1.seq }
        }
        try body(chunk)
    }

    /// Appends to the last customer of `chunk` the rows of `key` whose `seq` is in `wanted` (in `seq` order).
    private func read(_ wanted: ArraySlice<Row>, filedUnder key: CustomerKey, through facts: Statement, into chunk: inout ReplayChunk) throws {
        facts.reset()
        defer { facts.reset() }
        try facts.bind(1, key)
        try facts.bind(2, wanted.first!.seq)
        try facts.bind(3, wanted.last!.seq)
        var next = wanted.startIndex
        while next < wanted.endIndex, try facts.step() {
            let seq = facts.int64(0)
            guard seq == wanted[next].seq else { continue }
            facts.withBlob(1) { bytes in chunk.append(seq: seq, facts: bytes) }
            next += 1
        }
        guard next == wanted.endIndex else {
            throw StoreError(code: .corrupt, message: "the facts of event \(wanted[next].seq) under \(key) vanished during a replay's read transaction")
        }
    }
}

/// Keys numbered in the order they were first met.
private struct KeyNumbers {
    private(set) var keys: [CustomerKey] = []
    private var numbers: [CustomerKey: Int32] = [:]

    mutating func number(of key: CustomerKey) -> Int32 {
        if let known = numbers[key] { return known }
        let number = Int32(keys.count)
        numbers[key] = number
        keys.append(key)
        return number
    }
}
