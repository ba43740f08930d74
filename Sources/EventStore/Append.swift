import EntitlementCore

/// What happened to one item of a batch.
public enum AppendOutcome: Sendable, Hashable {
    case appended(eventId: String, kind: EventKind, customerKey: CustomerKey?, seq: Int64)
    case duplicate(eventId: String, kind: EventKind, customerKey: CustomerKey?, seq: Int64)
    case quarantined(code: String, message: String)
}

extension AppendOutcome {
    /// The same outcome naming `customer`.
    func naming(_ customer: CustomerKey) -> AppendOutcome {
        switch self {
        case .appended(let eventId, let kind, _, let seq): return .appended(eventId: eventId, kind: kind, customerKey: customer, seq: seq)
        case .duplicate(let eventId, let kind, _, let seq): return .duplicate(eventId: eventId, kind: kind, customerKey: customer, seq: seq)
        case .quarantined: return self
        }
    }
}

extension EventStore {
    /// The hook where merges of `otid:` customers into appTransactionIds are
    /// reported, in the batch's transaction: the change feed (specification section 8)
    /// records them with cause "merge" (the merged customer's entitlements
    /// inactive under its old key, the survivor's changes under its own).
    /// - Parameter states: the states the batch wrote, by customer (a survivor is always among them).
    func customersMerged(_ merges: [CustomerMerge], states: [CustomerKey: CustomerState], rules: Rules, now: Int64) throws {
        for merge in merges {
            let survivor = try states[merge.into] ?? currentState(of: merge.into)
            try recordMerge(from: merge.from, into: merge.into, survivorState: survivor, rules: rules, now: now)
        }
    }

    /// Appends a batch in one `BEGIN IMMEDIATE` transaction: new events, their
    /// facts, quarantined rejections, lookups, and the projections of every
    /// customer the batch touches, and the changes to their active entitlements
    /// (the change feed, evaluated at `receivedAt`) and their lifecycle events
    /// due by `receivedAt` (the lifecycle feed). Either all of it is
    /// committed or none: a crash can neither lose nor double a change.
    ///
    /// - Parameters:
    ///   - items: verified inputs and rejections, in arrival order.
    ///   - rules: the rules the projections are recorded under when the store's active
    ///     rules are these or none (then recorded as active); else the store's active rules.
    ///   - rulesJSON: the canonical JSON of `rules`.
    ///   - receivedAt: the time of receipt, in ms.
    /// - Returns: one outcome per item, in order.
    public func append(_ items: [AppendItem], rules: Rules, rulesJSON: String, receivedAt: Int64) throws(StoreError) -> [AppendOutcome] {
        try append(items, rules: rules, rulesJSON: rulesJSON, receivedAt: receivedAt, finishing: nil, queuedAt: receivedAt).outcomes
    }

    /// Appends a batch as ``append(_:rules:rulesJSON:receivedAt:)`` does and, in the same
    /// transaction, queues the Finish Transaction calls `finishing` names: it is given the
    /// batch's outcomes and the rules its projections were recorded under, and returns the
    /// candidates (see ``queueFinishes(_:at:)``; only a transaction whose first event in
    /// the log is the candidate's is queued, once). The batch and its queued finishes are
    /// committed together or not at all, so a crash after the commit cannot lose a finish.
    /// `finishing` runs inside the write: it must not wait on anything (no network); what it
    /// throws rolls the whole batch back.
    ///
    /// - Returns: one outcome per item, in order, and how many finishes were queued.
    public func append(
        _ items: [AppendItem], rules: Rules, rulesJSON: String, receivedAt: Int64,
        finishing: (([AppendOutcome], Rules) throws -> [FinishCandidate])?, queuedAt: Int64
    ) throws(StoreError) -> (outcomes: [AppendOutcome], queuedFinishes: Int) {
        try requireWritable()
        let (result, head) = try mapped {
            do {
                let written = try connection.write {
                    var head: LogHead? = nil
                    var queued = 0
                    let outcomes = try appendInTransaction(items, rules: rules, rulesJSON: rulesJSON, receivedAt: receivedAt, head: &head) {
                        outcomes, rules in
                        guard let finishing else { return }
                        queued = try insertFinishes(finishing(outcomes, rules), at: queuedAt)
                    }
                    return (((outcomes, queued), head), .commit)
                }
                jwsHeaders.committed()
                knownLookups.committed()
                return written
            } catch {
                jwsHeaders.forgetUncommitted()
                knownLookups.forgetUncommitted()
                throw error
            }
        }
        // After the commit, never before: the record never names a head the log may not reach.
        if let head { recordHead(head) }
        return (outcomes: result.0, queuedFinishes: result.1)
    }

