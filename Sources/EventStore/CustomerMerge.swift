import EntitlementCore

/// What one batch changed in who the customers are: per originalTransactionId
/// whose link changed, the appTransactionId it was linked to before (`nil`: none).
struct IdentityChanges {
    var before: [String: String?] = [:]
}

/// A customer `otid:<X>` that became an alias of an appTransactionId: its
/// projection is gone and its data answers under `into` (specification section 8
/// reports its entitlements inactive under its old key, with cause "merge").
public struct CustomerMerge: Sendable, Hashable {
    public var from: CustomerKey
    public var into: CustomerKey
}

extension EventStore {
    // MARK: Links

    /// The winning link of `originalTransactionId`, if any.
    func link(of originalTransactionId: String) throws -> LinkClaim? {
        let statement = try connection.cached(
            "SELECT app_transaction_id, signed_date, ref_seq, ref_slot FROM customer_links WHERE original_transaction_id = ?")
        defer { statement.reset() }
        try statement.bind(1, originalTransactionId)
        guard try statement.step() else { return nil }
        return LinkClaim(
            originalTransactionId: originalTransactionId, appTransactionId: statement.string(0) ?? "",
            signedDate: statement.int64(1),
            ref: RawRef(eventSeq: statement.int64(2), slot: RawRef.Slot(rawValue: UInt8(clamping: statement.int64(3))) ?? .own))
    }

    /// Records `claim` when it beats the standing link of its
    /// originalTransactionId (later `signedDate`, then greater raw JWS), and
    /// notes in `changes` what X was linked to before the batch when that
    /// changes. Claims naming different appTransactionIds for one X are
    /// remembered in `link_conflicts` (facts of X may be filed under each).
    func record(_ claim: LinkClaim, changes: inout IdentityChanges) throws {
        let otid = claim.originalTransactionId
        var sameCustomer = false
        if var existing = try link(of: otid) {
            sameCustomer = existing.appTransactionId == claim.appTransactionId
            // Facts of X are filed under each appTransactionId that claims X; a migration's
            // claim comes from objects without one, filed under `otid:<X>` whatever wins.
            if !sameCustomer, !existing.isMigration, !claim.isMigration {
                let conflict = try connection.cached(
                    "INSERT OR IGNORE INTO link_conflicts (original_transaction_id, app_transaction_id) VALUES (?, ?)")
                for app in [existing.appTransactionId, claim.appTransactionId] {
                    conflict.reset()
                    try conflict.bind(1, otid)
                    try conflict.bind(2, app)
                    try conflict.step()
                }
            }
            var incoming = claim
            var decided = LinkClaim.verdict(existing: existing, incoming: incoming)
            if case .needsRaws(let refs) = decided {
                // A tie on signedDate: with both raws at hand the verdict is decided.
                for ref in refs {
                    let raw = try rawJWS(ref)
                    if ref == existing.ref { existing.raw = raw }
                    if ref == incoming.ref { incoming.raw = raw }
                }
                decided = LinkClaim.verdict(existing: existing, incoming: incoming)
            }
            switch decided {
            case .keepExisting: return
            case .takeIncoming: break
            case .needsRaws: throw StoreError(code: .unreadable, message: "could not order two links of originalTransactionId \(otid)")
            }
            if !sameCustomer, changes.before[otid] == nil {
                changes.before[otid] = .some(existing.appTransactionId)
            }
        } else if changes.before[otid] == nil {
            changes.before[otid] = .some(nil)
        }
        // A later claim of the same customer (every renewal makes one) changes what the
        // link was signed with, not who it names: an UPDATE leaves the index by
        // appTransactionId alone, which a replacement of the row deletes from and writes again.
        let save = try connection.cached(
            sameCustomer
                ? "UPDATE customer_links SET signed_date = ?3, ref_seq = ?4, ref_slot = ?5 WHERE original_transaction_id = ?1 AND app_transaction_id = ?2"
                : "INSERT OR REPLACE INTO customer_links (original_transaction_id, app_transaction_id, signed_date, ref_seq, ref_slot) VALUES (?1, ?2, ?3, ?4, ?5)")
        defer { save.reset() }
        try save.bind(1, otid)
        try save.bind(2, claim.appTransactionId)
        try save.bind(3, claim.signedDate)
        try save.bind(4, claim.ref.eventSeq)
        try save.bind(5, Int64(claim.ref.slot.rawValue))
        try save.step()
    }

    /// The customer `event` belongs to now: the one its originalTransactionId
    /// is linked to, else `otid:<X>`, else the appTransactionId it carries.
    func owner(of event: Event, cache: inout [String: CustomerKey]) throws -> CustomerKey? {
        try owner(of: OwnerQuery(event), cache: &cache)
    }

    /// What naming an event's owner reads of it: kept instead of the event where the
    /// owner is asked for after the event itself is no longer needed.
    struct OwnerQuery {
        let originalTransactionId: String?
        let customerKey: CustomerKey?

