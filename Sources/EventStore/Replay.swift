import EntitlementCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Progress of a replay, reported every few thousand events.
public struct ReplayProgress: Sendable {
    public var eventsDone: Int64
    public var eventsTotal: Int64
    public var customersDone: Int64
}

/// One customer whose active entitlements (at the replay's `now`) differ between
/// the previous projection under the previous rules and the rebuilt one.
public struct ReplayDiff: Sendable, Hashable {
    public var customerKey: CustomerKey
    public var before: [String]
    public var after: [String]

    public init(customerKey: CustomerKey, before: [String], after: [String]) {
        self.customerKey = customerKey
        self.before = before
        self.after = after
    }
}

/// What a replay did.
public struct ReplayReport: Sendable {
    /// Events replayed from the snapshot.
    public var events: Int64
    /// Customers rebuilt.
    public var customers: Int64
    /// Customers whose state differs from what was stored before: their stored
    /// facts differ, or their answer at `now` differs under the new rules.
    public var changed: Int64
    /// Customers whose active entitlements at `now` changed (when asked for).
    public var diffs: [ReplayDiff]
    /// Events appended by other writers while the replay ran, applied before the swap.
    public var caughtUp: Int64
    public var rulesVersion: String
}

extension EventStore {
    /// Rebuilds every projection from the log under `rules`.
    ///
    /// The new generation is built beside the current one, from one snapshot of
    /// the log, in chunks that leave the write lock free for ingest between them.
    /// The swap is one transaction that first applies the events other writers
    /// appended meanwhile, then makes the new generation current: a replay
    /// killed at any point leaves the previous state intact and queryable, and
    /// loses nothing ingested concurrently.
    public func replay(
        rules: Rules, rulesJSON: String, now: Int64, collectDiff: Bool, chunkSize: Int = 2_000,
        progress: (ReplayProgress) -> Void = { _ in }
    ) throws(StoreError) -> ReplayReport {
        try mapped { () throws -> ReplayReport in
            let (previous, next): (EngineState, Int64) = try connection.write { () throws -> ((EngineState, Int64), Connection.Completion) in
                let engine = try currentEngineState()
                // Leftovers of a replay killed before its swap.
                let clear = try connection.cached("DELETE FROM projections WHERE generation <> ?")
                try clear.bind(1, engine.generation)
                try clear.step()
                return ((engine, engine.generation + 1), .commit)
            }
            let previousRules: Rules? = previous.rulesJSON.isEmpty ? nil : try? Rules(jsonText: previous.rulesJSON)
            let rulesChanged = previousRules.map { $0 != rules } ?? false

            let reader = try Connection(path: path, mode: .readWrite)
            var report = ReplayReport(events: 0, customers: 0, changed: 0, diffs: [], caughtUp: 0, rulesVersion: rules.version)
            var snapshotSeq: Int64 = 0
            try reader.read { () throws -> Void in
                snapshotSeq = try reader.scalarInt("SELECT coalesce(max(seq), 0) FROM events") ?? 0
                let total = try reader.scalarInt("SELECT count(*) FROM event_facts") ?? 0
                let facts = try reader.prepare("SELECT customer_key, seq, facts FROM event_facts ORDER BY customer_key, seq")
                let old = try reader.prepare(
                    "SELECT customer_key, state FROM projections WHERE generation = ? ORDER BY customer_key")
                try old.bind(1, previous.generation)
                var oldHasRow = try old.step()

                var currentKey: CustomerKey? = nil
                var state = CustomerState(key: "")
                var lastSeq: Int64 = 0
                // Encoded states waiting for their write: each state is encoded once, for
                // the comparison with the previous generation and for the write alike.
                var buffered: [(CustomerKey, [UInt8], Int64)] = []
                buffered.reserveCapacity(chunkSize)

                func finishCustomer() throws {
                    guard let key = currentKey else { return }
                    let newBytes = StateCodec.encode(state)
                    // Merge-join with the previous generation, both ordered by key.
                    while oldHasRow, let oldKey = old.string(0), oldKey < key { oldHasRow = try old.step() }
                    var oldState: CustomerState? = nil
                    var differs = true
                    if oldHasRow, old.string(0) == key {
                        let same = old.withBlob(1) { bytes in
                            bytes.count == newBytes.count
                                && newBytes.withUnsafeBytes { new in bytes.count == 0 || memcmp(bytes.baseAddress!, new.baseAddress!, bytes.count) == 0 }
                        }
                        differs = !same
                        if rulesChanged || collectDiff || differs {
                            oldState = try? old.withBlob(1) { bytes in try StateCodec.decode(bytes) }
                        }
                    }
                    var entitlementsChanged = false
                    if collectDiff || (rulesChanged && !differs) {
                        let after = Evaluation.evaluate(state, rules: rules, at: now)
                        let before = oldState.map { Evaluation.evaluate($0, rules: previousRules ?? rules, at: now) }
                        if rulesChanged, let before, before != after { differs = true }
                        let beforeActive = before?.activeEntitlements ?? []
                        if collectDiff, beforeActive != after.activeEntitlements {
                            entitlementsChanged = true
                            report.diffs.append(ReplayDiff(customerKey: key, before: beforeActive, after: after.activeEntitlements))
                        }
                    }
                    _ = entitlementsChanged
                    if differs { report.changed += 1 }
                    report.customers += 1
                    buffered.append((key, newBytes, lastSeq))
                    if buffered.count >= chunkSize { try flush() }
                }

                func flush() throws {
                    guard !buffered.isEmpty else { return }
                    try connection.write { () throws -> ((), Connection.Completion) in
                        for (key, bytes, seq) in buffered {
                            try writeProjection(key: key, stateBytes: bytes, generation: next, rulesVersion: rules.version, lastSeq: seq)
                        }
                        return ((), .commit)
                    }
                    buffered.removeAll(keepingCapacity: true)
                }

                while try facts.step() {
                    let seq = facts.int64(1)
                    if seq > snapshotSeq { continue }
                    // The same customer as the row before: compared in place, no String made.
                    if currentKey == nil || !facts.text(0, equals: currentKey!) {
                        let key = facts.string(0) ?? ""
                        if key != currentKey {
                            try finishCustomer()
                            currentKey = key
                            state = CustomerState(key: key)
                            lastSeq = 0
                        }
                    }
                    let event = try facts.withBlob(2) { bytes in try EventCodec.decode(bytes, seq: seq) }
                    try apply(event, to: &state, rules: rules)
                    lastSeq = max(lastSeq, seq)
                    report.events += 1
                    if report.events & 0x3FFF == 0 {
                        progress(ReplayProgress(eventsDone: report.events, eventsTotal: total, customersDone: report.customers))
                    }
                }
                try finishCustomer()
                try flush()
                progress(ReplayProgress(eventsDone: report.events, eventsTotal: total, customersDone: report.customers))
            }

            // The swap: catch up with what other writers appended, then switch generations.
            report.caughtUp = try connection.write { () throws -> (Int64, Connection.Completion) in
                let newer = try connection.prepare(
                    "SELECT f.customer_key, f.seq, f.facts FROM events e JOIN event_facts f ON f.customer_key = e.customer_key AND f.seq = e.seq WHERE e.seq > ? ORDER BY e.seq")
                try newer.bind(1, snapshotSeq)
                var byCustomer: [CustomerKey: [Event]] = [:]
                var order: [CustomerKey] = []
                var count: Int64 = 0
                while try newer.step() {
                    let key = newer.string(0) ?? ""
                    let seq = newer.int64(1)
                    let event = try newer.withBlob(2) { bytes in try EventCodec.decode(bytes, seq: seq) }
                    if byCustomer[key] == nil { order.append(key) }
                    byCustomer[key, default: []].append(event)
                    count += 1
                }
                for key in order {
                    try project(key: key, events: byCustomer[key] ?? [], generation: next, rules: rules)
                }
                let swap = try connection.cached(
                    "UPDATE engine_state SET generation = ?, rules_version = ?, rules_json = ? WHERE id = 1")
                try swap.bind(1, next)
                try swap.bind(2, rules.version)
                try swap.bind(3, rulesJSON)
                try swap.step()
                return (count, .commit)
            }
            report.events += report.caughtUp
            // The previous generation is garbage now; queries read the current one only.
            try connection.write { () throws -> ((), Connection.Completion) in
                let drop = try connection.cached("DELETE FROM projections WHERE generation <> ?")
                try drop.bind(1, next)
                try drop.step()
                return ((), .commit)
            }
            return report
        }
    }
}