    /// `completing` runs last in the transaction, with the outcomes and the rules in force.
    private func appendInTransaction(
        _ items: [AppendItem], rules: Rules, rulesJSON: String, receivedAt: Int64, head: inout LogHead?,
        completing: ([AppendOutcome], Rules) throws -> Void = { _, _ in }
    ) throws -> [AppendOutcome] {
        let engine = try currentEngineState()
        let rules = try activeRulesInTransaction(rules, rulesJSON: rulesJSON, engine: engine)
        // The projections written here are of `engine.generation`, the current one, all in this transaction.
        remembersProjectedSeqs = true
        defer {
            remembersProjectedSeqs = false
            projectedLastSeqs.removeAll()
        }
        var (lastSeq, prevHash) = try lastEvent()
        let digestFrom = try chainDigestFrom()
        let firstSeq = lastSeq
        var outcomes: [AppendOutcome] = []
        outcomes.reserveCapacity(items.count)
        var batch: [Event] = []
        var changes = IdentityChanges()
        // Outcomes name the customer each item belongs to once the batch's links are in.
        var itemOwners: [(index: Int, query: OwnerQuery)] = []

        let findExisting = try connection.cached("SELECT seq, customer_key FROM events WHERE identity = ?")
        for item in items {
            switch item {
            case .rejected(let rejection):
                try quarantine(rejection, receivedAt: receivedAt)
                outcomes.append(.quarantined(code: rejection.code, message: rejection.message))
            case .verified(let input):
                let identity = EventIdentity.identity(of: input, hash: hash)
                let eventId = EventIdentity.eventId(of: input)
                if let (seq, key) = try existingEvent(identity: identity, input: input, findExisting: findExisting) {
                    itemOwners.append((outcomes.count, OwnerQuery(Event(seq: seq, input: input))))
                    outcomes.append(.duplicate(eventId: eventId, kind: .signed(input.kind), customerKey: key, seq: seq))
                    continue
                }
                let seq = lastSeq + 1
                let event = Event(seq: seq, input: input)
                let key = event.customerKey
                prevHash = try insertEvent(
                    event, input: input, identity: identity, eventId: eventId, receivedAt: receivedAt, prevHash: prevHash,
                    digestFrom: digestFrom)
                lastSeq = seq
                if let key {
                    let facts = try connection.cached("INSERT INTO event_facts (customer_key, seq, facts) VALUES (?, ?, ?)")
                    try facts.bind(1, key)
                    try facts.bind(2, seq)
                    try facts.bind(3, blob: EventCodec.encode(event))
                    try facts.step()
                    try recordLookups(event, key: key)
                    batch.append(event)
                }
                for claim in Self.strongest(event.linkClaims) { try record(claim, changes: &changes) }
                itemOwners.append((outcomes.count, OwnerQuery(event)))
                outcomes.append(.appended(eventId: eventId, kind: .signed(input.kind), customerKey: key, seq: seq))
            }
        }
        // The batch's links are all recorded: an originalTransactionId's owner, once
        // looked up, holds for the rest of the transaction.
        var owners: [String: CustomerKey] = [:]
        var states: [CustomerKey: CustomerState] = [:]
        let merges = try project(
            batch: batch, changes: changes, generation: engine.generation, rules: rules, owners: &owners, states: &states)
        try customersMerged(merges, states: states, rules: rules, now: receivedAt)
        let merged = Set(merges.flatMap { [$0.from, $0.into] })
        let affected = try affectedCustomers(batch: batch, changes: changes, owners: &owners)
        do {
            // The change feed's columns of each customer's row are written with the
            // lifecycle's, in one statement (the lifecycle reads none of them).
            defer { heldCustomerRows.removeAll() }
            try holdingCustomerRows {
                for key in affected where !merged.contains(key) {
                    let state = try states[key] ?? currentState(of: key)
                    try recordChanges(of: key, state: state, rules: rules, now: receivedAt, cause: .event)
                }
            }
            try recordLifecycle(ofBatch: affected, merges: merges, states: states, rules: rules, now: receivedAt)
            try writeHeldCustomerRows()
        }
        for (index, query) in itemOwners {
            guard let owner = try owner(of: query, cache: &owners) else { continue }
            outcomes[index] = outcomes[index].naming(owner)
        }
        if lastSeq > firstSeq { head = LogHead(seq: lastSeq, hash: Self.hex(prevHash)) }
        try completing(outcomes, rules)
        return outcomes
    }