        init(_ event: Event) {
            originalTransactionId = event.originalTransactionId
            customerKey = event.customerKey
        }
    }

    /// The customer of the event `query` was read from (``owner(of:cache:)-(Event,_)``).
    func owner(of query: OwnerQuery, cache: inout [String: CustomerKey]) throws -> CustomerKey? {
        guard let otid = query.originalTransactionId else {
            // A record filed under an otid: key (a usage recorded before the merge) follows its link too.
            guard let key = query.customerKey, key.hasPrefix("otid:") else { return query.customerKey }
            return try resolve(key)
        }
        if let known = cache[otid] { return known }
        let owner = try owner(ofOriginalTransactionId: otid)
        cache[otid] = owner
        return owner
    }

    /// The customer of the originalTransactionId `otid` now: the appTransactionId
    /// it is linked to, through migrations' claims too, else `otid:<X>`.
    func owner(ofOriginalTransactionId otid: String) throws -> CustomerKey {
        try CustomerLinks.owner(ofOriginalTransactionId: otid) { try link(of: $0)?.appTransactionId }
    }

    /// The customer of `otid` before the batch whose link changes are `changes`.
    func ownerBefore(ofOriginalTransactionId otid: String, changes: IdentityChanges) throws -> CustomerKey {
        try CustomerLinks.owner(ofOriginalTransactionId: otid) { other in
            if let before = changes.before[other] { return before }
            return try link(of: other)?.appTransactionId
        }
    }

    /// The customer `key` names now (`otid:<X>` answers as the customer X belongs to).
    func resolve(_ key: CustomerKey) throws -> CustomerKey {
        guard key.hasPrefix("otid:") else { return key }
        return try owner(ofOriginalTransactionId: String(key.dropFirst(5)))
    }

    /// The keys under which facts of `customer` may be filed: its own, `otid:<X>`
    /// for every X linked to it (directly, or through migrations' claims naming
    /// such a key), and every appTransactionId that also claimed such an X
    /// (conflicting links).
    func sources(of customer: CustomerKey) throws -> [CustomerKey] {
        var sources = [customer]
        var known = Set(sources)
        let linked = try connection.cached(
            "SELECT original_transaction_id FROM customer_links WHERE app_transaction_id = ? ORDER BY original_transaction_id")
        defer { linked.reset() }
        let claimants = try connection.cached(
            "SELECT app_transaction_id FROM link_conflicts WHERE original_transaction_id = ? ORDER BY app_transaction_id")
        defer { claimants.reset() }
        // Keys that claims may name: the customer's own, then each `otid:<X>` found.
        var named = [customer]
        while !named.isEmpty {
            let target = named.removeFirst()
            linked.reset()
            try linked.bind(1, target)
            var otids: [String] = []
            while try linked.step() { otids.append(linked.string(0) ?? "") }
            linked.reset()
            for otid in otids {
                let key = "otid:" + otid
                if known.insert(key).inserted {
                    sources.append(key)
                    named.append(key)
                }
                claimants.reset()
                try claimants.bind(1, otid)
                while try claimants.step() {
                    let app = claimants.string(0) ?? ""
                    if known.insert(app).inserted { sources.append(app) }
                }
            }
        }
        return sources
    }

    // MARK: Projections across linked keys

    /// Projects a batch's new events into `table`: each customer whose make-up
    /// did not change is updated with its new events alone; a customer that
    /// gained or lost an originalTransactionId through a changed link is
    /// rebuilt from its facts (only the customers concerned: no replay); a
    /// customer `otid:<X>` whose X got linked is removed (it answers as an
    /// alias of the appTransactionId it merged into).
    ///
    /// - Returns: the merges of `otid:` customers into appTransactionIds.
    /// - Parameters:
    ///   - owners: the owner of each originalTransactionId as resolved so far in this
    ///     transaction (links do not change once the batch's claims are recorded).
    ///   - states: receives the state written for each customer projected or rebuilt (a
    ///     customer rebuilt to nothing gets none), so that no caller reads it back.
    func project(
        batch events: [Event], changes: IdentityChanges, generation: Int64, rules: Rules, table: ProjectionTable = .current,
        owners: inout [String: CustomerKey], states: inout [CustomerKey: CustomerState]
    ) throws -> [CustomerMerge] {
        var rebuild: [CustomerKey] = []
        var rebuilding = Set<CustomerKey>()
        var merges: [CustomerMerge] = []
        var vanished = Set<CustomerKey>()
        func mark(_ key: CustomerKey) { if rebuilding.insert(key).inserted { rebuild.append(key) } }
        for otid in changes.before.keys.sorted() {
            let before = try ownerBefore(ofOriginalTransactionId: otid, changes: changes)
            let now = try owner(ofOriginalTransactionId: otid)
            guard before != now else { continue }
            guard before.hasPrefix("otid:") else {
                mark(before)
                mark(now)
                continue
            }
            if vanished.contains(before) {
                mark(now)
            } else if try projectionExists(key: before, generation: generation, table: table) {
                if try resolve(before) == before {
                    // The `otid:` customer stays, without X.
                    mark(before)
                } else {
                    try deleteProjection(key: before, generation: generation, table: table)
                    vanished.insert(before)
                    merges.append(CustomerMerge(from: before, into: now))
                }
                mark(now)
            }
            // Else X was unknown until this batch: its events simply go to `now`.
        }
        var order: [CustomerKey] = []
        var pending: [CustomerKey: [Event]] = [:]
        for event in events {
            guard let customer = try owner(of: event, cache: &owners), !rebuilding.contains(customer) else { continue }
            if pending[customer] == nil { order.append(customer) }
            pending[customer, default: []].append(event)
        }
        for key in order {
            states[key] = try project(key: key, events: pending[key] ?? [], generation: generation, rules: rules, table: table)
        }
        for key in rebuild {
            states[key] = try rebuildProjection(of: key, generation: generation, rules: rules, table: table)
        }
        return merges
    }