    /// The event already logged for `input`, if any: by its identity, or (for
    /// a database written before identities carried the payload's digest) by
    /// the legacy identity when the logged JWS carries the same signed payload.
    private func existingEvent(identity: String, input: VerifiedInput, findExisting: Statement) throws -> (Int64, CustomerKey?)? {
        defer { findExisting.reset() }
        findExisting.reset()
        try findExisting.bind(1, identity)
        if try findExisting.step() { return (findExisting.int64(0), findExisting.string(1)) }
        guard let legacy = EventIdentity.legacyIdentity(of: input) else { return nil }
        let findLegacy = try connection.cached("SELECT seq, customer_key FROM events WHERE identity = ?")
        defer { findLegacy.reset() }
        try findLegacy.bind(1, legacy)
        guard try findLegacy.step() else { return nil }
        let (seq, key) = (findLegacy.int64(0), findLegacy.string(1))
        findLegacy.reset()
        guard EventIdentity.payloadSegment(try loggedInput(seq: seq)) == EventIdentity.payloadSegment(input.jws) else { return nil }
        return (seq, key)
    }

    /// An event's claims reduced in memory to the strongest per
    /// originalTransactionId (a notification's transaction and renewal info
    /// usually claim the same link, signed in the same millisecond: their raws
    /// are at hand here, not once stored); claims that need a raw not at hand
    /// are kept, to be decided against the log.
    static func strongest(_ claims: [LinkClaim]) -> [LinkClaim] {
        guard claims.count > 1 else { return claims }
        // A notification's two claims, decided without a table.
        guard claims.count > 2 else {
            guard claims[0].originalTransactionId == claims[1].originalTransactionId else { return claims }
            switch LinkClaim.verdict(existing: claims[0], incoming: claims[1]) {
            case .keepExisting: return [claims[0]]
            case .takeIncoming: return [claims[1]]
            case .needsRaws: return claims
            }
        }
        return strongestByTable(claims)
    }

    /// ``strongest(_:)`` for any number of claims, through a table by originalTransactionId.
    static func strongestByTable(_ claims: [LinkClaim]) -> [LinkClaim] {
        var best: [String: LinkClaim] = [:]
        var order: [String] = []
        var undecided: [LinkClaim] = []
        for claim in claims {
            guard let current = best[claim.originalTransactionId] else {
                best[claim.originalTransactionId] = claim
                order.append(claim.originalTransactionId)
                continue
            }
            switch LinkClaim.verdict(existing: current, incoming: claim) {
            case .keepExisting: break
            case .takeIncoming: best[claim.originalTransactionId] = claim
            case .needsRaws: undecided.append(claim)
            }
        }
        return order.map { best[$0]! } + undecided
    }

    /// Where projections are stored: the current generation, which queries read
    /// and ingest updates, and the next one, which a replay builds.
    enum ProjectionTable: String {
        case current = "projections"
        case next = "projections_next"

        /// Each statement's text made once per table: a text made at every call would be
        /// built and hashed again to find its prepared statement (``Connection/cached(_:)``
        /// finds one made once by its address).
        private final class Statements: Sendable {
            let load: String
            let loadByRow: String
            let save: String
            let exists: String
            let delete: String

            init(_ table: String) {
                load = "SELECT state, last_event_seq FROM \(table) WHERE generation = ?1 AND customer_key = ?2"
                loadByRow = load + " AND row_id = ?3"
                save = """
                    INSERT INTO \(table) (row_id, generation, customer_key, rules_version, last_event_seq, state)
                        VALUES (coalesce(?6, (SELECT min(0, coalesce(min(row_id), 0)) - 1 FROM \(table))), ?1, ?2, ?3, ?4, ?5)
                        ON CONFLICT (generation, customer_key) DO UPDATE
                        SET rules_version = excluded.rules_version, last_event_seq = excluded.last_event_seq, state = excluded.state
                    """
                exists = "SELECT 1 FROM \(table) WHERE generation = ? AND customer_key = ?"
                delete = "DELETE FROM \(table) WHERE generation = ? AND customer_key = ?"
            }
        }

        private static let currentStatements = Statements(ProjectionTable.current.rawValue)
        private static let nextStatements = Statements(ProjectionTable.next.rawValue)

        private var statements: Statements {
            switch self {
            case .current: Self.currentStatements
            case .next: Self.nextStatements
            }
        }

        /// Loads a customer's state and last event; numbered by ``projectionRowNumber(of:)`` with `byRow`.
        func loadSQL(byRow: Bool) -> String { byRow ? statements.loadByRow : statements.load }
        /// Writes a customer's state (an upsert), numbering a new row.
        var saveSQL: String { statements.save }
        var existsSQL: String { statements.exists }
        var deleteSQL: String { statements.delete }
    }

    /// Applies `events` to the stored projection of `key` in `generation` and writes it back.
    /// - Returns: the state written.
    @discardableResult
    func project(key: CustomerKey, events: [Event], generation: Int64, rules: Rules, table: ProjectionTable = .current) throws -> CustomerState {
        var state: CustomerState
        var lastSeq: Int64 = 0
        let row = try projectionRow(of: key)
        let load = try connection.cached(table.loadSQL(byRow: row != nil))
        try load.bind(1, generation)
        try load.bind(2, key)
        if let row { try load.bind(3, row) }
        if try load.step() {
            state = try load.withBlob(0) { bytes in try StateCodec.decode(bytes) }
            lastSeq = load.int64(1)
        } else {
            state = CustomerState(key: key)
        }
        load.reset()
        for event in events {
            try apply(event, to: &state, rules: rules)
            lastSeq = max(lastSeq, event.seq)
        }
        try writeProjection(
            key: key, stateBytes: StateCodec.encode(state), generation: generation, rulesVersion: rules.version,
            lastSeq: lastSeq, table: table)
        return state
    }

    /// Writes a projection whose state is already encoded (``StateCodec/encode(_:)``).
    ///
    /// A projection written again keeps its row (an upsert, not a replacement): its
    /// entry in the index on (generation, customer) is left alone, and the row stays
    /// where it was. A new row is numbered by its customer
    /// (``projectionRowNumber(of:)``), or below every other row under zero.
    func writeProjection(
        key: CustomerKey, stateBytes: [UInt8], generation: Int64, rulesVersion: String, lastSeq: Int64,
        table: ProjectionTable = .current
    ) throws {
        let save = try connection.cached(table.saveSQL)
        try save.bind(1, generation)
        try save.bind(2, key)
        try save.bind(3, rulesVersion)
        try save.bind(4, lastSeq)
        try save.bind(5, blob: stateBytes)
        try save.bind(6, try projectionRow(of: key))
        try save.step()
        if remembersProjectedSeqs && table == .current { projectedLastSeqs[key] = lastSeq }
    }

    /// Applies one event, loading raw JWS from the log when two versions tie on `signedDate`.
    ///
    /// The reducer names every raw it needs at once, before it changes anything; with
    /// those at hand it decides every tie, so it is applied at most twice.
    func apply(_ event: Event, to state: inout CustomerState, rules: Rules) throws {
        do {
            try state.apply(event, rules: rules)
        } catch let missing {
            var raws: [RawRef: String] = [:]
            for ref in missing.refs { raws[ref] = try rawJWS(ref) }
            var event = event
            state.hydrate(raws)
            event.hydrate(raws)
            do {
                try state.apply(event, rules: rules)
            } catch {
                throw StoreError(code: .unreadable, message: "could not order two versions of a signed object in event \(event.seq)")
            }
        }
    }