    /// Rebuilds `customer`'s projection from every fact that belongs to it, or
    /// removes the projection when none is left.
    /// - Returns: the state written, `nil` when the projection was removed.
    @discardableResult
    func rebuildProjection(of customer: CustomerKey, generation: Int64, rules: Rules, table: ProjectionTable) throws -> CustomerState? {
        var state = CustomerState(key: customer)
        var lastSeq: Int64 = 0
        var any = false
        var owners: [String: CustomerKey] = [:]
        let facts = try connection.cached("SELECT seq, facts FROM event_facts WHERE customer_key = ? ORDER BY seq")
        for source in try sources(of: customer) {
            facts.reset()
            try facts.bind(1, source)
            var events: [Event] = []
            while try facts.step() {
                let seq = facts.int64(0)
                events.append(try facts.withBlob(1) { bytes in try EventCodec.decode(bytes, seq: seq) })
            }
            facts.reset()
            for event in events {
                guard try owner(of: event, cache: &owners) == customer else { continue }
                try apply(event, to: &state, rules: rules)
                lastSeq = max(lastSeq, event.seq)
                any = true
            }
        }
        guard any else {
            try deleteProjection(key: customer, generation: generation, table: table)
            return nil
        }
        try writeProjection(
            key: customer, stateBytes: StateCodec.encode(state), generation: generation, rulesVersion: rules.version,
            lastSeq: lastSeq, table: table)
        return state
    }

    func projectionExists(key: CustomerKey, generation: Int64, table: ProjectionTable) throws -> Bool {
        let statement = try connection.cached(table.existsSQL)
        defer { statement.reset() }
        try statement.bind(1, generation)
        try statement.bind(2, key)
        return try statement.step()
    }

    func deleteProjection(key: CustomerKey, generation: Int64, table: ProjectionTable) throws {
        let delete = try connection.cached(table.deleteSQL)
        try delete.bind(1, generation)
        try delete.bind(2, key)
        try delete.step()
        if table == .current { projectedLastSeqs[key] = nil }
    }

    // MARK: Reading

    /// The customer `key` names now: an appTransactionId, or `otid:<X>`, which
    /// answers as an alias of the appTransactionId X is linked to.
    public func resolveCustomer(_ key: CustomerKey) throws(StoreError) -> CustomerKey {
        try mapped { try resolve(key) }
    }

    /// The customer holding the transaction `transactionId`, if the log has it.
    public func customer(transactionId: String) throws(StoreError) -> CustomerKey? {
        try mapped { () throws -> CustomerKey? in
            let statement = try connection.cached(
                "SELECT original_transaction_id, customer_key FROM events WHERE transaction_id = ? ORDER BY seq LIMIT 1")
            defer { statement.reset() }
            try statement.bind(1, transactionId)
            guard try statement.step() else {
                statement.reset()
                // A transaction known only from legacy receipts.
                let receipt = try connection.cached(
                    "SELECT original_transaction_id FROM receipt_transactions WHERE transaction_id = ? ORDER BY original_transaction_id LIMIT 1")
                defer { receipt.reset() }
                try receipt.bind(1, transactionId)
                guard try receipt.step(), let otid = receipt.string(0) else { return nil }
                receipt.reset()
                return try resolve("otid:" + otid)
            }
            let otid = statement.string(0)
            let key = statement.string(1)
            statement.reset()
            if let otid { return try resolve("otid:" + otid) }
            return key
        }
    }

    /// Whether a migration left the projections to be rebuilt (a database made
    /// before customers were linked, holding `otid:` customers that now merge).
    public func identityRebuildPending() throws(StoreError) -> Bool {
        try mapped { (try connection.scalarInt("SELECT count(*) FROM identity_rebuild_pending") ?? 0) > 0 }
    }
}