    private func insertEvent(
        _ event: Event, input: VerifiedInput, identity: String, eventId: String, receivedAt: Int64, prevHash: [UInt8],
        digestFrom: Int64
    ) throws -> [UInt8] {
        let digest = chainHash(
            prevHash: prevHash, seq: event.seq, identity: identity, raw: input.jws, digest: input.jwsDigest, digestFrom: digestFrom,
            material: &chainMaterial)
        let row = LogRow(
            seq: event.seq, identity: identity, kind: input.kind.rawValue, customerKey: event.customerKey,
            filing: LogFiling(event: event, input: input, eventId: eventId), receivedAt: receivedAt,
            content: LogRow.content(of: input), prevHash: prevHash, hash: digest)
        try Self.insert(row, into: "events", on: connection, headers: jwsHeaders, form: try logColumnForm())
        return digest
    }

    private func quarantine(_ rejection: Rejection, receivedAt: Int64) throws {
        let insert = try connection.cached(
            "INSERT OR IGNORE INTO quarantine (input_hash, received_at, code, message, raw, size) VALUES (?, ?, ?, ?, ?, ?)")
        try insert.bind(1, blob: hash(rejection.raw + Array("\u{0}\(rejection.size)".utf8)))
        try insert.bind(2, receivedAt)
        try insert.bind(3, rejection.code)
        try insert.bind(4, rejection.message)
        try insert.bind(5, blob: rejection.raw)
        try insert.bind(6, Int64(rejection.size))
        try insert.step()
    }

    private func recordLookups(_ event: Event, key: CustomerKey) throws {
        if case .receipt(let receipt) = event.body, let otid = receipt.originalTransactionId {
            let entry = try connection.cached(
                "INSERT OR IGNORE INTO receipt_transactions (transaction_id, original_transaction_id) VALUES (?, ?)")
            for transaction in receipt.transactions {
                entry.reset()
                try entry.bind(1, transaction.facts.transactionId)
                try entry.bind(2, otid)
                try entry.step()
            }
        }
        let insert = try connection.cached("INSERT OR IGNORE INTO customer_lookup (kind, value, customer_key) VALUES (?, ?, ?)")
        // The event filed under `key` before this one wrote its rows in its own batch: what
        // it carried is there already (every renewal carries the same names). Read only
        // when this connection does not remember a row, from the leaf of `event_facts`
        // this event's row was just written to.
        var previous: Event? = nil
        var previousRead = false
        func carriedBefore(_ carried: (Event) -> Bool) throws -> Bool {
            if !previousRead {
                previous = try previousEvent(filedUnder: key, before: event.seq)
                previousRead = true
            }
            return previous.map(carried) ?? false
        }
        if let otid = event.originalTransactionId, knownLookups.needsWriting(.originalTransactionId, value: otid, customer: key),
            try !carriedBefore({ $0.originalTransactionId == otid })
        {
            insert.reset()
            try insert.bind(1, "originalTransactionId")
            try insert.bind(2, otid)
            try insert.bind(3, key)
            try insert.step()
        }
        for token in event.appAccountTokens.map({ $0.lowercased() })
        where knownLookups.needsWriting(.appAccountToken, value: token, customer: key) {
            if try carriedBefore({ $0.appAccountTokens.contains { $0.lowercased() == token } }) { continue }
            insert.reset()
            try insert.bind(1, "appAccountToken")
            try insert.bind(2, token)
            try insert.bind(3, key)
            try insert.step()
        }
    }

    /// The last event filed under `key` before `seq`, decoded from its facts, when it is
    /// signed data (appended here, with its lookup rows); `nil` when there is none, when
    /// it is an operator's record (written without lookup rows: the names it carries were
    /// given, not signed), or when its facts do not decode.
    private func previousEvent(filedUnder key: CustomerKey, before seq: Int64) throws -> Event? {
        let statement = try connection.cached(
            "SELECT seq, facts FROM event_facts WHERE customer_key = ? AND seq < ? ORDER BY seq DESC LIMIT 1")
        defer { statement.reset() }
        try statement.bind(1, key)
        try statement.bind(2, seq)
        guard try statement.step() else { return nil }
        let found = statement.int64(0)
        guard let event = try? statement.withBlob(1, { bytes in try EventCodec.decode(bytes, seq: found) }),
            case .signed = event.kind
        else { return nil }
        return event
    }

    private func lastEvent() throws -> (Int64, [UInt8]) {
        let statement = try connection.cached("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1")
        defer { statement.reset() }
        if try statement.step() { return (statement.int64(0), statement.blob(1) ?? []) }
        return (0, [UInt8](repeating: 0, count: 32))
    }
}
